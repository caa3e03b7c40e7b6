"""The ``p`` screen: every problem and finding of the document.

Choosing a row closes the screen and returns the record; the app then moves the
hex pane to its offset and the tree to the record its ``where`` names.

While the viewer's deferred checks run (a big manifest's first open: tui/background.py), the app's
``verdict_note()`` says so ("checking…") and the title shows it: the list is what is known so far;
the app gives the complete list when the checks end (:meth:`ProblemsScreen.show_records`).
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import DataTable, Footer, Static

from ...format.spec_rules import rule_of
from ..widgets.safe import safe_text


class ProblemsScreen(ModalScreen[Any]):
    """Problems (kind, where, offset, message) then findings (code, ...)."""

    BINDINGS = [Binding("escape,p,q", "close", "Close"), Binding("enter", "choose", "Go to", show=True)]

    DEFAULT_CSS = """
    ProblemsScreen { background: $background 60%; }
    ProblemsScreen > #problems-title { dock: top; height: 1; background: $panel; padding: 0 1; }
    ProblemsScreen > DataTable { height: 1fr; }
    """

    def __init__(self, problems: list, findings: list, appeared: set | None = None, gone: list | None = None,
                 files: list[str] | None = None, note: str = "") -> None:
        super().__init__()
        self.gone = list(gone or [])
        """Problems the last edit made disappear (edit mode): listed after the problems, marked ``-``."""
        self.appeared = set(appeared or ())
        """(kind, where) of the problems the last edit made appear: marked ``+``."""
        self.records: list[Any] = [*problems, *self.gone, *findings]
        self._n_problems = len(problems) + len(self.gone)
        self.files = files
        """The file of each record (``A`` / ``B`` in the diff viewer), shown in a first column; None: one file."""
        self.note = note
        """Why the list may not be every problem (the app's ``verdict_note()``: "checking…"), or ''."""

    def show_records(self, problems: list, findings: list, note: str = "") -> None:
        """The list again, with ``problems`` and ``findings`` (the app's deferred checks have ended; the
        edit marks kept); ``note``: see :attr:`note`."""
        self.records = [*problems, *self.gone, *findings]
        self._n_problems = len(problems) + len(self.gone)
        self.note = note
        self.query_one("#problems-title", Static).update(self._title())
        table = self.query_one(DataTable)
        table.clear(columns=True)
        self._fill(table)

    def _title(self) -> Text:
        n_find = len(self.records) - self._n_problems
        n = self._n_problems - len(self.gone)
        title = Text(f" {n} problem{'s' if n != 1 else ''}, "
                     f"{n_find} finding{'s' if n_find != 1 else ''}", style="bold")
        if self.note:  # not all known yet
            title.append(f" so far ({self.note})", style="bold yellow")
        if self.gone or self.appeared:
            title.append(f"   last edit: +{len(self.appeared)} appeared, -{len(self.gone)} gone", style="bold magenta")
        title.append("   enter: go to · escape: close", style="dim")
        return title

    def compose(self) -> ComposeResult:
        yield Static(self._title(), id="problems-title")
        yield DataTable(cursor_type="row", zebra_stripes=True, id="problems-table")
        yield Footer()

    def on_mount(self) -> None:
        self._fill(self.query_one(DataTable))
        self.query_one(DataTable).focus()

    def _fill(self, table: DataTable) -> None:
        rows = []
        for i, r in enumerate(self.records):
            is_problem = i < self._n_problems
            kind = Text(str(r.kind) if is_problem else r.code, style="bold red" if is_problem else "yellow")
            if is_problem and (self.gone or self.appeared):
                gone = i >= self._n_problems - len(self.gone)
                mark = "- " if gone else "+ " if (r.kind.value, r.where) in self.appeared else "  "
                kind = Text(mark, style="bold green" if gone else "bold magenta") + kind
            off = Text("-" if r.offset is None else f"0x{r.offset:x}", style="cyan")
            message = safe_text(r.message, limit=400)
            rule = rule_of(r) if is_problem else None
            if rule is not None:  # the same section and id as --check's "rule:" line
                message.append(f"\nrule: {rule.label()}", style="dim")
            rows.append((kind, safe_text(r.where, limit=60), off, message))
        if self.files is not None:
            table.add_column("file")
        # the message column takes what the others leave, and its text wraps (a row grows): never cut
        fixed = [max([len(h)] + [row[c].cell_len for row in rows]) for c, h in enumerate(("kind", "where", "offset"))]
        room = self.app.size.width - fixed[0] - fixed[2] - 2 * 4 - 2 - (6 if self.files is not None else 0)
        where_w = min(fixed[1], max(16, room * 2 // 5))
        table.add_column("kind")
        table.add_column("where", width=where_w)
        table.add_column("offset")
        table.add_column("message", width=max(20, room - where_w))
        for i, row in enumerate(rows):
            side = (Text(self.files[i], style="bold"),) if self.files is not None else ()
            table.add_row(*side, *row, key=str(i), height=None)
        if not self.records:
            side = (Text(""),) if self.files is not None else ()
            if self.note:
                table.add_row(*side, Text("none", style="yellow"), Text(f"none found so far ({self.note})"),
                              Text(""), Text(""))
            else:
                table.add_row(*side, Text("none", style="green"),
                              Text("the file" + ("s are" if side else " is") + " valid"), Text(""), Text(""))

    def action_choose(self) -> None:
        table = self.query_one(DataTable)
        self._choose(table.cursor_row)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self._choose(event.cursor_row)

    def _choose(self, row: int) -> None:
        if 0 <= row < len(self.records):
            self.dismiss(self.records[row])

    def action_close(self) -> None:
        self.dismiss(None)
