"""The scope outline (analysis/graph): scopes, figures, folding of repeated blocks, the unscoped fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.analysis.graph import build_outline
from onemodel_viewer.analysis.graph.fallback import MAX_ROWS
from onemodel_viewer.analysis.graph.rows import Row, subtree_nodes
from onemodel_viewer.analysis.graph.scopes import scope_labels
from onemodel_viewer.analysis.graph.text import fold_text
from onemodel_viewer.analysis.params import count_model

from outline_models import LAYER_NODES, as_onemodel, named, resnet_unscoped, transformer

ROOT = Path(__file__).resolve().parent.parent
VALID = sorted((ROOT / "testdata" / "valid").glob("*.onemodel")) + sorted((ROOT / "testdata" / "valid").glob("*.onnx"))
ORT = ROOT / "testdata" / "hostile" / "ort" / "base.ort"


def outline_of(path: Path, **kw):
    doc = omf.open(str(path), mode="diagnose")
    assert doc.model is not None
    return doc, build_outline(doc.model, **kw)


def walk(row: Row):
    yield row
    for c in row.children:
        yield from walk(c)


def total_nodes(model) -> int:
    from onemodel_viewer.format.schema import walk_graphs

    n = sum(len(g.nodes) for g in walk_graphs(model.graph))
    for f in model.functions:
        n += len(f.nodes)
    return n


def test_scope_labels_split_and_keep_block_indices():
    assert scope_labels("/model/layers.0/self_attn") == ("model", "layers.0", "self_attn")
    assert scope_labels("encoder::block.12.attn") == ("encoder", "block.12", "attn")
    assert scope_labels("") == ()
    assert scope_labels("0.x") == ("0", "x")


@pytest.mark.parametrize("path", VALID + [ORT], ids=lambda p: p.name)
def test_bundled_files_figures_add_up(path):
    """Every node is counted once and the top rows' parameters add up to the model's count, for every
    bundled file (OneModel, ONNX with external data, .ort)."""
    if not path.exists():
        pytest.skip(f"{path.name} not generated")
    doc, o = outline_of(path)
    with doc:
        c = count_model(doc.model)
        assert o.root.params == c.elements
        assert o.root.bytes == c.bytes
        assert sum(r.params for r in o.root.children) + o.root.own_params == c.elements
        assert o.root.count == total_nodes(doc.model)
        assert sum(o.root.ops.values()) == o.root.count


def test_showcase_scopes_and_fold():
    doc, o = outline_of(ROOT / "testdata" / "valid" / "showcase.onemodel")
    with doc:
        labels = [r.label for r in o.root.children]
        assert labels[:2] == ["embed", "layers.0–1"]
        fold = o.root.children[1]
        assert fold.kind == "fold" and [m.label for m in fold.members] == ["layers.0", "layers.1"]
        # the If's branches and the Loop's body are under their nodes; the function under its first caller
        temp = next(r for r in o.root.children if r.label == "temperature")
        assert temp.kind == "node" and {c.kind for c in temp.children} == {"graph"}
        assert any(c.kind == "function" for r in walk(fold.members[0]) for c in r.children)
        # selecting a scope selects its first node
        assert o.root.children[0].where() == doc.model.graph.nodes[0].where


@pytest.mark.parametrize("layers", [1, 2, 24, 180])
def test_transformer_layers_fold(tmp_path, layers):
    doc, o = outline_of(transformer(tmp_path / "t", layers))
    with doc:
        model = o.root.children[0]
        assert model.label == "model"
        kinds = [(r.kind, r.label) for r in model.children]
        if layers == 1:
            assert kinds == [("scope", "embed_tokens"), ("scope", "layers.0"), ("scope", "norm")]
            return
        assert kinds == [("scope", "embed_tokens"), ("fold", f"layers.0–{layers - 1}"), ("scope", "norm")]
        fold = model.children[1]
        assert len(fold.members) == layers and not fold.odd
        per = 2 * 8 + 4 * 64 + 2 * 8 * 16
        assert fold_text(fold) == f"{layers} × block ({LAYER_NODES} nodes, {per} params each)"
        assert fold.params == layers * per
        assert o.root.params == count_model(doc.model).elements


@pytest.mark.parametrize("how, expect", [
    ("odd_shape", "another shape: MatMul weight float[8,32] (the others float[8,16])"),
    ("odd_attr", "another attribute: Softmax axis=1 (the others -1)"),
    ("odd_extra", "1 extra node (Identity)"),
])
def test_one_layer_different_is_marked(tmp_path, how, expect):
    doc, o = outline_of(transformer(tmp_path / "t", 24, **{how: 7}))
    with doc:
        fold = o.root.children[0].children[1]
        assert fold.kind == "fold" and len(fold.members) == 24
        assert fold.odd == {7: expect}
        assert fold.members[7].differs == expect
        assert all(not m.differs for k, m in enumerate(fold.members) if k != 7)
        assert fold_text(fold).endswith("· 1 differs")


def test_onemodel_and_onnx_outlines_agree(tmp_path):
    src = transformer(tmp_path / "t", 3, odd_attr=1)
    a, oa = outline_of(src)
    b, ob = outline_of(as_onemodel(src))
    with a, b:
        ra = [(r.kind, r.label, r.count, r.params, r.differs) for r in walk(oa.root)]
        rb = [(r.kind, r.label, r.count, r.params, r.differs) for r in walk(ob.root)]
        assert ra == rb


def test_unscoped_fallback_stretches(tmp_path):
    doc, o = outline_of(resnet_unscoped(tmp_path / "r"))
    with doc:
        assert len(doc.model.graph.nodes) == 860
        top = o.root.children
        assert 2 <= len(top) <= 50
        assert all(r.kind in ("stretch", "fold") for r in top)
        assert o.root.count == 860 and not o.root.nodes
        # every level stays short; every node is in exactly one row
        seen = [i for _, i in subtree_nodes(o.root)]
        assert sorted(seen) == list(range(860))
        for r in walk(o.root):
            assert len(r.nodes) <= MAX_ROWS and len(r.children) <= MAX_ROWS + 2
        assert o.root.params == count_model(doc.model).elements


def test_unscoped_fallback_not_applied_to_small_scopes(tmp_path):
    doc, o = outline_of(named(tmp_path / "n", [f"Relu_{k}" for k in range(10)]))
    with doc:
        assert o.root.nodes == list(range(10)) and not o.root.children


def test_stretches_break_at_branch_points(tmp_path):
    from onemodel_viewer.analysis.graph.fallback import chains
    doc, o = outline_of(resnet_unscoped(tmp_path / "r", blocks=2), fold=False)
    with doc:
        r = Row("scope", "x", doc.model.graph, list(range(10)), list(range(10)))
        # block 0 is one run (its Add's other operand is the graph input, written by no node); block 1's
        # input y0 is read twice (a branch point): Conv->Relu->Conv, then Add (reading y0 too)->Relu
        assert chains(r, o.facts) == [(0, 5), (5, 8), (8, 10)]


def test_diagnose_file_with_problems_shows_what_was_read():
    path = ROOT / "testdata" / "hostile" / "InvalidModel-duplicate-node-outputs.onemodel"
    if not path.exists():
        pytest.skip("hostile corpus not generated")
    doc = omf.open(str(path), mode="diagnose")
    with doc:
        assert doc.problems
        if doc.model is None:
            pytest.skip("nothing readable in this file")
        o = build_outline(doc.model)
        assert o.root.count == total_nodes(doc.model)


@pytest.mark.slow
def test_outline_benchmark_smoke(tmp_path):
    """benchmarks/outline.py's measurements run end to end on a small file (no time is asserted)."""
    import asyncio
    import os
    import sys

    root = str(ROOT)
    if root not in sys.path:
        sys.path.insert(0, root)
    from benchmarks import outline as bench

    path = str(ROOT / "testdata" / "valid" / "showcase.onemodel")
    o = bench.outline_figures(path, 1)
    assert o["nodes"] == 69 and o["top_rows"][:2] == ["embed", "layers.0–1"]
    g = bench.graph_figures(path, str(tmp_path), 1)
    assert g["boxes"] == 10 and os.path.exists(tmp_path / "outline-bench.dot")
    v = asyncio.run(bench.viewer_figures(path, 30))
    assert v["folded_s"] is not None and v["top_rows"] == 7


def test_nested_repeats_fold_when_first_opened(tmp_path):
    """Inside a folded run only the first block is folded at once; another block's own repeats fold when
    it is first opened (:meth:`Outline.ensure_folded`), with the same result."""
    names = [f"/model/layers.{i}/experts.{j}/act/Relu{k}" for i in range(4) for j in range(3) for k in range(2)]
    doc, o = outline_of(named(tmp_path / "n", names))
    with doc:
        fold = o.root.children[0].children[0]
        assert fold.kind == "fold" and fold.label == "layers.0–3"
        first, other = fold.members[0], fold.members[2]
        assert [c.kind for c in first.children] == ["fold"] and first.children[0].label == "experts.0–2"
        assert not other.ready and [c.label for c in other.children] == ["experts.0", "experts.1", "experts.2"]
        o.ensure_folded(other)
        assert [(c.kind, c.label, len(c.members)) for c in other.children] == [("fold", "experts.0–2", 3)]


def test_every_hostile_file_is_outlined_and_drawn():
    """Diagnose mode: whatever part of a broken file could be read is outlined and drawn, never an exception."""
    import io

    from onemodel_viewer.analysis.graph.dot import default_depth, write_dot

    files = sorted(p for p in (ROOT / "testdata" / "hostile").rglob("*") if p.is_file())
    if not files:
        pytest.skip("hostile corpus not generated")
    done = 0
    for path in files:
        try:
            doc = omf.open(str(path), mode="diagnose")
        except omf.FormatError:
            continue
        with doc:
            if doc.model is None:
                continue
            o = build_outline(doc.model)
            assert o.root.count == total_nodes(doc.model), path.name
            write_dot(o, default_depth(o), io.StringIO())
            done += 1
    assert done > 50
