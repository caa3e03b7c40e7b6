"""Names of nodes, tensors and values, searchable by substring: the viewer's ``/``.

No UI here. The viewer builds the index in its background thread after the first screen
(``cancel`` stops it between graphs); a search before that builds it on the spot.
"""

from __future__ import annotations

import threading

from ..format.document import Document

__all__ = ["SearchIndex", "node_description"]


def node_description(n) -> str:
    """``Conv conv1``; an unnamed node by its first output: ``Constant → conv2d_10.w_0``."""
    if n.name:
        return f"{n.op} {n.name}"
    out = next((o for o in n.outputs if o), "")
    return f"{n.op} → {out}" if out else n.op


def _what_matched(haystack: str, description: str, q: str) -> str:
    """Which part of an item the query hit (node items: op, name, then outputs)."""
    kind = description.split(" ", 1)[0]
    if kind in ("tensor", "value", "sparse", "function"):
        return "name"
    words = haystack.split(" ")
    if q in words[0]:
        return "op"
    if len(words) > 1 and words[1] and q in words[1]:
        return "name"
    hit = next((w for w in words[2:] if q in w), "")
    return f"output {hit}" if hit else "name"


class SearchIndex:
    """Names of nodes, tensors and values, searchable by substring.

    ``items`` are in manifest-path order (path components compared, numbers as numbers: within a
    graph ``initializers``, ``inputs``, ``nodes`` (each followed by the graphs in its attributes), ``outputs``, ``sparse_initializers``, ``value_info``; functions before
    the graph). They are produced in that order by one walk, not sorted (a key per item cost
    ~3 µs: seconds for a million nodes); ``tests/test_tui_units.py`` checks the order against
    the sort on every bundled file.
    """

    def __init__(self, doc: Document, cancel: threading.Event | None = None) -> None:
        self.items: list[tuple[str, str, str]] = []
        """(lower-case haystack, where, description); incomplete when ``cancel`` was set."""
        self._cancel = cancel
        m = doc.model
        if m is None:
            return
        add = self.items.append
        for f in m.functions:
            if cancel is not None and cancel.is_set():
                return
            add((f"{f.domain}:{f.name}".lower(), f.where, f"function {f.name}"))
            for n in f.nodes:
                add((f"{n.op} {n.name} {' '.join(n.outputs)}".lower(), n.where, node_description(n)))
                for a in n.attributes:
                    for g in a.graphs():
                        self._graph(g)
        self._graph(m.graph)

    def _graph(self, g) -> None:
        if self._cancel is not None and self._cancel.is_set():  # once per graph and per 4,096 nodes
            return
        add = self.items.append
        for t in g.initializers:
            add((t.name.lower(), t.where, f"tensor {t.name}"))
        for v in g.inputs:
            add((v.name.lower(), v.where, f"value {v.name}"))
        cancel = self._cancel
        for i, n in enumerate(g.nodes):
            if cancel is not None and not i & 4095 and cancel.is_set():  # every 4,096 nodes too
                return
            add((f"{n.op} {n.name} {' '.join(n.outputs)}".lower(), n.where, node_description(n)))
            for a in n.attributes:
                for sub in a.graphs():
                    self._graph(sub)
        for v in g.outputs:
            add((v.name.lower(), v.where, f"value {v.name}"))
        for s in g.sparse_initializers:
            add((s.name.lower(), s.where, f"sparse {s.name}"))
        for v in g.value_info:
            add((v.name.lower(), v.where, f"value {v.name}"))

    def matches(self, query: str) -> list[tuple[str, str, str]]:
        """(where, description, what matched) of each match: ``op Constant``, ``name conv1``, ``output y``."""
        q = query.strip().lower()
        if not q:
            return []
        out = []
        for h, w, d in self.items:
            if q in h and w:
                out.append((w, d, _what_matched(h, d, q)))
        return out

    def find(self, query: str) -> list[tuple[str, str]]:
        q = query.strip().lower()
        if not q:
            return []
        return [(w, d) for h, w, d in self.items if q in h and w]
