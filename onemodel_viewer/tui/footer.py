"""The viewer's footer: Textual's, not rebuilt while its screen is covered by another."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class ScreenFooter(Footer):
    """Textual's :class:`Footer` rebuilds its keys on every binding change of its screen, also when
    that screen has just been covered by another (its focused widget loses focus): ~50 ms of
    mounting keys nobody sees, inside the key press that opened the other screen. This one waits
    until its screen is on top again (the focus coming back changes the bindings once more)."""

    def bindings_changed(self, screen: Screen) -> None:
        if screen is self.screen and self.app.screen is not screen:
            return
        super().bindings_changed(screen)
