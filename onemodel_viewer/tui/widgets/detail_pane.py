"""The detail pane: facts about the selected record, one line per fact.

Reusable: feed it ``(Text, link)`` pairs with :meth:`DetailPane.show`. A line with a
link (a ``where`` path or ``("offset", n)``) can be chosen (Enter or click) and
posts :class:`DetailPane.LinkChosen`; the app follows it.
"""

from __future__ import annotations

from typing import Any, Iterable

from rich.text import Text
from textual.message import Message
from textual.widgets import OptionList
from textual.widgets.option_list import Option


class DetailPane(OptionList):
    """Lines of detail; linked lines are marked with ``›`` and can be followed."""

    DEFAULT_CSS = """
    DetailPane { border: none; padding: 0; }
    """

    class LinkChosen(Message):
        """A linked line was chosen."""

        def __init__(self, link: Any) -> None:
            super().__init__()
            self.link = link

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._links: list[Any] = []

    def show(self, lines: Iterable[tuple[Text, Any]]) -> None:
        """Replace the contents with ``lines``."""
        opts: list[Option] = []
        links: list[Any] = []
        for text, link in lines:
            t = text.copy()
            if link is not None:
                t.append(" ›", style="bold")
            opts.append(Option(t))
            links.append(link)
        self._links = links
        self.set_options(opts)
        self.highlighted = None

    def plain_lines(self) -> list[str]:
        """The shown lines as plain text (for tests and screen readers)."""
        out = []
        for i in range(self.option_count):
            p = self.get_option_at_index(i).prompt
            out.append(p.plain if isinstance(p, Text) else str(p))
        return out

    def link_at(self, index: int) -> Any:
        return self._links[index] if 0 <= index < len(self._links) else None

    def _on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        link = self.link_at(event.option_index)
        if link is not None:
            self.post_message(self.LinkChosen(link))
