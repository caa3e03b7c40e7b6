"""The one module that changes process-wide state: what it changes, and that a worker thread cannot."""

import gc
import threading

from onemodel_viewer import process


def test_paused_gc_turns_the_collector_off_and_back_on():
    assert gc.isenabled()
    with process.paused_gc():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_paused_gc_restores_after_an_exception():
    try:
        with process.paused_gc():
            raise ValueError
    except ValueError:
        pass
    assert gc.isenabled()


def test_paused_gc_turns_the_collector_back_on_when_promoting_the_survivors_fails(monkeypatch):
    """Regression: a signal handler's exception (the fuzz tests' alarm, under load) raised while the
    survivors were promoted skipped ``gc.enable()``: every later test of that worker ran with the GC off."""
    def interrupted() -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(process, "promote_survivors", interrupted)
    try:
        with process.paused_gc():
            pass
    except KeyboardInterrupt:
        pass
    assert gc.isenabled()


def test_paused_gc_leaves_a_caller_disabled_collector_alone():
    gc.disable()
    try:
        with process.paused_gc():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_worker_thread_changes_nothing():
    """A reader running in the viewer's worker thread paused the GC for the UI thread too."""
    seen = []

    def work():
        with process.paused_gc():
            seen.append(gc.isenabled())
        process.pause_gc()
        seen.append(gc.isenabled())
        process.freeze_gc()
        seen.append(gc.get_freeze_count())

    before = gc.get_freeze_count()
    t = threading.Thread(target=work)
    t.start()
    t.join()
    assert seen == [True, True, before]
    assert gc.isenabled()


class _Closable:
    def __init__(self, log: list, done: threading.Event | None = None, fail: bool = False) -> None:
        self.log, self.done, self.fail = log, done, fail

    def close(self) -> None:
        self.log.append(threading.current_thread() is threading.main_thread())
        if self.fail:
            raise OSError("already gone")

    def __del__(self) -> None:
        if self.done is not None:
            self.done.set()


def test_free_later_closes_and_frees_off_the_calling_thread():
    """The edit mode's old documents were closed and freed on the UI thread (~5-8 ms each on 10,000 nodes)."""
    import weakref

    log: list = []
    freed = threading.Event()
    objects = [_Closable(log, freed), _Closable(log, fail=True)]  # the last first: a failed close stops nothing
    last = weakref.ref(objects[0])
    process.free_later(objects)
    assert freed.wait(30)
    assert log == [False, False] and last() is None
    more = threading.Event()
    process.free_later([_Closable(log, more)])  # the same thread serves the next list
    assert more.wait(30) and log == [False, False, False]
    assert [t.name for t in threading.enumerate()].count("free-later") == 1
    assert gc.isenabled()  # the thread never touches the collector


def test_free_later_from_a_worker_frees_there_and_then():
    log: list = []
    objects = [_Closable(log)]
    t = threading.Thread(target=process.free_later, args=(objects,))
    t.start()
    t.join()
    assert log == [False] and objects == []


def test_a_paused_block_after_the_viewer_froze_does_not_count_the_frozen_objects():
    """Regression: each paused block's end asked ``gc.get_freeze_count()``, which walks every frozen
    object (35 ms for 10^6). Once the viewer had frozen its model, every lazily built node list paid it on
    the UI thread, and a test worker that had run Pilot tests took 101 s instead of 3 for the fuzz test.
    In a fresh interpreter (freezing here would change every later test of this worker)."""
    import subprocess
    import sys

    script = """
import gc
from onemodel_viewer import process
kept = [[i] for i in range(10_000)]
process.freeze_gc()
frozen = gc.get_freeze_count()
calls = []
real = gc.get_freeze_count
gc.get_freeze_count = lambda: calls.append(1) or real()
with process.paused_gc():
    more = [[i] for i in range(1_000)]
gc.get_freeze_count = real
assert calls == [], calls
assert gc.get_freeze_count() == frozen, (gc.get_freeze_count(), frozen)  # the frozen stay frozen
assert gc.isenabled()
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_garbage_frozen_with_a_replaced_document_is_collected_at_the_next_freeze():
    """Regression (the viewer soak: RSS 244 -> 881 MiB over 29 min, ~2.7 MiB per file opened): the viewer
    freezes everything alive once a document's background job ends; frozen objects are never collected,
    so each replaced document's widgets, rows and caches (cycles) stayed in memory for good.
    In a fresh interpreter (freezing here would change every later test of this worker)."""
    import subprocess
    import sys

    script = """
import gc, weakref
from onemodel_viewer import process
class Node:
    pass
def shown():
    a, b = Node(), Node()
    a.peer, b.peer = b, a  # a cycle: only the collector frees it
    return a
first = shown()
process.freeze_gc()        # the first document's job ended
gone = weakref.ref(first)
process.frozen_garbage()   # another document opened: the first one dropped
del first
process.freeze_gc()        # the second document's job ended
assert gone() is None, "the replaced document's cycle is still alive"
assert gc.isenabled()
again = shown()
process.freeze_gc()        # no document replaced since: nothing to collect, the live stay frozen
assert gc.get_freeze_count() > 0
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
