"""The diff viewer's two hex panes, moved together.

:class:`HexPair` keeps the alignment of the two panes: ``delta`` is B's offset minus A's for the
bytes shown side by side (a selected tensor's first bytes in each file, or the same offset when
nothing is selected); the app starts each pane's lines at that tensor's first byte
(:meth:`.hex_view.HexView.set_origin`), so the bytes compared sit in the same column. While ``locked`` (the default; ``l`` toggles) moving the cursor or
scrolling one pane moves the other by as much; unlocked, each moves alone and ``delta`` follows
the two cursors. Each pane marks the bytes that differ from the other's at that alignment
(:meth:`.hex_view.HexView.compare_with`); the box below each pane names the owner of the byte
under its cursor.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from rich.text import Text

from ...format.errors import FormatError
from ...format.schema import SparseTensor, Tensor
from ..hex.hex_view import HexView
from ..widgets.safe import safe_text


def side_tensor(rec: object) -> Tensor | None:
    """The tensor whose bytes a side's record has (a sparse tensor's values), else None."""
    if isinstance(rec, SparseTensor):
        rec = rec.values
    return rec if isinstance(rec, Tensor) else None


def element_at(t: Tensor, rel: int) -> str:
    """``[1,2] byte 3/4``: the element of ``t`` holding the byte ``rel`` bytes into its data."""
    info = t.info
    bits = info.bits if info is not None else 8
    if bits < 8 or not t.dims or any(d <= 0 for d in t.dims) or rel < 0 or rel >= t.length:
        return ""
    width = bits // 8
    flat = rel // width
    if flat >= math.prod(t.dims):
        return ""
    index = []
    for d in reversed(t.dims):
        flat, r = divmod(flat, d)
        index.append(r)
    where = "[" + ",".join(map(str, reversed(index))) + "]"
    return where + (f" byte {rel % width + 1}/{width}" if width > 1 else "")


class HexPair:
    """Hex panes A and B with their alignment, lock and the record each shows."""

    def __init__(self, a: HexView, b: HexView) -> None:
        self.views = (a, b)
        self.locked = True
        """Cursor moves and scrolling in one pane move the other by as much."""
        self.delta = 0
        """B's offset minus A's for the bytes compared side by side."""
        self.tensors: list[Tensor | None] = [None, None]
        """The tensor each pane was pointed at (None: the file's own bytes)."""
        self._following = False
        self._last = [0, 0]
        """Each pane's cursor as last seen (a move is the difference)."""

    def other(self, view: HexView) -> HexView:
        return self.views[1] if view is self.views[0] else self.views[0]

    def side(self, view: HexView) -> int:
        return 0 if view is self.views[0] else 1

    # ------------------------------------------------------------------ alignment
    def align(self, a_offset: int | None, b_offset: int | None) -> None:
        """The panes were pointed at ``a_offset`` / ``b_offset`` (None: that pane shows nothing of it)."""
        if a_offset is not None and b_offset is not None:
            self.delta = b_offset - a_offset
        self._last = [self.views[0].cursor, self.views[1].cursor]
        self.compare()

    def compare(self) -> None:
        """Each pane marks its bytes that differ from the other's (none when one shows nothing)."""
        a, b = self.views
        both = a.storage is not None and b.storage is not None
        a.compare_with(b.storage if both else None, self.delta)
        b.compare_with(a.storage if both else None, -self.delta)

    def toggle_lock(self) -> bool:
        self.locked = not self.locked
        a, b = self.views
        self.delta = b.cursor - a.cursor if a.storage is not None and b.storage is not None else self.delta
        self.compare()
        return self.locked

    # ------------------------------------------------------------------ following
    def cursor_moved(self, view: HexView, offset: int, user: bool) -> None:
        """``view``'s cursor is at ``offset``; ``user``: the user moved it (the other follows when locked)."""
        i = self.side(view)
        step = offset - self._last[i]
        self._last[i] = offset
        if self._following or not user or step == 0:
            return
        other = self.other(view)
        if self.locked and other.storage is not None and other.file_size:
            self._following = True
            try:
                target = offset + (self.delta if i == 0 else -self.delta)
                other.goto(max(0, min(other.file_size - 1, target)), center=False)
                self._last[1 - i] = other.cursor
            finally:
                self._following = False
        elif not self.locked and view.storage is not None and other.storage is not None:
            a, b = self.views
            self.delta = b.cursor - a.cursor
            self.compare()

    def scrolled(self, view: HexView, step: float) -> None:
        """``view`` scrolled by ``step`` lines: when locked (and not moved by this pair), the other scrolls as much."""
        if self._following or not self.locked or not step:
            return
        other = self.other(view)
        self._following = True
        try:
            other.scroll_to(y=other.scroll_offset.y + step, animate=False, immediate=True)
        finally:
            self._following = False

    @contextmanager
    def quiet(self):
        """Scrolls and moves inside are the app's (a new source laid out): the other pane does not follow."""
        was, self._following = self._following, True
        try:
            yield
        finally:
            self._following = was

    def point(self, view: HexView, offset: int, length: int | None = None, cursor: int | None = None) -> None:
        """Move ``view`` for the app (a selection; ``cursor``: inside the highlight): the other does not follow."""
        self._following = True
        try:
            view.goto(offset, length)
            if cursor is not None and cursor != view.cursor:
                view.cursor = max(0, min(view.file_size - 1, cursor))
        finally:
            self._following = False
        self._last[self.side(view)] = view.cursor

    def first_differing(self, a_offset: int, b_offset: int, width: int) -> int:
        """Index of the first byte that differs among ``width`` bytes at ``a_offset`` in A and ``b_offset`` in B
        (0 when none does or they cannot be read): an element's byte to put both cursors on."""
        a, b = (v.storage for v in self.views)
        if a is None or b is None or width <= 1:
            return 0
        n = min(width, a.size - a_offset, b.size - b_offset)
        try:
            x, y = a.read(a_offset, n), b.read(b_offset, n)
        except FormatError:
            return 0
        return next((i for i in range(n) if x[i] != y[i]), 0)

    def offset_in_other(self, view: HexView, offset: int) -> int:
        """The other pane's offset aligned with ``view``'s ``offset``."""
        return offset + (self.delta if view is self.views[0] else -self.delta)

    def goto_both(self, offset: int, relative: bool, view: HexView) -> None:
        """``g``: ``view`` to ``offset``; when locked the other to the same offset (``relative``: moved as much)."""
        other = self.other(view)
        target = other.cursor + (offset - view.cursor) if relative else offset
        if self.locked and not relative:  # the same offsets side by side: lines from offset 0 in both
            for v in self.views:
                v.set_origin(0)
        self._move_both(view, offset, target if self.locked else None)
        if self.locked and not relative:
            self.delta = 0
        elif not self.locked:
            a, b = self.views
            self.delta = b.cursor - a.cursor
        self.compare()

    def show_aligned(self, view: HexView, offset: int) -> None:
        """``d``: ``view`` to ``offset`` and the other pane to the byte aligned with it, locked or not."""
        self._move_both(view, offset, self.offset_in_other(view, offset), length=0)

    def _move_both(self, view: HexView, offset: int, other_offset: int | None, length: int | None = None) -> None:
        """Both cursors moved (``length`` 0: the selection's highlight dropped, the cursor marks the byte)."""
        other = self.other(view)
        self._following = True
        try:
            view.goto(offset, length)  # off screen: shown a third of the way down, with context
            if other_offset is not None and other.storage is not None and other.file_size:
                other.goto(max(0, min(other.file_size - 1, other_offset)), length)
        finally:
            self._following = False
        self._last = [self.views[0].cursor, self.views[1].cursor]

    # ------------------------------------------------------------------ captions
    def owner_caption(self, view: HexView) -> Text | None:
        """The box's subtitle: the cursor's offset, ``≠`` when that byte differs from the other pane's
        (before the owner: a long name is cut, not the mark), what owns it (a tensor's element)."""
        if view.storage is None or not view.file_size:
            return None
        off = view.cursor
        t = Text()
        t.append(f"0x{off:x}", style="bold")
        if view.differs_at(off):
            t.append(" ≠", style="bold red")
        owner = view.owner_at(off)
        tensor = self.tensors[self.side(view)]
        rel = off - (tensor.file_offset or 0) if tensor is not None else None
        inside = tensor is not None and rel is not None and 0 <= rel < tensor.length
        if not owner and inside:  # no map of the file (an ONNX file, a tensor's own bytes): the tensor's
            owner = f"tensor {tensor.name or '(unnamed)'} +{rel:,}"
        if owner:
            t.append("  ")
            t.append_text(safe_text(owner, limit=60))
        if inside:
            el = element_at(tensor, rel)
            if el:
                t.append(" " + el, style="dim")
        return t

