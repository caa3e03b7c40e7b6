"""The diff viewer's keys beyond the diff (issue 15, points 14 and 17): help, search, go to, statistics and
problems on both sides; hex panes that move together, mark the bytes that differ, jump to the next one and
name the owner under each cursor. Pilot tests on hand-built documents and the bundled files."""

from __future__ import annotations

import asyncio
import dataclasses
import os

import numpy as np
from rich.text import Text

from onemodel_viewer.format.document import Document
from onemodel_viewer.format.storage import BytesStorage
from onemodel_viewer.tui.diff.app import make_diff_app
from onemodel_viewer.tui.diff.tree import DiffTree
from onemodel_viewer.tui.screens.help import HelpScreen
from onemodel_viewer.tui.hex.hex_view import HexView
from onemodel_viewer.tui.screens.problems import ProblemsScreen
from onemodel_viewer.tui.screens.search_results import SearchResults
from onemodel_viewer.tui.widgets.stats_panel import StatsPanel

from test_diff_analysis import base_model, replace_graph, replace_init, tensor  # noqa: E402 - sibling test module
from test_diff_tui import _docs  # noqa: E402
from conftest import wait_for_workers  # noqa: E402 - the shared Pilot helpers

VALID = os.path.join(os.path.dirname(__file__), os.pardir, "testdata", "valid")


def _big_docs(changes=(100, 3000)):
    """A 4 KiB tensor ``big`` changed at the bytes ``changes`` (and nothing else)."""
    m = base_model()
    big = tensor("big", np.arange(1024, dtype=np.float32), 1)
    m = replace_graph(m, initializers=m.graph.initializers + (big,))
    data = bytearray(big.raw().tobytes())
    for c in changes:
        data[c] ^= 0x01
    m2 = replace_init(m, len(m.graph.initializers) - 1, dataclasses.replace(big, storage=BytesStorage(bytes(data))))
    return Document("a.onemodel", "onemodel", 1, model=m), Document("b.onemodel", "onemodel", 1, model=m2)


def _added_docs():
    """B has a tensor ``extra`` that A has not."""
    m = base_model()
    extra = tensor("extra", np.arange(64, dtype=np.float32), 1)
    m2 = replace_graph(m, initializers=m.graph.initializers + (extra,))
    return Document("a.onemodel", "onemodel", 1, model=m), Document("b.onemodel", "onemodel", 1, model=m2)


async def _settle(app, pilot):
    await wait_for_workers(app)
    await pilot.pause()


def _select(app, where: str):
    dn = next(n for n in app.result.root.walk() if n.where == where)
    assert app.query_one(DiffTree).reveal(dn)
    return dn


def _views(app):
    return app.query_one("#hex-a", HexView), app.query_one("#hex-b", HexView)


def _subtitle(app, side: str) -> str:
    s = app.query_one("#hexbox-" + side).border_subtitle
    return Text.from_markup(s).plain if isinstance(s, str) else s.plain if s is not None else ""


def test_help_screen_lists_the_diff_keys():
    """`?` did nothing in diff mode."""
    async def run():
        app = make_diff_app(*_docs())
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            keys = [k for k, _ in app.screen.keys]
            for k in ("n / N", "d / D", "l", "/", "g", "s", "p"):
                assert k in keys, k
            assert any(name == "differs" for name, _, _ in app.screen.colours)
            await pilot.press("escape")
            await pilot.pause()
            assert not isinstance(app.screen, HelpScreen)

    asyncio.run(run())


def test_search_finds_entries_of_either_side():
    """`/` did nothing in diff mode; a name only in B (added) or only in A (removed) is found too."""
    async def run():
        app = make_diff_app(os.path.join(VALID, "showcase.onemodel"), os.path.join(VALID, "external.onemodel"))
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            tree = app.query_one(DiffTree)
            assert app._search_index is not None  # indexed in a thread once the structure was matched
            await pilot.press("slash")
            await pilot.pause()
            await pilot.press(*"ext_w", "enter")
            await pilot.pause()
            dn = tree.cursor_node.data
            assert dn.where == 'graph.initializers["ext_w"]' and dn.status == "added"
            assert app.search_matches and app.search_matches[0][1].startswith("+ tensor ext_w")
            assert app.current_entry is dn  # the detail pane shows it
            await pilot.press("slash")
            await pilot.pause()
            await pilot.press(*"embed.", "enter")
            await pilot.pause()
            n = len(app.search_matches)
            assert n > 2 and tree.cursor_node.data.status == "removed"
            first = tree.cursor_node.data
            await pilot.press("right_square_bracket")
            await pilot.pause()
            assert tree.cursor_node.data is not first and app.match_index == 1
            await pilot.press("left_square_bracket")
            await pilot.pause()
            assert tree.cursor_node.data is first
            await pilot.press("F")
            await pilot.pause()
            assert isinstance(app.screen, SearchResults) and len(app.screen.matches) == n
            assert all("in A only" in why for _, _, why in app.screen.matches)

    asyncio.run(run())


def test_search_reaches_entries_hidden_by_the_filter():
    """A match on an equal entry while `f` hides equal entries: the filter is lifted to show it."""
    async def run():
        app = make_diff_app(os.path.join(VALID, "showcase.onemodel"), os.path.join(VALID, "showcase.onnx"))
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            tree = app.query_one(DiffTree)
            await pilot.press("f")
            await pilot.pause()
            assert tree.only_differences and not tree.root.children  # equal files: nothing left
            assert app.search("embed.lookup") == 1
            await pilot.pause()
            assert tree.cursor_node.data.where.startswith("graph.nodes") and not tree.only_differences
            assert "in A and B" in app._search_why[0]

    asyncio.run(run())


def test_goto_moves_both_panes_when_locked_and_one_when_not():
    """`g` did nothing in diff mode."""
    async def run():
        app = make_diff_app(*_big_docs())
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            a, b = _views(app)
            a.focus()
            await pilot.press("g")
            await pilot.pause()
            await pilot.press(*"0x40", "enter")
            await pilot.pause()
            assert (a.cursor, b.cursor) == (0x40, 0x40)
            await pilot.press("g", *"+16", "enter")
            await pilot.pause()
            assert (a.cursor, b.cursor) == (0x50, 0x50)
            await pilot.press("l")  # unlock
            await pilot.pause()
            await pilot.press("g", *"0x10", "enter")
            await pilot.pause()
            assert (a.cursor, b.cursor) == (0x10, 0x50)
            assert "unlocked" in _subtitle(app, "a")

    asyncio.run(run())


def test_cursor_and_scroll_move_together_until_unlocked():
    """The two hex panes did not move together."""
    async def run():
        app = make_diff_app(*_big_docs())
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            _select(app, 'graph.initializers["big"]')
            await _settle(app, pilot)
            a, b = _views(app)
            start = (a.cursor, b.cursor)
            a.focus()
            await pilot.press("right", "right", "down")
            await pilot.pause()
            step = 2 + a.bytes_per_line
            assert (a.cursor, b.cursor) == (start[0] + step, start[1] + step)
            top = b.scroll_offset.y
            a.scroll_to(y=a.scroll_offset.y + 20, animate=False, immediate=True)
            await pilot.pause()
            assert b.scroll_offset.y == top + 20
            await pilot.press("l")
            await pilot.press("right")
            await pilot.pause()
            assert (a.cursor, b.cursor) == (start[0] + step + 1, start[1] + step)
            a.scroll_to(y=a.scroll_offset.y - 5, animate=False, immediate=True)
            await pilot.pause()
            assert b.scroll_offset.y == top + 20

    asyncio.run(run())


def test_differing_bytes_are_marked_and_the_cursor_is_on_one():
    """The whole element was highlighted, not the byte that differs."""
    async def run():
        app = make_diff_app(*_docs())
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            a, b = _views(app)
            # element 5 (bytes 20..23) differs in its sign bit: byte 23; the cursor is on it, the element highlighted
            assert (a.cursor, b.cursor) == (23, 23)
            assert a.highlight == b.highlight == (20, 24)
            assert [o for o in range(a.file_size) if a.differs_at(o)] == [23]
            assert [o for o in range(b.file_size) if b.differs_at(o)] == [23]
            styles = a.swatches()
            line = a.render_line(23 // a.bytes_per_line - int(a.scroll_offset.y))
            hexes = [s for s in line if s.text in ("a0", "40")]
            marked = [s.text for s in hexes if s.style is not None and s.style.underline]
            assert marked == ["40"], [(s.text, s.style) for s in hexes]
            assert styles["differs"].underline
            assert "≠" in _subtitle(app, "a") and "≠" in _subtitle(app, "b")

    asyncio.run(run())


def test_owner_named_under_each_cursor():
    """Neither pane said what the byte under its cursor belongs to."""
    async def run():
        app = make_diff_app(*_docs())
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            for side in "ab":
                assert _subtitle(app, side).startswith("0x17 ≠  tensor w +23 [1,1] byte 4/4"), _subtitle(app, side)
            a, _ = _views(app)
            a.focus()
            await pilot.press("left", "left", "left", "left")
            await pilot.pause()
            assert _subtitle(app, "b").startswith("0x13  tensor w +19 [1,0] byte 4/4")
            assert "≠" not in _subtitle(app, "b")

    asyncio.run(run())


def test_next_and_previous_differing_byte():
    """No key went to the next differing byte."""
    async def run():
        app = make_diff_app(*_big_docs((100, 3000)))
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            _select(app, 'graph.initializers["big"]')
            await _settle(app, pilot)
            a, b = _views(app)
            assert a.cursor == 100
            a.focus()
            await pilot.press("d")
            await _settle(app, pilot)
            assert (a.cursor, b.cursor) == (3000, 3000)
            assert a.highlight is None and b.highlight is None  # no element left highlighted elsewhere
            line = a.cursor // a.bytes_per_line
            top = int(a.scroll_offset.y)
            assert top <= line < top + a.scrollable_content_region.height - 1  # shown, not on the last row
            await pilot.press("d")
            await _settle(app, pilot)
            assert (a.cursor, b.cursor) == (3000, 3000)  # no more: stays
            await pilot.press("D")
            await _settle(app, pilot)
            assert (a.cursor, b.cursor) == (100, 100)

    asyncio.run(run())


def test_added_tensor_leaves_pane_a_empty():
    """For an added item pane A stayed at offset 0 of whatever it showed before, as if those bytes matched."""
    async def run():
        app = make_diff_app(*_added_docs())
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            a, b = _views(app)
            _select(app, 'graph.initializers["w"]')
            await _settle(app, pilot)
            assert a.storage is not None
            _select(app, 'graph.initializers["extra"]')
            await _settle(app, pilot)
            assert a.storage is None and b.storage is not None and b.file_size == 256
            assert "not here" in str(app.query_one("#hexbox-a").border_title)
            await pilot.press("g", *"0x10", "enter")  # g goes to the pane that has bytes
            await pilot.pause()
            assert b.cursor == 0x10
            _select(app, 'graph.initializers["w"]')
            await _settle(app, pilot)
            assert a.storage is not None and a.file_size == 48

    asyncio.run(run())


def test_stats_of_both_sides():
    """`s` did nothing in diff mode."""
    async def run():
        app = make_diff_app(*_docs())
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            row = app.query_one("#stats-row")
            assert row.has_class("hidden")
            await pilot.press("s")
            await _settle(app, pilot)
            pa, pb = app.query_one("#stats-a", StatsPanel), app.query_one("#stats-b", StatsPanel)
            assert not row.has_class("hidden") and pa.state == pb.state == "done"
            assert "min 0 " in pa.summary_text() and "min -5 " in pb.summary_text()  # B's element 5 is -5
            _select(app, "graph.nodes[5]")
            await _settle(app, pilot)
            assert row.has_class("hidden")
            _select(app, 'graph.initializers["q"]')
            await _settle(app, pilot)
            assert not row.has_class("hidden") and "max 7" in pa.summary_text()

    asyncio.run(run())


def test_problems_of_both_files():
    """`p` did nothing in diff mode."""
    async def run():
        app = make_diff_app(os.path.join(VALID, "out_of_order.onemodel"), os.path.join(VALID, "showcase.onemodel"))
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            await pilot.press("p")
            await pilot.pause()
            assert isinstance(app.screen, ProblemsScreen)
            assert app.screen.files == ["A"] and app.screen.records[0].code == "out-of-order"
            finding = app.screen.records[0]
            await pilot.press("enter")
            await pilot.pause()
            a, _ = _views(app)
            if finding.offset is not None:
                assert a.cursor == finding.offset

    asyncio.run(run())


def test_no_horizontal_scrollbar_in_the_hex_panes():
    """At 120x40 a horizontal scrollbar ate a row of each hex pane."""
    async def run():
        app = make_diff_app(os.path.join(VALID, "showcase.onemodel"), os.path.join(VALID, "external.onemodel"))
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            for hv in _views(app):
                assert not hv.show_horizontal_scrollbar
                assert hv.scrollable_content_region.height == hv.size.height

    asyncio.run(run())


def _shifted_docs(shift=5):
    """The 4 KiB tensor ``big`` of :func:`_big_docs`, at file offset 0 in A and ``shift`` in B (changed at byte 100)."""
    a, b = _big_docs((100,))
    m2 = b.model
    big = m2.graph.initializers[-1]
    data = big.storage.read(0, big.length)
    moved = dataclasses.replace(big, file_offset=shift, storage=BytesStorage(b"\xee" * shift + data))
    m2 = replace_init(m2, len(m2.graph.initializers) - 1, moved)
    return a, Document("b.onemodel", "onemodel", 1, model=m2)


def _cursor_cell(view: HexView) -> tuple[int, int, str]:
    """Row and column of the first cell drawn in the cursor's colour, and its text."""
    cursor_bg = view.swatches()["cursor"].bgcolor
    for y in range(view.scrollable_content_region.height):
        x = 0
        for seg in view.render_line(y):
            if seg.style is not None and seg.style.bgcolor == cursor_bg and seg.text.strip():
                return y, x, seg.text
            x += seg.cell_length
    raise AssertionError("no cursor drawn")


def test_rows_line_up_when_the_tensor_is_at_other_offsets():
    """Each pane drew rows from a multiple of its line width: a tensor 5 bytes further on in B had its bytes
    5 columns to the right of A's, the same element byte in another column (and row) of each pane."""
    async def run():
        app = make_diff_app(*_shifted_docs(5))
        async with app.run_test(size=(120, 40)) as pilot:
            await _settle(app, pilot)
            _select(app, 'graph.initializers["big"]')
            await _settle(app, pilot)
            a, b = _views(app)
            assert (a.cursor, b.cursor) == (100, 105)
            assert 5 % a.bytes_per_line and a.bytes_per_line == b.bytes_per_line
            ya, xa, text_a = _cursor_cell(a)
            yb, xb, text_b = _cursor_cell(b)
            assert (ya, xa) == (yb, xb), ((ya, xa, text_a), (yb, xb, text_b))
            assert text_a == f"{a.storage.read(100, 1)[0]:02x}" and text_b == f"{b.storage.read(105, 1)[0]:02x}"
            assert a.offset_at(xa, ya) == a.cursor and b.offset_at(xb, yb) == b.cursor  # a click hits what is drawn
            a.focus()  # moving together keeps them lined up, past a page too
            await pilot.press("down", "down", "right")
            await pilot.pause()
            assert _cursor_cell(a)[:2] == _cursor_cell(b)[:2]
            await pilot.press("pagedown", "pagedown", "end")
            await pilot.pause()
            assert _cursor_cell(a)[:2] == _cursor_cell(b)[:2]
            assert b.cursor - a.cursor == 5
            # the offset column shows real file offsets: B's row of its byte 105+... starts at an offset 5 past A's
            row_a = "".join(s.text for s in a.render_line(_cursor_cell(a)[0])).split()
            row_b = "".join(s.text for s in b.render_line(_cursor_cell(b)[0])).split()
            assert int(row_b[0].lstrip("•"), 16) - int(row_a[0].lstrip("•"), 16) == 5

    asyncio.run(run())
