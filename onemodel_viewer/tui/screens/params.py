"""The ``P`` screen: parameter counts of the model and of each graph, by dtype and by source, and the
largest tensors. Choosing a largest tensor returns its ``where``; the app selects it in the tree.
"""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from ...analysis.params import ParamCounts
from ...format.schema import Graph
from ..widgets.safe import human_size, safe_text


def counts_table(c: ParamCounts) -> Table:
    """Sources and dtypes with elements, bytes and tensors."""
    t = Table.grid(padding=(0, 2))
    t.add_column(style="bold")
    t.add_column(justify="right")
    t.add_column(justify="right")
    t.add_column(justify="right", style="dim")
    t.add_row("total", f"{c.elements:,}", human_size(c.bytes), f"{c.tensors:,} tensors")
    for src in ("initializer", "constant", "sparse", "sparse-indices", "attribute"):
        s = c.by_source.get(src)
        if s is not None:
            t.add_row(Text("  " + src), f"{s.elements:,}", human_size(s.bytes), f"{s.tensors:,}")
    for dt, s in sorted(c.by_dtype.items(), key=lambda kv: (-kv[1].bytes, kv[0])):
        t.add_row(Text("  " + dt, style="cyan"), f"{s.elements:,}", human_size(s.bytes), f"{s.tensors:,}")
    return t


class ParamsScreen(ModalScreen[str | None]):
    """Whole-model counts, per-graph totals, largest tensors (enter: select one)."""

    CSS_PATH = "insight.tcss"
    BINDINGS = [Binding("escape,P,q", "close", "Close"), Binding("enter", "choose", "Go to", show=True)]

    def __init__(self, model: ParamCounts, graphs: list[tuple[Graph, ParamCounts]]) -> None:
        super().__init__()
        self.model = model
        self.graphs = graphs

    def compose(self) -> ComposeResult:
        title = Text("parameters", style="bold")
        title.append(f"  {self.model.elements:,} elements · {human_size(self.model.bytes)}", style="bold")
        title.append("   (initializers, Constant nodes, sparse and attribute tensors)", style="dim")
        yield Static(title, classes="insight-title")
        with VerticalScroll(classes="insight-body"):
            yield Static(counts_table(self.model), id="params-model")
            per = Table.grid(padding=(0, 2))
            per.add_column()
            per.add_column(justify="right")
            per.add_column(justify="right")
            for g, c in self.graphs[:64]:
                per.add_row(safe_text("graph " + (g.name or "(unnamed)"), limit=50), f"{c.elements:,}", human_size(c.bytes))
            yield Static(Text("\nper graph (with its subgraphs)", style="bold"))
            yield Static(per, id="params-graphs")
            yield Static(Text("\nlargest tensors (enter: select)", style="bold"))
            yield DataTable(cursor_type="row", zebra_stripes=True, id="params-largest")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("name", "type", "elements", "bytes")
        for nbytes, count, name, ty, where in self.model.largest:
            table.add_row(safe_text(name or "(unnamed)", limit=50), Text(ty, style="cyan"), f"{count:,}", human_size(nbytes))
        table.focus()

    def action_choose(self) -> None:
        self._choose(self.query_one(DataTable).cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._choose(event.cursor_row)

    def _choose(self, row: int) -> None:
        if 0 <= row < len(self.model.largest):
            self.dismiss(self.model.largest[row][4] or None)

    def action_close(self) -> None:
        self.dismiss(None)
