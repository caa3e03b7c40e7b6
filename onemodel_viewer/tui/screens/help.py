"""The ``?`` help screen: keys and what the colours mean."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEYS = (
    ("↑↓ ←→", "move in the focused pane (tree: → expands, ← collapses or goes to the parent)"),
    ("< / >", "structure pane narrower / wider (ctrl+p: maximise a pane)"),
    ("enter", "tree: expand / select · detail: follow a › link"),
    ("tab / shift+tab", "next / previous pane"),
    ("/", "search nodes, tensors and values by name or op"),
    ("n / N", "next / previous search match"),
    ("f", "every match of the last search (enter: go to one)"),
    ("g", "go to a file offset (0x1a40, 6720, +64, end, 50%)"),
    ("s", "compute statistics of the selected tensor"),
    ("c", "cancel the running statistics"),
    ("p", "problems and findings"),
    ("l", "layout of the data region"),
    ("h", "focus the hex pane"),
    ("w", "the record owning the byte under the hex cursor"),
    ("i", "byte inspector: the hex cursor's bytes as u8..f64 and the tensor element"),
    ("u", "every node reading the selected value (subgraphs included)"),
    ("a", "graph neighbourhood of the selected node (+/- levels, enter: select)"),
    ("P", "parameter counts by dtype, largest tensors"),
    ("O", "scope outline: layers, repeated blocks folded (enter: select in tree / open a fold)"),
    ("o", "operator help: the node's ONNX schema, defaults marked"),
    ("v", "tensor values grid ([ ] slice, x choose slice, j jump, y copy)"),
    ("e", "write the selected tensor to a .npy file"),
    ("y / Y", "copy the selected name / where path (OSC 52)"),
    ("E", "edit the selection in memory: header field, manifest value (JSON) or, hex pane focused, bytes"),
    ("ctrl+z / ctrl+y", "undo / redo an edit (the verdict is re-checked after each)"),
    ("L / S", "the edits in --patch syntax / save the edited file as a new file"),
    ("r", "reload the file from disk"),
    ("ctrl+t", "switch light / dark theme"),
    ("ctrl+p", "command palette"),
    ("?", "this help"),
    ("q", "quit"),
)

COLOURS = (
    ("header", "the 64-byte header (fields named on the right)", ("header",)),
    ("manifest", "the JSON manifest", ("manifest",)),
    ("padding", "zero padding before the data region", ("padding",)),
    ("tensor", "tensor bytes (two alternating colours)", ("tensor-a", "tensor-b")),
    ("overlap", "bytes owned by more than one tensor", ("overlap",)),
    ("gap", "data-region bytes no tensor owns", ("data",)),
    ("•", "a line starting on a 64-byte boundary", ("mark",)),
)
"""(name, meaning, the hex pane's style names drawn as its swatch)."""


class HelpScreen(ModalScreen[None]):
    """Keys and colours. Any of escape, q, ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "close", "Close")]

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 84; max-width: 100%; height: auto; max-height: 100%;
                                  border: round $accent; background: $panel; padding: 0 1; }
    """

    def __init__(self, swatches: dict | None = None, *, keys: tuple = KEYS, colours: tuple = COLOURS,
                 title: str = "onemodel-view — keys") -> None:
        super().__init__()
        self.swatches = swatches or {}
        """The hex pane's styles by name (:meth:`.hex_view.HexView.swatches`): the legend shows them."""
        self.keys = keys
        """(keys, what they do) rows: the viewer's :data:`KEYS`, or the diff viewer's."""
        self.colours = colours
        self.title = title

    def _swatch(self, names: tuple[str, ...]) -> Text:
        t = Text()
        for i, name in enumerate(names):
            style = self.swatches.get(name)
            t.append(" 4f 4e" if i else "4f 4e", style=style or "")
        return t

    def compose(self) -> ComposeResult:
        keys = Table.grid(padding=(0, 2))
        keys.add_column(style="bold")
        keys.add_column()
        for k, d in self.keys:
            keys.add_row(k, d)
        colours = Table.grid(padding=(0, 2))
        colours.add_column(style="bold")
        colours.add_column(no_wrap=True)
        colours.add_column()
        for k, d, names in self.colours:
            colours.add_row(k, self._swatch(names), d)
        with VerticalScroll():
            yield Static(Text(self.title, style="bold"))
            yield Static(keys)
            yield Static(Text("\nhex pane colours", style="bold"))
            yield Static(colours)
            yield Static(Text("\nescape closes", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)
