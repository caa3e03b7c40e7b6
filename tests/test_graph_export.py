"""``--graph FILE OUT.(dot|svg)``: the DOT written (read back by a small reader), depths, SVG through
Graphviz's ``dot``, hostile names escaped, usage errors."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.analysis.graph import build_outline
from onemodel_viewer.analysis.graph.dot import boxes_at, count_boxes, default_depth
from onemodel_viewer.cli import main

from outline_models import LAYER_NODES, named, transformer

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = ROOT / "testdata" / "valid" / "showcase.onemodel"
ORT = ROOT / "testdata" / "hostile" / "ort" / "base.ort"
HAVE_DOT = shutil.which("dot") is not None

_STRING = r'"((?:[^"\\]|\\.)*)"'
_NODE = re.compile(r"^  (\w+) \[(.*)\];$")
_EDGE = re.compile(r"^  (\w+) -> (\w+)(?: \[label=" + _STRING + r"\])?;$")
_ATTR = re.compile(r"(\w+)=(" + _STRING + r"|[\w.]+)")


def _unquote(s: str) -> str:
    s = re.sub(r"\\(.)", lambda m: "\n" if m.group(1) == "n" else m.group(1), s)
    return s.replace("&amp;", "&")  # Graphviz reads entities in labels


def read_dot(text: str) -> tuple[dict[str, dict[str, str]], list[tuple[str, str, str]]]:
    """Nodes {id: attributes} and edges (a, b, label) of a DOT file as :mod:`.dot` writes it; every other
    line must be one of the four fixed header lines or the closing brace (anything else fails)."""
    lines = text.split("\n")
    assert lines[0] == "digraph model {" and lines[-2:] == ["}", ""]
    nodes: dict[str, dict[str, str]] = {}
    edges = []
    for line in lines[1:-2]:
        if line.startswith(("  graph [", "  node [", "  edge [")):
            continue
        m = _EDGE.match(line)
        if m:
            edges.append((m.group(1), m.group(2), _unquote(m.group(3) or "")))
            continue
        m = _NODE.match(line)
        assert m, f"not a statement of ours: {line!r}"
        attrs = {}
        rest = m.group(2)
        for a in _ATTR.finditer(rest):
            v = a.group(2)
            attrs[a.group(1)] = _unquote(a.group(3)) if v.startswith('"') else v
        nodes[m.group(1)] = attrs
    return nodes, edges


def graph(src: Path, out: Path, *extra: str) -> int:
    return main(["--graph", str(src), str(out), *extra])


def test_transformer_default_depth_folds_layers(tmp_path, capsys):
    src = transformer(tmp_path / "t", 24)
    out = tmp_path / "t.dot"
    assert graph(src, out) == 0
    assert "4 boxes, 5 edges" in capsys.readouterr().out
    nodes, edges = read_dot(out.read_text())
    labels = {k: v["label"].split("\n") for k, v in nodes.items()}
    by_first = {v[0]: k for k, v in labels.items()}
    fold = by_first["24 × layers.0–23"]
    assert labels[fold][1] == f"block ({LAYER_NODES} nodes, 528 params each)"
    assert nodes[fold].get("peripheries") == "2"
    gather, norm, head = by_first["Gather"], by_first["LayerNormalization"], by_first["MatMul"]
    assert labels[gather][1] == "/model/embed_tokens/Gather"
    assert set(nodes) == {"i0", "o0", gather, fold, norm, head}
    assert {(a, b) for a, b, _ in edges} == {("i0", gather), (gather, fold), (fold, norm), (norm, head), (head, "o0")}
    assert ("i0", gather, "int64[seq]") in edges and (head, "o0", "float[seq,32]") in edges


def test_depths(tmp_path, capsys):
    src = transformer(tmp_path / "t", 3)
    full = tmp_path / "full.dot"
    assert graph(src, full, "--depth", "full") == 0
    nodes, edges = read_dot(full.read_text())
    assert len(nodes) == 3 * LAYER_NODES + 3 + 2  # every node (Gather, norm, lm_head), the input and the output
    assert not any(v["label"].startswith("3 ×") for v in nodes.values())
    one = tmp_path / "one.dot"
    assert graph(src, one, "--depth", "1") == 0
    nodes, edges = read_dot(one.read_text())
    firsts = sorted(v["label"].split("\n")[0] for k, v in nodes.items() if k.startswith("b"))
    assert firsts == ["lm_head", "model"]
    assert len(edges) == 3  # input -> model -> lm_head -> output


def test_default_depth_is_deepest_under_the_limit(tmp_path):
    doc = omf.open(str(transformer(tmp_path / "t", 5, odd_attr=2)))
    with doc:
        o = build_outline(doc.model)
        d = default_depth(o, limit=3)
        assert count_boxes(o, d) <= 3 < count_boxes(o, d + 1)
        assert default_depth(o, limit=1) == 1
        assert count_boxes(o, None) == len(doc.model.graph.nodes)


def test_full_drawing_edges_match_the_graph(tmp_path):
    doc = omf.open(str(transformer(tmp_path / "t", 2)))
    with doc:
        o = build_outline(doc.model, fold=False)
        d = boxes_at(o, None)
        g = doc.model.graph
        box = {b.node: b.id for b in d.boxes}
        want = set()
        for i, n in enumerate(g.nodes):
            for x in n.inputs:
                p = o.facts.producer.get(x)
                if p is not None:
                    want.add((box[p], box[i]))
        assert {k for k in d.edges if not k[1].startswith("o") and not k[0].startswith("i")} == want


HOSTILE = ['a"b', "x}; evil [label=pwned]; {", "<script>alert(1)</script>", "esc\x1b[2J\x07", "line\nbreak",
           "back\\N\\l", "bidi\u202eevil", "amp&lt;"]


def test_hostile_names_escaped_in_dot(tmp_path):
    src = named(tmp_path / "h", HOSTILE)
    out = tmp_path / "h.dot"
    assert graph(src, out, "--depth", "full") == 0
    text = out.read_text()
    nodes, edges = read_dot(text)  # every line is one of our statements: nothing injected
    assert "evil" not in nodes and "pwned" not in {v.get("label") for v in nodes.values()}
    names = [v["label"].split("\n")[1] for k, v in sorted(nodes.items()) if k.startswith("b")]
    assert names == ['a"b', "x}; evil [label=pwned]; {", "<script>alert(1)</script>", "esc\\x1b[2J\\x07",
                     "line\\nbreak", "back\\N\\l", "bidi\\u202eevil", "amp&lt;"]
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text
    assert len(edges) == len(HOSTILE) + 1


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz's dot is not installed (apt-get install graphviz)")
def test_hostile_names_escaped_in_svg(tmp_path):
    src = named(tmp_path / "h", HOSTILE)
    out = tmp_path / "h.svg"
    assert graph(src, out, "--depth", "full") == 0
    text = out.read_text()
    root = ET.fromstring(text)  # well-formed XML
    assert "<script" not in text and "\x1b" not in text
    shown = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "<script>alert(1)</script>" in shown and 'a"b' in shown and "amp&lt;" in shown
    assert not [e for e in root.iter() if e.tag.endswith("script")]


@pytest.mark.skipif(not HAVE_DOT, reason="Graphviz's dot is not installed (apt-get install graphviz)")
def test_svg_of_showcase(tmp_path, capsys):
    out = tmp_path / "s.svg"
    assert graph(SHOWCASE, out) == 0
    root = ET.fromstring(out.read_text())
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "2 × layers.0–1" in texts and "LayerNormalization" in texts


def test_svg_without_graphviz_says_to_install_it(tmp_path):
    out = tmp_path / "s.svg"
    env = dict(os.environ, PATH=str(tmp_path))  # no dot there
    run = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--graph", str(SHOWCASE), str(out)],
                         env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    assert "install Graphviz" in run.stderr and "Traceback" not in run.stderr
    assert not out.exists() and not list(tmp_path.iterdir())


def test_ort_and_onnx_external(tmp_path):
    for src in (ORT, ROOT / "testdata" / "valid" / "external.onnx"):
        if not src.exists():
            pytest.skip(f"{src.name} not generated")
        out = tmp_path / (src.stem + ".dot")
        assert graph(src, out) == 0
        nodes, _ = read_dot(out.read_text())
        assert any(k.startswith("b") for k in nodes)


def test_file_with_problems_is_drawn(tmp_path, capsys):
    src = ROOT / "testdata" / "hostile" / "InvalidModel-duplicate-node-outputs.onemodel"
    if not src.exists():
        pytest.skip("hostile corpus not generated")
    out = tmp_path / "p.dot"
    code = graph(src, out)
    err = capsys.readouterr().err
    assert code == 0 and "drawing what could be read" in err
    read_dot(out.read_text())


@pytest.mark.parametrize("args, code, message", [
    (["OUT.png"], 2, "OUT must end in .dot or .svg"),
    (["OUT.dot", "--depth", "0"], 2, "--depth takes a number of 1 or more"),
    (["OUT.dot", "--depth", "x"], 2, "--depth takes a number of 1 or more"),
])
def test_usage_errors(tmp_path, capsys, args, code, message):
    out = [str(tmp_path / args[0]), *args[1:]]
    assert main(["--graph", str(SHOWCASE), *out]) == code
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_depth_needs_graph(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--depth", "2", str(SHOWCASE)])
    assert e.value.code == 2
    assert "--depth goes with --graph" in capsys.readouterr().err


def test_missing_file(tmp_path, capsys):
    assert graph(tmp_path / "nope.onemodel", tmp_path / "o.dot") == 1
    assert "--graph" in capsys.readouterr().err
    assert not (tmp_path / "o.dot").exists()


def test_constant_outputs_labelled_with_their_tensor_type(tmp_path):
    """A Constant's output has no declared type: its edge and box carry the tensor's dtype and dims."""
    import insight_models as im

    src = im.constant_weights(tmp_path / "c.onemodel")
    out = tmp_path / "c.dot"
    assert graph(src, out, "--depth", "full") == 0
    nodes, edges = read_dot(out.read_text())
    const = [k for k, v in nodes.items() if v["label"].startswith("Constant\nconst_w0")]
    assert len(const) == 1 and nodes[const[0]]["label"].endswith("float[64,64]")
    assert [label for a, _, label in edges if a == const[0]] == ["float[64,64]"]
