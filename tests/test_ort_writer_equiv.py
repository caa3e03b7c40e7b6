"""``--diff X.ort X.onnx`` of ONNX Runtime's own conversions (optimisations off) and of this tool's: the three
normalisations the converter makes that the diff reported as differences (issue: 8 of 40 real models).
Each is also checked not to hide a real difference. Skipped without onnxruntime.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import numpy as np
import pytest

ort = pytest.importorskip("onnxruntime")
onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from onemodel_viewer import cli  # noqa: E402
from ort_convert import to_ort  # noqa: E402 - tests/ helper


convert = to_ort


def diff(a, b) -> dict:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        cli.main(["--diff", "--json", str(a), str(b)])
    return json.loads(out.getvalue())


def ir3_model(used_u: bool = False):
    """IR 3: initializers are graph inputs too; ``u`` is read by nothing (unless ``used_u``)."""
    w = numpy_helper.from_array(np.ones((2, 2), np.float32), "w")
    u = numpy_helper.from_array(np.ones((2, 2), np.float32), "u")
    nodes = [helper.make_node("Add", ["x", "w"], ["y"])]
    outs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 2])]
    if used_u:
        nodes.append(helper.make_node("Add", ["x", "u"], ["z"]))
        outs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 2]))
    vi = [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 2]) for n in ("x", "w", "u")]
    m = helper.make_model(helper.make_graph(nodes, "g", vi, outs, initializer=[w, u]),
                          opset_imports=[helper.make_opsetid("", 8)])
    m.ir_version = 3
    return m


def loop_model(typed: bool = False):
    """A Loop whose body outputs carry no type (ONNX allows it; ONNX Runtime stores the inferred one)."""
    def out(name, elem, shape):
        return helper.make_tensor_value_info(name, elem, shape) if typed else helper.make_value_info(name, onnx.TypeProto())

    body = helper.make_graph(
        [helper.make_node("Identity", ["c"], ["c_out"]), helper.make_node("Add", ["v", "v"], ["v_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("c", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])],
        [out("c_out", TensorProto.BOOL, []), out("v_out", TensorProto.FLOAT, [2])])
    inits = [numpy_helper.from_array(np.array(3, np.int64), "trip"), numpy_helper.from_array(np.array(True), "cond")]
    g = helper.make_graph([helper.make_node("Loop", ["trip", "cond", "x"], ["y"], body=body)], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], initializer=inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def label_encoder_model(**extra):
    n = helper.make_node("LabelEncoder", ["x"], ["y"], domain="ai.onnx.ml", keys_strings=["a", "b"],
                         values_int64s=[1, 2], **extra)
    g = helper.make_graph([n], "g", [helper.make_tensor_value_info("x", TensorProto.STRING, [2])],
                          [helper.make_tensor_value_info("y", TensorProto.INT64, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("ai.onnx.ml", 2)])


CASES = {
    "ir3": (ir3_model, "the graph inputs that are initializers it drops"),
    "loop": (loop_model, "gives a type to the graph outputs the source leaves untyped"),
    "label_encoder": (label_encoder_model, "fills in default attribute values"),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_converter_output_diffs_equal(tmp_path, name):
    """Regression: each of these diffed unequal (an input added, a subgraph output's type changed, an
    ``ai.onnx.ml`` default ``default_float`` 0.0 against the schema's -0.0 removed)."""
    make, sentence = CASES[name]
    src, conv = tmp_path / "m.onnx", tmp_path / "conv.ort"
    onnx.save(make(), str(src))
    convert(src, conv)
    for a, b in ((conv, src), (src, conv)):
        r = diff(a, b)
        assert r["equal"], r
        assert any(sentence in e for e in r["equivalences"]), r["equivalences"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_writer_output_diffs_equal(tmp_path, name):
    """``--diff SRC DST.ort`` of this tool's own output is equal for the same models."""
    make, _sentence = CASES[name]
    src, dst = tmp_path / "m.onnx", tmp_path / "mine.ort"
    onnx.save(make(), str(src))
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert cli.main(["--export", str(src), str(dst)]) == 0
    assert diff(src, dst)["equal"]


def test_real_differences_still_reported(tmp_path):
    """The normalisations hide nothing else: an IR 4 model's dropped input, a typed output whose type changed,
    and a non-default attribute value are differences."""
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(label_encoder_model(), str(a))
    onnx.save(label_encoder_model(default_float=1.5), str(b))
    conv = tmp_path / "conv.ort"
    convert(b, conv)
    assert not diff(a, conv)["equal"]
    m4 = ir3_model()
    m4.ir_version = 4
    onnx.save(m4, str(a))
    convert(a, conv)
    assert diff(conv, a)["equal"]  # IR 4: ORT keeps the input (an overridable initializer)
    m4.graph.input.pop()  # now the input ORT kept is missing on one side: a difference
    onnx.save(m4, str(b))
    assert not diff(conv, b)["equal"]
