"""Unit tests of the viewer's pure parts: offsets, safe text, byte map, entries, detail lines."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.text import Text

from onemodel_viewer import format as omf
from onemodel_viewer.format.document import Document, Header
from onemodel_viewer.format.dtypes import AttrType
from onemodel_viewer.format.schema import Attribute, Graph, Model, Node, OperatorSet, Tensor, all_tensors
from onemodel_viewer.format.storage import BytesStorage
from onemodel_viewer.tui.hex.bytemap import ByteMap
from onemodel_viewer.tui.widgets.describe import attribute_value_text, float_bits_text, opset_version
from onemodel_viewer.tui.widgets.entries import CHUNK, Entry, EntryFactory, path_to
from onemodel_viewer.tui.widgets.prompt import parse_offset
from onemodel_viewer.tui.widgets.safe import human_size, safe_str, safe_text, visible

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = ROOT / "testdata" / "valid" / "showcase.onemodel"


@pytest.mark.parametrize(
    "text,want",
    [("0x1a40", 0x1A40), ("1A40h", 0x1A40), ("$ff", 255), ("6720", 6720), ("1_000", 1000), ("ff", 255),
     ("+64", 164), ("-0x10", 84), ("end", 999), ("50%", 500), ("", None), ("zz", None), ("0xg", None)],
)
def test_parse_offset(text, want):
    assert parse_offset(text, size=1000, current=100) == want


def test_visible_escapes_controls_bidi_and_zero_width():
    s = "a\x1b[31mb\x07\x9b\u202e\u200b\ufeff\u2066c"
    v = visible(s)
    assert "\x1b" not in v and "\x07" not in v and "\x9b" not in v
    assert not any(ch in v for ch in "\u202e\u200b\ufeff\u2066")
    assert v.startswith("a\\x1b[31mb")


def test_safe_text_is_never_markup_and_is_bounded():
    t = safe_text("[bold red]x[/] [link=http://e]y[/link]")
    assert isinstance(t, Text) and t.plain == "[bold red]x[/] [link=http://e]y[/link]"
    assert not t.spans
    long = safe_text("n" * 1000, limit=50)
    assert len(long.plain) == 50 and long.plain.endswith("…")
    assert safe_str(b"\xff\x00ok") == "\\xff\\x00ok"


def test_human_size():
    assert [human_size(n) for n in (0, 1023, 1536, 4 << 30)] == ["0 B", "1023 B", "1.5 KiB", "4.0 GiB"]


def test_float_bits_text_shows_nan_payload_negative_zero_and_subnormal():
    assert float_bits_text(0x3F800000).plain == "1.0"
    neg0 = float_bits_text(0x80000000).plain
    assert neg0.startswith("-0.0") and "0x80000000" in neg0
    nan = float_bits_text(0x7FC00001).plain
    assert nan.startswith("nan") and "quiet" in nan and "payload 0x1" in nan
    snan = float_bits_text(0xFF800002).plain
    assert snan.startswith("-nan") and "signalling" in snan
    assert float_bits_text(0x7F800000).plain.startswith("inf")
    assert "subnormal" in float_bits_text(0x00000001).plain


def test_attribute_values_decoded_and_literal():
    assert attribute_value_text(Attribute("s", AttrType.STRING, b"[b]x\x1b")).plain == '"[b]x\\x1b"'
    assert attribute_value_text(Attribute("i", AttrType.INTS, (1, 2, 3))).plain == "[1, 2, 3]"
    assert attribute_value_text(Attribute("f", AttrType.FLOATS, (0x3F800000, 0x80000000))).plain.startswith("[1.0, -0.0")
    assert attribute_value_text(Attribute("r", AttrType.FLOAT, ref="alpha")).plain.startswith("→ @alpha")


def test_opset_version_default_domain_aliases():
    m = Model(ir_version=8, graph=Graph(), opsets=(OperatorSet("ai.onnx", 17), OperatorSet("x", 2)))
    assert opset_version(m, None, "") == 17
    assert opset_version(m, None, "ai.onnx") == 17
    assert opset_version(m, None, "x") == 2
    assert opset_version(m, None, "y") is None


def _doc_with_tensors(spans: list[tuple[int, int]], poke: dict[int, int] | None = None) -> Document:
    """A OneModel-like document of 64 + 64 + data bytes with tensors at the given (data offset, length);
    ``poke``: file offset -> byte value (the other bytes are zero)."""
    data_len = max((o + n for o, n in spans), default=0) + 64
    size = 128 + data_len
    raw = bytearray(size)
    for off, value in (poke or {}).items():
        raw[off] = value
    storage = BytesStorage(bytes(raw))
    tensors = tuple(Tensor(f"t{i}", 2, (n,), offset=o, length=n, file_offset=128 + o, storage=storage,
                           where=f"manifest.graph.initializers[{i}]") for i, (o, n) in enumerate(spans))
    model = Model(ir_version=8, graph=Graph("g", initializers=tensors, where="manifest.graph"))
    header = Header(b"ONEMODEL", 1, 0, 64, 40, 128, data_len, size, 0)
    return Document("x.onemodel", "onemodel", size, storage, header, (64, 40), (128, data_len), model)


def test_bytemap_owner_gap_padding_and_sharing():
    doc = _doc_with_tensors([(0, 16), (64, 32), (64, 8)])
    bm = ByteMap(doc)
    assert bm.owner_at(0) == "header.magic +0"
    assert bm.owner_at(13) == "header.flags +1"
    assert bm.owner_at(70) == "manifest +6"
    assert bm.owner_at(110) == "padding +6"
    assert bm.owner_at(128 + 5) == "tensor t0 +5"
    assert bm.owner_at(128 + 20) == "data region: gap (no tensor)"
    assert bm.owner_at(128 + 64 + 2).endswith("(+1 sharing)")
    assert bm.owner_at(128 + 64 + 20) == "tensor t1 +20"
    assert bm.owner_at(doc.size) == "past end of file"
    t0, t1, t2 = doc.model.graph.initializers
    assert bm.sharing(t1) == [t2] and bm.sharing(t2) == [t1] and bm.sharing(t0) == []
    runs = bm.runs(128, 128 + 64 + 16)
    kinds = [k for _, _, (k, _) in runs]
    assert kinds == ["tensor", "data", "overlap", "tensor"]
    assert bm.label_at_line(128, 144) == "▶ t0"


def test_layout_rows_of_a_onemodel_file_are_the_analysis_layout():
    """The layout screen had a sweep of its own over the viewer's byte map (compute_extents), a second
    answer to analysis.layout's question: it called the bytes between two tensors a gap ("alignment
    padding") where analysis.layout and --check call them padding. A OneModel file's rows are the
    analysis layout's, non-zero padding and overlaps included."""
    from onemodel_viewer.analysis.layout.onemodel import layout
    from onemodel_viewer.tui.screens.layout import from_analysis

    doc = _doc_with_tensors([(0, 16), (64, 32), (64, 8)], poke={120: 7, 128 + 30: 1})
    rows = from_analysis(doc)
    lay = layout(doc)
    assert [(r.start, r.end, r.kind) for r in rows] == [(e.start, e.end, e.kind) for e in lay.extents]
    got = {(r.start, r.end): (r.kind, r.name, r.note) for r in rows}
    assert got[(104, 128)] == ("padding", "", "NON-ZERO bytes")
    assert got[(144, 192)] == ("padding", "", "NON-ZERO bytes (after t0)")
    assert got[(192, 200)] == ("overlap", "t2, t1", "shared by 2 tensors")
    assert [r.name for r in rows if r.kind == "tensor"] == ["t0", "t1"]


def test_layout_rows_of_an_onnx_file_are_the_byte_map_regions():
    from onemodel_viewer.tui.screens.layout import from_bytemap

    with omf.open(ROOT / "testdata" / "valid" / "attributes.onnx", mode="diagnose") as doc:
        assert [(r.start, r.end, r.kind, r.name) for r in from_bytemap(ByteMap(doc))] == [
            (0, doc.size, "onnx", "onnx protobuf")]


def test_entry_covers_respects_boundaries_and_chunks():
    e = Entry("node", Text("n"), where="manifest.graph.nodes[1]")
    assert e.covers("manifest.graph.nodes[1]")
    assert e.covers("manifest.graph.nodes[1].inputs[0]")
    assert not e.covers("manifest.graph.nodes[12]")
    g = Entry("group", Text("g"), where="manifest.graph.nodes", index_range=(1000, 2000))
    assert g.covers("manifest.graph.nodes[1500].attributes[0]")
    assert not g.covers("manifest.graph.nodes[999]")
    assert not g.covers("manifest.graph.nodes_x")


def test_path_to_walks_lazily_through_chunks():
    n = CHUNK * 2 + 5
    nodes = tuple(Node("Relu", f"n{i}", where=f"manifest.graph.nodes[{i}]") for i in range(n))
    model = Model(ir_version=8, graph=Graph("g", nodes=nodes, where="manifest.graph"))
    doc = Document("x", "onemodel", 0, model=model)
    made: list[str] = []

    def expand(entry: Entry) -> list[Entry]:
        made.append(entry.label.plain)
        return entry.children()

    chain = path_to(EntryFactory(doc).root(), "manifest.graph.nodes[2003].inputs[0]", expand=expand)
    assert [c.kind for c in chain] == ["graph", "group", "group", "node"]
    assert chain[-1].obj is nodes[2003]
    assert chain[2].index_range == (2000, 2005)
    assert len(made) == 3  # graph, "nodes", one chunk: nothing else was built


def test_every_showcase_record_is_reachable_by_where():
    if not SHOWCASE.exists():
        pytest.skip("showcase not generated")
    doc = omf.open(str(SHOWCASE))
    roots = EntryFactory(doc).root()
    wheres = [t.where for t in all_tensors(doc.model)] + [n.where for n in doc.model.graph.nodes]
    wheres += [n.where for f in doc.model.functions for n in f.nodes]
    for w in wheres:
        chain = path_to(roots, w, expand=lambda e: e.children())
        assert chain and chain[-1].where == w, w


def test_search_index_finds_ops_and_names():
    if not SHOWCASE.exists():
        pytest.skip("showcase not generated")
    from onemodel_viewer.tui.app import SearchIndex

    idx = SearchIndex(omf.open(str(SHOWCASE)))
    hits = idx.find("MatMul")
    assert hits and all(w.startswith("manifest.") for w, _ in hits)
    assert idx.find("embed.tokens")[0][1] == "tensor embed.tokens"
    assert idx.find("   ") == []


def _where_key(where: str) -> tuple:
    """Sort key putting manifest paths in document order (numbers compared as numbers)."""
    import re

    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[\[\].]+", where) if p)


@pytest.mark.parametrize(
    "path",
    sorted(p for p in (Path(__file__).parent.parent / "testdata").glob("*/*") if p.suffix in (".onemodel", ".onnx")),
    ids=lambda p: f"{p.parent.name}/{p.name}",
)
def test_search_index_order_is_the_where_order(path):
    """The index is built in the order a sort by path gives, without sorting (every bundled file)."""
    from onemodel_viewer.tui.app import SearchIndex

    doc = omf.open(str(path), mode="diagnose")
    try:
        items = SearchIndex(doc).items
        assert items == sorted(items, key=lambda it: _where_key(it[1]))
        if doc.model is not None:
            from onemodel_viewer.format.schema import walk_graphs

            nodes = sum(len(g.nodes) for g in walk_graphs(doc.model.graph))
            assert sum(1 for _h, w, _d in items if ".nodes[" in w and w.endswith("]") and "attributes" not in w.rsplit(".nodes[", 1)[1]) >= nodes
    finally:
        doc.close()
