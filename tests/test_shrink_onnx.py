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
from onemodel_viewer.format.onnx.checker import checker_problems  # noqa: E402
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


def shrunk_alike(src: Path, tmp_path: Path) -> Path:
    """``src`` shrunk to ``tmp_path/small.onnx``, checked to fail with the same kind at a ``where`` of the
    same shape as ``src``'s first failure; its path."""
    kind, where = failure(src)
    out = tmp_path / "small.onnx"
    rc, err = shrink(src, out)
    assert rc == 0, err
    got = failure(out)
    assert got[0] == kind and shape_of(got[1]) == shape_of(where)
    return out


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
    # exactly one problem when IN has one (never more than IN's)
    from onemodel_viewer import format as omf

    with omf.open(src, mode="diagnose") as a, omf.open(out, mode="diagnose") as b:
        had, got = a.problems, b.problems
    assert len(got) == 1 if len(had) == 1 else 1 <= len(got) <= len(had), (got, had)


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
    before = digest(src)
    out = shrunk_alike(src, tmp_path)
    assert out.stat().st_size < src.stat().st_size // 4  # the 30-node chain, docs and producer are gone
    assert digest(src) == before
    again = tmp_path / "again.onnx"
    assert shrink(src, again)[0] == 0
    assert again.read_bytes() == out.read_bytes()  # deterministic


def _constants_chain(n: int, *, cycle: bool = False, short: bool = False) -> list:
    """``n`` Adds in a chain, each adding a Constant node's 256 floats (a real model's weights are often
    Constant nodes); ``cycle``: the middle Add reads what the Add 3 further on makes; ``short``: the middle
    Constant's raw_data is 4 bytes short."""
    import numpy as np
    from onnx import numpy_helper

    nodes, prev = [], "x"
    for i in range(n):
        t = numpy_helper.from_array(np.full((256,), i, dtype=np.float32), f"c{i}")
        if short and i == n // 2:
            t.raw_data = t.raw_data[:-4]
        nodes.append(helper.make_node("Constant", [], [f"c{i}"], value=t, name=f"const{i}"))
        nodes.append(helper.make_node("Add", [prev, f"c{i}"], [f"v{i}"], name=f"add{i}"))
        prev = f"v{i}"
    nodes.append(helper.make_node("Relu", [prev], ["y"], name="out"))
    if cycle:
        nodes[2 * (n // 2) + 1].input[0] = f"v{n // 2 + 3}"
    return nodes


def _tests_run(err: str) -> int:
    import re

    return max(int(n) for n in re.findall(r"(\d+) tests", err))  # the progress lines count them


def test_cycle_behind_constants_shrinks_in_few_tests(tmp_path):
    """Regression: a cycle in the middle of a 10 MB real model (PP-OCR rec, 860 nodes, its weights in
    Constant nodes) spent the 60 s budget and kept 10.8 MB: removing nodes in front of the cycle left
    inputs undefined (refused), so the inputs were rewired one test at a time, each test writing the
    whole weights. Now the nodes reading what removed nodes made read the graph's input, and the
    tensors are cut first. The count of candidates tested (not a time) shows it: 1,457 before here."""
    src = _model(tmp_path, "cycle", _constants_chain(150, cycle=True))
    kind, where = failure(src)
    assert (kind, where) == (omf.Kind.INVALID_MODEL, "onnx.graph.nodes[151]")
    before = digest(src)
    out = tmp_path / "small.onnx"
    rc, err = shrink(src, out, seconds=60)
    assert rc == 0, err
    got = failure(out)
    assert got[0] == kind and shape_of(got[1]) == shape_of(where)
    m = onnx.load_model(str(out))
    assert len(m.graph.node) == 4  # the four Adds of the cycle
    assert _tests_run(err) < 400
    assert digest(src) == before
    again = tmp_path / "again.onnx"
    assert shrink(src, again, seconds=60)[0] == 0
    assert again.read_bytes() == out.read_bytes()  # deterministic


def test_target_tensor_data_shrinks_keeping_its_length_mismatch(tmp_path):
    """Regression: the tensor whose raw_data length is wrong kept all its data (its dims went, its 1,020
    bytes stayed; 3 MB on the PP-OCR rec model): now its data is halved while the mismatch stays."""
    src = _model(tmp_path, "short", _constants_chain(40, short=True))
    assert failure(src) == (omf.Kind.INVALID_MODEL, "onnx.graph.nodes[40].attributes[0].value.raw_data")
    out = shrunk_alike(src, tmp_path)
    m = onnx.load_model(str(out))
    (node,) = m.graph.node
    assert len(node.attribute[0].t.raw_data) <= 4  # still not what its dims say, and no longer 1,020 bytes
    assert out.stat().st_size < 100


def _names(m) -> set:
    """Every value, node, tensor and graph name of ``m`` (subgraphs included)."""
    out, stack = set(), [m.graph]
    while stack:
        g = stack.pop()
        out.add(g.name)
        out.update(v.name for v in [*g.input, *g.output, *g.value_info])
        out.update(t.name for t in g.initializer)
        for n in g.node:
            out.update([n.name, *n.input, *n.output])
            stack.extend(a.g for a in n.attribute if a.HasField("g"))
    out.discard("")
    return out


def _defined(g) -> set:
    return {v.name for v in g.input} | {t.name for t in g.initializer} | {o for n in g.node for o in n.output}


LONG = {
    "undefined-input": lambda: [helper.make_node("Relu", ["x" if i == 0 else f"value_number_{i - 1}"],
                                                 [f"value_number_{i}"], name=f"relu_node_{i}") for i in range(20)]
    + [helper.make_node("Add", ["value_number_19", "not_defined_anywhere"], ["y"], name="the_add")],
    "cycle": lambda: _constants_chain(12, cycle=True),
    "raw-data-short": lambda: _constants_chain(12, short=True),
}


@pytest.mark.parametrize("name", sorted(LONG))
def test_names_are_shortened_and_outputs_name_surviving_values(name, tmp_path):
    """Regression: an ONNX OUT kept IN's names ("p2o.Add.118", "Model from PaddlePaddle.") and lost
    every graph output (the reductions removed them with their producers). Now names become short
    tokens where the failure does not depend on them, and the model keeps an output naming a value
    OUT still defines."""
    src = _model(tmp_path, name, LONG[name]())
    out = shrunk_alike(src, tmp_path)
    m = onnx.load_model(str(out), load_external_data=False)
    assert max(len(n) for n in _names(m)) == 1, _names(m)
    assert len(m.graph.output) == 1 and m.graph.output[0].name in _defined(m.graph)
    again = tmp_path / "again.onnx"
    assert shrink(src, again)[0] == 0 and again.read_bytes() == out.read_bytes()  # deterministic


def test_an_undefined_graph_output_of_in_is_kept(tmp_path):
    """IN's own defect is an output naming nothing: the outputs' repair (for values a reduction
    removed) leaves it undefined, so OUT fails like IN."""
    src = _model(tmp_path, "dangling", _chain(10))  # the graph output "y" is made by no node
    assert failure(src)[1].startswith("onnx.graph.outputs")
    out = shrunk_alike(src, tmp_path)
    m = onnx.load_model(str(out), load_external_data=False)
    assert len(m.graph.node) == 0 and m.graph.output[0].name not in _defined(m.graph)


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
