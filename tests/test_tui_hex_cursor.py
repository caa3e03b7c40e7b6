"""The hex pane's cursor messages can reach the app after the pane that sent them is gone."""

from __future__ import annotations

from pathlib import Path

from onemodel_viewer.tui.hex.hex_view import HexView

SHOWCASE = Path(__file__).resolve().parent.parent / "testdata" / "valid" / "showcase.onemodel"


async def test_cursor_move_from_a_removed_hex_pane_is_ignored(viewer):
    """Regression: a CursorMoved still queued while the app closed (its screen's widgets already
    removed) looked the hex pane up again and raised NoMatches ("No nodes match 'HexView' on
    Screen(id='_default')"), failing the background-job test under load."""
    async with viewer(SHOWCASE) as pilot:
        app = pilot.app
        hexv = app.query_one(HexView)
        await hexv.remove()
        app.post_message(HexView.CursorMoved(hexv, hexv.cursor + 5))
        await viewer.settle(pilot)
        assert app._exception is None


async def test_cursor_move_shows_the_position(viewer):
    """The handler still does its job for the live pane: the byte inspector follows the cursor."""
    async with viewer(SHOWCASE) as pilot:
        app = pilot.app
        hexv = app.query_one(HexView)
        seen = []
        hexv.show_position = seen.append
        app.post_message(HexView.CursorMoved(hexv, 7))
        await viewer.settle(pilot)
        assert seen == [7]
