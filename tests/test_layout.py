"""analysis.layout: the byte map, owner_at, and the layout findings."""

from __future__ import annotations

import bisect
import json
import sys

import pytest

from onemodel_viewer.analysis.layout import Extent, all_findings, file_findings, layout
from onemodel_viewer.format.reader import open_path

from test_reader_util import align, graph, model, pack, tensor, write


def open_(tmp_path, inits, data, **kw):
    return open_path(write(tmp_path, pack(model(graph(initializers=inits)), data, **kw)))


def kinds(lay):
    return [(e.start, e.end, e.kind) for e in lay.extents]


def test_canonical_file(tmp_path):
    doc = open_(tmp_path, [tensor("a", 2, [10], 0, 10), tensor("b", 2, [64], 64, 64)], b"\x01" * 10 + bytes(54) + b"\x02" * 64)
    lay = layout(doc)
    do = doc.data_span[0]
    mend = 64 + doc.header.manifest_length
    assert kinds(lay) == [
        (0, 64, "header"), (64, mend, "manifest"), (mend, do, "padding"),
        (do, do + 10, "tensor"), (do + 10, do + 64, "padding"), (do + 64, do + 128, "tensor"),
    ]
    assert lay.extents[3].names == ("a",) and lay.extents[3].wheres == ("manifest.graph.initializers[0]",)
    assert lay.extents[4].names == ("a",) and lay.extents[4].nonzero is False
    assert file_findings(doc) == []
    assert all_findings(doc) == []


def test_partition_covers_the_file(tmp_path):
    doc = open_(tmp_path, [tensor("a", 2, [100], 0, 100), tensor("b", 2, [10], 64, 10), tensor("c", 2, [5], 256, 5)], bytes(300))
    lay = layout(doc)
    assert lay.extents[0].start == 0 and lay.extents[-1].end == doc.size
    for a, b in zip(lay.extents, lay.extents[1:]):
        assert a.end == b.start and a.start < a.end


def test_overlap_gap_tail_and_nonzero_padding(tmp_path):
    data = bytearray(512)
    data[10] = 7  # padding after "a" (0..10)
    data[300] = 1  # gap between 192 and 384
    inits = [
        tensor("a", 2, [10], 0, 10),
        tensor("b", 2, [128], 64, 128),  # 64..192
        tensor("c", 2, [64], 128, 64),  # 128..192 overlaps b
        tensor("d", 2, [16], 384, 16),  # 384..400, tail 400..512
    ]
    doc = open_(tmp_path, inits, bytes(data))
    do = doc.data_span[0]
    lay = layout(doc)
    rel = [(e.start - do, e.end - do, e.kind, e.names, e.nonzero) for e in lay.extents if e.start >= do]
    assert rel == [
        (0, 10, "tensor", ("a",), None),
        (10, 64, "padding", ("a",), True),
        (64, 128, "tensor", ("b",), None),
        (128, 192, "overlap", ("b", "c"), None),
        (192, 384, "gap", (), True),
        (384, 400, "tensor", ("d",), None),
        (400, 512, "tail", (), False),
    ]
    got = sorted((f.code, f.where, f.offset - do) for f in file_findings(doc, lay))
    assert got == [
        ("nonzero-padding", "manifest.graph.initializers[0]", 10),
        ("shared-bytes", "manifest.graph.initializers[2]", 128),
        ("unowned-bytes", "data", 192),
        ("unowned-bytes", "data", 400),
    ]


def test_padding_after_gap_tensor_alignment(tmp_path):
    """Bytes after a tensor up to the next multiple of 64 are padding; beyond that a gap."""
    doc = open_(tmp_path, [tensor("a", 2, [1], 0, 1), tensor("b", 2, [1], 192, 1)], bytes(193))
    do = doc.data_span[0]
    rel = [(e.start - do, e.end - do, e.kind) for e in layout(doc).extents if e.start >= do]
    assert rel == [(0, 1, "tensor"), (1, 64, "padding"), (64, 192, "gap"), (192, 193, "tensor")]


def test_identical_tensors_share(tmp_path):
    doc = open_path("testdata/valid/shared_bytes.onemodel")
    codes = [f.code for f in file_findings(doc)]
    assert codes == ["shared-bytes"]


def test_zero_length_tensors(tmp_path):
    inits = [tensor("a", 2, [128], 0, 128), tensor("e0", 2, [0], 0, 0), tensor("e1", 2, [0], 64, 0), tensor("e2", 2, [0], 128, 0)]
    doc = open_(tmp_path, inits, bytes(128))
    do = doc.data_span[0]
    lay = layout(doc)
    assert [(z.start - do, z.names) for z in lay.empties] == [(0, ("e0",)), (64, ("e1",)), (128, ("e2",))]
    at64 = lay.owner_at(do + 64)
    assert [(e.kind, e.names) for e in at64] == [("tensor", ("a",)), ("tensor", ("e1",))]
    shared = [f for f in file_findings(doc, lay) if f.code == "shared-bytes"]
    # offset 0 is where the writer puts every empty tensor: not a finding; 64 is inside "a"; 128 is past its end
    assert [(f.where, f.offset - do) for f in shared] == [("manifest.graph.initializers[2]", 64)]


def test_owner_at_everywhere_and_bisect(tmp_path):
    doc = open_(tmp_path, [tensor(f"t{i}", 2, [10], 64 * i, 10) for i in range(50)], bytes(64 * 49 + 10))
    lay = layout(doc)
    assert lay.owner_at(-1) == [] and lay.owner_at(doc.size) == []
    for off in range(0, doc.size, 7):
        [e] = lay.owner_at(off)
        assert e.start <= off < e.end
    do = doc.data_span[0]
    assert lay.owner_at(do + 64 * 7 + 3)[0].names == ("t7",)


def test_owner_at_is_logarithmic(tmp_path, monkeypatch):
    doc = open_(tmp_path, [tensor(f"t{i}", 2, [1], 64 * i, 1) for i in range(2000)], bytes(64 * 1999 + 1))
    lay = layout(doc)
    calls = []
    real = bisect.bisect_right
    monkeypatch.setattr(bisect, "bisect_right", lambda *a, **k: calls.append(1) or real(*a, **k))
    lay.owner_at(doc.data_span[0] + 64 * 1500)
    assert len(calls) == 1  # a bisect, not a scan


def test_nonzero_manifest_padding(tmp_path):
    b = bytearray(pack(model(), b""))
    m_end = 64 + int.from_bytes(b[24:32], "little")
    do = int.from_bytes(b[32:40], "little")
    assert do > m_end
    b[do - 1] = 0x55
    doc = open_path(write(tmp_path, bytes(b)))
    [f] = file_findings(doc)
    assert (f.code, f.where, f.offset) == ("nonzero-padding", "padding", m_end)


def test_wide_data_offset_layout(tmp_path):
    m = model()
    n = len(json.dumps(m, separators=(",", ":")))
    doc = open_path(write(tmp_path, pack(m, b"", layout_offset=align(64 + n) + 64)))
    lay = layout(doc)
    assert lay.extents[-1].kind == "padding" and lay.extents[-1].end == doc.size
    assert [f.code for f in all_findings(doc, lay)] == ["wide-data-offset"]


def test_noncanonical_manifest(tmp_path):
    m = model()
    text = json.dumps(m, indent=1)  # whitespace: not what the writer emits
    doc = open_path(write(tmp_path, pack(text)))
    [f] = file_findings(doc)
    assert f.code == "noncanonical-manifest" and f.where == "manifest" and f.offset >= 64


def test_broken_file_layout_does_not_crash(tmp_path):
    b = pack(model(graph(initializers=[tensor("w", 1, [16], 0, 64)])), bytes(64))
    for cut in (0, 10, 64, 100, len(b) - 1):
        p = write(tmp_path, b[:cut], f"cut{cut}.onemodel")
        doc = open_path(p, mode="diagnose")
        lay = layout(doc)
        assert sum(e.length for e in lay.extents) == doc.size
        file_findings(doc, lay)


def test_layout_module_imports_no_numpy_rich_textual():
    import subprocess

    code = (
        "import sys; import onemodel_viewer.analysis.layout, onemodel_viewer.commands.check;"
        "bad=[m for m in ('numpy','rich','textual','onnx') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_extent_length():
    assert Extent(10, 74, "tensor").length == 64


@pytest.mark.parametrize("n", [1, 3])
def test_many_overlaps_names_capped(tmp_path, n):
    inits = [tensor(f"t{i}", 2, [64], 0, 64) for i in range(100 * n)]
    doc = open_(tmp_path, inits, bytes(64))
    lay = layout(doc)
    [e] = [e for e in lay.extents if e.kind == "overlap"]
    assert e.owners == 100 * n and len(e.names) == min(64, 100 * n)


def test_mapped_file_scan_reads_without_the_mapping(tmp_path):
    """Files >= 1 MiB are mapped; padding is scanned with pread (RSS stays independent of the weights)."""
    n = 1 << 20
    data = bytearray(n + 64 + 8)
    data[n + 3] = 9  # padding after the first tensor
    doc = open_(tmp_path, [tensor("big", 2, [n + 1], 0, n + 1), tensor("b", 2, [8], n + 64, 8)], bytes(data))
    assert doc.storage.mapped
    do = doc.data_span[0]
    lay = layout(doc)
    pad = [e for e in lay.extents if e.kind == "padding" and e.start > do]
    assert [(p.start - do, p.end - do, p.nonzero) for p in pad] == [(n + 1, n + 64, True)]
    assert [f.code for f in file_findings(doc, lay)] == ["nonzero-padding"]
