"""Pilot tests of the insight views: used-by, neighbourhood, parameter counts, inferred types, values grid,
.npy export, byte inspector, operator help, copy; and every view on broken files (no traceback)."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import numpy as np
import pytest

from onemodel_viewer.tui.hex.byte_inspector import ByteInspector
from onemodel_viewer.tui.widgets.detail_pane import DetailPane
from onemodel_viewer.tui.hex.hex_view import HexView
from onemodel_viewer.tui.screens.neighbourhood import NeighbourhoodScreen
from onemodel_viewer.tui.screens.neighbourhood_view import NeighbourhoodView
from onemodel_viewer.tui.screens.opschema import OpSchemaScreen
from onemodel_viewer.tui.screens.params import ParamsScreen
from onemodel_viewer.tui.widgets.structure_tree import StructureTree
from onemodel_viewer.tui.screens.used_by import UsedByScreen
from onemodel_viewer.tui.screens.values_grid import ValuesGrid
from onemodel_viewer.tui.screens.values import ValuesScreen

sys.path.insert(0, str(Path(__file__).resolve().parent))
import insight_models as im  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"
HOSTILE = ROOT / "testdata" / "hostile"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("tui-insight")
    return {f.__name__: str(f(d / f"{f.__name__}.onemodel"))
            for f in (im.slices_in_if, im.constant_weights, im.fan_out, im.tensors, im.function_body)}


def detail(app) -> list[str]:
    return app.query_one(DetailPane).plain_lines()


def node(app, name):
    return next(n for n in app.document.model.graph.nodes if n.name == name)


def init(app, name):
    return next(t for t in app.document.model.graph.initializers if t.name == name)


async def test_initializer_detail_lists_readers_inside_if_branches(viewer, models):
    """An initializer read by 6 Slice nodes inside If branches: the detail said nothing; now it lists them."""
    async with viewer(models["slices_in_if"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, init(app, "w").where)
        lines = detail(app)
        head = next(line for line in lines if line.startswith("used by"))
        assert "8 nodes" in head and "6 inside subgraphs" in head
        assert sum("Slice slice" in line and "inside If if0" in line for line in lines) == 6
        # the u screen lists them; enter selects the reader in the tree
        await pilot.press("u")
        await viewer.settle(pilot)
        screen = app.screen
        assert isinstance(screen, UsedByScreen) and len(screen.rows) == 8
        row = next(i for i, (_, u) in enumerate(screen.rows) if u.node.name == "slice4")
        screen.query_one("DataTable").move_cursor(row=row)
        await pilot.press("enter")
        await viewer.settle(pilot)
        assert app.current is not None and app.current.kind == "node" and app.current.obj.name == "slice4"
        assert app.query_one(StructureTree).cursor_node.data is app.current


async def test_node_detail_shows_outputs_read_inside_subgraphs(viewer, models):
    async with viewer(models["slices_in_if"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, node(app, "main_add").where)
        lines = detail(app)
        i = next(k for k, line in enumerate(lines) if line.startswith("read inside subgraphs: ww"))
        assert "Add else_ww" in lines[i + 1] and "inside If if0" in lines[i + 1]


async def test_neighbourhood_navigation_and_select_in_tree(viewer, models):
    async with viewer(models["constant_weights"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, node(app, "matmul1").where)
        await pilot.press("a")
        await viewer.settle(pilot)
        assert isinstance(app.screen, NeighbourhoodScreen)
        view = app.screen.query_one(NeighbourhoodView)
        assert view.selected_box.name == "matmul1"
        await pilot.press("down")
        assert view.selected_box.name == "relu1"
        await pilot.press("up", "up")
        assert view.selected_box.name in ("relu0", "const_w1")
        await pilot.press("plus")
        await viewer.settle(pilot)
        view = app.screen.query_one(NeighbourhoodView)
        assert min(view.nb.levels) == -2 and view.selected_box.name == "matmul1"
        await pilot.press("down", "down")
        assert view.selected_box.name == "matmul2"
        await pilot.press("enter")
        await viewer.settle(pilot)
        assert not isinstance(app.screen, NeighbourhoodScreen)
        assert app.current.obj.name == "matmul2"


async def test_neighbourhood_folds_500_readers(viewer, models):
    async with viewer(models["fan_out"], size=(80, 24)) as pilot:
        app = pilot.app
        await viewer.select(pilot, node(app, "relu").where)
        await pilot.press("a")
        await viewer.settle(pilot)
        view = app.screen.query_one(NeighbourhoodView)
        folds = [view.nb.boxes[b] for b in view.nb.levels[1] if view.nb.boxes[b].kind == "fold"]
        assert folds and folds[0].folded > 490
        await pilot.press("down")
        for _ in range(10):
            await pilot.press("right")
        assert view.selected_box.kind == "fold"


async def test_parameter_counts_with_constant_weights(viewer, models):
    """A model keeping its weights in Constant nodes showed ``init bytes 0 B`` and nothing else."""
    async with viewer(models["constant_weights"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, app.document.model.graph.where)
        lines = detail(app)
        total = 3 * 64 * 64 + 64 + 1
        assert f"{total:,} parameters" in "\n".join(lines)
        assert any(line.strip().startswith("constant") and f"{total:,}" in line for line in lines)
        await pilot.press("P")
        await viewer.settle(pilot)
        assert isinstance(app.screen, ParamsScreen)
        assert app.screen.model.elements == total
        await pilot.press("enter")
        await viewer.settle(pilot)
        assert app.current is not None and app.current.kind == "tensor" and app.current.obj.count == 64 * 64


async def test_inferred_types_in_node_and_value_detail(viewer, models):
    async with viewer(models["constant_weights"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, node(app, "relu0").where)
        lines = detail(app)
        assert any(line.startswith("in") and "mm0" in line and "float[1,64] (inferred)" in line for line in lines)
        assert any("float[1,64] (inferred)" in line and "h0" in line for line in lines)
        await viewer.select(pilot, node(app, "matmul0").where)
        assert any("w0" in line and "float[64,64] (constant)" in line for line in detail(app))
        # the graph output ``out`` is declared without a shape... a value entry without type gets one
        out = app.document.model.graph.outputs[0]
        await viewer.select(pilot, out.where)
        lines = detail(app)
        assert any(line.startswith("inferred") and "float[64]" in line for line in lines) or \
            any(line.startswith("type") and "float" in line for line in lines)


async def test_values_grid_slice_selection_and_jump(viewer, models):
    async with viewer(models["tensors"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, init(app, "cube").where)
        await pilot.press("v")
        await viewer.settle(pilot)
        screen = app.screen
        assert isinstance(screen, ValuesScreen)
        grid = screen.query_one(ValuesGrid)
        assert grid.spec.describe() == "[0, :r, :]" and (grid.spec.rows, grid.spec.cols) == (3, 4)
        await pilot.press("down", "right", "right")
        assert grid.current_index() == (0, 1, 2) and grid.cell(1, 2).kind == "nan"
        await pilot.press("right_square_bracket")
        assert grid.spec.fixed[0] == 1 and grid.current_index() == (1, 1, 2)
        assert grid.cell(0, 0).text == "-inf" and grid.cell(2, 3).text == "inf"
        assert grid.cell(1, 2).text == str(np.float32((12 + 4 + 2) / 4))
        # choose another slice: axes 0 and 2, axis 1 fixed at 2
        await pilot.press("x")
        await viewer.settle(pilot)
        app.screen.query_one("Input").value = ":,2,:"
        await pilot.press("enter")
        await viewer.settle(pilot)
        assert (grid.spec.row_axis, grid.spec.col_axis, grid.spec.fixed[1]) == (0, 2, 2)
        assert grid.cell(1, 3).text == "inf"
        assert screen.jump("0,1,2") and grid.current_index() == (0, 1, 2)
        assert grid.spec.fixed[1] == 1
        assert not screen.jump("9,9,9")


async def test_values_of_strings_are_escaped_and_copied_exactly(viewer, models):
    async with viewer(models["tensors"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, init(app, "names").where)
        await pilot.press("v")
        await viewer.settle(pilot)
        grid = app.screen.query_one(ValuesGrid)
        assert grid.cell(0, 2).text == '"\\x1b[31mred"'
        grid.move_to(0, 2)
        await pilot.press("y")
        assert app.clipboard == "\x1b[31mred"


async def test_export_npy_round_trip(viewer, models, tmp_path):
    async with viewer(models["tensors"]) as pilot:
        app = pilot.app
        for name in ("cube", "bf"):
            await viewer.select(pilot, init(app, name).where)
            out = tmp_path / f"{name}.npy"
            await pilot.press("e")
            await viewer.settle(pilot)
            inp = app.screen.query_one("Input")
            inp.value = str(out)
            await pilot.press("enter")
            await viewer.settle(pilot)
            assert out.exists()
        np.testing.assert_array_equal(np.load(tmp_path / "cube.npy"), init(app, "cube").values())
        import ml_dtypes

        np.testing.assert_array_equal(np.load(tmp_path / "bf.npy").view(ml_dtypes.bfloat16), init(app, "bf").values())


async def test_byte_inspector_stays_on_screen_at_80x24_with_the_statistics(viewer):
    """The inspector (and the hex rows) were laid out below the bottom of an 80x24 screen when the
    statistics panel was open: nothing of it could be seen."""
    from onemodel_viewer.tui.widgets.stats_panel import StatsPanel

    async with viewer(ROOT / "testdata" / "valid" / "showcase.onemodel", size=(80, 24)) as pilot:
        app = pilot.app
        await viewer.select(pilot, next(t for t in app.document.model.graph.initializers if t.name == "embed.tokens").where)
        before = app.query_one(DetailPane).region.height
        await pilot.press("i")
        await viewer.settle(pilot)
        screen = app.screen.region
        stats, hexv, bi = app.query_one(StatsPanel), app.query_one(HexView), app.query_one(ByteInspector)
        assert stats.display and bi.display
        for w in (stats, hexv, bi):
            assert screen.contains_region(w.region), (w, w.region)
        assert hexv.region.height >= 5 and bi.region.height == 6
        assert bi.lines_plain[0].startswith("element ")
        await pilot.press("i")
        await viewer.settle(pilot)
        assert not bi.display and app.query_one(DetailPane).region.height == before


async def test_byte_inspector_matches_struct_unpack(viewer, models):
    async with viewer(models["tensors"]) as pilot:
        app = pilot.app
        cube = init(app, "cube")
        await pilot.press("i")
        hexv = app.query_one(HexView)
        off = cube.file_offset + 4 * 5
        hexv.goto(off)
        await viewer.settle(pilot)
        bi = app.query_one(ByteInspector)
        data = open(app.document.path, "rb").read()[off:off + 8]
        got = dict(line.split(" ", 1) for line in bi.lines_plain)
        assert got["element"] == str(np.float32(5 / 4))
        for name, fmt in (("u8", "<B"), ("i16", "<h"), ("u32", "<I"), ("i64", "<q")):
            assert int(got[name]) == struct.unpack(fmt, data[:struct.calcsize(fmt)])[0]
        assert float(got["f32"]) == struct.unpack("<f", data[:4])[0]
        assert float(got["f64"]) == struct.unpack("<d", data[:8])[0]
        hexv.goto(cube.file_offset + 4 * 6)
        await viewer.settle(pilot)
        assert dict(line.split(" ", 1) for line in bi.lines_plain)["element"] == "nan"
        await pilot.press("i")
        assert bi.has_class("hidden")


async def test_operator_help_marks_defaults(viewer):
    async with viewer(VALID / "showcase.onemodel") as pilot:
        app = pilot.app
        n = next(n for n in app.document.model.graph.nodes if n.op == "LayerNormalization")
        await viewer.select(pilot, n.where)
        await pilot.press("o")
        await viewer.settle(pilot)
        screen = app.screen
        assert isinstance(screen, OpSchemaScreen) and screen.facts.found and screen.facts.since_version == 17
        status = {a.name: a.status for a in screen.facts.attributes}
        assert set(status) >= {"axis", "epsilon", "stash_type"}
        assert all(s in ("set", "set-default", "default", "unset") for s in status.values())


async def test_copy_name_and_where_exactly(viewer):
    path = HOSTILE / "valid-term-names.onemodel"
    if not path.exists():
        candidates = sorted(HOSTILE.glob("valid-term-*.onemodel"))
        if not candidates:
            pytest.skip("hostile corpus not generated")
        path = candidates[0]
    async with viewer(path) as pilot:
        app = pilot.app
        t = app.document.model.graph.initializers[0] if app.document.model.graph.initializers else None
        n = app.document.model.graph.nodes[0]
        await viewer.select(pilot, n.where)
        await pilot.press("y")
        assert app.clipboard == n.name
        await pilot.press("Y")
        assert app.clipboard == n.where
        if t is not None:
            await viewer.select(pilot, t.where)
            await pilot.press("y")
            assert app.clipboard == t.name


async def test_every_view_on_broken_files_shows_what_it_can(viewer):
    """Diagnose mode: each new key on broken files (one per kind of defect), on a node, a tensor and the
    graph: no exception, the app stays up."""
    names = ("InvalidModel-cycle-two-nodes", "InvalidModel-duplicate-in-subgraph", "InvalidModel-length-int4-short",
             "InvalidModel-strings-count-long", "InvalidModel-undefined-subgraph-input",
             "Malformed-file-length-truncated-data", "Malformed-file-63-bytes")
    files = [HOSTILE / f"{n}.onemodel" for n in names if (HOSTILE / f"{n}.onemodel").exists()]
    if not files:
        pytest.skip("hostile corpus not generated")
    opened = 0
    for path in files:
        async with viewer(path, size=(80, 24)) as pilot:
            app = pilot.app
            m = app.document.model
            plan: list[tuple[str, tuple[str, ...]]] = []
            if m is not None:
                if m.graph.nodes:
                    plan.append((m.graph.nodes[0].where, ("u", "a", "o")))
                if m.graph.initializers:
                    plan.append((m.graph.initializers[0].where, ("v", "u")))
                plan.append((m.graph.where, ("P",)))
            else:
                plan.append(("", ("u", "a", "P", "o", "v")))
            for where, keys in plan:
                if where:
                    await viewer.select(pilot, where)
                for key in keys:
                    await pilot.press(key)
                    await viewer.settle(pilot)
                    if app.screen is not app.screen_stack[0]:
                        opened += 1
                        await pilot.press("escape")
                        await pilot.pause()
            await pilot.press("i", "h", "right", "i")
            await pilot.pause()
            assert app.return_code is None, path.name
    assert opened >= 10


async def test_shape_inference_reuses_one_helper_process_across_reloads(viewer, models):
    """Each request started a new child (~0.5 s of start and onnx import); now one helper serves them all."""
    from onemodel_viewer.analysis import shapes

    async with viewer(models["constant_weights"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, node(app, "relu0").where)
        assert app.insight.inferred is not None and not app.insight.inferred.error
        pid = shapes.inference_helper().pid
        assert pid is not None
        app.action_reload()
        await viewer.settle(pilot)
        await viewer.select(pilot, node(app, "relu0").where)
        assert app.insight.inferred is not None and not app.insight.inferred.error
        assert shapes.inference_helper().pid == pid


async def test_neighbourhood_screen_is_reused_for_the_next_node(viewer, models):
    """Each press of a made a new screen (~270 ms of compose and mount); the second press reuses it."""
    async with viewer(models["constant_weights"]) as pilot:
        app = pilot.app
        await viewer.select(pilot, node(app, "matmul1").where)
        await pilot.press("a")
        await viewer.settle(pilot)
        first = app.screen
        assert isinstance(first, NeighbourhoodScreen)
        await pilot.press("plus", "escape")
        await viewer.settle(pilot)
        await viewer.select(pilot, node(app, "matmul2").where)
        await pilot.press("a")
        await viewer.settle(pilot)
        assert app.screen is first
        view = first.query_one(NeighbourhoodView)
        assert view.selected_box.name == "matmul2" and view.has_focus
        assert min(view.nb.levels) == -2  # the levels chosen last time
        title = str(first.query_one("#nb-title").render())
        assert "Relu" not in title.split("   ")[0] and "matmul2" in title
        status = str(first.query_one("#nb-status").render())
        assert status.startswith("MatMul matmul2") and "\nin " in status and "\nout " in status
        await pilot.press("enter")
        await viewer.settle(pilot)
        assert app.current.obj.name == "matmul2"


async def test_used_by_inside_a_function_body(viewer, models):
    """u on a function's value said "select a value first" and the detail listed no reader: functions
    were skipped. Now a body node's outputs and the function's inputs list their readers."""
    async with viewer(models["function_body"]) as pilot:
        app = pilot.app
        f = app.document.model.functions[0]
        relu = next(n for n in f.nodes if n.name == "f_relu")
        await viewer.select(pilot, relu.where)
        assert app.current.kind == "node" and app.current.function is f
        lines = detail(app)
        i = next(k for k, line in enumerate(lines) if line.startswith("used by") and " r " in line)
        assert "1 node of the function (1 inside subgraphs)" in lines[i]
        assert "Identity f_then_id" in lines[i + 1] and "inside If f_if" in lines[i + 1]
        await pilot.press("u")
        await viewer.settle(pilot)
        screen = app.screen
        assert isinstance(screen, UsedByScreen)
        assert [(name, u.node.name) for name, u in screen.rows] == [("r", "f_then_id")]
        await pilot.press("enter")
        await viewer.settle(pilot)
        assert app.current.kind == "node" and app.current.obj.name == "f_then_id"
        # the function itself: its inputs' readers
        await viewer.select(pilot, f.where)
        assert app.current.kind == "function"
        await pilot.press("u")
        await viewer.settle(pilot)
        rows = [(name, u.node.name) for name, u in app.screen.rows]
        assert rows == [("x", "f_add"), ("x", "f_gt"), ("x", "f_else_neg"), ("y", "f_add"), ("y", "f_gt")]
        table = app.screen.query_one("DataTable")
        assert "this function" in str(table.get_row_at(0)[3]) and "inside If f_if" in str(table.get_row_at(2)[3])
