"""A scrollable grid of one 2-D slice of a tensor's values (the ``v`` screen's body).

Drawn line by line (:meth:`render_line`); only the cells on screen are read, through
``analysis/values.py`` (which reads just those elements' bytes, like the hex pane's lines),
and cached by (slice, row, column). NaN and ±Inf are coloured apart; string elements are shown
escaped. The cursor is a cell: arrows, PageUp/PageDown, Home/End.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from ...analysis.values import Cell, SliceSpec, flat_index, format_elements
from ...format.schema import Tensor
from ..widgets.safe import safe_str


def cell_width(t: Tensor) -> int:
    if t.is_string:
        return 24
    name = t.info.name if t.info is not None else ""
    if name == "bool":
        return 6
    if name in ("uint8", "int8", "uint4", "int4", "uint2", "int2"):
        return 5
    if name in ("uint16", "int16"):
        return 7
    if name.startswith("complex"):
        return 24
    if name in ("int64", "uint64", "double"):
        return 21
    return 12


class ValuesGrid(Widget, can_focus=True):
    """Cells of ``spec``'s slice of ``tensor``."""

    BINDINGS = [
        Binding("up", "move(-1, 0)", "Up", show=False),
        Binding("down", "move(1, 0)", "Down", show=False),
        Binding("left", "move(0, -1)", "Left", show=False),
        Binding("right", "move(0, 1)", "Right", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home", "edge(0)", "Row start", show=False),
        Binding("end", "edge(1)", "Row end", show=False),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | arrows | Move the cell cursor. |
    | pageup/pagedown | By a page of rows. |
    | home/end | First / last column. |
    """

    COMPONENT_CLASSES = {"grid--header", "grid--cursor", "grid--nan", "grid--inf", "grid--zero", "grid--str", "grid--error"}

    DEFAULT_CSS = """
    ValuesGrid {
        & > .grid--header { color: $text-muted; text-style: bold; }
        & > .grid--cursor { background: $accent; color: $background; text-style: bold; }
        & > .grid--nan { color: $error; text-style: bold; }
        & > .grid--inf { color: $warning; text-style: bold; }
        & > .grid--zero { color: $text-disabled; }
        & > .grid--str { color: $success; }
        & > .grid--error { color: $error; }
    }
    """

    cursor: reactive[tuple[int, int]] = reactive((0, 0), init=False, always_update=True)
    """(row, column) of the cursor cell."""

    class CursorMoved(Message):
        def __init__(self, grid: "ValuesGrid") -> None:
            super().__init__()
            self.grid = grid

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, ValuesGrid.CursorMoved)

    def __init__(self, tensor: Tensor, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.tensor = tensor
        self.spec = SliceSpec.default(tuple(tensor.dims))
        self.top = 0
        self.left = 0
        self.cw = cell_width(tensor)
        self._cells: LRUCache[tuple, Cell] = LRUCache(8192)
        self.error: str | None = None

    # -- public
    def set_spec(self, spec: SliceSpec, row: int = 0, col: int = 0) -> None:
        self.spec = spec
        self.top = self.left = 0
        self._cells.clear()
        self.cursor = (max(0, min(row, spec.rows - 1)), max(0, min(col, spec.cols - 1)))
        self._keep_visible()
        self.refresh()

    def cell(self, r: int, c: int) -> Cell | None:
        """The cell (r, c) of the current slice (read now if not cached)."""
        idx = self.spec.index(r, c)
        if idx is None:
            return None
        key = (self.spec, r, c)
        hit = self._cells.get(key)
        if hit is None:
            self._fetch([(r, c)])
            hit = self._cells.get(key)
        return hit

    def current_index(self) -> tuple[int, ...] | None:
        return self.spec.index(*self.cursor)

    # -- drawing
    @property
    def _label_w(self) -> int:
        return max(4, len(str(max(0, self.spec.rows - 1))) + 1) + 1

    def _visible_cols(self) -> int:
        w = self.content_region.width or self.size.width or 80
        return max(1, (w - self._label_w) // (self.cw + 1))

    def _visible_rows(self) -> int:
        return max(1, (self.content_region.height or self.size.height or 20) - 1)

    def _fetch(self, cells: list[tuple[int, int]]) -> None:
        spec, t = self.spec, self.tensor
        todo = [(r, c, spec.index(r, c)) for r, c in cells if (spec, r, c) not in self._cells]
        todo = [(r, c, i) for r, c, i in todo if i is not None]
        if not todo:
            return
        dims = tuple(t.dims)
        try:
            got = format_elements(t, [flat_index(dims, i) for _, _, i in todo])
        except Exception as e:  # unreadable bytes (diagnose-mode file), a changed file: shown, not raised
            self.error = safe_str(str(e), 200)
            got = [Cell("?", "error")] * len(todo)
        for (r, c, _), cell in zip(todo, got):
            self._cells[(spec, r, c)] = cell

    def render_line(self, y: int) -> Strip:
        base = self.rich_style
        st = {k: base + self.get_component_rich_style(f"grid--{k}", partial=True)
              for k in ("header", "cursor", "nan", "inf", "zero", "str", "error")}
        width = self.content_region.width or self.size.width
        ncols = self._visible_cols()
        cols = range(self.left, min(self.spec.cols, self.left + ncols))
        lw = self._label_w
        if y == 0:
            segs = [Segment(" " * lw, st["header"])]
            for c in cols:
                label = str(c if self.spec.row_axis is not None or self.spec.col_axis is None else f"+{c}")
                segs.append(Segment(label.rjust(self.cw) + " ", st["header"]))
            return Strip(segs).extend_cell_length(width, base).crop(0, width)
        r = self.top + y - 1
        if r >= self.spec.rows:
            return Strip.blank(width, base)
        self._fetch([(r, c) for c in cols])
        label = str(r * self.spec.wrap) if self.spec.row_axis is None and self.spec.col_axis is not None else str(r)
        segs = [Segment(label.rjust(lw - 1) + " ", st["header"])]
        for c in cols:
            cell = self._cells.get((self.spec, r, c))
            if cell is None:
                segs.append(Segment(" " * (self.cw + 1), base))
                continue
            text = cell.text if len(cell.text) <= self.cw else cell.text[: self.cw - 1] + "…"
            style = st.get(cell.kind, base) if cell.kind in ("nan", "inf", "zero", "str", "error") else base
            if (r, c) == self.cursor:
                style = style + st["cursor"]
            segs.append(Segment(text.rjust(self.cw) if cell.kind != "str" else text.ljust(self.cw), style))
            segs.append(Segment(" ", base))
        return Strip(segs).extend_cell_length(width, base).crop(0, width)

    # -- movement
    def _keep_visible(self) -> None:
        r, c = self.cursor
        h, w = self._visible_rows(), self._visible_cols()
        if r < self.top:
            self.top = r
        elif r >= self.top + h:
            self.top = r - h + 1
        if c < self.left:
            self.left = c
        elif c >= self.left + w:
            self.left = c - w + 1

    def watch_cursor(self) -> None:
        self._keep_visible()
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def move_to(self, r: int, c: int) -> None:
        rows, cols = self.spec.rows, self.spec.cols
        if rows <= 0 or cols <= 0:
            return
        r = max(0, min(rows - 1, r))
        c = max(0, min(cols - 1, c))
        while c > 0 and self.spec.index(r, c) is None:  # the wrapped 1-D tensor's short last row
            c -= 1
        self.cursor = (r, c)

    def action_move(self, dr: int, dc: int) -> None:
        r, c = self.cursor
        self.move_to(r + dr, c + dc)

    def action_page(self, direction: int) -> None:
        r, c = self.cursor
        self.move_to(r + direction * self._visible_rows(), c)

    def action_edge(self, which: int) -> None:
        r, _ = self.cursor
        self.move_to(r, 0 if which == 0 else self.spec.cols - 1)

    def on_resize(self) -> None:
        self._keep_visible()
