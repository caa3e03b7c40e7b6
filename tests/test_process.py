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
