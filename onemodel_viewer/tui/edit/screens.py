"""Edit mode's screens: the JSON value editor and the edit list.

:class:`JsonEditor` edits one manifest value as JSON text: ``ctrl+s`` applies it (only when it
parses as JSON), ``ctrl+d`` deletes the element or member, ``escape`` cancels. It returns the
``--patch`` value text (``(null)`` for a literal null, ``null`` to delete) or None.

:class:`EditListScreen` shows every edit in ``--patch`` syntax and the command that makes the same
file; ``y`` copies that command.
"""

from __future__ import annotations

import json

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Label, Static, TextArea

from ..widgets.safe import safe_text

__all__ = ["EditListScreen", "JsonEditor", "json_error"]


def json_error(text: str) -> str | None:
    """Why ``text`` is not one JSON value (None when it is)."""
    if not text.strip():
        return "empty: type a JSON value (ctrl+d deletes)"
    try:
        json.loads(text)
    except ValueError as e:
        return f"not JSON: {e}"
    except RecursionError:
        return "not JSON: nested too deeply"
    return None


class JsonEditor(ModalScreen[str | None]):
    """Edit one manifest value as JSON."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel"),
        Binding("ctrl+s", "apply", "Apply", priority=True),
        Binding("ctrl+d", "delete", "Delete", priority=True),
    ]

    DEFAULT_CSS = """
    JsonEditor { align: center middle; }
    JsonEditor > Vertical { width: 90; max-width: 95%; height: auto; max-height: 90%; padding: 0 1;
                            border: round $accent; background: $panel; }
    JsonEditor TextArea { height: auto; max-height: 20; min-height: 3; }
    JsonEditor #json-error { color: $error; }
    JsonEditor Label { width: 100%; }
    """

    def __init__(self, where: str, value: str) -> None:
        super().__init__()
        self.where = where
        self.value = value

    def compose(self) -> ComposeResult:
        with Vertical():
            title = Text("edit ", style="bold")
            title.append_text(safe_text(self.where, limit=200, style="cyan"))
            yield Label(title)
            yield TextArea(self.value, id="json-text", soft_wrap=True, show_line_numbers=False)
            yield Label("", id="json-error")
            yield Label(Text("ctrl+s apply · ctrl+d delete this value · escape cancel", style="dim"))

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        self.query_one("#json-error", Label).update(json_error(event.text_area.text) or "")

    def action_apply(self) -> None:
        text = self.query_one(TextArea).text.strip()
        err = json_error(text)
        if err is not None:
            self.query_one("#json-error", Label).update(err)
            self.app.bell()
            return
        self.dismiss("(null)" if text == "null" else text)

    def action_delete(self) -> None:
        self.dismiss("null")

    def action_cancel(self) -> None:
        self.dismiss(None)


class EditListScreen(ModalScreen[None]):
    """The edits in ``--patch`` syntax, oldest first, and the ``--patch`` command."""

    BINDINGS = [Binding("escape,q,L", "close", "Close"), Binding("y", "copy", "Copy command")]

    DEFAULT_CSS = """
    EditListScreen { align: center middle; }
    EditListScreen > VerticalScroll { width: 100; max-width: 100%; height: auto; max-height: 100%;
                                      border: round $accent; background: $panel; padding: 0 1; }
    """

    def __init__(self, edits: list[str], undone: list[str], command: str) -> None:
        super().__init__()
        self.edits = edits
        self.undone = undone
        self.command = command

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            n = len(self.edits)
            yield Static(Text(f"{n} edit{'s' if n != 1 else ''} (--patch syntax)", style="bold"))
            for i, e in enumerate(self.edits, 1):
                line = Text(f"{i:>3}  ", style="dim")
                line.append_text(safe_text(e, limit=2000))
                yield Static(line, classes="edit-line")
            for e in self.undone:
                line = Text("undone ", style="dim")
                line.append_text(safe_text(e, limit=2000, style="dim"))
                yield Static(line)
            yield Static(Text("\nthe same file from the command line:", style="bold"))
            yield Static(safe_text(self.command, limit=8000))
            yield Static(Text("\ny copy the command · escape close", style="dim"))

    def action_copy(self) -> None:
        copy = getattr(self.app, "copy_text", None)
        if copy is not None:
            copy(self.command, "the --patch command")

    def action_close(self) -> None:
        self.dismiss(None)
