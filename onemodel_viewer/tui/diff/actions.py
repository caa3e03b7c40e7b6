"""The diff viewer's keys beyond the diff itself: help, search, go to, statistics, problems, and the
hex panes' lock and byte-level differences.

:class:`DiffActions` is mixed into :class:`~.diff_app.DiffApp` (which holds the bindings), next to
:class:`~.search.SearchActions`; the screens are the single-file viewer's (help, prompt, search
results, problems, statistics panel), given both sides.
"""

from __future__ import annotations

import threading
from typing import Any

from textual import work

from ...analysis.diff.compare import DiffNode
from ...format.errors import FormatError
from .hex import HexPair, side_tensor
from ..screens.help import COLOURS
from ..hex.hex_view import HexView
from ..widgets.safe import safe_str
from ..widgets.stats_panel import StatsPanel

DIFF_KEYS = (
    ("= + - ~ …", "equal · added (only in B) · removed (only in A) · changed · values not compared yet"),
    ("↑↓ ←→", "move in the focused pane (tree: → expands, ← collapses or goes to the parent)"),
    ("tab / shift+tab", "next / previous pane"),
    ("n / N", "next / previous difference"),
    ("f", "only differences / everything"),
    ("m", "changed tensors by how much they moved (rel_l2)"),
    ("/", "search nodes, tensors and values of both models by name or op"),
    ("] / [", "next / previous search match"),
    ("F", "every match of the last search (enter: go to one)"),
    ("g", "go to an offset in the focused hex pane (0x1a40, 6720, +64, end, 50%); locked: both"),
    ("d / D", "both hex panes to the next / previous byte that differs"),
    ("l", "lock the hex panes together (on) / move each alone"),
    ("s", "statistics of the selected tensor, A and B side by side"),
    ("c", "cancel the comparison of tensor values, else the running statistics and byte search"),
    ("p", "problems and findings of both files"),
    ("ctrl+p", "command palette"),
    ("?", "this help"),
    ("q", "quit"),
)

DIFF_COLOURS = (
    *COLOURS,
    ("differs", "a byte that differs from the other pane's byte at the same place (≠ under the cursor)",
     ("differs",)),
)


class DiffActions:
    """Help, search, go to, statistics, problems and the hex panes' keys (a mixin: ``self`` is the app)."""

    MATCH_KEYS = "] [: next / previous · F: all matches"

    pair: HexPair

    # ------------------------------------------------------------------ panes
    def focused_hex(self) -> HexView:
        """The hex pane with the focus, else A's (B's when A shows no bytes: an added tensor)."""
        a, b = self.pair.views
        return b if b.has_focus or (not a.has_focus and a.storage is None and b.storage is not None) else a

    # ------------------------------------------------------------------ help, go to, lock
    def action_help(self) -> None:
        from ..screens.help import HelpScreen

        self.push_screen(HelpScreen(self.pair.views[0].swatches(), keys=DIFF_KEYS, colours=DIFF_COLOURS,
                                    title="onemodel-view --diff — keys"))

    def action_goto(self) -> None:
        from ..widgets.prompt import ask_offset

        view = self.focused_hex()
        if view.storage is None or not view.file_size:
            self.notify("no bytes in this pane", severity="warning", markup=False)
            return

        def go(offset: int, relative: bool) -> None:
            self.pair.goto_both(offset, relative, view)
            view.focus()

        ask_offset(self, view, go)

    def action_toggle_lock(self) -> None:
        locked = self.pair.toggle_lock()
        self.notify("hex panes locked: they move together" if locked else "hex panes unlocked: each moves alone",
                    timeout=2, markup=False)
        self.update_hex_captions()

    # ------------------------------------------------------------------ byte differences
    def action_next_byte(self, step: int) -> None:
        """``d`` / ``D``: both panes to the next / previous byte that differs at the panes' alignment."""
        view = self.focused_hex()
        other = self.pair.other(view)
        if view.storage is None or other.storage is None:
            self.notify("one pane shows no bytes: nothing to compare", severity="warning", markup=False)
            return
        if self._seek_cancel is not None:
            self._seek_cancel.set()
        self._seek_cancel = cancel = threading.Event()
        delta = self.pair.offset_in_other(view, 0)
        self._seek(view, other.storage, view.cursor + step, delta, step, cancel)

    @work(thread=True, exclusive=True, group="byte-diff", exit_on_error=False)
    def _seek(self, view: HexView, other: Any, start: int, delta: int, step: int, cancel: threading.Event) -> None:
        from ...analysis.diff.byte_diff import ScanCancelled, next_differing

        try:
            found = next_differing(view.storage, other, start, delta, step, cancel)
        except ScanCancelled:
            return
        except FormatError as e:
            found = e
        try:
            self.call_from_thread(self._sought, view, found, step, cancel)
        except Exception:  # app shutting down
            pass

    def _sought(self, view: HexView, found: Any, step: int, cancel: threading.Event) -> None:
        if cancel.is_set():
            return
        self._seek_cancel = None
        if isinstance(found, FormatError):
            self.notify(f"cannot compare: {safe_str(found.message, 120)}", severity="error", markup=False)
        elif found is None:
            where = "after" if step > 0 else "before"
            self.notify(f"no differing byte {where} 0x{view.cursor:x} at this alignment", timeout=3, markup=False)
        else:
            self.pair.show_aligned(view, found)
            self.update_hex_captions()

    def cancel_seek(self) -> bool:
        if self._seek_cancel is not None and not self._seek_cancel.is_set():
            self._seek_cancel.set()
            self._seek_cancel = None
            return True
        return False

    # ------------------------------------------------------------------ statistics
    def action_stats(self) -> None:
        dn = self.current_entry
        recs = [side_tensor(dn.a), side_tensor(dn.b)] if dn is not None else [None, None]
        if recs == [None, None]:
            self.notify("select a tensor first", severity="warning", markup=False)
            return
        self.stats_on = True
        self.show_stats(dn, force=True)

    def show_stats(self, dn: DiffNode | None, force: bool = False) -> None:
        """Both sides' statistics of ``dn`` (shown once ``s`` was pressed; hidden for entries with no tensor)."""
        row = self.query_one("#stats-row")
        recs = [side_tensor(dn.a), side_tensor(dn.b)] if dn is not None else [None, None]
        if not self.stats_on or recs == [None, None]:
            row.add_class("hidden")
            for panel in self.query(StatsPanel):
                panel.show_tensor(None)
            return
        row.remove_class("hidden")
        for side, rec in zip("ab", recs):
            panel = self.query_one(f"#stats-{side}", StatsPanel)
            panel.set_class(rec is None, "hidden")
            if rec is None:
                panel.show_tensor(None)
            elif force:
                panel.compute_now(rec)
            else:
                panel.show_tensor(rec)

    def cancel_stats(self) -> bool:
        return any([panel.cancel() for panel in self.query(StatsPanel)])

    # ------------------------------------------------------------------ problems
    def action_problems(self) -> None:
        from ..screens.problems import ProblemsScreen

        if len(self.docs) < 2:
            return
        a, b = self.docs
        problems = [*a.problems, *b.problems]
        findings = [*a.findings, *b.findings]
        files = ["A"] * len(a.problems) + ["B"] * len(b.problems) + ["A"] * len(a.findings) + ["B"] * len(b.findings)

        def done(rec: Any) -> None:
            if rec is not None:
                side = 0 if any(rec is r for r in (*a.problems, *a.findings)) else 1
                self.jump_to_problem(side, rec)

        self.push_screen(ProblemsScreen(problems, findings, files=files), done)

    def jump_to_problem(self, side: int, rec: Any) -> None:
        """The diff tree on the entry of the record a problem names, that side's hex pane at its offset."""
        from ...analysis.diff.search import entries_by_record

        if self.result is not None and rec.where:
            where = rec.where
            by_record = entries_by_record(self.result.root)[side]
            while where and where not in by_record:  # the record itself, else the nearest one holding it
                where = where.rpartition(".")[0] if "." in where else ""
            if where:
                self.reveal(by_record[where].where)
        doc = self.docs[side]
        if rec.offset is not None and doc.storage is not None:
            view = self.pair.views[side]
            self.show_file(side, doc.storage)
            self.pair.point(view, rec.offset, 1)
            self.update_hex_captions()

    # ------------------------------------------------------------------ search
    def prepare_search(self) -> None:
        """Index both models' names off the UI thread once the structure is matched (a search before
        that builds its own index)."""
        if self.result is not None and len(self.docs) == 2:
            self._index_names(self.docs[0], self.docs[1], self.result.root)

    @work(thread=True, exclusive=True, group="search-index", exit_on_error=False)
    def _index_names(self, a: Any, b: Any, root: DiffNode | None) -> None:
        from ...analysis.diff.search import DiffSearchIndex

        index = DiffSearchIndex(a, b, root, self._cancel)
        if self._cancel.is_set():  # incomplete
            return
        try:
            self.call_from_thread(self._set_diff_index, root, index)
        except Exception:  # app shutting down
            pass

    def _set_diff_index(self, root: DiffNode | None, index: Any) -> None:
        if self.result is not None and self.result.root is root and self._search_index is None:
            self._search_index = index

    def _make_search_index(self):
        from ...analysis.diff.search import DiffSearchIndex

        if self.result is None or len(self.docs) < 2:
            return None
        return DiffSearchIndex(self.docs[0], self.docs[1], self.result.root)

    def reveal(self, where: str) -> DiffNode | None:
        """Put the diff tree's cursor on the entry at ``where`` (showing every entry if the filter hides it)."""
        from .tree import DiffTree

        root = self.result.root if self.result is not None else None
        dn = next((n for n in root.walk() if n.where == where), None) if root is not None else None
        if dn is None:
            return None
        tree = self.query_one(DiffTree)
        if not tree.reveal(dn) and tree.only_differences:
            tree.set_only_differences(False)
            tree.reveal(dn)
        tree.focus()
        self.show_entry(dn)
        return dn
