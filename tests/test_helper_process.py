"""The long-lived helper process (onemodel_viewer.helper_process): reuse, errors, cancel, no orphans."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from onemodel_viewer.helper_process import HelperError, HelperProcess

ROOT = Path(__file__).resolve().parent.parent

FUNCTIONS = '''
import os, time

def pid(b):
    return str(os.getpid()).encode()

def echo(b):
    print("a stray print")
    return b[::-1]

def boom(b):
    raise ValueError("boom " + b.decode())

def slow(b):
    time.sleep(float(b))
    return b"slept"
'''


@pytest.fixture
def helper(tmp_path, monkeypatch):
    """A helper whose child finds the test functions (module ``helperfns`` in its working directory)."""
    (tmp_path / "helperfns.py").write_text(FUNCTIONS)
    monkeypatch.chdir(tmp_path)
    h = HelperProcess()
    yield h
    h.close()


def gone(pid: int, wait: float = 10.0) -> bool:
    """True once ``pid`` has exited (no process, or a zombie nobody reaped yet)."""
    end = time.monotonic() + wait
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        if time.monotonic() >= end:
            return False
        time.sleep(0.05)


def test_one_child_serves_every_request(helper):
    first = int(helper.call("helperfns:pid", b""))
    assert first == helper.pid and first != os.getpid()
    assert helper.call("helperfns:echo", b"abc" * 100_000) == b"cba" * 100_000  # the print went elsewhere
    assert int(helper.call("helperfns:pid", b"")) == first


def test_an_error_is_raised_with_its_message_and_the_child_stays(helper):
    first = int(helper.call("helperfns:pid", b""))
    with pytest.raises(HelperError, match=r"^ValueError: boom x$"):
        helper.call("helperfns:boom", b"x")
    with pytest.raises(HelperError, match=r"^ModuleNotFoundError: "):
        helper.call("no_such_module_here:f", b"")
    assert int(helper.call("helperfns:pid", b"")) == first


def test_cancel_kills_the_child_and_the_next_call_starts_another(helper):
    first = int(helper.call("helperfns:pid", b""))
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    with pytest.raises(HelperError, match="^cancelled$"):
        helper.call("helperfns:slow", b"60", cancel)
    assert gone(first, wait=0) and helper.pid is None
    second = int(helper.call("helperfns:pid", b""))
    assert second != first


def test_close_ends_the_child_and_refuses_more(helper):
    pid = int(helper.call("helperfns:pid", b""))
    helper.close()
    assert gone(pid)
    with pytest.raises(HelperError, match="closed"):
        helper.call("helperfns:pid", b"")


@pytest.mark.parametrize("how", ["exit", "sigkill"])
def test_the_child_ends_with_its_parent(tmp_path, how):
    """No orphan: a parent that exits without closing, or is killed, leaves no helper running."""
    (tmp_path / "helperfns.py").write_text(FUNCTIONS)
    end = "os._exit(0)" if how == "exit" else "os.kill(os.getpid(), signal.SIGKILL)"
    script = textwrap.dedent(f"""
        import os, signal, sys
        sys.path.insert(0, {str(ROOT)!r})
        from onemodel_viewer.helper_process import HelperProcess
        h = HelperProcess()
        print(int(h.call("helperfns:pid", b"")), flush=True)
        {end}
    """)
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    child = int(r.stdout.split()[0])
    assert gone(child)


def test_preloaded_modules_are_imported_before_the_first_request(tmp_path, monkeypatch):
    (tmp_path / "helperfns.py").write_text(FUNCTIONS + "\nimport sys\ndef loaded(b):\n    return str(b.decode() in sys.modules).encode()\n")
    monkeypatch.chdir(tmp_path)
    h = HelperProcess(preload=("colorsys",))
    try:
        h.start()
        assert h.call("helperfns:loaded", b"colorsys") == b"True"
        assert h.call("helperfns:loaded", b"this_module_is_not_loaded") == b"False"
    finally:
        h.close()


def test_a_niced_child_runs_at_a_lower_cpu_priority(tmp_path, monkeypatch):
    """``nice``: the viewer's look-up and inference children step back for its UI thread (the look-up
    child's first request decodes a 139 MB manifest on 10^6 nodes while the user moves through the tree)."""
    (tmp_path / "helperfns.py").write_text(FUNCTIONS + "\ndef niceness(b):\n    return str(os.nice(0)).encode()\n")
    monkeypatch.chdir(tmp_path)
    for nice in (0, 7):
        h = HelperProcess(nice=nice)
        try:
            assert int(h.call("helperfns:niceness", b"")) == min(19, os.nice(0) + nice)
        finally:
            h.close()
