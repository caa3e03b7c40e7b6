"""The viewer in diff mode: ``onemodel-view --diff A B``.

One tree over both models with a marker per entry (``=`` equal, ``+`` added, ``-``
removed, ``~`` changed), a detail pane with both sides of the selected entry, and
the hex panes of both files, which jump to the first differing bytes of a changed
tensor. Opening the files and computing the diff run in a thread worker; the UI
thread only renders. ``f`` toggles "only differences", ``n``/``N`` go to the
next/previous difference.

The structure appears as soon as it is matched; tensor values are compared after it
(two threads), each tensor's marker going from ``…`` to ``=`` or ``~`` as it is done, a
progress line above. ``c`` cancels that comparison (the tensors not compared keep
``…``); ``m`` lists the changed tensors by ``rel_l2`` with a bar each; a changed float
tensor's detail shows its metrics and a histogram of b − a.

The single-file viewer's screens work on both sides (tui/diff/actions.py): ``?`` help, ``/`` a
search of both models (``]`` / ``[`` next / previous match, ``F`` the list; their names are indexed in
a thread once the structure is matched), ``g`` go to an offset, ``s`` statistics of A and B side by
side, ``p`` both files' problems. The hex panes (tui/diff/panes.py, tui/diff/hex.py) move together
(``l`` unlocks them), mark the bytes that differ at their alignment, ``d`` / ``D`` go to the next /
previous one, and the line under each names the owner of the byte under its cursor.

:func:`make_diff_app` is the factory shared by the CLI and the tests.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Iterable

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer

from ...analysis.diff.compare import (
    ADDED,
    CHANGED,
    EQUAL,
    REMOVED,
    DiffCancelled,
    DiffNode,
    DiffResult,
    StagedDiff,
)
from ...format.document import Document
from ..widgets.detail_pane import DetailPane
from .actions import DiffActions
from .detail import difference_lines, histogram_lines, not_compared_lines, record_lines
from .hex import HexPair
from .panes import HexPanes
from .tree import MARKERS, NOT_COMPARED, DiffTree
from ..widgets.fitted_static import FittedStatic
from ..hex.hex_view import HexView
from ..widgets.prompt import take_stray_key
from ..widgets.safe import human_size, safe_str, safe_text
from ..search import SearchActions
from ..widgets.stats_panel import StatsPanel



def differing_entries(result: DiffResult | None) -> list[DiffNode]:
    """The entries of ``result`` that are added, removed, have differences or were not compared, in tree order."""
    if result is None or not result.root:
        return []
    return [n for n in result.root.walk()
            if n.status in (ADDED, REMOVED) or n.differences or n.not_compared is not None]


class DiffApp(HexPanes, DiffActions, SearchActions, App[int]):
    """Side-by-side comparison of two model files."""

    TITLE = "onemodel-view diff"

    CSS = """
    #status { height: 2; padding: 0 1; background: $panel; }
    #body { height: 1fr; }
    #tree { width: 45%; min-width: 30; border: round $primary; }
    #right { width: 1fr; }
    #detail { height: 1fr; border: round $secondary; }
    .hexbox { height: 1fr; border: round $secondary; border-subtitle-align: left; }
    #tree:focus, #detail:focus, .hexbox:focus-within { border: round $accent; }
    #stats-row { height: auto; }
    #stats-row.hidden, #stats-row > .hidden { display: none; }
    #stats-row > StatsPanel { width: 1fr; border: round $secondary; padding: 0 1; }
    """

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("question_mark", "help", "Help"),
        Binding("slash", "search", "Search"),
        Binding("n", "next_difference(1)", "Next diff"),
        Binding("N", "next_difference(-1)", "Prev", key_display="N"),
        Binding("f", "toggle_filter", "Only diffs"),
        Binding("g", "goto", "Go to"),
        Binding("s", "stats", "Stats"),
        Binding("p", "problems", "Problems"),
        Binding("d", "next_byte(1)", "Next byte"),
        Binding("D", "next_byte(-1)", "Prev byte", show=False),
        Binding("l", "toggle_lock", "Lock hex", show=False),
        Binding("right_square_bracket", "next_match(1)", "Next match", show=False),
        Binding("left_square_bracket", "next_match(-1)", "Prev match", show=False),
        Binding("F", "search_results", "Matches", show=False),
        Binding("m", "most_changed", "Most changed", show=False),
        Binding("c", "cancel", "Cancel", show=False),
        Binding("tab", "focus_next", "Focus", show=False),
    ]
    """
    | Key | Description |
    | :- | :- |
    | q, ctrl+c | Quit (the comparison still running is cancelled). |
    | ? | Help: keys and colours. |
    | / , ] / [, F | Search both models; next / previous match; every match. |
    | n / N | Next / previous difference. |
    | f | Show only differences / everything. |
    | g | Go to an offset in the focused hex pane (both when locked). |
    | s | Statistics of the selected tensor, A and B. |
    | p | Problems and findings of both files. |
    | d / D | Both hex panes to the next / previous differing byte. |
    | l | Lock the hex panes together / move each alone. |
    | m | Changed tensors by how much they moved (rel_l2). |
    | c | Cancel the comparison of tensor values still running (else statistics, byte search). |
    """

    class StructureReady(Message):
        """The structure is matched; tensor values are being compared next."""

        def __init__(self, docs: list[Document], result: DiffResult, staged: StagedDiff) -> None:
            super().__init__()
            self.docs = docs
            self.result = result
            self.staged = staged
            # made in the worker before any value is compared: the entries' statuses change under the
            # UI thread's feet once the comparison runs, so the first selection is taken from these
            self.differing = differing_entries(result)

    class Compared(Message):
        """These tensor entries got their final status (a batch, in the order they finished)."""

        def __init__(self, nodes: list[DiffNode]) -> None:
            super().__init__()
            self.nodes = nodes

    class Histogram(Message):
        """A histogram of b − a for one entry (``None``: none to draw)."""

        def __init__(self, node: DiffNode, hist: Any) -> None:
            super().__init__()
            self.node = node
            self.hist = hist

    class DiffReady(Message):
        """The worker finished (``result`` None and ``error`` set on failure)."""

        def __init__(self, docs: list[Document], result: DiffResult | None, error: str | None,
                     differing: list[DiffNode] | None = None) -> None:
            super().__init__()
            self.docs = docs
            self.result = result
            self.error = error
            self.differing = differing

    class Progress(Message):
        def __init__(self, done: int, total: int) -> None:
            super().__init__()
            self.done = done
            self.total = total

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, DiffApp.Progress)

    def __init__(self, a: str | Document, b: str | Document) -> None:
        super().__init__()
        self.sources = (a, b)
        self.paths = tuple(s.path if isinstance(s, Document) else str(s) for s in (a, b))
        self.docs: list[Document] = []
        self.result: DiffResult | None = None
        self.error: str | None = None
        self._cancel = threading.Event()
        self._diff_nodes: list[DiffNode] = []
        self._hex_source: dict[str, Any] = {}
        self._bytemaps: dict[str, Any] = {}
        self._staged: StagedDiff | None = None
        self._weights_cancelled = False
        self._phase = "open"
        """``open``, ``weights`` (the structure is shown, values being compared), ``done``, ``cancelled``."""
        self._auto_cursor: DiffNode | None = None
        """The entry the app put the cursor on (moved to the first difference again when the weights are done)."""
        self._hists: dict[int, Any] = {}
        self._reset_search()
        self.current_entry: DiffNode | None = None
        """The entry shown in the detail pane."""
        self.stats_on = False
        """``s`` was pressed: both sides' statistics follow the selected tensor."""
        self._seek_cancel: threading.Event | None = None

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield FittedStatic(self._status_text("opening…"), id="status", max_rows=5)
        with Horizontal(id="body"):
            yield DiffTree(id="tree")
            with Vertical(id="right"):
                yield DetailPane(id="detail")
                with Horizontal(id="stats-row", classes="hidden"):
                    yield StatsPanel(id="stats-a")
                    yield StatsPanel(id="stats-b")
                with Vertical(classes="hexbox", id="hexbox-a"):
                    yield HexView(id="hex-a")
                with Vertical(classes="hexbox", id="hexbox-b"):
                    yield HexView(id="hex-b")
        yield Footer()

    async def on_key(self, event: events.Key) -> None:
        await take_stray_key(self, event)  # a key sent to this screen before a prompt opened goes into it

    def on_mount(self) -> None:
        self.query_one("#hexbox-a").border_title = "A " + safe_str(self.paths[0], 60)
        self.query_one("#hexbox-b").border_title = "B " + safe_str(self.paths[1], 60)
        self.query_one("#tree").border_title = "Diff"
        self.query_one("#detail").border_title = "Detail"
        self.query_one("#stats-a").border_title = "Statistics A"
        self.query_one("#stats-b").border_title = "Statistics B"
        a, b = self.query_one("#hex-a", HexView), self.query_one("#hex-b", HexView)
        self.pair = HexPair(a, b)
        self.watch(a, "scroll_y", self._scrolled_a, init=False)
        self.watch(b, "scroll_y", self._scrolled_b, init=False)
        self.query_one(DiffTree).focus()
        self._compute()

    def exit(self, *args: Any, **kwargs: Any) -> None:
        """Leave the app; the comparison, statistics and byte search still running are told to stop first."""
        self._cancel.set()
        self.cancel_seek()
        self.cancel_stats()
        super().exit(*args, **kwargs)

    def on_unmount(self) -> None:
        self._cancel.set()
        self.cancel_seek()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from self.search_commands()
        yield SystemCommand("Go to offset", "Move the focused hex pane (both when locked) to an offset (g)", self.action_goto)
        yield SystemCommand("Next differing byte", "Both hex panes to the next byte that differs (d)",
                            lambda: self.action_next_byte(1))
        yield SystemCommand("Lock hex panes", "Move the two hex panes together / each alone (l)", self.action_toggle_lock)
        yield SystemCommand("Statistics", "Statistics of the selected tensor in A and B (s)", self.action_stats)
        yield SystemCommand("Problems", "Problems and findings of both files (p)", self.action_problems)
        yield SystemCommand("Help", "Keys and colours (?)", self.action_help)

    def _status_text(self, state: str) -> Text:
        t = Text()
        t.append("A ", style="bold")
        t.append_text(safe_text(self.paths[0], limit=70))
        t.append("   B ", style="bold")
        t.append_text(safe_text(self.paths[1], limit=70))
        t.append("\n")
        t.append(state)
        return t

    # ------------------------------------------------------------------ worker
    @work(thread=True, exclusive=True, group="diff")
    def _compute(self) -> None:
        from ... import format as omf
        from ...analysis.diff.compare import staged
        from ...format.errors import FormatError

        docs: list[Document] = []
        try:
            for src in self.sources:  # diagnose mode: a broken file is compared on its sound parts
                docs.append(src if isinstance(src, Document) else omf.open(src, mode="diagnose"))
        except FormatError as e:
            path = self.paths[len(docs)]
            self.post_message(self.DiffReady(docs, None, f"{safe_str(path, 400)}: {e.kind.value} at {e.where}: {e.message}"))
            return
        except Exception as e:  # noqa: BLE001 - shown in the status line, never a traceback
            path = self.paths[len(docs)]
            self.post_message(self.DiffReady(docs, None, f"{safe_str(path, 400)}: {type(e).__name__}: {e}"))
            return
        for path, doc in zip(self.paths, docs):
            if doc.model is None:  # nothing sound to compare (p lists its problems)
                p = doc.problems[0] if doc.problems else None
                why = f"{p.kind.value} at {p.where}: {p.message}" if p is not None else "no model"
                self.post_message(self.DiffReady(docs, None, f"{safe_str(path, 400)}: {why} (p: problems)"))
                return
        last = [0.0]
        batch: list[DiffNode] = []

        def flush() -> None:
            if batch:
                self.post_message(self.Compared(batch[:]))
                batch.clear()

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if now - last[0] > 0.1:
                last[0] = now
                flush()
                self.post_message(self.Progress(done, total))

        try:
            sd = staged(docs[0], docs[1], cancel=self._cancel)
            self.post_message(self.StructureReady(docs, sd.structure(), sd))
            result = sd.compare_data(cancel=self._cancel, progress=progress, on_tensor=batch.append)
            flush()
        except DiffCancelled:
            flush()
            if self._weights_cancelled:
                self.post_message(self.Progress(-1, 0))
            return
        except FormatError as e:
            self.post_message(self.DiffReady(docs, None, f"{e.kind.value} at {e.where}: {e.message}"))
            return
        except Exception as e:  # noqa: BLE001
            self.post_message(self.DiffReady(docs, None, f"{type(e).__name__}: {e}"))
            return
        self.post_message(self.DiffReady(docs, result, None))

    @property
    def comparing(self) -> bool:
        """Tensor values are still being compared."""
        return self._phase == "weights"

    def on_diff_app_progress(self, message: "DiffApp.Progress") -> None:
        if message.done < 0:  # the comparison was cancelled (c)
            self._phase = "cancelled"
            left = self._staged.pending if self._staged is not None else 0
            self._show_status(self._status_text("") + self._state_text() +
                              Text(f"   weights: cancelled, {left:,} tensor{'' if left == 1 else 's'} not compared (…)",
                                   style="bold magenta"))
        elif self.comparing and message.total:
            pct = 100 * message.done // message.total
            self._show_status(self._status_text("") + self._state_text() +
                              Text(f"   comparing weights… {pct}% of {human_size(message.total)} (c: cancel)", style="dim"))

    def _show_status(self, text: Text) -> None:
        self.query_one("#status", FittedStatic).update(text)

    def _state_text(self) -> Text:
        """The verdict line: counts of differences so far (plurals right), equivalences applied."""
        r = self.result
        if r is None:
            return Text("")
        nodes = list(r.root.walk()) if r.root else []
        diffs = [d for n in nodes for d in n.differences]
        counts = {ADDED: 0, REMOVED: 0, CHANGED: 0}
        for d in diffs:
            counts[d.change] = counts.get(d.change, 0) + 1
        partial = self._partial_text(r)
        if not diffs and self._phase != "done":
            state = Text("no differences so far", style="bold")
        elif r.equal and partial:
            state = Text("equal", style="bold yellow")
        elif r.equal:
            state = Text("equal: the two files hold the same model", style="bold green")
        else:
            n = len(diffs)
            state = Text(f"{n:,} difference{'' if n == 1 else 's'}: {counts[ADDED]} added, {counts[REMOVED]} removed, "
                         f"{counts[CHANGED]} changed", style="bold yellow")
        if r.equivalences:
            k = len(r.equivalences)
            state.append(f"   ({k} equivalence{'' if k == 1 else 's'} applied)", style="dim")
        return state + partial

    def _partial_text(self, r: DiffResult) -> Text:
        """Files with problems: the verdict is over their sound parts only; what was left out (empty if nothing)."""
        counts = [len(d.problems) for d in self.docs]
        if not any(counts) and not r.not_compared:
            return Text("")
        t = Text(" over the sound parts only:", style="bold magenta")
        for side, n in zip("AB", counts):
            if n:
                t.append(f" {side} {n:,} problem{'' if n == 1 else 's'};", style="magenta")
        k = len(r.not_compared)
        if k:
            t.append(f" {k:,} tensor{'' if k == 1 else 's'} not compared (?);", style="magenta")
        t.append(" p lists the problems", style="dim")
        return t

    def _collect(self) -> None:
        self._diff_nodes = differing_entries(self.result)

    def on_diff_app_structure_ready(self, message: "DiffApp.StructureReady") -> None:
        self._staged = message.staged
        self._phase = "weights"
        self.on_diff_app_diff_ready(self.DiffReady(message.docs, message.result, None, message.differing))
        if message.staged.total_bytes:
            self.on_diff_app_progress(self.Progress(0, message.staged.total_bytes))

    def on_diff_app_compared(self, message: "DiffApp.Compared") -> None:
        tree = self.query_one(DiffTree)
        tree.refresh_entries(message.nodes)
        self._collect()
        cur = tree.cursor_node.data if tree.cursor_node is not None else None
        if cur is not None and any(n is cur or self._is_below(n, cur) for n in message.nodes):
            self.show_entry(cur)

    @staticmethod
    def _is_below(node: DiffNode, anc: DiffNode) -> bool:
        n = node.parent
        while n is not None:
            if n is anc:
                return True
            n = n.parent
        return False

    def on_diff_app_diff_ready(self, message: "DiffApp.DiffReady") -> None:
        self.docs = message.docs
        if message.error is not None:
            self.error = message.error
            self._show_status(self._status_text("") + Text(safe_str(message.error, 300), style="bold red"))
            return
        r = message.result
        assert r is not None
        first_time = self.result is None
        new_root = first_time or r.root is not self.result.root
        if new_root:
            self._search_index = None  # the names of this result's entries are indexed next
        if not first_time or self._phase == "open":
            self._phase = "done"
        self.result = r
        if new_root:
            self.prepare_search()
        self._collect()
        if message.differing is not None:
            self._diff_nodes = list(message.differing)
        self._show_status(self._status_text("") + self._state_text())
        tree = self.query_one(DiffTree)
        if not first_time:  # the weights are done: every entry has its final status
            tree.refresh_entries(n for n in r.root.walk() if not n.children) if r.root else None
            if tree.only_differences:
                tree.set_only_differences(True)
            cur = tree.cursor_node.data if tree.cursor_node is not None else None
            if self._diff_nodes and (cur is None or cur is self._auto_cursor):
                self._auto_cursor = self._diff_nodes[0]
                tree.reveal(self._diff_nodes[0])
                self.show_entry(self._diff_nodes[0])
            elif cur is not None:
                self.show_entry(cur)
            return
        from ..hex.bytemap import ByteMap

        for side, doc, hid in (("a", self.docs[0], "#hex-a"), ("b", self.docs[1], "#hex-b")):
            if doc.storage is not None and doc.source == "onemodel":
                self._bytemaps[side] = ByteMap(doc)
                self._set_hex_source(side, hid, doc.storage)
        tree.set_root(r.root)
        self._auto_cursor = self._diff_nodes[0] if self._diff_nodes else None
        if self._diff_nodes:
            tree.reveal(self._diff_nodes[0])
        self.show_entry(self._diff_nodes[0] if self._diff_nodes else None)

    # ------------------------------------------------------------------ selection
    def on_tree_node_highlighted(self, event: DiffTree.NodeHighlighted) -> None:
        if event.node.data is not None:
            self.show_entry(event.node.data)

    def show_entry(self, dn: DiffNode | None) -> None:
        """``dn`` in the detail pane (both sides), the hex panes and, once ``s`` was pressed, the statistics."""
        self.current_entry = dn
        self.show_stats(dn)
        pane = self.query_one(DetailPane)
        if dn is None:
            lines = [(Text("no differences" if self.result and self.result.equal else ""), None)]
            if self.result is not None and self.result.equivalences:
                lines.append((Text("treated as the same (spec equivalences):", style="bold"), None))
                lines.extend((Text("  ") + safe_text(e, limit=200), None) for e in self.result.equivalences)
            pane.show(lines)
            return
        unknown = dn.not_compared is not None and dn.status == EQUAL
        mark, style = NOT_COMPARED if unknown else MARKERS.get(dn.status, ("?", ""))
        state = "not compared" if unknown else dn.status
        lines: list[tuple[Text, Any]] = []
        lines.append((Text(f"{mark} {state}  ", style=style + " bold") + safe_text(dn.where or "(model)", limit=200),
                      None))
        for t in record_lines("A", dn.a):
            lines.append((t, None))
        for t in record_lines("B", dn.b):
            lines.append((t, None))
        lines.extend((t, None) for t in not_compared_lines(dn))
        for d in dn.differences:
            lines.extend(difference_lines(dn, d, self._histogram_lines))
        below = sum(len(n.differences) for n in dn.walk()) - len(dn.differences)
        if below:
            lines.append((Text(f"{below} more difference(s) inside (n: next)", style="dim"), None))
        pane.show(lines)
        self._jump_hex(dn)

    def _histogram_lines(self, dn: DiffNode) -> list[tuple[Text, Any]]:
        """b − a as a one-line histogram (computed in a worker on first display)."""
        if id(dn) not in self._hists:
            self._hists[id(dn)] = "pending"
            self._histogram(dn)
        return histogram_lines(dn, self._hists[id(dn)])

    @work(thread=True, exclusive=True, group="histogram")
    def _histogram(self, dn: DiffNode) -> None:
        from ...analysis.diff.histogram import delta_histogram

        try:
            h = delta_histogram(dn.a, dn.b, cancel=self._cancel)
        except Exception:  # noqa: BLE001 - a file changed on disk, cancelled...: no histogram
            h = None
        self.post_message(self.Histogram(dn, h))

    def on_diff_app_histogram(self, message: "DiffApp.Histogram") -> None:
        self._hists[id(message.node)] = message.hist
        tree = self.query_one(DiffTree)
        if tree.cursor_node is not None and tree.cursor_node.data is message.node:
            self.show_entry(message.node)

    # ------------------------------------------------------------------ actions
    def action_toggle_filter(self) -> None:
        tree = self.query_one(DiffTree)
        tree.set_only_differences(not tree.only_differences)
        self.notify("only differences" if tree.only_differences else "all entries", timeout=1.5)

    def action_cancel(self) -> None:
        """``c``: the comparison of tensor values while it runs, else the statistics and a byte search."""
        if self.comparing:
            self._weights_cancelled = True
            self._cancel.set()
        elif self.cancel_stats() | self.cancel_seek():
            self.notify("cancelled", timeout=2, markup=False)
        else:
            self.notify("nothing running: nothing to cancel", timeout=2, markup=False)

    def action_most_changed(self) -> None:
        from .most_changed import MostChanged

        if self.result is None or self.result.root is None:
            return
        pending = self._staged.pending if self._staged is not None else 0

        def chosen(dn: DiffNode | None) -> None:
            if dn is not None and self.query_one(DiffTree).reveal(dn):
                self.show_entry(dn)

        self.push_screen(MostChanged(list(self.result.root.walk()), pending), chosen)

    def action_next_difference(self, step: int) -> None:
        if not self._diff_nodes:
            return
        tree = self.query_one(DiffTree)
        cur = tree.cursor_node.data if tree.cursor_node is not None else None
        ids = [id(n) for n in self._diff_nodes]
        if cur is not None and id(cur) in ids:
            i = (ids.index(id(cur)) + step) % len(ids)
        else:
            order = {id(n): k for k, n in enumerate(self.result.root.walk())} if self.result and self.result.root else {}
            pos = order.get(id(cur), -1) if cur is not None else -1
            after = [k for k, n in enumerate(self._diff_nodes) if order.get(id(n), 0) > pos]
            i = (after[0] if after else 0) if step > 0 else (after[0] - 1 if after else len(ids) - 1)
        target = self._diff_nodes[i]
        if tree.reveal(target):
            self.show_entry(target)


def make_diff_app(a: str | Document, b: str | Document) -> DiffApp:
    """The diff viewer for files (or already opened documents) ``a`` and ``b``."""
    return DiffApp(a, b)


def run_diff_viewer(a: str, b: str) -> int:
    """Run the diff viewer; 0 when it ran, 2 when a file could not be opened."""
    from ..run import run_app

    app = make_diff_app(a, b)
    run_app(app)  # leaving never waits for the worker (an open or a diff still running)
    for d in app.docs:
        try:
            d.close()
        except Exception:  # noqa: BLE001
            pass
    return 2 if app.error else 0
