"""Where a record's text is in a OneModel manifest: the hex pane highlights it when the record is selected.

No Textual here: :class:`ManifestSpans` is asked from the viewer's ``locate`` worker thread (one
look-up at a time); it keeps one :class:`~onemodel_viewer.format.manifest_locate.Locator` per
document, made on the first look-up, and gives up as soon as the selection moves on. A manifest
over :data:`CHILD_BYTES` is looked up in a child process instead (:mod:`.locate_child`).
"""

from __future__ import annotations

import threading
from typing import Callable

from ..format.document import Document

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
        self._doc: Document | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        """End the child process, if one runs (the next look-up starts again)."""
        child = self._child
        if child is not None:
            child.close()  # first: a look-up holding the lock may be waiting on it
        with self._lock:
            self._child = self._locator = self._doc = None

    def span(self, doc: Document | None, where: str, is_current: Callable[[], bool],
             cancelled: Callable[[], bool]) -> tuple[int, int] | None:
        """``(file offset, length)`` of the manifest text of ``where``; None when there is none, when the
        look-up was given up (``cancelled``) or when ``where`` stopped being the selection (``is_current``)."""
        if doc is None or doc.storage is None or doc.manifest_span is None:
            return None
        m0, mlen = doc.manifest_span
        # a look-up superseded while it waits for the lock (the child's first one decodes the whole
        # manifest: seconds on 10^6 nodes) gives up: each waiting look-up held one of the few worker
        # threads, and once they were all taken the statistics and the other workers queued behind
        while not self._lock.acquire(timeout=LOCK_POLL):
            if cancelled() or not is_current():
                return None
        try:
            if self._doc is not doc:
                mlen = max(0, min(mlen, doc.size - m0))
                # a diagnose open that parsed the manifest has looked for duplicate keys: with
                # none, a look-up may stop at the first match (no need to skip a whole graph)
                unique = (
                    doc.mode == "diagnose" and doc.model is not None
                    and not any(f.code == "duplicate-key" for f in doc.findings)
                )
                if self._child is not None:
                    self._child.close()
                self._locator = self._child = None
                if mlen > CHILD_BYTES and doc.path:
                    from .locate_child import LocateChild

                    self._child = LocateChild(doc.path, m0, mlen, unique)
                else:
                    from ..format.manifest_locate import Locator

                    self._locator = Locator(doc.storage.read(m0, mlen), unique_keys=unique, background=True)
                self._doc = doc
            if not is_current():
                return None  # the selection moved on while waiting
            if self._child is not None:
                found = self._child.span(where)
                return None if found is None else (m0 + found[0], found[1] - found[0])
            locator = self._locator

            def moved_on() -> bool:  # a thread cannot be stopped: the scan asks, now and then
                return cancelled() or not is_current()

            found = locator.nearest(where, cancelled=moved_on)
        except Exception:  # hostile manifest, changed file or a look-up given up: no highlight, never a crash
            return None
        finally:
            self._lock.release()
        if found is None:
            return None
        start, end, _path = found
        return m0 + start, end - start
