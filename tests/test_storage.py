"""FileStorage / BytesStorage: bounds, mapping threshold, the read lease and its fallbacks.

Everything here runs in the pytest process and never touches a page past a new end of file
(that is ``tests/test_file_changes.py``, in subprocesses): an open for writing without
truncation breaks the lease just the same.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from onemodel_viewer.format import FormatError, Kind
from onemodel_viewer.format import storage as st
from onemodel_viewer.format.storage import BytesStorage, FileStorage

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="file leases are Linux-only")
MIB = 1 << 20


def _file(tmp_path: Path, n: int, name: str = "f.bin") -> Path:
    p = tmp_path / name
    p.write_bytes(np.arange(n // 4, dtype=np.uint32).tobytes())
    return p


def _lease_type(s: FileStorage) -> int:
    import fcntl

    return fcntl.fcntl(s._lease.fd, fcntl.F_GETLEASE)  # type: ignore[union-attr]


def test_bytes_storage_bounds():
    s = BytesStorage(b"abcdef", label="mem")
    assert s.read(1, 3) == b"bcd"
    assert s.view(2, 2).tobytes() == b"cd" and not s.view(2, 2).flags.writeable
    assert s.view(6, 0).size == 0
    for off, n in ((-1, 1), (0, 7), (5, 2), (0, -1)):
        with pytest.raises(FormatError) as e:
            s.view(off, n)
        assert (e.value.kind, e.value.where) == (Kind.MALFORMED, "mem")
    assert s.protected and s.protection_note == ""


def test_small_file_is_read_and_immune(tmp_path):
    p = _file(tmp_path, 4096)
    s = FileStorage(p)
    assert not s.mapped and s.protected and not s.revoked
    os.truncate(p, 0)
    assert s.read(0, 8) == bytes([0, 0, 0, 0, 1, 0, 0, 0])
    s.check()  # bytes in memory: nothing to withdraw
    assert s.changed()


def test_missing_file_is_io(tmp_path):
    with pytest.raises(FormatError) as e:
        FileStorage(tmp_path / "nope")
    assert (e.value.kind, e.value.where) == (Kind.IO, "file")


@linux
def test_mapped_file_holds_a_read_lease_until_closed(tmp_path):
    import fcntl

    s = FileStorage(_file(tmp_path, 2 * MIB))
    assert s.mapped and s.protected and s.protection_note == ""
    assert _lease_type(s) == fcntl.F_RDLCK
    lease = s._lease
    assert id(lease) in st._LEASES
    assert int(s.view(4 * 1000, 4).view(np.uint32)[0]) == 1000
    s.close()
    assert lease.dead and id(lease) not in st._LEASES
    with pytest.raises(OSError):  # the descriptor (and its lease) are gone
        fcntl.fcntl(lease.fd, fcntl.F_GETLEASE)


@linux
def test_close_with_live_views_keeps_the_lease_until_the_views_go(tmp_path):
    import fcntl

    s = FileStorage(_file(tmp_path, 2 * MIB))
    v = s.view(0, 16)
    lease = s._lease
    s.close()  # BufferError inside: the mapping stays while v lives
    assert not lease.dead and _lease_type(s) == fcntl.F_RDLCK
    assert int(v.view(np.uint32)[1]) == 1
    del s, v
    gc.collect()
    assert lease.dead and id(lease) not in st._LEASES


@linux
def test_open_for_writing_withdraws_the_mapping(tmp_path):
    """A writer opens the file (in this process, no truncation): views turn to zeros, check() says Io."""
    p = _file(tmp_path, 2 * MIB)
    s = FileStorage(p)
    calls = []
    s.on_revoke(lambda: calls.append(threading.current_thread().name))
    v = s.view(0, s.size).view(np.uint32)
    assert int(v[-1]) == s.size // 4 - 1
    t0 = time.monotonic()
    fd = os.open(p, os.O_WRONLY)  # blocks until the lease thread has withdrawn the mapping
    try:
        assert time.monotonic() - t0 < 5
        assert s.revoked and s.changed()
        assert int(v.sum()) == 0 and s.buffer()[:4] == b"\0\0\0\0"
        assert calls == ["onemodel-lease"]
        for fn in (lambda: s.view(0, 4), lambda: s.read(0, 4), s.check):
            with pytest.raises(FormatError) as e:
                fn()
            assert (e.value.kind, e.value.where) == (Kind.IO, "file")
    finally:
        os.close(fd)
    del v
    s.close()
    assert s._lease.dead


@linux
def test_two_storages_of_one_file_are_both_withdrawn_and_others_kept(tmp_path):
    import fcntl

    p, q = _file(tmp_path, 2 * MIB), _file(tmp_path, 2 * MIB, "other.bin")
    a, b, c = FileStorage(p), FileStorage(p), FileStorage(q)
    os.close(os.open(p, os.O_WRONLY))
    assert a.revoked and b.revoked and not c.revoked
    assert _lease_type(c) == fcntl.F_RDLCK and int(c.view(4, 4).view(np.uint32)[0]) == 1
    for s in (a, b, c):
        s.close()


@linux
def test_replaced_file_keeps_the_old_bytes_and_reports_the_change(tmp_path):
    """A rename over the file breaks no lease (the mapping keeps the old inode): stale, not faulting."""
    p = _file(tmp_path, 2 * MIB)
    s = FileStorage(p)
    v = s.view(0, 8)
    (tmp_path / "new.bin").write_bytes(b"x" * 10)
    os.replace(tmp_path / "new.bin", p)
    assert not s.revoked and s.changed()
    assert int(v.view(np.uint32)[1]) == 1
    with pytest.raises(FormatError) as e:
        s.view(0, 8)
    assert e.value.kind == Kind.IO
    del v
    s.close()


@linux
def test_fallback_when_the_file_is_open_for_writing(tmp_path):
    p = _file(tmp_path, 2 * MIB)
    with open(p, "r+b"):
        s = FileStorage(p)
    assert s.mapped and not s.protected and s.protection_note == "the file is open for writing elsewhere"
    assert s._lease is None and not s.revoked
    assert int(s.view(8, 4).view(np.uint32)[0]) == 2
    s.close()


def test_protection_can_be_turned_off(tmp_path):
    s = FileStorage(_file(tmp_path, 2 * MIB), protect=False)
    assert s.mapped and not s.protected and s.protection_note == "protection turned off"
    s.close()


@linux
@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to switch to another user")
def test_fallback_for_a_file_of_another_user():
    """Without CAP_LEASE a lease needs the file's owner: another user's file is mapped unprotected."""
    d = tempfile.mkdtemp(prefix="omv-lease-")
    try:
        os.chmod(d, 0o755)
        p = Path(d) / "root-owned.bin"
        p.write_bytes(b"\0" * (2 * MIB))
        os.chmod(p, 0o644)
        # everything imported before dropping root: the interpreter's own files may be private to root
        code = ("import ctypes, errno, fcntl, os, platform, signal, struct, sys, weakref\n"
                "from onemodel_viewer.format.storage import FileStorage\n"
                "os.setgid(65534); os.setuid(65534)\n"
                "s = FileStorage(sys.argv[1]); print(s.mapped, s.protected, s.protection_note)")
        r = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, timeout=60,
                           cwd=str(Path(__file__).resolve().parent.parent))
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip() == "True False the file belongs to another user (no CAP_LEASE)"
    finally:
        for f in Path(d).iterdir():
            f.unlink()
        os.rmdir(d)


@linux
def test_storage_opened_from_a_worker_thread_is_protected(tmp_path):
    """The lease thread needs no main-thread signal handler: a worker thread can open files too."""
    p = _file(tmp_path, 2 * MIB)
    out: list[FileStorage] = []
    t = threading.Thread(target=lambda: out.append(FileStorage(p)))
    t.start()
    t.join()
    s = out[0]
    assert s.protected
    os.close(os.open(p, os.O_RDWR))
    assert s.revoked
    s.close()
