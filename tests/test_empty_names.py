"""CLARIFICATIONS: ``""`` never names a value. A graph or function input, an initializer or a sparse
initializer named ``""`` is InvalidModel at its name, in OneModel, ONNX and ``.ort`` alike.

Regression: a graph input named ``""`` was accepted as a definition while a graph output ``""`` reading
it was rejected as undefined. The OneModel cases are in the hostile corpus
(``InvalidModel-empty-graph-input`` and friends, checked by ``tests/test_hostile.py``); here the same
defects in ONNX and ``.ort`` files, and the one-problem property of each.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from onemodel_viewer import format as omf

ROOT = Path(__file__).resolve().parent.parent


def _problems(path):
    with omf.open(path, mode="diagnose") as doc:
        return [(p.kind.value, p.where) for p in doc.problems]


def _onnx(tmp_path, name, *, inputs=(), inits=(), sparse=None) -> Path:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x, *inputs], [y], list(inits),
                          sparse_initializer=[sparse] if sparse is not None else None)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    p = tmp_path / f"{name}.onnx"
    p.write_bytes(m.SerializeToString())
    return p


def test_onnx_valid_control(tmp_path):
    assert _problems(_onnx(tmp_path, "ok")) == []


@pytest.mark.parametrize("case,where", [
    ("input", "onnx.graph.inputs[1].name"),
    ("initializer", "onnx.graph.initializers[0].name"),
    ("sparse", "onnx.graph.sparse_initializers[0].values.name"),
])
def test_onnx_empty_name_is_invalid_at_its_name(tmp_path, case, where):
    kw = {}
    if case == "input":
        kw["inputs"] = [helper.make_tensor_value_info("", TensorProto.FLOAT, [1])]
    elif case == "initializer":
        kw["inits"] = [numpy_helper.from_array(np.zeros(2, np.float32), "")]
    else:
        kw["sparse"] = helper.make_sparse_tensor(numpy_helper.from_array(np.ones(1, np.float32), ""),
                                                 numpy_helper.from_array(np.zeros(1, np.int64), "i"), [4])
    path = _onnx(tmp_path, case, **kw)
    assert _problems(path) == [("InvalidModel", where)]
    with pytest.raises(omf.FormatError) as e:
        omf.open(path)
    assert (e.value.kind.value, e.value.where) == ("InvalidModel", where)


def test_onnx_function_input_named_empty(tmp_path):
    f = helper.make_function("local", "F", ["a", ""], ["b"], [helper.make_node("Relu", ["a"], ["b"])],
                             [helper.make_opsetid("", 17)])
    g = helper.make_graph([helper.make_node("F", ["x"], ["y"], domain="local")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("local", 1)], functions=[f])
    p = tmp_path / "f.onnx"
    p.write_bytes(m.SerializeToString())
    probs = _problems(p)
    assert probs and probs[0][0] == "InvalidModel" and probs[0][1].endswith("functions[0].inputs[1]"), probs


def _ort(tmp_path, name, graph_fields) -> Path:
    sys.path.insert(0, str(ROOT / "testdata"))
    try:
        import make_hostile_ort as mh
    finally:
        sys.path.pop(0)
    fb = mh.FB()
    g = fb.table("Graph", **graph_fields(fb))
    p = tmp_path / f"{name}.ort"
    p.write_bytes(fb.finish(mh.session(fb, g)))
    return p


def test_ort_graph_input_named_empty(tmp_path):
    def fields(fb):
        tt = fb.table("TypeInfo", value_type=1, value=fb.table("TensorTypeAndShape", elem_type=1))
        return {"inputs": fb.vec([fb.s("")]), "node_args": fb.vec([fb.table("ValueInfo", name=fb.s(""), type=tt)])}

    # the input's record is its node_arg: the name is reported there
    assert _problems(_ort(tmp_path, "in", fields)) == [("InvalidModel", "InferenceSession.model.graph.node_args[0].name")]


def test_ort_initializer_named_empty(tmp_path):
    def fields(fb):
        t = fb.table("Tensor", name=fb.s(""), dims=fb.vec64([1]), data_type=1, raw_data=fb.b.CreateByteVector(bytes(4)))
        return {"initializers": fb.vec([t])}

    assert _problems(_ort(tmp_path, "init", fields)) == [("InvalidModel", "InferenceSession.model.graph.initializers[0].name")]
