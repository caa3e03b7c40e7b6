"""The deterministic writer: plan (section 1.3), encode_manifest (section 2/4), write/to_bytes."""

from __future__ import annotations

import gc
import json
import os
import struct
from dataclasses import replace

import numpy as np
import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.dtypes import AttrType
from onemodel_viewer.format.errors import FormatError, Kind
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
    all_tensors,
    bits_from_float,
)
from onemodel_viewer.format.storage import BytesStorage, FileStorage
from test_writer_spec import check_layout, iter_tensors, parse, tensor_bytes


def T(name: str, arr: np.ndarray, dtype: int = 0, **kw) -> Tensor:
    """A tensor backed by its own bytes (dtype inferred for common numpy types)."""
    codes = {np.dtype("float32"): 1, np.dtype("uint8"): 2, np.dtype("int64"): 7, np.dtype("float16"): 10}
    raw = np.ascontiguousarray(arr).tobytes()
    return Tensor(name, dtype or codes[arr.dtype], tuple(arr.shape), length=len(raw), file_offset=0,
                  storage=BytesStorage(raw), **kw)


def S(name: str, values: list[bytes]) -> Tensor:
    return Tensor(name, 8, (len(values),), strings=tuple(values))


def small_model() -> Model:
    """Tensors in every place section 1.3 lists, with lengths that exercise alignment."""
    sub = Graph("sub", initializers=(T("sub_init", np.arange(3, dtype=np.uint8)),),
                nodes=(Node("Constant", "sub_c", outputs=("sc",), attributes=(Attribute("value", 4, T("sub_attr", np.ones(2, np.float32))),)),),
                outputs=(ValueInfo("sc"),))
    sp = SparseTensor(T("sp", np.array([1.0, 2.0], np.float32)), T("sp_idx", np.array([0, 3], np.int64)), (4,))
    nodes = (
        Node("Constant", "c0", outputs=("c",), attributes=(Attribute("value", 4, T("attr_t", np.arange(5, dtype=np.uint8))),)),
        Node("If", "if0", inputs=("cond",), outputs=("y",), attributes=(Attribute("then_branch", 5, sub), Attribute("else_branch", 5, sub))),
        Node("Custom", "cu", domain="x", inputs=("a",), outputs=("z",), attributes=(
            Attribute("ts", 9, (T("ts0", np.zeros(1, np.float16)), S("ts_str", [b"q"]))),
            Attribute("alpha", 1, bits_from_float(-0.0)),
            Attribute("fl", 6, (0x7FC00001, 0x7F800001)),
            Attribute("s", 3, b"\x00\xff"), Attribute("ss", 8, (b"", b"ab")),
            Attribute("ints", 7, (1, -(1 << 63))), Attribute("i", 2, (1 << 63) - 1),
            Attribute("tp", 13, Type("sequence", inner=Type("tensor", 1, (None, "n", 2)))),
            Attribute("r", 2, None, ref="outer"),
        )),
    )
    g = Graph("main", doc="the graph",
              inputs=(ValueInfo("a", Type("tensor", 1, (1,))), ValueInfo("cond", Type("tensor", 9, ()))),
              outputs=(ValueInfo("y"), ValueInfo("z", Type("map", key=7, inner=Type("opaque", domain="d", name="n")))),
              initializers=(T("w1", np.arange(65, dtype=np.uint8)), T("empty", np.zeros(0, np.float32)), S("names", [b"a", b"\xff"]),
                            T("w2", np.arange(16, dtype=np.float32).reshape(4, 4))),
              sparse_initializers=(sp,), nodes=nodes)
    fdefault = Attribute("bias", 4, T("fdef", np.ones(3, np.float32)))
    fn = Function("F", "x", inputs=("p",), outputs=("q",), attribute_names=("k",), attribute_defaults=(fdefault,),
                  nodes=(Node("Constant", "fc", outputs=("q",), attributes=(Attribute("value", 4, T("fnode_t", np.ones(2, np.int64))),)),),
                  opsets=(OperatorSet("", 21),))
    return Model(9, g, producer_name="test", opsets=(OperatorSet("", 21), OperatorSet("x", 1)), metadata=(("k", "v"), ("k", "v2")),
                 functions=(fn,))


def test_plan_places_tensors_in_section_1_3_order_at_multiples_of_64():
    planned = writer.plan(small_model())
    names = [(t.name, t.offset, t.length) for t in all_tensors(planned) if t.dtype != 8]
    assert names == [
        ("w1", 0, 65), ("empty", 0, 0), ("w2", 128, 64),          # initializers; zero-length at 0
        ("sp", 192, 8), ("sp_idx", 256, 16),                       # sparse: values then indices
        ("attr_t", 320, 5),                                        # node attribute
        ("sub_init", 384, 3), ("sub_attr", 448, 8),                # subgraph in place (then_branch)
        ("sub_init", 512, 3), ("sub_attr", 576, 8),                # same Graph object again: its own copy
        ("ts0", 640, 2),                                           # TENSORS (the string one has no bytes)
        ("fnode_t", 704, 16), ("fdef", 768, 12),                   # function nodes, then defaults
    ]
    assert writer.data_length(planned) == 780  # right after the last byte, no trailing padding


def test_plan_sets_manifest_paths():
    planned = writer.plan(small_model())
    g = planned.graph
    assert g.where == "manifest.graph"
    assert g.initializers[2].where == "manifest.graph.initializers[2]"
    assert g.sparse_initializers[0].values.where == "manifest.graph.sparse_initializers[0].values"
    assert g.nodes[1].attributes[0].value.nodes[0].where == "manifest.graph.nodes[1].attributes[0].value.nodes[0]"
    assert g.nodes[2].attributes[0].value[1].where == "manifest.graph.nodes[2].attributes[0].value[1]"
    assert planned.functions[0].attribute_defaults[0].value.where == "manifest.functions[0].attribute_defaults[0].value"
    assert g.inputs[0].type.where == "manifest.graph.inputs[0].type"


def test_plan_keeps_every_other_field_of_every_record():
    """plan builds its copies with the records' constructors, positionally: each field of each copy
    is the original's, but ``where`` (and a tensor's ``offset``/``length``)."""
    from dataclasses import fields

    model = small_model()
    planned = writer.plan(model)

    def walk(a, b, path):
        assert type(a) is type(b), path
        if isinstance(a, tuple):
            assert len(a) == len(b), path
            for i, (x, y) in enumerate(zip(a, b)):
                walk(x, y, f"{path}[{i}]")
            return
        if not hasattr(a, "__dataclass_fields__"):
            assert a == b, path
            return
        for f in fields(a):
            if f.name == "where" or (isinstance(a, Tensor) and f.name in ("offset", "length")):
                continue
            x, y = getattr(a, f.name), getattr(b, f.name)
            if hasattr(x, "__dataclass_fields__") or isinstance(x, tuple) or f.name == "nodes":
                walk(tuple(x) if f.name == "nodes" else x, tuple(y) if f.name == "nodes" else y, f"{path}.{f.name}")
            else:
                assert x is y or x == y, f"{path}.{f.name}"

    walk(model, planned, "model")
    assert [t.length for t in all_tensors(planned)] == [t.length for t in all_tensors(model)]


def test_manifest_field_order_and_omitted_defaults():
    m = json.loads(writer.encode_manifest(writer.plan(small_model())))
    assert list(m) == ["format", "version", "ir_version", "producer_name", "opsets", "metadata", "graph", "functions"]
    assert m["format"] == "onemodel" and m["version"] == 1 and m["ir_version"] == 9
    assert m["metadata"] == [{"key": "k", "value": "v"}, {"key": "k", "value": "v2"}]
    g = m["graph"]
    assert list(g) == ["name", "doc", "inputs", "outputs", "value_info", "initializers", "sparse_initializers", "nodes"]
    n0 = g["nodes"][0]
    assert list(n0) == ["name", "op", "domain", "overload", "inputs", "outputs", "attributes"]  # always, even when empty
    assert n0["inputs"] == [] and n0["domain"] == ""
    assert list(g["initializers"][0]) == ["name", "dtype", "dims", "data"]
    assert g["initializers"][2] == {"name": "names", "dtype": 8, "dims": [2], "strings": ["YQ==", "/w=="]}
    assert g["initializers"][1]["data"] == {"offset": 0, "length": 0}
    assert g["inputs"][1] == {"name": "cond", "type": {"kind": "tensor", "elem": 9, "shape": []}}
    assert g["outputs"][0] == {"name": "y"}
    assert g["outputs"][1]["type"] == {"kind": "map", "key": 7, "inner": {"kind": "opaque", "domain": "d", "name": "n"}}
    assert list(g["sparse_initializers"][0]) == ["values", "indices", "dims"]
    attrs = {a["name"]: a for a in g["nodes"][2]["attributes"]}
    assert attrs["alpha"] == {"name": "alpha", "type": 1, "value": 0x80000000}
    assert attrs["fl"]["value"] == [0x7FC00001, 0x7F800001]
    assert attrs["s"]["value"] == "AP8=" and attrs["ss"]["value"] == ["", "YWI="]
    assert attrs["ints"]["value"] == [1, -(1 << 63)] and attrs["i"]["value"] == (1 << 63) - 1
    assert attrs["tp"]["value"] == {"kind": "sequence", "inner": {"kind": "tensor", "elem": 1, "shape": [None, "n", 2]}}
    assert attrs["r"] == {"name": "r", "type": 2, "ref": "outer"}
    f = m["functions"][0]
    assert list(f) == ["name", "domain", "overload", "inputs", "outputs", "attribute_names", "attribute_defaults", "nodes", "opsets"]


def test_manifest_is_compact_utf8():
    model = Model(8, Graph("gr\u00e4ph \u4e2d", doc="line\nbreak \u202e"), opsets=(OperatorSet("", 1),))
    raw = writer.encode_manifest(model)
    assert b" " not in raw.replace("gr\u00e4ph \u4e2d".encode(), b"").replace("break \u202e".encode(), b"")
    assert "gr\u00e4ph \u4e2d".encode() in raw  # UTF-8, not \\u escapes
    assert json.loads(raw)["graph"]["doc"] == "line\nbreak \u202e"


def test_manifest_serializes_existing_offsets():
    """encode_manifest must not re-plan: the reader compares a file's manifest with it."""
    t = Tensor("w", 1, (2,), offset=4096, length=8, file_offset=0, storage=BytesStorage(bytes(8)))
    raw = writer.encode_manifest(Model(8, Graph(initializers=(t,))))
    assert json.loads(raw)["graph"]["initializers"][0]["data"] == {"offset": 4096, "length": 8}


def test_manifest_lone_surrogate_is_a_format_error():
    with pytest.raises(FormatError) as e:
        writer.encode_manifest(Model(8, Graph("bad \ud800")))
    assert e.value.kind is Kind.INVALID_MODEL


def test_to_bytes_follows_the_spec_and_equals_write(tmp_path):
    model = small_model()
    blob = writer.to_bytes(model)
    h, manifest, data = parse(blob)
    check_layout(manifest, data)
    got = {w: tensor_bytes(t, data) for w, t in iter_tensors(manifest)}
    src = {w: (t.strings and list(t.strings)) if t.dtype == 8 else t.raw().tobytes()
           for w, t in zip(got, all_tensors(model))}
    assert got == src
    path = tmp_path / "m.onemodel"
    writer.write(model, path)
    assert path.read_bytes() == blob
    assert writer.to_bytes(model) == blob  # deterministic


def test_written_file_reads_back_strictly(tmp_path):
    model = small_model()
    # Make it resolvable for the strict reader: drop the function-less ref and define every input.
    path = tmp_path / "m.onemodel"
    g = Graph("g", inputs=(ValueInfo("x", Type("tensor", 1, (4, 4))),), outputs=(ValueInfo("y"),),
              initializers=model.graph.initializers, sparse_initializers=model.graph.sparse_initializers,
              nodes=(Node("Add", "add", inputs=("x", "w2"), outputs=("y",)),))
    writer.write(Model(9, g, opsets=(OperatorSet("", 21),)), path)
    doc = omf.open(path)
    assert doc.source == "onemodel" and not doc.problems
    assert doc.findings == []
    by_name = {t.name: t for t in all_tensors(doc.model)}
    np.testing.assert_array_equal(by_name["w2"].values(), np.arange(16, dtype=np.float32).reshape(4, 4))
    assert by_name["names"].strings == (b"a", b"\xff")
    # the manifest is canonical: re-encoding the model read back gives the same bytes
    assert writer.encode_manifest(doc.model) == path.read_bytes()[64 : 64 + doc.header.manifest_length]
    doc.close()


def test_plan_twice_is_stable():
    once = writer.plan(small_model())
    assert writer.encode_manifest(writer.plan(once)) == writer.encode_manifest(once)


@pytest.mark.parametrize(
    "tensor, kind, where",
    [
        (Tensor("w", 1, (3,), length=8, file_offset=0, storage=BytesStorage(bytes(8))), Kind.INVALID_MODEL, ".data.length"),
        (Tensor("w", 99, (3,)), Kind.UNSUPPORTED, ".dtype"),
        (Tensor("w", 1, (3,)), Kind.INVALID_MODEL, ""),
        (Tensor("w", 1, (2, -1)), Kind.INVALID_MODEL, ".dims[1]"),
        (Tensor("w", 8, (3,), strings=(b"a",)), Kind.INVALID_MODEL, ".strings"),
        (Tensor("w", 1, (1 << 29,)), Kind.UNSUPPORTED, ""),  # 2 GiB: over 2^31-1 bytes, refused before any read
        (Tensor("w", 2, (1 << 30, 1 << 30)), Kind.UNSUPPORTED, ".dims"),
        (Tensor("w", 1, (4,), length=16, file_offset=8, storage=BytesStorage(bytes(16))), Kind.MALFORMED, ""),
    ],
)
def test_plan_refuses_unwritable_tensors(tensor, kind, where):
    model = Model(8, Graph(initializers=(Tensor("ok", 2, (1,), length=1, file_offset=0, storage=BytesStorage(b"x")), tensor)))
    with pytest.raises(FormatError) as e:
        writer.plan(model)
    assert e.value.kind is kind
    assert e.value.where == "manifest.graph.initializers[1]" + where


def _file_model(path, n: int) -> Model:
    """A model whose one tensor is a view of a file (mapped when n >= 1 MiB)."""
    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, n + 100, dtype=np.uint8).tobytes()
    path.write_bytes(data)
    st = FileStorage(path)
    t = Tensor("big", 2, (n,), length=n, file_offset=100, storage=st)
    return Model(8, Graph(initializers=(Tensor("small", 2, (3,), length=3, file_offset=0, storage=BytesStorage(b"abc")), t)))


@pytest.mark.parametrize("copy_file_range", [True, False])
def test_write_streams_file_backed_tensors(tmp_path, monkeypatch, copy_file_range):
    monkeypatch.setattr(writer, "CHUNK", 1 << 16)  # several chunks
    if not copy_file_range:
        monkeypatch.delattr(os, "copy_file_range", raising=False)  # a platform without it
    model = _file_model(tmp_path / "src.bin", (1 << 20) + 12345)
    out = tmp_path / "out.onemodel"
    writer.write(model, out)
    blob = out.read_bytes()
    assert blob == writer.to_bytes(model)
    _h, manifest, data = parse(blob)
    t = manifest["graph"]["initializers"][1]
    assert data[t["data"]["offset"] :] == (tmp_path / "src.bin").read_bytes()[100:]


def test_write_refuses_a_destination_the_model_reads(tmp_path):
    src = tmp_path / "src.bin"
    model = _file_model(src, 1000)
    before = src.read_bytes()
    for dst in (src, tmp_path / "hardlink.bin"):
        if dst != src:
            os.link(src, dst)
        with pytest.raises(FormatError) as e:
            writer.write(model, dst)
        assert e.value.kind is Kind.IO and e.value.where == "destination"
    assert src.read_bytes() == before
    # also when the source is only named (an ONNX file whose bytes are in memory)
    other = tmp_path / "m.onnx"
    other.write_bytes(b"onnx")
    with pytest.raises(FormatError):
        writer.write(small_model(), other, sources=[str(other)])
    assert other.read_bytes() == b"onnx"


@pytest.mark.parametrize("exc", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_failure_mid_write_leaves_no_partial_output(tmp_path, monkeypatch, exc):
    """A failure (or Ctrl-C) after some tensor bytes were written must leave neither dst nor a temp file."""
    calls = []
    real = writer.copy_storage_range

    def flaky(out, storage, offset, length, fds=None):
        calls.append(length)
        if len(calls) == 2:
            out.write(b"partial")
            raise exc
        return real(out, storage, offset, length, fds)

    monkeypatch.setattr(writer, "copy_storage_range", flaky)
    dst = tmp_path / "out.onemodel"
    raises = FormatError if isinstance(exc, OSError) else KeyboardInterrupt
    with pytest.raises(raises) as e:
        writer.write(small_model(), dst)
    if raises is FormatError:
        assert e.value.kind is Kind.IO
    assert os.listdir(tmp_path) == []
    # an existing destination is left as it was
    dst.write_bytes(b"old")
    calls.clear()
    with pytest.raises(raises):
        writer.write(small_model(), dst)
    assert dst.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.onemodel"]


def test_written_bytes_and_the_rename_reach_the_disk_before_write_returns(tmp_path, monkeypatch):
    synced: list = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        synced.append(os.path.realpath(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def replace(a, b):
        synced.append(("replace", os.fspath(b)))
        return real_replace(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    dst = tmp_path / "out.onemodel"
    writer.write(small_model(), dst)
    assert len(synced) == 3
    assert synced[0].startswith(str(tmp_path / ".out.onemodel.")) and synced[0].endswith(".tmp")  # the data
    assert synced[1] == ("replace", str(dst))
    assert synced[2] == str(tmp_path)  # then the folder that holds the new name


def test_a_failing_fsync_leaves_the_destination_as_it_was(tmp_path, monkeypatch):
    dst = tmp_path / "out.onemodel"
    dst.write_bytes(b"old")

    def fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(FormatError) as e:
        writer.write(small_model(), dst)
    assert e.value.kind is Kind.IO and e.value.where == "destination"
    assert dst.read_bytes() == b"old" and os.listdir(tmp_path) == ["out.onemodel"]


def test_header_fields():
    blob = writer.to_bytes(small_model())
    magic, version, flags, moff, mlen, doff, dlen, flen, res = struct.unpack_from("<8sIIQQQQQQ", blob)
    assert (magic, version, flags, moff, res) == (b"ONEMODEL", 1, 0, 64, 0)
    assert doff == (64 + mlen + 63) // 64 * 64 and flen == len(blob) == doff + dlen and dlen == 780


def test_empty_model_has_an_empty_data_region():
    blob = writer.to_bytes(Model(8, Graph(), opsets=(OperatorSet("", 1),)))
    h, manifest, data = parse(blob)
    assert h["data_length"] == 0 and data == b""
    assert manifest["graph"]["nodes"] == []


def _collections_during(fn) -> int:
    """How many cyclic GC collections start while ``fn()`` runs."""
    started = []

    def on_gc(phase, info):
        if phase == "start":
            started.append(info["generation"])

    gc.callbacks.append(on_gc)
    try:
        fn()
    finally:
        gc.callbacks.remove(on_gc)
    return len(started)


def test_encode_manifest_of_a_2mb_manifest_runs_no_gc_and_converts_each_record_once(monkeypatch):
    """The reader re-encodes manifests (the canonical-form check): 2 MB is ~10^5 small dicts, and the cyclic GC
    scanning them again and again tripled the time. What keeps it fast is asserted here (the figure itself belongs
    to the benchmarks): no collection starts while encoding, though building the same dicts with the GC on starts
    several; the GC is on again afterwards; and each node and tensor is converted exactly once."""
    store = BytesStorage(bytes(64))
    inits, nodes = [], []
    for i in range(3600):
        inits.append(Tensor(f"model.layers.{i}.mlp.weight", 10, (4096, 4096), offset=i * 64, length=64, file_offset=0, storage=store))
    for i in range(11000):
        nodes.append(Node("MatMul", f"/model/layers.{i}/mlp/MatMul", inputs=(f"hidden.{i}", f"model.layers.{i % 3600}.mlp.weight"),
                          outputs=(f"hidden.{i + 1}",), attributes=(Attribute("alpha", AttrType.FLOAT, 0x3F800000),)))
    model = Model(8, Graph("g", initializers=tuple(inits), nodes=tuple(nodes)), opsets=(OperatorSet("", 21),))
    assert gc.isenabled()
    assert _collections_during(lambda: writer.manifest_dict(model)) > 0  # the same work with the GC on
    calls = {"_node": 0, "_tensor": 0}
    for name in calls:
        real = getattr(writer, name)

        def counted(x, _real=real, _name=name):
            calls[_name] += 1
            return _real(x)

        monkeypatch.setattr(writer, name, counted)
    out = []
    assert _collections_during(lambda: out.append(writer.encode_manifest(model))) == 0
    assert gc.isenabled()
    assert len(out[0]) > 2_000_000
    assert calls == {"_node": 11000, "_tensor": 3600}


def test_encode_manifest_leaves_the_gc_as_it_found_it():
    """On after a failure too; and a caller that turned it off keeps it off."""
    assert gc.isenabled()
    with pytest.raises(FormatError):
        writer.encode_manifest(Model(8, Graph("bad \ud800")))
    assert gc.isenabled()
    gc.disable()
    try:
        writer.encode_manifest(Model(8, Graph("g")))
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_ir_version_below_3_is_refused():
    with pytest.raises(FormatError) as e:
        writer.plan(Model(2, Graph()))
    assert (e.value.kind, e.value.where) == (Kind.INVALID_MODEL, "manifest.ir_version")


@pytest.mark.parametrize("attr", [Attribute("a", 1, 1.0), Attribute("a", 1, 1 << 32), Attribute("a", 6, (0, -1)), Attribute("a", 2, 1.5)])
def test_float_attributes_must_be_bit_patterns(attr):
    """Attribute(FLOAT, 1.0) once became the bit pattern 1 without a word."""
    node = Node("Op", "n", attributes=(replace(attr, where="manifest.graph.nodes[0].attributes[0]"),))
    with pytest.raises(FormatError) as e:
        writer.encode_manifest(Model(8, Graph(nodes=(node,))))
    assert (e.value.kind, e.value.where) == (Kind.INVALID_MODEL, "manifest.graph.nodes[0].attributes[0].value")


def test_a_model_whose_records_form_a_cycle_is_refused_as_too_deep():
    """The manifest tree is made fresh from the records: a cycle among them (only object.__setattr__ makes
    one) recurses there, before the encoder (which runs without its own cycle check) sees anything."""
    g = Graph("g")
    object.__setattr__(g, "nodes", (Node("If", "loop", attributes=(Attribute("then_branch", AttrType.GRAPH, g),)),))
    with pytest.raises(FormatError) as e:
        writer.encode_manifest(Model(9, g, opsets=(OperatorSet("", 21),)))
    assert (e.value.kind, e.value.where) == (Kind.UNSUPPORTED, "manifest")
