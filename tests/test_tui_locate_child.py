"""Manifest look-ups in a child process (tui/hex/locate_child.py): the viewer's big manifests."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

import onemodel_viewer.format as omf
from onemodel_viewer.format.schema import walk_graphs
from onemodel_viewer.tui.hex import locate
from onemodel_viewer.tui.hex.locate_child import LocateChild

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
    pid = child.pid
    os.kill(pid, signal.SIGKILL)
    assert child.span("manifest.graph") is None
    assert child.span("manifest.graph") is None  # no new child either
    assert child.pid is None
    child.close()


def test_a_child_found_dead_is_not_started_again(tmp_path):
    """Regression: a child killed and already reaped when the next look-up came was started again
    (the helper restarted a child that had ended), so that look-up answered; test_a_dead_child_answers_nothing
    failed that way under load. A manifest whose look-up killed its child must not be re-run."""
    path = str(VALID / "showcase.onemodel")
    with omf.open(path, mode="diagnose") as doc:
        m0, mlen = doc.manifest_span
    child = LocateChild(path, m0, mlen, True)
    assert child.span("manifest.graph") is not None
    os.kill(child.pid, signal.SIGKILL)
    for _ in range(1000):  # until the child is reaped (pid None); the bound only ends a failure
        if child.pid is None:
            break
        time.sleep(0.01)
    assert child.pid is None
    assert child.span("manifest.graph") is None
    assert child.pid is None  # no new child
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
        assert child.pid is not None
    finally:
        child.close()
    assert child.pid is None


def test_close_gives_up_a_look_up_under_way():
    """close() from another thread while a look-up waits on the child: the look-up returns None and the child
    is gone (the viewer closes its look-ups when it leaves or opens another file)."""
    path = str(VALID / "showcase.onemodel")
    with omf.open(path, mode="diagnose") as doc:
        m0, mlen = doc.manifest_span
    child = LocateChild(path, m0, mlen, True)
    assert child.span("manifest.graph") is not None  # the child is up and has its Locator
    pid = child.pid
    os.kill(pid, signal.SIGSTOP)  # the next look-up waits on a child that cannot answer
    got: list = []
    t = threading.Thread(target=lambda: got.append(child.span("manifest.graph.nodes[0]")))
    t.start()
    for _ in range(10_000):  # until the look-up waits on the child's pipe
        frame = sys._current_frames().get(t.ident)
        names = set()
        while frame is not None:
            names.add(frame.f_code.co_name)
            frame = frame.f_back
        if "_read" in names:
            break
        time.sleep(0.001)
    else:
        raise AssertionError("the look-up never waited on the child")
    closer = threading.Thread(target=child.close)
    closer.start()
    closer.join(30)  # a bound so that a close() waiting for the look-up fails the test instead of hanging the run
    blocked = closer.is_alive()
    if blocked:
        os.kill(pid, signal.SIGKILL)
    closer.join()
    t.join()
    assert not blocked, "close() waited for the look-up"
    assert got == [None] and child.pid is None
    assert _gone(pid)


def _gone(pid: int) -> bool:
    for _ in range(200):  # a killed child is reaped by close(); /proc may lag a moment
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def test_a_look_up_waiting_for_the_previous_one_gives_up_when_superseded():
    """Regression: a look-up waited for the one before it (the child's first one decodes the whole
    manifest: seconds on 10^6 nodes) even after the selection moved on; the waiting threads held the
    viewer's few worker threads, and the statistics and other workers queued behind them."""
    with omf.open(str(VALID / "showcase.onemodel"), mode="diagnose") as doc:
        spans_of = locate.ManifestSpans()
        wanted = [True]
        got: list = []
        with spans_of._lock:  # a previous look-up under way
            t = threading.Thread(target=lambda: got.append(
                spans_of.span(doc, "manifest.graph", lambda: wanted[0], lambda: False)))
            t.start()
            t.join(0.3)
            assert t.is_alive()  # still wanted: it waits its turn
            wanted[0] = False  # the selection moved on
            t.join(30)
            assert not t.is_alive() and got == [None]
        wanted[0] = True
        assert spans_of.span(doc, "manifest.graph", lambda: True, lambda: False) is not None  # the lock was let go
        spans_of.close()
