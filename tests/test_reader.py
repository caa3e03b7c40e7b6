"""Header checks (spec 1.1), sniffing, strict == diagnose[0], zero-copy tensors, nothing read eagerly."""

from __future__ import annotations

import mmap
import struct

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


def test_valid_file_opens():
    pass


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
    orig_read, orig_view = FileStorage.read, FileStorage.view
    monkeypatch.setattr(FileStorage, "read", lambda self, o, l: reads.append((o, l)) or orig_read(self, o, l))
    monkeypatch.setattr(FileStorage, "view", lambda self, o, l: reads.append(("view", o, l)) or orig_view(self, o, l))
    doc = open_path(p)
    assert reads == [(0, 64), (64, doc.header.manifest_length)]


def test_record_classes_are_the_schema_classes(tmp_path):
    """Records are built by a fast constructor; they must still be exactly the schema types."""
    doc = open_path(write(tmp_path, good()))
    g = doc.model.graph
    assert type(g) is omf.Graph and type(g.initializers[0]) is omf.Tensor
    with pytest.raises(AttributeError):
        g.name = "x"  # still frozen
    built = R._Node("Relu", "n", "", "", "", ("a",), ("b",), (), "w")
    assert type(built) is omf.Node
    assert repr(built) == repr(omf.Node("Relu", "n", "", "", "", ("a",), ("b",), (), "w"))


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
