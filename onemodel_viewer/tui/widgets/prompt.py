"""A one-line prompt (go to offset, search, export, save as...): returns the text, or None when cancelled.

Keys typed ahead (fast typing, a terminal multiplexer sending keys, keys sent in one burst) reach
the prompt in the order typed. Textual gets in their way three times:

- a key goes to the widget focused *when it arrives*: keys sent together with the key that opens
  the prompt went to the widget of the screen below, and came back up to the app after the prompt
  had opened (only those bound to something reached it);
- keys that arrive after the prompt is pushed but before its input has the focus go to the prompt
  screen itself;
- a key binding is looked up only once the key has bubbled up to the app, one message queue per
  level: with the input focused, the characters of a burst are typed at once while ``ctrl+u`` or
  ``enter`` before them acts later (``ctrl+u`` erased the path typed after it, ``enter`` answered
  with nothing).

So the prompt's input acts on its own keys and on its bindings' (``ctrl+u``, ``backspace``,
``enter``, ``escape``...) in its own queue, one key after the other. Until the input has the focus,
the keys the app sends to the prompt screen are held as they are sent (``Prompt.post_message``: in
the order they came, after the app's priority bindings had their turn), and :func:`take_stray_key`
(the app's ``on_key``) holds those coming up from the screen below, to be typed first. The input
types the held keys as it takes its focus event; keys sent to it once it has the focus queue behind
that event. Left out: a key of the screen below that comes up only after the input has typed the
held keys is typed then, after keys sent later.
"""

from __future__ import annotations

from typing import Any, Callable

from textual import events
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from .safe import safe_str


class PromptInput(Input):
    """The prompt's input: each key acts when the input takes it from its queue, bindings included."""

    def __init__(self, prompt: "Prompt", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.prompt = prompt

    async def on_key(self, event: events.Key) -> None:
        if await self.type_key(event.key, event.character):
            event.stop()
            event.prevent_default()  # not Input's own handling

    def on_focus(self) -> None:
        self.call_next(self._type_held)  # after Input's own focus handling (it selects the value)

    async def _type_held(self) -> None:
        while (key := self.prompt.next_held()) is not None:
            await self.type_key(*key)
        self.prompt.ready = True  # no await since the last look: a key sent now comes after them

    async def type_key(self, key: str, character: str | None) -> bool:
        """Act on one key as Textual would once it reached the app: the binding of the input, of the
        prompt or of the screen first, else a printable character typed. Returns False for neither."""
        active = self.screen.active_bindings.get(key)
        if active is not None and active.enabled and not active.binding.priority:  # priority ones: the app's, already tried
            await self.app.run_action(active.binding.action, active.node)
            return True
        if character is None or not character.isprintable():
            return False
        if self.selection.is_empty:
            self.insert_text_at_cursor(character)
        else:
            self.replace(character, *self.selection)
        return True


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
        self.ready = False
        """The input has the focus and has typed the keys held before."""
        self._strays: list[tuple[str, str | None]] = []
        """Keys sent to the screen below before the prompt opened (typed before those in ``_held``)."""
        self._held: list[tuple[str, str | None]] = []

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, markup=False)
            yield PromptInput(self, value=self._value, placeholder=self._placeholder, id="prompt-input")
            if self._hint:
                yield Label(self._hint, markup=False)

    def on_mount(self) -> None:
        self.query_one(PromptInput).focus()

    def post_message(self, message: Message) -> bool:
        if isinstance(message, events.Key) and not self.ready:  # sent here while nothing had the focus
            self.hold(message)
            return True
        return super().post_message(message)

    def hold(self, event: events.Key, stray: bool = False) -> None:
        """Keep ``event``'s key for the input (``stray``: it was sent to the screen below)."""
        (self._strays if stray else self._held).append((event.key, event.character))

    def next_held(self) -> tuple[str, str | None] | None:
        """The earliest key held, taken off; None when none is left."""
        for keys in (self._strays, self._held):
            if keys:
                return keys.pop(0)
        return None

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


async def take_stray_key(app: App, event: events.Key) -> bool:
    """Put into the open prompt a key that came up to the app while the prompt is open.

    Called from the app's ``on_key`` (before Textual's own key handling, which is then skipped): such
    a key was sent to a widget of the screen below before the prompt opened (or is one the prompt's
    input passed on: neither bound nor printable, it is dropped again).
    """
    prompt = app.screen
    if not isinstance(prompt, Prompt):
        return False
    event.stop()
    event.prevent_default()
    if not prompt.ready:
        prompt.hold(event, stray=True)
    else:
        await prompt.query_one(PromptInput).type_key(event.key, event.character)
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
