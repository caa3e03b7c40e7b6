"""The spec rule table (format/spec_rules.py): every problem the reader reports names the rule it breaks."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from onemodel_viewer import cli
from onemodel_viewer import format as omf
from onemodel_viewer.format import Kind, Problem
from onemodel_viewer.format.spec_rules import RULES, TABLE, rule_for, rule_of, shape_of

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "testdata" / "hostile"
EXPECTED: dict[str, dict] = json.loads((HOSTILE / "expected.json").read_text())
BROKEN = sorted(n for n, e in EXPECTED.items() if e["kind"])


def test_table_rows_name_known_rules_and_every_rule_is_used():
    used = {rid for _k, _p, rid in TABLE}
    assert used <= set(RULES)
    assert set(RULES) - used == set()
    for r in RULES.values():
        assert r.id and r.section.startswith(("§", "ONNX")) and r.summary


@pytest.mark.parametrize("name", BROKEN)
def test_every_problem_of_a_hostile_file_maps_to_a_rule(name):
    doc = omf.open(HOSTILE / name, mode="diagnose")
    try:
        assert doc.problems
        for p in doc.problems:
            assert rule_of(p) is not None, (p.kind, p.where)
    finally:
        doc.close()


def test_check_json_gives_the_rule_id_of_each_problem():
    buf = io.StringIO()
    with redirect_stdout(buf):
        cli.main(["--check", "--json", *(str(HOSTILE / n) for n in BROKEN)])
    for line in buf.getvalue().splitlines():
        obj = json.loads(line)
        assert obj["problems"]
        for p in obj["problems"]:
            assert p["rule"] in RULES, p


def test_check_text_prints_the_rule(capsys):
    cli.main(["--check", str(HOSTILE / "InvalidModel-undefined-node-input.onemodel")])
    out = capsys.readouterr().out
    assert "rule: §3 rule 2 [rule-2-defined]" in out


@pytest.mark.parametrize(
    "kind, where, rid",
    [
        (Kind.UNSUPPORTED, "header.flags", "header-flags"),
        (Kind.MALFORMED, "header.version", "header-version-0"),
        (Kind.UNSUPPORTED, "header.version", "header-version-newer"),
        (Kind.UNSUPPORTED, "header.reserved", "header-reserved"),
        (Kind.MALFORMED, "manifest", "manifest-json"),
        (Kind.UNSUPPORTED, "manifest", "manifest-depth"),
        (Kind.INVALID_MODEL, "manifest.graph.initializers[0].data.length", "tensor-data-length"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[2].attributes[0].value.data.length", "tensor-data-length"),
        (Kind.UNSUPPORTED, "manifest.graph.initializers[0].data.length", "tensor-size"),
        (Kind.MALFORMED, "manifest.graph.initializers[0].data.length", "tensor-data-field"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[3].inputs[1]", "rule-2-defined"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[3].outputs[0]", "rule-1-unique"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[3]", "rule-3-cycle"),
        (Kind.INVALID_MODEL, "manifest.functions[0].nodes[1]", "rule-3-cycle-function"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[3].attributes[0].value.nodes[0]", "rule-3-cycle"),
        (Kind.INVALID_MODEL, "manifest.graph.nodes[0].domain", "rule-4-opset"),
        (Kind.INVALID_MODEL, "manifest.graph.outputs[0].name", "rule-2-graph-output"),
        (Kind.MALFORMED, "manifest.graph.nodes[1].attributes[0].type", "attribute-type"),
        (Kind.UNSUPPORTED, "manifest.functions[0].attribute_defaults[0].type", "attribute-type-unknown"),
        (Kind.UNSUPPORTED, "manifest.graph.inputs[0].type.inner", "nesting"),
        (Kind.MALFORMED, 'manifest.graph["odd key"]', "schema-field"),
        (Kind.IO, "file", "io"),
        (Kind.INVALID_MODEL, "onnx.checker", "onnx-checker"),
        (Kind.MALFORMED, "onnx", "onnx-protobuf"),
    ],
)
def test_rule_for_examples(kind, where, rid):
    assert rule_for(kind, where).id == rid
    assert rule_of(Problem(kind, where, None, "x")).id == rid


def test_an_unknown_pair_has_no_rule_and_shape_of_drops_indices():
    assert rule_for(Kind.INVALID_MODEL, "header.flags") is None
    assert shape_of("manifest.graph.nodes[430].inputs[0]") == "manifest.graph.nodes[].inputs[]"


def test_label_names_section_id_and_clarification():
    label = rule_for(Kind.UNSUPPORTED, "header.reserved").label()
    assert label.startswith("§1.1 header: reserved [header-reserved]; CLARIFICATIONS.md: ")
