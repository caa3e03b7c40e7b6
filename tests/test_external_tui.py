"""The viewer and ONNX weights files: the detail pane's external-tensor lines, the layout screen.

Regressions: the detail pane compared an external tensor's offset with the ``.onnx`` file's inline
tensors ("shares bytes with 27 tensors" for a tensor sharing nothing) and missed real overlaps in
a weights file; it printed no ``align`` for external tensors; it named the resolved file, not the
location as written. The layout screen showed only the ``.onnx`` file.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("textual")
import numpy as np  # noqa: E402
from onnx import helper, numpy_helper  # noqa: E402

from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.tui.app import make_app  # noqa: E402
from onemodel_viewer.tui.hex.bytemap import ByteMap  # noqa: E402
from onemodel_viewer.tui.widgets.describe import Describer  # noqa: E402
from onemodel_viewer.tui.hex.hex_view import HexView  # noqa: E402
from onemodel_viewer.tui.screens.layout import LayoutScreen, from_external  # noqa: E402

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parent / "testdata" / "external"
sys.path.insert(0, str(HERE.parent / "testdata"))
import make_external as mx  # noqa: E402
from conftest import Viewer  # noqa: E402 - the shared Pilot set-up


settle = Viewer.settle  # the shared set-up (tests/conftest.py)


def _lines(doc, t) -> list[str]:
    d = Describer(doc, None, sharing=ByteMap(doc).sharing)
    return [line.plain for line, _link in d.tensor(t)]


def _mixed(tmp_path: Path) -> Path:
    """Inline initializers in the .onnx at low offsets and an external one at offset 0 of w.data."""
    inline = [numpy_helper.from_array(np.full(64, i, np.float32), f"in{i}") for i in range(27)]
    ext = mx.Tensor("ext", mx.f32(64), "w.data", 0)
    (tmp_path / "w.data").write_bytes(ext.data)
    nodes = [helper.make_node("Identity", [t.name], ["y" + t.name]) for t in inline + [ext.proto()]]
    outs = [helper.make_tensor_value_info("y" + t.name, 1, [64]) for t in inline + [ext.proto()]]
    g = helper.make_graph(nodes, "g", [], outs, inline + [ext.proto()])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = tmp_path / "model.onnx"
    p.write_bytes(m.SerializeToString())
    return p


def test_external_tensor_shares_nothing_with_inline_tensors(tmp_path):
    doc = omf.open(_mixed(tmp_path))
    try:
        ext = doc.model.graph.initializers[-1]
        lines = _lines(doc, ext)
        assert not any("shares bytes" in x for x in lines), lines
        assert any(x.startswith("align") for x in lines)
        assert any(x.startswith("file") and "w.data" in x for x in lines)
    finally:
        doc.close()


def test_overlap_inside_a_weights_file_is_shown():
    doc = omf.open(CORPUS / "overlap" / "model.onnx")
    try:
        a, b = doc.model.graph.initializers
        assert "shares bytes with 1 tensor(s)" in _lines(doc, a)
        assert any(x.strip().startswith("a  @0x0") for x in _lines(doc, b))
    finally:
        doc.close()


def test_file_named_as_written_for_a_subgraph_attribute_tensor(tmp_path):
    d = tmp_path / "c"
    shutil.copytree(CORPUS / "symlink-inside", d, symlinks=True)
    doc = omf.open(d / "model.onnx")
    try:
        lines = _lines(doc, doc.model.graph.initializers[0])
        assert "file      w.data  -> real.data" in lines
    finally:
        doc.close()
    doc = omf.open(CORPUS / "constant-external" / "model.onnx")
    try:
        from onemodel_viewer.format.schema import all_tensors

        sub = next(t for t in all_tensors(doc.model) if t.name == "s")
        lines = _lines(doc, sub)
        assert "file      w.data" in lines and "align     aligned to 64" in lines
    finally:
        doc.close()


def test_layout_rows_for_each_weights_file():
    doc = omf.open(CORPUS / "split-set" / "model.onnx")
    try:
        rows = from_external(doc)
        files = [r for r in rows if r.kind == "file"]
        assert [r.name for r in files] == ["w.data", "w.data.1", "w.data.2"]
        assert all(r.tensor is not None for r in rows)
    finally:
        doc.close()
    doc = omf.open(CORPUS / "gap-nonzero" / "model.onnx")
    try:
        kinds = [(r.kind, r.note.split(",")[0]) for r in from_external(doc) if r.kind != "file"]
        assert ("gap", "NON-ZERO bytes") in kinds
    finally:
        doc.close()


async def test_layout_screen_jumps_into_a_weights_file():
    app = make_app(str(CORPUS / "nonzero-padding" / "model.onnx"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, LayoutScreen)
        kinds = [(e.kind, e.file) for e in screen.extents]
        assert ("file", "w.data") in kinds and ("padding", "w.data") in kinds
        row = next(i for i, e in enumerate(screen.extents) if e.kind == "tensor" and e.file == "w.data" and e.start)
        target = screen.extents[row]
        screen.query_one("#layout-table").move_cursor(row=row)
        await pilot.press("enter")
        await settle(pilot)
        hexv = app.query_one(HexView)
        assert hexv.cursor == target.start
        assert hexv.external_path is not None and hexv.external_path.endswith("w.data")
