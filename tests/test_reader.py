"""Header checks (spec 1.1), sniffing, strict == diagnose[0], zero-copy tensors, nothing read eagerly; every generated
valid file opens strictly with what testdata/generate.py built."""

from __future__ import annotations

import functools
import importlib.util
import mmap
import struct
from pathlib import Path

import numpy as np
import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.format import reader as R
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.reader import open_path
from onemodel_viewer.format.storage import FileStorage

from test_reader_util import align, graph, model, node, pack, tensor, write

U63 = (1 << 63) - 1


def problems(tmp_path, content: bytes, name: str = "m.onemodel"):
    """Strict error (or None) and diagnose problems; asserts strict == diagnose[0]."""
    p = write(tmp_path, content, name)
    diag = open_path(p, mode="diagnose")
    try:
        open_path(p).close()
        strict = None
    except FormatError as e:
        strict = e.problem
    if strict is None:
        assert diag.problems == []
    else:
        assert diag.problems and diag.problems[0] == strict
    diag.close()
    return strict, diag.problems


def first(tmp_path, content: bytes, name: str = "m.onemodel"):
    strict, _ = problems(tmp_path, content, name)
    assert strict is not None, "expected a problem"
    return strict.kind, strict.where, strict.offset


def good():
    g = graph(initializers=[tensor("w", 1, [2], 0, 8)], outputs=[{"name": "w"}])
    return pack(model(g), b"\x00\x00\x80\x3f\x00\x00\x00\x40")


TESTDATA = Path(__file__).resolve().parent.parent / "testdata"
VALID = TESTDATA / "valid"
VALID_FILES = sorted(p.name for p in VALID.glob("*") if p.suffix in (".onemodel", ".onnx"))
VALID_FINDINGS = {"out_of_order.onemodel": ["out-of-order"], "out_of_order.onnx": ["out-of-order"],
                  "types.onnx": ["negative-dim", "negative-dim"]}
"""The only findings a valid file has: the one the generator put there on purpose, and (ONNX only) what
the importer reports of types.onnx's negative dims; every other file opens with none."""


@functools.cache
def _generator():
    """testdata/generate.py as a module: its builders are the oracle for what each valid file holds."""
    spec = importlib.util.spec_from_file_location("generate", TESTDATA / "generate.py")
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    return gen


def _proto_summary(m) -> dict:
    """What an ONNX ModelProto from the generator holds, in the reader's terms (names, ops, counts, order)."""
    from onnx import AttributeProto as A

    def tensor(t):
        return (t.name, t.data_type, tuple(t.dims), t.doc_string)

    def attr(a):
        out = [a.name, a.type, a.ref_attr_name]
        if a.ref_attr_name:
            return tuple(out)
        if a.type == A.INT:
            out.append(a.i)
        elif a.type == A.INTS:
            out.append(tuple(a.ints))
        elif a.type == A.STRING:
            out.append(a.s)
        elif a.type == A.STRINGS:
            out.append(tuple(a.strings))
        elif a.type == A.TENSOR:
            out.append(tensor(a.t))
        elif a.type == A.TENSORS:
            out.append(tuple(tensor(t) for t in a.tensors))
        elif a.type == A.GRAPH:
            out.append(graph(a.g))
        elif a.type == A.GRAPHS:
            out.append(tuple(graph(g) for g in a.graphs))
        return tuple(out)

    def node(n):
        return (n.op_type, n.name, n.domain, tuple(n.input), tuple(n.output), tuple(attr(a) for a in n.attribute))

    def graph(g):
        return {"name": g.name, "doc": g.doc_string, "inputs": [v.name for v in g.input], "outputs": [v.name for v in g.output],
                "value_info": [v.name for v in g.value_info], "initializers": [tensor(t) for t in g.initializer],
                "sparse": [(tensor(s.values), tensor(s.indices), tuple(s.dims)) for s in g.sparse_initializer],
                "nodes": [node(n) for n in g.node]}

    return {"ir_version": m.ir_version, "producer": (m.producer_name, m.producer_version), "domain": m.domain,
            "doc": m.doc_string, "model_version": m.model_version,
            "opsets": [(o.domain, o.version) for o in m.opset_import],
            "metadata": [(p.key, p.value) for p in m.metadata_props], "graph": graph(m.graph),
            "functions": [(f.name, f.domain, tuple(f.input), tuple(f.output), tuple(f.attribute),
                           tuple(attr(a) for a in f.attribute_proto), [node(n) for n in f.node],
                           [(o.domain, o.version) for o in f.opset_import]) for f in m.functions]}


def _model_summary(m: omf.Model) -> dict:
    """The same summary of a model the reader built."""
    from onemodel_viewer.format.dtypes import AttrType as A

    def tensor(t):
        return (t.name, t.dtype, t.dims, t.doc)

    def attr(a):
        out = [a.name, a.type, a.ref]
        if a.ref:
            return tuple(out)
        if a.type in (A.INT, A.STRING):
            out.append(a.value)
        elif a.type in (A.INTS, A.STRINGS):
            out.append(tuple(a.value))
        elif a.type == A.TENSOR:
            out.append(tensor(a.value))
        elif a.type == A.TENSORS:
            out.append(tuple(tensor(t) for t in a.value))
        elif a.type == A.GRAPH:
            out.append(graph(a.value))
        elif a.type == A.GRAPHS:
            out.append(tuple(graph(g) for g in a.value))
        return tuple(out)

    def node(n):
        return (n.op, n.name, n.domain, n.inputs, n.outputs, tuple(attr(a) for a in n.attributes))

    def graph(g):
        return {"name": g.name, "doc": g.doc, "inputs": [v.name for v in g.inputs], "outputs": [v.name for v in g.outputs],
                "value_info": [v.name for v in g.value_info], "initializers": [tensor(t) for t in g.initializers],
                "sparse": [(tensor(s.values), tensor(s.indices), s.dims) for s in g.sparse_initializers],
                "nodes": [node(n) for n in g.nodes]}

    return {"ir_version": m.ir_version, "producer": (m.producer_name, m.producer_version), "domain": m.domain,
            "doc": m.doc, "model_version": m.model_version, "opsets": [(o.domain, o.version) for o in m.opsets],
            "metadata": list(m.metadata), "graph": graph(m.graph),
            "functions": [(f.name, f.domain, f.inputs, f.outputs, f.attribute_names,
                           tuple(attr(a) for a in f.attribute_defaults), [node(n) for n in f.nodes],
                           [(o.domain, o.version) for o in f.opsets]) for f in m.functions]}


def _proto_tensors(m):
    """Every TensorProto of a ModelProto in the reader's all_tensors order (section 1.3's)."""
    from onnx import AttributeProto as A

    def attrs(a):
        if a.type == A.TENSOR:
            yield a.t
        elif a.type == A.TENSORS:
            yield from a.tensors
        elif a.type == A.GRAPH:
            yield from graph(a.g)
        elif a.type == A.GRAPHS:
            for g in a.graphs:
                yield from graph(g)
        elif a.type == A.SPARSE_TENSOR:
            yield from (a.sparse_tensor.values, a.sparse_tensor.indices)
        elif a.type == A.SPARSE_TENSORS:
            for s in a.sparse_tensors:
                yield from (s.values, s.indices)

    def graph(g):
        yield from g.initializer
        for s in g.sparse_initializer:
            yield from (s.values, s.indices)
        for n in g.node:
            for a in n.attribute:
                yield from attrs(a)

    yield from graph(m.graph)
    for f in m.functions:
        for n in f.node:
            for a in n.attribute:
                yield from attrs(a)
        for a in f.attribute_proto:
            yield from attrs(a)


def test_every_generated_file_is_checked():
    """test_valid_file_opens runs on each file the generator writes, none left out (and none unexpected)."""
    gen = _generator()
    onemodel_and_onnx = [*gen.MODELS, "external"]
    expected = {f"{n}.{ext}" for n in onemodel_and_onnx for ext in ("onemodel", "onnx")} | {f"{n}.onemodel" for n in gen.ASSEMBLED}
    assert set(VALID_FILES) == expected


@pytest.mark.parametrize("name", VALID_FILES)
def test_valid_file_opens(name):
    """Each generated file opens strictly and holds what testdata/generate.py put in it: the model-level fields,
    every graph's inputs, outputs, initializers, sparse initializers and nodes in stored order (subgraphs and
    functions too), and every tensor's bytes or values (raw_data, external data, typed fields, strings)."""
    from onnx import numpy_helper

    from onemodel_viewer.format.schema import all_tensors

    gen = _generator()
    stem = name.rsplit(".", 1)[0]
    external = b""
    if stem == "external":
        proto, external = gen.m_external()
    elif stem == "unknown_fields":  # dtypes.onemodel plus fields a reader ignores
        proto = gen.MODELS["dtypes"]()
    elif stem == "shared_bytes":
        proto = None
    else:
        proto = gen.MODELS[stem]()
    doc = open_path(VALID / name)
    try:
        assert doc.valid and doc.problems == []
        assert doc.source == ("onnx" if name.endswith(".onnx") else "onemodel")
        assert [f.code for f in doc.findings] == VALID_FINDINGS.get(name, [])
        got = list(all_tensors(doc.model))
        if proto is None:  # gen.a_shared_bytes: "a" and "b", both the same 8x8 float32, "b" pointing at "a"'s bytes
            arr = np.random.default_rng(4).standard_normal((8, 8)).astype(np.float32)
            g = doc.model.graph
            assert [(t.name, t.dtype, t.dims) for t in g.initializers] == [("a", 1, (8, 8)), ("b", 1, (8, 8))]
            assert [(n.op, n.inputs, n.outputs) for n in g.nodes] == [("Add", ("a", "b"), ("y",))]
            a, b = g.initializers
            assert a.file_offset == b.file_offset and a.length == b.length == arr.nbytes
            assert a.values().tolist() == b.values().tolist() == arr.tolist()
            return
        assert _model_summary(doc.model) == _proto_summary(proto)
        want = list(_proto_tensors(proto))
        assert [t.name for t in got] == [t.name for t in want]
        for t, p in zip(got, want):
            if p.data_type == 8:
                assert t.strings == tuple(p.string_data), t.where
            elif p.HasField("raw_data"):
                assert t.raw().tobytes() == p.raw_data, t.where
            elif p.external_data:
                loc = {e.key: e.value for e in p.external_data}
                start = int(loc["offset"])
                assert t.raw().tobytes() == external[start:start + int(loc["length"])], t.where
            else:  # typed fields (float_data, int32_data...): equal values (test_roundtrip compares their bits)
                want_values = numpy_helper.to_array(p)
                assert t.values().dtype == want_values.dtype, t.where
                np.testing.assert_array_equal(t.values(), want_values, err_msg=t.where)
    finally:
        doc.close()


def test_good_file(tmp_path):
    doc = open_path(write(tmp_path, good()))
    assert doc.valid and doc.source == "onemodel" and doc.findings == []
    assert doc.model.graph.initializers[0].values().tolist() == [1.0, 2.0]
    assert doc.header.version == 1 and doc.manifest_span[0] == 64
    assert omf.open(write(tmp_path, good())).valid


# --- header, one field at a time ---------------------------------------------------------------


@pytest.mark.parametrize(
    "override,expect",
    [
        ({"magic": b"ONEMODEX"}, (Kind.MALFORMED, "header.magic", 0)),
        ({"version": 0}, (Kind.MALFORMED, "header.version", 8)),
        ({"version": 2}, (Kind.UNSUPPORTED, "header.version", 8)),
        ({"flags": 1}, (Kind.UNSUPPORTED, "header.flags", 12)),
        ({"reserved": 1}, (Kind.UNSUPPORTED, "header.reserved", 56)),
        ({"reserved": U63 + 1}, (Kind.MALFORMED, "header.reserved", 56)),
        ({"manifest_offset": 128}, (Kind.MALFORMED, "header.manifest_offset", 16)),
        ({"manifest_offset": U63 + 1}, (Kind.MALFORMED, "header.manifest_offset", 16)),
        ({"manifest_length": 10**9}, (Kind.MALFORMED, "header.manifest_length", 24)),
        ({"manifest_length": U63 + 1}, (Kind.MALFORMED, "header.manifest_length", 24)),
        ({"data_offset": 65 * 8 + 1}, (Kind.MALFORMED, "header.data_offset", 32)),
        ({"data_offset": 64}, (Kind.MALFORMED, "header.data_offset", 32)),
        ({"data_offset": 1 << 40}, (Kind.MALFORMED, "header.data_offset", 32)),
        ({"data_offset": (U63 + 1)}, (Kind.MALFORMED, "header.data_offset", 32)),
        ({"data_length": 7}, (Kind.MALFORMED, "header.data_length", 40)),
        ({"data_length": U63 + 1}, (Kind.MALFORMED, "header.data_length", 40)),
        ({"file_length": 5}, (Kind.MALFORMED, "header.file_length", 48)),
        ({"file_length": U63 + 1}, (Kind.MALFORMED, "header.file_length", 48)),
    ],
)
def test_header_field(tmp_path, override, expect):
    g = graph(initializers=[tensor("w", 1, [2], 0, 8)])
    m = model(g)
    assert first(tmp_path, pack(m, bytes(8), **override)) == expect


def test_truncated_file(tmp_path):
    b = good()
    assert first(tmp_path, b[:-1]) == (Kind.MALFORMED, "header.file_length", 48)
    assert first(tmp_path, b[:100]) == (Kind.MALFORMED, "header.file_length", 48)


def test_extended_file(tmp_path):
    assert first(tmp_path, good() + b"\0") == (Kind.MALFORMED, "header.file_length", 48)


def test_truncated_file_diagnose_lists_both_lengths(tmp_path):
    _, ps = problems(tmp_path, good()[:-3])
    assert [p.where for p in ps] == ["header.file_length", "header.data_length"]


@pytest.mark.parametrize("n", [0, 1, 7])
def test_tiny_onemodel_file_is_bad_magic(tmp_path, n):
    assert first(tmp_path, b"ONEMODEL"[:n]) == (Kind.MALFORMED, "header.magic", 0)


@pytest.mark.parametrize("n", [8, 12, 63])
def test_magic_but_shorter_than_header(tmp_path, n):
    assert first(tmp_path, good()[:n]) == (Kind.MALFORMED, "header", 0)


def test_manifest_over_512_mib_is_unsupported(tmp_path):
    size = 64 + (512 << 20) + 1
    p = tmp_path / "big.onemodel"
    head = struct.pack("<8sIIQQQQQQ", b"ONEMODEL", 1, 0, 64, size - 64, align(size), 0, align(size), 0)
    with open(p, "wb") as f:
        f.write(head)
        f.truncate(align(size))  # sparse: costs no disk
    with pytest.raises(FormatError) as ei:
        open_path(p)
    assert (ei.value.kind, ei.value.where, ei.value.offset) == (Kind.UNSUPPORTED, "header.manifest_length", 24)


def test_version_checked_before_lengths(tmp_path):
    """A newer version may give the other fields another meaning: it is reported first."""
    kind, where, _ = first(tmp_path, pack(model(), version=3, file_length=1))
    assert (kind, where) == (Kind.UNSUPPORTED, "header.version")


def test_wide_data_offset_is_a_finding(tmp_path):
    m = model()
    text_len = len(__import__("json").dumps(m, separators=(",", ":")))
    do = align(64 + text_len) + 128
    doc = open_path(write(tmp_path, pack(m, b"", layout_offset=do)))
    assert doc.valid
    assert [(f.code, f.where, f.offset) for f in doc.findings] == [("wide-data-offset", "header.data_offset", 32)]


def test_version_mismatch_with_manifest(tmp_path):
    assert first(tmp_path, pack(model(version=2)))[:2] == (Kind.MALFORMED, "manifest.version")


# --- sniffing ----------------------------------------------------------------------------------


@pytest.mark.parametrize("head", [b"onemodel", b"ONEMODEX", b"ONEMOD\0\0", b"0NEM0DEL"])
def test_near_magic_goes_to_onemodel_reader_whatever_the_name(tmp_path, head):
    assert first(tmp_path, head + bytes(100), "x.onnx") == (Kind.MALFORMED, "header.magic", 0)


def test_other_bytes_go_to_onnx(tmp_path):
    p = write(tmp_path, b"\x08\x07\x12\x04test" + bytes(40), "x.bin")
    with pytest.raises(FormatError) as ei:
        open_path(p)
    assert ei.value.where.startswith("onnx")


def test_onnx_file_opens_as_onnx():
    doc = open_path("testdata/valid/typed.onnx")
    assert doc.source == "onnx"


def test_sniff_rules():
    assert R.sniff_onemodel("a.bin", b"ONEMODEL", 100)
    assert R.sniff_onemodel("a.ONEMODEL", b"\x08\x07xxxxx", 100)
    assert R.sniff_onemodel("a.bin", b"\x08\x07", 2)
    assert not R.sniff_onemodel("a.onnx", b"\x08\x07\x12\x04test", 100)


def test_missing_file_is_io(tmp_path):
    with pytest.raises(FormatError) as ei:
        open_path(tmp_path / "nope.onemodel")
    assert ei.value.kind == Kind.IO
    doc = open_path(tmp_path / "nope.onemodel", mode="diagnose")
    assert [p.kind for p in doc.problems] == [Kind.IO] and doc.model is None


def test_bad_mode():
    with pytest.raises(ValueError):
        open_path("x", mode="lenient")


# --- diagnose keeps going ----------------------------------------------------------------------


def test_diagnose_collects_everything_and_keeps_sound_parts(tmp_path):
    g = graph(
        initializers=[tensor("ok", 1, [2], 0, 8), tensor("bad", 1, [2], 64, 9)],
        nodes=[node("Relu", ["missing1"], ["y"]), node("Relu", ["missing2"], ["z"])],
    )
    _, ps = problems(tmp_path, pack(model(g), bytes(128)))
    assert [(p.kind, p.where) for p in ps] == [
        (Kind.INVALID_MODEL, "manifest.graph.initializers[1].data.length"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[0].inputs[0]"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[1].inputs[0]"),
    ]
    doc = open_path(write(tmp_path, pack(model(g), bytes(128))), mode="diagnose")
    ok, bad = doc.model.graph.initializers
    assert ok.storage is not None and ok.values().tolist() == [0.0, 0.0]
    assert bad.storage is None and bad.file_offset is None
    assert len(doc.model.graph.nodes) == 2


def test_diagnose_header_broken_no_model(tmp_path):
    doc = open_path(write(tmp_path, pack(model(), version=0)), mode="diagnose")
    assert doc.model is None and doc.problems[0].where == "header.version"


def test_diagnose_truncated_file_still_reads_the_manifest(tmp_path):
    b = pack(model(graph(initializers=[tensor("w", 1, [16], 0, 64)])), bytes(64))
    doc = open_path(write(tmp_path, b[:-10]), mode="diagnose")
    assert doc.model is not None
    assert doc.model.graph.initializers[0].storage is None  # no data region to trust
    assert doc.data_span is None


# --- tensors: zero-copy, lazy ------------------------------------------------------------------


def test_mapped_tensor_is_a_zero_copy_view(tmp_path):
    n = 300_000
    data = np.arange(n, dtype="<f4").tobytes()
    p = write(tmp_path, pack(model(graph(initializers=[tensor("w", 1, [n], 0, len(data))])), data))
    doc = open_path(p)
    assert isinstance(doc.storage, FileStorage) and doc.storage.mapped
    t = doc.model.graph.initializers[0]
    v = t.values()
    assert v[12345] == 12345.0 and v.shape == (n,)
    raw = t.raw()
    assert not raw.flags.writeable
    assert isinstance(raw.base, memoryview) and isinstance(raw.base.obj, mmap.mmap), "a view of the mapping"
    assert np.shares_memory(raw, v)
    assert t.file_offset == doc.data_span[0]


def test_open_reads_only_header_and_manifest(tmp_path, monkeypatch):
    n = 1 << 20
    p = write(tmp_path, pack(model(graph(initializers=[tensor("w", 2, [n], 0, n)])), bytes(n)))
    reads = []
    orig_read, orig_view, orig_span = FileStorage.read, FileStorage.view, FileStorage.span
    monkeypatch.setattr(FileStorage, "read", lambda self, o, l: reads.append((o, l)) or orig_read(self, o, l))
    monkeypatch.setattr(FileStorage, "view", lambda self, o, l: reads.append(("view", o, l)) or orig_view(self, o, l))
    monkeypatch.setattr(FileStorage, "span", lambda self, o, l: reads.append(("span", o, l)) or orig_span(self, o, l))
    doc = open_path(p)
    assert reads == [(0, 64), ("span", 64, doc.header.manifest_length)]


def test_open_parses_the_mapping_itself_and_lets_it_go(tmp_path, monkeypatch):
    """The manifest is parsed from the mapping, not from a copy (10^6 nodes: 139 MB fewer), and the
    view is released at the end of the open: closing the document then unmaps the file."""
    from onemodel_viewer.format.onemodel import manifest as M

    n = 1 << 20
    p = write(tmp_path, pack(model(graph(initializers=[tensor("w", 2, [n], 0, n)])), bytes(n)))
    seen = []
    real = M.parse
    monkeypatch.setattr(M, "parse", lambda data, *a, **k: seen.append(type(getattr(data, "obj", data))) or real(data, *a, **k))
    for mode in ("strict", "diagnose"):
        doc = open_path(p, mode)
        assert seen == [mmap.mmap]
        doc.close()
        assert doc.storage.buffer().closed
        seen.clear()


def test_record_classes_are_the_schema_classes(tmp_path):
    """The reader's records are exactly the schema types, and frozen."""
    doc = open_path(write(tmp_path, good()))
    g = doc.model.graph
    assert type(g) is omf.Graph and type(g.initializers[0]) is omf.Tensor
    with pytest.raises(AttributeError):
        g.name = "x"  # still frozen


@pytest.mark.parametrize("make", ["fifo", "dir"])
def test_non_regular_files_are_io_problems(tmp_path, make):
    """A FIFO would block open() forever and a device never ends: refused before opening."""
    import os

    p = tmp_path / "x.onemodel"
    if make == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs")
        os.mkfifo(p)
    else:
        p.mkdir()
    with pytest.raises(FormatError) as ei:
        open_path(p)
    assert (ei.value.kind, ei.value.where) == (Kind.IO, "file")
    assert [q.kind for q in open_path(p, mode="diagnose").problems] == [Kind.IO]
