"""The hostile .ort corpus (testdata/hostile/ort, built by testdata/make_hostile_ort.py) against the reader.

Each ``<Kind>-<case>.ort`` holds one defect; ``expected.json`` gives ``[kind, where, offset]`` of
the first problem. Strict open raises exactly that; diagnose mode has it as ``problems[0]`` and
never raises; ``--check --json`` exits 1 with it first; ``--convert``/``--export`` fail and write
nothing. ``base.ort`` (ONNX Runtime's own output, the source of every mutation) is valid.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from onemodel_viewer import cli
from onemodel_viewer import format as omf
from onemodel_viewer.format import FormatError, Kind

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "testdata" / "hostile" / "ort"
EXPECTED: dict[str, list] = json.loads((HOSTILE / "expected.json").read_text())
NAMES = sorted(EXPECTED)
FINDINGS: dict[str, list] = json.loads((HOSTILE / "expected_findings.json").read_text())
"""``Finding-<case>.ort``: valid files with one finding each, ``[code, where, offset]``."""


def test_corpus_is_complete_and_named_by_kind():
    files = {p.name for p in HOSTILE.glob("*.ort")} - {"base.ort"}
    assert files == set(EXPECTED) | set(FINDINGS), "the tables and the files on disk differ: rerun testdata/make_hostile_ort.py"
    assert all(name.startswith("Finding-") for name in FINDINGS) and not any(n.startswith("Finding-") for n in EXPECTED)
    assert len(EXPECTED) >= 40
    for name, (kind, where, offset) in EXPECTED.items():
        assert name.split("-", 1)[0] == kind
        assert kind in {k.value for k in Kind} - {"Io"}
        assert where in ("file", "file_identifier") or where.startswith("InferenceSession"), name
        assert isinstance(offset, int)


def test_base_is_valid():
    doc = omf.open(HOSTILE / "base.ort")
    try:
        assert doc.source == "ort" and doc.valid
        ops = [n.op for n in doc.model.graph.nodes]
        assert sorted(ops) == ["Add", "Identity", "If"]
        (if_node,) = [n for n in doc.model.graph.nodes if n.op == "If"]
        assert sorted(a.name for a in if_node.attributes) == ["else_branch", "then_branch"]
        assert doc.extra.version == "6"
    finally:
        doc.close()


@pytest.mark.parametrize("name", NAMES)
def test_hostile_strict(name):
    kind, where, offset = EXPECTED[name]
    path = HOSTILE / name
    before = path.read_bytes()
    with pytest.raises(FormatError) as info:
        omf.open(path).close()
    assert (info.value.kind.value, info.value.where, info.value.offset) == (kind, where, offset), info.value
    assert path.read_bytes() == before


@pytest.mark.parametrize("name", NAMES)
def test_hostile_diagnose(name):
    kind, where, offset = EXPECTED[name]
    doc = omf.open(HOSTILE / name, mode="diagnose")  # never raises
    try:
        first = doc.problems[0]
        assert (first.kind.value, first.where, first.offset) == (kind, where, offset)
    finally:
        doc.close()


@pytest.mark.parametrize("name", NAMES)
def test_hostile_check_json(name):
    kind, where, offset = EXPECTED[name]
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(["--check", "--json", str(HOSTILE / name)])
    (report,) = [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]
    assert code == 1 and report["valid"] is False
    p = report["problems"][0]
    assert (p["kind"], p["where"], p["offset"]) == (kind, where, offset)


@pytest.mark.parametrize("name", ["Unsupported-shared-subtable-bomb.ort", "Malformed-vector-length-huge.ort",
                                  "Unsupported-types-nested-120.ort", "Unsupported-graphs-nested-65.ort"])
def test_hostile_process_exits_1_without_traceback(name, tmp_path):
    """The installed command on the worst ones: exit 1, a report, no traceback; nothing written on convert/export."""
    path = HOSTILE / name
    r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr + r.stdout
    for flag, dst in (("--convert", tmp_path / "out.onemodel"), ("--export", tmp_path / "out.onnx")):
        r = subprocess.run([sys.executable, "-m", "onemodel_viewer", flag, str(path), str(dst)], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1, (flag, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr + r.stdout
    assert list(tmp_path.iterdir()) == []


def test_bomb_is_stopped_by_the_table_budget():
    """The shared sub-table bomb (2^40 table visits if followed) stops at the budget: Unsupported, not a hang."""
    doc = omf.open(HOSTILE / "Unsupported-shared-subtable-bomb.ort", mode="diagnose")
    try:
        assert [p.kind for p in doc.problems][:1] == [Kind.UNSUPPORTED]
        assert "tables visited" in doc.problems[0].message
        assert doc.extra.tables_visited <= max(4096, doc.size // 4) + 1
    finally:
        doc.close()


def test_empty_file_named_otherwise_is_not_read_as_ort(tmp_path):
    """Sniffing: ORTM at bytes 4..8 selects the ORT reader whatever the name; a .ort name does too."""
    src = (HOSTILE / "base.ort").read_bytes()
    p = tmp_path / "model.bin"
    p.write_bytes(src)
    doc = omf.open(p)
    assert doc.source == "ort"
    doc.close()
    q = tmp_path / "junk.ort"
    q.write_bytes(b"\x08\0\0\0" + b"XXXX" + bytes(16))
    with pytest.raises(FormatError) as info:
        omf.open(q)
    assert (info.value.kind, info.value.where, info.value.offset) == (Kind.MALFORMED, "file_identifier", 4)


@pytest.mark.parametrize("name", sorted(FINDINGS))
def test_finding_files_are_valid_with_their_one_finding(name):
    """A type code ORT lacks had no file of its own: it is valid (strict open, no problem) with exactly that
    finding, at the field's bytes."""
    code, where, offset = FINDINGS[name]
    doc = omf.open(HOSTILE / name)  # strict: no problem raised
    try:
        assert doc.valid and doc.problems == []
        assert [(f.code, f.where, f.offset) for f in doc.findings] == [(code, where, offset)]
    finally:
        doc.close()
    buf = io.StringIO()
    with redirect_stdout(buf):
        rc = cli.main(["--check", "--json", str(HOSTILE / name)])
    (report,) = [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]
    assert rc == 0 and report["valid"] is True and report["problems"] == []
    assert [(f["code"], f["where"], f["offset"]) for f in report["findings"]] == [(code, where, offset)]


def test_finding_offsets_point_at_the_field_value():
    """Read at the expected offsets without the reader: external_data_offset 0 (an int64), data type code 22 (int32)."""
    import struct

    ext = (HOSTILE / "Unsupported-external-data-offset.ort").read_bytes()
    assert struct.unpack_from("<q", ext, EXPECTED["Unsupported-external-data-offset.ort"][2]) == (0,)
    dt = (HOSTILE / "Finding-unloadable-dtype.ort").read_bytes()
    assert struct.unpack_from("<i", dt, FINDINGS["Finding-unloadable-dtype.ort"][2]) == (22,)


@pytest.mark.parametrize("argv", [["--check"], ["--stats"], ["--export", "OUT.onnx"], ["--export", "OUT.ort"],
                                  ["--convert", "OUT.onemodel"]])
def test_external_data_offset_unsupported_in_every_command(tmp_path, argv):
    """Regression: a tensor with external_data_offset set was a finding: --check called the file valid,
    --stats then failed with "0 bytes stored" and --export wrote an ONNX tensor without data, exit 0.
    Now every command stops with Unsupported at the field and writes nothing."""
    name = "Unsupported-external-data-offset.ort"
    kind, where, _offset = EXPECTED[name]
    args = [a.replace("OUT", str(tmp_path / "out")) for a in argv]
    out, err = io.StringIO(), io.StringIO()
    from contextlib import redirect_stderr

    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main([args[0], str(HOSTILE / name), *args[1:]])
    assert rc == 1
    assert f"{kind} at {where}" in out.getvalue() + err.getvalue()
    assert list(tmp_path.iterdir()) == []
