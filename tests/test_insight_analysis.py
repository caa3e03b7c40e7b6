"""Unit tests of the insight computations (onemodel_viewer/analysis: usedby, params, opschema, byteinspect,
values, npyexport, shapes, neighbourhood): no UI."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.analysis.facts import Facts
from onemodel_viewer.analysis import byteinspect, npyexport, opschema, params, shapes, values
from onemodel_viewer.analysis.neighbourhood import neighbourhood
from onemodel_viewer.analysis.usedby import UsedBy
from onemodel_viewer.format.dtypes import BY_NAME, AttrType
from onemodel_viewer.format.schema import Attribute, Node, bits_from_float

sys.path.insert(0, str(Path(__file__).resolve().parent))
import insight_models as im  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("insight")
    return {f.__name__: str(f(d / f"{f.__name__}.onemodel"))
            for f in (im.slices_in_if, im.constant_weights, im.fan_out, im.tensors, im.function_body)}


def opened(path: str):
    return omf.open(path, mode="diagnose")


def init(doc, name):
    return next(t for t in doc.model.graph.initializers if t.name == name)


# ----------------------------------------------------------------------------- used by

def test_used_by_finds_readers_inside_if_branches(models):
    """An initializer read by 6 Slice nodes inside If branches (two of them one If deeper) lists them all."""
    doc = opened(models["slices_in_if"])
    g = doc.model.graph
    ub = UsedBy(doc.model, Facts()).build()
    uses = ub.uses(g, "w")
    assert [u.node.name for u in uses if u.via is None] == ["main_add", "main_add"]  # Add(w, w): read twice
    inner = [u for u in uses if u.via is not None]
    assert sorted(u.node.name for u in inner) == [f"slice{i}" for i in range(6)]
    assert all(u.via.name == "if0" for u in inner)
    depth = {u.node.name: u.depth for u in inner}
    assert depth["slice0"] == depth["slice2"] == 1 and depth["slice4"] == depth["slice5"] == 2
    assert {u.graph.name for u in inner} == {"then_branch", "else_branch", "inner_then", "inner_else"}
    # the cond input is read by the nested If inside then_branch and by if0 itself
    assert [u.node.name for u in ub.uses(g, "cond")] == ["if0", "then_if"]


def test_used_by_respects_shadowing(models):
    """then_branch has its own initializer ``v``: its Add reads that one, not the main graph's."""
    doc = opened(models["slices_in_if"])
    g = doc.model.graph
    ub = UsedBy(doc.model, Facts()).build()
    assert [u.node.name for u in ub.uses(g, "v")] == ["main_v", "main_v"]
    if0 = next(n for n in g.nodes if n.op == "If")
    then_g = next(a.value for a in if0.attributes if a.name == "then_branch")
    assert [u.node.name for u in ub.uses(then_g, "v")] == ["then_v"]


def test_used_by_on_the_bundled_subgraphs_file():
    doc = opened(str(VALID / "subgraphs.onemodel"))
    g = doc.model.graph
    ub = UsedBy(doc.model, Facts()).build()
    names = {u.node.name: u.via.name if u.via else None for u in ub.uses(g, "x")}
    assert names == {"then_add": "if0", "else_mul": "if0"}


def test_used_by_cancelled_is_incomplete(models):
    import threading

    doc = opened(models["slices_in_if"])
    ev = threading.Event()
    ev.set()
    ub = UsedBy(doc.model, Facts()).build(ev)
    assert not ub.complete


# ----------------------------------------------------------------------------- parameter counts

def test_parameter_counts_include_constant_nodes(models):
    """Weights in Constant nodes: 3 x 64x64 float32 + 64 float16 + 1 int64 list, no initializer."""
    doc = opened(models["constant_weights"])
    c = params.count_model(doc.model)
    assert "initializer" not in c.by_source
    const = c.by_source["constant"]
    assert const.elements == 3 * 64 * 64 + 64 + 1
    assert const.bytes == 3 * 64 * 64 * 4 + 64 * 2 + 8
    assert c.by_dtype["float"].elements == 3 * 64 * 64 and c.by_dtype["float"].bytes == 3 * 64 * 64 * 4
    assert c.by_dtype["float16"].elements == 64
    assert c.elements == const.elements
    assert [x[2] for x in c.largest[:3]] == ["w2_value", "w1_value", "w0_value"] or {x[2] for x in c.largest[:3]} == {
        "w0_value", "w1_value", "w2_value"}
    assert c.largest[0][0] == 64 * 64 * 4
    g = params.count_graph(doc.model.graph)
    assert g.elements == c.elements


def test_parameter_counts_of_subgraphs_and_sparse():
    doc = opened(str(VALID / "subgraphs.onemodel"))
    c = params.count_model(doc.model)
    # trip (int64 scalar), two (float[4]), step (float[4]) initializers; one, half Constants (float[4])
    assert c.by_source["initializer"].elements == 1 + 4 + 4
    assert c.by_source["constant"].elements == 8
    sp = opened(str(VALID / "sparse.onemodel"))
    cs = params.count_model(sp.model)
    assert "sparse" in cs.by_source
    s = sp.model.graph.sparse_initializers[0]
    assert cs.by_source["sparse"].elements >= s.values.count
    assert cs.by_source["sparse-indices"].bytes >= s.indices.length


# ----------------------------------------------------------------------------- operator schema

def _f(x: float) -> int:
    return bits_from_float(x)


def test_schema_marks_defaults():
    n = Node("Conv", "c", inputs=("X", "W"), outputs=("Y",), attributes=(
        Attribute("group", AttrType.INT, 1), Attribute("strides", AttrType.INTS, (2, 2)),
        Attribute("bogus", AttrType.INT, 3)))
    f = opschema.schema_facts(n, 21)
    assert f.found and f.since_version == 11
    by = {a.name: a for a in f.attributes}
    assert by["group"].status == "set-default" and by["group"].default == "1"
    assert by["strides"].status == "set"
    assert by["auto_pad"].status == "default" and by["auto_pad"].default == "'NOTSET'"
    assert by["pads"].status == "unset" and by["pads"].default is None
    assert f.unknown == ["bogus"]
    assert [p.name for p in f.inputs] == ["X", "W", "B"] and f.inputs[2].option == "optional"


def test_schema_float_default_and_required():
    n = Node("LeakyRelu", "l", inputs=("X",), outputs=("Y",), attributes=(Attribute("alpha", AttrType.FLOAT, _f(0.01)),))
    by = {a.name: a for a in opschema.schema_facts(n, 21).attributes}
    assert by["alpha"].status == "set-default"
    cast = opschema.schema_facts(Node("Cast", "c", inputs=("X",), outputs=("Y",)), 21)
    assert {a.name: a.status for a in cast.attributes}["to"] == "missing"


def test_schema_unknown_op_and_domain():
    assert not opschema.schema_facts(Node("NoSuchOp"), 21).found
    custom = opschema.schema_facts(Node("Foo", domain="com.example"), 1)
    assert not custom.found and "domain" in custom.reason
    early = opschema.schema_facts(Node("LayerNormalization"), 11)
    assert not early.found and "17" in early.reason


# ----------------------------------------------------------------------------- byte inspector

def test_readings_match_struct_unpack():
    rng = np.random.default_rng(3)
    for _ in range(50):
        data = bytes(rng.integers(0, 256, 8, dtype=np.uint8))
        got = {r.name: r.text for r in byteinspect.readings(data)}
        for name, fmt in (("u8", "<B"), ("i8", "<b"), ("u16", "<H"), ("i16", "<h"), ("u32", "<I"), ("i32", "<i"),
                          ("u64", "<Q"), ("i64", "<q")):
            assert int(got[name]) == struct.unpack(fmt, data[:struct.calcsize(fmt)])[0]
        for name, fmt, n in (("f16", "<e", 2), ("f32", "<f", 4), ("f64", "<d", 8)):
            v = struct.unpack(fmt, data[:n])[0]
            text = got[name]
            if v != v:
                assert text == "nan"
            else:
                assert np.array(float(text), dtype=fmt[1:] if fmt != "<d" else "f8").item() == pytest.approx(
                    v, rel=1e-3 if name == "f16" else 1e-6) or float(text) == v
        bf = struct.unpack("<f", b"\0\0" + data[:2])[0]
        assert got["bf16"] == "nan" if bf != bf else float(got["bf16"]) == pytest.approx(bf, rel=1e-2, abs=1e-38) or \
            got["bf16"] in ("inf", "-inf")


def test_readings_short_tail():
    got = {r.name: r.text for r in byteinspect.readings(b"\x01\x02\x03")}
    assert got["u8"] == "1" and got["u16"] == str(0x0201) and got["u32"] == "-" and got["f64"] == "-"


def test_element_at_float_and_int4(models):
    doc = opened(models["tensors"])
    cube = init(doc, "cube")
    el = byteinspect.element_at(cube, cube.file_offset + 4 * 6 + 2)
    assert el.first == 6 and el.index == (0, 1, 2) and el.cells[0].text == "nan" and el.byte_in_element == 2
    i4 = init(doc, "i4")
    el = byteinspect.element_at(i4, i4.file_offset + 1)
    assert (el.first, el.last) == (2, 3) and [c.text for c in el.cells] == ["0", "1"]
    assert byteinspect.element_at(i4, i4.file_offset + i4.length) is None


# ----------------------------------------------------------------------------- values

def test_format_element_per_dtype():
    fmt = values.format_element
    assert fmt(np.float32(0.1), BY_NAME["float"]).text == "0.1"
    assert fmt(np.float16(0.1), BY_NAME["float16"]).text == "0.1"
    assert fmt(np.float32("nan"), BY_NAME["float"]).kind == "nan"
    assert fmt(np.float32("-inf"), BY_NAME["float"]).text == "-inf"
    assert fmt(np.array(1.5, dtype=ml_dtypes.bfloat16)[()], BY_NAME["bfloat16"]).text == "1.5"
    assert fmt(np.array(448, dtype=ml_dtypes.float8_e4m3fn)[()], BY_NAME["float8e4m3fn"]).text == "448"
    assert fmt(np.array(-8, dtype=ml_dtypes.int4)[()], BY_NAME["int4"]).text == "-8"
    assert fmt(np.uint64(2**64 - 1), BY_NAME["uint64"]).text == str(2**64 - 1)
    assert fmt(np.bool_(True), BY_NAME["bool"]).text == "true"
    assert fmt(b"\x1b[31mred", None).text == '"\\x1b[31mred"'


def test_read_elements_equal_values_for_every_dtype():
    doc = opened(str(VALID / "dtypes.onemodel"))
    checked = 0
    for t in doc.model.graph.initializers:
        if t.is_string or t.count == 0:
            continue
        flat = list(range(t.count))[::-1]
        got = values.read_elements(t, flat)
        want = t.values().reshape(-1)[flat]
        assert got.view(np.uint8).tobytes() == np.ascontiguousarray(want).view(np.uint8).tobytes(), t.name
        checked += 1
    assert checked >= 20


def test_slice_spec_and_index_parsing():
    s = values.SliceSpec.default((2, 3, 4))
    assert (s.row_axis, s.col_axis, s.rows, s.cols) == (1, 2, 3, 4)
    assert s.index(2, 3) == (0, 2, 3)
    s2, r, c = s.cell_of((1, 2, 0))
    assert s2.fixed[0] == 1 and (r, c) == (2, 0) and s2.describe() == "[1, :r, :]"
    one = values.SliceSpec.default((10,), wrap=4)
    assert (one.rows, one.cols) == (3, 4) and one.index(2, 1) == (9,) and one.index(2, 2) is None
    assert values.parse_index("1,2,3", (2, 3, 4)) == (1, 2, 3)
    assert values.parse_index("#23", (2, 3, 4)) == (1, 2, 3)
    assert values.parse_index("-1,-1,-1", (2, 3, 4)) == (1, 2, 3)
    assert values.parse_index("5,0,0", (2, 3, 4)) is None
    assert values.parse_index("x", (2,)) is None


# ----------------------------------------------------------------------------- .npy export

def test_npy_round_trip_numpy_types(models, tmp_path):
    doc = opened(models["tensors"])
    cube = init(doc, "cube")
    out = tmp_path / "cube.npy"
    assert npyexport.export_npy(cube, str(out), source=doc.path) == ""
    got = np.load(out)
    np.testing.assert_array_equal(got, cube.values())
    assert got.dtype == np.float32 and got.shape == (2, 3, 4)


def test_npy_exotic_types_raw_bits_or_widened(models, tmp_path):
    doc = opened(models["tensors"])
    bf = init(doc, "bf")
    note = npyexport.export_npy(bf, str(tmp_path / "bf.npy"))
    assert "raw bits" in note and "uint16" in note
    np.testing.assert_array_equal(np.load(tmp_path / "bf.npy").view(ml_dtypes.bfloat16), bf.values())
    i4 = init(doc, "i4")
    assert "int8" in npyexport.export_npy(i4, str(tmp_path / "i4.npy"))
    assert np.load(tmp_path / "i4.npy").tolist() == [-8, -1, 0, 1, 7, 3, -4]
    f8 = init(doc, "f8")
    npyexport.export_npy(f8, str(tmp_path / "f8.npy"))
    np.testing.assert_array_equal(np.load(tmp_path / "f8.npy").view(ml_dtypes.float8_e4m3fn), f8.values())
    names = init(doc, "names")
    npyexport.export_npy(names, str(tmp_path / "s.npy"))
    assert np.load(tmp_path / "s.npy").tolist() == [b"plain", b"tab\there", b"\x1b[31mred"]


def test_npy_refuses_the_source_and_folders(models, tmp_path):
    doc = opened(models["tensors"])
    with pytest.raises(npyexport.ExportError):
        npyexport.export_npy(init(doc, "cube"), doc.path, source=doc.path)
    with pytest.raises(npyexport.ExportError):
        npyexport.export_npy(init(doc, "cube"), str(tmp_path))
    assert not list(tmp_path.glob(".omv-*"))


# ----------------------------------------------------------------------------- inferred types

def test_shape_inference_types_undeclared_values(models):
    doc = opened(models["constant_weights"])
    g = doc.model.graph
    inf = shapes.infer_types(doc.model)
    assert inf.error == ""
    assert str(inf.of(g, "mm0")) == "float[1,64]"
    assert str(inf.of(g, "h2")) == "float[1,64]"
    assert str(inf.of(g, "out")) == "float[64]"  # Reshape with a small Constant shape: the value is read
    const = next(n for n in g.nodes if n.name == "const_w0")
    assert str(shapes.constant_output_type(const)) == "float[64,64]"
    shp = next(n for n in g.nodes if n.name == "const_shape")
    assert str(shapes.constant_output_type(shp)) == "int64[1]"


def test_shape_inference_proto_has_no_weights(models):
    doc = opened(models["constant_weights"])
    mp = shapes.weightless_proto(doc.model)
    assert mp.ByteSize() < 8 * 1024  # 3 x 16 KiB of weights referenced, not copied


def test_shape_inference_proto_marks_big_tensors_external_without_a_file():
    """Tensors over INLINE_BYTES are marked external with no location entries (inference never reads
    them); small ones keep the bytes the full export gives them; the rest of the proto is the export's."""
    from onemodel_viewer.format.onnx.exporter import model_to_proto
    from onemodel_viewer.format.schema import all_tensors

    doc = opened(str(VALID / "showcase.onemodel"))
    full, light = model_to_proto(doc.model), shapes.weightless_proto(doc.model)
    sizes = {t.name: t.length for t in all_tensors(doc.model) if not t.is_string}
    assert any(n > shapes.INLINE_BYTES for n in sizes.values()) and any(n <= shapes.INLINE_BYTES for n in sizes.values())
    assert len(light.graph.initializer) == len(full.graph.initializer)
    for lp, fp in zip(light.graph.initializer, full.graph.initializer):
        if sizes[lp.name] > shapes.INLINE_BYTES:
            assert lp.data_location == 1 and list(lp.external_data) == [] and lp.raw_data == b""
            assert (lp.name, lp.data_type, list(lp.dims)) == (fp.name, fp.data_type, list(fp.dims))
        else:
            assert lp == fp
    del light.graph.initializer[:], full.graph.initializer[:]
    assert light == full


def test_shape_inference_type_of_an_undeclared_graph_output():
    """A graph output without a declared type gets the inferred one; an input inference adds nothing to has none."""
    from onemodel_viewer.format.schema import Graph, Model, OperatorSet, Type, ValueInfo

    x = ValueInfo("x", Type("tensor", elem=1, shape=(2, 3)))
    g = Graph("g", inputs=(x,), outputs=(ValueInfo("y"),), nodes=(Node("Relu", "r", inputs=("x",), outputs=("y",)),))
    inf = shapes.infer_types(Model(ir_version=10, graph=g, opsets=(OperatorSet("", 18),)))
    assert inf.error == ""
    assert set(inf.names(g)) == {"y"}
    assert str(inf.of(g, "y")) == "float[2,3]"
    assert inf.of(g, "x") is None


def test_shape_inference_into_subgraphs():
    doc = opened(str(VALID / "subgraphs.onemodel"))
    inf = shapes.infer_types(doc.model)
    if0 = doc.model.graph.nodes[0]
    then_g = next(a.value for a in if0.attributes if a.name == "then_branch")
    assert str(inf.of(then_g, "one")) == "float[4]"  # a Constant's output inside the then branch


def test_shape_inference_skipped_over_max_nodes(models):
    """The viewer caps inference (``max_nodes``): on 10^6 nodes the proto's serialization and parse
    held the interpreter ~0.9 s each, freezing the UI thread; a graph at the cap still runs."""
    doc = opened(models["constant_weights"])
    n = len(doc.model.graph.nodes)
    inf = shapes.infer_types(doc.model, max_nodes=n - 1)
    assert inf.skipped == f"not run on {n:,} nodes (more than {n - 1:,})"
    assert inf.error == "" and inf.of(doc.model.graph, "mm0") is None
    ran = shapes.infer_types(doc.model, max_nodes=n)
    assert ran.skipped == "" and str(ran.of(doc.model.graph, "mm0")) == "float[1,64]"


def test_shape_inference_never_raises_on_broken_models():
    from onemodel_viewer.format.schema import Graph, Model

    bad = Model(ir_version=10, graph=Graph("g", nodes=(Node("Conv", "c", inputs=("nope",), outputs=("y",)),)))
    inf = shapes.infer_types(bad)
    assert isinstance(inf.error, str)


# ----------------------------------------------------------------------------- neighbourhood

def test_neighbourhood_levels_and_edges(models):
    doc = opened(models["constant_weights"])
    g = doc.model.graph
    i = next(k for k, n in enumerate(g.nodes) if n.name == "matmul1")
    nb = neighbourhood(g, i, Facts(), up=2, down=2)
    names = {lvl: [nb.boxes[b].name for b in ids] for lvl, ids in nb.levels.items()}
    assert names[0] == ["matmul1"]
    assert set(names[-1]) == {"relu0", "const_w1"}
    assert names[-2] == ["matmul0"]
    assert names[1] == ["relu1"] and names[2] == ["matmul2"]
    e = next(e for e in nb.edges_in(nb.centre) if e.value == "w1")
    assert e.type == "float[64,64]" or e.type == ""


def test_neighbourhood_folds_fan_out(models):
    doc = opened(models["fan_out"])
    g = doc.model.graph
    nb = neighbourhood(g, 0, Facts(), up=1, down=1)
    lvl1 = [nb.boxes[b] for b in nb.levels[1]]
    assert len(lvl1) <= 8
    fold = [b for b in lvl1 if b.kind == "fold"]
    assert fold and fold[0].folded == 500 - (len(lvl1) - 1)
    assert [nb.boxes[b].kind for b in nb.levels[-1]] == ["input"]


def test_neighbourhood_marks_subgraph_reads(models):
    """main_add's output ww is read by else_ww inside if0's else branch: an edge marked subgraph."""
    doc = opened(models["slices_in_if"])
    g = doc.model.graph
    facts = Facts()
    ub = UsedBy(doc.model, facts).build()
    i = next(k for k, n in enumerate(g.nodes) if n.name == "main_add")
    nb = neighbourhood(g, i, facts, used_by=ub)
    assert any(nb.boxes[b].kind == "init" for b in nb.levels[-1])
    sub = [e for e in nb.edges if e.subgraph]
    assert [(nb.boxes[e.dst].name, e.value) for e in sub] == [("else_ww", "ww")]
    assert any(nb.boxes[b].kind == "output" for b in nb.levels[1])


def test_shape_inference_in_a_child_process_gives_the_same_types(models):
    """The viewer runs onnx's inference in a child (its C++ holds the GIL): same types as in process."""
    doc = opened(models["constant_weights"])
    g = doc.model.graph
    here, there = shapes.infer_types(doc.model), shapes.infer_types(doc.model, isolate=True)
    assert there.error == ""
    assert {n: str(here.of(g, n)) for n in here.names(g)} == {n: str(there.of(g, n)) for n in there.names(g)}


def test_used_by_inside_a_function_body(models):
    """A value of a model-local function listed no reader (function bodies were skipped): now the body's
    readers, then the readers inside its nodes' subgraphs, each with the body node holding them."""
    doc = opened(models["function_body"])
    f = doc.model.functions[0]
    ub = UsedBy(doc.model, Facts()).build()

    def readers(name):
        return [(u.node.name, u.via.name if u.via else None, u.depth, u.graph is None) for u in ub.function_uses(f, name)]

    assert readers("x") == [("f_add", None, 0, True), ("f_gt", None, 0, True), ("f_else_neg", "f_if", 1, False)]
    assert readers("y") == [("f_add", None, 0, True), ("f_gt", None, 0, True)]
    assert readers("s") == [("f_relu", None, 0, True)]
    assert readers("r") == [("f_then_id", "f_if", 1, False)]
    assert readers("out") == []
    assert all(u.function is f for u in ub.function_uses(f, "x"))
    assert ub.function_uses(f, "a") == []  # the main graph's input is not the function's
