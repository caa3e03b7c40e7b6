"""Small models for the insight tests (used-by, parameter counts, inferred types, values), built with
``onnx.helper`` and converted with this project's writer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from onemodel_viewer.format.onnx import importer as onnx_import
from onemodel_viewer.format.onemodel import writer


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _save(model: onnx.ModelProto, out: Path) -> Path:
    src = out.with_suffix(".onnx")
    onnx.save(model, str(src))
    doc = onnx_import.import_onnx(str(src))
    writer.write(doc.model, str(out))
    doc.close()
    return out


def slices_in_if(out: Path) -> Path:
    """Initializer ``w`` (float[6,4]) read by 6 Slice nodes inside If branches (2 of them one If deeper),
    by one Add of the main graph, whose output ``ww`` the else branch reads; ``v`` is shadowed in the
    then branch by an initializer of its own (so the main ``v`` is read by no subgraph node)."""
    f = TP.FLOAT
    starts = numpy_helper.from_array(np.array([0], np.int64), "starts")
    ends = numpy_helper.from_array(np.array([1], np.int64), "ends")

    def sl(i: int) -> onnx.NodeProto:
        return helper.make_node("Slice", ["w", "starts", "ends"], [f"s{i}"], name=f"slice{i}")

    inner_then = helper.make_graph([sl(4), helper.make_node("Identity", ["s4"], ["it_out"], name="it_id")],
                                   "inner_then", [], [_vi("it_out", f, None)])
    inner_else = helper.make_graph([sl(5), helper.make_node("Identity", ["s5"], ["ie_out"], name="ie_id")],
                                   "inner_else", [], [_vi("ie_out", f, None)])
    then_g = helper.make_graph(
        [sl(0), sl(1), helper.make_node("Add", ["s0", "s1"], ["t_sum"], name="then_add"),
         helper.make_node("If", ["cond"], ["t_if"], name="then_if", then_branch=inner_then, else_branch=inner_else),
         helper.make_node("Add", ["t_sum", "v"], ["then_out"], name="then_v")],
        "then_branch", [], [_vi("then_out", f, None)],
        initializer=[numpy_helper.from_array(np.zeros((1, 4), np.float32), "v")])
    else_g = helper.make_graph(
        [sl(2), sl(3), helper.make_node("Mul", ["s2", "s3"], ["e_m"], name="else_mul"),
         helper.make_node("Add", ["e_m", "ww"], ["else_out"], name="else_ww")],
        "else_branch", [], [_vi("else_out", f, None)])
    g = helper.make_graph(
        [helper.make_node("Add", ["w", "w"], ["ww"], name="main_add"),
         helper.make_node("Add", ["v", "v"], ["vv"], name="main_v"),
         helper.make_node("If", ["cond"], ["if_out"], name="if0", then_branch=then_g, else_branch=else_g)],
        "slices", [_vi("cond", TP.BOOL, [])], [_vi("if_out", f, None), _vi("ww", f, [6, 4]), _vi("vv", f, [1, 4])],
        initializer=[numpy_helper.from_array(np.arange(24, dtype=np.float32).reshape(6, 4), "w"),
                     numpy_helper.from_array(np.ones((1, 4), np.float32), "v"), starts, ends])
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), out)


HIDDEN = 64


def constant_weights(out: Path) -> Path:
    """A 3-layer MLP keeping its weights in Constant nodes (no initializers); intermediate values have
    no declared type (shape inference gives ``float[1,64]``); one float16 Constant, one value_ints."""
    rng = np.random.default_rng(7)
    nodes = []
    prev = "x"
    for i in range(3):
        w = rng.standard_normal((HIDDEN, HIDDEN)).astype(np.float32)
        nodes.append(helper.make_node("Constant", [], [f"w{i}"], name=f"const_w{i}",
                                      value=numpy_helper.from_array(w, f"w{i}_value")))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"mm{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Relu", [f"mm{i}"], [f"h{i}"], name=f"relu{i}"))
        prev = f"h{i}"
    half = rng.standard_normal(HIDDEN).astype(np.float16)
    nodes.append(helper.make_node("Constant", [], ["bias16"], name="const_bias16",
                                  value=numpy_helper.from_array(half, "bias16_value")))
    nodes.append(helper.make_node("Cast", ["bias16"], ["bias"], name="cast_bias", to=TP.FLOAT))
    nodes.append(helper.make_node("Add", [prev, "bias"], ["y"], name="add_bias"))
    nodes.append(helper.make_node("Constant", [], ["shape"], name="const_shape", value_ints=[HIDDEN]))
    nodes.append(helper.make_node("Reshape", ["y", "shape"], ["out"], name="reshape"))
    g = helper.make_graph(nodes, "mlp", [_vi("x", TP.FLOAT, [1, HIDDEN])], [_vi("out", TP.FLOAT, None)])
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), out)


def fan_out(out: Path, readers: int = 500) -> Path:
    """``x`` -> Relu ``r`` read by ``readers`` Neg nodes (a fan-out to fold), each an output."""
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu")]
    outs = []
    for i in range(readers):
        nodes.append(helper.make_node("Neg", ["r"], [f"n{i}"], name=f"neg{i}"))
        outs.append(_vi(f"n{i}", TP.FLOAT, [2]))
    g = helper.make_graph(nodes, "fan", [_vi("x", TP.FLOAT, [2])], outs)
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), out)


def tensors(out: Path) -> Path:
    """Initializers for the values grid and the export: float32 [2,3,4] with NaN/±Inf, bfloat16 [5],
    int4 [7], float8e4m3fn [3], strings [3]."""
    import ml_dtypes

    cube = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 4
    cube[0, 1, 2] = np.nan
    cube[1, 2, 3] = np.inf
    cube[1, 0, 0] = -np.inf
    bf = np.array([0.1, 1.5, -2, 3e38, 0], dtype=ml_dtypes.bfloat16)
    i4 = np.array([-8, -1, 0, 1, 7, 3, -4], dtype=ml_dtypes.int4)
    f8 = np.array([0.5, -1.75, 448], dtype=ml_dtypes.float8_e4m3fn)

    def raw(name, code, arr):
        from onemodel_viewer.format import dtypes as omdt

        return helper.make_tensor(name, code, arr.shape, omdt.encode(arr, omdt.DTYPES[code]), raw=True)

    inits = [numpy_helper.from_array(cube, "cube"), raw("bf", TP.BFLOAT16, bf), raw("i4", TP.INT4, i4),
             raw("f8", TP.FLOAT8E4M3FN, f8),
             helper.make_tensor("names", TP.STRING, [3], [b"plain", b"tab\there", b"\x1b[31mred"])]
    nodes = [helper.make_node("Identity", [t.name], [t.name + "_out"], name="id_" + t.name) for t in inits]
    g = helper.make_graph(nodes, "tensors", [], [helper.make_value_info(t.name + "_out", onnx.TypeProto()) for t in inits],
                          initializer=inits)
    return _save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 21)], ir_version=10), out)


def function_body(out: Path) -> Path:
    """A model-local function ``local:Body(x, y) -> out``: ``x`` read by Add f_add and Greater f_gt in the
    body and by Neg f_else_neg inside the If's else branch; f_add's ``s`` by Relu f_relu; f_relu's ``r``
    by Identity f_then_id inside the then branch; ``out`` (the If's) by nothing. The main graph calls it."""
    f = TP.FLOAT
    then_g = helper.make_graph([helper.make_node("Identity", ["r"], ["t"], name="f_then_id")], "then_branch", [],
                               [_vi("t", f, None)])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"], name="f_else_neg")], "else_branch", [],
                               [_vi("e", f, None)])
    body = helper.make_function(
        "local", "Body", ["x", "y"], ["out"],
        [helper.make_node("Add", ["x", "y"], ["s"], name="f_add"),
         helper.make_node("Relu", ["s"], ["r"], name="f_relu"),
         helper.make_node("Greater", ["x", "y"], ["c"], name="f_gt"),
         helper.make_node("If", ["c"], ["out"], name="f_if", then_branch=then_g, else_branch=else_g)],
        [helper.make_opsetid("", 21)])
    g = helper.make_graph([helper.make_node("Body", ["a", "b"], ["o"], name="call", domain="local")], "calls",
                          [_vi("a", f, [2]), _vi("b", f, [2])], [_vi("o", f, None)])
    m = helper.make_model(g, functions=[body], ir_version=10,
                          opset_imports=[helper.make_opsetid("", 21), helper.make_opsetid("local", 1)])
    return _save(m, out)
