"""The ``v`` screen: a tensor's values as a grid of one 2-D slice.

Keys: ``[``/``]`` step the slice along the nearest fixed axis, ``x`` chooses the slice (``2,:,:,0``:
the two ``:`` are the shown axes), ``j`` jumps to an element (``3,4,0,1`` or a flat ``#17``), ``y``
copies the cursor's value (for strings the element itself, exactly), ``e`` writes the tensor to a
``.npy`` file, escape closes.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

from ...analysis.values import SliceSpec, flat_index, parse_index
from ...format.schema import Tensor
from ..widgets.safe import safe_str, safe_text
from .values_grid import ValuesGrid


def parse_slice(text: str, spec: SliceSpec) -> SliceSpec | None:
    """``2,:,:,0`` -> a spec showing the two ``:`` axes with the other indices fixed (None: not understood)."""
    parts = [p.strip() for p in text.strip().strip("[]").split(",")]
    dims = spec.dims
    if len(parts) != len(dims) or len(dims) < 2:
        return None
    shown = [i for i, p in enumerate(parts) if p == ":"]
    if len(shown) != 2:
        return None
    fixed = list(spec.fixed)
    for i, p in enumerate(parts):
        if p == ":":
            continue
        try:
            v = int(p, 0)
        except ValueError:
            return None
        if v < 0:
            v += dims[i]
        if not 0 <= v < dims[i]:
            return None
        fixed[i] = v
    return SliceSpec(dims, shown[0], shown[1], tuple(fixed), spec.wrap)


class ValuesScreen(ModalScreen[None]):
    """The values grid of one tensor, with its slice and the cursor's element in a status line."""

    CSS_PATH = "insight.tcss"
    BINDINGS = [
        Binding("escape,q", "close", "Close"),
        Binding("left_square_bracket", "step(-1)", "Prev slice"),
        Binding("right_square_bracket", "step(1)", "Next slice"),
        Binding("x", "choose_slice", "Slice"),
        Binding("j", "jump", "Jump to index"),
        Binding("y", "copy_value", "Copy value"),
        Binding("e", "export", "Export .npy"),
    ]

    def __init__(self, tensor: Tensor) -> None:
        super().__init__()
        self.tensor = tensor

    def compose(self) -> ComposeResult:
        t = self.tensor
        title = Text("values ", style="bold")
        title.append_text(safe_text(t.name or "(unnamed)", style="bold", limit=60))
        title.append(f"  {t.type_str()}", style="cyan")
        yield Static(title, classes="insight-title", id="values-title")
        yield ValuesGrid(t, id="values-grid")
        yield Static(id="values-status", classes="insight-status")
        yield Footer()

    def on_mount(self) -> None:
        grid = self.query_one(ValuesGrid)
        grid.focus()
        self._status()

    @property
    def grid(self) -> ValuesGrid:
        return self.query_one(ValuesGrid)

    def on_values_grid_cursor_moved(self, _event: ValuesGrid.CursorMoved) -> None:
        self._status()

    def _status(self) -> None:
        grid = self.grid
        t = self.tensor
        st = Text("slice ", style="dim")
        st.append(grid.spec.describe(), style="bold")
        st.append(f"  {grid.spec.rows:,}×{grid.spec.cols:,}", style="dim")
        if t.count == 0:
            st.append("   (no elements)", style="yellow")
        idx = grid.current_index()
        if idx is not None and t.count:
            st.append("   element [" + ",".join(map(str, idx)) + f"] #{flat_index(tuple(t.dims), idx):,} = ", style="dim")
            cell = grid.cell(*grid.cursor)
            if cell is not None:
                st.append_text(Text(cell.text[:200]))
        if grid.error:
            st.append("\n" + grid.error, style="red")
        st.append("\n[ ] slice · x choose slice · j jump · y copy · e .npy", style="dim")
        self.query_one("#values-status", Static).update(st)

    def action_step(self, delta: int) -> None:
        spec = self.grid.spec
        axes = [a for a in range(len(spec.dims)) if a not in (spec.row_axis, spec.col_axis)]
        if not axes:
            self.notify("no other axis to step along", timeout=2)
            return
        axis = max(a for a in axes if a < (spec.row_axis if spec.row_axis is not None else len(spec.dims))) \
            if any(a < (spec.row_axis if spec.row_axis is not None else len(spec.dims)) for a in axes) else axes[-1]
        r, c = self.grid.cursor
        self.grid.set_spec(spec.with_fixed(axis, spec.fixed[axis] + delta), r, c)
        self._status()

    def action_choose_slice(self) -> None:
        from ..widgets.prompt import Prompt

        spec = self.grid.spec
        if len(spec.dims) < 2:
            self.notify("a tensor of rank < 2 has one slice", timeout=3)
            return
        current = ",".join(":" if a in (spec.row_axis, spec.col_axis) else str(spec.fixed[a]) for a in range(len(spec.dims)))

        def done(text: str | None) -> None:
            if text is None:
                return
            new = parse_slice(text, self.grid.spec)
            if new is None:
                self.notify(f"not a slice of {list(spec.dims)}: {safe_str(text, 40)} (two ':' and an index per other axis)",
                            severity="warning", markup=False)
                return
            self.grid.set_spec(new)
            self._status()

        self.app.push_screen(Prompt("Slice (two ':' axes shown, an index on each other axis)", "0,:,:",
                                    value=current, hint=f"dims {list(spec.dims)}"), done)

    def action_jump(self) -> None:
        from ..widgets.prompt import Prompt

        dims = tuple(self.tensor.dims)

        def done(text: str | None) -> None:
            if text is None:
                return
            self.jump(text)

        self.app.push_screen(Prompt("Jump to element", "3,4 (an index per axis) or #17 (flat)", hint=f"dims {list(dims)}"), done)

    def jump(self, text: str) -> bool:
        """Move to the element ``text`` names (switching slice as needed)."""
        dims = tuple(self.tensor.dims)
        idx = parse_index(text, dims)
        if idx is None or self.tensor.count == 0:
            self.notify(f"no element {safe_str(text, 40)} in {list(dims)}", severity="warning", markup=False)
            return False
        spec, r, c = self.grid.spec.cell_of(idx)
        self.grid.set_spec(spec, r, c)
        self._status()
        return True

    def action_copy_value(self) -> None:
        grid = self.grid
        idx = grid.current_index()
        if idx is None:
            return
        t = self.tensor
        if t.is_string:
            raw = (t.strings or ())[flat_index(tuple(t.dims), idx)]
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                self.notify("this string is not valid UTF-8: not copied", severity="warning")
                return
        else:
            cell = grid.cell(*grid.cursor)
            if cell is None:
                return
            text = cell.text
        copy = getattr(self.app, "copy_text", None)
        if copy is not None:
            copy(text, "value")
        else:
            self.app.copy_to_clipboard(text)

    def action_export(self) -> None:
        export = getattr(self.app, "action_export_npy", None)
        if export is not None:
            export()

    def action_close(self) -> None:
        self.dismiss(None)
