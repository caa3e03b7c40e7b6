"""The drawing of a node's neighbourhood (the ``a`` screen's body): layers of boxes, top to bottom.

Producers above, the centre node in the middle, consumers below (``analysis/neighbourhood.py``
computes and lays them out). Each box shows the op and the name; the line above a box labels
the edges coming into it from the layer above: the value and its type (``⇣`` marks a read from
inside a subgraph). The selected box is drawn bold and the boxes joined to it highlighted; arrow
keys move along edges (up/down) and within a layer (left/right). Only the drawing's lines on
screen are turned into strips; the drawing itself is bounded by the boxes shown (fan-outs are
folded into ``N more`` boxes).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.message import Message
from textual.reactive import reactive
from textual.strip import Strip
from textual.widget import Widget

from ...analysis.neighbourhood import Box, Neighbourhood
from ..widgets.safe import safe_str

BOX_H = 5
"""Lines per layer: the edge label line, then the box (top, op, name, bottom)."""


class NeighbourhoodView(Widget, can_focus=True):
    """Boxes and edge labels of one :class:`Neighbourhood`."""

    BINDINGS = [
        Binding("up", "along(-1)", "Producer", show=False),
        Binding("down", "along(1)", "Consumer", show=False),
        Binding("left", "side(-1)", "Left", show=False),
        Binding("right", "side(1)", "Right", show=False),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | up/down | To a box joined by an edge in the layer above / below. |
    | left/right | To the neighbouring box of the same layer. |
    """

    COMPONENT_CLASSES = {"nb--box", "nb--centre", "nb--selected", "nb--joined", "nb--edge", "nb--subgraph",
                         "nb--fold", "nb--io", "nb--op"}

    DEFAULT_CSS = """
    NeighbourhoodView {
        & > .nb--box { color: $foreground; }
        & > .nb--centre { color: $accent; text-style: bold; }
        & > .nb--selected { background: $accent 40%; text-style: bold; }
        & > .nb--joined { color: $success; }
        & > .nb--edge { color: $text-muted; }
        & > .nb--subgraph { color: $warning; text-style: italic; }
        & > .nb--fold { color: $text-muted; text-style: italic; }
        & > .nb--io { color: $secondary; }
        & > .nb--op { text-style: bold; }
    }
    """

    selected: reactive[int] = reactive(0, init=False, always_update=True)
    """Id of the selected box."""

    class SelectionMoved(Message):
        """The arrow keys moved the selection (not posted for :meth:`set_neighbourhood`)."""

        def __init__(self, view: "NeighbourhoodView") -> None:
            super().__init__()
            self.view = view

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, NeighbourhoodView.SelectionMoved)

    def __init__(self, nb: Neighbourhood, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._style_cache: dict[str, Style] | None = None
        self.top = 0
        self.left = 0
        self.set_neighbourhood(nb)

    def set_neighbourhood(self, nb: Neighbourhood) -> None:
        """Draw ``nb``, its centre selected. The caller updates what describes the selection."""
        self.nb = nb
        self.order = sorted(nb.levels)
        """Levels top to bottom."""
        self.top = self.left = 0
        self.set_reactive(NeighbourhoodView.selected, nb.centre)
        self._show_selection()

    # -- geometry
    @property
    def box_w(self) -> int:
        w = self.content_region.width or self.size.width or 80
        return max(16, min(26, (w - 2) // 3))

    def _pos(self, b: int) -> tuple[int, int]:
        """(first line, first column) of box ``b``."""
        bx = self.nb.boxes[b]
        row = self.order.index(bx.level)
        col = self.nb.levels[bx.level].index(b)
        return row * BOX_H, col * (self.box_w + 2)

    @property
    def lines(self) -> int:
        return len(self.order) * BOX_H

    # -- drawing
    def _styles(self) -> dict[str, Style]:
        if self._style_cache is None:  # once per style change, not per line (a third of a redraw)
            base = self.rich_style
            out = {k[4:]: base + self.get_component_rich_style(k, partial=True) for k in self.COMPONENT_CLASSES}
            out["base"] = base
            self._style_cache = out
        return self._style_cache

    def notify_style_update(self) -> None:
        self._style_cache = None
        super().notify_style_update()

    def _label(self, b: int) -> tuple[str, bool]:
        """The edges coming into ``b``: ``▼ value type · value type``, ``⇣`` first when one is a subgraph read."""
        ins = self.nb.edges_in(b)
        if not ins:
            return "", False
        sub = any(e.subgraph for e in ins)
        parts = [safe_str(e.value, 40) + (" " + e.type if e.type else "") for e in ins[:6]]
        text = ("⇣ " if sub else "▼ ") + " · ".join(parts)
        if len(ins) > 6:
            text += f" (+{len(ins) - 6})"
        return text, sub

    def render_line(self, y: int) -> Strip:
        st = self._styles()
        width = self.content_region.width or self.size.width
        line = self.top + y
        if line >= self.lines:
            return Strip.blank(width, st["base"])
        row, part = divmod(line, BOX_H)
        level = self.order[row]
        bw = self.box_w
        joined = self._joined
        segs: list[Segment] = []
        for b in self.nb.levels[level]:
            bx = self.nb.boxes[b]
            if bx.kind == "fold":
                style = st["fold"]
            elif bx.kind in ("input", "init", "output"):
                style = st["io"]
            elif b == self.nb.centre:
                style = st["centre"]
            elif b in joined:
                style = st["joined"]
            else:
                style = st["box"]
            if b == self.selected:
                style = style + st["selected"]
            inner = bw - 2
            if part == 0:
                text, sub = self._label(b)
                text = text if len(text) <= bw else text[: bw - 1] + "…"
                segs.append(Segment(text.ljust(bw), st["subgraph"] if sub else st["edge"]))
            elif part == 1:
                segs.append(Segment("┌" + "─" * inner + "┐", style))
            elif part == 2:
                op = safe_str(bx.op, inner)
                segs.append(Segment("│", style))
                segs.append(Segment(op.ljust(inner), style + st["op"]))
                segs.append(Segment("│", style))
            elif part == 3:
                name = safe_str(bx.name or "(unnamed)", inner)
                segs.append(Segment("│" + name.ljust(inner) + "│", style))
            else:
                segs.append(Segment("└" + "─" * inner + "┘", style))
            segs.append(Segment("  ", st["base"]))
        strip = Strip(segs)
        total = strip.cell_length
        return strip.crop(self.left, self.left + width).extend_cell_length(width, st["base"]) if total > self.left \
            else Strip.blank(width, st["base"])

    # -- movement
    def watch_selected(self) -> None:
        self._show_selection()
        self.post_message(self.SelectionMoved(self))

    def _show_selection(self) -> None:
        # the boxes drawn highlighted: joined to the selected one by an edge
        self._joined = set(self.nb.neighbours(self.selected, -1)) | set(self.nb.neighbours(self.selected, 1))
        self._keep_visible()
        self.refresh()

    def _keep_visible(self) -> None:
        if self.selected not in self.nb.boxes:
            return
        y, x = self._pos(self.selected)
        h = self.content_region.height or self.size.height or 20
        w = self.content_region.width or self.size.width or 80
        if y < self.top:
            self.top = y
        elif y + BOX_H > self.top + h:
            self.top = max(0, y + BOX_H - h)
        if x < self.left:
            self.left = x
        elif x + self.box_w > self.left + w:
            self.left = max(0, x + self.box_w + 2 - w)

    def action_along(self, direction: int) -> None:
        bx = self.nb.boxes[self.selected]
        joined = self.nb.neighbours(self.selected, direction)
        if joined:
            self.selected = joined[0]
            return
        i = self.order.index(bx.level) + direction
        if 0 <= i < len(self.order):
            layer = self.nb.levels[self.order[i]]
            col = self.nb.levels[bx.level].index(self.selected)
            self.selected = layer[min(col, len(layer) - 1)]

    def action_side(self, delta: int) -> None:
        layer = self.nb.levels[self.nb.boxes[self.selected].level]
        i = layer.index(self.selected) + delta
        if 0 <= i < len(layer):
            self.selected = layer[i]

    @property
    def selected_box(self) -> Box:
        return self.nb.boxes[self.selected]

    def on_resize(self) -> None:
        self._keep_visible()
