"""The viewer: ``onemodel-view FILE``.

:func:`make_app` is the factory shared by the CLI, the tests and the benchmarks;
:func:`run_viewer` opens a file in diagnose mode (a broken file still opens, with
its problems listed) and runs the app.

Layout: an info bar; the lazy structure tree on the left; on the right the detail
pane, the statistics panel and the hex pane; the footer. Nothing that touches tensor
bytes runs on the UI thread except the hex pane's reads of the lines on screen (a URL's: cache only).

Quitting (``q``, ``ctrl+c``) cancels the background work; :func:`~.run.run_app` runs an app on an
event loop of its own, so that leaving it never waits for a worker thread still busy (the CLI
then ends the process without joining them).

Benchmark hook: ``make_app(..., exit_after_first_screen=True)`` or the environment
variable ``ONEMODEL_VIEW_EXIT_AFTER_FIRST_SCREEN=1`` makes the app exit (code 0) as
soon as its first complete screen has been drawn.
"""

from __future__ import annotations

import os
import sys
import threading
from contextlib import suppress
from typing import Any, Iterable

from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.message import Message
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Tree
from textual.worker import get_current_worker

from ..analysis.facts import Facts
from ..format.document import Document
from ..format.errors import FormatError, Kind
from ..format.schema import Tensor
from ..format.storage import Storage
from ..process import freeze_gc, frozen_garbage, pause_gc
from .background import BackgroundWork, open_for_viewer
from .hex.bytemap import ByteMap, FileMaps
from .widgets.describe import Describer
from .widgets.info_bar import InfoBar, count_nodes, count_tensors, document_parts
from .widgets.detail_pane import DetailPane
from .edit.mode import EditActions
from .hex.byte_inspector import ByteInspector
from .widgets.entries import Entry, EntryFactory
from .widgets.footer import ScreenFooter
from .hex.hex_view import HexView
from .insight import Insight, InsightActions
from .screens.outline_actions import OutlineActions
from .hex.locate import ManifestSpans
from .widgets.safe import safe_str
from .search import SearchActions, SearchIndex  # noqa: F401 (SearchIndex: the name tests import from here)
from .run import run_app
from .widgets.stats_panel import StatsPanel
from .widgets.structure_tree import StructureTree

EXIT_ENV = "ONEMODEL_VIEW_EXIT_AFTER_FIRST_SCREEN"
LOCATE_DELAY = 0.15
"""Seconds a selection must stay before its manifest bytes are looked up."""


class OneModelApp(BackgroundWork, SearchActions, InsightActions, EditActions, OutlineActions, App[int]):
    """Tree + detail + stats + hex over one :class:`Document`."""

    # insight.tcss too (its screens' CSS_PATH; ~1 ms to parse): a screen bringing CSS of its own
    # restyles the whole app on its first push (the first a, u, P, o or v: ~20 ms of CPU)
    CSS_PATH = ["app.tcss", "screens/insight.tcss"]
    TITLE = "onemodel-view"
    ENABLE_COMMAND_PALETTE = True

    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
        Binding("slash", "search", "Search"),
        Binding("n", "next_match(1)", "Next", show=False),
        Binding("N", "next_match(-1)", "Prev", show=False),
        Binding("f", "search_results", "Matches", show=False),
        Binding("g", "goto", "Go to offset"),
        Binding("s", "stats", "Stats"),
        Binding("c", "cancel_stats", "Cancel stats", show=False),
        Binding("p", "problems", "Problems"),
        Binding("l", "layout", "Layout"),
        Binding("h", "focus_hex", "Hex", show=False),
        Binding("w", "owner_record", "Owner", show=False),
        Binding("r", "reload", "Reload", show=False),
        Binding("ctrl+t", "toggle_theme", "Theme", show=False),
        Binding("less_than_sign", "tree_width(-1)", "Narrower tree", show=False),
        Binding("greater_than_sign", "tree_width(1)", "Wider tree", show=False),
        Binding("question_mark", "help", "Help"),
        Binding("u", "used_by", "Used by", show=False),
        Binding("a", "neighbourhood", "Around", show=False),
        Binding("P", "parameters", "Params", show=False),
        Binding("O", "outline", "Outline", show=False),
        Binding("o", "operator_help", "Op help", show=False),
        Binding("v", "values", "Values", show=False),
        Binding("e", "export_npy", "Export .npy", show=False),
        Binding("i", "toggle_inspector", "Inspect", show=False),
        Binding("y", "copy('name')", "Copy name", show=False),
        Binding("Y", "copy('where')", "Copy where", show=False),
        Binding("E", "edit", "Edit", show=False),  # edit mode: tui/edit/mode.py
        Binding("ctrl+z", "undo_edit", "Undo", show=False),
        Binding("ctrl+y", "redo_edit", "Redo", show=False),
        Binding("L", "edit_list", "Edit list", show=False),
        Binding("S", "save_as", "Save as", show=False),
    ]

    class FileChanged(Message):
        """The open file was truncated or rewritten on disk (posted from the storage's lease thread)."""

        def __init__(self, document: Document) -> None:
            super().__init__()
            self.document = document

    def __init__(self, document: Document | None = None, path: str | None = None, *,
                 exit_after_first_screen: bool = False, resume_gc: bool = False) -> None:
        super().__init__()
        self.resume_gc_after_first_screen = resume_gc
        """Turn the cyclic GC back on (and freeze the model) once the first screen is drawn."""
        self.document = document
        self.path = path or (document.path if document is not None else None)
        self.exit_after_first_screen = exit_after_first_screen
        self.theme = "textual-dark"
        self._reset_search()
        self.manifest_spans = ManifestSpans()  # where a record's bytes are in the manifest (the selection, an edit)
        self._locate_timer = None
        self.current: Entry | None = None
        """The entry shown in the detail pane."""
        self.bytemap: ByteMap | None = None
        """The map of the document's own file."""
        self.maps: FileMaps | None = None
        """That map and the maps of the document's external data files (the hex and detail panes share them)."""
        self._counts: tuple[Document, int, int] | None = None
        """(document, tensors, nodes) shown in the info bar."""
        self._first_screen_shown = False
        self._background_cancel = threading.Event()
        """Set to stop the running background job (a reload starts the next one with a new event)."""

    def exit(self, *args: Any, **kwargs: Any) -> None:
        """Leave the app; the background job is told to stop first (a thread cannot be killed: it asks)."""
        self._background_cancel.set()
        super().exit(*args, **kwargs)

    def on_unmount(self) -> None:
        self._background_cancel.set()
        self.manifest_spans.close()

    # ------------------------------------------------------------------ compose / setup
    def compose(self) -> ComposeResult:
        yield InfoBar(id="infobar")
        with Horizontal(id="main"):
            yield StructureTree(id="tree")
            with Vertical(id="right"):
                yield DetailPane(id="detail")
                yield StatsPanel(id="stats", classes="hidden")
                yield HexView(id="hex")
                yield ByteInspector(id="inspector", classes="hidden")
        yield ScreenFooter()

    async def on_key(self, event: events.Key) -> None:
        from .widgets.prompt import take_stray_key  # here: no prompt is open before a key (its classes: ~1 ms of the first screen)
        await take_stray_key(self, event)  # a key sent to this screen before a prompt opened goes into it

    def on_mount(self) -> None:
        self.query_one("#tree").border_title = "Structure"
        self.query_one("#detail").border_title = "Detail"
        self.query_one("#stats").border_title = "Statistics"
        self.query_one("#hex").border_title = "Hex"
        self._setup()
        self.query_one(StructureTree).focus()
        self.call_after_refresh(self._first_screen_done)

    def _first_screen_done(self) -> None:
        resume, self.resume_gc_after_first_screen = self.resume_gc_after_first_screen, False
        if self.exit_after_first_screen:
            # a benchmark run ends at the first screen: the background work below would only
            # hold up the exit (thread workers are waited for)
            if resume:
                freeze_gc()
            self.call_after_refresh(self.exit, 0)
            return
        self._first_screen_shown = True
        if self.current is not None:
            self._locate_soon(self.current.where)
        if not self._start_background(hold_gc=resume) and resume:
            freeze_gc()  # no job: nothing to hold the GC for (with a job: on when it ends)

    def _setup(self, select_first: bool = True, later: Any = None) -> None:
        doc = self.document
        tree = self.query_one(StructureTree)
        hexv = self.query_one(HexView)
        if doc is None:
            self.query_one("#infobar", InfoBar).show([(Text("no file"), 100, False)])
            tree.set_entries([])
            hexv.set_document_file(None, None)
            return
        self.facts = Facts()
        self.expect_background(doc)
        self.bytemap = ByteMap(doc, tensors=not self.checks_pending)  # the tensors' part: with the checks
        self.maps = FileMaps(doc, self.bytemap)
        self.factory = EntryFactory(doc, self.facts)
        self.describer = Describer(doc, self.facts, sharing=self.bytemap.sharing, maps=self.maps)
        if self.insight is not None:
            self.insight.cancel.set()  # the previous document's
        self.insight = Insight(self, doc, self.facts, held=True)  # run by the background job
        self.describer.extra, self.describer.infer = self.insight.lines, self.insight.infer_type
        self._reset_search()
        self.query_one("#infobar", InfoBar).show(self._info_parts())
        roots = self.factory.root()
        tree.set_entries(roots, later)
        if doc.model is not None:
            # open the model's top level so the first screen shows the structure
            for e in [r for r in roots if r.kind in ("model", "graph")]:
                node = tree.node_for(e)
                if node is not None:
                    tree.populate(node)
                    node.expand()
        else:
            node = tree.node_for(roots[0]) if roots else None
            if node is not None and roots[0].expandable:
                tree.populate(node)
                node.expand()
        storage = self.maps.file_storage()
        self._watch_storage(doc, storage)
        hexv.set_document_file(storage, self.maps, header=doc.header)
        self.query_one(StatsPanel).clear_cache()
        if select_first:
            self.query_one(DetailPane).show(self.describer.model(doc.model) if doc.model is not None else [])
        hexv.show_position(hexv.cursor)
        self._place_cursor(roots, select=select_first)
        if self._first_screen_shown:  # a reload: the first screen is long done
            self._start_background()

    def _place_cursor(self, roots: list[Entry], select: bool = True) -> None:
        """The first row the user should read, highlighted (the detail pane shows what is highlighted).

        A broken file: its first problem (problems group open, the message in the detail pane, the
        hex pane at its offset). Otherwise the model. ``select`` False: only the problems group opened.
        """
        tree = self.query_one(StructureTree)
        doc = self.document
        target = None
        if doc is not None and doc.problems:
            group = next((r for r in roots if r.key == "problems"), None)
            node = tree.node_for(group) if group is not None else None
            if node is not None:
                kids = tree.populate(node)
                node.expand()
                target = kids[0] if kids else None
        if target is None:
            target = next((r for r in roots if r.kind == "model"), roots[0] if roots else None)
        if select and target is not None and tree.reveal_entry(target):
            self.show_entry(target)
            self.first_selection = target

    def _watch_storage(self, doc: Document, storage: Storage | None) -> None:
        """Tell the user at once when the mapped file changes on disk, and when it cannot be protected."""
        if storage is None:
            return
        on_revoke = getattr(storage, "on_revoke", None)
        if on_revoke is not None:
            # runs on the storage's lease thread: post_message is thread-safe and never blocks
            on_revoke(lambda: self.post_message(self.FileChanged(doc)))
        if getattr(storage, "mapped", False) and not getattr(storage, "protected", True):
            note = getattr(storage, "protection_note", "") or "no file lease"
            self.notify(f"this file is mapped without protection against truncation ({safe_str(note, 120)}); "
                        "if another program shrinks it while open, the viewer may be killed",
                        severity="warning", timeout=8, markup=False)

    def on_one_model_app_file_changed(self, message: "OneModelApp.FileChanged") -> None:
        if message.document is not self.document:
            return
        self.query_one("#infobar", InfoBar).show(
            self._info_parts() + [(Text("changed on disk: press r to reload", style="bold red"), 95, False)])
        self.notify("the file changed on disk; its bytes are no longer shown. Press r to reload.",
                    severity="error", timeout=10, markup=False)

    def _info_parts(self) -> list[tuple[Text, int, bool]]:
        """The info bar's parts for the document (:func:`.info_bar.document_parts`)."""
        doc = self.document
        assert doc is not None
        counts = self._counts
        if counts is None or counts[0] is not doc:  # walked once per document, not on every info-bar refresh
            counts = self._counts = (doc, count_tensors(doc), count_nodes(doc))
        return document_parts(doc, counts[1], counts[2], self.findings_pending, self.verdict_note()) + self.edit_parts()

    # ------------------------------------------------------------------ selection
    @on(Tree.NodeHighlighted, "#tree")
    def _tree_highlighted(self, event: Tree.NodeHighlighted) -> None:
        entry = event.node.data
        if entry is not None and not self.edit_restoring:  # restoring: rows of the previous read (edit_mode)
            self.show_entry(entry)

    @on(Tree.NodeSelected, "#tree")
    def _tree_selected(self, event: Tree.NodeSelected) -> None:
        entry = event.node.data
        if entry is not None and entry.kind in ("problem", "finding") and entry.obj.where:
            self.jump_to_problem(entry.obj)  # enter on a problem: go to the record it names

    def show_entry(self, entry: Entry) -> None:
        """Show ``entry`` in the detail pane, move the hex pane to its bytes, start its stats."""
        self.current = entry
        self.query_one(DetailPane).show(self.describer.describe(entry))
        stats = self.query_one(StatsPanel)
        hexv = self.query_one(HexView)
        obj = entry.obj
        if entry.kind == "tensor" and isinstance(obj, Tensor):
            stats.remove_class("hidden")
            stats.show_tensor(obj)
            if obj.file_offset is not None and not obj.is_string and hexv.show_file_of(obj):
                if obj.length > 0:
                    hexv.goto(obj.file_offset, obj.length)
                else:
                    hexv.set_highlight(None)
                    hexv.goto(obj.file_offset)
                hexv.show_position(hexv.cursor)
                return
        else:
            stats.show_tensor(None)
            stats.add_class("hidden")
        hexv.show_document_file()
        if entry.kind == "header" and isinstance(obj, tuple):
            hexv.goto(obj[1], obj[2])
            return
        if entry.where == "header":
            hexv.goto(0, min(64, hexv.file_size))
            return
        if entry.kind in ("problem", "finding") and getattr(obj, "offset", None) is not None:
            hexv.goto(obj.offset, 1)
            return
        if self.document is not None and self.document.source == "ort":
            from .ort.detail import ort_span  # imported for .ort files only (~10-15 ms at start)

            span = ort_span(self.document, entry)  # an .ort record: its flatbuffer table
            if span is not None:
                hexv.goto(*span)
                return
        self._locate_soon(entry.where)

    def _locate_soon(self, where: str) -> None:
        """Highlight the manifest bytes of ``where`` if the selection stays there (not before the first
        screen is drawn: the look-up's manifest copy or child process would delay it)."""
        if not where.startswith("manifest") or self.document is None or not self.document.manifest_span:
            return
        # debounced: moving quickly through the tree starts no lookups
        if self._locate_timer is not None:
            self._locate_timer.stop()
            self._locate_timer = None
        if self._first_screen_shown:
            self._locate_timer = self.set_timer(LOCATE_DELAY, lambda: self._locate(where))

    @work(thread=True, exclusive=True, group="locate", exit_on_error=False)
    def _locate(self, where: str) -> None:
        """Find the manifest bytes of ``where`` (off the UI thread) and highlight them."""
        worker = get_current_worker()

        def is_current() -> bool:
            cur = self.current
            return cur is not None and cur.where == where

        span = self.manifest_spans.span(self.document, where, is_current, lambda: worker.is_cancelled)
        if span is not None:
            try:
                self.call_from_thread(self._highlight_span, where, *span)
            except Exception:  # app shutting down
                pass

    def _highlight_span(self, where: str, offset: int, length: int) -> None:
        if self.current is None or self.current.where != where:
            return
        self.query_one(HexView).goto(offset, length)

    @on(DetailPane.LinkChosen)
    def _link(self, event: DetailPane.LinkChosen) -> None:
        self.follow(event.link)

    def follow(self, link: Any) -> None:
        """Follow a detail link: a ``where`` path or ``("offset", n)``."""
        if isinstance(link, tuple) and link and link[0] == "offset":
            self.query_one(HexView).goto(int(link[1]))
            return
        if isinstance(link, str) and link:
            self.reveal(link)

    def reveal(self, where: str) -> Entry | None:
        """Put the tree cursor on the record at ``where`` (and show it)."""
        tree = self.query_one(StructureTree)
        entry = tree.reveal(where)
        if entry is not None:
            tree.focus()
            self.show_entry(entry)
        return entry

    @on(HexView.CursorMoved)
    def _hex_cursor(self, event: HexView.CursorMoved) -> None:
        hexv = event.hex_view
        if not hexv.is_attached or hexv.screen is not self.screen:
            return  # a move queued before its screen was covered or torn down
        hexv.show_position(event.offset)
        self.update_inspector()

    def owner_at(self, offset: int) -> str:
        """What owns the byte at ``offset`` in the hex pane's file (plain text, made visible)."""
        return self.query_one(HexView).owner_at(offset)

    # ------------------------------------------------------------------ actions
    def action_owner_record(self) -> None:
        """``w``: the tree, the detail and the hex pane on the record owning the byte under the hex cursor."""
        hexv = self.query_one(HexView)
        where = hexv.record_at(hexv.cursor)
        if where is None or self.reveal(where) is None:
            owner = self.owner_at(hexv.cursor) or "nothing"
            self.notify(f"no record to show for byte 0x{hexv.cursor:x} ({owner})", timeout=3, markup=False)

    def action_focus_hex(self) -> None:
        self.query_one(HexView).focus()

    def action_tree_width(self, step: int) -> None:
        """``<`` / ``>``: the structure pane 4 columns narrower / wider (the right side keeps 30)."""
        tree = self.query_one(StructureTree)
        total = self.query_one("#main").size.width
        width = max(16, min(total - 30, tree.outer_size.width + 4 * step))
        tree.styles.max_width = None
        tree.styles.min_width = 16
        tree.styles.width = width

    def action_help(self) -> None:
        from .screens.help import HelpScreen
        self.push_screen(HelpScreen(self.query_one(HexView).swatches()))

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.current_theme.dark else "textual-dark"

    def action_goto(self) -> None:
        from .widgets.prompt import ask_offset
        ask_offset(self, self.query_one(HexView))

    def action_stats(self) -> None:
        e = self.current
        if e is None or e.kind != "tensor":
            self.notify("select a tensor first", severity="warning")
            return
        self.query_one(StatsPanel).compute_now(e.obj)

    def action_cancel_stats(self) -> None:
        if self.query_one(StatsPanel).cancel():
            self.notify("statistics cancelled", timeout=2)
        else:
            self.notify("no statistics are running: nothing to cancel", timeout=2)

    def action_problems(self) -> None:
        doc = self.document
        if doc is None:
            return

        def done(rec: Any) -> None:
            if rec is not None:
                self.jump_to_problem(rec)

        from .screens.problems import ProblemsScreen

        self.push_screen(ProblemsScreen(list(doc.problems), list(doc.findings), note=self.verdict_note(), **self.problem_marks()), done)

    def jump_to_problem(self, rec: Any) -> None:
        """Move the hex pane to a problem's offset and the tree to its record."""
        entry = None
        if rec.where:
            entry = self.reveal(rec.where)
        if rec.offset is not None:
            self.query_one(HexView).goto(rec.offset, 1)
        if entry is None:
            self.query_one(DetailPane).show(self.describer.problem(rec, "problem" if hasattr(rec, "kind") else "finding"))

    def action_layout(self) -> None:
        if self.bytemap is None:
            return

        def done(span: Any) -> None:
            if span is not None:
                hexv = self.query_one(HexView)
                hexv.show_file(span[2] if len(span) > 2 else None)  # a weights file's row: show that file
                # the tree and the detail on the record owning the bytes, then the hex pane on the extent
                where = hexv.record_at(span[0]) if span[1] > 0 else None
                if where is not None:
                    self.reveal(where)
                    hexv.show_file(span[2] if len(span) > 2 else None)
                hexv.goto(span[0], span[1])

        from .screens.layout import LayoutScreen
        self.push_screen(LayoutScreen(self.bytemap, self.document, self.verdict_note()), done)

    def load_document(self, doc: Document, unchecked: Any = None, *, select_first: bool = True, later: Any = None) -> None:
        """Show another document (the old one closed); ``unchecked``: see ``open_for_viewer``; ``select_first``
        False: the caller puts the cursor (and fills the detail pane); ``later`` not None: the tree keeps its
        rows (another read of the same file: :meth:`.StructureTree.set_entries`), the caller closes the old one."""
        old = self.document
        self.document = doc
        self.unchecked_manifest = unchecked
        self.path = doc.path
        self.current = self.first_selection = None
        self._setup(select_first, later)
        if old is not None and old is not doc and later is None:
            frozen_garbage()  # its widgets and rows, frozen while shown, die (not an edit's re-read: rows kept)
            with suppress(Exception):
                old.close()

    def action_reload(self) -> None:
        if not self.path:
            return
        try:
            doc, unchecked = open_for_viewer(self.path)
        except FormatError as e:
            self.notify(f"cannot reload: {safe_str(str(e), 200)}", severity="error", markup=False)
            return
        self.load_document(doc, unchecked)
        self.notify("reloaded", timeout=2)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from self.search_commands()
        yield SystemCommand("Go to offset", "Move the hex pane to a file offset (g)", self.action_goto)
        yield SystemCommand("Problems", "List problems and findings (p)", self.action_problems)
        yield SystemCommand("Layout", "Extents of the data region (l)", self.action_layout)
        yield SystemCommand("Statistics", "Statistics of the selected tensor (s)", self.action_stats)
        yield SystemCommand("Reload", "Open the file again from disk (r)", self.action_reload)
        yield SystemCommand("Wider tree", "The structure pane 4 columns wider (>)", lambda: self.action_tree_width(1))
        yield SystemCommand("Narrower tree", "The structure pane 4 columns narrower (<)", lambda: self.action_tree_width(-1))
        yield SystemCommand("Toggle light/dark", "Switch theme (ctrl+t)", self.action_toggle_theme)
        yield SystemCommand("Help", "Keys and colours (?)", self.action_help)
        yield from self.insight_commands()
        yield from self.outline_commands()
        yield from self.edit_commands()


def make_app(path: str | None = None, *, document: Document | None = None,
             exit_after_first_screen: bool | None = None) -> OneModelApp:
    """The viewer app for ``path`` (opened in diagnose mode) or an already opened ``document``.

    Raises :class:`FormatError` when ``path`` cannot be opened at all.
    """
    if exit_after_first_screen is None:
        exit_after_first_screen = os.environ.get(EXIT_ENV, "") not in ("", "0")
    resume = False
    if exit_after_first_screen and document is None:
        pause_gc()  # as run_viewer does: the benchmark measures what users get
        resume = True
    unchecked = None
    if document is None and path is not None:
        try:
            document, unchecked = open_for_viewer(path)
        except BaseException:
            if resume:
                freeze_gc()
            raise
    app = OneModelApp(document, path, exit_after_first_screen=exit_after_first_screen, resume_gc=resume)
    app.unchecked_manifest = unchecked
    return app


def run_viewer(path: str) -> int:
    """Run the viewer on ``path``. A file that cannot be opened at all: message, exit 1."""
    pause_gc()
    try:
        doc, unchecked = open_for_viewer(path)
    except FormatError as e:
        freeze_gc()
        print(f"onemodel-view: {safe_str(path, 200)}: {safe_str(str(e), 400)}", file=sys.stderr)
        return 1
    except OSError as e:
        freeze_gc()
        print(f"onemodel-view: {safe_str(path, 200)}: {e.strerror or e}", file=sys.stderr)
        return 1
    except BaseException:
        freeze_gc()
        raise
    if doc.model is None and doc.size == 0 and any(p.kind == Kind.IO for p in doc.problems):  # not opened at all
        freeze_gc()
        p = next(p for p in doc.problems if p.kind == Kind.IO)
        print(f"onemodel-view: {safe_str(path, 200)}: {safe_str(p.message, 400)}", file=sys.stderr)
        return 1
    app = make_app(path, document=doc)
    app.unchecked_manifest = unchecked
    app.resume_gc_after_first_screen = True
    try:
        rc = run_app(app)
    finally:
        freeze_gc()
    return int(rc or 0)


def run_diff_viewer(a: str, b: str) -> int:
    """The viewer in diff mode (tui/diff/app.py, the diff helper's module)."""
    from .diff.app import run_diff_viewer as r

    return r(a, b)
