"""The viewer on .ort files: the ONNX Runtime group in the tree, the ORT lines of the detail pane, the hex pane on a
record's table, the layout screen's payloads and unowned bytes.

Before: an .ort file showed only what every format has (no format version, provider, since-version, kernel
table or payload alignment), and its layout screen listed every flatbuffer object under the hex pane's colour
names (a vtable as "padding" with "NON-ZERO byte", tables as "manifest").
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.analysis.layout.ort import alignment, ort_layout  # noqa: E402
from onemodel_viewer.format.ort.facts import element_size, in_place  # noqa: E402
from onemodel_viewer.tui.app import make_app  # noqa: E402
from onemodel_viewer.tui.widgets.detail_pane import DetailPane  # noqa: E402
from onemodel_viewer.tui.hex.hex_view import HexView  # noqa: E402
from onemodel_viewer.tui.screens.layout import LayoutScreen, from_ort  # noqa: E402
from onemodel_viewer.tui.widgets.structure_tree import StructureTree  # noqa: E402
from conftest import Viewer  # noqa: E402 - the shared Pilot set-up

BASE = Path(__file__).resolve().parent.parent / "testdata" / "hostile" / "ort" / "base.ort"
EVIL = "\x1b[2J\u202eEvilProviderX"
"""As many UTF-8 bytes as ``CPUExecutionProvider`` (20): an escape sequence and a right-to-left override."""


settle = Viewer.settle  # the shared set-up (tests/conftest.py)


def patched(tmp_path: Path, name: str, edit) -> Path:
    data = bytearray(BASE.read_bytes())
    edit(data)
    p = tmp_path / name
    p.write_bytes(bytes(data))
    return p


def evil_provider(data: bytearray) -> None:
    at = data.index(b"CPUExecutionProvider")
    data[at:at + 20] = EVIL.encode()


def detail(app) -> list[str]:
    return app.query_one(DetailPane).plain_lines()


# -- the layout rows (no UI)

def test_layout_lists_payloads_with_alignment():
    doc = omf.open(BASE)
    try:
        lay = ort_layout(doc)
        (w,) = [t for t in doc.model.graph.initializers if t.name == "w"]
        (row,) = lay.payloads
        assert (row.start, row.length, row.names, row.wheres, row.kind) == (w.file_offset, 12, ("w",), (w.where,), "payload")
        assert lay.dtypes == {w.where: w.dtype}
        assert (element_size(w.dtype), in_place(row.start, w.dtype)) == (4, True)
        assert lay.unowned == [] and lay.padding_runs == len(doc.extra.unowned)
        assert lay.padding_bytes == sum(n for _s, n in doc.extra.unowned)
        rows = from_ort(doc)
        assert [(e.kind, e.name) for e in rows] == [("header", "root offset + file identifier"), ("payload", "w"),
                                                    ("padding", f"{lay.padding_runs} runs")]
        assert "mod 64 = 0" in rows[1].note and "NOT" not in rows[1].note
    finally:
        doc.close()


def test_layout_lists_unowned_bytes_and_nonzero_padding(tmp_path):
    """A run of 16 bytes after the flatbuffer and a 3-byte padding run holding a non-zero byte are listed."""
    doc = omf.open(BASE)
    pad, last = doc.extra.unowned[0], doc.extra.unowned[-1]
    size = doc.size
    tail = last[0] if last[0] + last[1] == size else size  # the padding at the end joins the new run
    doc.close()

    def edit(data):
        data[pad[0] + 1] = 0xAA
        data.extend(b"\x00" * 8 + b"\xff" * 8)

    doc = omf.open(patched(tmp_path, "junk.ort", edit), mode="diagnose")
    try:
        lay = ort_layout(doc)
        got = [(u.start, u.length, u.kind, u.nonzero) for u in lay.unowned]
        assert got == [(pad[0], pad[1], "unowned", True), (tail, size + 16 - tail, "unowned", True)]
        assert lay.first_nonzero == {pad[0]: pad[0] + 1, tail: size + 8}
        notes = {e.start: e.note for e in from_ort(doc) if e.kind == "unowned"}
        assert notes == {pad[0]: f"NON-ZERO byte at 0x{pad[0] + 1:x}", tail: f"NON-ZERO byte at 0x{size + 8:x}"}
        assert [(f.code, f.offset) for f in doc.findings] == [("unowned-bytes", tail)]
    finally:
        doc.close()


def test_unaligned_payload_is_not_in_place():
    assert (alignment(2884), element_size(7), in_place(2884, 7)) == (4, 8, False)  # int64 at 4 mod 8
    assert alignment(0) == 1 << 30 and in_place(0, 9)


# -- the viewer

def _ort_group(app):
    tree = app.query_one(StructureTree)
    return next(e for e in tree.roots if e.kind == "ort"), tree


async def test_tree_group_and_version_entry():
    app = make_app(str(BASE))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        group, tree = _ort_group(app)
        assert group.label.plain == "ONNX Runtime  format 6 · 4 kernel ops · 0 optimizations"
        assert [r.kind for r in tree.roots][:3] == ["model", "ort", "graph"]
        from onemodel_viewer.tui.widgets.info_bar import document_parts

        assert "ort format 6" in [t.plain for t, *_ in document_parts(app.document, 2, 5)]
        model_kids = [k.label.plain for k in tree.populate(tree.node_for(tree.roots[0]))]
        assert not any(k.startswith("format version") for k in model_kids)  # OneModel's format version 1 was shown
        assert any(line.startswith("format    6") for line in detail(app))  # the model's detail: the first screen
        entry = app.reveal("InferenceSession.ort_version")
        await settle(pilot)
        assert entry is not None and entry.obj[0] == "version"
        lines = detail(app)
        assert "written   by ONNX Runtime 1.16 and later" in lines
        assert "read by   full builds 1.16 and later" in lines
        assert app.query_one(HexView).cursor == app.document.extra.version_offset


async def test_node_detail_provider_kernel_and_table():
    app = make_app(str(BASE))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        g = app.document.model.graph
        (add,) = [n for n in g.nodes if n.op == "Add"]
        app.reveal(add.where)
        await settle(pilot)
        lines = detail(app)
        assert "provider  CPUExecutionProvider" in lines
        assert any(x.startswith("since     14") for x in lines)
        assert any(x.startswith("kernel    :Add:14  T: in 0, in 1, out 0") for x in lines)
        start, _n = app.document.extra.table_span(add.where)
        assert app.query_one(HexView).cursor == start  # the hex pane on the node's table
        pane = app.query_one(DetailPane)
        i = next(j for j, x in enumerate(lines) if x.startswith("kernel"))
        app.follow(pane.link_at(i))
        await settle(pilot)
        assert app.current.kind == "ort" and app.current.obj[1].op_id == ":Add:14"
        assert "  Add add0 ›" in detail(app)


async def test_initializer_detail_payload_lines():
    app = make_app(str(BASE))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        (w,) = [t for t in app.document.model.graph.initializers if t.name == "w"]
        app.reveal(w.where)
        await settle(pilot)
        lines = detail(app)
        assert f"payload   0x{w.file_offset:x} ({w.file_offset:,}) +12 bytes ›" in lines
        assert f"mod       64: {w.file_offset % 64} · 4096: {w.file_offset % 4096:,}" in lines
        assert "in place  yes: aligned to its element size (4 bytes)" in lines


async def test_provider_string_from_the_file_is_made_visible(tmp_path):
    """An execution provider with an escape sequence and a bidi override is shown escaped, never raw."""
    app = make_app(str(patched(tmp_path, "evil.ort", evil_provider)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        (add,) = [n for n in app.document.model.graph.nodes if n.op == "Add"]
        app.reveal(add.where)
        await settle(pilot)
        lines = detail(app)
        assert "provider  \\x1b[2J\\u202eEvilProviderX" in lines
        assert not any("\x1b" in x or "\u202e" in x for x in lines)


async def test_layout_screen_lists_payloads_and_goes_to_one():
    app = make_app(str(BASE))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LayoutScreen)
        assert [e.kind for e in screen.extents] == ["header", "payload", "padding"]
        (w,) = [t for t in app.document.model.graph.initializers if t.name == "w"]
        screen.query_one("#layout-table").move_cursor(row=1)
        await pilot.press("enter")
        await settle(pilot)
        assert app.query_one(HexView).cursor == w.file_offset
        assert app.current is not None and app.current.obj is w


def _at_add(pilot):
    async def run_before(pilot):
        await settle(pilot)
        (add,) = [n for n in pilot.app.document.model.graph.nodes if n.op == "Add"]
        pilot.app.reveal(add.where)
        await settle(pilot)

    return run_before


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_ort_node_detail(snap_compare, size):
    assert snap_compare(make_app(str(BASE)), terminal_size=size, run_before=_at_add(None))


async def test_saved_runtime_optimizations_of_a_real_file(tmp_path):
    """A QDQ Conv converted by ONNX Runtime with --optimization_style Runtime: its saved record (QDQ selector,
    action Conv, producing QLinearConv) is listed, its node indices link to the nodes, the empty slot is named."""
    ort = pytest.importorskip("onnxruntime")
    onnx = pytest.importorskip("onnx")
    import subprocess
    import sys

    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(np.array(0.1, np.float32), "xs"), numpy_helper.from_array(np.array(128, np.uint8), "xz"),
             numpy_helper.from_array(np.full((4, 3, 3, 3), 7, np.uint8), "w"),
             numpy_helper.from_array(np.array(0.05, np.float32), "ws"), numpy_helper.from_array(np.array(128, np.uint8), "wz"),
             numpy_helper.from_array(np.array(0.2, np.float32), "ys"), numpy_helper.from_array(np.array(128, np.uint8), "yz")]
    nodes = [helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xf"], name="dqx"),
             helper.make_node("DequantizeLinear", ["w", "ws", "wz"], ["wf"], name="dqw"),
             helper.make_node("Conv", ["xf", "wf"], ["yf"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("QuantizeLinear", ["yf", "ys", "yz"], ["y"], name="qy")]
    g = helper.make_graph(nodes, "qdq", [helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 4, 8, 8])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    onnx.save(m, str(tmp_path / "qdq.onnx"))
    subprocess.run([sys.executable, "-m", "onnxruntime.tools.convert_onnx_models_to_ort", "--optimization_style",
                    "Runtime", "--", str(tmp_path / "qdq.onnx")], check=True, capture_output=True, cwd=tmp_path)
    assert ort  # the converter is onnxruntime's
    app = make_app(str(tmp_path / "qdq.with_runtime_opt.ort"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        group, tree = _ort_group(app)
        assert "1 optimizations" in group.label.plain
        node = tree.node_for(group)
        (opt_group,) = [k for k in tree.populate(node) if k.label.plain.startswith("runtime optimizations")]
        (rec,) = opt_group.children()
        app.show_entry(rec)
        lines = detail(app)
        assert lines[:2] == ["QDQSelectorActionTransformer", "action    Conv"]
        assert "produces  :QLinearConv:10" in lines
        assert "  (empty: an optional slot with no node)" in lines
        pane = app.query_one(DetailPane)
        i = next(j for j, x in enumerate(lines) if x.startswith("  node ") and " Conv conv" in x)
        app.follow(pane.link_at(i))
        await settle(pilot)
        assert app.current.kind == "node" and app.current.obj.name == "conv"
