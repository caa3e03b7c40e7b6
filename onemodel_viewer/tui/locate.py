"""Where a record's text is in a OneModel manifest: the hex pane highlights it when the record is selected.

No Textual here: :class:`ManifestSpans` is asked from the viewer's ``locate`` worker thread (one
look-up at a time); it keeps one :class:`~onemodel_viewer.format.manifest_locate.Locator` per
document, made on the first look-up, and gives up as soon as the selection moves on.
"""

from __future__ import annotations

import threading
from typing import Callable

from ..format.document import Document

__all__ = ["ManifestSpans"]


class ManifestSpans:
    """Manifest byte spans of ``where`` paths, for the document the viewer shows."""

    def __init__(self) -> None:
        self._locator = None
        self._doc: Document | None = None
        self._lock = threading.Lock()

    def span(self, doc: Document | None, where: str, is_current: Callable[[], bool],
             cancelled: Callable[[], bool]) -> tuple[int, int] | None:
        """``(file offset, length)`` of the manifest text of ``where``; None when there is none, when the
        look-up was given up (``cancelled``) or when ``where`` stopped being the selection (``is_current``)."""
        if doc is None or doc.storage is None or doc.manifest_span is None:
            return None
        m0, mlen = doc.manifest_span
        try:
            with self._lock:
                if self._locator is None or self._doc is not doc:
                    mlen = max(0, min(mlen, doc.size - m0))
                    data = doc.storage.read(m0, mlen)
                    from ..format.manifest_locate import Locator

                    # a diagnose open that parsed the manifest has looked for duplicate keys: with
                    # none, a look-up may stop at the first match (no need to skip a whole graph)
                    unique = (
                        doc.mode == "diagnose" and doc.model is not None
                        and not any(f.code == "duplicate-key" for f in doc.findings)
                    )
                    self._locator = Locator(data, unique_keys=unique, background=True)
                    self._doc = doc
                locator = self._locator
                if not is_current():
                    return None  # the selection moved on while waiting

                def moved_on() -> bool:  # a thread cannot be stopped: the scan asks, now and then
                    return cancelled() or not is_current()

                found = locator.nearest(where, cancelled=moved_on)
        except Exception:  # hostile manifest, changed file or a look-up given up: no highlight, never a crash
            return None
        if found is None:
            return None
        start, end, _path = found
        return m0 + start, end - start
