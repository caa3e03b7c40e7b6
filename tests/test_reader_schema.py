"""Schema building (spec section 2): every attribute type, type kind and dtype; required fields and JSON types."""

from __future__ import annotations

import base64
import json

import ml_dtypes  # noqa: F401 - the dtype table needs it
import numpy as np
import pytest

from onemodel_viewer.format.dtypes import DTYPES, AttrType, encode
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.reader import open_path
from onemodel_viewer.format.schema import Attribute, Graph, Node, SparseTensor, Tensor, Type, ValueInfo

from test_reader_util import align, graph, model, node, pack, tensor, write


def read(tmp_path, m, data=b""):
    return open_path(write(tmp_path, pack(m, data)))


def err(tmp_path, m, data=b""):
    p = write(tmp_path, pack(m, data))
    with pytest.raises(FormatError) as ei:
        open_path(p)
    diag = open_path(p, mode="diagnose")
    assert diag.problems[0] == ei.value.problem
    return ei.value.kind, ei.value.where


def b64(b: bytes) -> str:
    return base64.b64encode(b).decode()


def with_attrs(*attrs, opsets=None):
    return model(graph(nodes=[node("Op", attributes=list(attrs))]), **({"opsets": opsets} if opsets else {}))


# --- every attribute type ----------------------------------------------------------------------


def test_every_attribute_type(tmp_path):
    sub = graph(name="body", inputs=[{"name": "a"}], outputs=[{"name": "b"}], nodes=[node("Neg", ["a"], ["b"])])
    t = tensor("t", 6, [2], 0, 8)
    sp = {"values": tensor("sv", 1, [1], 64, 4), "indices": tensor("si", 7, [1], 128, 8), "dims": [4]}
    ty = {"kind": "tensor", "elem": 1, "shape": [2]}
    attrs = [
        {"name": "f", "type": 1, "value": 1065353216},
        {"name": "i", "type": 2, "value": -5},
        {"name": "s", "type": 3, "value": b64(b"hi\x00")},
        {"name": "t", "type": 4, "value": t},
        {"name": "g", "type": 5, "value": sub},
        {"name": "fs", "type": 6, "value": [0, 1065353216]},
        {"name": "is", "type": 7, "value": [1, 2, 3]},
        {"name": "ss", "type": 8, "value": [b64(b"a"), b64(b"")]},
        {"name": "ts", "type": 9, "value": [t, t]},
        {"name": "gs", "type": 10, "value": [sub, sub]},
        {"name": "sp", "type": 11, "value": sp},
        {"name": "sps", "type": 12, "value": [sp]},
        {"name": "ty", "type": 13, "value": ty},
        {"name": "tys", "type": 14, "value": [ty, {"kind": "sequence", "inner": ty}]},
    ]
    data = np.array([7, 8], "<i4").tobytes() + bytes(56) + np.array([1.5], "<f4").tobytes() + bytes(60) + np.array([3], "<i8").tobytes()
    doc = read(tmp_path, with_attrs(*attrs), data)
    a = {x.name: x for x in doc.model.graph.nodes[0].attributes}
    assert [x.type for x in doc.model.graph.nodes[0].attributes] == list(range(1, 15))
    assert a["f"].value == 1065353216 and a["f"].float_value == 1.0
    assert a["i"].value == -5
    assert a["s"].value == b"hi\x00"
    assert isinstance(a["t"].value, Tensor) and a["t"].value.values().tolist() == [7, 8]
    assert a["t"].value.where == "manifest.graph.nodes[0].attributes[3].value"
    g = a["g"].value
    assert isinstance(g, Graph) and g.where == "manifest.graph.nodes[0].attributes[4].value"
    assert g.nodes[0].where == "manifest.graph.nodes[0].attributes[4].value.nodes[0]" and g.order == (0,)
    assert a["fs"].value == (0, 1065353216)
    assert a["is"].value == (1, 2, 3)
    assert a["ss"].value == (b"a", b"")
    assert [x.values().tolist() for x in a["ts"].value] == [[7, 8], [7, 8]]
    assert [x.where for x in a["gs"].value] == [f"manifest.graph.nodes[0].attributes[9].value[{i}]" for i in (0, 1)]
    s = a["sp"].value
    assert isinstance(s, SparseTensor) and s.dims == (4,) and s.name == "sv"
    assert s.values.values().tolist() == [1.5] and s.indices.values().tolist() == [3]
    assert s.indices.where == "manifest.graph.nodes[0].attributes[10].value.indices"
    assert len(a["sps"].value) == 1
    assert a["ty"].value == Type("tensor", 1, (2,), where="manifest.graph.nodes[0].attributes[12].value")
    assert a["tys"].value[1].inner.where == "manifest.graph.nodes[0].attributes[13].value[1].inner"


def test_attribute_ref_in_function(tmp_path):
    f = {
        "name": "F", "domain": "local", "inputs": ["x"], "outputs": ["y"], "attribute_names": ["alpha"],
        "attribute_defaults": [{"name": "beta", "type": 2, "value": 3}],
        "nodes": [node("Elu", ["x"], ["y"], attributes=[{"name": "alpha", "type": 1, "ref": "alpha"}, {"name": "b", "type": 2, "ref": "beta"}])],
        "opsets": [{"domain": "", "version": 17}],
    }
    doc = read(tmp_path, model(functions=[f]))
    fn = doc.model.functions[0]
    assert fn.attribute_names == ("alpha",) and fn.attribute_defaults[0].value == 3
    assert [(a.ref, a.value, a.type) for a in fn.nodes[0].attributes] == [("alpha", None, 1), ("beta", None, 2)]
    assert fn.nodes[0].where == "manifest.functions[0].nodes[0]"


@pytest.mark.parametrize(
    "attr,expect",
    [
        ({"name": "a", "type": 0, "value": 1}, (Kind.MALFORMED, ".type")),
        ({"name": "a", "type": 0}, (Kind.MALFORMED, ".type")),
        ({"name": "a", "type": 99, "value": 1}, (Kind.UNSUPPORTED, ".type")),
        ({"name": "a", "type": -1, "value": 1}, (Kind.UNSUPPORTED, ".type")),
        ({"name": "a", "type": 2}, (Kind.MALFORMED, ".value")),
        ({"name": "a", "type": 2, "value": 1.0}, (Kind.MALFORMED, ".value")),
        ({"name": "a", "type": 2, "value": True}, (Kind.MALFORMED, ".value")),
        ({"name": "a", "type": 7, "value": [1, "2"]}, (Kind.MALFORMED, ".value[1]")),
        ({"name": "a", "type": 7, "value": 1}, (Kind.MALFORMED, ".value")),
        ({"name": "a", "type": 3, "value": 5}, (Kind.MALFORMED, ".value")),
        ({"name": "a", "type": 5, "value": []}, (Kind.MALFORMED, ".value")),
        ({"type": 2, "value": 1}, (Kind.MALFORMED, ".name")),
        ({"name": "a", "value": 1}, (Kind.MALFORMED, ".type")),
        ({"name": "a", "type": "2", "value": 1}, (Kind.MALFORMED, ".type")),
        ({"name": "a", "type": 2, "value": 1, "ref": 5}, (Kind.MALFORMED, ".ref")),
        ({"name": "a", "type": 2, "value": 1, "doc": None}, (Kind.MALFORMED, ".doc")),
    ],
)
def test_attribute_errors(tmp_path, attr, expect):
    kind, where = err(tmp_path, with_attrs(attr))
    assert (kind, where) == (expect[0], "manifest.graph.nodes[0].attributes[0]" + expect[1])


def test_ref_with_value_is_malformed(tmp_path):
    f = {"name": "F", "attribute_names": ["a"], "nodes": [node("Elu", attributes=[{"name": "a", "type": 2, "ref": "a", "value": 1}])]}
    assert err(tmp_path, model(functions=[f])) == (Kind.MALFORMED, "manifest.functions[0].nodes[0].attributes[0].value")


# --- every type kind ---------------------------------------------------------------------------


def test_every_type_kind(tmp_path):
    types = [
        {"kind": "tensor", "elem": 1, "shape": [1, "batch", None]},
        {"kind": "tensor", "elem": 7},
        {"kind": "tensor", "elem": 7, "shape": []},
        {"kind": "sparse_tensor", "elem": 1, "shape": [3]},
        {"kind": "sequence", "inner": {"kind": "tensor", "elem": 1}},
        {"kind": "optional", "inner": {"kind": "sequence", "inner": {"kind": "tensor", "elem": 6}}},
        {"kind": "map", "key": 7, "inner": {"kind": "tensor", "elem": 1}},
        {"kind": "opaque", "domain": "d", "name": "n"},
    ]
    ins = [{"name": f"x{i}", "type": t} for i, t in enumerate(types)]
    doc = read(tmp_path, model(graph(inputs=ins + [{"name": "untyped"}])))
    got = [vi.type for vi in doc.model.graph.inputs]
    assert got[0].shape == (1, "batch", None) and got[1].shape is None and got[2].shape == ()
    assert got[3].kind == "sparse_tensor"
    assert got[4].inner.elem == 1 and got[5].inner.inner.elem == 6
    assert (got[6].key, got[6].inner.elem) == (7, 1)
    assert (got[7].domain, got[7].name) == ("d", "n")
    assert got[8] is None
    assert str(got[0]) == "float[1,batch,?]"
    assert got[5].inner.where == "manifest.graph.inputs[5].type.inner"


@pytest.mark.parametrize(
    "typ,expect",
    [
        ({"elem": 1}, (Kind.MALFORMED, ".kind")),
        ({"kind": 3}, (Kind.MALFORMED, ".kind")),
        ({"kind": "tensorish"}, (Kind.UNSUPPORTED, ".kind")),
        ({"kind": "tensor"}, (Kind.MALFORMED, ".elem")),
        ({"kind": "tensor", "elem": 1, "shape": [1, -2]}, (Kind.INVALID_MODEL, ".shape[1]")),
        ({"kind": "tensor", "elem": 1, "shape": [1, 2.0]}, (Kind.MALFORMED, ".shape[1]")),
        ({"kind": "tensor", "elem": 1, "shape": [True]}, (Kind.MALFORMED, ".shape[0]")),
        ({"kind": "tensor", "elem": 1, "shape": {}}, (Kind.MALFORMED, ".shape")),
        ({"kind": "sequence"}, (Kind.MALFORMED, ".inner")),
        ({"kind": "map", "inner": {"kind": "tensor", "elem": 1}}, (Kind.MALFORMED, ".key")),
        ({"kind": "optional", "inner": {"kind": "nope"}}, (Kind.UNSUPPORTED, ".inner.kind")),
        ({"kind": "opaque", "name": 1}, (Kind.MALFORMED, ".name")),
        ([], (Kind.MALFORMED, "")),
    ],
)
def test_type_errors(tmp_path, typ, expect):
    kind, where = err(tmp_path, model(graph(inputs=[{"name": "x", "type": typ}])))
    assert (kind, where) == (expect[0], "manifest.graph.inputs[0].type" + expect[1])


# --- every dtype -------------------------------------------------------------------------------


def test_every_dtype_code_values(tmp_path):
    inits, blobs, off = [], b"", 0
    rng = np.random.default_rng(0)
    expected = {}
    for code, dt in sorted(DTYPES.items()):
        if code == 8:
            inits.append({"name": "s", "dtype": 8, "dims": [2], "strings": [b64(b"x"), b64(b"\xff")]})
            continue
        n = 5
        if dt.bits >= 8:
            raw = rng.integers(0, 256, size=dt.byte_length(n), dtype=np.uint8).tobytes()
            if dt.is_float and dt.bits >= 16:  # avoid NaN compare trouble: zero exponent bits are fine
                raw = bytes(len(raw))
            if code == 9:
                raw = bytes([0, 1, 1, 0, 1])
        else:
            vals = np.arange(n).astype(dt.numpy) if not dt.is_float else np.zeros(n, dt.numpy)
            raw = encode(vals, dt)
        assert len(raw) == dt.byte_length(n)
        inits.append(tensor(f"t{code}", code, [n], off, len(raw)))
        expected[code] = raw
        blobs += raw + bytes(align(len(raw)) - len(raw))
        off = len(blobs)
    doc = read(tmp_path, model(graph(initializers=inits)), blobs)
    for t in doc.model.graph.initializers:
        v = t.values()
        if t.dtype == 8:
            assert v.tolist() == [b"x", b"\xff"]
            continue
        assert v.shape == (5,) and v.dtype == DTYPES[t.dtype].numpy
        assert encode(v, DTYPES[t.dtype]) == expected[t.dtype]
        assert bytes(t.raw()) == expected[t.dtype]


def test_scalar_and_empty_tensors(tmp_path):
    inits = [tensor("scalar", 1, [], 0, 4), tensor("empty", 1, [0, 3], 0, 0)]
    doc = read(tmp_path, model(graph(initializers=inits)), np.array([2.5], "<f4").tobytes())
    s, e = doc.model.graph.initializers
    assert s.values().shape == () and float(s.values()) == 2.5
    assert e.values().shape == (0, 3)


# --- model-level and required fields ----------------------------------------------------------


def test_model_fields(tmp_path):
    m = model(
        producer_name="p", producer_version="1", domain="d", doc="hello", model_version=7,
        metadata=[{"key": "k1", "value": "v1"}, {"key": "k0", "value": "v0"}],
        opsets=[{"domain": "", "version": 17}, {"domain": "com.x", "version": 1}, {"version": 18}],
    )
    mm = read(tmp_path, m).model
    assert (mm.producer_name, mm.producer_version, mm.domain, mm.doc, mm.model_version) == ("p", "1", "d", "hello", 7)
    assert mm.metadata == (("k1", "v1"), ("k0", "v0"))
    assert [(o.domain, o.version) for o in mm.opsets] == [("", 17), ("com.x", 1), ("", 18)]
    assert mm.ir_version == 8 and mm.format_version == 1


def test_unknown_fields_ignored(tmp_path):
    m = model(graph(nodes=[node("Relu", ["x"], ["y"], future={"a": [1.5, None]})], inputs=[{"name": "x", "x": 1}], extra=2.5), later=True)
    doc = read(tmp_path, m)
    assert doc.valid and doc.model.graph.nodes[0].op == "Relu"


def test_optional_fields_default(tmp_path):
    m = {"format": "onemodel", "version": 1, "ir_version": 3, "graph": {"nodes": [{"op": "Constant"}]}, "opsets": [{"version": 1}]}
    doc = read(tmp_path, m)
    assert doc.valid
    n = doc.model.graph.nodes[0]
    assert (n.name, n.domain, n.inputs, n.outputs, n.attributes) == ("", "", (), (), ())
    assert sorted(f.where for f in doc.findings if f.code == "missing-graph-array") == [
        "manifest.graph.initializers", "manifest.graph.inputs", "manifest.graph.outputs",
        "manifest.graph.sparse_initializers", "manifest.graph.value_info",
    ]


@pytest.mark.parametrize(
    "mutate,expect",
    [
        (lambda m: m.pop("format"), (Kind.MALFORMED, "manifest.format")),
        (lambda m: m.update(format="onnx"), (Kind.MALFORMED, "manifest.format")),
        (lambda m: m.update(format=1), (Kind.MALFORMED, "manifest.format")),
        (lambda m: m.pop("version"), (Kind.MALFORMED, "manifest.version")),
        (lambda m: m.pop("ir_version"), (Kind.MALFORMED, "manifest.ir_version")),
        (lambda m: m.update(ir_version=2), (Kind.INVALID_MODEL, "manifest.ir_version")),
        (lambda m: m.pop("graph"), (Kind.MALFORMED, "manifest.graph")),
        (lambda m: m.update(graph=[]), (Kind.MALFORMED, "manifest.graph")),
        (lambda m: m.update(producer_name=None), (Kind.MALFORMED, "manifest.producer_name")),
        (lambda m: m.update(model_version="1"), (Kind.MALFORMED, "manifest.model_version")),
        (lambda m: m.update(opsets={}), (Kind.MALFORMED, "manifest.opsets")),
        (lambda m: m.update(opsets=[{"domain": ""}]), (Kind.MALFORMED, "manifest.opsets[0].version")),
        (lambda m: m.update(opsets=[{"domain": 1, "version": 1}]), (Kind.MALFORMED, "manifest.opsets[0].domain")),
        (lambda m: m.update(metadata=[{"key": "k"}]), (Kind.MALFORMED, "manifest.metadata[0].value")),
        (lambda m: m.update(metadata=["k"]), (Kind.MALFORMED, "manifest.metadata[0]")),
        (lambda m: m.update(functions=[{"nodes": []}]), (Kind.MALFORMED, "manifest.functions[0].name")),
        (lambda m: m["graph"].update(nodes={}), (Kind.MALFORMED, "manifest.graph.nodes")),
        (lambda m: m["graph"].update(nodes=[5]), (Kind.MALFORMED, "manifest.graph.nodes[0]")),
        (lambda m: m["graph"].update(nodes=[{"name": "n"}]), (Kind.MALFORMED, "manifest.graph.nodes[0].op")),
        (lambda m: m["graph"].update(nodes=[node("A") | {"inputs": "x"}]), (Kind.MALFORMED, "manifest.graph.nodes[0].inputs")),
        (lambda m: m["graph"].update(nodes=[node("A", outputs=["y", 3])]), (Kind.MALFORMED, "manifest.graph.nodes[0].outputs[1]")),
        (lambda m: m["graph"].update(nodes=[node("A", attributes={})]), (Kind.MALFORMED, "manifest.graph.nodes[0].attributes")),
        (lambda m: m["graph"].update(name=3), (Kind.MALFORMED, "manifest.graph.name")),
        (lambda m: m["graph"].update(inputs=[{}]), (Kind.MALFORMED, "manifest.graph.inputs[0].name")),
        (lambda m: m["graph"].update(outputs=["y"]), (Kind.MALFORMED, "manifest.graph.outputs[0]")),
        (lambda m: m["graph"].update(initializers=[{"name": "w", "dims": []}]), (Kind.MALFORMED, "manifest.graph.initializers[0].dtype")),
        (lambda m: m["graph"].update(initializers=[{"name": "w", "dtype": 1}]), (Kind.MALFORMED, "manifest.graph.initializers[0].dims")),
        (lambda m: m["graph"].update(initializers=[{"name": "w", "dtype": 1, "dims": [1]}]), (Kind.MALFORMED, "manifest.graph.initializers[0].data")),
        (lambda m: m["graph"].update(initializers=[{"name": "w", "dtype": 1, "dims": [1], "data": [0, 4]}]), (Kind.MALFORMED, "manifest.graph.initializers[0].data")),
        (lambda m: m["graph"].update(initializers=[tensor("w", 1, [1], 0, 4) | {"data": {"offset": 0}}]), (Kind.MALFORMED, "manifest.graph.initializers[0].data.length")),
        (lambda m: m["graph"].update(initializers=[tensor("w", 1, [1], "0", 4)]), (Kind.MALFORMED, "manifest.graph.initializers[0].data.offset")),
        (lambda m: m["graph"].update(initializers=[tensor("w", 1, [1.0], 0, 4)]), (Kind.MALFORMED, "manifest.graph.initializers[0].dims[0]")),
        (lambda m: m["graph"].update(initializers=[tensor("w", 1, [1], 0, 4, doc=[])]), (Kind.MALFORMED, "manifest.graph.initializers[0].doc")),
        (lambda m: m["graph"].update(sparse_initializers=[{"indices": tensor("i", 7, [0], 0, 0)}]), (Kind.MALFORMED, "manifest.graph.sparse_initializers[0].values")),
        (lambda m: m["graph"].update(sparse_initializers=[{"values": tensor("v", 1, [0], 0, 0)}]), (Kind.MALFORMED, "manifest.graph.sparse_initializers[0].indices")),
        (lambda m: m["graph"].update(sparse_initializers=[{"values": tensor("v", 1, [0], 0, 0), "indices": tensor("i", 7, [0], 0, 0), "dims": [-1]}]), (Kind.INVALID_MODEL, "manifest.graph.sparse_initializers[0].dims[0]")),
    ],
)
def test_required_and_typed_fields(tmp_path, mutate, expect):
    m = model()
    mutate(m)
    assert err(tmp_path, m, bytes(64)) == expect


def test_offsets_point_at_the_json_value(tmp_path):
    m = model(graph(nodes=[node("A"), node("B", inputs=["x", 7])]))
    text = json.dumps(m, separators=(",", ":"))
    p = write(tmp_path, pack(m))
    with pytest.raises(FormatError) as ei:
        open_path(p)
    assert ei.value.where == "manifest.graph.nodes[1].inputs[1]"
    assert ei.value.offset == 64 + text.index('"x",7') + 4


def test_missing_field_offset_points_at_the_enclosing_object(tmp_path):
    m = model(graph(nodes=[node("A"), {"name": "n"}]))
    text = json.dumps(m, separators=(",", ":"))
    with pytest.raises(FormatError) as ei:
        open_path(write(tmp_path, pack(m)))
    assert ei.value.where == "manifest.graph.nodes[1].op"
    assert ei.value.offset == 64 + text.index('{"name":"n"}')


def test_attribute_type_enum_matches_spec_codes():
    assert [AttrType(i).name for i in (1, 5, 10, 14)] == ["FLOAT", "GRAPH", "GRAPHS", "TYPE_PROTOS"]


@pytest.mark.parametrize("cls", [Type, ValueInfo, Tensor, Attribute, Node])
def test_records_are_exactly_their_class_and_copy_pickle_and_replace_like_dataclasses(cls):
    """The records are plain frozen slotted dataclasses: a record is exactly its class (no ``__dict__``),
    and ``copy``, ``pickle`` (every protocol) and ``dataclasses.replace`` give equal records."""
    import copy
    import dataclasses
    import pickle

    names = [f.name for f in dataclasses.fields(cls)]
    values = [f"v{i}" if f.name != "type" or cls is not Attribute else 2 for i, f in enumerate(dataclasses.fields(cls))]
    if cls is Tensor:
        values[names.index("storage")] = None
    r = cls(*values)
    assert type(r) is cls and isinstance(r, cls) and not hasattr(r, "__dict__")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delattr(r, names[0])
    copies = [copy.copy(r), copy.deepcopy(r), dataclasses.replace(r)]
    copies += [pickle.loads(pickle.dumps(r, protocol=p)) for p in range(pickle.HIGHEST_PROTOCOL + 1)]
    for c in copies:
        assert type(c) is cls and [getattr(c, n) for n in names] == values
    with pytest.raises(TypeError):
        cls()  # a required field missing, as with the dataclass's __init__


def test_subclasses_of_records_are_made_as_dataclass_subclasses_were():
    """A dataclass subclass of a record gets its own ``__init__`` (its new fields too), a plain subclass
    the record's fields as the record's ``__init__`` sets them."""
    import dataclasses

    @dataclasses.dataclass(frozen=True, slots=True, eq=False)
    class Tagged(Node):
        tag: int = 5

    class Plain(Node):
        __slots__ = ()

    t = Tagged("Add", "n", inputs=("a",), tag=7)
    assert type(t) is Tagged and (t.op, t.name, t.inputs, t.tag) == ("Add", "n", ("a",), 7) and Tagged("Mul").tag == 5
    p = Plain("Relu", "r", outputs=("y",))
    assert type(p) is Plain and (p.op, p.name, p.outputs, p.where) == ("Relu", "r", ("y",), "")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.op = "Mul"
