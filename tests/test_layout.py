"""analysis.layout: the byte map, owner_at, and the layout findings."""

from __future__ import annotations

import bisect
import json
import sys

import pytest

from onemodel_viewer.analysis.layout.onemodel import all_findings, file_findings, layout
from onemodel_viewer.analysis.layout.spans import Span
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
        "import sys; import onemodel_viewer.analysis.layout.onemodel, onemodel_viewer.commands.check;"
        "bad=[m for m in ('numpy','rich','textual','onnx') if m in sys.modules]; print(bad)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_extent_length():
    assert Span(10, 74, "tensor").length == 64


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


# ---------------------------------------------------------------------------------------------
# noncanonical-manifest: the cheap proof (manifest.canonical_text/canonical_structure) must agree
# with the exact writer comparison everywhere


def _both_ways(path):
    from onemodel_viewer.analysis.layout.onemodel import noncanonical
    from onemodel_viewer.format.onemodel.manifest import canonical_structure, canonical_text
    from onemodel_viewer.format.reader import open_with_manifest
    from onemodel_viewer.format.onemodel.writer import encode_manifest

    doc, parsed = open_with_manifest(path, mode="diagnose")
    try:
        fast, exact = noncanonical(doc, parsed), noncanonical(doc)
        assert fast == exact, path
        proven = None
        if parsed is not None and doc.model is not None and not doc.problems and not parsed.duplicates:
            have = doc.storage.read(*doc.manifest_span)
            proven = canonical_text(have) and canonical_structure(parsed.value)
            if proven:  # soundness: a proof means the writer emits these very bytes
                assert encode_manifest(doc.model) == have, path
        return exact, proven
    finally:
        doc.close()


def _corpus():
    import pathlib

    root = pathlib.Path(__file__).resolve().parent.parent / "testdata"
    return sorted(str(p) for d in ("valid", "hostile") for p in (root / d).glob("*.onemodel"))


def test_canonical_proof_agrees_with_writer_on_corpus():
    files = _corpus()
    assert len(files) > 50
    proved = 0
    for path in files:
        exact, proven = _both_ways(path)
        proved += bool(proven)
        if "/valid/" in path and exact is None and "out_of_order" not in path:
            assert proven, f"writer output not proven canonical: {path}"
    assert proved >= 10


def test_strict_open_parse_gives_the_findings_of_a_fresh_parse():
    """all_findings(doc, parsed=...) after a strict open reuses that open's parse (its duplicate keys
    checked without parsing again, as --diff does): the same findings as parsing the manifest again,
    on every corpus file a strict open reads (duplicate keys, noncanonical manifests, shared bytes)."""
    from onemodel_viewer.format.errors import FormatError
    from onemodel_viewer.format.onemodel.manifest import with_duplicates
    from onemodel_viewer.format.reader import open_with_manifest

    seen = set()
    for path in _corpus():
        try:
            doc, parsed = open_with_manifest(path, mode="strict")
        except FormatError:
            continue
        try:
            if parsed is None:
                continue
            assert not parsed.checked_duplicates
            key = lambda f: (f.code, f.where, f.offset, f.message)  # noqa: E731
            reused = [key(f) for f in all_findings(doc, parsed=parsed)]
            assert reused == [key(f) for f in all_findings(doc)], path
            seen.update(code for code, *_ in reused)
            checked = with_duplicates(doc.storage.read(*doc.manifest_span), parsed)
            assert checked.checked_duplicates and checked.value is parsed.value
            assert with_duplicates(b"", checked) is checked
        finally:
            doc.close()
    assert {"duplicate-key", "noncanonical-manifest", "shared-bytes"} <= seen, seen


def _canon(m) -> bytes:
    return json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _canon_model():
    from test_reader_util import node

    g = graph(
        inputs=[{"name": "x", "type": {"kind": "tensor", "elem": 1, "shape": [1, "n", None]}}],
        outputs=[{"name": "y"}],
        initializers=[tensor("w", 1, [4], 0, 16), tensor("e", 1, [0], 0, 0)],
        nodes=[
            node("Add", ["x", "w"], ["t"], name="A1"),
            node("Relu", ["t"], ["y"], name="ré", attributes=[{"name": "k", "type": 2, "value": 3}]),
        ],
    )
    m = model(g, producer_name="p")
    return {k: m[k] for k in ("format", "version", "ir_version", "producer_name", "opsets", "graph")}


@pytest.mark.parametrize(
    "variant, finding",
    [
        ("canonical", False),
        ("space", True),
        ("indent", True),
        ("reordered-node", True),
        ("node-doc-empty", True),
        ("node-doc", False),
        ("escape-u0041", True),
        ("escape-slash", True),
        ("escape-newline-canonical", False),
        ("escape-u000a", True),
        ("escape-u001F-upper", True),
        ("escape-u001f", False),
        ("escape-surrogate-pair", True),
        ("minus-zero", True),
        ("unknown-key", True),
        ("graph-name-empty", True),
        ("producer-empty", True),
        ("missing-graph-array", True),
        ("offsets", False),
        ("attr-ref-empty", True),
        ("type-extra-key", True),
        ("opaque-missing-name", True),
        ("duplicate-key", True),
        ("name-with-space-and-minus-zero", False),
        ("space-in-names-and-outside", True),
        ("minus-zero-in-name-and-outside", True),
    ],
)
def test_canonical_proof_variants(tmp_path, variant, finding):
    m = _canon_model()
    g = m["graph"]
    data = bytes(16)
    text = None
    if variant == "space":
        text = json.dumps(m, separators=(", ", ":"), ensure_ascii=False)
    elif variant == "indent":
        text = json.dumps(m, indent=1, ensure_ascii=False)
    elif variant == "reordered-node":
        g["nodes"][0] = dict(reversed(list(g["nodes"][0].items())))
    elif variant == "node-doc-empty":
        n = g["nodes"][0]
        g["nodes"][0] = {**{k: n[k] for k in ("name", "op", "domain", "overload")}, "doc": "", **{k: n[k] for k in ("inputs", "outputs", "attributes")}}
    elif variant == "node-doc":
        n = g["nodes"][0]
        g["nodes"][0] = {**{k: n[k] for k in ("name", "op", "domain", "overload")}, "doc": "d", **{k: n[k] for k in ("inputs", "outputs", "attributes")}}
    elif variant == "escape-u0041":
        text = _canon(m).decode().replace('"A1"', '"\\u00411"')
    elif variant == "escape-slash":
        g["nodes"][0]["name"] = "a/b"
        text = _canon(m).decode().replace('"a/b"', '"a\\/b"')
    elif variant in ("escape-newline-canonical", "escape-u000a"):
        g["nodes"][0]["name"] = "a\nb"
        text = _canon(m).decode()
        if variant == "escape-u000a":
            text = text.replace('"a\\nb"', '"a\\u000ab"')
    elif variant in ("escape-u001F-upper", "escape-u001f"):
        g["nodes"][0]["name"] = "a\x1fb"
        text = _canon(m).decode()
        assert '"a\\u001fb"' in text
        if variant == "escape-u001F-upper":
            text = text.replace('"a\\u001fb"', '"a\\u001Fb"')
    elif variant == "escape-surrogate-pair":
        g["nodes"][0]["name"] = "a\U0001F600"
        text = _canon(m).decode().replace("\U0001F600", "\\ud83d\\ude00")
    elif variant == "minus-zero":
        text = _canon(m).decode().replace('"dims":[0]', '"dims":[-0]')
        assert "-0]" in text
    elif variant == "unknown-key":
        m["x"] = 1
    elif variant == "graph-name-empty":
        m["graph"] = {"name": "", **g}
    elif variant == "producer-empty":
        m["producer_version"] = ""
        m = {k: m[k] for k in ("format", "version", "ir_version", "producer_name", "producer_version", "opsets", "graph")}
    elif variant == "missing-graph-array":
        del g["value_info"]
    elif variant == "offsets":
        g["initializers"][0] = tensor("w", 1, [4], 128, 16)
        data = bytes(144)
    elif variant == "attr-ref-empty":
        g["nodes"][1]["attributes"][0]["ref"] = ""
    elif variant == "type-extra-key":
        g["inputs"][0]["type"]["inner"] = {"kind": "tensor", "elem": 1}
    elif variant == "opaque-missing-name":
        g["inputs"][0]["type"] = {"kind": "opaque", "domain": "d"}
    elif variant == "name-with-space-and-minus-zero":
        g["nodes"][0]["name"] = "a :-0, b"
    elif variant == "space-in-names-and-outside":
        g["nodes"][0]["name"] = "a b"
        text = _canon(m).decode().replace('"ir_version":8', '"ir_version": 8')
    elif variant == "minus-zero-in-name-and-outside":
        g["nodes"][0]["name"] = "a:-0,b"
        text = _canon(m).decode().replace('"dims":[0]', '"dims":[-0]')
    elif variant == "duplicate-key":
        text = _canon(m).decode().replace('"producer_name":"p"', '"producer_name":"p","producer_name":"p"')
    body = text.encode("utf-8") if text is not None else _canon(m)
    path = write(tmp_path, pack(body, data))
    exact, proven = _both_ways(path)
    assert (exact is not None) == finding
    if finding:
        assert not proven
    else:
        assert proven is True


# ---------------------------------------------------------------------------------------------
# issue 11: empty tensors away from offset 0, and layouts where many tensors share bytes


def _rel(findings, do):
    return [(f.code, f.where, None if f.offset is None else f.offset - do, f.message) for f in findings]


def test_empty_tensor_findings_pinned(tmp_path):
    """Pinned from the code before the merge walk: empty tensors inside a tensor, inside an overlap,
    in a gap, at the data end and at offset 0 give the same shared-bytes findings, in the same order."""
    inits = [tensor("w", 2, [128], 0, 128), tensor("v", 2, [64], 192, 64), tensor("u", 2, [32], 192, 32),
             tensor("z0", 1, [0], 0, 0), tensor("z1", 1, [0], 64, 0), tensor("z2", 1, [0], 128, 0),
             tensor("z3", 1, [0], 192, 0), tensor("z4", 1, [0], 256, 0), tensor("z5", 1, [0], 64, 0)]
    doc = open_(tmp_path, inits, bytes(256))
    do = doc.data_span[0]
    lay = layout(doc)
    assert [(e.start - do, e.end - do, e.kind, e.names) for e in lay.extents if e.start >= do] == [
        (0, 128, "tensor", ("w",)), (128, 192, "gap", ()), (192, 224, "overlap", ("u", "v")), (224, 256, "tensor", ("v",)),
    ]
    assert _rel(file_findings(doc, lay, canonical=False), do) == [
        ("unowned-bytes", "data", 128, "64 bytes that no tensor owns (beyond alignment padding), all zero"),
        ("shared-bytes", "manifest.graph.initializers[1]", 192, "32 bytes are shared by 2 tensors: 'u', 'v'"),
        ("shared-bytes", "manifest.graph.initializers[4]", 64, "empty tensor 'z1' sits inside tensor 'w'"),
        ("shared-bytes", "manifest.graph.initializers[8]", 64, "empty tensor 'z5' sits inside tensor 'w'"),
        ("shared-bytes", "manifest.graph.initializers[6]", 192, "empty tensor 'z3' sits inside tensor 'u'"),
    ]


@pytest.mark.parametrize("n, at, want", [
    (3, "inside", [("shared-bytes", f"manifest.graph.initializers[{i + 1}]", 64, f"empty tensor 'e{i}' sits inside tensor 'w'")
                   for i in range(3)]),
    (3, "end", []),
    (150, "inside", [("shared-bytes", f"manifest.graph.initializers[{i + 1}]", 64, f"empty tensor 'e{i}' sits inside tensor 'w'")
                     for i in range(100)] + [("shared-bytes", "data", None, "... and 50 more shared-bytes findings")]),
])
def test_many_empties_findings_pinned(tmp_path, n, at, want):
    """Pinned from the code before the merge walk (the writer-built files of tests/many_empties.py)."""
    from many_empties import write_empties

    doc = open_path(write_empties(tmp_path / "e.onemodel", n, at))
    assert _rel(file_findings(doc), doc.data_span[0]) == want


class _Counted(tuple):
    """A tuple that counts the elements handed out (iteration and indexing, bisect included)."""

    visits = 0

    def __iter__(self):
        for x in tuple.__iter__(self):
            _Counted.visits += 1
            yield x

    def __getitem__(self, i):
        _Counted.visits += 1
        return tuple.__getitem__(self, i)


@pytest.mark.parametrize("at", ["inside", "end"])
def test_empty_tensor_findings_are_not_quadratic(tmp_path, at):
    """file_findings called owner_at once per empty tensor, and each call listed every empty tensor at that
    offset: 10,000 empty tensors inside a tensor took 4.4 s, 100,000 (a valid 7 MB file) about 7 minutes;
    20,000 at the data end 25 s. Now each extent and each empty tensor is looked at a bounded number of times."""
    from many_empties import write_empties

    from onemodel_viewer.analysis.layout.onemodel import Layout

    n = 3000
    doc = open_path(write_empties(tmp_path / "e.onemodel", n, at))
    real = layout(doc)
    lay = Layout(_Counted(real.extents), real.size, _Counted(real.empties), real._starts, real._empty_starts)
    _Counted.visits = 0
    found = file_findings(doc, lay, canonical=False)
    assert _Counted.visits <= 3 * (len(real.extents) + len(real.empties)) + 10  # was 18 million
    assert len(found) == (101 if at == "inside" else 0)


def test_100000_empty_tensors_finish(tmp_path):
    """The 7 MB file of issue 11 (100,000 empty tensors inside a tensor; about 7 minutes before): all findings."""
    from many_empties import write_empties

    doc = open_path(write_empties(tmp_path / "e.onemodel", 100_000, "inside"))
    found = file_findings(doc)
    assert len(found) == 101 and found[-1].message == "... and 99900 more shared-bytes findings"


def _brute_owners(spans, x):
    """Indices of the (sorted) spans containing byte x, in order."""
    return [k for k, (s, e) in enumerate(spans) if s <= x < e]


@pytest.mark.parametrize("pattern", ["nested", "window", "staggered"])
def test_sweep_owners_match_a_brute_force_oracle(tmp_path, monkeypatch, pattern):
    """The sweep keeps the first MAX_NAMES owners in a linked list (listing all of them at every boundary was
    quadratic: 40,000 nested tensors took 11 s); names, owners and kinds still match the definition,
    also when owners in the first MAX_NAMES end first and later ones move up."""
    from onemodel_viewer.analysis.layout import onemodel as layout_mod

    monkeypatch.setattr(layout_mod, "MAX_NAMES", 3)
    n = 12
    if pattern == "nested":  # tensor k = [64k, 64(2n - k))
        raw = [(64 * k, 64 * (2 * n - k)) for k in range(n)]
    elif pattern == "window":  # each starts one block later and spans 5 blocks: the first owners end first
        raw = [(64 * k, 64 * (k + 5)) for k in range(n)]
    else:  # the same start, ends in every order
        raw = [(0, 64 * (1 + (7 * k) % n)) for k in range(n)]
    size = max(e for _s, e in raw)
    inits = [tensor(f"t{k}", 2, [e - s], s, e - s) for k, (s, e) in enumerate(raw)]
    doc = open_(tmp_path, inits, bytes(size))
    do = doc.data_span[0]
    order = sorted(range(n), key=lambda k: (raw[k][0], raw[k][1], f"t{k}"))
    spans = [raw[k] for k in order]
    for e in layout(doc).extents:
        if e.start < do:
            continue
        owners = _brute_owners(spans, e.start - do)
        assert all(_brute_owners(spans, x - do) == owners for x in (e.start, e.end - 1))
        assert e.owners == len(owners)
        assert e.kind == ("overlap" if len(owners) > 1 else "tensor")
        assert e.names == tuple(f"t{order[k]}" for k in owners[:3])
