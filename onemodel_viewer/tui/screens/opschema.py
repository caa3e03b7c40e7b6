"""The ``o`` screen: the selected node's operator schema from ``onnx.defs`` -- inputs, outputs,
attributes with their defaults and since-version -- with the attributes the node leaves at
their default marked."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...analysis.opschema import SchemaFacts
from ...format.schema import Node
from ..widgets.safe import safe_text

STATUS = {
    "set": ("set", "bold"),
    "set-default": ("set = default", "yellow"),
    "default": ("default", "green"),
    "missing": ("MISSING (required)", "bold red"),
    "unset": ("not set", "dim"),
}


class OpSchemaScreen(ModalScreen[None]):
    """Schema facts of one node."""

    CSS_PATH = "insight.tcss"
    BINDINGS = [Binding("escape,o,q", "close", "Close")]

    def __init__(self, node: Node, facts: SchemaFacts) -> None:
        super().__init__()
        self.node = node
        self.facts = facts

    def compose(self) -> ComposeResult:
        f = self.facts
        title = safe_text(self.node.op, style="bold", limit=60)
        title.append("  ")
        title.append_text(safe_text(self.node.name or "(unnamed)", limit=60))
        title.append(f"   {f.domain}", style="dim")
        if f.found:
            title.append(f" · since version {f.since_version}", style="cyan")
            title.append(f" · model opset {f.opset if f.opset is not None else '?'}", style="dim")
            if f.deprecated:
                title.append(" · DEPRECATED", style="bold red")
        yield Static(title, classes="insight-title")
        with VerticalScroll(classes="insight-body", id="opschema-body"):
            if not f.found:
                yield Static(Text(f.reason or "no schema", style="yellow"))
            else:
                yield Static(Text(f.doc, style="dim"))
                yield Static(self._formals("inputs", f.inputs, f.min_input, f.max_input, len(self.node.inputs)))
                yield Static(self._formals("outputs", f.outputs, f.min_output, f.max_output, len(self.node.outputs)))
                yield Static(self._attrs())
                if f.unknown:
                    t = Text("\nattributes not in the schema: ", style="bold red")
                    t.append_text(safe_text(", ".join(f.unknown), limit=400))
                    yield Static(t)
                if f.type_constraints:
                    tc = Table.grid(padding=(0, 2))
                    tc.add_column(style="bold")
                    tc.add_column(style="cyan")
                    for name, allowed, _desc in f.type_constraints:
                        tc.add_row(name, Text(", ".join(allowed)))
                    yield Static(Text("\ntype constraints", style="bold"))
                    yield Static(tc)
        yield Footer()

    def _formals(self, title: str, formals, lo: int, hi: int, have: int) -> Table:
        t = Table(title=f"{title} ({lo}..{hi if hi < 2**31 - 1 else '∞'}; the node has {have})", title_justify="left",
                  show_edge=False, box=None, padding=(0, 2), expand=True)
        t.add_column("name", style="bold")
        t.add_column("type", style="cyan")
        t.add_column("", style="dim")
        t.add_column("description", ratio=1)
        for p in formals:
            t.add_row(p.name, p.type_str, p.option, Text(p.description))
        return t

    def _attrs(self) -> Table:
        t = Table(title="attributes", title_justify="left", show_edge=False, box=None, padding=(0, 2), expand=True)
        t.add_column("name", style="bold")
        t.add_column("type", style="cyan")
        t.add_column("default")
        t.add_column("this node")
        t.add_column("description", ratio=1)
        for a in self.facts.attributes:
            label, style = STATUS.get(a.status, (a.status, ""))
            t.add_row(a.name, a.type, Text(a.default if a.default is not None else ("required" if a.required else "-")),
                      Text(label, style=style), Text(a.description, style="dim"))
        if not self.facts.attributes:
            t.add_row("(none)", "", "", "", "")
        return t

    def action_close(self) -> None:
        self.dismiss(None)
