"""Every change this program makes to process-wide state, each with the reason for it.

Nothing else in the package touches the garbage collector, and none of these run from a worker
thread: a worker that paused the collector would pause it for every thread (and the UI's).
Called from another thread, each function here does nothing (:func:`free_later` closes and
frees there and then: that thread is not the UI's).

* :func:`paused_gc` — reading a model allocates ~10^5 small records that all stay alive as
  long as the document. Collections triggered while building them only walk them again
  (measured: about a third of an open, ~15% of a ``--check`` of an LLM-sized file, 7.3 s
  instead of ~2 s for 10^6 nodes). On the way out the survivors are moved to the oldest
  generation without a collection (``freeze`` + ``unfreeze``), so the first allocation after
  re-enabling does not scan them all (~5 ms on a 10^4-node model).
* :func:`freeze_gc` — the viewer, once its first screen is up and its background job done
  (``tui/background.py``): everything alive then (the
  model, the widgets) lives until exit; freezing keeps it out of every later collection.
* :func:`frozen_garbage` — the viewer replaced its document (another file opened, a reload): the old
  document's widgets, rows and caches were frozen while alive, and frozen objects are never
  collected, so their cycles stayed in memory for good (the soak: ~2.7 MiB per file opened, ~25,000
  frozen objects a file, most of them garbage). The next :func:`freeze_gc` unfreezes and collects
  once before freezing again: a full collection (~60-110 ms for ~10^5 objects on a loaded machine;
  it grows with the model), once per file opened. Not after an edit's re-read (the tree keeps its
  rows; a collection per edit would block each edit as long): what an edit leaves frozen waits for
  the next file opened.
* :func:`favour_ui_thread` — while the viewer's background job runs: a 1 ms switch interval (the
  default 5 ms is how long the UI thread may wait for the interpreter each time it let go of it).
* :func:`free_later` — the viewer's edit mode replaces the shown document after each edit: closing
  the old one (unmapping its file: ~17 ms for the 4 GiB benchmark model) and dropping its last
  reference (freeing a 10,000-node document's records: ~5-8 ms) held the UI thread. One daemon
  thread, started on first use (starting one per document waited ~6 ms for it), does both. It never
  touches the collector: the records go by their reference counts, whether the GC is paused or not
  (it stays paused while an edit's re-read runs); a cycle among them waits for a collection, as before.
"""

from __future__ import annotations

import gc
import queue
import sys
import threading
from contextlib import contextmanager
from typing import Iterator


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextmanager
def paused_gc() -> Iterator[None]:
    """The block runs with the cyclic GC off; its survivors then skip the young generations."""
    if not _main_thread() or not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        try:
            promote_survivors()
        finally:  # an exception there (a signal handler's: a test's alarm) left the collector off
            gc.enable()


_frozen = False
"""Whether :func:`freeze_gc` has frozen objects (``gc.get_freeze_count()`` would tell too, but it counts
them one by one: 35 ms for the 10^6 objects a 10^4-node model leaves frozen, at every paused block's end)."""


def promote_survivors() -> None:
    """Move every tracked object to the oldest generation, without a collection (``freeze`` and
    ``unfreeze`` each move whole generations: O(1)).

    Skipped once :func:`freeze_gc` has frozen objects (``unfreeze`` would release them).
    """
    if _main_thread() and not _frozen:
        gc.freeze()
        gc.unfreeze()


def pause_gc() -> None:
    """Turn the cyclic GC off until :func:`freeze_gc` (the viewer, while it builds its first screen)."""
    if _main_thread():
        gc.disable()


_garbage_frozen = False
"""Whether objects frozen earlier may have become garbage since (:func:`frozen_garbage`)."""


def frozen_garbage() -> None:
    """Objects frozen earlier may be garbage now (a document replaced): the next :func:`freeze_gc` collects first."""
    global _garbage_frozen
    if _main_thread() and _frozen:
        _garbage_frozen = True


def freeze_gc() -> None:
    """Keep everything alive now out of later collections, and turn the GC back on (after collecting
    the frozen objects once, when :func:`frozen_garbage` said some may have died)."""
    global _frozen, _garbage_frozen
    if _main_thread():
        if _garbage_frozen:
            _garbage_frozen = False
            gc.unfreeze()
            gc.collect()
        _frozen = True
        gc.freeze()
        gc.enable()


def favour_ui_thread(on: bool) -> None:
    """A 1 ms switch interval (``on``), or back to the default 5 ms."""
    if _main_thread():
        sys.setswitchinterval(0.001 if on else 0.005)


_FREE: queue.SimpleQueue = queue.SimpleQueue()
"""Lists of objects for the freeing thread."""
_freeing: threading.Thread | None = None


def free_later(objects: list) -> None:
    """Close each of ``objects`` (its ``close()``; an error is ignored) and drop it, in the freeing
    thread; the list is emptied there (the caller keeps no reference: pass the only one)."""
    global _freeing
    if not objects:
        return
    if not _main_thread():
        _free(objects)
        return
    if _freeing is None:
        _freeing = threading.Thread(target=_free_loop, name="free-later", daemon=True)
        _freeing.start()
    _FREE.put(objects)


def _free_loop() -> None:
    while True:
        _free(_FREE.get())


def _free(objects: list) -> None:
    while objects:
        obj = objects.pop()
        try:
            obj.close()
        except Exception:  # noqa: BLE001 - e.g. a storage already gone
            pass
        del obj  # its last reference: freed here
