"""The hex pane's regions of an ``.ort`` file: every flatbuffer object the reader walked, coloured by kind.

The reader's byte map (``Document.extra.spans``: root, vtables, tables, vectors, strings, payloads)
becomes :class:`~onemodel_viewer.analysis.layout.spans.Span` entries named after their owner (``table
InferenceSession.model.graph.nodes[3]``), in the hex pane's existing colour classes: root offset
and identifier as a header, tables as the manifest, vtables as padding, vectors in the tail colour,
strings in the annotation colour. Payloads are left to the tensor regions (alternating tensor colours).
"""

from __future__ import annotations

from ...analysis.layout.spans import Span

STYLE = {"root": "header", "table": "manifest", "vtable": "padding", "vector": "tail", "string": "annotation"}
"""ORT object kind -> hex style class (``hex--<class>``)."""


def ort_regions(doc) -> list[Span]:
    """Spans (kind: the hex style class, one name) of the non-payload objects of an ``.ort`` document."""
    facts = doc.extra
    out = []
    last = 0
    for start, length, kind, owner in getattr(facts, "spans", ()):
        style = STYLE.get(kind)
        if style is None or start < last:  # payloads: tensor regions; overlaps (hostile files): the first wins
            continue
        end = min(start + length, doc.size)
        if start < end:
            out.append(Span(start, end, style, (owner if kind == "root" else f"{kind} {owner}",)))
            last = end
    return out
