"""Float16 nodes ONNX Runtime's CPU build runs only through casts it inserts when it loads an ``.onnx``
(Mul, Div, Pad, Conv; QLinearMatMul with float16 scales): the ``.ort`` is written as the model is, with
a warning naming them (17 onnx backend test models gave an ``.ort`` ONNX Runtime refuses, silently)."""

from __future__ import annotations

from pathlib import Path

import pytest

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

from onemodel_viewer import format as omf  # noqa: E402
from onemodel_viewer.format.ort.writer import write_ort  # noqa: E402


def model(elem: int, op: str = "Mul") -> onnx.ModelProto:
    g = helper.make_graph(
        [helper.make_node("Max", ["x", "y"], ["s"]), helper.make_node(op, ["s", "y"], ["z"])], "g",
        [helper.make_tensor_value_info("x", elem, [2]), helper.make_tensor_value_info("y", elem, [2])],
        [helper.make_tensor_value_info("z", elem, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def written(tmp_path: Path, mp, name: str = "m") -> tuple[Path, Path, list[str]]:
    src, dst = tmp_path / f"{name}.onnx", tmp_path / f"{name}.ort"
    onnx.save(mp, str(src))
    doc = omf.open(str(src), mode="strict")
    msgs: list[str] = []
    try:
        write_ort(doc.model, dst, warn=msgs.append)
    finally:
        doc.close()
    return src, dst, msgs


@pytest.mark.parametrize("op", ["Mul", "Div"])
def test_float16_node_without_cpu_kernel_warned(tmp_path, op):
    _src, dst, msgs = written(tmp_path, model(TensorProto.FLOAT16, op))
    assert dst.exists()
    hits = [m for m in msgs if "float16 node" in m]
    assert len(hits) == 1 and f"1 float16 node of {op} (first: graph.nodes[1])" in hits[0] and "Max" not in hits[0], msgs
    assert len(hits[0]) <= 200  # the CLI shows 200 characters of a message


def test_float_model_not_warned(tmp_path):
    _src, _dst, msgs = written(tmp_path, model(TensorProto.FLOAT))
    assert msgs == []


def test_onnx_runtime_refuses_what_is_warned(tmp_path):
    """Why the warning exists: ONNX Runtime loads the .onnx (its casts) but not the .ort."""
    ort = pytest.importorskip("onnxruntime")
    src, dst, msgs = written(tmp_path, model(TensorProto.FLOAT16))
    assert msgs
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
    with pytest.raises(Exception, match="Could not find an implementation for Mul"):
        ort.InferenceSession(str(dst), so, providers=["CPUExecutionProvider"])
