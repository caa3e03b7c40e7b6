"""The ``a`` screen: the selected node's producers and consumers, a few levels up and down.

Keys: arrows move along edges, ``+``/``-`` show more / fewer levels, space re-centres on the
selected node, enter selects it in the tree (closing the screen), escape closes. The status line
lists the selected box's edges in full (value, type, the box at the other end).

The app keeps one instance (installed, so closing it does not remove its widgets) and
:meth:`NeighbourhoodScreen.show_node` points it at the next node (a new screen per press is
Textual's compose and mount each time: ~500 ms against ~110 ms reused, at a load of 13, by
``benchmarks/neighbourhood_key.py``). It has no Footer (the status line lists the keys): a
Footer is rebuilt on every push.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Static

from ...analysis.neighbourhood import Neighbourhood, neighbourhood
from ...format.schema import Graph
from .neighbourhood_view import NeighbourhoodView
from ..widgets.safe import safe_text

MAX_LEVELS = 6


class NeighbourhoodScreen(ModalScreen[str | None]):
    """A :class:`NeighbourhoodView` with a title and a status line."""

    CSS_PATH = "insight.tcss"
    BINDINGS = [
        Binding("escape,q,a", "close", "Close"),
        Binding("enter", "choose", "Select in tree"),
        Binding("plus,equals_sign", "levels(1)", "More levels"),
        Binding("minus", "levels(-1)", "Fewer levels"),
        Binding("space", "recentre", "Re-centre"),
    ]

    def __init__(self, graph: Graph, index: int, facts, insight=None, levels: int = 1) -> None:
        super().__init__()
        self.graph = graph
        self.index = index
        self.facts = facts
        self.insight = insight
        self.levels = levels
        self.nb = self._compute()

    def _compute(self) -> Neighbourhood:
        ins = self.insight
        used_by = ins.used_by if ins is not None else None

        def infer(name: str):
            return ins.infer_type(self.graph, name)[0] if ins is not None else None

        return neighbourhood(self.graph, self.index, self.facts, up=self.levels, down=self.levels,
                             used_by=used_by, infer=infer)

    def show_node(self, graph: Graph, index: int, facts, insight=None) -> None:
        """Show the neighbourhood of ``graph.nodes[index]`` (the same number of levels as last time)."""
        self.graph, self.index, self.facts, self.insight = graph, index, facts, insight
        if self.is_mounted:
            self._redraw()
        else:
            self.nb = self._compute()

    def on_screen_resume(self) -> None:
        self.query_one(NeighbourhoodView).focus()

    def compose(self) -> ComposeResult:
        yield Static(id="nb-title", classes="insight-title")
        yield NeighbourhoodView(self.nb, id="nb-canvas")
        yield Static(id="nb-status", classes="insight-status")

    def on_mount(self) -> None:
        self.query_one(NeighbourhoodView).focus()
        self._title()
        self._status()

    def _title(self) -> None:
        n = self.graph.nodes[self.index]
        t = Text("neighbourhood of ", style="bold")
        t.append_text(safe_text(n.op, style="bold", limit=30))
        t.append(" ")
        t.append_text(safe_text(n.name or "(unnamed)", limit=50))
        t.append(f"   {self.levels} level(s) up and down · {len(self.nb.boxes):,} boxes", style="dim")
        if self.insight is not None and self.insight.used_by is None:
            t.append(" · subgraph readers still being computed", style="yellow")
        self.query_one("#nb-title", Static).update(t)

    def on_neighbourhood_view_selection_moved(self, _event: NeighbourhoodView.SelectionMoved) -> None:
        self._status()

    def _status(self) -> None:
        view = self.query_one(NeighbourhoodView)
        nb = view.nb
        b = view.selected
        bx = nb.boxes[b]
        t = Text()
        t.append_text(safe_text(bx.op, style="bold", limit=30))
        t.append(" ")
        t.append_text(safe_text(bx.name or "(unnamed)", limit=50))
        for label, edges, other in (("in ", nb.edges_in(b), lambda e: e.src), ("out", nb.edges_out(b), lambda e: e.dst)):
            if not edges:
                continue
            t.append(f"\n{label} ", style="dim")
            for k, e in enumerate(edges[:4]):
                if k:
                    t.append(" · ", style="dim")
                t.append_text(safe_text(e.value, limit=30))
                if e.type:
                    t.append(f" {e.type}", style="cyan")
                ob = nb.boxes[other(e)]
                t.append(" ← " if label == "in " else " → ", style="dim")
                t.append_text(safe_text(ob.op, style="green", limit=20))
                if e.subgraph:
                    t.append(" (inside a subgraph)", style="yellow")
            if len(edges) > 4:
                t.append(f" (+{len(edges) - 4})", style="dim")
        t.append("\n↑↓ along edges · ←→ in a layer · +/- levels · space re-centre · enter select in tree · esc close", style="dim")
        self.query_one("#nb-status", Static).update(t)

    def action_levels(self, delta: int) -> None:
        new = max(1, min(MAX_LEVELS, self.levels + delta))
        if new == self.levels:
            return
        self.levels = new
        self._redraw()

    def _redraw(self) -> None:
        self.nb = self._compute()
        self.query_one(NeighbourhoodView).set_neighbourhood(self.nb)
        self._title()
        self._status()

    def action_recentre(self) -> None:
        view = self.query_one(NeighbourhoodView)
        bx = view.selected_box
        if bx.kind != "node" or bx.graph is not self.graph or bx.node is None:
            self.notify("only a node of this graph can be the centre", timeout=2)
            return
        nodes = self.graph.nodes
        where = bx.where
        idx = next((i for i in range(len(nodes)) if (nodes.where_of(i) if hasattr(nodes, "where_of") else nodes[i].where) == where), None)
        if idx is None:
            return
        self.index = idx
        self._redraw()

    def action_choose(self) -> None:
        bx = self.query_one(NeighbourhoodView).selected_box
        if bx.where:
            self.dismiss(bx.where)

    def action_close(self) -> None:
        self.dismiss(None)
