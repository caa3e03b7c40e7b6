"""The ``u`` screen: every node reading the selected value(s), subgraph readers included.

Choosing a row closes the screen and returns the reader's ``where``; the app selects it in the tree.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from ...analysis.usedby import Use
from ..widgets.safe import safe_text


class UsedByScreen(ModalScreen[str | None]):
    """Readers: value, op, node name, where it sits (own graph or inside which node's subgraph)."""

    CSS_PATH = "insight.tcss"
    BINDINGS = [Binding("escape,u,q", "close", "Close"), Binding("enter", "choose", "Go to", show=True)]

    def __init__(self, names: list[str], rows: list[tuple[str, Use]]) -> None:
        super().__init__()
        self.names = names
        self.rows = rows

    def compose(self) -> ComposeResult:
        title = Text("used by: ", style="bold")
        for i, n in enumerate(self.names[:4]):
            if i:
                title.append(", ")
            title.append_text(safe_text(n, limit=50))
        if len(self.names) > 4:
            title.append(f" (+{len(self.names) - 4})")
        inner = sum(1 for _, u in self.rows if u.via is not None)
        title.append(f"   {len(self.rows):,} reader(s), {inner:,} inside subgraphs", style="dim")
        title.append("   enter: select in the tree · escape: close", style="dim")
        yield Static(title, classes="insight-title")
        yield DataTable(cursor_type="row", zebra_stripes=True, classes="insight-body", id="used-by-table")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("value", "op", "node", "in")
        for i, (name, u) in enumerate(self.rows):
            if u.via is None:
                scope = Text("this function" if u.function is not None else "this graph", style="dim")
            else:
                scope = Text("inside ", style="dim")
                scope.append_text(safe_text(u.via.op, limit=20))
                scope.append(" ")
                scope.append_text(safe_text(u.via.name or "(unnamed)", limit=30))
                if u.graph.name:
                    scope.append(" · ")
                    scope.append_text(safe_text(u.graph.name, limit=30))
            table.add_row(safe_text(name, limit=40), safe_text(u.node.op, style="green", limit=30),
                          safe_text(u.node.name or "(unnamed)", limit=50), scope, key=str(i))
        if not self.rows:
            table.add_row(Text("no node reads it", style="yellow"), Text(""), Text(""), Text(""))
        table.focus()

    def action_choose(self) -> None:
        self._choose(self.query_one(DataTable).cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._choose(event.cursor_row)

    def _choose(self, row: int) -> None:
        if 0 <= row < len(self.rows):
            self.dismiss(self.rows[row][1].where)

    def action_close(self) -> None:
        self.dismiss(None)
