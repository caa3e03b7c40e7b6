"""The viewer's footer (tui/footer.ScreenFooter): keys rebuilt only when what they show changed."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Label

from onemodel_viewer.tui.widgets.footer import ScreenFooter


class EarlyFooter(ScreenFooter):
    """Recomposed once before its screen's bindings reach it (Footer.compose then draws no key)."""

    async def on_mount(self) -> None:
        self.drawn_early = len(self.children)
        await self.recompose()


class FooterApp(App):
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("x", "bell", "Ring")]

    def compose(self) -> ComposeResult:
        yield Label("body")
        yield EarlyFooter()


async def test_a_recompose_before_the_bindings_came_does_not_leave_the_footer_empty():
    """The footer skips a rebuild when the keys it would show are those it showed last; a rebuild
    asked for before its bindings were ready draws no key, and must not count as having shown them."""
    app = FooterApp()
    async with app.run_test(size=(60, 5)) as pilot:
        footer = app.query_one(EarlyFooter)
        for _ in range(200):
            if footer.children:
                break
            await pilot.pause()
        assert footer.drawn_early == 0
        assert [k.key for k in footer.children if hasattr(k, "key")] == ["q", "x"]


class TogglingApp(App):
    """Its ``x`` key shown or hidden at will: each change rebuilds the footer's keys."""

    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("q", "quit", "Quit"), Binding("x", "bell", "Ring")]
    ring_shown = True

    def compose(self) -> ComposeResult:
        yield Label("body")
        yield ScreenFooter()

    def check_action(self, action: str, parameters: tuple) -> bool | None:
        return self.ring_shown if action == "bell" else True


async def test_keys_a_rebuild_replaced_are_freed():
    """Regression (the viewer soak's memory growth, ~2.7 MiB per file opened): every footer rebuild
    left its old keys alive: each key is data-bound to the footer's ``compact`` and Textual drops a
    removed key's watcher only when ``compact`` changes, which it never does. Over a long session the
    footer's watcher list held every key (with its styles and rendered lines) it ever showed."""
    import gc
    import weakref

    from textual.widgets._footer import FooterKey

    app = TogglingApp()
    async with app.run_test(size=(60, 5)) as pilot:
        footer = app.query_one(ScreenFooter)
        gone: list[weakref.ref] = []
        for i in range(12):
            for _ in range(200):
                if any(isinstance(k, FooterKey) for k in footer.children):
                    break
                await pilot.pause()
            gone += [weakref.ref(k) for k in footer.children if isinstance(k, FooterKey)]
            app.ring_shown = i % 2 == 1
            app.refresh_bindings()
            for _ in range(200):
                await pilot.pause()
                if len([k for k in footer.children if isinstance(k, FooterKey)]) == (2 if app.ring_shown else 1) \
                        and not any(r() in footer.children for r in gone if r() is not None):
                    break
        await pilot.pause()
        live = {id(k) for k in footer.children}
        assert len(gone) >= 12  # every round rebuilt the keys
        watched = getattr(footer, "__watchers")["compact"]
        assert all(id(node) in live for node, _ in watched)
        gc.collect()
        still = [r for r in gone if r() is not None and id(r()) not in live]
        assert still == []
