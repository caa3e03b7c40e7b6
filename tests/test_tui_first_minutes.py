"""Pilot tests of what tripped a new user in the viewer's first minutes (issue 15), one behaviour each."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text

from onemodel_viewer.tui.widgets.detail_pane import DetailPane
from onemodel_viewer.tui.hex.hex_view import HexView
from onemodel_viewer.tui.widgets.safe import fit_text
from onemodel_viewer.tui.widgets.structure_tree import StructureTree

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"
HOSTILE = ROOT / "testdata" / "hostile"
SHOWCASE = VALID / "showcase.onemodel"


def screen_lines(app) -> list[str]:
    """The screen as plain text lines."""
    update = app.screen._compositor.render_update(full=True)
    return ["".join(s.text for s in line) for line in update.strips]


def visible_tree_rows(app) -> list[str]:
    tree = app.query_one(StructureTree)
    region = tree.content_region
    return [line[region.x:region.right] for line in screen_lines(app)[region.y:region.bottom]]


# ----------------------------------------------------------------------------- 1. → / ←

async def test_right_expands_left_collapses_and_goes_to_parent(viewer):
    """→/← scrolled the tree sideways (rows lost their first column) instead of expanding/collapsing."""
    async with viewer(SHOWCASE, size=(80, 24)) as pilot:
        app = pilot.app
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


async def test_80_columns_info_bar_keeps_the_verdict_and_tree_rows_end_cleanly(viewer):
    """At 80 columns the top bar lost ``· 1 problem`` and rows showed ``opset 1`` for opset 16."""
    async with viewer(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel", size=(80, 24)) as pilot:
        app = pilot.app
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
    async with viewer(SHOWCASE, size=(80, 24)) as pilot:
        app = pilot.app
        assert "valid" in screen_lines(app)[0]
        assert app.query_one(StructureTree).scroll_offset.x == 0
        assert app.query_one(StructureTree).virtual_size.width <= app.query_one(StructureTree).size.width


async def test_rows_drawn_before_the_scrollbar_appeared_are_fitted_again(viewer):
    """A snapshot showed ``embed.to… 256.0 K``: rows drawn just before an expanded group's vertical
    scrollbar appeared stayed in the tree's line cache (keyed by the widget's width, which the
    scrollbar does not change), fitted to two cells too many, then cut by the scrollbar."""
    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        tree = app.query_one(StructureTree)
        assert not tree.show_vertical_scrollbar
        for node in [n for top in tree.root.children for n in (top, *top.children)]:  # two levels open
            if node.allow_expand:
                tree.populate(node)
                node.expand()
        for y in range(tree.size.height):  # drawn before the layout that brings the scrollbar
            tree.render_line(y)
        await pilot.pause()
        await pilot.pause()
        assert tree.show_vertical_scrollbar
        room = tree.scrollable_content_region.width
        for y in range(tree.size.height):
            drawn = tree.render_line(y).text.rstrip()
            assert len(drawn) <= room, drawn


# ----------------------------------------------------------------------------- 3. pane width

async def test_tree_pane_can_be_widened_and_maximised(viewer):
    """The tree pane had a fixed 32% width (max 70): rows read ``If If_0 (2 grap`` at 80x24."""
    async with viewer(SHOWCASE, size=(80, 24)) as pilot:
        app = pilot.app
        tree = app.query_one(StructureTree)
        before = tree.outer_size.width
        await pilot.press("greater_than_sign", "greater_than_sign")
        await pilot.pause()
        assert tree.outer_size.width == before + 8
        await pilot.press("less_than_sign")
        await pilot.pause()
        assert tree.outer_size.width == before + 4
    async with viewer(SHOWCASE, size=(200, 40)) as pilot:
        app = pilot.app
        tree = app.query_one(StructureTree)
        app.screen.maximize(tree)
        await pilot.pause()
        assert tree.outer_size.width == 200


# ----------------------------------------------------------------------------- 4. start-up cursor

async def test_start_up_cursor_is_on_the_row_the_detail_shows(viewer):
    """The detail showed "model" while no row was highlighted, and the first ↓ jumped to "header"."""
    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        tree = app.query_one(StructureTree)
        assert tree.cursor_node is not None and tree.cursor_node.data.kind == "model"
        assert app.current is tree.cursor_node.data
        model_line = tree.cursor_line
        await pilot.press("down")
        await pilot.pause()
        assert tree.cursor_line == model_line + 1
        assert app.current is tree.cursor_node.data


# ----------------------------------------------------------------------------- 8. broken files

async def test_broken_file_opens_on_its_first_problem(viewer):
    """A broken file whose manifest parses opened on the normal model view."""
    async with viewer(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel", size=(120, 40)) as pilot:
        app = pilot.app
        tree = app.query_one(StructureTree)
        node = tree.cursor_node
        assert node is not None and node.data.kind == "problem"
        assert node.parent.is_expanded
        problem = app.document.problems[0]
        assert node.data.obj is problem
        assert any(problem.message[:30] in line for line in app.query_one(DetailPane).plain_lines())
        assert app.query_one(HexView).cursor == problem.offset


async def test_broken_manifest_shows_the_message_not_press_p(viewer):
    """When the manifest itself was broken, the detail pane said ``1 problem(s): press p``."""
    async with viewer(HOSTILE / "Malformed-manifest-trailing-comma.onemodel", size=(120, 40)) as pilot:
        app = pilot.app
        assert app.document.model is None
        lines = app.query_one(DetailPane).plain_lines()
        assert not any("press p" in line for line in lines)
        assert any(app.document.problems[0].message[:30] in line for line in lines)


# ----------------------------------------------------------------------------- 20. small ones

async def test_cancel_with_nothing_running_says_so(viewer):
    """``c`` with no statistics running did nothing at all."""
    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        await pilot.press("c")
        await pilot.pause()
        assert any("nothing to cancel" in str(n.message) for n in app._notifications)


# ----------------------------------------------------------------------------- 9. messages wrap

async def test_problem_messages_wrap_in_the_problems_table(viewer):
    """Messages were cut in the problems table with no hint that they scroll."""
    async with viewer(HOSTILE / "InvalidModel-cycle-two-nodes.onemodel", size=(80, 24)) as pilot:
        app = pilot.app
        await pilot.press("p")
        await viewer.settle(pilot)
        screen = " ".join(" ".join(line.split()) for line in screen_lines(app))
        words = app.document.problems[0].message.split()
        # every word of the message is on the screen, in order, within 80 columns
        pos = 0
        for w in words:
            pos = screen.find(w, pos)
            assert pos >= 0, w


async def test_stats_failure_wraps_and_does_not_promise_a_reload_fixes_it(viewer, monkeypatch):
    """``statistics failed: … (r: reload the file)`` was cut, and a reload does not fix a corrupt file."""
    import onemodel_viewer.analysis.stats.compute as stats_mod
    from onemodel_viewer.format.errors import FormatError, Kind
    from onemodel_viewer.tui.widgets.stats_panel import StatsPanel

    tail = "and this is the end of a long message"

    def broken(tensor, **kw):
        raise FormatError(Kind.MALFORMED, "tensor", None, "the bytes of this tensor cannot be decoded " * 3 + tail)

    monkeypatch.setattr(stats_mod, "compute_stats", broken)
    async with viewer(SHOWCASE, size=(80, 24)) as pilot:
        app = pilot.app
        app.reveal(app.document.model.graph.initializers[0].where)
        await viewer.settle(pilot)
        panel = app.query_one(StatsPanel)
        assert panel.state == "error"
        assert "(r: reload the file)" not in panel.summary_text()
        r = panel.content_region
        shown = " ".join(" ".join(line[r.x:r.right].split()) for line in screen_lines(app)[r.y:r.bottom])
        assert tail in shown


# ----------------------------------------------------------------------------- 11. bad magic

async def test_bad_magic_is_not_called_onnx_or_onemodel_and_says_what_the_file_starts_with(viewer):
    """A bad-magic file was labelled ``onnx protobuf`` in the hex pane and ``onemodel`` in the top bar."""
    async with viewer(HOSTILE / "Malformed-magic-bad.onemodel", size=(120, 40)) as pilot:
        app = pilot.app
        top = screen_lines(app)[0]
        assert "bad magic" in top and "· onemodel ·" not in top
        assert "onnx" not in str(app.query_one(HexView).border_subtitle)
        assert "onnx" not in app.bytemap.owner_at(0)
        msg = app.document.problems[0].message
        assert "ONEMODEX" in msg and "4f 4e 45 4d 4f 44 45 58" in msg


# ----------------------------------------------------------------------------- 12. colours

async def test_hex_colours_are_readable_in_both_themes_and_padding_is_dim(viewer):
    """Light theme: offsets and padding were white on light grey; dark theme: padding bright white."""
    from textual.color import Color

    from onemodel_viewer.tui.hex.hex_view import MIN_CONTRAST, contrast

    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        for theme in ("textual-dark", "textual-light"):
            app.theme = theme
            await pilot.pause()
            st = app.query_one(HexView).swatches()
            bg = Color.from_rich_color(st["base"].bgcolor)
            fg = Color.from_rich_color(st["base"].color)
            hl = Color.from_rich_color(st["highlight"].bgcolor)
            for name, style in st.items():
                if name in ("base", "highlight"):
                    continue
                c = Color.from_rich_color(style.color)
                on = Color.from_rich_color(style.bgcolor)
                assert contrast(c, on) >= MIN_CONTRAST, (theme, name)
                if name != "cursor":  # a selected byte keeps its colour on the selection's tint
                    assert contrast(c, hl) >= MIN_CONTRAST, (theme, name, "selected")
            pad = Color.from_rich_color(st["padding"].color)
            assert contrast(pad, bg) < contrast(fg, bg), theme  # padding is dimmer than text


async def test_help_legend_shows_the_hex_colours(viewer):
    """The help's colour legend named the colours without showing them."""
    from onemodel_viewer.tui.screens.help import HelpScreen

    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        swatches = app.query_one(HexView).swatches()
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert app.screen._swatch(("header",)).spans[0].style == swatches["header"]


# ----------------------------------------------------------------------------- 13. hex width

async def test_wide_hex_pane_uses_the_width(viewer):
    """At 200 columns the hex pane still showed 16 bytes per line."""
    async with viewer(SHOWCASE, size=(200, 40)) as pilot:
        app = pilot.app
        hexv = app.query_one(HexView)
        assert hexv.bytes_per_line in (24, 32)
        # a click on the last byte of a line is that byte
        line = hexv._render_hex_line(0, hexv.scrollable_content_region.width).text
        x = line.index("  ", 12 + 3 * hexv.bytes_per_line) - 2
        assert hexv.offset_at(x, 0) == hexv.bytes_per_line - 1
    async with viewer(SHOWCASE, size=(300, 40)) as pilot:
        app = pilot.app
        assert app.query_one(HexView).bytes_per_line == 32


# ----------------------------------------------------------------------------- 5. unnamed nodes

def test_unnamed_node_is_labelled_by_its_first_output():
    """420 identical ``▶ Constant`` rows: an unnamed node could not be told apart."""
    from onemodel_viewer.format.schema import Node
    from onemodel_viewer.tui.widgets.formatters import node_label

    try:
        n = Node(op="Constant", name="", domain="", inputs=(), outputs=("conv2d_10.w_0",), attributes=(), where="w")
    except TypeError:
        pytest.skip("Node's constructor changed")
    assert node_label(n).plain == "Constant → conv2d_10.w_0"


# ----------------------------------------------------------------------------- 5, 6. search

async def test_search_says_what_matched_and_lists_results(viewer):
    """Search answered ``match 1/108: Constant`` with no list of results."""
    from onemodel_viewer.tui.screens.search_results import SearchResults

    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        n = app.search("h0")
        assert n >= 2
        await pilot.pause()
        assert any("(output h0)" in str(m.message) for m in app._notifications)
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(app.screen, SearchResults)
        assert len(app.screen.matches) == n
        await pilot.press("down", "enter")
        await pilot.pause()
        assert not isinstance(app.screen, SearchResults)
        assert app.match_index == 1
        assert app.current.where == app.search_matches[1][0]


async def test_revealed_match_has_context_around_it(viewer):
    """A match was revealed on the last visible row of the tree."""
    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        nodes = app.document.model.graph.nodes
        app.reveal(nodes[len(nodes) - 5].where)
        await pilot.pause()
        tree = app.query_one(StructureTree)
        top = int(tree.scroll_offset.y)
        h = tree.scrollable_content_region.height
        assert top + 2 <= tree.cursor_line <= top + h - 3


# ----------------------------------------------------------------------------- 7. layout go to, owner

async def test_layout_go_to_moves_tree_and_detail_and_w_finds_the_owner(viewer):
    """Layout "go to" moved only the hex pane; from a hex byte no key went to the record owning it."""
    from onemodel_viewer.tui.screens.layout import LayoutScreen

    async with viewer(SHOWCASE, size=(120, 40)) as pilot:
        app = pilot.app
        await pilot.press("l")
        await viewer.settle(pilot)
        assert isinstance(app.screen, LayoutScreen)
        row = next(i for i, e in enumerate(app.screen.extents) if e.kind == "tensor")
        ext = app.screen.extents[row]
        app.screen._choose(row)
        await viewer.settle(pilot)
        owner = app.bytemap.tensors_at(ext.start, limit=1)[0]
        assert app.current is not None and app.current.where == owner.where
        assert app.query_one(HexView).cursor == ext.start
        # from a hex byte inside another tensor: w selects that tensor
        t = app.document.model.graph.initializers[1]
        app.query_one(HexView).goto(t.file_offset + 1)
        await pilot.press("w")
        await pilot.pause()
        assert app.current.where == t.where


# ----------------------------------------------------------------------------- diff mode

def _diff_labels(tree) -> list[str]:
    out = []

    def rec(node):
        for c in node.children:
            out.append(c.label.plain)
            if c.is_expanded:
                rec(c)

    rec(tree.root)
    return out


async def test_diff_tree_shows_both_sides_counts(viewer):
    """The diff tree showed A's counts only: ``~ initializers (0)`` with 15 ``+`` children."""
    from onemodel_viewer.tui.diff.app import make_diff_app
    from onemodel_viewer.tui.diff.tree import DiffTree

    app = make_diff_app(str(viewer.need(VALID / "attributes.onemodel")), str(viewer.need(SHOWCASE)))
    async with app.run_test(size=(120, 40)) as pilot:
        await viewer.settle(pilot)
        tree = app.query_one(DiffTree)
        graph = next(n for n in tree.root.children if n.data.label.startswith("graph"))
        graph.expand()
        await viewer.settle(pilot)
        labels = _diff_labels(tree)
        inits = next(line for line in labels if "initializers" in line and "sparse" not in line)
        assert "→" in inits, inits


async def test_diff_focus_is_visible(viewer):
    """In diff mode the pane borders never changed colour: focus was invisible."""
    from onemodel_viewer.tui.diff.app import make_diff_app

    app = make_diff_app(str(viewer.need(SHOWCASE)), str(viewer.need(VALID / "showcase.onnx")))
    async with app.run_test(size=(120, 40)) as pilot:
        await viewer.settle(pilot)
        tree, detail = app.query_one("#tree"), app.query_one("#detail")
        focused = tree.styles.border_top[1]
        other = detail.styles.border_top[1]
        assert focused != other
        detail.focus()
        await pilot.pause()
        assert detail.styles.border_top[1] == focused and tree.styles.border_top[1] != focused
