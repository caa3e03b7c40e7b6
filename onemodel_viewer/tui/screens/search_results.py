"""The ``f`` screen: every match of the last search, one row each (what, what matched, where).

Choosing a row (Enter or a click) closes the screen and returns the match's index; the app
then puts the tree cursor on it, as ``n`` / ``N`` do.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ..widgets.safe import safe_text


class SearchResults(ModalScreen[int | None]):
    """The matches of ``query``: description (op and name), what matched, and the graph path."""

    BINDINGS = [Binding("escape,q,f", "close", "Close")]

    DEFAULT_CSS = """
    SearchResults { background: $background 60%; }
    SearchResults > #results-title { dock: top; height: 1; background: $panel; padding: 0 1; }
    SearchResults > OptionList { height: 1fr; }
    """

    def __init__(self, query: str, matches: list[tuple[str, str, str]], current: int = -1) -> None:
        super().__init__()
        self.query_text = query
        self.matches = matches
        """(where, description, what matched) of each match."""
        self.current = current

    def compose(self) -> ComposeResult:
        n = len(self.matches)
        title = Text(f" {n:,} match{'es' if n != 1 else ''} for ", style="bold")
        title.append_text(safe_text(self.query_text, style="bold", limit=40))
        title.append("   enter: go to · escape: close", style="dim")
        yield Static(title, id="results-title")
        options = []
        for where, desc, why in self.matches:
            t = safe_text(desc, style="bold", limit=80)
            t.append(f"  {why}", style="dim")
            t.append("  ")
            t.append_text(safe_text(where, style="cyan", limit=120))
            options.append(Option(t))
        yield OptionList(*options, id="results-list")
        yield Footer()

    def on_mount(self) -> None:
        lst = self.query_one(OptionList)
        if self.matches:
            lst.highlighted = max(0, self.current)
        lst.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option_index)

    def action_close(self) -> None:
        self.dismiss(None)
