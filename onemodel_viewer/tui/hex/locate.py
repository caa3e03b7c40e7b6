"""Where a record's text is in a OneModel manifest: the hex pane highlights it when the record is selected.

No Textual here: :class:`ManifestSpans` is asked from the viewer's worker threads (one look-up at a
time); it keeps one :class:`~onemodel_viewer.format.onemodel.manifest_locate.Locator` for the document shown,
made on the first look-up, and gives up as soon as the selection moves on. The next document (an
edit's re-read) gets the previous one's Locator rebased on its manifest
(:meth:`~onemodel_viewer.format.onemodel.manifest_locate.Locator.rebased`): the walks before the edit and
after it are kept, so the edited record is found again without walking the manifest (the middle
node of 10,000 after an edit: ~5 ms of CPU, most of it copying the manifest, instead of a ~28 ms
walk from the start, 35-95 ms of wall time beside the UI and the re-read's background job). A
manifest over :data:`CHILD_BYTES` is looked up in a child process instead (:mod:`.locate_child`).
"""

from __future__ import annotations

import threading
from typing import Callable

from ...format.document import Document

__all__ = ["CHILD_BYTES", "LOCK_POLL", "ManifestSpans"]

LOCK_POLL = 0.05
"""Seconds between two looks at whether a look-up waiting for the previous one is still wanted."""

CHILD_BYTES = 4 << 20
"""Manifests larger than this (the 10^5-node bench model: 14 MB) are looked up in a child process: here, the copy and the decode of a
139 MB manifest held the interpreter from the UI thread 0.3-4 s, its walks were a third busy thread."""


class ManifestSpans:
    """Manifest byte spans of ``where`` paths, for the document the viewer shows."""

    def __init__(self) -> None:
        self._locator = None
        self._child = None
        self._storage = None
        """The storage of the document looked up in (its identity; not the document: the last reference to a
        document replaced by an edit's re-read was this one, and its 10,000 nodes were freed in the look-up,
        ~8 ms holding the interpreter)."""
        self._lock = threading.Lock()

    def close(self) -> None:
        """End the child process, if one runs (the next look-up starts again)."""
        child = self._child
        if child is not None:
            child.close()  # first: a look-up holding the lock may be waiting on it
        with self._lock:
            self._child = self._locator = self._storage = None

    def span(self, doc: Document | None, where: str, is_current: Callable[[], bool],
             cancelled: Callable[[], bool]) -> tuple[int, int] | None:
        """``(file offset, length)`` of the manifest text of ``where``; None when there is none, when the
        look-up was given up (``cancelled``) or when ``where`` stopped being the selection (``is_current``)."""
        if doc is None or doc.storage is None or doc.manifest_span is None:
            return None
        m0 = doc.manifest_span[0]

        def moved_on() -> bool:  # a thread cannot be stopped: the scan asks, now and then
            return cancelled() or not is_current()

        if not self._acquire(moved_on):
            return None
        try:
            self._use(doc)
            if not is_current():
                return None  # the selection moved on while waiting
            if self._child is not None:
                found = self._child.span(where)
                return None if found is None else (m0 + found[0], found[1] - found[0])
            found = self._locator.nearest(where, cancelled=moved_on)
        except Exception:  # hostile manifest, changed file or a look-up given up: no highlight, never a crash
            return None
        finally:
            self._lock.release()
        if found is None:
            return None
        start, end, _path = found
        return m0 + start, end - start

    def value_span(self, doc: Document | None, data: bytes, where: str, unique_keys: bool,
                   cancelled: Callable[[], bool]) -> tuple[int, int] | None:
        """``(start, end)`` in ``data`` (a manifest's bytes: the shown document's, ``doc``, or another
        version of it, such as the edits' latest) of the value at ``where``, exactly; None when there is
        none or the look-up was given up. Through the look-ups' Locator (what they walked is not walked
        again; for other bytes, rebased on them); ``unique_keys``: the caller knows that no object of
        ``data`` repeats a key (the shown document's own proof counts for its bytes)."""
        if not self._acquire(cancelled):
            return None
        try:
            if doc is not None and doc.storage is not None and doc.manifest_span is not None:
                self._use(doc)
            locator = self._locator
            if locator is None:  # no document, or its manifest is the child's: a walk of its own
                from ...format.onemodel.manifest_locate import Locator

                locator = Locator(data, unique_keys=unique_keys, background=True)
            elif locator.data != data:
                locator = locator.rebased(data, unique_keys=unique_keys, background=True)
            return locator.span(where, cancelled)
        except Exception:  # hostile manifest, changed file or a look-up given up: nothing found, never a crash
            return None
        finally:
            self._lock.release()

    def _acquire(self, given_up: Callable[[], bool]) -> bool:
        """Take the lock; False (not taken) once ``given_up`` says so while waiting."""
        # a look-up superseded while it waits for the lock (the child's first one decodes the whole
        # manifest: seconds on 10^6 nodes) gives up: each waiting look-up held one of the few worker
        # threads, and once they were all taken the statistics and the other workers queued behind
        while not self._lock.acquire(timeout=LOCK_POLL):
            if given_up():
                return False
        return True

    def _use(self, doc: Document) -> None:
        """Under the lock: the look-ups are ``doc``'s from now on (its Locator, or its child process)."""
        if self._storage is not doc.storage:
            m0, mlen = doc.manifest_span
            mlen = max(0, min(mlen, doc.size - m0))
            if self._child is not None:
                self._child.close()
            previous, self._locator, self._child, self._storage = self._locator, None, None, None
            if mlen > CHILD_BYTES and doc.path and "://" not in doc.path:  # a URL's manifest is in this process's cache
                from .locate_child import LocateChild

                self._child = LocateChild(doc.path, m0, mlen, _unique_keys(doc))
            else:
                from ...format.onemodel.manifest_locate import Locator

                data = doc.storage.read(m0, mlen)
                if previous is not None:  # the document before (an edit's re-read follows the shown one)
                    self._locator = previous.rebased(data, background=True)
                else:
                    self._locator = Locator(data, background=True)
            self._storage = doc.storage
        if self._locator is not None:
            # the proof may come later (the viewer's first open finds duplicate keys in its background job)
            self._locator.unique_keys = _unique_keys(doc)


def _unique_keys(doc: Document) -> bool:
    """Whether a look-up in ``doc``'s manifest may stop at the first match of a key: its keys were looked
    for (:attr:`~..format.document.Document.keys_unique`), and none repeats (no need to skip a whole graph)."""
    return doc.keys_unique is True
