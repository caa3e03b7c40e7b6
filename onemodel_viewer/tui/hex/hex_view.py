"""A virtual hex view over a whole file: offset | hex | ASCII | owner.

Reusable (the diff viewer can mount two): give it a :class:`~..format.storage.Storage`
and a :class:`~.bytemap.ByteMap` with :meth:`HexView.set_source`; or a document's file and
its :class:`~.bytemap.FileMaps` with :meth:`HexView.set_document_file`, and the view
switches itself to an ONNX external data file when asked for a tensor stored there
(:meth:`HexView.show_file_of`) and back (:meth:`HexView.show_document_file`). Lines are drawn on
demand by :meth:`render_line` (Textual Line API) from 16 (or 8 when narrow) bytes
read at that offset, cached by line; nothing ever builds the text of the whole file,
so a multi-GB file scrolls as fast as a small one. Lines start at ``origin + k * width``
(:meth:`HexView.set_origin`; 0 by default): the diff viewer starts them at a tensor's first byte
in each pane, so that the same element byte sits in the same column of both; the offset column
still shows file offsets.

Colours (component classes, themable in CSS): header fields, manifest, padding,
data-region gaps, tensors (two alternating colours), overlapping tensors, bytes
past the data region, the highlighted span (selection) and the cursor. Lines
starting a multiple of 64 bytes from the origin carry a ``•`` mark.

Bindings (when focused): arrows move the byte cursor, PageUp/PageDown by a page,
Home/End to the line's start/end, ctrl+home/ctrl+end to the file's start/end.
"""

from __future__ import annotations

import os
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.color import Color
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ...format.errors import FormatError
from ...format.schema import Tensor
from ...format.storage import Storage
from .bytemap import ByteMap, FileMaps
from .page_fetch import PageFetcher
from ..widgets.safe import safe_str, safe_text


ANNOTATION_ROOM = 16
"""Cells kept for the owner annotation before a line grows to 24 or 32 bytes."""

MIN_CONTRAST = 3.0
"""Least contrast ratio (WCAG) of any hex pane colour against the pane's background, in any theme."""

MUTED = {"offset": 0.35, "annotation": 0.35, "data": 0.3, "padding": 0.5}
"""Colours drawn as the foreground faded toward the background by this much (dim, never brighter)."""


def _luminance(c: Color) -> float:
    def lin(v: int) -> float:
        x = v / 255
        return x / 12.92 if x <= 0.03928 else ((x + 0.055) / 1.055) ** 2.4

    return 0.2126 * lin(c.r) + 0.7152 * lin(c.g) + 0.0722 * lin(c.b)


def contrast(a: Color, b: Color) -> float:
    """WCAG contrast ratio of two colours (1 to 21)."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def readable(colour: Color, background: Color, foreground: Color, least: float = MIN_CONTRAST) -> Color:
    """``colour`` moved toward ``foreground`` until it reads on ``background`` (at least ``least``)."""
    for step in range(11):
        c = colour.blend(foreground, step / 10)
        if contrast(c, background) >= least:
            return c
    return foreground


class HexView(ScrollView, can_focus=True):
    """Hex dump of a storage, drawn line by line."""

    BINDINGS = [
        Binding("up", "cursor(-16)", "Up", show=False),
        Binding("down", "cursor(16)", "Down", show=False),
        Binding("left", "cursor(-1)", "Left", show=False),
        Binding("right", "cursor(1)", "Right", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "line_edge(0)", "Line start", show=False),
        Binding("end", "line_edge(1)", "Line end", show=False),
        Binding("ctrl+home", "file_edge(0)", "File start", show=False),
        Binding("ctrl+end", "file_edge(1)", "File end", show=False),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | arrows | Move the byte cursor (up/down by a line). |
    | pageup/pagedown | Move by a page. |
    | home/end | Start/end of the line. |
    | ctrl+home/ctrl+end | Start/end of the file. |
    """

    COMPONENT_CLASSES = {
        "hex--offset", "hex--mark", "hex--header", "hex--manifest", "hex--padding", "hex--data",
        "hex--tensor-a", "hex--tensor-b", "hex--overlap", "hex--tail", "hex--none", "hex--highlight",
        "hex--cursor", "hex--annotation", "hex--error", "hex--differs",
    }

    DEFAULT_CSS = """
    HexView {
        background: $surface;
        color: $foreground;
        overflow-x: hidden;  /* lines are cut to the width: a horizontal scrollbar only eats a row */
        & > .hex--offset { color: $text-muted; }
        & > .hex--mark { color: $accent; text-style: bold; }
        & > .hex--header { color: $warning; }
        & > .hex--manifest { color: $success; }
        & > .hex--padding { color: $text-disabled; }
        & > .hex--data { color: $text-muted; }
        & > .hex--tensor-a { color: $primary-lighten-2; }
        & > .hex--tensor-b { color: $secondary-lighten-2; }
        & > .hex--overlap { color: $error; text-style: bold; }
        & > .hex--tail { color: $error; }
        & > .hex--none { color: $foreground; }
        & > .hex--highlight { background: $primary 40%; }
        & > .hex--cursor { background: $accent; color: $background; text-style: bold; }
        & > .hex--annotation { color: $text-muted; }
        & > .hex--error { color: $error; text-style: bold; }
        & > .hex--differs { color: $error; text-style: bold underline; }
    }
    """

    cursor: reactive[int] = reactive(0, init=False, always_update=True)
    """Offset of the byte under the cursor."""

    class CursorMoved(Message):
        """The byte cursor moved (coalesced: only the latest one is kept)."""

        def __init__(self, hex_view: "HexView", offset: int) -> None:
            super().__init__()
            self.hex_view = hex_view
            self.offset = offset

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, HexView.CursorMoved) and message.hex_view is self.hex_view

    def __init__(self, *, name: str | None = None, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._storage: Storage | None = None
        self._bytemap: ByteMap | None = None
        self._nbytes = 0
        self._bpl = 16
        self._origin = 0
        self._gen = 0
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)
        self._styles: dict[str, Style] | None = None
        self.highlight: tuple[int, int] | None = None
        """``[start, end)`` of the highlighted span, or None."""
        self.error: str | None = None
        """Set when the storage could not be read (file changed on disk)."""
        self._home: tuple[Storage | None, FileMaps] | None = None
        self._header: Any = None
        self._external: tuple[Storage, ByteMap] | None = None
        self._other: tuple[Storage, int] | None = None
        self._fetcher = PageFetcher(self, self._page, self._fetched)

    # ------------------------------------------------------------------ public API
    def set_source(self, storage: Storage | None, bytemap: ByteMap | None, size: int | None = None) -> None:
        """Show ``storage`` (None: nothing). ``size`` defaults to ``storage.size``."""
        self._storage = storage
        self._bytemap = bytemap
        self._nbytes = size if size is not None else (storage.size if storage is not None else 0)
        self.error = None
        self._fetcher.forget()
        self._invalidate()
        self._update_virtual_size()

    def compare_with(self, other: Storage | None, delta: int = 0) -> None:
        """Mark the bytes that differ from ``other``'s byte ``delta`` further on (None: no marks)."""
        new = (other, delta) if other is not None else None
        if new != self._other:
            self._other = new
            self._invalidate()

    def differs_at(self, offset: int) -> bool | None:
        """Whether the byte at ``offset`` differs from the compared byte (None: nothing compared)."""
        if self._other is None or self._storage is None or not 0 <= offset < self._nbytes:
            return None
        return bool(self._differing(offset, self._storage.read(offset, 1)))  # type: ignore[union-attr]

    def _differing(self, start: int, data: bytes) -> set[int]:
        """Indices into ``data`` (the bytes at ``start``) that differ from the compared storage's."""
        other, delta = self._other  # type: ignore[misc]
        lo, hi = max(0, start + delta), min(other.size, start + delta + len(data))
        theirs = other.read(lo, hi - lo) if hi > lo else b""
        first = lo - (start + delta)  # bytes before the other's start (or past its end) differ
        return {i for i in range(len(data))
                if not 0 <= i - first < len(theirs) or data[i] != theirs[i - first]}

    @property
    def storage(self) -> Storage | None:
        """The storage shown (None: nothing)."""
        return self._storage

    @property
    def bytemap(self) -> ByteMap | None:
        """The map of the file shown (an external data file's, or the document's)."""
        return self._bytemap

    @property
    def external_path(self) -> str | None:
        """The external data file shown instead of the document's file, or None."""
        return self._external[1].path if self._external is not None else None

    def set_document_file(self, storage: Storage | None, maps: FileMaps | None, header: Any = None) -> None:
        """Show a document's own file (``storage``, mapped by ``maps.home``; ``header``: its parsed header,
        whose values :meth:`show_position` names); :meth:`show_file_of` may switch to one of its
        external data files."""
        self._home = (storage, maps) if maps is not None else None
        self._header = header
        self._external = None
        self.set_source(storage, maps.home if maps is not None else None,
                        size=storage.size if storage is not None else 0)

    def show_document_file(self) -> bool:
        """Back to the document's own file after an external one; True when the view switched."""
        if self._external is None or self._home is None:
            return False
        self._external = None
        storage, maps = self._home
        self.set_source(storage, maps.home, size=storage.size if storage is not None else 0)
        self.show_position(self.cursor)
        return True

    def show_file(self, t: Tensor | None) -> None:
        """:meth:`show_file_of` ``t``, or (None) :meth:`show_document_file`."""
        if t is None:
            self.show_document_file()
        else:
            self.show_file_of(t)

    def show_position(self, offset: int) -> None:
        """The border: ``Hex [weights file] 0x1a40 (6,720)`` above, the owner of that byte below (a
        header field with its value)."""
        t = Text("Hex ")
        ext = self.external_path
        if ext:
            t.append_text(safe_text(os.path.basename(ext), style="bold yellow", limit=40))
            t.append(" ")
        t.append(f"0x{offset:x}", style="bold")
        t.append(f" ({offset:,})", style="dim")
        self.border_title = t
        bm = self._bytemap
        owner = bm.owner_at(offset) if bm is not None and self._nbytes else ""
        if owner.startswith("header.") and self._header is not None and ext is None:
            region = bm.base_at(offset)  # type: ignore[union-attr]
            value = getattr(self._header, region.name, None) if region is not None else None
            if isinstance(value, int):
                owner += f" = {value:,}"
            elif isinstance(value, bytes):
                owner += " = " + repr(value)
        self.border_subtitle = safe_text(owner, limit=80) if owner else None

    def owner_at(self, offset: int) -> str:
        """What owns the byte at ``offset`` in the file shown (plain text, made visible)."""
        bm = self._bytemap
        return safe_str(bm.owner_at(offset), 200) if bm is not None else ""

    def record_at(self, offset: int) -> str | None:
        """The ``where`` of the record owning the byte at ``offset`` in the file shown (a tensor, a header field)."""
        bm = self._bytemap
        if bm is None:
            return None
        tensors = bm.tensors_at(offset, limit=1)
        if tensors and tensors[0].where:
            return tensors[0].where
        base = bm.base_at(offset)
        if base is not None and base.kind == "header" and self.external_path is None:
            return f"header.{base.name}"
        return None

    def show_file_of(self, t: Tensor) -> bool:
        """Show the file holding ``t``'s bytes: the document's, or the external data file it is stored in.

        False when they are in no file the view can show (memory, a file that cannot be mapped).
        """
        if self._home is None:
            return False
        maps = self._home[1]
        if maps.in_home(t):
            self.show_document_file()
            return True
        known = maps.external(t)
        if known is None:
            return False
        if self._external is not known:
            self._external = known
            self.set_source(known[0], known[1], size=known[0].size)
        return True

    def set_origin(self, origin: int) -> None:
        """Start the lines at ``origin + k * width`` (bytes before the first full line: a shorter first line)."""
        if origin != self._origin:
            self._origin = origin
            self._invalidate()
            self._update_virtual_size()

    @property
    def origin(self) -> int:
        return self._origin

    def _shift(self) -> int:
        """Blank cells before byte 0 on the first line (lines start at ``origin`` modulo the width)."""
        return -self._origin % self._bpl

    def line_of(self, offset: int) -> int:
        """The line showing the byte at ``offset``."""
        return (offset + self._shift()) // self._bpl

    def line_start(self, line: int) -> int:
        """Offset of the first cell of ``line`` (negative on a shorter first line)."""
        return line * self._bpl - self._shift()

    @property
    def file_size(self) -> int:
        return self._nbytes

    @property
    def bytes_per_line(self) -> int:
        return self._bpl

    def goto(self, offset: int, length: int | None = None, *, center: bool = True) -> None:
        """Put the cursor on ``offset`` (clamped) and scroll to it; highlight ``length`` bytes if given."""
        if self._nbytes <= 0:
            return
        offset = max(0, min(offset, self._nbytes - 1))
        if length is not None:
            self.highlight = (offset, offset + max(0, length)) if length > 0 else None
        self.cursor = offset
        self.scroll_to_offset(offset, center=center)

    def set_highlight(self, span: tuple[int, int] | None) -> None:
        self.highlight = span
        self._invalidate()

    def scroll_to_offset(self, offset: int, *, center: bool = True) -> None:
        line = self.line_of(offset)
        h = max(1, self.scrollable_content_region.height or self.size.height or 1)
        top = int(self.scroll_offset.y)
        if top <= line < top + h and not center:
            return
        if top <= line < top + h:
            return
        target = max(0, line - h // 3) if center else (line if line < top else line - h + 1)
        self.scroll_to(y=target, animate=False, immediate=True)

    # ------------------------------------------------------------------ internals
    def _page(self) -> tuple[int, int]:
        """``[start, end)`` of the bytes on screen."""
        top = int(self.scroll_offset.y)
        h = self.scrollable_content_region.height or self.size.height or 1
        return max(0, self.line_start(top)), min(self._nbytes, max(0, self.line_start(top + h + 1)))

    def _fetched(self) -> None:
        """A remote page arrived: redraw, and have the byte inspector look again."""
        self._invalidate()
        self.post_message(self.CursorMoved(self, self.cursor))

    def _invalidate(self) -> None:
        self._gen += 1
        self._cache.clear()
        self.refresh()

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styles = None
        self._invalidate()

    def _line_width(self, bpl: int) -> int:
        """Cells of a line of ``bpl`` bytes (mark, offset, hex in groups of 8, ASCII), no annotation."""
        return 1 + self._offset_width() + 2 + bpl * 3 + max(0, bpl // 8 - 1) + 1 + bpl

    def _update_virtual_size(self) -> None:
        width = self.scrollable_content_region.width or self.size.width or 80
        # a wide pane shows more bytes per line, keeping room for the owner annotation
        bpl = next((n for n in (32, 24) if self._line_width(n) + ANNOTATION_ROOM <= width), 0) or (
            16 if width >= 76 else 8 if width >= 40 else 4)
        if bpl != self._bpl:
            self._bpl = bpl
            self._cache.clear()
        lines = max(1, -(-(self._nbytes + self._shift()) // self._bpl))
        self.virtual_size = Size(width, lines)

    def on_resize(self, event: events.Resize) -> None:
        self._update_virtual_size()
        self.scroll_to_offset(self.cursor, center=False)

    def watch_cursor(self, old: int, new: int) -> None:
        self._invalidate()
        self.post_message(self.CursorMoved(self, new))

    def _offset_width(self) -> int:
        return max(8, len(f"{max(0, self._nbytes - 1):x}"))

    def _get_styles(self) -> dict[str, Style]:
        if self._styles is None:
            base = self.rich_style
            styles = {
                name[len("hex--"):]: base + self.get_component_rich_style(name, partial=True)
                for name in self.COMPONENT_CLASSES
            }
            # The theme's muted text colours are "auto" colours that come out white here (white on
            # light grey in the light theme; padding bright instead of dim in the dark one): the
            # muted colours are the foreground faded toward the background, and every colour is
            # kept readable on the background (MIN_CONTRAST) in both themes.
            fg = Color.from_rich_color(base.color) if base.color is not None else Color(224, 224, 224)
            bg = Color.from_rich_color(base.bgcolor) if base.bgcolor is not None else Color(30, 30, 30)
            hl = styles["highlight"].bgcolor
            # the selection: a tint of its colour (its CSS alpha is lost in a Rich style)
            hl_bg = bg.blend(Color.from_rich_color(hl), 0.3) if hl is not None else bg
            styles["highlight"] = Style(bgcolor=hl_bg.rich_color)
            for name, style in styles.items():
                if name in ("highlight", "cursor"):
                    continue
                colour = fg.blend(bg, MUTED[name]) if name in MUTED else (
                    Color.from_rich_color(style.color) if style.color is not None else fg)
                for step in range(11):  # readable on the background and on the selection
                    c = colour.blend(fg, step / 10)
                    if min(contrast(c, bg), contrast(c, hl_bg)) >= MIN_CONTRAST:
                        break
                styles[name] = style + Style(color=c.rich_color, bgcolor=bg.rich_color)
            cur = styles["cursor"]
            if cur.bgcolor is not None:  # the cursor: black or white, whichever reads on its colour
                cb = Color.from_rich_color(cur.bgcolor)
                ink = max((Color(0, 0, 0), Color(255, 255, 255)), key=lambda c: contrast(c, cb))
                styles["cursor"] = cur + Style(color=ink.rich_color)
            styles["base"] = base
            self._styles = styles
        return self._styles

    def swatches(self) -> dict[str, Style]:
        """The colour of each region kind as drawn now (``header``, ``padding``, ``tensor-a``...): the help's legend."""
        return dict(self._get_styles())

    def render_line(self, y: int) -> Strip:
        line_no = int(self.scroll_offset.y) + y
        width = self.scrollable_content_region.width or self.size.width
        key = (line_no, self._bpl, self._shift(), width, self._gen)
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        strip = self._render_hex_line(line_no, width)
        self._cache[key] = strip
        return strip

    def _render_hex_line(self, line_no: int, width: int) -> Strip:
        st = self._get_styles()
        bpl = self._bpl
        start = self.line_start(line_no)  # negative on a shorter first line: ``lead`` blank cells
        lead = max(0, -start)
        if self._storage is None or start >= self._nbytes or line_no < 0:
            if line_no == 0 and self._storage is None:
                return Strip([Segment("(no bytes to show)", st["annotation"])]).extend_cell_length(width, st["base"]).crop(0, width)
            return Strip.blank(width, st["base"])
        first = start + lead
        end = min(self._nbytes, start + bpl)
        try:
            data = self._fetcher.read(self._storage, first, end - first)  # None: a remote page on its way
        except FormatError as e:
            self.error = e.message
            return Strip([Segment(f"{first:0{self._offset_width()}x}  ", st["offset"]),
                          Segment(safe_str(e.message, 200) + "  (r: reload)", st["error"])]).extend_cell_length(width, st["base"]).crop(0, width)
        if data is None:
            return Strip([Segment(f" {first:0{self._offset_width()}x}  ", st["offset"]),
                          Segment("·· fetching…", st["annotation"])]).extend_cell_length(width, st["base"]).crop(0, width)
        bm = self._bytemap
        # per-byte style keys
        keys: list[str] = []
        if bm is not None:
            for r0, r1, (kind, idx) in bm.runs(first, end):
                name = {"tensor": "tensor-a" if idx == 0 else "tensor-b", "external": "data"}.get(kind, kind)
                if name not in st:
                    name = "none"
                keys.extend([name] * (r1 - r0))
        else:
            keys = ["none"] * (end - first)
        hl = self.highlight
        cur = self.cursor
        try:
            differs = self._differing(first, data) if self._other is not None else ()
        except FormatError:
            differs = ()
        segs: list[Segment] = []
        mark = (start - self._origin) % 64 == 0
        segs.append(Segment("•" if mark else " ", st["mark"]))
        segs.append(Segment(f"{first:0{self._offset_width()}x}", st["mark"] if mark else st["offset"]))
        segs.append(Segment("  ", st["base"]))

        def byte_style(i: int) -> Style:  # i: index into data
            off = first + i
            s = st[keys[i]]
            if i in differs:
                s = s + st["differs"]
            if off == cur:
                return s + st["cursor"]
            if hl is not None and hl[0] <= off < hl[1]:
                return s + st["highlight"]
            return s

        for i in range(bpl):
            j = i - lead
            if 0 <= j < len(data):
                segs.append(Segment(f"{data[j]:02x}", byte_style(j)))
            else:
                segs.append(Segment("  ", st["base"]))
            sep = "  " if (i % 8 == 7 and bpl >= 16 and i != bpl - 1) else " "
            # the separator keeps the highlight when both neighbours are highlighted
            if hl is not None and 0 <= j and j + 1 < len(data) and hl[0] <= start + i and start + i + 1 < hl[1]:
                segs.append(Segment(sep, st["base"] + st["highlight"]))
            else:
                segs.append(Segment(sep, st["base"]))
        segs.append(Segment(" ", st["base"]))
        for i in range(bpl):
            j = i - lead
            if 0 <= j < len(data):
                b = data[j]
                ch = chr(b) if 0x20 <= b < 0x7F else "."
                segs.append(Segment(ch, byte_style(j)))
            else:
                segs.append(Segment(" ", st["base"]))
        used = sum(len(s.text) for s in segs)
        room = width - used - 2
        if bm is not None and room >= 6:
            ann = bm.label_at_line(first, end)
            if ann:
                segs.append(Segment("  ", st["base"]))
                segs.append(Segment(safe_str(ann, room), st["annotation"]))
        return Strip(segs).extend_cell_length(width, st["base"]).crop(0, width)

    # ------------------------------------------------------------------ actions
    def action_cursor(self, delta: int) -> None:
        if delta in (16, -16):
            delta = self._bpl if delta > 0 else -self._bpl
        self._move(self.cursor + delta)

    def action_page(self, direction: int) -> None:
        h = max(1, self.scrollable_content_region.height - 1)
        self._move(self.cursor + direction * h * self._bpl)

    def action_line_edge(self, which: int) -> None:
        base = self.line_start(self.line_of(self.cursor))
        self._move(max(0, base) if which == 0 else base + self._bpl - 1)

    def action_file_edge(self, which: int) -> None:
        self._move(0 if which == 0 else self._nbytes - 1)

    def _move(self, offset: int) -> None:
        if self._nbytes <= 0:
            return
        offset = max(0, min(self._nbytes - 1, offset))
        self.cursor = offset
        self.scroll_to_offset(offset, center=False)

    def offset_at(self, x: int, y: int) -> int | None:
        """The byte offset under content coordinates (x, y), or None."""
        line = int(self.scroll_offset.y) + y
        col = x - (1 + self._offset_width() + 2)
        if col < 0:
            return None
        groups = self._bpl // 8 if self._bpl >= 16 else 1
        hex_width = self._bpl * 3 + groups - 1
        if col < hex_width:
            if groups > 1:  # groups of 8 bytes, one more space between them
                g, within = divmod(col, 8 * 3 + 1)
                i = g * 8 + min(within // 3, 7)
            else:
                i = col // 3
        else:
            i = col - hex_width - 1
            if not 0 <= i < self._bpl:
                return None
        off = self.line_start(line) + i
        return off if 0 <= off < self._nbytes else None

    def on_click(self, event: events.Click) -> None:
        off = self.offset_at(event.x, event.y)
        if off is not None:
            self.cursor = off
