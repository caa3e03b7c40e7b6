"""The diff on the hostile corpus (testdata/hostile, built by testdata/make_hostile.py), files opened in diagnose mode.

Every file is diffed with itself and with the corpus' valid base file, both ways, in the library
(``analysis.diff``), the CLI (``--diff --json`` / ``--summary``: exit status, nothing but one line per
file on stderr) and, on one file of each kind of trouble, the viewer's diff mode (Pilot). A tensor
whose bytes a file cannot give is *not compared*, with that file's problem about it (exact kind,
``where`` and offset); a file of which no model can be read raises (library) or exits 2 (CLI) with its
first problem. No test waits on a clock: before any byte is compared, every tensor pair left for the
second stage is checked to lie inside its storage (what would have looped 2^60 elements cannot pass).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from onemodel_viewer import cli
from onemodel_viewer import format as omf
from onemodel_viewer.analysis.diff.compare import staged
from onemodel_viewer.analysis.diff.skip import ProblemIndex, bytes_problem, check_sizes
from onemodel_viewer.analysis.diff.tensors import compare_tensors
from onemodel_viewer.format import FormatError, Kind

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "testdata" / "hostile"
EXPECTED: dict[str, dict] = json.loads((HOSTILE / "expected.json").read_text())
BASE = HOSTILE / "valid-base.onemodel"
FILES = sorted(EXPECTED)


def _open(path) -> omf.Document:
    return omf.open(str(path), mode="diagnose")


def _expected(name: str) -> tuple[str, str] | None:
    e = EXPECTED[name]
    return (e["kind"], e["where"]) if e["kind"] else None


def _kw(p) -> tuple[str, str] | None:
    return None if p is None else (p.kind.value, p.where)


def _inside_storage(sd) -> None:
    """The guard against a comparison that never ends: each pair the second stage reads is within its storage."""
    for a, b in sd.pairs:
        assert a.length == b.length
        for t in (a, b):
            if t.length:
                assert t.storage is not None and t.file_offset is not None
                assert 0 <= t.file_offset and t.file_offset + t.length <= t.storage.size, t.where


def _diff(path_a, path_b):
    """(result, doc A, doc B), the second stage run only after :func:`_inside_storage`."""
    da, db = _open(path_a), _open(path_b)
    sd = staged(da, db)
    _inside_storage(sd)
    return sd.compare_data(), da, db


# ---------------------------------------------------------------------------- the library


@pytest.mark.parametrize("name", FILES)
def test_library_diff_with_itself(name):
    path = HOSTILE / name
    doc = _open(path)
    want = _expected(name)
    if doc.model is None:  # nothing sound: the file's first problem, exactly
        assert want is not None
        with pytest.raises(FormatError) as ei:
            staged(doc, _open(path))
        assert (ei.value.kind.value, ei.value.where) == want
        assert ei.value.problem == doc.problems[0]
        return
    r, da, db = _diff(path, path)
    assert r.equal and r.differences == []
    if want is None:
        assert r.not_compared == []
    for nc in r.not_compared:
        assert nc.a == da.problems[0] and nc.b == db.problems[0], nc.where
        assert _kw(nc.a) == want


@pytest.mark.parametrize("name", FILES)
def test_library_diff_with_a_valid_file(name):
    path = HOSTILE / name
    doc = _open(path)
    want = _expected(name)
    if doc.model is None:
        for pair in ((doc, _open(BASE)), (_open(BASE), doc)):
            with pytest.raises(FormatError) as ei:
                staged(*pair)
            assert ei.value.problem == doc.problems[0]
        return
    r, da, _ = _diff(path, BASE)
    back, _, db = _diff(BASE, path)
    assert len(r.differences) == len(back.differences)
    assert len(r.not_compared) == len(back.not_compared)
    for nc, cn in zip(r.not_compared, back.not_compared):
        assert nc.b is None and cn.a is None  # the valid side has its bytes
        assert nc.a == da.problems[0] and cn.b == db.problems[0]
        assert _kw(nc.a) == want
    if want is None:
        assert r.not_compared == []


OTHER_FORMATS = sorted([*(HOSTILE / "ort").glob("*.ort"), *(ROOT / "testdata" / "external").glob("*/*.onnx")])
"""The .ort hostile corpus and the ONNX external-data cases (broken offsets, lengths, locations...)."""


@pytest.mark.parametrize("path", OTHER_FORMATS, ids=[f"{p.parent.name}/{p.name}" for p in OTHER_FORMATS])
def test_library_diff_of_other_formats_with_itself(path):
    """Diagnose-mode .ort and ONNX files: the diff finishes; a tensor not compared names a problem of its file
    when the file has one about it (else what its own facts show: Malformed/InvalidModel/Unsupported at it)."""
    doc = _open(path)
    if doc.model is None:
        with pytest.raises(FormatError) as ei:
            staged(doc, _open(path))
        assert ei.value.problem == doc.problems[0]
        return
    r, da, db = _diff(path, path)
    assert r.equal and r.differences == []
    for nc in r.not_compared:
        assert _kw(nc.a) == _kw(nc.b)
        assert nc.a in da.problems or nc.a.where.startswith(nc.a_ref.where)


VALID = sorted(p for p in (ROOT / "testdata" / "valid").iterdir() if p.suffix in (".onemodel", ".onnx", ".ort"))


@pytest.mark.parametrize("path", VALID, ids=[p.name for p in VALID])
def test_valid_files_have_every_tensor_compared(path):
    """The size checks never leave out a tensor of a valid file (OneModel, ONNX inline and external)."""
    r, da, _ = _diff(path, path)
    assert da.problems == [] and r.equal and r.not_compared == []


def test_count_2pow60_is_not_compared_rather_than_looped():
    """Regression: a tensor of 2^60 elements (Unsupported-count-2pow60) had a 2^60-byte length and no bytes;
    compare_tensors made one stretch per 48 MiB segment of it and never finished."""
    path = HOSTILE / "Unsupported-count-2pow60.onemodel"
    r, da, _ = _diff(path, path)
    assert [n.where for n in r.not_compared] == ['graph.initializers["b"]']
    p = r.not_compared[0].a
    assert (p.kind, p.where, p.offset) == (Kind.UNSUPPORTED, "manifest.graph.initializers[1].dims", 819)
    t = r.not_compared[0].a_ref
    with pytest.raises(FormatError) as ei:  # the kernel itself refuses it before any loop
        compare_tensors([(t, t)])
    assert (ei.value.kind, ei.value.where) == (Kind.UNSUPPORTED, "manifest.graph.initializers[1].dims")
    assert r.as_json("a", "b")["not_compared"][0]["a"]["rule"] == "tensor-count"


def _past_data_at() -> int:
    """Where Malformed-range-offset-past-data's problem points: the manifest's ``data`` object that claims bytes
    past the file (it was data_offset + the claimed offset, 4352 in a 3720-byte file: no byte of the file)."""
    import struct

    from onemodel_viewer.format.onemodel.manifest_locate import locate

    blob = (HOSTILE / "Malformed-range-offset-past-data.onemodel").read_bytes()
    ml = struct.unpack_from("<Q", blob, 24)[0]
    return 64 + locate(blob[64:64 + ml], "manifest.graph.initializers[0].data")[0]


def test_tensor_without_bytes_is_reported_not_raised():
    """Regression: a tensor whose bytes diagnose mode could not use (Malformed-range-offset-past-data) made the
    whole diff fail with "tensor bytes unavailable"; it is now one entry, with the file's problem."""
    path = HOSTILE / "Malformed-range-offset-past-data.onemodel"
    r, da, _ = _diff(path, BASE)
    assert r.equal and [n.where for n in r.not_compared] == ['graph.initializers["w"]']
    p = r.not_compared[0].a
    assert (p.kind, p.where, p.offset) == (Kind.MALFORMED, "manifest.graph.initializers[0].data", _past_data_at())
    node = next(n for n in r.root.walk() if n.where == 'graph.initializers["w"]')
    assert node.not_compared is r.not_compared[0] and not node.pending and not node.differences


def test_external_data_offset_is_the_reason_for_its_tensor_without_bytes():
    """A .ort tensor whose bytes are in an external file was not compared for a made-up reason ("InvalidModel at
    ….data.length: 0 bytes for 3 x float"), then for the file's finding: now the file's own Unsupported problem
    at ….external_data_offset (CLARIFICATIONS) is the reason."""
    path = HOSTILE / "ort" / "Unsupported-external-data-offset.ort"
    kind, where, offset = json.loads((HOSTILE / "ort" / "expected.json").read_text())[path.name]
    r, da, _ = _diff(path, path)
    assert [(p.kind, p.where, p.offset) for p in da.problems] == [(Kind.UNSUPPORTED, where, offset)]
    assert len(r.not_compared) == 1
    p = r.not_compared[0].a
    assert (p.kind, p.where, p.offset) == (Kind.UNSUPPORTED, where, offset)


def test_header_problem_is_the_reason_for_every_tensor_of_the_data_region():
    """A defect of the header's data region leaves every tensor without bytes: each cites that header problem."""
    path = HOSTILE / "Malformed-data-offset-unaligned.onemodel"
    r, da, _ = _diff(path, BASE)
    assert len(r.not_compared) == 6
    assert {_kw(n.a) for n in r.not_compared} == {("Malformed", "header.data_offset")}
    assert {n.a.offset for n in r.not_compared} == {da.problems[0].offset}


def test_unreadable_graph_attribute_is_a_difference_not_a_crash():
    """Regression: a GRAPH attribute whose value is an array (Malformed-type-graph-attr-array) is read as None
    in diagnose mode, and structure matching raised AttributeError on ``None.name``."""
    path = HOSTILE / "Malformed-type-graph-attr-array.onemodel"
    r, _, _ = _diff(path, BASE)
    assert [(d.where, d.change, d.a) for d in r.differences] == [
        ('graph.nodes["n3"].attributes["then_branch"]', "changed", None)]
    r, _, _ = _diff(path, path)
    assert r.equal


def test_bytes_problem_checks_sizes_in_integers():
    """What a tensor's own facts say when the document has no problem about it (here: a hand-made 2^60 tensor)."""
    from onemodel_viewer.format.schema import Tensor

    huge = Tensor(name="h", dtype=1, dims=(1 << 30, 1 << 30), length=1 << 62, where="w")
    assert _kw(bytes_problem(huge)) == ("Unsupported", "w.dims")
    empty = Tensor(name="e", dtype=1, dims=(1 << 31, 1 << 31, 1 << 31, 0), where="e")
    assert bytes_problem(empty) is None  # empty, whatever the other dims
    short = Tensor(name="s", dtype=1, dims=(4,), length=8, where="s")
    assert _kw(bytes_problem(short)) == ("InvalidModel", "s.data.length")
    unread = Tensor(name="u", dtype=1, dims=(4,), length=16, where="u")
    assert _kw(bytes_problem(unread)) == ("Malformed", "u")
    with pytest.raises(FormatError):
        check_sizes([(unread, unread)])
    idx = ProblemIndex([omf.Problem(Kind.MALFORMED, "u2", 5, "other"), omf.Problem(Kind.MALFORMED, "u.data", 7, "m")])
    assert bytes_problem(unread, idx).offset == 7  # the document's problem about it, not "u2"


# ---------------------------------------------------------------------------- the CLI


def _cli(capsys, *args) -> tuple[int, str, str]:
    rc = cli.main(["--diff", *map(str, args)])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err


def _shown(where: str) -> str:
    """What of a ``where`` a terminal line shows for sure (long ones are cut by ``textsafe.visible``)."""
    return where[:80]


def _cli_checks(name: str, rc: int, out: str, err: str, sides: tuple[bool, bool]) -> None:
    """``sides``: which of A and B is the file ``name`` (the other is the valid base)."""
    want = _expected(name)
    assert "Traceback" not in err
    doc = _open(HOSTILE / name)
    if doc.model is None:
        assert rc == 2 and out == ""
        assert len(err.strip().splitlines()) == 1
        assert f"{want[0]} at {_shown(want[1])}" in err
        return
    if want is None:
        assert err == ""
        assert rc in (0, 1)
        return
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == sum(sides)
    assert all(f"{want[0]} at {_shown(want[1])}" in line and "sound parts" in line for line in lines)


@pytest.mark.parametrize("name", FILES)
def test_cli_json_with_itself_and_a_valid_file(name, capsys):
    path = HOSTILE / name
    for a, b, sides in ((path, path, (True, True)), (path, BASE, (True, False)), (BASE, path, (False, True))):
        rc, out, err = _cli(capsys, a, b, "--json")
        _cli_checks(name, rc, out, err, sides)
        if not out:
            continue
        j = json.loads(out)
        want = _expected(name)
        first = _open(path).problems[:1]
        assert j["complete"] is (want is None)
        for side, is_it in zip("ab", sides):
            got = j["problems"][side]
            if is_it and want is not None:
                assert (got[0]["kind"], got[0]["where"], got[0]["offset"]) == (*want, first[0].offset)
            else:
                assert got == []
        for nc in j["not_compared"]:
            for side, is_it in zip("ab", sides):
                assert (nc[side] is not None) is is_it
                if is_it:
                    assert (nc[side]["kind"], nc[side]["where"], nc[side]["offset"]) == (*want, first[0].offset)
        if want is None:
            assert rc == (0 if j["equal"] else 1)


@pytest.mark.parametrize("name", FILES)
def test_cli_summary_with_a_valid_file(name, capsys):
    rc, out, err = _cli(capsys, HOSTILE / name, BASE, "--summary")
    _cli_checks(name, rc, out, err, (True, False))
    want = _expected(name)
    if out and want is not None:
        assert "over the sound parts" in out
        assert f"problem {want[0]} at {_shown(want[1])}" in out


def test_installed_entry_point_on_a_broken_file():
    """The real entry point (``python -m onemodel_viewer``, which ends with ``os._exit``): exit 2, the JSON on
    stdout with the broken side's problem, one line on stderr, no traceback."""
    import subprocess
    import sys

    path = HOSTILE / "Malformed-range-offset-past-data.onemodel"
    p = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--diff", str(path), str(BASE), "--json"],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 2
    assert "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1
    j = json.loads(p.stdout)
    assert j["complete"] is False and j["equal"] is True and j["problems"]["b"] == []
    assert [(n["where"], n["a"]["kind"], n["a"]["where"], n["a"]["offset"], n["b"]) for n in j["not_compared"]] == [
        ('graph.initializers["w"]', "Malformed", "manifest.graph.initializers[0].data", _past_data_at(), None)]
