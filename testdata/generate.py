#!/usr/bin/env python3
"""Regenerate ``testdata/valid/``: small ONNX models and their OneModel conversions.

Deterministic: running it twice gives byte-identical files (a test checks it).
Every model is built with ``onnx.helper``, saved as ``<name>.onnx`` and converted
with this project's writer to ``<name>.onemodel``. Two more OneModel files are
re-assembled by hand from a converted manifest (``unknown_fields``,
``shared_bytes``), since a writer never produces them.

Usage: ``python testdata/generate.py [--out DIR]`` (default: ``testdata/valid``).

Files (see ``MODELS`` / ``ASSEMBLED`` and docs/tests.md):

=====================  ==========================================================
dtypes                 one initializer per dtype code 1..28 (raw_data; sub-byte
                       types with odd counts), zero-length tensors, a scalar
typed                  the same dtypes stored in ONNX typed fields (float_data,
                       int32_data...), incl. float NaN payloads
strings                string tensors: empty, non-UTF-8, control and bidi chars
subgraphs              If, Loop, Scan, an If nested in a Loop's body, tensors in
                       subgraph initializers and Constant attributes
functions              a model-local function with attribute references and
                       defaults (``ref_attr_name``, ``attribute_proto``)
sparse                 sparse initializers and a SPARSE_TENSOR Constant
attributes             one node with every attribute type 1..14; float NaN with a
                       payload, signalling NaN, -0.0, +/-inf
types                  every type kind: tensor (known, named, unknown dims,
                       unknown rank), sparse_tensor, sequence, optional, map,
                       opaque
out_of_order           nodes stored out of dependency order
external               weights in an external data file (external.onnx.data)
showcase               the documentation's example: a small transformer-like model
unknown_fields         (OneModel only) manifest with unknown extra fields
shared_bytes           (OneModel only) two tensors pointing at the same bytes
=====================  ==========================================================
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
from onnx import TensorProto as TP  # noqa: E402
from onnx import helper  # noqa: E402

from onemodel_viewer.format import dtypes as omdt  # noqa: E402
from onemodel_viewer.format.onnx import importer as onnx_import
from onemodel_viewer.format.onemodel import writer  # noqa: E402

PRODUCER = ("onemodel-view-testdata", "1")
OPSET = [helper.make_opsetid("", 21)]
IR = 10


def _model(graph, opsets=None, functions=(), **kw) -> onnx.ModelProto:
    m = helper.make_model(graph, opset_imports=opsets or OPSET, functions=list(functions), producer_name=PRODUCER[0],
                          producer_version=PRODUCER[1], **kw)
    m.ir_version = IR
    return m


def _raw(name: str, code: int, dims, values) -> onnx.TensorProto:
    """A raw_data tensor whose bytes are the spec's layout of ``values``."""
    info = omdt.DTYPES[code]
    data = omdt.encode(np.asarray(values).reshape(-1), info) if info.bits else b""
    t = onnx.TensorProto(name=name, data_type=code, dims=list(dims))
    t.raw_data = data
    return t


def _vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def _sample(code: int, n: int, rng: np.random.Generator) -> np.ndarray:
    info = omdt.DTYPES[code]
    np_t = info.numpy
    if code == 9:
        return rng.integers(0, 2, n).astype(bool)
    if info.is_float:
        if code in (14, 15):
            return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(np_t)
        if code == 24:  # float8e8m0: powers of two only
            return np.exp2(rng.integers(-4, 5, n).astype(np.float32)).astype(np_t)
        return (rng.standard_normal(n) * 2).astype(np.float32).astype(np_t)
    if code in (21, 25):  # uint4, uint2
        return rng.integers(0, 1 << info.bits, n).astype(np_t)
    if code in (22, 26):  # int4, int2
        return rng.integers(-(1 << (info.bits - 1)), 1 << (info.bits - 1), n).astype(np_t)
    lo, hi = (0, 200) if np.dtype(np_t).kind == "u" else (-100, 100)
    return rng.integers(lo, hi, n).astype(np_t)


ODD = {4: 5, 2: 7, 6: 5}  # sub-byte bit width -> an odd element count


def m_dtypes() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    inits, outs = [], []
    for code, info in sorted(omdt.DTYPES.items()):
        if code == omdt.STRING:
            continue
        n = ODD.get(info.bits, 6)
        dims = (n,) if info.bits < 8 else (2, 3)
        t = _raw(f"t_{info.name}", code, dims, _sample(code, n, rng))
        inits.append(t)
        outs.append(helper.make_tensor_value_info(t.name, code, list(dims)))
    for name, code, dims in (("empty_float", 1, (0,)), ("empty_int4", 22, (3, 0)), ("empty_2d", 10, (0, 4))):
        inits.append(_raw(name, code, dims, np.zeros(0)))
        outs.append(helper.make_tensor_value_info(name, code, list(dims)))
    inits.append(_raw("scalar_double", 11, (), np.array(3.25)))
    outs.append(helper.make_tensor_value_info("scalar_double", 11, []))
    g = helper.make_graph([], "dtypes", [], outs, initializer=inits, doc_string="one initializer per dtype")
    return _model(g, doc_string="every dtype code of spec section 2.5")


def m_typed() -> onnx.ModelProto:
    rng = np.random.default_rng(2)
    inits, outs = [], []
    for code, info in sorted(omdt.DTYPES.items()):
        if code == omdt.STRING:
            continue
        n = ODD.get(info.bits, 6)
        vals = _sample(code, n, rng)
        t = helper.make_tensor(f"typed_{info.name}", code, [n], vals.tolist() if code not in (14, 15) else vals, raw=False)
        inits.append(t)
        outs.append(helper.make_tensor_value_info(t.name, code, [n]))
    # float_data with exact bit patterns: quiet NaN with payload, signalling NaN, -0.0, inf
    bits = [0x7FC00001, 0x7F800001, 0x80000000, 0x7F800000, 0xFF800000, 0x3F800000]
    t = onnx.TensorProto(name="typed_float_bits", data_type=1, dims=[6])
    t.MergeFromString(b"\x22" + bytes([24]) + struct.pack("<6I", *bits))  # field 4 (float_data), packed
    inits.append(t)
    outs.append(helper.make_tensor_value_info(t.name, 1, [6]))
    g = helper.make_graph([], "typed", [], outs, initializer=inits)
    return _model(g, doc_string="tensors stored in ONNX typed fields")


def m_strings() -> onnx.ModelProto:
    vals = [b"", b"plain", "caf\u00e9 \u4e2d\u6587".encode(), b"\xff\xfe not utf-8", b"ctrl\x1b[31m\x07\n",
            "bidi \u202etxt.exe\u202c".encode(), b"\x00nul"]
    s = helper.make_tensor("strings", TP.STRING, [len(vals)], vals)
    s2 = helper.make_tensor("strings_2d", TP.STRING, [2, 2], [b"a", b"b", b"c", b"d"])
    s0 = helper.make_tensor("strings_empty", TP.STRING, [0], [])
    const = helper.make_node("Constant", [], ["label"], name="label\u202e\u0007", value=helper.make_tensor("lbl", TP.STRING, [], [b"label"]))
    outs = [helper.make_tensor_value_info(n, TP.STRING, d)
            for n, d in (("strings", [len(vals)]), ("strings_2d", [2, 2]), ("strings_empty", [0]), ("label", []))]
    g = helper.make_graph([const], "strings \x1b[1mbold\x1b[0m", [], outs, initializer=[s, s2, s0])
    return _model(g, doc_string="string tensors with hostile-looking text")


def _const(name: str, arr: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], name=f"const_{name}", value=helper.make_tensor(name + "_value", helper.np_dtype_to_tensor_dtype(arr.dtype), arr.shape, arr.reshape(-1).tolist()))


def m_subgraphs() -> onnx.ModelProto:
    f = TP.FLOAT
    # If: then adds a constant (Constant attribute tensor), else multiplies by an initializer of the subgraph.
    then_g = helper.make_graph(
        [_const("one", np.ones(4, np.float32)), helper.make_node("Add", ["x", "one"], ["then_out"], name="then_add")],
        "then_branch", [], [_vi("then_out", f, [4])])
    else_g = helper.make_graph(
        [helper.make_node("Mul", ["x", "two"], ["else_out"], name="else_mul")],
        "else_branch", [], [_vi("else_out", f, [4])], initializer=[_raw("two", 1, (4,), np.full(4, 2, np.float32))])
    if_node = helper.make_node("If", ["cond"], ["if_out"], name="if0", then_branch=then_g, else_branch=else_g)
    # Loop with an If nested in its body.
    inner_then = helper.make_graph([helper.make_node("Identity", ["acc_in"], ["inner_then_out"], name="inner_then_id")],
                                   "inner_then", [], [_vi("inner_then_out", f, [4])])
    inner_else = helper.make_graph([_const("half", np.full(4, 0.5, np.float32)),
                                    helper.make_node("Mul", ["acc_in", "half"], ["inner_else_out"], name="inner_else_mul")],
                                   "inner_else", [], [_vi("inner_else_out", f, [4])])
    body = helper.make_graph(
        [
            helper.make_node("Add", ["acc_in", "step"], ["acc_add"], name="body_add"),
            helper.make_node("If", ["cond_in"], ["acc_out"], name="body_if", then_branch=inner_then, else_branch=inner_else),
            helper.make_node("Identity", ["cond_in"], ["cond_out"], name="body_cond"),
        ],
        "loop_body",
        [_vi("iter", TP.INT64, []), _vi("cond_in", TP.BOOL, []), _vi("acc_in", f, [4])],
        [_vi("cond_out", TP.BOOL, []), _vi("acc_out", f, [4])],
        initializer=[_raw("step", 1, (4,), np.arange(4, dtype=np.float32))])
    loop = helper.make_node("Loop", ["trip", "cond", "if_out"], ["loop_out"], name="loop0", body=body)
    # Scan: running sum over rows.
    scan_body = helper.make_graph(
        [helper.make_node("Add", ["sum_in", "row"], ["sum_out"], name="scan_add"),
         helper.make_node("Identity", ["sum_out"], ["scan_row_out"], name="scan_id")],
        "scan_body", [_vi("sum_in", f, [4]), _vi("row", f, [4])], [_vi("sum_out", f, [4]), _vi("scan_row_out", f, [4])])
    scan = helper.make_node("Scan", ["loop_out", "rows"], ["scan_sum", "scan_rows"], name="scan0", body=scan_body,
                            num_scan_inputs=1)
    g = helper.make_graph(
        [if_node, loop, scan], "subgraphs",
        [_vi("x", f, [4]), _vi("cond", TP.BOOL, []), _vi("rows", f, [3, 4])],
        [_vi("scan_sum", f, [4]), _vi("scan_rows", f, [3, 4])],
        initializer=[_raw("trip", 7, (), np.array(3, np.int64))])
    return _model(g, doc_string="If, Loop, Scan and an If inside a Loop body")


def m_functions() -> onnx.ModelProto:
    # ScaledAdd(x, y) = x + alpha * y, alpha an attribute with a default; the body reads it by reference.
    fn = helper.make_function(
        "local.fn", "ScaledAdd", ["x", "y"], ["z"],
        [
            helper.make_node("Constant", [], ["alpha_t"], name="alpha_const", value_float=0.0),
            helper.make_node("Mul", ["y", "alpha_t"], ["ay"], name="mul"),
            helper.make_node("Add", ["x", "ay"], ["z"], name="add"),
        ],
        opset_imports=OPSET, attributes=["unused"], doc_string="x + alpha * y")
    # Turn value_float into a reference to the function's attribute 'alpha'.
    ref = onnx.AttributeProto(name="value_float", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT)
    del fn.node[0].attribute[:]
    fn.node[0].attribute.append(ref)
    fn.attribute_proto.append(helper.make_attribute("alpha", 0.5))
    fn.attribute_proto.append(helper.make_attribute("bias", _raw("bias_default", 1, (2,), np.array([1, 2], np.float32))))
    fn2 = helper.make_function("local.fn", "Twice", ["x"], ["y"],
                               [helper.make_node("ScaledAdd", ["x", "x"], ["y"], domain="local.fn", name="inner_call", alpha=1.0)],
                               opset_imports=OPSET + [helper.make_opsetid("local.fn", 1)])
    nodes = [
        helper.make_node("ScaledAdd", ["a", "b"], ["c"], domain="local.fn", name="call_default"),
        helper.make_node("ScaledAdd", ["c", "b"], ["d"], domain="local.fn", name="call_alpha", alpha=2.0),
        helper.make_node("Twice", ["d"], ["e"], domain="local.fn", name="call_twice"),
    ]
    g = helper.make_graph(nodes, "functions", [_vi("a", 1, [2]), _vi("b", 1, [2])], [_vi("e", 1, [2])])
    return _model(g, opsets=OPSET + [helper.make_opsetid("local.fn", 1)], functions=[fn, fn2])


def m_sparse() -> onnx.ModelProto:
    vals = _raw("sparse_w", 1, (3,), np.array([1.5, -2.0, 3.25], np.float32))
    idx = _raw("sparse_w_idx", 7, (3,), np.array([1, 5, 10], np.int64))
    sp = helper.make_sparse_tensor(vals, idx, [4, 4])
    vals2 = _raw("sparse_c", 10, (2,), np.array([1, 2], np.float16))
    idx2 = _raw("sparse_c_idx", 7, (2, 2), np.array([0, 1, 2, 3], np.int64))  # 2-D (coordinate) indices
    sp2 = helper.make_sparse_tensor(vals2, idx2, [3, 4])
    const = helper.make_node("Constant", [], ["dense_c"], name="sparse_const", sparse_value=sp2)
    g = helper.make_graph([const], "sparse", [],
                          [helper.make_sparse_tensor_value_info("sparse_w", 1, [4, 4]), _vi("dense_c", 10, [3, 4])],
                          sparse_initializer=[sp])
    return _model(g)


FLOAT_BITS = [0x7FC00001, 0x7F800001, 0x80000000, 0x7F800000, 0xFF800000, 0x3F800000, 0x00000001]


def _float_attr(name: str, bits: int) -> onnx.AttributeProto:
    a = onnx.AttributeProto(name=name, type=onnx.AttributeProto.FLOAT)
    a.MergeFromString(b"\x15" + struct.pack("<I", bits))
    return a


def _floats_attr(name: str, bits: list[int]) -> onnx.AttributeProto:
    a = onnx.AttributeProto(name=name, type=onnx.AttributeProto.FLOATS)
    payload = struct.pack(f"<{len(bits)}I", *bits)
    a.MergeFromString(b"\x3a" + bytes([len(payload)]) + payload)
    return a


def m_attributes() -> onnx.ModelProto:
    sub = helper.make_graph([helper.make_node("Identity", ["x"], ["sub_y"], name="sub_id")], "attr_graph", [], [_vi("sub_y", 1, [2])])
    sub2 = helper.make_graph([helper.make_node("Neg", ["x"], ["sub2_y"], name="sub2_neg")], "attr_graph_2", [], [_vi("sub2_y", 1, [2])])
    t1 = _raw("attr_tensor", 1, (2,), np.array([1, 2], np.float32))
    t2 = _raw("attr_tensor_b", 22, (3,), np.array([-8, 0, 7], np.int8))
    sp = helper.make_sparse_tensor(_raw("sv", 1, (1,), np.array([9], np.float32)), _raw("si", 7, (1,), np.array([2], np.int64)), [4])
    tp = helper.make_tensor_type_proto(1, ["n", None, 3])
    tp2 = helper.make_sequence_type_proto(helper.make_tensor_type_proto(7, [2]))
    node = helper.make_node(
        "Everything", ["x"], ["y"], name="every_attribute", domain="test.attrs", doc_string="one attribute of each type",
        i=-(1 << 62), s=b"bytes \xff\x00", t=t1, g=sub, ints=[1, -2, 1 << 40], strings=[b"a", b"", b"\xfe"], tensors=[t1, t2],
        graphs=[sub, sub2], sparse_tensor=sp, sparse_tensors=[sp, sp], tp=tp, tps=[tp, tp2])
    # helper.make_attribute does not give explicit TYPE_PROTOS for a list of TypeProtos in every version: check.
    for bits_i, bits in enumerate(FLOAT_BITS):
        node.attribute.append(_float_attr(f"f{bits_i}", bits))
    node.attribute.append(_floats_attr("floats", FLOAT_BITS))
    node.attribute.append(onnx.AttributeProto(name="empty_floats", type=onnx.AttributeProto.FLOATS))
    node.attribute.append(onnx.AttributeProto(name="empty_ints", type=onnx.AttributeProto.INTS))
    g = helper.make_graph([node], "attributes", [_vi("x", 1, [2])], [_vi("y", 1, [2])])
    return _model(g, opsets=OPSET + [helper.make_opsetid("test.attrs", 1)])


def m_types() -> onnx.ModelProto:
    seq = helper.make_tensor_sequence_value_info("seq", 1, [None, 3])
    opt = helper.make_value_info("opt", helper.make_optional_type_proto(helper.make_tensor_type_proto(7, [2])))
    mp = helper.make_value_info("map", helper.make_map_type_proto(8, helper.make_tensor_type_proto(1, [])))
    sp = helper.make_sparse_tensor_value_info("sparse_in", 1, [10, 10])
    op = onnx.ValueInfoProto(name="opaque_in")
    op.type.opaque_type.domain = "test.types"
    op.type.opaque_type.name = "Handle"
    nested = helper.make_value_info(
        "nested", helper.make_sequence_type_proto(helper.make_optional_type_proto(helper.make_map_type_proto(
            7, helper.make_sequence_type_proto(helper.make_tensor_type_proto(10, ["batch", 4]))))))
    unknown_rank = helper.make_tensor_value_info("unknown_rank", 1, None)
    scalar = helper.make_tensor_value_info("scalar", 1, [])
    neg = helper.make_tensor_value_info("neg_dim", 1, [2, -1])  # negative dim_value: a warning, written as unknown
    untyped = onnx.ValueInfoProto(name="untyped")
    ins = [seq, opt, mp, sp, op, nested, unknown_rank, scalar, neg]
    nodes = [helper.make_node("Identity", [v.name], [v.name + "_out"], name="id_" + v.name) for v in ins]
    outs = [onnx.ValueInfoProto(name=v.name + "_out", type=v.type) for v in ins]
    g = helper.make_graph(nodes, "types", ins, outs, value_info=[untyped])
    return _model(g)


def m_out_of_order() -> onnx.ModelProto:
    nodes = [
        helper.make_node("Relu", ["b"], ["c"], name="third"),
        helper.make_node("Neg", ["a"], ["b"], name="second"),
        helper.make_node("Abs", ["x"], ["a"], name="first"),
        helper.make_node("Identity", ["c"], ["y"], name="fourth"),
    ]
    g = helper.make_graph(nodes, "out_of_order", [_vi("x", 1, [3])], [_vi("y", 1, [3])])
    return _model(g, doc_string="nodes stored out of dependency order")


def m_external() -> tuple[onnx.ModelProto, bytes]:
    rng = np.random.default_rng(3)
    w = rng.standard_normal((32, 16)).astype(np.float32)
    b = rng.standard_normal(16).astype(np.float16)
    data = bytearray()
    tensors = []
    for name, arr in (("ext_w", w), ("ext_b", b)):
        off = (len(data) + 63) // 64 * 64
        data += bytes(off - len(data))
        t = onnx.TensorProto(name=name, data_type=helper.np_dtype_to_tensor_dtype(arr.dtype), dims=list(arr.shape))
        t.data_location = TP.EXTERNAL
        for k, v in (("location", "external.onnx.data"), ("offset", str(off)), ("length", str(arr.nbytes))):
            e = t.external_data.add()
            e.key, e.value = k, v
        data += arr.tobytes()
        tensors.append(t)
    nodes = [helper.make_node("MatMul", ["x", "ext_w"], ["h"], name="mm"),
             helper.make_node("Cast", ["ext_b"], ["b32"], name="cast", to=1),
             helper.make_node("Add", ["h", "b32"], ["y"], name="add")]
    g = helper.make_graph(nodes, "external", [_vi("x", 1, ["batch", 32])], [_vi("y", 1, ["batch", 16])], initializer=tensors)
    return _model(g, doc_string="weights in external.onnx.data"), bytes(data)


def m_showcase() -> onnx.ModelProto:
    """A small transformer-like model that looks good in the viewer (~1.3 MB)."""
    rng = np.random.default_rng(2024)
    V, D, H, F, L, S = 1024, 128, 4, 256, 2, 64
    f32, f16 = np.float32, np.float16
    inits: list[onnx.TensorProto] = []

    def w(name, arr, code=None, doc=""):
        code = code or helper.np_dtype_to_tensor_dtype(arr.dtype)
        t = _raw(name, code, arr.shape, arr)
        if doc:
            t.doc_string = doc
        inits.append(t)
        return name

    emb = (rng.standard_normal((V, D)) * 0.02).astype(f16)
    emb[7, 3] = np.inf  # a few specials for the stats pane
    emb[11, 0] = -np.inf
    w("embed.tokens", emb, doc="token embeddings (float16)")
    w("embed.positions", (rng.standard_normal((S, D)) * 0.01).astype(f32), doc="learned positions")
    w("const.axes0", np.array([0], np.int64))
    w("const.one", np.array([1], np.int64))
    w("const.heads_shape", np.array([0, 0, H, D // H], np.int64))
    w("const.merge_shape", np.array([0, 0, D], np.int64))
    w("const.scale", np.array(1.0 / np.sqrt(D // H), f32))
    nodes = [
        helper.make_node("Gather", ["embed.tokens", "input_ids"], ["tok16"], name="embed.lookup", doc_string="token lookup"),
        helper.make_node("Cast", ["tok16"], ["tok"], name="embed.cast", to=TP.FLOAT),
        helper.make_node("Shape", ["input_ids"], ["ids_shape"], name="embed.shape", start=1, end=2),
        helper.make_node("Slice", ["embed.positions", "const.axes0", "ids_shape", "const.axes0"], ["pos"], name="embed.pos_slice"),
        helper.make_node("Add", ["tok", "pos"], ["h0"], name="embed.add"),
    ]
    x = "h0"
    for i in range(L):
        p = f"layers.{i}"
        w(f"{p}.ln1.weight", np.ones(D, f32))
        w(f"{p}.ln1.bias", np.zeros(D, f32))
        w(f"{p}.ln2.weight", (1 + 0.1 * rng.standard_normal(D)).astype(f32))
        w(f"{p}.ln2.bias", (0.1 * rng.standard_normal(D)).astype(f32))
        for m in ("q", "k", "v", "o"):
            arr = (rng.standard_normal((D, D)) * 0.05).astype(np.float32)
            w(f"{p}.attn.{m}.weight", arr.astype(omdt.DTYPES[16].numpy), code=16, doc=f"attention {m} projection (bfloat16)")
        q4 = rng.integers(-8, 8, (D, F)).astype(omdt.DTYPES[22].numpy)
        w(f"{p}.mlp.up.weight_q", q4, code=22, doc="int4, per-column scale")
        w(f"{p}.mlp.up.scale", (np.abs(rng.standard_normal(F)) * 0.01 + 0.001).astype(f16))
        w(f"{p}.mlp.down.weight", (rng.standard_normal((F, D)) * 0.05).astype(f16))
        a = f"{p}.attn"
        nodes += [
            helper.make_node("LayerNormalization", [x, f"{p}.ln1.weight", f"{p}.ln1.bias"], [f"{p}.ln1.out"], name=f"{p}.ln1", axis=-1, epsilon=1e-5),
        ]
        for m in ("q", "k", "v"):
            nodes += [
                helper.make_node("Cast", [f"{a}.{m}.weight"], [f"{a}.{m}.w32"], name=f"{a}.{m}.cast", to=TP.FLOAT),
                helper.make_node("MatMul", [f"{p}.ln1.out", f"{a}.{m}.w32"], [f"{a}.{m}"], name=f"{a}.{m}_proj"),
                helper.make_node("Reshape", [f"{a}.{m}", "const.heads_shape"], [f"{a}.{m}.heads"], name=f"{a}.{m}.split_heads"),
                helper.make_node("Transpose", [f"{a}.{m}.heads"], [f"{a}.{m}.t"], name=f"{a}.{m}.transpose",
                                 perm=[0, 2, 3, 1] if m == "k" else [0, 2, 1, 3]),
            ]
        nodes += [
            helper.make_node("MatMul", [f"{a}.q.t", f"{a}.k.t"], [f"{a}.scores"], name=f"{a}.qk"),
            helper.make_node("Mul", [f"{a}.scores", "const.scale"], [f"{a}.scaled"], name=f"{a}.scale"),
            helper.make_node("Softmax", [f"{a}.scaled"], [f"{a}.probs"], name=f"{a}.softmax", axis=-1),
            helper.make_node("MatMul", [f"{a}.probs", f"{a}.v.t"], [f"{a}.ctx"], name=f"{a}.pv"),
            helper.make_node("Transpose", [f"{a}.ctx"], [f"{a}.ctx.t"], name=f"{a}.ctx.transpose", perm=[0, 2, 1, 3]),
            helper.make_node("Reshape", [f"{a}.ctx.t", "const.merge_shape"], [f"{a}.merged"], name=f"{a}.merge_heads"),
            helper.make_node("Cast", [f"{a}.o.weight"], [f"{a}.o.w32"], name=f"{a}.o.cast", to=TP.FLOAT),
            helper.make_node("MatMul", [f"{a}.merged", f"{a}.o.w32"], [f"{a}.out"], name=f"{a}.o_proj"),
            helper.make_node("ScaledResidual", [x, f"{a}.out"], [f"{p}.resid1"], domain="showcase", name=f"{p}.residual1"),
            helper.make_node("LayerNormalization", [f"{p}.resid1", f"{p}.ln2.weight", f"{p}.ln2.bias"], [f"{p}.ln2.out"],
                             name=f"{p}.ln2", axis=-1, epsilon=1e-5),
            helper.make_node("DequantizeLinear", [f"{p}.mlp.up.weight_q", f"{p}.mlp.up.scale"], [f"{p}.mlp.up.w16"],
                             name=f"{p}.mlp.dequant", axis=1),
            helper.make_node("Cast", [f"{p}.mlp.up.w16"], [f"{p}.mlp.up.w32"], name=f"{p}.mlp.up.cast", to=TP.FLOAT),
            helper.make_node("MatMul", [f"{p}.ln2.out", f"{p}.mlp.up.w32"], [f"{p}.mlp.up"], name=f"{p}.mlp.up_proj"),
            helper.make_node("Gelu", [f"{p}.mlp.up"], [f"{p}.mlp.act"], name=f"{p}.mlp.gelu", approximate="tanh"),
            helper.make_node("Cast", [f"{p}.mlp.down.weight"], [f"{p}.mlp.down.w32"], name=f"{p}.mlp.down.cast", to=TP.FLOAT),
            helper.make_node("MatMul", [f"{p}.mlp.act", f"{p}.mlp.down.w32"], [f"{p}.mlp.down"], name=f"{p}.mlp.down_proj"),
            helper.make_node("ScaledResidual", [f"{p}.resid1", f"{p}.mlp.down"], [f"{p}.out"], domain="showcase",
                             name=f"{p}.residual2", alpha=0.5),
        ]
        x = f"{p}.out"
    # Final norm, an If choosing a temperature, a Loop applying a few refinement steps, the LM head.
    w("final_norm.weight", np.ones(D, f32))
    w("final_norm.bias", np.zeros(D, f32))
    head = (rng.standard_normal((D, V)) * 0.02).astype(f32)
    head[0, :4] = [np.nan, np.inf, -np.inf, -0.0]
    w("lm_head.weight", head, doc="output projection (float32, a few NaN/Inf on purpose)")
    then_g = helper.make_graph([helper.make_node("Div", ["final", "temp"], ["tempered"], name="temperature.div")], "apply_temperature", [],
                               [_vi("tempered", 1, ["batch", "seq", D])], initializer=[_raw("temp", 1, (), np.array(0.7, f32))])
    else_g = helper.make_graph([helper.make_node("Identity", ["final"], ["plain"], name="temperature.skip")], "no_temperature", [],
                               [_vi("plain", 1, ["batch", "seq", D])])
    body = helper.make_graph(
        [helper.make_node("Mul", ["state_in", "decay"], ["state_mul"], name="refine.decay"),
         helper.make_node("Add", ["state_mul", "tempered_out"], ["state_out"], name="refine.add"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="refine.cond")],
        "refine_body", [_vi("step", 7, []), _vi("cond_in", 9, []), _vi("state_in", 1, ["batch", "seq", D])],
        [_vi("cond_out", 9, []), _vi("state_out", 1, ["batch", "seq", D])],
        initializer=[_raw("decay", 1, (), np.array(0.5, f32))])
    w("refine.steps", np.array(2, np.int64))
    w("refine.cond", np.array(True))
    nodes += [
        helper.make_node("LayerNormalization", [x, "final_norm.weight", "final_norm.bias"], ["final"], name="final_norm", axis=-1),
        helper.make_node("If", ["use_temperature"], ["tempered_out"], name="temperature", then_branch=then_g, else_branch=else_g),
        helper.make_node("Loop", ["refine.steps", "refine.cond", "tempered_out"], ["refined"], name="refine", body=body),
        helper.make_node("MatMul", ["refined", "lm_head.weight"], ["logits"], name="lm_head"),
    ]
    fn = helper.make_function(
        "showcase", "ScaledResidual", ["x", "y"], ["z"],
        [helper.make_node("Constant", [], ["alpha"], name="alpha"),
         helper.make_node("Mul", ["y", "alpha"], ["ay"], name="scale"),
         helper.make_node("Add", ["x", "ay"], ["z"], name="add")],
        opset_imports=OPSET, doc_string="z = x + alpha * y (alpha defaults to 1.0)")
    del fn.node[0].attribute[:]
    fn.node[0].attribute.append(onnx.AttributeProto(name="value_float", ref_attr_name="alpha", type=onnx.AttributeProto.FLOAT))
    fn.attribute_proto.append(helper.make_attribute("alpha", 1.0))
    g = helper.make_graph(
        nodes, "tiny_transformer",
        [_vi("input_ids", TP.INT64, ["batch", "seq"]), _vi("use_temperature", TP.BOOL, [])],
        [_vi("logits", TP.FLOAT, ["batch", "seq", V])], initializer=inits,
        value_info=[_vi("h0", TP.FLOAT, ["batch", "seq", D]), _vi("final", TP.FLOAT, ["batch", "seq", D])],
        doc_string="2 layers, 4 heads, d=128, vocab 1024")
    m = _model(g, opsets=OPSET + [helper.make_opsetid("showcase", 1)], functions=[fn],
               doc_string="onemodel-view showcase: a tiny transformer-like model", model_version=3, domain="org.onemodel.showcase")
    for k, v in (("author", "onemodel-view testdata"), ("model_type", "tiny-transformer"), ("license", "Apache-2.0"),
                 ("layers", str(L))):
        p = m.metadata_props.add()
        p.key, p.value = k, v
    return m


MODELS = {
    "dtypes": m_dtypes,
    "typed": m_typed,
    "strings": m_strings,
    "subgraphs": m_subgraphs,
    "functions": m_functions,
    "sparse": m_sparse,
    "attributes": m_attributes,
    "types": m_types,
    "out_of_order": m_out_of_order,
    "showcase": m_showcase,
}


# ---------------------------------------------------------------------------------------------
# Re-assembling OneModel files by hand (what a writer never produces)
# ---------------------------------------------------------------------------------------------


def split(blob: bytes) -> tuple[dict, bytes]:
    """(manifest dict, data region bytes) of a OneModel file."""
    (_m, _v, _f, moff, mlen, doff, dlen, _fl, _r) = struct.unpack_from("<8sIIQQQQQQ", blob)
    return json.loads(blob[moff:moff + mlen]), blob[doff:doff + dlen]


def assemble(manifest: dict, data: bytes) -> bytes:
    """A OneModel file from a manifest dict and a data region (header per section 1.1)."""
    mbytes = json.dumps(manifest, separators=(",", ":"), ensure_ascii=False).encode()
    head = writer.header_bytes(len(mbytes), len(data))
    pad = bytes(-(64 + len(mbytes)) % 64)
    return head + mbytes + pad + data


def a_unknown_fields(out: str) -> bytes:
    man, data = split(open(os.path.join(out, "dtypes.onemodel"), "rb").read())
    man["x_future"] = {"nested": [1, 2, {"deep": None}], "flag": True, "ratio": 0.5}
    man["graph"]["x_graph_note"] = "ignored"
    man["graph"]["initializers"][0]["x_tensor_extra"] = [1, 2, 3]
    man["graph"]["initializers"][0]["data"]["x_data_extra"] = "ignored"
    man["graph"]["outputs"][0]["type"]["x_type_extra"] = 1
    man["graph"]["outputs"][0]["x_typed_name_extra"] = {}
    man["opsets"][0]["x_opset_extra"] = -1
    return assemble(man, data)


def a_shared_bytes(out: str) -> bytes:
    """Two initializers of the same dtype and dims pointing at the same bytes (the last one's own bytes dropped)."""
    rng = np.random.default_rng(4)
    arr = rng.standard_normal((8, 8)).astype(np.float32)
    g = helper.make_graph([helper.make_node("Add", ["a", "b"], ["y"], name="add")], "shared", [], [_vi("y", 1, [8, 8])],
                          initializer=[_raw("a", 1, (8, 8), arr), _raw("b", 1, (8, 8), arr)])
    blob = writer.to_bytes(onnx_import.import_proto(_model(g))[0])
    man, data = split(blob)
    a, b = man["graph"]["initializers"]
    b["data"] = dict(a["data"])
    return assemble(man, data[: a["data"]["offset"] + a["data"]["length"]])


ASSEMBLED = {"unknown_fields": a_unknown_fields, "shared_bytes": a_shared_bytes}


def _save_proto(m: onnx.ModelProto, path: str) -> None:
    with open(path, "wb") as f:
        f.write(m.SerializeToString(deterministic=True))


def generate(out: str) -> list[str]:
    """Write every file into ``out``; returns the file names written."""
    os.makedirs(out, exist_ok=True)
    written = []
    for name, build in MODELS.items():
        src = os.path.join(out, f"{name}.onnx")
        _save_proto(build(), src)
        doc = onnx_import.import_onnx(src)
        writer.write(doc.model, os.path.join(out, f"{name}.onemodel"))
        written += [f"{name}.onnx", f"{name}.onemodel"]
    m, data = m_external()
    src = os.path.join(out, "external.onnx")
    _save_proto(m, src)
    with open(src + ".data", "wb") as f:
        f.write(data)
    doc = onnx_import.import_onnx(src)
    writer.write(doc.model, os.path.join(out, "external.onemodel"))
    doc.close()
    written += ["external.onnx", "external.onnx.data", "external.onemodel"]
    for name, build in ASSEMBLED.items():
        with open(os.path.join(out, f"{name}.onemodel"), "wb") as f:
            f.write(build(out))
        written.append(f"{name}.onemodel")
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(HERE, "valid"))
    args = ap.parse_args(argv)
    for name in generate(args.out):
        print(os.path.join(args.out, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
