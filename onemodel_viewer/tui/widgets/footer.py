"""The viewer's footer: Textual's, not rebuilt while its screen is covered by another, nor for the same keys,
and not keeping the keys it replaced."""

from __future__ import annotations

from textual.screen import Screen
from textual.widgets import Footer


class ScreenFooter(Footer):
    """Textual's :class:`Footer` rebuilds its keys on every binding change of its screen, also when
    that screen has just been covered by another (its focused widget loses focus): ~50 ms of
    mounting keys nobody sees, inside the key press that opened the other screen. This one waits
    until its screen is on top again (the focus coming back changes the bindings once more), and
    rebuilds only when what its keys show changed: the viewer's start-up changed the bindings three
    times with the same keys each time (two rebuilds of 8 keys: ~1/8 of the app's start-up CPU)."""

    _shown: tuple | None = None

    def bindings_changed(self, screen: Screen) -> None:
        if screen is self.screen and self.app.screen is not screen:
            return
        super().bindings_changed(screen)

    def _keys(self) -> tuple:
        """What :meth:`Footer.compose` draws: each active binding, whether it is enabled, its tooltip
        and key display, and the footer's own settings."""
        app = self.app
        return (self.show_command_palette, self.combine_groups, tuple(
            (binding, enabled, tooltip, app.get_key_display(binding))
            for (_, binding, enabled, tooltip) in self.screen.active_bindings.values()
        ))

    async def recompose(self) -> None:
        keys = self._keys()
        if keys == self._shown and self.children:  # no children: composed before its bindings came
            return
        self._shown = keys
        await super().recompose()
        self.drop_stale_watchers()

    def drop_stale_watchers(self) -> None:
        """Forget the watchers of removed keys (each ``FooterKey`` is bound to the footer's ``compact``).

        Textual (8.2) drops a closed watcher only when the watched reactive changes, and ``compact``
        never does: every rebuild left its keys (with their styles and rendered strips) alive in the
        footer's watcher list for as long as the app ran (the soak's memory growth: 14 keys per
        rebuild, several rebuilds per file opened).
        """
        watchers = getattr(self, "__watchers", None)
        if not watchers:
            return
        for pairs in watchers.values():
            pairs[:] = [(node, callback) for node, callback in pairs
                        if not (getattr(node, "_closing", False) or getattr(node, "_closed", False))]
