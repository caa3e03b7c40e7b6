"""The file changes on disk while it is open (and memory-mapped).

Touching a mapped page past a new, shorter end of file kills the process with SIGBUS. Two
defences (see ``format/storage.py``): ``FileStorage.check()`` compares size/mtime/inode with what
was opened before a view is handed out, and a Linux read lease lets the viewer withdraw the whole
mapping (zero pages) before any writer or truncater proceeds, so a view taken *before* the change
reads zeros instead of faulting. The touching code runs in a subprocess so a SIGBUS fails the test
instead of killing pytest.
"""

from __future__ import annotations

import signal
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "testdata"))
import make_hostile as mh  # noqa: E402

sys.path.pop(0)

BIG = 300_000  # float32 elements: 1.2 MB, so the file is mapped (>= 1 MiB)


def _big_model(path: Path) -> None:
    m = mh.base()
    m["graph"]["initializers"].append(mh.tensor("big", 1, [BIG], 384, 4 * BIG))
    data = mh.DATA + b"\0" * (384 - len(mh.DATA)) + struct.pack(f"<{BIG}f", *([1.5] * BIG))
    path.write_bytes(mh.build(m, data))


PRELUDE = """
import os, sys, time
from onemodel_viewer import format as omf
from onemodel_viewer.format import FormatError
path = sys.argv[1]
doc = omf.open(path)
assert doc.storage.mapped, "expected a memory-mapped file"
big = doc.model.graph.initializers[-1]
w = doc.model.graph.initializers[0]
assert big.values()[0] == 1.5
def attempt(label, fn):
    try:
        r = fn()
        print(label, "ok", float(r.sum()) if hasattr(r, "sum") else r, flush=True)
    except FormatError as e:
        print(label, e.kind.value, e.where, flush=True)
"""


def _run(path: Path, body: str) -> subprocess.CompletedProcess:
    code = PRELUDE + textwrap.dedent(body)
    return subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=60)


def _assert_no_signal(r: subprocess.CompletedProcess) -> None:
    if r.returncode < 0:
        pytest.fail(f"killed by {signal.Signals(-r.returncode).name}; stdout={r.stdout!r} stderr={r.stderr[-1500:]!r}")
    assert r.returncode == 0, r.stderr[-3000:]


@pytest.mark.parametrize("how", ["truncate", "truncate-to-zero", "replace", "rewrite-same-size", "extend"])
def test_change_then_touch_raises_io(tmp_path, how):
    p = tmp_path / "big.onemodel"
    _big_model(p)
    size = p.stat().st_size
    body = {
        "truncate": "os.truncate(path, 4096)",
        "truncate-to-zero": "os.truncate(path, 0)",
        # a new file renamed over the old one: the mapping still shows the old inode (no SIGBUS risk,
        # but the user sees stale data): still reported as changed
        "replace": "open(path + '.new', 'wb').write(b'x' * 100); os.replace(path + '.new', path)",
        # same size, different bytes, written in place: only the mtime tells
        "rewrite-same-size": "time.sleep(0.01); fd = os.open(path, os.O_WRONLY); os.pwrite(fd, b'\\xff' * 4096, "
                             "os.path.getsize(path) - 4096); os.close(fd)",
        "extend": "open(path, 'ab').write(b'\\0' * 64)",
    }[how]
    r = _run(p, body + """
attempt("raw", lambda: big.raw())
attempt("values", lambda: big.values())
attempt("small", lambda: w.values())
print("alive")
""")
    _assert_no_signal(r)
    lines = r.stdout.splitlines()
    assert lines[-1] == "alive"
    for label in ("raw", "values", "small"):
        assert f"{label} Io file" in lines, (how, size, r.stdout)


def test_unchanged_file_still_reads(tmp_path):
    p = tmp_path / "big.onemodel"
    _big_model(p)
    r = _run(p, """
attempt("values", lambda: big.values())
os.utime(path)  # only the timestamp changes: reported as changed (cheap and conservative)
attempt("after-touch", lambda: big.values())
""")
    _assert_no_signal(r)
    assert f"values ok {1.5 * BIG}" in r.stdout
    assert "after-touch Io file" in r.stdout


def test_small_files_are_read_not_mapped(tmp_path):
    """Below 1 MiB the bytes are read into memory: a later truncation cannot hurt them."""
    p = tmp_path / "small.onemodel"
    p.write_bytes((ROOT / "testdata" / "hostile" / "valid-base.onemodel").read_bytes())
    code = """
import os, sys
from onemodel_viewer import format as omf
doc = omf.open(sys.argv[1])
assert not doc.storage.mapped
os.truncate(sys.argv[1], 10)
print(doc.model.graph.initializers[0].values().tolist())
"""
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=60)
    _assert_no_signal(r)
    assert r.stdout.strip() == "[1.0, 2.0, 3.0, 4.0]"


def test_check_cli_survives_truncation_between_runs(tmp_path):
    """--check of a mapped file truncated before the run: a clean Malformed, never a crash."""
    p = tmp_path / "big.onemodel"
    _big_model(p)
    with open(p, "r+b") as f:
        f.truncate(p.stat().st_size - 1000)
    r = subprocess.run([sys.executable, "-m", "onemodel_viewer", "--check", "--json", str(p)],
                       capture_output=True, text=True, timeout=60)
    _assert_no_signal(r) if r.returncode < 0 else None
    assert r.returncode == 1
    assert '"header.file_length"' in r.stdout


needs_lease = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="file leases are Linux-only")

# Each writer runs while a zero-copy view taken before it is alive. Run by the viewer process
# (``same-*``) or by another process, started with Popen and waited for.
WRITERS = {
    "same-truncate": "os.truncate(path, 4096)",
    "same-truncate-thread": "th = threading.Thread(target=os.truncate, args=(path, 4096)); th.start(); th.join()",
    "same-open-wb": "open(path, 'wb').close()",
    "same-r+b-write": "f = open(path, 'r+b'); f.seek(1 << 20); f.write(b'x' * 4096); f.truncate(8192); f.close()",
    "other-truncate": "other([sys.executable, '-c', 'import os, sys; os.truncate(sys.argv[1], 4096)', path])",
    "other-open-wb": "other([sys.executable, '-c', 'import sys; open(sys.argv[1], \"wb\").write(b\"x\")', path])",
    "other-r+b-write": "other([sys.executable, '-c', 'import sys; f = open(sys.argv[1], \"r+b\"); "
                       "f.seek(100); f.write(b\"y\" * 64); f.close()', path])",
    # coreutils truncate opens with O_NONBLOCK: the first attempt fails with EAGAIN while the
    # viewer lets go of the file (that is what a lease means), a retry succeeds
    "shell-truncate": "other(['sh', '-c', 'for i in 1 2 3 4 5 6 7 8 9 10; do truncate -s 4096 \"$0\" 2>/dev/null "
                      "&& exit 0; sleep 0.1; done; exit 1', path])",
    "shell-cp-over": "open(path + '.small', 'wb').write(b'z' * 10); other(['cp', path + '.small', path])",
}


@needs_lease
@pytest.mark.parametrize("writer", list(WRITERS))
def test_view_taken_before_change_reads_zeros(tmp_path, writer):
    """A view handed out before the file is truncated/rewritten and read after: zeros, then Io."""
    p = tmp_path / "big.onemodel"
    _big_model(p)
    r = _run(p, """
import subprocess, threading
def other(argv):
    subprocess.run(argv, check=True, timeout=20)
print("protected", doc.storage.protected, doc.storage.protection_note, flush=True)
v = big.values()          # a zero-copy view of the mapping, checked now
raw = big.raw()
t0 = time.monotonic()
""" + WRITERS[writer] + """
print("writer took", round(time.monotonic() - t0, 2), flush=True)
print("size now", os.path.getsize(path), flush=True)
print("sum", float(v.sum()), int(raw[-4096:].sum()), flush=True)   # pages past the new end
print("revoked", doc.storage.revoked)
attempt("values", lambda: big.values())
attempt("small", lambda: w.values())
print("alive")
""")
    _assert_no_signal(r)
    out = r.stdout.splitlines()
    assert out[0] == "protected True ", r.stdout
    took = float(next(x for x in out if x.startswith("writer took")).split()[-1])
    assert took < 5, r.stdout  # never the kernel's 45 s lease-break-time
    assert "sum 0.0 0" in out and "revoked True" in out, r.stdout
    assert "values Io file" in out and "small Io file" in out and out[-1] == "alive", r.stdout
    if writer != "other-r+b-write" and writer != "same-r+b-write":
        assert int(next(x for x in out if x.startswith("size now")).split()[-1]) <= 4096


@needs_lease
def test_view_taken_before_truncation(tmp_path):
    """The issue's case: the view outlives the truncation; it reads zeros and the process lives."""
    p = tmp_path / "big.onemodel"
    _big_model(p)
    r = _run(p, """
v = big.values()          # a zero-copy view of the mapping, checked now
os.truncate(path, 4096)   # the file shrinks under the live view
print(float(v.sum()))     # touches pages past the new end
attempt("values", lambda: big.values())
""")
    _assert_no_signal(r)
    assert r.stdout.splitlines() == ["0.0", "values Io file"]


@needs_lease
def test_truncation_during_threaded_reads(tmp_path):
    """Worker threads summing views in a loop while another process truncates: no fault, Io after."""
    p = tmp_path / "big.onemodel"
    _big_model(p)
    r = _run(p, """
import subprocess, threading
stop = threading.Event()
errors, sums = [], []
def reader():
    v = big.raw()
    while not stop.is_set():
        sums.append(int(v.sum()))
        try:
            big.raw()
        except FormatError as e:
            errors.append(e.kind.value)
            sums.append(int(v.sum()))  # the old view, after the check said no: zeros
            return
ts = [threading.Thread(target=reader) for _ in range(2)]
for t in ts: t.start()
time.sleep(0.05)
subprocess.run([sys.executable, "-c", "import os, sys; os.truncate(sys.argv[1], 4096)", path], check=True, timeout=20)
for t in ts: t.join(10)
stop.set()
print("errors", sorted(errors), "last", sums[-1], "alive")
""")
    _assert_no_signal(r)
    assert r.stdout.strip() == "errors ['Io', 'Io'] last 0 alive", r.stdout


@needs_lease
def test_stats_over_a_file_truncated_mid_pass(tmp_path):
    """compute_stats checks the storage between chunks: a truncation mid-pass is Io, not SIGBUS."""
    p = tmp_path / "big.onemodel"
    _big_model(p)
    r = _run(p, """
from onemodel_viewer.analysis.stats.compute import compute_stats
done = []
def progress(d, t):
    if not done:
        done.append(d)
        os.truncate(path, 4096)
for threads in (1, 2):
    done.clear()
    attempt(f"stats{threads}", lambda: compute_stats(big, progress=progress, chunk_bytes=64 << 10, threads=threads))
""")
    _assert_no_signal(r)
    assert r.stdout.splitlines() == ["stats1 Io file", "stats2 Io file"], r.stdout


def test_unprotected_when_the_file_is_open_for_writing(tmp_path):
    """No lease while another descriptor has the file open for writing: mapped, flagged unprotected."""
    p = tmp_path / "big.onemodel"
    _big_model(p)
    code = """
import sys
from onemodel_viewer import format as omf
f = open(sys.argv[1], "r+b")   # a writer already there: the kernel refuses the read lease
doc = omf.open(sys.argv[1])
print(doc.storage.mapped, doc.storage.protected, doc.storage.protection_note)
"""
    r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=60)
    _assert_no_signal(r)
    if sys.platform.startswith("linux"):
        assert r.stdout.strip() == "True False the file is open for writing elsewhere"
    else:  # pragma: no cover
        assert r.stdout.startswith("True False ")


@needs_lease
def test_forked_child_gets_its_own_lease_thread(tmp_path):
    """After fork() the child has no lease thread: its new files get one of their own, and the
    parent's leases keep working (the lease-break signal must not go to the other process)."""
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    for p in (a, b):
        p.write_bytes(b"\1" * (2 << 20))
    code = """
import os, sys
from onemodel_viewer.format.storage import FileStorage
a, b = sys.argv[1], sys.argv[2]
s = FileStorage(a); va = s.view(0, s.size)
pid = os.fork()
if pid == 0:
    t = FileStorage(b); vb = t.view(0, t.size)
    os.truncate(b, 10)
    print("child", t.protected, t.revoked, int(vb.sum()), flush=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
os.truncate(a, 10)
print("parent", status, s.revoked, int(va.sum()), flush=True)
"""
    r = subprocess.run([sys.executable, "-c", code, str(a), str(b)], capture_output=True, text=True, timeout=60)
    _assert_no_signal(r)
    assert r.stdout.splitlines() == ["child True True 0", "parent 0 True 0"], (r.stdout, r.stderr)
