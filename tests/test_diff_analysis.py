"""analysis.diff on hand-built models: each single mutation is reported exactly, and nothing else."""

from __future__ import annotations

import dataclasses
import json
import sys
import threading

import numpy as np
import pytest

from onemodel_viewer.analysis.diff import compare as D
from onemodel_viewer.analysis.diff import tensors as T
from onemodel_viewer.format.document import Document
from onemodel_viewer.format.dtypes import DTYPES, AttrType, encode
from onemodel_viewer.format.schema import (
    Attribute,
    Function,
    Graph,
    Model,
    Node,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
    bits_from_float,
)
from onemodel_viewer.format.storage import BytesStorage


def tensor(name: str, values, code: int) -> Tensor:
    arr = np.asarray(values)
    data = encode(arr, DTYPES[code])
    return Tensor(name, code, tuple(arr.shape), length=len(data), file_offset=0, storage=BytesStorage(data))


def base_model(**over) -> Model:
    w = tensor("w", np.arange(12, dtype=np.float32).reshape(3, 4), 1)
    h = tensor("h", np.linspace(-1, 1, 10).astype(np.float16), 10)
    q = tensor("q", np.array([-8, -1, 0, 1, 7, 3, 2], dtype=np.int8), 22)
    body = Graph(
        name="body",
        inputs=(ValueInfo("i"), ValueInfo("c"), ValueInfo("s")),
        outputs=(ValueInfo("c2"), ValueInfo("s2")),
        nodes=(
            Node("Identity", "id", inputs=("c",), outputs=("c2",)),
            Node("Add", "add", inputs=("s", "w"), outputs=("s2",)),
        ),
    )
    fty = Type("tensor", 1, (3, "N"))
    nodes = (
        Node("MatMul", "mm", inputs=("x", "w"), outputs=("y",)),
        Node("LeakyRelu", "act", inputs=("y",), outputs=("z",),
             attributes=(Attribute("alpha", AttrType.FLOAT, bits_from_float(0.0)),)),
        Node("Conv", "conv1", inputs=("z", "w"), outputs=("c",),
             attributes=(Attribute("strides", AttrType.INTS, (1, 1)), Attribute("group", AttrType.INT, 1))),
        Node("Loop", "loop", inputs=("", "", "c"), outputs=("l",),
             attributes=(Attribute("body", AttrType.GRAPH, body),)),
        Node("Constant", "", outputs=("k",), attributes=(Attribute("value", AttrType.TENSOR, h),)),
        Node("Relu", "", inputs=("k",), outputs=("r",)),
    )
    g = Graph(
        name="main",
        inputs=(ValueInfo("x", fty),),
        outputs=(ValueInfo("l", fty), ValueInfo("r")),
        value_info=(ValueInfo("y", fty),),
        initializers=(w, q),
        nodes=nodes,
        order=tuple(range(len(nodes))),
    )
    kw = dict(
        ir_version=8,
        graph=g,
        producer_name="test",
        opsets=(OperatorSet("", 17),),
        metadata=(("author", "me"), ("license", "MIT")),
    )
    kw.update(over)
    return Model(**kw)


def replace_graph(m: Model, **over) -> Model:
    return dataclasses.replace(m, graph=dataclasses.replace(m.graph, **over))


def replace_node(m: Model, index: int, **over) -> Model:
    nodes = list(m.graph.nodes)
    nodes[index] = dataclasses.replace(nodes[index], **over)
    return replace_graph(m, nodes=tuple(nodes))


def replace_init(m: Model, index: int, t: Tensor) -> Model:
    inits = list(m.graph.initializers)
    inits[index] = t
    return replace_graph(m, initializers=tuple(inits))


def only(result: D.DiffResult) -> D.Difference:
    assert not result.equal
    assert len(result.differences) == 1, [d.as_json() for d in result.differences]
    return result.differences[0]


def test_same_model_is_equal():
    r = D.diff_models(base_model(), base_model())
    assert r.equal and r.differences == []
    assert r.root.status == "equal"
    assert r.compared_bytes > 0


def test_flipped_weight_byte():
    m = base_model()
    data = bytearray(m.graph.initializers[0].raw().tobytes())
    data[4 * 5 + 3] ^= 0x80  # sign of element 5 (value 5.0)
    w2 = dataclasses.replace(m.graph.initializers[0], storage=BytesStorage(bytes(data)))
    d = only(D.diff_models(m, replace_init(m, 0, w2)))
    assert d.where == 'graph.initializers["w"].data'
    assert d.change == "changed"
    assert (d.a, d.b) == ("5.0", "-5.0")
    assert d.detail["differing"] == 1
    assert d.detail["first_index"] == [1, 1]
    assert d.detail["first_byte"] == 20
    assert d.detail["max_abs"] == 10.0
    assert d.detail["max_rel"] == 2.0
    json.dumps(d.as_json(), allow_nan=False)


def test_float16_element_in_attribute_tensor():
    m = base_model()
    h = m.graph.nodes[4].attributes[0].value
    vals = h.values().copy()
    vals[7] = np.float16(100.0)
    h2 = tensor("h", vals, 10)
    m2 = replace_node(m, 4, attributes=(Attribute("value", AttrType.TENSOR, h2),))
    d = only(D.diff_models(m, m2))
    assert d.where == "graph.nodes[4].attributes[\"value\"].data"
    assert d.b == "100.0"
    assert d.detail["first_index"] == [7]
    assert d.detail["differing"] == 1


def test_int4_element():
    m = base_model()
    q = m.graph.initializers[1]
    vals = q.values().astype(np.int8)
    vals[4] = -3
    q2 = tensor("q", vals, 22)
    d = only(D.diff_models(m, replace_init(m, 1, q2)))
    assert d.where == 'graph.initializers["q"].data'
    assert (d.a, d.b) == ("7", "-3")
    assert d.detail["first_index"] == [4]
    assert d.detail["differing"] == 1
    assert d.detail["max_abs"] == 10  # integers: exact |b - a| (issue 17)
    assert "rel_l2" not in d.detail  # not a float type


def test_float_attribute_sign_of_zero():
    m = base_model()
    m2 = replace_node(m, 1, attributes=(Attribute("alpha", AttrType.FLOAT, bits_from_float(-0.0)),))
    d = only(D.diff_models(m, m2))
    assert d.where == 'graph.nodes["act"].attributes["alpha"]'
    assert (d.a, d.b) == ("0.0", "-0.0")


def test_float_attribute_nan_payload():
    m = replace_node(base_model(), 1, attributes=(Attribute("alpha", AttrType.FLOAT, 0x7FC00000),))
    m2 = replace_node(m, 1, attributes=(Attribute("alpha", AttrType.FLOAT, 0x7FC00001),))
    d = only(D.diff_models(m, m2))
    assert (d.a, d.b) == ("nan (0x7fc00000 quiet payload 0x0)", "nan (0x7fc00001 quiet payload 0x1)")
    assert D.diff_models(m, m).equal


def test_ints_attribute():
    m = base_model()
    m2 = replace_node(m, 2, attributes=(Attribute("strides", AttrType.INTS, (2, 1)), Attribute("group", AttrType.INT, 1)))
    d = only(D.diff_models(m, m2))
    assert d.where == 'graph.nodes["conv1"].attributes["strides"]'
    assert (d.a, d.b) == ([1, 1], [2, 1])


def test_attribute_order_is_insignificant():
    m = base_model()
    attrs = m.graph.nodes[2].attributes
    assert D.diff_models(m, replace_node(m, 2, attributes=attrs[::-1])).equal


def test_attribute_added_and_removed():
    m = base_model()
    attrs = m.graph.nodes[2].attributes
    m2 = replace_node(m, 2, attributes=attrs + (Attribute("pads", AttrType.INTS, (0, 0, 0, 0)),))
    d = only(D.diff_models(m, m2))
    assert (d.where, d.change, d.a, d.b) == ('graph.nodes["conv1"].attributes["pads"]', "added", None, [0, 0, 0, 0])
    d = only(D.diff_models(m2, m))
    assert (d.where, d.change) == ('graph.nodes["conv1"].attributes["pads"]', "removed")


def test_renamed_node():
    m = base_model()
    d = only(D.diff_models(m, replace_node(m, 2, name="conv_renamed")))
    assert (d.where, d.change, d.a, d.b) == ('graph.nodes["conv1"].name', "changed", "conv1", "conv_renamed")


def test_op_changed():
    m = base_model()
    d = only(D.diff_models(m, replace_node(m, 5, op="Sigmoid")))
    assert (d.where, d.a, d.b) == ("graph.nodes[5].op", "Relu", "Sigmoid")


def test_added_and_removed_initializer():
    m = base_model()
    extra = tensor("bias", np.zeros(4, dtype=np.float32), 1)
    m2 = replace_graph(m, initializers=m.graph.initializers + (extra,))
    d = only(D.diff_models(m, m2))
    assert (d.where, d.change, d.a, d.b) == ('graph.initializers["bias"]', "added", None, "float[4]")
    d = only(D.diff_models(m2, m))
    assert (d.where, d.change, d.a, d.b) == ('graph.initializers["bias"]', "removed", "float[4]", None)


def test_dtype_change():
    m = base_model()
    w = m.graph.initializers[0]
    w2 = tensor("w", w.values().astype(np.float16), 10)
    d = only(D.diff_models(m, replace_init(m, 0, w2)))
    assert (d.where, d.a, d.b) == ('graph.initializers["w"].dtype', "float", "float16")


def test_dims_change():
    m = base_model()
    w = m.graph.initializers[0]
    w2 = tensor("w", w.values().reshape(4, 3), 1)
    d = only(D.diff_models(m, replace_init(m, 0, w2)))
    assert (d.where, d.a, d.b) == ('graph.initializers["w"].dims', [3, 4], [4, 3])


def test_opset_changed_and_default_domain_alias():
    m = base_model()
    d = only(D.diff_models(m, dataclasses.replace(m, opsets=(OperatorSet("", 18),))))
    assert (d.where, d.a, d.b) == ('model.opsets[""]', 17, 18)
    r = D.diff_models(m, dataclasses.replace(m, opsets=(OperatorSet("ai.onnx", 17),)))
    assert r.equal
    assert any("ai.onnx" in e for e in r.equivalences)


def test_metadata_entry():
    m = base_model()
    m2 = dataclasses.replace(m, metadata=(("author", "you"), ("license", "MIT")))
    d = only(D.diff_models(m, m2))
    assert (d.where, d.a, d.b) == ('model.metadata["author"]', "me", "you")
    m3 = dataclasses.replace(m, metadata=m.metadata + (("k", "v"),))
    d = only(D.diff_models(m, m3))
    assert (d.where, d.change, d.b) == ('model.metadata["k"]', "added", "v")


def test_metadata_order_kept():
    m = base_model()
    d = only(D.diff_models(m, dataclasses.replace(m, metadata=m.metadata[::-1])))
    assert d.where == "model.metadata"
    assert d.detail == {"order": True}


def test_change_inside_loop_body():
    m = base_model()
    loop = m.graph.nodes[3]
    body = loop.attributes[0].value
    nodes = (body.nodes[0], dataclasses.replace(body.nodes[1], op="Sub"))
    body2 = dataclasses.replace(body, nodes=nodes)
    m2 = replace_node(m, 3, attributes=(Attribute("body", AttrType.GRAPH, body2),))
    d = only(D.diff_models(m, m2))
    assert d.where == 'graph.nodes["loop"].attributes["body"].nodes["add"].op'
    # the tree marks the path down to it as changed, the rest equal
    statuses = {n.where: n.status for n in D.diff_models(m, m2).root.walk()}
    assert statuses['graph.nodes["loop"]'] == "changed"
    assert statuses['graph.nodes["loop"].attributes["body"].nodes["id"]'] == "equal"
    assert statuses['graph.nodes["mm"]'] == "equal"
    assert statuses["model"] == "equal"


def test_node_order_is_an_equivalence():
    m = base_model()
    nodes = m.graph.nodes
    swapped = (nodes[4], nodes[5], nodes[0], nodes[1], nodes[2], nodes[3])
    m2 = replace_graph(m, nodes=swapped, order=tuple(range(6)))
    r = D.diff_models(m, m2)
    assert r.equal, [d.as_json() for d in r.differences]
    assert any("different order" in e for e in r.equivalences)


def test_node_added_and_removed():
    m = base_model()
    extra = Node("Neg", "neg", inputs=("r",), outputs=("n",))
    m2 = replace_graph(m, nodes=m.graph.nodes + (extra,), order=tuple(range(7)))
    d = only(D.diff_models(m, m2))
    assert (d.where, d.change, d.b["op"]) == ('graph.nodes["neg"]', "added", "Neg")
    d = only(D.diff_models(m2, m))
    assert (d.where, d.change) == ('graph.nodes["neg"]', "removed")


def test_input_type_changed():
    m = base_model()
    m2 = replace_graph(m, inputs=(ValueInfo("x", Type("tensor", 1, (3, 5))),))
    d = only(D.diff_models(m, m2))
    assert (d.where, d.a, d.b) == ('graph.inputs["x"].type', "float[3,N]", "float[3,5]")


def test_function_change():
    f = Function("f", "custom", inputs=("a",), outputs=("b",), nodes=(Node("Relu", "r", inputs=("a",), outputs=("b",)),),
                 opsets=(OperatorSet("", 17),))
    m = base_model(functions=(f,))
    f2 = dataclasses.replace(f, nodes=(Node("Relu", "r", inputs=("a",), outputs=("b",), domain="ai.onnx"),))
    r = D.diff_models(m, base_model(functions=(f2,)))
    assert r.equal and any("node domain" in e for e in r.equivalences)
    f3 = dataclasses.replace(f, nodes=(Node("Elu", "r", inputs=("a",), outputs=("b",)),))
    d = only(D.diff_models(m, base_model(functions=(f3,))))
    assert d.where == 'functions["f"].nodes["r"].op'
    d = only(D.diff_models(m, base_model(functions=(dataclasses.replace(f, domain="other"),))))
    assert (d.where, d.a, d.b) == ('functions["f"].domain', "custom", "other")
    # names that do not identify a function alone: domain:name
    g = dataclasses.replace(f, domain="second")
    d = only(D.diff_models(base_model(functions=(f, g)), base_model(functions=(f, dataclasses.replace(g, doc="x")))))
    assert d.where == 'functions["second:f"].doc'


def test_sparse_initializer():
    vals = tensor("s", np.array([1.0, 2.0], dtype=np.float32), 1)
    idx = tensor("", np.array([0, 5], dtype=np.int64), 7)
    m = base_model()
    m1 = replace_graph(m, sparse_initializers=(SparseTensor(vals, idx, (10,)),))
    idx2 = tensor("", np.array([0, 6], dtype=np.int64), 7)
    m2 = replace_graph(m, sparse_initializers=(SparseTensor(vals, idx2, (10,)),))
    d = only(D.diff_models(m1, m2))
    assert d.where == 'graph.sparse_initializers["s"].indices.data'
    assert (d.a, d.b) == ("5", "6")


def test_string_tensor():
    t1 = Tensor("s", 8, (2,), strings=(b"a", b"b"))
    t2 = Tensor("s", 8, (2,), strings=(b"a", b"c"))
    m = base_model()
    d = only(D.diff_models(replace_init(m, 1, t1), replace_init(m, 1, t2)))
    assert (d.where, d.a, d.b, d.detail["first_index"]) == ('graph.initializers["s"].data', "b", "c", [1])


def test_nan_payload_in_tensor_data_counts_bitwise():
    a = np.array([1.0, np.nan, 3.0], dtype=np.float32)
    b = a.copy()
    b.view(np.uint32)[1] = 0x7FC00001
    m = base_model()
    ta, tb = tensor("w", a, 1), tensor("w", b, 1)
    d = only(D.diff_models(replace_init(m, 0, ta), replace_init(m, 0, tb)))
    assert d.detail["differing"] == 1 and d.detail["first_index"] == [1]
    assert d.a.startswith("nan") and d.a != d.b
    assert D.diff_models(replace_init(m, 0, ta), replace_init(m, 0, tensor("w", a.copy(), 1))).equal


@pytest.mark.parametrize("code", [1, 2, 5, 7, 10, 11, 14, 15, 16, 17, 21, 23, 25, 26, 27, 9])
def test_many_differences_across_chunks(code, monkeypatch):
    """Counting, first index and max abs across chunk and sub-chunk boundaries, every width."""
    monkeypatch.setattr(T, "CHUNK", 48 * 8)
    monkeypatch.setattr(T, "SEGMENT", 2 * 48 * 8)
    monkeypatch.setattr(T, "SLICE", 48)
    info = DTYPES[code]
    n = 1000
    rng = np.random.default_rng(code)
    codes = rng.integers(0, 1 << min(info.bits, 8), size=n * max(1, info.bits // 8), dtype=np.uint8)
    if info.bits >= 8:
        a = codes.view(info.numpy)[:n]
    else:
        a = codes[:n].view(info.numpy)
    if code == 9:
        a = (codes[:n] & 1).astype(bool)
    b = a.copy()
    flip = [3, 17, 400, 999]
    bb = b.view(np.uint8).reshape(n, -1) if info.bits >= 8 else None
    for i in flip:
        if info.bits >= 8:
            bb[i, 0] ^= 1
        else:
            b.view(np.uint8)[i] ^= 1
    ta, tb = tensor("w", a, code), tensor("w", b, code)
    m = base_model()
    d = only(D.diff_models(replace_init(m, 0, ta), replace_init(m, 0, tb)))
    assert d.detail["differing"] == len(flip)
    assert d.detail["first_index"] == [3]
    json.dumps(d.as_json(), allow_nan=False)


def test_cancel_and_progress():
    m = base_model()
    seen = []
    D.diff_models(m, m, progress=lambda done, total: seen.append((done, total)))
    assert seen[-1][0] == seen[-1][1] > 0
    ev = threading.Event()
    ev.set()
    with pytest.raises(D.DiffCancelled):
        D.diff_models(m, m, cancel=ev)


def test_diff_documents_lists_onnx_equivalence():
    m = base_model()
    da = Document("a.onnx", "onnx", 0, model=m)
    db = Document("b.onemodel", "onemodel", 0, model=base_model())
    r = D.diff(da, db)
    assert r.equal
    assert any("raw_data" in e for e in r.equivalences)
    out = r.as_json("a.onnx", "b.onemodel")
    assert out == {"a": "a.onnx", "b": "b.onemodel", "equal": True, "differences": [], "equivalences": r.equivalences,
                   "not_compared": []}


def test_identical_nodes_make_the_same_tree_as_the_full_comparison(monkeypatch):
    """Nodes found identical skip the field-by-field comparison (``_same_node``: the fast path for a model
    against its converted twin); the side-by-side tree must not change: every entry, attributes and
    subgraphs included, with the same ``where``, status and records."""
    from onemodel_viewer.analysis.diff import structure as S

    def entries(r: D.DiffResult) -> list:
        return [(n.where, n.status, type(n.a).__name__, type(n.b).__name__, len(n.children)) for n in r.root.walk()]

    m = base_model()
    changed = replace_node(m, 2, attributes=(Attribute("strides", AttrType.INTS, (1, 2)), Attribute("group", AttrType.INT, 1)))
    fast = [entries(D.diff_models(m, other)) for other in (base_model(), changed)]
    calls = []

    def never(a, b) -> bool:
        calls.append(a)
        return False

    monkeypatch.setattr(S, "_same_node", never)
    slow = [entries(D.diff_models(m, other)) for other in (base_model(), changed)]
    assert calls and fast == slow
    assert ('graph.nodes["conv1"].attributes["strides"]', "changed", "Attribute", "Attribute", 0) in fast[1]
    assert ('graph.nodes["act"].attributes["alpha"]', "equal", "Attribute", "Attribute", 0) in fast[0]


def test_differences_only_diff_finds_what_the_whole_tree_finds():
    """``whole_tree=False`` (the ``--diff --json`` / ``--summary`` path) leaves identical nodes out of the
    tree; its differences (data ones included), equivalences and totals must be the whole tree's."""
    m = base_model()
    w = m.graph.initializers[0]
    data = bytearray(w.raw().tobytes())
    data[7] ^= 1
    others = [
        base_model(),
        replace_node(m, 2, attributes=(Attribute("strides", AttrType.INTS, (1, 2)), Attribute("group", AttrType.INT, 1))),
        replace_node(m, 0, op="Gemm"),
        replace_init(m, 0, dataclasses.replace(w, storage=BytesStorage(bytes(data)))),
        replace_graph(m, nodes=m.graph.nodes[::-1], order=None),
    ]
    for other in others:
        whole = D.StagedDiff(m, other).compare_data()
        part = D.StagedDiff(m, other, whole_tree=False).compare_data()
        assert part.as_json("a", "b") == whole.as_json("a", "b")
        assert part.equal == whole.equal
        kept = {n.where for n in part.root.walk()}
        assert kept <= {n.where for n in whole.root.walk()}
        assert 'graph.nodes["act"]' not in kept  # identical in every pair above
        assert all(d.where.rsplit(".", 1)[0] in kept or d.where in kept for d in part.differences)


def test_core_does_not_import_ui():
    import subprocess

    code = (
        "import sys; sys.modules['textual'] = None; sys.modules['rich'] = None;"
        "import onemodel_viewer.analysis.diff.compare"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=60, deadline=None)
@given(
    code=st.sampled_from([1, 3, 4, 10, 11, 15, 16, 19, 21, 22, 23, 25, 27, 28]),
    n=st.integers(1, 700),
    flips=st.lists(st.integers(0, 10_000), min_size=0, max_size=12),
    seed=st.integers(0, 2**32 - 1),
)
def test_data_comparison_property(code, n, flips, seed):
    """Any set of flipped bits: the count of differing elements and the first one are exact."""
    info = DTYPES[code]
    nbytes = info.byte_length(n)
    raw = np.random.default_rng(seed).integers(0, 256, nbytes, dtype=np.uint8)
    if info.bits < 8:  # keep padding bits of the last byte zero, as a writer does
        used = n * info.bits - (nbytes - 1) * 8
        raw[-1] &= (1 << used) - 1
    raw2 = raw.copy()
    touched = set()
    for f in flips:
        bit = f % (n * info.bits)
        raw2[bit // 8] ^= 1 << (bit % 8)
        touched ^= {(bit, None)}
    bits_changed = {b for b, _ in touched}
    elements = {b // info.bits for b in bits_changed}
    ta = Tensor("w", code, (n,), length=nbytes, file_offset=0, storage=BytesStorage(raw.tobytes()))
    tb = Tensor("w", code, (n,), length=nbytes, file_offset=0, storage=BytesStorage(raw2.tobytes()))
    m = base_model()
    r = D.diff_models(replace_init(m, 0, ta), replace_init(m, 0, tb))
    if not elements:
        assert r.equal
        return
    d = only(r)
    assert d.detail["differing"] == len(elements)
    assert d.detail["first_index"] == [min(elements)]
    json.dumps(d.as_json(), allow_nan=False)
