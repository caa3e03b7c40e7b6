"""Models for the outline and graph-export tests: transformer-like stacks with scoped names (one
layer made different on request) and an unscoped residual network (names like ``Conv_12``),
built with ``onnx.helper`` as ``.onnx`` files (the reader opens them; ``as_onemodel`` converts)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.onnx import importer as onnx_import

H = 8
"""Hidden width (small: the tests are about structure)."""
LAYER_NODES = 14
"""Nodes of one layer."""


def _w(name: str, *shape: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.full(shape, 0.5, np.float32), name)


def transformer(out: Path, layers: int, *, odd_shape: int | None = None, odd_attr: int | None = None,
                odd_extra: int | None = None) -> Path:
    """``/model/embed_tokens``, ``layers`` blocks ``/model/layers.i/...`` of :data:`LAYER_NODES` nodes
    (self_attn, mlp), ``/model/norm``, ``/lm_head``. ``odd_shape``: that layer's MLP is twice as wide;
    ``odd_attr``: its Softmax has axis 1 (the others -1); ``odd_extra``: an extra Identity in its MLP."""
    nodes, inits = [], [_w("embed.weight", 32, H)]
    nodes.append(helper.make_node("Gather", ["embed.weight", "ids"], ["h0"], name="/model/embed_tokens/Gather"))
    x = "h0"
    for i in range(layers):
        p = f"/model/layers.{i}"
        ffn = 4 * H if i == odd_shape else 2 * H
        w = {k: f"model.layers.{i}.{k}" for k in ("ln1.scale", "ln1.bias", "q", "k", "v", "o", "up", "down")}
        inits += [_w(w["ln1.scale"], H), _w(w["ln1.bias"], H), _w(w["q"], H, H), _w(w["k"], H, H), _w(w["v"], H, H),
                  _w(w["o"], H, H), _w(w["up"], H, ffn), _w(w["down"], ffn, H)]
        v = lambda s: f"l{i}.{s}"  # noqa: E731
        nodes += [
            helper.make_node("LayerNormalization", [x, w["ln1.scale"], w["ln1.bias"]], [v("ln")], name=f"{p}/input_layernorm/LayerNormalization", axis=-1),
            helper.make_node("MatMul", [v("ln"), w["q"]], [v("q")], name=f"{p}/self_attn/q_proj/MatMul"),
            helper.make_node("MatMul", [v("ln"), w["k"]], [v("k")], name=f"{p}/self_attn/k_proj/MatMul"),
            helper.make_node("MatMul", [v("ln"), w["v"]], [v("v")], name=f"{p}/self_attn/v_proj/MatMul"),
            helper.make_node("Transpose", [v("k")], [v("kt")], name=f"{p}/self_attn/Transpose", perm=[1, 0]),
            helper.make_node("MatMul", [v("q"), v("kt")], [v("qk")], name=f"{p}/self_attn/MatMul"),
            helper.make_node("Softmax", [v("qk")], [v("s")], name=f"{p}/self_attn/Softmax", axis=1 if i == odd_attr else -1),
            helper.make_node("MatMul", [v("s"), v("v")], [v("pv")], name=f"{p}/self_attn/MatMul_1"),
            helper.make_node("MatMul", [v("pv"), w["o"]], [v("o")], name=f"{p}/self_attn/o_proj/MatMul"),
            helper.make_node("Add", [x, v("o")], [v("r1")], name=f"{p}/Add"),
            helper.make_node("MatMul", [v("r1"), w["up"]], [v("up")], name=f"{p}/mlp/up_proj/MatMul"),
            helper.make_node("Relu", [v("up")], [v("act")], name=f"{p}/mlp/act/Relu"),
        ]
        act = v("act")
        if i == odd_extra:
            nodes.append(helper.make_node("Identity", [act], [v("id")], name=f"{p}/mlp/Identity"))
            act = v("id")
        nodes += [
            helper.make_node("MatMul", [act, w["down"]], [v("down")], name=f"{p}/mlp/down_proj/MatMul"),
            helper.make_node("Add", [v("r1"), v("down")], [v("out")], name=f"{p}/Add_1"),
        ]
        x = v("out")
    inits += [_w("norm.scale", H), _w("norm.bias", H), _w("lm_head.weight", H, 32)]
    nodes.append(helper.make_node("LayerNormalization", [x, "norm.scale", "norm.bias"], ["hn"], name="/model/norm/LayerNormalization"))
    nodes.append(helper.make_node("MatMul", ["hn", "lm_head.weight"], ["logits"], name="/lm_head/MatMul"))
    g = helper.make_graph(nodes, "transformer", [helper.make_tensor_value_info("ids", TP.INT64, ["seq"])],
                          [helper.make_tensor_value_info("logits", TP.FLOAT, ["seq", 32])], initializer=inits)
    out = out.with_suffix(".onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(out))
    return out


def resnet_unscoped(out: Path, blocks: int = 172) -> Path:
    """A residual network of ``blocks`` x 5 nodes (Conv, Relu, Conv, Add, Relu) named ``Conv_12``... (860 nodes
    for 172 blocks): no scope in any name."""
    nodes, inits = [], []
    count = {"n": 0}

    def name(op: str) -> str:
        count["n"] += 1
        return f"{op}_{count['n']}"

    x = "image"
    for b in range(blocks):
        inits += [_w(f"conv{b}a.weight", 4, 4, 1, 1), _w(f"conv{b}b.weight", 4, 4, 1, 1)]
        nodes += [
            helper.make_node("Conv", [x, f"conv{b}a.weight"], [f"c{b}a"], name=name("Conv")),
            helper.make_node("Relu", [f"c{b}a"], [f"r{b}a"], name=name("Relu")),
            helper.make_node("Conv", [f"r{b}a", f"conv{b}b.weight"], [f"c{b}b"], name=name("Conv")),
            helper.make_node("Add", [x, f"c{b}b"], [f"s{b}"], name=name("Add")),
            helper.make_node("Relu", [f"s{b}"], [f"y{b}"], name=name("Relu")),
        ]
        x = f"y{b}"
    g = helper.make_graph(nodes, "resnet", [helper.make_tensor_value_info("image", TP.FLOAT, [1, 4, 8, 8])],
                          [helper.make_tensor_value_info(x, TP.FLOAT, [1, 4, 8, 8])], initializer=inits)
    out = out.with_suffix(".onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(out))
    return out


def named(out: Path, names: list[str]) -> Path:
    """A chain of Relu nodes with the given names (each reading the one before; weights none)."""
    nodes = []
    x = "x"
    for k, n in enumerate(names):
        nodes.append(helper.make_node("Relu", [x], [f"v{k}"], name=n))
        x = f"v{k}"
    g = helper.make_graph(nodes, "named", [helper.make_tensor_value_info("x", TP.FLOAT, [1])],
                          [helper.make_tensor_value_info(x, TP.FLOAT, [1])])
    out = out.with_suffix(".onnx")
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8), str(out))
    return out


def as_onemodel(src: Path) -> Path:
    """``src`` (.onnx) converted to ``.onemodel`` beside it."""
    doc = onnx_import.import_onnx(str(src))
    dst = src.with_suffix(".onemodel")
    writer.write(doc.model, str(dst))
    doc.close()
    return dst
