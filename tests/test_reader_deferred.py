"""The viewer's first-screen open (``reader.open_deferred``): after ``finish`` the same document as a
diagnose open, before it no check of a bulk node list and no reading rule has run.

The differential tests read every bundled file (valid and hostile) and the single-defect mutations of
``test_reader_lazy`` both ways, every graph a bulk list (``BULK_NODES = 1``, so every node list is
deferred) and the default, and require the same problems and findings (in the same order, with the
same offsets) and the same records.
"""

from __future__ import annotations

import pytest

from onemodel_viewer.format import reader
from onemodel_viewer.format.schema import NodeList

from test_reader_lazy import FILES, MUTATIONS, _chain_model, dump
from test_reader_util import graph, model, node, pack, write


def _whole(doc):
    return list(doc.problems), list(doc.findings), dump(doc.model) if doc.model is not None else None


def build_before_finish(model) -> None:
    """Build some records of every node list reachable before ``finish`` (as a first screen does):
    every other node, and the last, of the main graph, the function bodies and the subgraphs of the
    records built."""
    from onemodel_viewer.format.schema import Graph

    graphs = [model.graph] + [f for f in model.functions]
    while graphs:
        g = graphs.pop()
        n = len(g.nodes)
        for i in sorted({*range(0, n, 2), n - 1} - {-1}):
            for a in g.nodes[i].attributes:
                graphs.extend(x for x in (a.value if isinstance(a.value, tuple) else (a.value,)) if isinstance(x, Graph))


def both(path, bulk, monkeypatch, early: bool = False):
    """(the diagnose open, the deferred open once finished), each as (problems, findings, records);
    ``early``: some records built before ``finish`` (:func:`build_before_finish`)."""
    monkeypatch.setattr(reader, "BULK_NODES", bulk)
    doc, _ = reader.open_with_manifest(path, "diagnose", duplicates=False)
    try:
        plain = _whole(doc)
    finally:
        doc.close()
    doc, _, finish = reader.open_deferred(path)
    try:
        if early and doc.model is not None:
            build_before_finish(doc.model)
        if finish is not None:
            assert finish() is True
        return plain, _whole(doc)
    finally:
        doc.close()


@pytest.mark.parametrize("early", [False, True], ids=["", "built-before"])
@pytest.mark.parametrize("bulk", [1, reader.BULK_NODES])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.rsplit("/", 1)[-1])
def test_a_finished_deferred_open_is_the_diagnose_open_on_every_bundled_file(path, bulk, early, monkeypatch):
    """Regression (``early``): a node record the first screen built before ``finish`` reported its problem
    without a file offset (the manifest was no longer mapped) and after the problems of later records."""
    plain, deferred = both(path, bulk, monkeypatch, early)
    assert deferred == plain


@pytest.mark.parametrize("early", [False, True], ids=["", "built-before"])
@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_a_finished_deferred_open_is_the_diagnose_open_on_single_defects(name, early, tmp_path, monkeypatch):
    """Regression (``early``): see the bundled files' test; here a node with a defect is among those built."""
    m = _chain_model()
    MUTATIONS[name](m)
    path = write(tmp_path, pack(m, b"\0" * 8))
    plain, deferred = both(path, 32, monkeypatch, early)
    assert deferred == plain


def _two_defects(tmp_path):
    """A 40-node list with an undefined input at node 33, then a function whose body has a bad op."""
    m = _chain_model()
    m["graph"]["nodes"][33]["inputs"] = ["nowhere"]
    m["graph"]["nodes"][5]["op"] = 5  # a node the check builds
    m["functions"] = [{"name": "f", "domain": "local", "inputs": ["a"], "outputs": ["b"],
                       "nodes": [node("Relu", ["a"], ["b"], name="r") | {"op": None}]}]
    m["opsets"].append({"domain": "local", "version": 1})
    return write(tmp_path, pack(m, b"\0" * 8))


def test_before_finish_only_the_parse_and_the_other_records_are_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    path = _two_defects(tmp_path)
    doc, parsed, finish = reader.open_deferred(path)
    try:
        assert parsed is not None and not parsed.checked_duplicates
        nodes = doc.model.graph.nodes
        assert isinstance(nodes, NodeList) and not nodes.built and nodes.built_records() == {}
        assert [p.where for p in doc.problems] == ["manifest.functions[0].nodes[0].op"]
        assert doc.model.graph.order is None
        assert finish() is True
        # the node list's problem goes before the function's, where the open reports it; the rules' after
        assert [(p.kind.name, p.where) for p in doc.problems] == [
            ("MALFORMED", "manifest.graph.nodes[5].op"),
            ("MALFORMED", "manifest.functions[0].nodes[0].op"),
            ("INVALID_MODEL", "manifest.graph.nodes[33].inputs[0]"),
        ]
        assert all(p.offset is not None for p in doc.problems)  # located in the manifest mapped again
    finally:
        doc.close()


def test_finish_stops_when_its_step_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    path = _two_defects(tmp_path)
    doc, _, finish = reader.open_deferred(path)
    try:
        assert finish(lambda: True) is False
        assert [p.where for p in doc.problems] == ["manifest.functions[0].nodes[0].op"]
    finally:
        doc.close()


def test_a_record_built_before_finish_is_checked_once(tmp_path, monkeypatch):
    """A node the screen shows before ``finish`` (built on its own) has its problem once, not twice, and
    (regression) in its place with its file offset, as a diagnose open has it: it had none (the manifest
    was no longer mapped when the record was built) and came after the function's problem."""
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    path = _two_defects(tmp_path)
    plain, _ = reader.open_with_manifest(path, "diagnose", duplicates=False)
    doc, _, finish = reader.open_deferred(path)
    try:
        record = doc.model.graph.nodes[5]
        assert record.op == ""
        assert finish() is True
        assert [p.where for p in doc.problems].count("manifest.graph.nodes[5].op") == 1
        assert doc.problems == plain.problems and doc.problems[0].offset is not None
        assert doc.model.graph.nodes[5] is record  # the record shown stays
    finally:
        doc.close()
        plain.close()


def test_nothing_waits_for_an_unparsable_manifest(tmp_path):
    path = write(tmp_path, pack(model(graph()), b"")[:70] + b"\0" * 10)
    doc, parsed, finish = reader.open_deferred(path)
    try:
        assert finish is None and parsed is None and doc.problems
    finally:
        doc.close()


def test_the_node_check_asks_its_step_between_runs_of_nodes(tmp_path, monkeypatch):
    """A background job's step is asked inside a list's check too (10^6 nodes: ~0.9 s), and stops it."""
    from onemodel_viewer.format.onemodel import builder

    monkeypatch.setattr(reader, "BULK_NODES", 32)
    monkeypatch.setattr(builder, "STEP_NODES", 8)
    m = _chain_model()
    m["graph"]["nodes"][33]["inputs"] = ["nowhere"]  # a reading rule's problem: every node stored as writers do
    path = write(tmp_path, pack(m, b"\0" * 8))
    doc, _, finish = reader.open_deferred(path)
    asked = []

    def step():
        asked.append(1)
        return len(asked) == 3  # the list's check starts at the second question

    try:
        assert finish(step) is False and len(asked) == 3
        assert doc.problems == []
    finally:
        doc.close()
    doc, _, finish = reader.open_deferred(path)
    try:
        asked.clear()
        assert finish(lambda: asked.append(1)) is True
        # before the list, between its 5 runs, before the rules, between the 4 parts of the graph's rules
        assert len(asked) == 1 + 4 + 1 + 3
        assert [p.where for p in doc.problems] == ["manifest.graph.nodes[33].inputs[0]"]
    finally:
        doc.close()


def test_the_reading_rules_ask_the_step_too(tmp_path, monkeypatch):
    """The rules of a 10^6-node graph hold the interpreter ~0.13 s: a background job's step is asked inside."""
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    m = _chain_model()
    m["graph"]["nodes"][33]["inputs"] = ["nowhere"]
    path = write(tmp_path, pack(m, b"\0" * 8))
    doc, _, finish = reader.open_deferred(path)
    asked = []
    try:
        assert finish(lambda: asked.append(1) or len(asked) == 4) is False  # the rules' second question
        assert doc.model.graph.order is None and doc.problems == []
    finally:
        doc.close()
