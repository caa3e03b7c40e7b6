"""The hostile corpus (testdata/hostile, built by testdata/make_hostile.py) against the reader and --check.

Each ``<Kind>-<case>.onemodel`` holds exactly one defect; ``expected.json`` gives the kind and
``where`` of the first problem. For each file: strict open raises exactly that; diagnose mode has
it as ``problems[0]`` and never raises; ``--check --json`` exits 1 with it first; the file is
byte-identical afterwards. ``valid-*`` files open cleanly everywhere.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import struct
import subprocess
import sys
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from onemodel_viewer import cli
from onemodel_viewer import format as omf
from onemodel_viewer.format import FormatError, Kind

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "testdata" / "hostile"
EXPECTED: dict[str, dict] = json.loads((HOSTILE / "expected.json").read_text())

# file -> reason. Cases where the reader disagrees with the spec/CLARIFICATIONS (see the hostile
# helper's report). strict=True: the test starts failing (XPASS) as soon as the reader is fixed.
KNOWN_READER_BUGS: dict[str, str] = {}

NUMPY_UNSHAPEABLE = {"valid-zero-count-huge-dims.onemodel"}
"""Valid files whose empty tensor has dims numpy cannot build ([2^31, 2^31, 2^31, 0]): values() must say
so as Unsupported at ``.dims`` rather than let numpy's ValueError escape (a regression of the fuzz test)."""


def _params(names):
    out = []
    for name in names:
        marks = []
        if name in KNOWN_READER_BUGS:
            marks.append(pytest.mark.xfail(strict=True, reason="known bug: " + KNOWN_READER_BUGS[name]))
        out.append(pytest.param(name, marks=marks, id=name))
    return out


HOSTILE_FILES = sorted(n for n, e in EXPECTED.items() if e["kind"])
VALID_FILES = sorted(n for n, e in EXPECTED.items() if not e["kind"])


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _check_json(path: Path) -> tuple[int, list[dict]]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = cli.main(["--check", "--json", str(path)])
    lines = [json.loads(line) for line in buf.getvalue().splitlines() if line.strip()]
    return code, lines


def test_corpus_is_complete_and_named_by_kind():
    files = {p.name for p in HOSTILE.glob("*.onemodel")}
    assert files == set(EXPECTED), "expected.json and the files on disk differ: rerun testdata/make_hostile.py"
    assert len(HOSTILE_FILES) >= 64
    for name, entry in EXPECTED.items():
        prefix = name.split("-", 1)[0]
        if entry["kind"] is None:
            assert prefix == "valid", name
        else:
            assert prefix == entry["kind"], name
            assert entry["kind"] in {k.value for k in Kind} - {"Io"}
            assert entry["where"] == "manifest" or entry["where"].startswith(("header", "manifest.")), name


def test_corpus_is_reproducible(tmp_path):
    """make_hostile.py regenerates the committed corpus byte for byte."""
    out = tmp_path / "h"
    r = subprocess.run([sys.executable, str(ROOT / "testdata" / "make_hostile.py"), "--out", str(out)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    for p in HOSTILE.iterdir():
        if p.is_file():  # hostile/ort/ has its own generator (make_hostile_ort.py)
            assert (out / p.name).read_bytes() == p.read_bytes(), p.name


@pytest.mark.parametrize("name", _params(HOSTILE_FILES))
def test_hostile_strict(name):
    path = HOSTILE / name
    want = EXPECTED[name]
    before = _digest(path)
    with pytest.raises(FormatError) as info:
        doc = omf.open(path)
        doc.close()
    got = (info.value.kind.value, info.value.where)
    assert got == (want["kind"], want["where"]), info.value
    assert _digest(path) == before
    # header problems point at their field's bytes; manifest problems inside the file
    if want["where"].startswith("header."):
        assert info.value.offset == omf.Header.field_span(want["where"][len("header."):])[0]
    elif want["where"] == "header":
        assert info.value.offset == 0
    elif info.value.offset is not None and not want["where"].endswith(".data"):
        assert 64 <= info.value.offset < path.stat().st_size, info.value.offset


@pytest.mark.parametrize("name", _params(HOSTILE_FILES))
def test_hostile_diagnose(name):
    path = HOSTILE / name
    want = EXPECTED[name]
    doc = omf.open(path, mode="diagnose")  # must never raise
    try:
        assert doc.problems, "diagnose found no problem"
        first = doc.problems[0]
        assert (first.kind.value, first.where) == (want["kind"], want["where"]), first
        # strict's error is exactly diagnose's first problem
        with pytest.raises(FormatError) as info:
            omf.open(path).close()
        assert info.value.problem == first
    finally:
        doc.close()


@pytest.mark.parametrize("name", _params(HOSTILE_FILES))
def test_hostile_check_cli(name):
    path = HOSTILE / name
    want = EXPECTED[name]
    before = _digest(path)
    code, lines = _check_json(path)
    assert code == 1
    assert len(lines) == 1
    (report,) = lines
    assert report["valid"] is False
    first = report["problems"][0]
    assert (first["kind"], first["where"]) == (want["kind"], want["where"]), first
    assert _digest(path) == before


@pytest.mark.parametrize("name", _params(VALID_FILES))
def test_valid_files_open_cleanly(name):
    path = HOSTILE / name
    before = _digest(path)
    doc = omf.open(path)
    try:
        assert doc.problems == []
        assert doc.model is not None
        for t in omf.schema.all_tensors(doc.model):
            if t.is_string:
                assert len(t.strings) == t.count
            elif name in NUMPY_UNSHAPEABLE and t.count == 0 and len(t.dims) > 1:
                with pytest.raises(omf.FormatError) as e:
                    t.values()
                assert (e.value.kind, e.value.where) == (omf.Kind.UNSUPPORTED, t.where + ".dims")
            else:
                assert t.values().size == t.count
    finally:
        doc.close()
    diag = omf.open(path, mode="diagnose")
    assert diag.problems == []
    diag.close()
    code, lines = _check_json(path)
    assert code == 0 and lines[0]["valid"] is True and lines[0]["problems"] == []
    assert _digest(path) == before


def test_findings_in_valid_files():
    """Duplicate keys and a wide data_offset are findings (CLARIFICATIONS), not problems."""
    codes = {}
    for name in ("valid-duplicate-keys.onemodel", "valid-wide-data-offset.onemodel"):
        _, (report,) = _check_json(HOSTILE / name)
        codes[name] = {f["code"] for f in report["findings"]}
    assert "duplicate-key" in codes["valid-duplicate-keys.onemodel"]
    assert "wide-data-offset" in codes["valid-wide-data-offset.onemodel"]


def test_subgraph_reads_outer_values():
    """Section 3 rule 2: a subgraph may read the values of the graphs around it (valid-base does so)."""
    doc = omf.open(HOSTILE / "valid-base.onemodel")
    n3 = doc.model.graph.nodes[3]
    assert n3.op == "If"
    then_g = n3.attributes[0].value
    assert then_g.nodes[0].inputs == ("u",)  # u is defined by the outer graph's node n1
    assert doc.model.graph.order is not None
    order = list(doc.model.graph.order)
    # If reads u (n1 output) through its subgraph: it must come after n1 in dependency order
    assert order.index(3) > order.index(1)
    doc.close()


def test_valid_values_match_what_was_written():
    doc = omf.open(HOSTILE / "valid-base.onemodel")
    g = doc.model.graph
    assert g.initializers[0].values().tolist() == [1.0, 2.0, 3.0, 4.0]
    assert g.initializers[2].values().tolist() == [1, 2, -1]  # int4 packed low nibble first
    assert g.initializers[3].strings == (b"a", b"bc")
    alpha = g.nodes[1].attributes[0]
    assert alpha.value == struct.unpack("<I", struct.pack("<f", 0.1))[0]
    assert g.nodes[4].attributes[4].value == (0, 0x80000000, 0x7FC00001)  # NaN payload kept as bits
    doc.close()


# ---------------------------------------------------------------------------------------------
# Io: cannot be a file in the corpus
# ---------------------------------------------------------------------------------------------


def _assert_io(path, tmp_path):
    with pytest.raises(FormatError) as info:
        omf.open(path).close()
    assert info.value.kind is Kind.IO
    doc = omf.open(path, mode="diagnose")
    assert doc.problems and doc.problems[0].kind is Kind.IO
    code, lines = _check_json(path)
    assert code == 1 and lines[0]["problems"][0]["kind"] == "Io"


def test_io_missing_file(tmp_path):
    _assert_io(tmp_path / "nope.onemodel", tmp_path)


def test_io_directory(tmp_path):
    d = tmp_path / "dir.onemodel"
    d.mkdir()
    _assert_io(d, tmp_path)


def test_io_permission_denied(tmp_path, monkeypatch):
    p = tmp_path / "secret.onemodel"
    p.write_bytes((HOSTILE / "valid-base.onemodel").read_bytes())
    if os.geteuid() == 0:  # root reads anything: simulate the refusal at the system call
        real_open = os.open

        def deny(path, *a, **kw):
            if os.fspath(path) == str(p):
                raise PermissionError(13, "Permission denied", str(p))
            return real_open(path, *a, **kw)

        monkeypatch.setattr(os, "open", deny)
        real_builtin_open = open

        def deny_builtin(path, *a, **kw):
            if isinstance(path, (str, os.PathLike)) and os.fspath(path) == str(p):
                raise PermissionError(13, "Permission denied", str(p))
            return real_builtin_open(path, *a, **kw)

        monkeypatch.setattr("builtins.open", deny_builtin)
    else:
        p.chmod(0)
    _assert_io(p, tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs")
def test_fifo_does_not_hang(tmp_path):
    """A FIFO named like a model must not block the checker forever (open() of a FIFO waits for a writer)."""
    fifo = tmp_path / "pipe.onemodel"
    os.mkfifo(fifo)
    try:
        r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", "--json", str(fifo)],
                           capture_output=True, text=True, timeout=3)
    except subprocess.TimeoutExpired:
        pytest.fail("--check blocked on a FIFO")
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["problems"][0]["kind"] == "Io"
    with pytest.raises(FormatError) as info:  # in-process too (the old bug blocked in os.open)
        omf.open(fifo)
    assert info.value.kind is Kind.IO


def test_device_file_is_refused_cleanly():
    """/dev/zero reports size 0: a clean problem, never an endless read."""
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", "--json", "/dev/zero"],
                       capture_output=True, text=True, timeout=20)
    assert r.returncode == 1, r.stderr
    assert json.loads(r.stdout.splitlines()[0])["problems"][0]["kind"] == "Io"


# ---------------------------------------------------------------------------------------------
# Limits that cannot be committed as files
# ---------------------------------------------------------------------------------------------


def _header(ml: int, data_offset: int, data_length: int, file_length: int) -> bytes:
    return struct.pack("<8sIIQQQQQQ", b"ONEMODEL", 1, 0, 64, ml, data_offset, data_length, file_length, 0)


def test_manifest_over_512_mib_refused_before_reading(tmp_path):
    """A header announcing a 600 MiB manifest (sparse file) is refused without reading/allocating it."""
    ml = 600 << 20
    do = (64 + ml + 63) // 64 * 64
    p = tmp_path / "big-manifest.onemodel"
    with open(p, "wb") as f:
        f.write(_header(ml, do, 0, do))
        f.truncate(do)
    r = subprocess.run(
        [sys.executable, "-c",
         "import sys;from onemodel_viewer import format as f\n"
         "try:\n f.open(sys.argv[1])\nexcept f.FormatError as e:\n print(e.kind.value, e.where)\n"
         # VmHWM, not ru_maxrss: Linux carries the parent's peak across fork and exec into
         # ru_maxrss, so a child of a big pytest worker reported the worker's peak
         "print(next(l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')))", str(p)],
        capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    first, rss = r.stdout.splitlines()
    assert first == "Unsupported header.manifest_length"
    assert int(rss) < 200 * 1024, f"peak RSS {int(rss) // 1024} MiB: the manifest was read"


def test_subgraph_valid_outer_scope_built_by_hand(tmp_path):
    """A GRAPH attribute whose node reads a value of the outer graph (and one two levels up) is valid."""
    sys.path.insert(0, str(ROOT / "testdata"))
    try:
        import make_hostile as mh
    finally:
        sys.path.pop(0)
    m = mh.base()
    inner = {"name": "inner", "outputs": [{"name": "io"}], "nodes": [mh.node("in", "Add", ["x", "zt"], ["io"])]}
    then_g = m["graph"]["nodes"][3]["attributes"][0]["value"]
    then_g["nodes"].append(mh.node("nested", "If", ["cond"], ["no"], [{"name": "then_branch", "type": 5,
                                                                      "value": inner}]))
    p = tmp_path / "outer.onemodel"
    p.write_bytes(mh.build(m))
    doc = omf.open(p)
    assert doc.problems == []
    doc.close()


@pytest.mark.parametrize("name,needle", [
    ("InvalidModel-empty-graph-output.onemodel", b'"outputs":[{"name":"y","type":{"kind":"tensor","elem":1,"shape":[1,4]}},{"name":'),
    ("InvalidModel-empty-subgraph-output.onemodel", b'{"name":"then","outputs":[{"name":'),
    ("InvalidModel-function-empty-output.onemodel", b'"functions":[{"name":"Custom","domain":"com.example","overload":"","inputs":["a"],"outputs":['),
])
def test_empty_output_name_points_at_the_empty_string(name, needle):
    """A graph/subgraph/function output named "" was accepted; it is now InvalidModel (rule 2, CLARIFICATIONS)
    at the same ``where`` as an undefined output, and the offset is that of the ``""`` JSON string itself."""
    path = HOSTILE / name
    blob = path.read_bytes()
    assert blob.count(needle) == 1
    at = blob.index(needle) + len(needle)
    assert blob[at:at + 2] == b'""'
    with pytest.raises(FormatError) as info:
        omf.open(path).close()
    e = info.value
    assert (e.kind.value, e.where, e.offset) == ("InvalidModel", EXPECTED[name]["where"], at)
