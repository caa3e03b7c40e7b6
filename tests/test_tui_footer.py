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
