"""The ``O`` screen: the model's scope outline, repeated blocks folded (``analysis/graph``).

The outline is computed in a worker thread (a big graph's first rows show after its first
``scopes.PREVIEW_AT`` nodes, all rows once every node is grouped, the folds when folding is done; a
progress line meanwhile) and kept per document, so the next ``O`` is
instant. While it runs the cyclic GC is paused from the UI thread (``process.pause_gc``) and what
it built is frozen at the end (``freeze_gc``): its ~10^6 new objects on the 10^6-node model made
collections in the worker that held the interpreter, the UI's too, 3-4 s each. Highlighting a row shows its figures on the right; enter on a folded block opens or
closes it, enter on any other row selects its first node in the structure tree (closing the
screen). A row's rows are added when it is first opened, at most :data:`SHOWN` of them.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Footer, Static, Tree
from textual.widgets.tree import TreeNode

from ...analysis.facts import Facts
from ...analysis.graph.rows import Outline, Row
from ...analysis.graph.text import count_text, figures_text, fold_text, ops_text
from ...format.document import Document
from ...format.schema import Graph
from ..widgets.safe import human_size, safe_str, safe_text

SHOWN = 200
"""Rows added under one row (the rest: one ``… N more`` row; ``--graph`` draws them all)."""
SHOWN_EARLY = 40
"""Rows added under one row before the folds are known (the tree is rebuilt then; 200 rows of an unfolded
10^5-row level took ~0.2 s of the UI under load)."""
PROGRESS_EVERY = 0.25
"""Seconds between two progress messages."""
KEPT: dict[int, tuple[Document, Outline]] = {}
"""The last outline computed, by document (one kept)."""


class _Cancelled(Exception):
    pass


def row_text(row: Row) -> Text:
    """One tree row: the scope's label and its figures (a fold: ``24 × block (...)``), made visible."""
    if row.kind == "node":
        n = row.node
        t = safe_text(n.op if n is not None else "?", style="green", limit=30)
        t.append(" ")
        t.append_text(safe_text(row.label or "(unnamed)", limit=60))
    else:
        style = {"fold": "bold cyan", "graph": "magenta", "function": "magenta", "unread": "dim"}.get(row.kind, "bold")
        t = safe_text(row.label or "(unnamed)", style=style, limit=60)
        t.append("  ")
        t.append(fold_text(row) if row.kind == "fold" else figures_text(row), style="dim" if row.kind != "fold" else "cyan")
    if row.differs:
        t.append("  ≠ ", style="bold yellow")
        t.append(row.differs, style="yellow")
    return t


def node_text(graph: Graph, i: int) -> Text:
    n = graph.nodes[i]
    t = safe_text(n.op, style="green", limit=30)
    t.append(" ")
    t.append_text(safe_text(n.name or "(unnamed)", limit=60))
    return t


def detail(row: Row | None, node: tuple[Graph, int] | None = None) -> Table:
    """The figures of a row (or a node) for the right pane."""
    t = Table.grid(padding=(0, 1))
    t.add_column(style="bold", no_wrap=True)
    t.add_column()
    if node is not None:
        g, i = node
        n = g.nodes[i]
        t.add_row("node", safe_text(n.name or "(unnamed)", limit=80))
        t.add_row("op", safe_text((n.domain + "." if n.domain else "") + n.op, style="green", limit=60))
        t.add_row("inputs", safe_text(", ".join(n.inputs) or "-", limit=200))
        t.add_row("outputs", safe_text(", ".join(n.outputs) or "-", limit=200))
        t.add_row("where", safe_text(n.where, style="dim", limit=80))
        return t
    if row is None:
        return t
    t.add_row(row.kind, safe_text(row.label or "(unnamed)", limit=80))
    if row.kind == "fold":
        t.add_row("blocks", Text(fold_text(row)))
        for k, why in list(row.odd.items())[:8]:
            t.add_row(Text("differs", style="yellow"), safe_text(f"{row.members[k].label}: {why}", limit=120))
        if len(row.odd) > 8:
            t.add_row("", Text(f"… {len(row.odd) - 8} more differ", style="dim"))
    if row.differs:
        t.add_row(Text("differs", style="yellow"), safe_text(row.differs, limit=120))
    t.add_row("nodes", f"{row.count:,}")
    t.add_row("params", f"{row.params:,} ({count_text(row.params)})")
    t.add_row("bytes", f"{row.bytes:,} ({human_size(row.bytes)})")
    if row.ops:
        t.add_row("ops", safe_text(ops_text(row.ops, top=12), style="green", limit=600))
    where = row.where()
    if where:
        t.add_row("first", safe_text(where, style="dim", limit=80))
    return t


class OutlineScreen(ModalScreen[str | None]):
    """Scope outline of the document's main graph: a tree of rows and the highlighted row's figures."""

    CSS_PATH = "insight.tcss"
    BINDINGS = [
        Binding("escape,q,O", "close", "Close"),
        Binding("enter", "choose", "Select / open fold"),
        Binding("right", "open_row", "Open", show=False),
        Binding("left", "close_row", "Close row", show=False),
    ]

    class Progress(Message):
        def __init__(self, text: str, ended: bool = False) -> None:
            super().__init__()
            self.text = text
            self.ended = ended

    class Ready(Message):
        def __init__(self, outline: Outline, final: bool, preview: bool = False) -> None:
            super().__init__()
            self.outline = outline
            self.final = final
            self.preview = preview
            """The rows of the first nodes only (a big graph; their lists still grow in the worker)."""

    def __init__(self, document: Document, facts: Facts | None = None) -> None:
        super().__init__()
        self.document = document
        self.facts = facts or Facts()
        self.outline: Outline | None = None
        self.cancel = threading.Event()
        self.final = False
        self.shown: Table | str = ""
        """What the right pane shows (the highlighted row's figures)."""
        self.previewed = False
        """The first rows of a big graph were shown before all its nodes were grouped."""
        self.favoured = False
        """This screen set the 1 ms switch interval (``process.favour_ui_thread``) while its worker runs."""
        self.gc_held = False
        """This screen paused the GC (:meth:`_hold_gc`) and turns it back on when its worker ends."""
        self.filled: set[int] = set()
        """Ids of the tree nodes whose rows have been added."""

    def compose(self) -> ComposeResult:
        yield Static(Text("outline", style="bold"), id="outline-title", classes="insight-title")
        with Horizontal(id="outline-main"):
            tree: Tree[Any] = Tree("model", id="outline-tree")
            tree.show_root = False
            tree.auto_expand = False
            yield tree
            with VerticalScroll(id="outline-side"):
                yield Static(id="outline-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#outline-tree").border_title = "Scopes"
        self.query_one("#outline-side").border_title = "Figures"
        self.query_one(Tree).focus()
        doc = self.document
        kept = KEPT.get(id(doc))
        if kept is not None and kept[0] is doc and kept[1].folded:
            self._show(kept[1], True)
            return
        KEPT.clear()  # another document's (a reload): not kept alive any longer
        if doc.model is None:
            self._title("nothing could be read from this file")
            return
        self._title("grouping nodes…")
        self._hold_gc()
        self.run_worker(self._work, thread=True, exclusive=True, group="outline", exit_on_error=False)

    def on_unmount(self) -> None:
        self.cancel.set()
        self._release_gc()

    def _hold_gc(self) -> None:
        """The GC paused (unless something else holds it already) and the UI thread favoured while the worker runs."""
        import gc

        from ...process import favour_ui_thread, pause_gc

        self.gc_held = gc.isenabled()
        if self.gc_held:
            pause_gc()
        self.favoured = True
        favour_ui_thread(True)

    def _release_gc(self) -> None:
        """The GC back on (what the worker built frozen), unless the app's own background job holds it."""
        from ...process import favour_ui_thread, freeze_gc

        app = self.app
        if self.gc_held:
            self.gc_held = False
            if not getattr(app, "background_gc_held", False) and not getattr(app, "keep_gc_off", False):
                freeze_gc()
        if self.favoured:
            self.favoured = False
            if not getattr(app, "background_running", False) and not getattr(app, "keep_gc_off", False):
                favour_ui_thread(False)

    # ------------------------------------------------------------------ the worker
    def _work(self) -> None:
        from ...analysis.graph.folding import fold_outline
        from ...analysis.graph.scopes import build_outline

        model = self.document.model
        assert model is not None
        total = len(model.graph.nodes)
        done = [0, time.monotonic()]

        def step(what: str):
            def tick() -> None:
                if self.cancel.is_set():
                    raise _Cancelled
                done[0] += 4096
                now = time.monotonic()
                if now - done[1] >= PROGRESS_EVERY:
                    done[1] = now
                    self.post_message(self.Progress(f"{what}… {min(done[0], total):,} of {total:,} nodes"))
            return tick

        try:
            outline = build_outline(model, self.facts, step("grouping nodes"), fold=False,
                                    preview=lambda o: self.post_message(self.Ready(o, False, True)))
            self.post_message(self.Ready(outline, False))
            done[0] = 0
            fold_outline(outline, step("folding repeated blocks"))
            KEPT.clear()
            KEPT[id(self.document)] = (self.document, outline)
            self.post_message(self.Ready(outline, True))
        except _Cancelled:
            return
        except Exception as e:  # leftovers of a diagnose open: say so, stay up
            self.post_message(self.Progress(f"the outline could not be built: {type(e).__name__}: {safe_str(str(e), 200)}", True))

    def on_outline_screen_progress(self, message: "OutlineScreen.Progress") -> None:
        self._title(message.text)
        if message.ended:
            self._release_gc()

    def on_outline_screen_ready(self, message: "OutlineScreen.Ready") -> None:
        self.previewed = self.previewed or message.preview
        self._show(message.outline, message.final, message.preview)
        if message.final:
            self._release_gc()

    # ------------------------------------------------------------------ drawing
    def _title(self, status: str) -> None:
        t = Text("outline", style="bold")
        o = self.outline
        if o is not None:
            t.append(f"  {o.root.count:,} nodes · {count_text(o.root.params)} params · {human_size(o.root.bytes)}")
        t.append(f"   {status}", style="dim")
        self.query_one("#outline-title", Static).update(t)

    def _show(self, outline: Outline, final: bool, preview: bool = False) -> None:
        self.outline, self.final = outline, final
        tree: Tree[Any] = self.query_one(Tree)
        tree.clear()
        self.filled.clear()
        tree.root.data = outline.root
        self._populate(tree.root)
        self._title("enter: select in tree / open a fold · → ← open, close" if final else
                    "grouping nodes… (the first rows so far)" if preview else "folding repeated blocks…")
        if tree.cursor_node is None and tree.root.children:
            tree.move_cursor(tree.root.children[0])
        self._detail(tree.cursor_node)

    def _populate(self, node: TreeNode) -> None:
        row = node.data
        if not isinstance(row, Row) or node.id in self.filled:
            return
        self.filled.add(node.id)
        if self.final and self.outline is not None:
            self.outline.ensure_folded(row)
        kids = row.members if row.kind == "fold" else row.children
        shown = SHOWN if self.final else SHOWN_EARLY
        # rows and direct nodes are each in dependency order already: merge only the first ones of each
        # (a full sort of the 10^5 top rows of an unfolded 10^6-node outline held the UI for ~0.7 s)
        items: list[tuple[int, Any]] = [(c.first, c) for c in kids[:shown]]
        direct = 0 if row.kind in ("fold", "node") else len(row.nodes)
        if direct:
            items.extend((p, ("node", i)) for p, i in zip(row.pos[:shown], row.nodes[:shown]))
            items.sort(key=lambda t: t[0])
        more = len(kids) + direct - min(len(items), shown)
        for _, item in items[:shown]:
            if isinstance(item, Row):
                leaf = not (item.children or item.members or item.nodes) or (item.kind == "node" and not item.children)
                if leaf:
                    node.add_leaf(row_text(item), data=item)
                else:
                    node.add(row_text(item), data=item)
            else:
                node.add_leaf(node_text(row.graph, item[1]), data=(row.graph, item[1]))
        if more > 0:
            node.add_leaf(Text(f"… {more:,} more rows (--graph draws them all)", style="dim"), data=None)

    def _detail(self, node: TreeNode | None) -> None:
        data = node.data if node is not None else None
        self.shown = detail(data) if isinstance(data, Row) else detail(None, data) if isinstance(data, tuple) else ""
        self.query_one("#outline-detail", Static).update(self.shown)

    @on(Tree.NodeHighlighted, "#outline-tree")
    def _highlighted(self, event: Tree.NodeHighlighted) -> None:
        self._detail(event.node)

    @on(Tree.NodeExpanded, "#outline-tree")
    def _expanded(self, event: Tree.NodeExpanded) -> None:
        self._populate(event.node)

    @on(Tree.NodeSelected, "#outline-tree")
    def _selected(self, event: Tree.NodeSelected) -> None:
        event.stop()
        self._choose(event.node)

    def _choose(self, node: TreeNode | None) -> None:
        if node is None:
            return
        data = node.data
        if isinstance(data, Row) and data.kind == "fold":
            self._populate(node)
            node.toggle()
            return
        if isinstance(data, Row):
            where = data.where()
        elif isinstance(data, tuple):
            g, i = data
            where = g.nodes[i].where
        else:
            return
        if where:
            self.dismiss(where)

    def action_choose(self) -> None:
        self._choose(self.query_one(Tree).cursor_node)

    def action_open_row(self) -> None:
        node = self.query_one(Tree).cursor_node
        if node is not None and node.allow_expand:
            self._populate(node)
            node.expand()

    def action_close_row(self) -> None:
        tree = self.query_one(Tree)
        node = tree.cursor_node
        if node is None:
            return
        if node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not tree.root:
            tree.move_cursor(node.parent)

    def action_close(self) -> None:
        self.dismiss(None)
