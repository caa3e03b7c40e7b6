"""The diff viewer's hex panes in the app: which bytes each shows for the selected entry, the captions
under them, and the scroll and cursor events handed to their :class:`~.diff_hex.HexPair`.

:class:`HexPanes` is mixed into :class:`~.diff_app.DiffApp`: ``self`` is the app, with ``paths``,
``docs``, ``pair`` and the ``#hex-a`` / ``#hex-b`` views in ``#hexbox-a`` / ``#hexbox-b``.
"""

from __future__ import annotations

import os
from typing import Any

from rich.text import Text

from ...analysis.diff.compare import DiffNode
from ...format.schema import Tensor
from .hex import HexPair, side_tensor
from ..hex.hex_view import HexView
from ..widgets.safe import safe_str


class HexPanes:
    """Both hex panes of the diff viewer (a mixin: ``self`` is the app)."""

    pair: HexPair
    _hex_source: dict[str, Any]
    _bytemaps: dict[str, Any]

    def _scrolled_a(self, old: float, new: float) -> None:
        self.pair.scrolled(self.pair.views[0], new - old)

    def _scrolled_b(self, old: float, new: float) -> None:
        self.pair.scrolled(self.pair.views[1], new - old)

    def on_hex_view_cursor_moved(self, event: HexView.CursorMoved) -> None:
        self.pair.cursor_moved(event.hex_view, event.offset, user=event.hex_view.has_focus)
        self.update_hex_captions()

    def update_hex_captions(self) -> None:
        """Under each pane: its cursor's offset, the owner of that byte, ≠ when it differs; lock state on A."""
        for side, view in zip("ab", self.pair.views):
            box = view.parent  # its #hexbox-a/-b; None once the app is closing (a cursor move handled late)
            if box is None:
                continue
            caption = self.pair.owner_caption(view)
            if side == "a" and not self.pair.locked:
                caption = (caption or Text("")) + Text("  unlocked (l)", style="yellow")
            box.border_subtitle = caption

    def show_file(self, side: int, storage: Any) -> None:
        """Pane ``side`` (0: A) on ``storage`` (a document's own file: with its byte map), lines from offset 0."""
        self.pair.views[side].set_origin(0)
        self._set_hex_source("ab"[side], "#hex-" + "ab"[side], storage)

    def _set_hex_source(self, side: str, hid: str, storage, tensor: Tensor | None = None) -> None:
        if self._hex_source.get(side) is storage:
            return
        self._hex_source[side] = storage
        self.pair.tensors["ab".index(side)] = tensor
        bm = None
        doc = self.docs[0 if side == "a" else 1] if self.docs else None
        path = self.paths[0 if side == "a" else 1]
        title = side.upper() + " " + safe_str(path, 60)
        if doc is not None and storage is doc.storage:
            bm = self._bytemaps.get(side)
        elif getattr(storage, "path", None):
            spath = str(storage.path)  # type: ignore[attr-defined]
            if os.path.abspath(spath) != os.path.abspath(path):
                title += " · external " + safe_str(spath, 50)
        elif tensor is not None:
            title += " · bytes of " + safe_str(tensor.name or "(unnamed)", 40) + " (offsets in the tensor)"
        box = self.query_one("#hexbox-" + side)
        box.border_title = title
        with self.pair.quiet():  # a shorter file clamps the scroll position: not a scroll to follow
            self.query_one(hid, HexView).set_source(storage, bm)

    def _jump_hex(self, dn: DiffNode) -> None:
        """Point both hex panes at the bytes of the selected entry (first differing bytes when known),
        aligned so that the same element sits under both cursors; a side without the tensor shows none."""
        data_diff = next((d for d in dn.differences if d.where.endswith(".data") and d.detail), None)
        recs = [side_tensor(dn.a), side_tensor(dn.b)]
        shown = [r if r is not None and not r.is_string and r.storage is not None and r.file_offset is not None
                 else None for r in recs]
        if shown == [None, None]:
            return
        targets: list[tuple[int, int] | None] = [None, None]
        fresh = [False, False]
        for i, (side, rec) in enumerate(zip("ab", shown)):
            hid = "#hex-" + side
            if rec is None:  # added or removed: this side has no such bytes
                self._set_hex_source(side, hid, None)
                absent = "only in B" if i == 0 else "only in A"
                self.query_one("#hexbox-" + side).border_title = (
                    side.upper() + " " + safe_str(self.paths[i], 50) + f" · not here ({safe_str(dn.label, 40)} is {absent})")
                continue
            fresh[i] = self._hex_source.get(side) is not rec.storage
            self._set_hex_source(side, hid, rec.storage, rec)
            self.pair.tensors[i] = rec
            # lines start at the tensor's first byte: the same element byte in the same column of both panes
            self.pair.views[i].set_origin(rec.file_offset)
            if data_diff is not None and "first_byte" in data_diff.detail:
                info = rec.info
                width = max(1, (info.bits + 7) // 8) if info is not None else 1
                targets[i] = (rec.file_offset + data_diff.detail["first_byte"], width)
            else:
                targets[i] = (rec.file_offset, rec.length)
        ta, tb = targets
        # the cursors on the element's first byte that differs (its highlight: the whole element)
        k = self.pair.first_differing(ta[0], tb[0], ta[1]) if ta and tb and data_diff is not None else 0
        for i, target in enumerate(targets):
            if target is None:
                continue
            hv = self.pair.views[i]
            if fresh[i]:  # the new source's size is laid out on the next refresh: scroll after it
                hv.cursor = target[0] + k
                self.call_after_refresh(self._point, hv, *target, target[0] + k)
            else:
                self.pair.point(hv, *target, target[0] + k)
        self.pair.align(ta[0] if ta else None, tb[0] if tb else None)
        self.update_hex_captions()

    def _point(self, view: HexView, offset: int, length: int, cursor: int) -> None:
        self.pair.point(view, offset, length, cursor)
        self.update_hex_captions()
