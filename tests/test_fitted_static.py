"""FittedStatic: a Static as tall as its text (the status and statistics lines)."""

from __future__ import annotations

from rich.text import Text
from textual.app import App, ComposeResult

from onemodel_viewer.tui.widgets.fitted_static import FittedStatic


class _One(App):
    CSS = "#nowrap { text-wrap: nowrap; } FittedStatic { padding: 0 1; }"

    def compose(self) -> ComposeResult:
        yield FittedStatic(Text("one"), id="wrap", max_rows=4)
        yield FittedStatic(Text("a\nb\nc"), id="nowrap")


async def test_height_follows_each_update_and_the_width():
    """The rows of the text at the widget's width: wrapped words, or its lines when it does not wrap;
    at most max_rows; after two updates in one turn, the second's (an auto height kept the first's)."""
    app = _One()
    async with app.run_test(size=(40, 12)) as pilot:
        wrap, nowrap = app.query_one("#wrap", FittedStatic), app.query_one("#nowrap", FittedStatic)
        await pilot.pause()
        assert (wrap.region.height, nowrap.region.height) == (1, 3)
        wrap.update(Text("word " * 20))  # 100 cells at 38: three rows
        nowrap.update(Text("x" * 100 + "\ny"))  # cut, not wrapped: two rows
        await pilot.pause()
        assert (wrap.region.height, nowrap.region.height) == (3, 2)
        wrap.update(Text("word " * 60))
        await pilot.pause()
        assert wrap.region.height == 4  # max_rows
        wrap.update(Text("word " * 20))
        wrap.update(Text("short"))
        await pilot.pause()
        assert wrap.region.height == 1
        wrap.update(Text("word " * 20))
        await pilot.pause()
        await pilot.resize_terminal(80, 12)
        await pilot.pause()
        assert wrap.region.height == 2  # 100 cells at 78
