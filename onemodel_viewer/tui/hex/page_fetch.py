"""The hex pane's bytes of a file at a URL, never waited for on the interface's thread.

A mapped file is read where it is drawn. A remote storage (:class:`...format.remote.storage.RemoteStorage`)
is read from its block cache only (``peek``); a line whose bytes are not there is drawn as a
placeholder, and a thread worker fetches the whole page on screen (one request through the cache),
then has the pane redrawn. One fetch at a time: a page scrolled past before its bytes arrive is not
fetched after them (the worker group is exclusive). A failed fetch is remembered for its range, so
that its lines show the error (``r`` reloads) instead of asking again on every redraw.
"""

from __future__ import annotations

from typing import Callable

from ...format.errors import FormatError, Kind

__all__ = ["PageFetcher"]


class PageFetcher:
    def __init__(self, view, page: Callable[[], tuple[int, int]], redraw: Callable[[], None]) -> None:
        self.view = view
        self.page = page
        """``[start, end)`` of the bytes on screen (the range a miss fetches)."""
        self.redraw = redraw
        self.inflight: tuple[int, int, int] | None = None
        """(id of the storage, start, end) being fetched."""
        self.failed: dict[tuple[int, int, int], str] = {}

    def read(self, storage, offset: int, length: int) -> bytes | None:
        """The bytes, or None while they are being fetched; ``FormatError`` when they could not be."""
        if not getattr(storage, "remote", False):
            return storage.read(offset, length)
        got = storage.peek(offset, length)
        if got is not None:
            return got
        key = id(storage)
        for (k, lo, hi), message in self.failed.items():
            if k == key and lo <= offset and offset + length <= hi:
                raise FormatError(Kind.IO, "file", offset, message)
        fl = self.inflight
        if fl is not None and fl[0] == key and fl[1] <= offset and offset + length <= fl[2]:
            return None
        lo, hi = self.page()
        lo, hi = max(0, min(lo, offset)), min(storage.size, max(hi, offset + length))
        self.inflight = (key, lo, hi)
        self.view.run_worker(lambda: self._fetch(storage, key, lo, hi), thread=True, group="hex-fetch",
                             exclusive=True, exit_on_error=False, name="hex page fetch")
        return None

    def _fetch(self, storage, key: int, lo: int, hi: int) -> None:
        try:
            storage.read(lo, hi - lo)  # into the block cache
        except FormatError as e:
            self.failed[(key, lo, hi)] = e.message
        finally:
            try:
                self.view.app.call_from_thread(self._done, (key, lo, hi))
            except RuntimeError:  # the app has gone
                pass

    def _done(self, job: tuple[int, int, int]) -> None:
        if self.inflight == job:
            self.inflight = None
        self.redraw()

    def forget(self) -> None:
        """A reload: failures are asked again."""
        self.failed.clear()
        self.inflight = None
