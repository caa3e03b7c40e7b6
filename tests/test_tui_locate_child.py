"""Manifest look-ups in a child process (tui/locate_child.py): the viewer's big manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

import onemodel_viewer.format as omf
from onemodel_viewer.format.schema import walk_graphs
from onemodel_viewer.tui import locate
from onemodel_viewer.tui.locate_child import LocateChild

ROOT = Path(__file__).resolve().parent.parent
VALID = ROOT / "testdata" / "valid"


def wheres(doc) -> list[str]:
    out = ["manifest", "manifest.graph", "manifest.graph.nodes[100000]", "not a path[", ""]
    for g in walk_graphs(doc.model.graph):
        out += [g.where] + [n.where for n in g.nodes] + [t.where for t in g.initializers]
        out += [v.where for v in (*g.inputs, *g.outputs)]
    return out


def spans(spans_of: locate.ManifestSpans, doc, ws: list[str]) -> list:
    return [spans_of.span(doc, w, lambda: True, lambda: False) for w in ws]


@pytest.mark.parametrize("name", ["showcase.onemodel", "subgraphs.onemodel", "functions.onemodel"])
def test_the_child_finds_what_the_viewer_finds(monkeypatch, name):
    """Over CHILD_BYTES the look-ups go to a child process (here: every manifest, the limit set to 0);
    every span is the one the in-process walker finds."""
    with omf.open(str(VALID / name), mode="diagnose") as doc:
        ws = wheres(doc)
        here = locate.ManifestSpans()
        expected = spans(here, doc, ws)
        assert here._child is None
        monkeypatch.setattr(locate, "CHILD_BYTES", 0)
        there = locate.ManifestSpans()
        try:
            got = spans(there, doc, ws)
            assert there._child is not None and there._locator is None
        finally:
            there.close()
        assert got == expected
        assert sum(x is not None for x in got) > len(ws) // 2


def test_a_dead_child_answers_nothing(tmp_path):
    """A child killed (or crashed) under the viewer: look-ups answer None, never raise."""
    path = str(VALID / "showcase.onemodel")
    with omf.open(path, mode="diagnose") as doc:
        m0, mlen = doc.manifest_span
    child = LocateChild(path, m0, mlen, True)
    assert child.span("manifest.graph") is not None
    child._proc.kill()
    child._proc.wait()
    assert child.span("manifest.graph") is None
    assert child.span("manifest.graph") is None
    child.close()


def test_a_hostile_manifest_in_the_child(tmp_path):
    """Bytes that are not JSON: the child answers None for what it cannot find and stays up."""
    p = tmp_path / "junk.bin"
    p.write_bytes(b'{"graph": {"nodes": [{"op": "A"}, \xff\xfe garbage')
    child = LocateChild(str(p), 0, p.stat().st_size, False)
    try:
        first = child.span("manifest.graph.nodes[0]")
        assert child.span("manifest.graph.nodes[7]") is None
        assert child.span("manifest.graph.nodes[0]") == first  # still answering
        assert child._proc is not None and child._proc.poll() is None
    finally:
        child.close()
    assert child._proc is None
