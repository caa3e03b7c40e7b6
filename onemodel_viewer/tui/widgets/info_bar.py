"""The info bar: file name, size, kind, counts and the verdict, fitted to the terminal's width.

Parts are given with a priority; on a narrow terminal the least important go first (whole,
never half a number), then the file name is shortened with ``…``. The verdict (``valid``,
``N problems``) has the highest priority: it is never cut.
"""

from __future__ import annotations

import os

from rich.text import Text
from textual.widgets import Static

from ...format.document import Document
from ...format.schema import all_tensors, walk_graphs
from .safe import fit_text, human_size, safe_text

SEPARATOR = " · "


class InfoBar(Static):
    """One line of ``(Text, priority)`` parts; what does not fit is left out, least important first."""

    DEFAULT_CSS = """
    InfoBar { height: 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._parts: list[tuple[Text, int, bool]] = []

    def show(self, parts: list[tuple[Text, int, bool]]) -> None:
        """``(text, priority, joined)`` each; ``joined`` parts follow the previous one without a separator."""
        self._parts = list(parts)
        self.refresh(layout=True)

    def update(self, content="", *, layout: bool = True) -> None:  # one part: plain Static use
        self._parts = [(content if isinstance(content, Text) else Text(str(content)), 100, False)]
        self.refresh(layout=layout)

    def fitted(self, width: int) -> Text:
        """The bar's text in ``width`` cells."""
        parts = list(self._parts)

        def join(ps: list[tuple[Text, int, bool]]) -> Text:
            out = Text(no_wrap=True, overflow="ellipsis")
            for i, (t, _, joined) in enumerate(ps):
                if i and not joined:
                    out.append(SEPARATOR, style="dim")
                out.append_text(t)
            return out

        text = join(parts)
        while text.cell_len > width and len(parts) > 1:
            lowest = min(range(len(parts)), key=lambda i: (parts[i][1], -i))
            if parts[lowest][1] >= 90:  # the name and the verdict stay: shorten the name instead
                break
            del parts[lowest]
            text = join(parts)
        if text.cell_len > width and parts:
            # the name (the highest priority below the verdict's) gives up what is missing
            i = max(range(len(parts)), key=lambda i: (parts[i][1] < 100, parts[i][1]))
            short = fit_text(parts[i][0], max(2, parts[i][0].cell_len - (text.cell_len - width)))
            parts[i] = (short, parts[i][1], parts[i][2])
            text = join(parts)
        if text.cell_len > width:
            text.truncate(width, overflow="ellipsis")
        return text

    def render(self) -> Text:
        width = self.content_region.width or self.size.width
        return self.fitted(width) if width > 0 else Text()


def count_nodes(doc: Document) -> int:
    """Nodes of every graph and function of the model."""
    m = doc.model
    if m is None:
        return 0
    n = sum(len(g.nodes) for g in walk_graphs(m.graph))
    for f in m.functions:
        n += len(f.nodes)
    return n


def file_name(path: str) -> str:
    """A local file's base name; a URL whole, its credentials (user-info, query string) redacted."""
    if "://" in path:
        from ...format.remote.urls import shown_name

        return shown_name(path)
    return os.path.basename(path)


def count_tensors(doc: Document) -> int:
    """Tensors of the model (initializers, attribute tensors, sparse parts)."""
    return 0 if doc.model is None else len(all_tensors(doc.model))


def document_parts(doc: Document, tensors: int, nodes: int, checking: bool = False,
                   unchecked: str = "") -> list[tuple[Text, int, bool]]:
    """The viewer's parts for ``doc`` (``tensors`` and ``nodes`` counted once per document), most
    important kept longest: the verdict never goes. ``checking``: findings are still being looked for.
    ``unchecked``: why problems may be missing (``checking…``: the node checks still run), said
    instead of ``valid``, or after the problems found so far."""
    parts: list[tuple[Text, int, bool]] = [(Text("onemodel-view", style="bold"), 20, False)]
    parts.append((Text(" ") + safe_text(file_name(doc.path), style="bold", limit=60), 90, True))
    parts.append((Text(f"  {human_size(doc.size)}", style="dim"), 40, True))
    bad_magic = doc.header is None and any(p.where == "header.magic" for p in doc.problems)
    source = Text(doc.source, style="dim")
    ort_version = getattr(doc.extra, "version", "") if doc.source == "ort" else ""
    if ort_version:  # the ORT format version (from the file: made visible)
        source.append(" format ", style="dim")
        source.append_text(safe_text(ort_version, style="dim", limit=12))
    parts.append((Text("not a OneModel file (bad magic)", style="bold red") if bad_magic and doc.source == "onemodel"
                  else source, 95 if bad_magic else 30, False))
    parts.append((Text(f"{tensors:,} tensor{'s' if tensors != 1 else ''}", style="dim"), 50, False))
    parts.append((Text(f"{nodes:,} node{'s' if nodes != 1 else ''}", style="dim"), 60, False))
    if doc.problems:
        parts.append((Text(f"{len(doc.problems)} problem{'s' if len(doc.problems) != 1 else ''}",
                           style="bold red"), 100, False))
        if unchecked:
            parts.append((Text(f" ({unchecked})", style="dim"), 100, True))
    elif unchecked:
        parts.append((Text(unchecked, style="bold"), 100, False))
    else:
        parts.append((Text("valid", style="bold green"), 100, False))
    if doc.findings:
        parts.append((Text(f"{len(doc.findings)} finding{'s' if len(doc.findings) != 1 else ''}",
                           style="yellow"), 80, False))
    if checking:
        parts.append((Text("checking for more findings…" if doc.findings else "checking for findings…",
                           style="dim"), 45, False))
    return parts
