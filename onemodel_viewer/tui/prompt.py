"""A one-line prompt (go to offset, search): returns the text, or None when cancelled.

Keys typed right after the key that opens a prompt (fast typing, a terminal multiplexer sending
keys, type-ahead) were lost: Textual hands each key to the widget focused *when it arrives*, so
those went to the tree of the screen below; on their way back up only the keys bound to
something reached the prompt (ctrl+u, enter), the characters of the answer were dropped, and
enter then answered with what was left. :func:`take_stray_key`, called from the app's
``on_key``, types such a character into the prompt.
"""

from __future__ import annotations

from typing import Any, Callable

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from .safe import safe_str


class Prompt(ModalScreen[str | None]):
    """Ask for one line of text. Enter answers, Escape cancels."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    DEFAULT_CSS = """
    Prompt { align: center top; }
    Prompt > Vertical { width: 70; max-width: 95%; height: auto; margin-top: 3; padding: 0 1;
                        border: round $accent; background: $panel; }
    Prompt Label { width: 100%; color: $text-muted; }
    """

    def __init__(self, title: str, placeholder: str = "", value: str = "", hint: str = "") -> None:
        super().__init__()
        self._title = title
        self._placeholder = placeholder
        self._value = value
        self._hint = hint

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, markup=False)
            yield Input(value=self._value, placeholder=self._placeholder, id="prompt-input")
            if self._hint:
                yield Label(self._hint, markup=False)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


def take_stray_key(app: App, event: events.Key) -> bool:
    """Type ``event``'s character into the focused Input when the key arrived before it had the focus.

    Called for a key that bubbled up to the app: a printable key typed into an Input stops there, so
    one that reaches the app while an Input has the focus was sent to the widget focused before.
    """
    inp = app.focused
    if not isinstance(inp, Input) or not event.is_printable or event.character is None:
        return False
    event.stop()
    event.prevent_default()
    if inp.selection.is_empty:
        inp.insert_text_at_cursor(event.character)
    else:
        inp.replace(event.character, *inp.selection)
    return True


def parse_offset(text: str, size: int, current: int = 0) -> int | None:
    """``0x1a40``, ``1a40h``, ``$1a40``, ``6720``, ``+64``/``-64`` (relative), ``end``, ``50%`` -> offset.

    Plain digits are decimal; anything with a-f letters is hex. Returns None when not understood.
    """
    s = text.strip().lower().replace("_", "").replace(",", "")
    if not s:
        return None
    rel = 0
    if s[0] in "+-":
        rel = 1 if s[0] == "+" else -1
        s = s[1:].strip()
    try:
        if s == "end":
            v = max(0, size - 1)
        elif s.endswith("%"):
            v = int(float(s[:-1]) * size / 100)
        elif s.startswith("0x"):
            v = int(s[2:], 16)
        elif s.startswith("$"):
            v = int(s[1:], 16)
        elif s.endswith("h"):
            v = int(s[:-1], 16)
        elif s.isdigit():
            v = int(s, 10)
        else:
            v = int(s, 16)
    except ValueError:
        return None
    if rel:
        v = current + rel * v
    return v


def ask_offset(app: Any, hexv: Any, go: Callable[[int, bool], None] | None = None) -> None:
    """``g``: ask for an offset in the file the hex view ``hexv`` shows, then call ``go(offset, relative)``
    (``relative``: typed as ``+n`` / ``-n``); by default ``hexv`` goes there and takes the focus.
    An answer that is no offset of the file is said in a toast."""

    def done(text: str | None) -> None:
        if text is None:
            return
        off = parse_offset(text, hexv.file_size, hexv.cursor)
        if off is None or not 0 <= off < max(1, hexv.file_size):
            app.notify(f"not an offset in this file: {safe_str(text, 40)}", severity="warning", markup=False)
            return
        if go is not None:
            go(off, text.strip()[:1] in ("+", "-"))
        else:
            hexv.goto(off)
            hexv.focus()

    app.push_screen(Prompt("Go to offset", "0x1a40, 6720, +64, end, 50%",
                           hint=f"file size {hexv.file_size:,} (0x{hexv.file_size:x})"), done)
