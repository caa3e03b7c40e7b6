"""The ``l`` screen: the file's extents in order — header, manifest, padding, each tensor,
gaps no tensor owns, overlaps, non-zero padding and bytes past the data region.

For OneModel files the extents are :func:`onemodel_viewer.analysis.layout.onemodel.layout`'s (the
project's one byte map, also behind ``--check``'s findings); other files list the regions of the
viewer's :class:`ByteMap` (:func:`from_bytemap`). They are computed in a thread worker (checking
padding and gaps for non-zero bytes reads them, cancellable); choosing a row returns
``(start, length)``.

An ONNX file with external data lists each weights file after the ``.onnx``'s own extents: a
``file`` row (location, size, tensors, owned/unowned bytes, alignment) and the file's extents
from :func:`onemodel_viewer.analysis.layout.external.external_layout` (tensors, overlaps, gaps,
padding, tail; sharing computed per file). Choosing one of those rows returns ``(start, length,
tensor)`` with a tensor stored in that file, so the viewer shows that file in the hex pane.

While the viewer's deferred checks run (a big manifest's first open: tui/background.py), the tensors
in the attributes of nodes not checked yet are not known: the title says so (the app's
``verdict_note()``, "checking…"), and the app has the extents computed again when the checks end
(:meth:`LayoutScreen.checks_ended`).

An ``.ort`` file lists its tensor payloads (offset, size, mod 64 / 4096, alignment, whether aligned to
the element size) and the bytes no flatbuffer object owns (:func:`from_ort`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from ...format.errors import FormatError
from ..hex.bytemap import ByteMap
from ..widgets.safe import human_size, safe_text

MAX_ROWS = 20000


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the screen's table: a :class:`~onemodel_viewer.analysis.layout.spans.Span` as listed, with its note."""

    start: int
    end: int
    kind: str
    """``header``, ``manifest``, ``padding``, ``tensor``, ``gap``, ``overlap``, ``tail``."""
    name: str = ""
    note: str = ""
    file: str | None = None
    """The weights file (location) the extent is in; None: the model's own file."""
    tensor: Any = None
    """A tensor stored in ``file`` (what the viewer needs to show that file)."""


def from_analysis(doc, cancel=None, deep: bool = False, progress=None) -> list[Row]:
    """Rows from :func:`analysis.layout.layout` (OneModel documents); ``deep``, ``progress``: a file at a
    URL has its padding and gaps fetched and scanned, ``progress(bytes scanned)`` told as it goes."""
    from ...analysis.layout.onemodel import layout

    lay = layout(doc, cancel=cancel, deep=deep, progress=progress)
    out: list[Row] = []
    for e in lay.extents:
        name = ", ".join(n or "(unnamed)" for n in e.names)
        note = ""
        if e.kind == "overlap":
            note = f"shared by {e.owners} tensors"
        if e.kind in ("padding", "gap", "tail"):
            note = {True: "NON-ZERO bytes", False: "zero", None: "not scanned"}[e.nonzero]
            if e.kind == "padding" and e.names:
                note += f" (after {e.names[0] or '(unnamed)'})"
                name = ""
        if e.kind == "tensor" and e.start % 64:
            note = "NOT 64-aligned"
        out.append(Row(e.start, e.end, e.kind, name, note))
    for e in lay.empties:
        out.append(Row(e.start, e.end, "tensor", ", ".join(e.names), "zero-length"))
    out.sort(key=lambda e: (e.start, e.end))
    return out


def unscanned(rows: list[Row]) -> int:
    """Bytes of the rows a deep scan would fetch (padding, and gaps and tails not over the scan limit)."""
    from ...analysis.layout.onemodel import GAP_SCAN_LIMIT

    return sum(r.end - r.start for r in rows if r.note.startswith("not scanned")
               and (r.kind == "padding" or r.end - r.start <= GAP_SCAN_LIMIT))


def from_bytemap(bm: ByteMap) -> list[Row]:
    """Rows of any other file (an ONNX file, bytes of no known format): the regions of the viewer's byte
    map (a OneModel file's extents are :func:`from_analysis`'s, an ``.ort`` file's :func:`from_ort`'s)."""
    return [Row(r.start, r.end, r.kind, r.name) for r in bm.base]


def from_external(doc, cancel=None) -> list[Row]:
    """Rows for each weights file of an ONNX document (see the module docstring)."""
    from ...analysis.layout.external import external_layout
    from ...format.schema import all_tensors

    layouts = external_layout(doc, cancel=cancel)
    if not layouts:
        return []
    holder: dict[str, Any] = {}
    for t in all_tensors(doc.model) if doc.model is not None else ():
        p = getattr(t.storage, "path", None)
        if p is not None and p not in holder:
            holder[p] = t
    out: list[Row] = []
    for fl in layouts:
        t = holder.get(fl.real)
        align = "no non-zero offset" if fl.alignment is None else f"aligned to {fl.alignment:,}"
        out.append(Row(0, fl.size, "file", fl.path, f"{fl.tensors:,} tensors, {fl.owned:,} owned, "
                          f"{fl.unowned:,} unowned bytes, {align}", fl.path, t))
        for sp in fl.spans:
            name = ", ".join(n or "(unnamed)" for n in sp.names)
            note = f"in {fl.path}"
            if sp.kind in ("padding", "gap", "tail"):
                note = {True: "NON-ZERO bytes", False: "zero", None: "not scanned"}[sp.nonzero] + f", {note}"
                if sp.kind == "padding":
                    name = ""
            elif sp.kind == "overlap":
                note = f"shared by 2 tensors, {note}"
            elif sp.kind == "tensor" and sp.start % 64:
                note = f"NOT 64-aligned (aligned to {sp.start & -sp.start}), {note}"
            out.append(Row(sp.start, sp.end, sp.kind, name, note, fl.path, t))
        for name, _where, off in fl.empties:
            out.append(Row(off, off, "tensor", name, f"zero-length, in {fl.path}", fl.path, t))
    return out


def from_ort(doc, cancel=None) -> list[Row]:
    """Rows of an ``.ort`` file (:func:`onemodel_viewer.analysis.layout.ort.ort_layout`): the root offset and
    identifier, every tensor payload with its alignment, every run of bytes no flatbuffer object owns."""
    from ...analysis.layout.ort import alignment, ort_layout
    from ...format.ort.facts import element_size, in_place

    lay = ort_layout(doc, cancel=cancel)
    out = [Row(0, min(8, doc.size), "header", "root offset + file identifier")] if doc.size else []
    for p in lay.payloads:
        dtype = lay.dtypes.get(p.wheres[0])
        note = f"mod 64 = {p.start % 64}, mod 4096 = {p.start % 4096:,}, aligned to {alignment(p.start):,}"
        if not in_place(p.start, dtype):
            note += f", NOT aligned to its {element_size(dtype)}-byte elements"
        out.append(Row(p.start, p.end, "payload", p.name or p.wheres[0], note))
    for u in lay.unowned:
        note = ("not scanned" if u.nonzero is None else "zero" if not u.nonzero
                else f"NON-ZERO byte at 0x{lay.first_nonzero[u.start]:x}")
        out.append(Row(u.start, u.end, "unowned", "", note))
    out.sort(key=lambda e: (e.start, e.end))
    if lay.padding_runs:  # last: a count, not a place
        out.append(Row(0, 0, "padding", f"{lay.padding_runs:,} runs", f"{lay.padding_bytes:,} bytes of zero alignment "
                          "padding (runs under 8 bytes), not listed"))
    return out


KIND_STYLE = {"header": "yellow", "manifest": "green", "padding": "dim", "tensor": "cyan", "gap": "magenta",
              "overlap": "bold red", "tail": "red", "onnx": "", "payload": "cyan", "unowned": "magenta",
              "file": "bold"}


class LayoutScreen(ModalScreen[Any]):
    """A table of extents; enter returns the chosen extent's start offset."""

    BINDINGS = [Binding("escape,l,q", "close", "Close"), Binding("enter", "choose", "Go to"),
                Binding("s", "scan", "Fetch and scan padding", show=False)]  # only a file at a URL has a scan
    """
    | Key(s) | Description |
    | :- | :- |
    | escape/l/q | Close. |
    | enter | Go to the chosen extent. |
    | s | A file at a URL: fetch its padding and gaps and scan them for non-zero bytes (with progress; escape cancels). |
    """

    DEFAULT_CSS = """
    LayoutScreen { background: $background 60%; }
    LayoutScreen > #layout-title { dock: top; height: 1; background: $panel; padding: 0 1; }
    LayoutScreen > DataTable { height: 1fr; }
    """

    def __init__(self, bytemap: ByteMap, document=None, note: str = "") -> None:
        super().__init__()
        self.bytemap = bytemap
        self.document = document
        self.extents: list[Row] | None = None
        self._cancel = threading.Event()
        self.note = note
        """Why some extents may be missing (the app's ``verdict_note()``: "checking…"), or ''."""
        self.deep = False
        """A file at a URL: its padding fetched and scanned (``s``)."""
        self.to_scan = 0
        """Bytes ``s`` fetches (the rows not scanned)."""
        self._shown_at = 0.0

    @property
    def remote(self) -> bool:
        doc = self.document
        return doc is not None and doc.source == "onemodel" and getattr(doc.storage, "remote", False)

    def action_scan(self) -> None:
        """Fetch and scan the padding and gaps of a file at a URL, with progress (escape cancels)."""
        if not self.remote or self.deep or self.extents is None or not self.to_scan:
            return
        self.deep = True
        self._cancel.set()
        self._cancel = threading.Event()
        self.extents = None
        self.query_one(DataTable).clear()
        self._progress(0, self.to_scan)
        self._compute()

    def _progress(self, done: int, total: int) -> None:
        self.query_one("#layout-title", Static).update(Text(
            f" layout: fetching and scanning padding: {human_size(min(done, total))} of {human_size(total)}"
            "   escape: cancel and close", style="bold"))

    def checks_ended(self, note: str = "") -> None:
        """The app's deferred checks have ended (``note``: see :attr:`note`): the extents computed again."""
        self._cancel.set()
        self._cancel = threading.Event()
        self.note = note
        self.extents = None
        self.query_one(DataTable).clear()
        self.query_one("#layout-title", Static).update(Text(" layout: computing…", style="bold"))
        self._compute()

    def compose(self) -> ComposeResult:
        yield Static(Text(" layout: computing…", style="bold"), id="layout-title")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="layout-table")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("start", "end", "size", "kind", "name", "note")
        table.focus()
        self._compute()

    @work(thread=True, exclusive=True, group="layout", exit_on_error=False)
    def _compute(self) -> None:
        cancel = self._cancel
        try:
            doc = self.document
            if doc is not None and doc.source == "onemodel":
                ext = from_analysis(doc, cancel=cancel, deep=self.deep,
                                    progress=self._scanned if self.deep else None)
            elif doc is not None and doc.source == "ort":
                ext = from_ort(doc, cancel=cancel)
            else:
                ext = from_bytemap(self.bytemap)
                if doc is not None and doc.source == "onnx" and doc.external_files:
                    ext += from_external(doc, cancel=cancel)
            err = None
        except FormatError as e:
            ext, err = [], f"{e.kind}: {e.message}"
        except Exception as e:  # never take the viewer down
            ext, err = [], f"{type(e).__name__}: {e}"
        try:
            self.app.call_from_thread(self._show, ext, err, cancel)
        except Exception:
            pass

    def _scanned(self, done: int) -> None:
        """From the worker: bytes scanned so far (the title told at most ten times a second)."""
        import time

        now = time.monotonic()
        if now - self._shown_at >= 0.1:
            self._shown_at = now
            try:
                self.app.call_from_thread(self._progress, done, self.to_scan)
            except Exception:
                pass

    def _show(self, ext: list[Row], err: str | None, cancel: threading.Event | None = None) -> None:
        if cancel is not None and cancel is not self._cancel:  # computed again since (the checks ended)
            return
        self.extents = ext
        self.to_scan = unscanned(ext) if self.remote and not self.deep else 0
        table = self.query_one(DataTable)
        counts: dict[str, int] = {}
        for i, e in enumerate(ext[:MAX_ROWS]):
            counts[e.kind] = counts.get(e.kind, 0) + 1
            table.add_row(
                Text(f"0x{e.start:x}", style="cyan"), Text(f"0x{e.end:x}", style="cyan"),
                Text(human_size(e.end - e.start)), Text(e.kind, style=KIND_STYLE.get(e.kind, "")),
                safe_text(e.name, limit=60), Text(e.note, style="red" if "NON-ZERO" in e.note or "NOT" in e.note or e.kind == "overlap" else "dim"),
                key=str(i),
            )
        title = Text(" layout: ", style="bold")
        title.append(" · ".join(f"{v:,} {k}" for k, v in counts.items()))
        if len(ext) > MAX_ROWS:
            title.append(f" (first {MAX_ROWS:,} rows)", style="dim")
        if err:
            title.append("  " + err, style="red")
        if self.to_scan:
            title.append(f"  padding not fetched (a URL): s: fetch and scan {human_size(self.to_scan)}", style="yellow")
        if self.note:  # the tensors of nodes not checked yet are not known
            title.append(f"  so far ({self.note}: tensors in node attributes may be missing)", style="bold yellow")
        title.append("   enter: go to · escape: close", style="dim")
        self.query_one("#layout-title", Static).update(title)

    def action_choose(self) -> None:
        self._choose(self.query_one(DataTable).cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._choose(event.cursor_row)

    def _choose(self, row: int) -> None:
        self._cancel.set()
        if self.extents and 0 <= row < len(self.extents):
            e = self.extents[row]
            self.dismiss((e.start, e.end - e.start) if e.file is None else (e.start, e.end - e.start, e.tensor))

    def action_close(self) -> None:
        self._cancel.set()
        self.dismiss(None)
