"""What an .ort file adds (format/ort/facts.py): the format versions and the ONNX Runtime releases that read them,
node and payload look-ups. Sources of the version table: onnxruntime's ``ort_format_version.h`` and schema README
(versions 1-5), ``docs/ORT_Format_Update_in_1.13.md`` (1.13 refuses 1-4; full builds 1.14+ read them again),
the float8 change (#14731, first released in 1.16) for version 6; ``test_ort_real.py`` checks the installed
onnxruntime against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.format.ort.facts import FORMAT_VERSIONS, VERSIONS, reads

BASE = Path(__file__).resolve().parent.parent / "testdata" / "hostile" / "ort" / "base.ort"


@pytest.mark.parametrize("version, release, minimal, expected", [
    ("6", (1, 16), False, True), ("6", (1, 15), False, False), ("6", (1, 32), True, True),
    ("5", (1, 13), False, True), ("5", (1, 12), False, False), ("5", (1, 32), True, True),
    ("4", (1, 8), True, True), ("4", (1, 12), False, True), ("4", (1, 13), False, False),
    ("4", (1, 14), False, True), ("4", (1, 14), True, False),
    ("3", (1, 7), True, True), ("3", (1, 8), False, False), ("3", (1, 20), False, True), ("3", (1, 20), True, False),
    ("2", (1, 5), False, False), ("2", (1, 6), False, True), ("1", (1, 5), True, True), ("1", (1, 13), False, False),
])
def test_which_releases_read_a_version(version, release, minimal, expected):
    assert reads(version, release, minimal=minimal) is expected


def test_unknown_version_is_read_by_no_release():
    assert reads("7", (1, 32)) is False and reads("0", (1, 5)) is False and reads("x", (1, 16)) is False


def test_version_texts_name_writers_and_readers():
    """Versions 5 and 6 had their release ranges written from memory: 5 is written by 1.13-1.15 (not 'read by
    1.13 and later' only), and the 1-4 texts no longer claim that 1.8-1.13 read them."""
    assert set(FORMAT_VERSIONS) == set(VERSIONS) == {"1", "2", "3", "4", "5", "6"}
    assert "written by ONNX Runtime 1.13-1.15" in VERSIONS["5"]
    assert "written by ONNX Runtime 1.16 and later" in VERSIONS["6"]
    assert "1.13 refuses it" in VERSIONS["4"] and "minimal builds do not" in VERSIONS["4"]
    assert "without its saved runtime optimizations" in VERSIONS["4"]
    for v in "123":
        assert "1.8-1.13 refuse it" in VERSIONS[v], v


def test_base_file_facts_find_node_and_payload():
    doc = omf.open(BASE)
    try:
        f = doc.extra
        assert f.readers == VERSIONS["6"]
        (add,) = [n for n in doc.model.graph.nodes if n.op == "Add"]
        nf = f.node(add.where)
        assert (nf.execution_provider, nf.since_version, nf.input_arg_counts) == ("CPUExecutionProvider", 14, (1, 1))
        (w,) = [t for t in doc.model.graph.initializers if t.name == "w"]
        p = f.payload(w.where)
        assert (p.offset, p.length) == (w.file_offset, 12) and p.mod64 == w.file_offset % 64
        assert f.payload("InferenceSession.model.graph.initializers[0]") is None  # the string tensor: no payload
        assert f.node("no.such.node") is None
        assert [k.op_id for k in f.kernel_type_strs] == [":Add:14", ":Identity:16", ":If:16", ":Neg:13"]
    finally:
        doc.close()


def test_graph_names_are_made_up_not_a_value_name():
    """The main graph was named after its last node_arg (the loop over node_args reused the graph's name variable)."""
    doc = omf.open(BASE)
    try:
        (if_node,) = [n for n in doc.model.graph.nodes if n.op == "If"]
        assert doc.model.graph.name == "main"
        assert sorted(g.name for a in if_node.attributes for g in a.graphs()) == ["else_branch", "then_branch"]
    finally:
        doc.close()


def test_table_span_is_the_walked_table_of_each_record():
    """table_span answers from the importer's offsets (no pass over every span on the viewer's first selection):
    for every record it knows, the same (start, length) as the table span the walk recorded under that path."""
    doc = omf.open(BASE)
    try:
        f = doc.extra
        walked = {s[3]: (s[0], s[1]) for s in f.spans if s[2] == "table"}
        assert len(f.tables) >= 10
        assert {w: f.table_span(w) for w in f.tables} == {w: walked[w] for w in f.tables}
        for n in doc.model.graph.nodes:
            assert f.table_span(n.where) == walked[n.where]
        assert f.table_span("InferenceSession.kernel_type_str_resolver.op_kernel_type_str_args[0]") is not None
        assert f.table_span("no.such.record") is None
    finally:
        doc.close()
