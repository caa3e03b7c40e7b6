"""``--shrink`` of ONNX inputs (commands/shrink_onnx.py): OUT is ONNX and fails like IN.

IN's hostile models: the external-data cases of ``testdata/external`` (with a problem) and models
built here (undefined input, raw_data length, negative dims, a checker-only failure). Each OUT:
the same kind, the same ``where`` up to array indices, never larger than IN; IN byte-identical.
"""

from __future__ import annotations

import io
import json
import shutil
from contextlib import redirect_stderr
from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from onemodel_viewer import cli  # noqa: E402
from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.format.onnx_checker import checker_problems  # noqa: E402
from onemodel_viewer.format.spec_rules import shape_of  # noqa: E402
from conftest import digest, first_failure as failure  # noqa: E402 - shared test helpers

ROOT = Path(__file__).resolve().parent.parent
EXTERNAL = ROOT / "testdata" / "external"
EXPECTED = json.loads((EXTERNAL / "expected.json").read_text())
CASES = sorted(
    (name, model, r["problems"][0])
    for name, e in EXPECTED.items() if not e["special"]
    for model, r in e["models"].items() if r["problems"] and "/" not in model
)


def shrink(src, dst, seconds=20.0):
    err = io.StringIO()
    with redirect_stderr(err):
        rc = cli.main(["--shrink", str(src), str(dst), "--seconds", str(seconds)])
    return rc, err.getvalue()


@pytest.mark.parametrize("name,model,problem", CASES, ids=[c[0] for c in CASES])
def test_external_data_cases_shrink_to_onnx_failing_the_same_way(name, model, problem, tmp_path):
    folder = tmp_path / name
    shutil.copytree(EXTERNAL / name, folder, symlinks=True)
    src = folder / model
    assert failure(src) == (problem[0], problem[1])
    before = digest(src)
    out = folder / "small.onnx"  # beside IN's weights files, which OUT still names
    if name == "location-self":  # the location names the model file itself: OUT must have its name
        (tmp_path / "o").mkdir()
        out = tmp_path / "o" / model
    rc, err = shrink(src, out)
    assert rc == 0, err
    kind, where = failure(out)
    assert kind == problem[0]
    assert shape_of(where) == shape_of(problem[1])
    assert out.stat().st_size <= src.stat().st_size
    assert digest(src) == before
    m = onnx.load_model(str(out), load_external_data=False)  # OUT is ONNX
    assert len(m.graph.node) == 0 and len(m.graph.initializer) == 1  # only the tensor the problem is about


def _model(tmp_path, name, nodes, inits=(), **kw) -> Path:
    g = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], list(inits), doc_string="d" * 200)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], producer_name="p" * 50, **kw)
    p = tmp_path / f"{name}.onnx"
    p.write_bytes(m.SerializeToString())
    return p


def _chain(n=30):
    return [helper.make_node("Relu", ["x" if i == 0 else f"v{i - 1}"], [f"v{i}"], name=f"n{i}") for i in range(n)]


def _tensor(dims, raw: bytes) -> TensorProto:
    t = TensorProto()
    t.name, t.data_type = "w", TensorProto.FLOAT
    t.dims.extend(dims)
    t.raw_data = raw
    return t


BUILT = {
    "undefined-input": (lambda: _chain() + [helper.make_node("Add", ["v29", "nowhere"], ["y"])], ()),
    "raw-data-short": (lambda: _chain() + [helper.make_node("Add", ["v29", "w"], ["y"])], (_tensor([4], b"\0" * 12),)),
    "dims-negative": (lambda: _chain() + [helper.make_node("Add", ["v29", "w"], ["y"])], (_tensor([-4], b""),)),
}


@pytest.mark.parametrize("name", sorted(BUILT))
def test_built_onnx_defects_shrink(name, tmp_path):
    nodes, inits = BUILT[name]
    src = _model(tmp_path, name, nodes(), inits)
    kind, where = failure(src)
    before = digest(src)
    out = tmp_path / "small.onnx"
    rc, err = shrink(src, out)
    assert rc == 0, err
    got = failure(out)
    assert got[0] == kind and shape_of(got[1]) == shape_of(where)
    assert out.stat().st_size < src.stat().st_size // 4  # the 30-node chain, docs and producer are gone
    assert digest(src) == before
    again = tmp_path / "again.onnx"
    assert shrink(src, again)[0] == 0
    assert again.read_bytes() == out.read_bytes()  # deterministic


def test_checker_only_failure_shrinks_with_the_checker(tmp_path):
    """The reader accepts it, onnx.checker does not: OUT fails the checker with the same message."""
    src = _model(tmp_path, "checker", _chain() + [helper.make_node("Relu", ["v29"], ["y"], bogus=1)])
    assert failure(src) is None
    first = checker_problems(str(src), False)[0]
    out = tmp_path / "small.onnx"
    rc, err = shrink(src, out)
    assert rc == 0, err
    assert failure(out) is None
    again = checker_problems(str(out), False)[0]
    assert (again.kind, again.where) == (first.kind, first.where) == (omf.Kind.INVALID_MODEL, "onnx.checker")
    assert out.stat().st_size < src.stat().st_size // 4
    m = onnx.load_model(str(out))
    assert [n.op_type for n in m.graph.node] == ["Relu"]  # the chain in front of it went (its input rewired)


def test_valid_onnx_has_nothing_to_shrink(tmp_path):
    src = _model(tmp_path, "ok", [helper.make_node("Relu", ["x"], ["y"])])
    rc, err = shrink(src, tmp_path / "out.onnx")
    assert rc == 1 and "nothing to shrink" in err
    assert not (tmp_path / "out.onnx").exists()


def test_ort_input_is_refused_with_the_reason(tmp_path):
    src = ROOT / "testdata" / "hostile" / "ort" / "InvalidModel-dims-negative.ort"
    if not src.exists():
        pytest.skip("ort hostile files not generated")
    before = digest(src)
    rc, err = shrink(src, tmp_path / "out.onnx")
    assert rc == 1 and "no .ort writer" in err
    assert not (tmp_path / "out.onnx").exists()
    assert digest(src) == before
