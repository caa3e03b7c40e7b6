"""Pilot tests of what tripped a new user in the viewer's first minutes (issue 15), one behaviour each."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

import pytest
from rich.text import Text

from onemodel_viewer.tui.app import make_app
from onemodel_viewer.tui.detail_pane import DetailPane
from onemodel_viewer.tui.hex_view import HexView
from onemodel_viewer.tui.safe import fit_text
from onemodel_viewer.tui.structure_tree import StructureTree

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"
HOSTILE = ROOT / "testdata" / "hostile"
SHOWCASE = VALID / "showcase.onemodel"


def aio(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return wrapper


def need(path: Path) -> Path:
    if not path.exists():
        pytest.skip(f"{path.name} not generated yet")
    return path


async def settle(pilot) -> None:
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


def screen_lines(app) -> list[str]:
    """The screen as plain text lines."""
    update = app.screen._compositor.render_update(full=True)
    return ["".join(s.text for s in line) for line in update.strips]


def visible_tree_rows(app) -> list[str]:
    tree = app.query_one(StructureTree)
    region = tree.content_region
    return [line[region.x:region.right] for line in screen_lines(app)[region.y:region.bottom]]


# ----------------------------------------------------------------------------- 1. → / ←

@aio
async def test_right_expands_left_collapses_and_goes_to_parent():
    """→/← scrolled the tree sideways (rows lost their first column) instead of expanding/collapsing."""
    app = make_app(str(need(SHOWCASE)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tree = app.query_one(StructureTree)
        tree.focus()
        # to a collapsed group: the graph's ``inputs``
        graph = next(n for n in tree.root.children if n.data.kind == "graph")
        inputs = graph.children[0]
        tree.move_cursor(inputs)
        await pilot.pause()
        assert not inputs.is_expanded
        await pilot.press("right")
        await pilot.pause()
        assert inputs.is_expanded and tree.scroll_offset.x == 0
        await pilot.press("right")  # expanded: to its first child
        await pilot.pause()
        assert tree.cursor_node is inputs.children[0]
        await pilot.press("left")  # a leaf: to its parent
        await pilot.pause()
        assert tree.cursor_node is inputs
        await pilot.press("left")
        await pilot.pause()
        assert not inputs.is_expanded and tree.scroll_offset.x == 0


# ----------------------------------------------------------------------------- 2. cut text

def test_fit_text_cuts_names_never_numbers():
    """Rows read ``If If_0 (2 grap`` and ``86`` for 860 nodes: text was cut with no ellipsis."""
    t = Text("graph ", style="bold")
    t.append("a_long_graph_name_here")
    t.append("  860 nodes", style="dim")
    out = fit_text(t, 22).plain
    assert out.endswith("860 nodes") and "…" in out and len(out) <= 22
    op = Text("If", style="bold")
    op.append(" ")
    op.append("If_0_with_a_long_name")
    op.append(" (2 graphs)", style="dim")
    out = fit_text(op, 20).plain
    assert out.endswith("(2 graphs)") and "…" in out and len(out) <= 20


@aio
async def test_80_columns_info_bar_keeps_the_verdict_and_tree_rows_end_cleanly():
    """At 80 columns the top bar lost ``· 1 problem`` and rows showed ``opset 1`` for opset 16."""
    app = make_app(str(need(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel")))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        top = screen_lines(app)[0]
        assert "1 problem" in top
        tree = app.query_one(StructureTree)
        full = {n.data.label.plain for n in tree._tree_lines and [line.node for line in tree._tree_lines]}
        for row in visible_tree_rows(app):
            text = row.strip()
            if not text:
                continue
            label = text.lstrip("│├└ ▶▼").rstrip()
            # either the whole label or one cut with an ellipsis
            assert label in full or "…" in label, row
    app = make_app(str(need(SHOWCASE)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "valid" in screen_lines(app)[0]
        assert app.query_one(StructureTree).scroll_offset.x == 0
        assert app.query_one(StructureTree).virtual_size.width <= app.query_one(StructureTree).size.width


# ----------------------------------------------------------------------------- 3. pane width

@aio
async def test_tree_pane_can_be_widened_and_maximised():
    """The tree pane had a fixed 32% width (max 70): rows read ``If If_0 (2 grap`` at 80x24."""
    app = make_app(str(need(SHOWCASE)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        tree = app.query_one(StructureTree)
        before = tree.outer_size.width
        await pilot.press("greater_than_sign", "greater_than_sign")
        await pilot.pause()
        assert tree.outer_size.width == before + 8
        await pilot.press("less_than_sign")
        await pilot.pause()
        assert tree.outer_size.width == before + 4
    app = make_app(str(need(SHOWCASE)))
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        tree = app.query_one(StructureTree)
        app.screen.maximize(tree)
        await pilot.pause()
        assert tree.outer_size.width == 200


# ----------------------------------------------------------------------------- 4. start-up cursor

@aio
async def test_start_up_cursor_is_on_the_row_the_detail_shows():
    """The detail showed "model" while no row was highlighted, and the first ↓ jumped to "header"."""
    app = make_app(str(need(SHOWCASE)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        tree = app.query_one(StructureTree)
        assert tree.cursor_node is not None and tree.cursor_node.data.kind == "model"
        assert app.current is tree.cursor_node.data
        model_line = tree.cursor_line
        await pilot.press("down")
        await pilot.pause()
        assert tree.cursor_line == model_line + 1
        assert app.current is tree.cursor_node.data


# ----------------------------------------------------------------------------- 8. broken files

@aio
async def test_broken_file_opens_on_its_first_problem():
    """A broken file whose manifest parses opened on the normal model view."""
    app = make_app(str(need(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel")))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        tree = app.query_one(StructureTree)
        node = tree.cursor_node
        assert node is not None and node.data.kind == "problem"
        assert node.parent.is_expanded
        problem = app.document.problems[0]
        assert node.data.obj is problem
        assert any(problem.message[:30] in line for line in app.query_one(DetailPane).plain_lines())
        assert app.query_one(HexView).cursor == problem.offset


@aio
async def test_broken_manifest_shows_the_message_not_press_p():
    """When the manifest itself was broken, the detail pane said ``1 problem(s): press p``."""
    app = make_app(str(need(HOSTILE / "Malformed-manifest-trailing-comma.onemodel")))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.document.model is None
        lines = app.query_one(DetailPane).plain_lines()
        assert not any("press p" in line for line in lines)
        assert any(app.document.problems[0].message[:30] in line for line in lines)


# ----------------------------------------------------------------------------- 20. small ones

@aio
async def test_cancel_with_nothing_running_says_so():
    """``c`` with no statistics running did nothing at all."""
    app = make_app(str(need(SHOWCASE)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert any("nothing to cancel" in str(n.message) for n in app._notifications)


# ----------------------------------------------------------------------------- 9. messages wrap

@aio
async def test_problem_messages_wrap_in_the_problems_table():
    """Messages were cut in the problems table with no hint that they scroll."""
    app = make_app(str(need(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel")))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)
        screen = " ".join(" ".join(line.split()) for line in screen_lines(app))
        words = app.document.problems[0].message.split()
        # every word of the message is on the screen, in order, within 80 columns
        pos = 0
        for w in words:
            pos = screen.find(w, pos)
            assert pos >= 0, w


@aio
async def test_stats_failure_wraps_and_does_not_promise_a_reload_fixes_it(monkeypatch):
    """``statistics failed: … (r: reload the file)`` was cut, and a reload does not fix a corrupt file."""
    import onemodel_viewer.analysis.stats as stats_mod
    from onemodel_viewer.format.errors import FormatError, Kind
    from onemodel_viewer.tui.stats_panel import StatsPanel

    tail = "and this is the end of a long message"

    def broken(tensor, **kw):
        raise FormatError(Kind.MALFORMED, "tensor", None, "the bytes of this tensor cannot be decoded " * 3 + tail)

    monkeypatch.setattr(stats_mod, "compute_stats", broken)
    app = make_app(str(need(SHOWCASE)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.reveal(app.document.model.graph.initializers[0].where)
        await settle(pilot)
        panel = app.query_one(StatsPanel)
        assert panel.state == "error"
        assert "(r: reload the file)" not in panel.summary_text()
        r = panel.content_region
        shown = " ".join(" ".join(line[r.x:r.right].split()) for line in screen_lines(app)[r.y:r.bottom])
        assert tail in shown
