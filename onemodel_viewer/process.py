"""Every change this program makes to process-wide state, each with the reason for it.

Nothing else in the package touches the garbage collector, and none of these run from a worker
thread: a worker that paused the collector would pause it for every thread (and the UI's).
Called from another thread, each function here does nothing.

* :func:`paused_gc` — reading a model allocates ~10^5 small records that all stay alive as
  long as the document. Collections triggered while building them only walk them again
  (measured: about a third of an open, ~15% of a ``--check`` of an LLM-sized file, 7.3 s
  instead of ~2 s for 10^6 nodes). On the way out the survivors are moved to the oldest
  generation without a collection (``freeze`` + ``unfreeze``), so the first allocation after
  re-enabling does not scan them all (~5 ms on a 10^4-node model).
* :func:`freeze_gc` — the viewer, once its first screen is up and its background job done
  (``tui/background.py``): everything alive then (the
  model, the widgets) lives until exit; freezing keeps it out of every later collection.
* :func:`favour_ui_thread` — while the viewer's background job runs: a 1 ms switch interval (the
  default 5 ms is how long the UI thread may wait for the interpreter each time it let go of it).
"""

from __future__ import annotations

import gc
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
        promote_survivors()
        gc.enable()


def promote_survivors() -> None:
    """Move every tracked object to the oldest generation, without a collection.

    Skipped when the process has frozen objects of its own (``unfreeze`` would release them).
    """
    if _main_thread() and gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


def pause_gc() -> None:
    """Turn the cyclic GC off until :func:`freeze_gc` (the viewer, while it builds its first screen)."""
    if _main_thread():
        gc.disable()


def freeze_gc() -> None:
    """Keep everything alive now out of later collections, and turn the GC back on."""
    if _main_thread():
        gc.freeze()
        gc.enable()


def favour_ui_thread(on: bool) -> None:
    """A 1 ms switch interval (``on``), or back to the default 5 ms."""
    if _main_thread():
        sys.setswitchinterval(0.001 if on else 0.005)
