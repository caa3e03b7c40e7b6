""":class:`RemoteStorage`: the :class:`~..storage.Storage` of a file on a server, read through a bounded block cache.

The reader and the records see the same interface as a mapped file (``size``, ``read``, ``view``,
``span``, ``buffer``, ``check``, ``close``):

* the first request is speculative: :data:`FIRST` bytes (1 MiB), which usually hold a OneModel
  header and manifest, and tell the file's size (``Content-Range``);
* small reads go through a cache of :data:`BLOCK`-byte blocks, at most :data:`CACHE` bytes (least
  recently used blocks go first); the missing blocks of one read that are adjacent are fetched in one
  request;
* reads of :data:`BULK` bytes or more (a tensor's values for statistics, a diff, a conversion) skip
  the cache: fetched in pieces of :data:`PIECE` bytes, :data:`WORKERS` requests in flight, into one
  buffer that a tensor view is built on;
* ``buffer()`` is a lazy byte sequence (``len``, indexing, slicing) for the scanners that walk a file
  by offsets (the ONNX protobuf scanner, which skips payload fields without fetching them).

Settings (block, cache, first, workers) are keyword arguments of :func:`open_remote`, with
:data:`OPTIONS` (set by the command line: ``--download``, ``--deep``) as defaults.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Callable

from ..errors import FormatError, Kind
from ..storage import Storage
from .options import OPTIONS
from .urls import check_scheme, redact, scheme

BLOCK = 16 << 10
CACHE = 64 << 20
FIRST = 1 << 20
BULK = 4 << 20
PIECE = 4 << 20
WORKERS = 4
PROBE = 2048
"""Bytes a scanner's point read fetches from where it reads (:class:`RemoteBuffer`)."""
WINDOWS = 8
"""Probe windows a :class:`RemoteBuffer` holds."""

def open_remote(url: str, *, block: int = BLOCK, cache: int = CACHE, first: int = FIRST, workers: int = WORKERS,
                download: bool | None = None, deep: bool | None = None, source=None) -> Storage:
    """The storage of ``url``: a :class:`RemoteStorage`, or with ``download`` a mapped temporary copy when the
    server ignores ``Range``. ``FormatError(Io)`` when it cannot be opened; ``FormatError(Unsupported)``
    for a scheme that is not read, or whose extra is not installed (the message names the ``pip install``)."""
    if source is None:
        check_scheme(url)
        if scheme(url) in ("http", "https"):
            from .http import HttpSource

            source = HttpSource(url)
        else:
            from .sources import FsspecSource

            source = FsspecSource(url)
    download = OPTIONS["download"] if download is None else download
    try:
        head = source.first(first)
    except FormatError as e:
        from .http import RangeIgnored

        if isinstance(e, RangeIgnored) and download:
            from .download import download as fetch_whole

            return fetch_whole(url)
        raise
    return RemoteStorage(source, head, block=block, cache=cache, workers=workers,
                         deep=OPTIONS["deep"] if deep is None else deep)


class RemoteStorage(Storage):
    """A file on a server (see the module docstring). Thread-safe."""

    remote = True
    mapped = False

    def __init__(self, source, head: bytes, *, block: int = BLOCK, cache: int = CACHE, workers: int = WORKERS,
                 deep: bool = False) -> None:
        if block < 512 or cache < block:
            raise ValueError("block must be at least 512 bytes and the cache at least one block")
        self.source = source
        self.url = source.url
        self.path = source.url
        self.label = redact(source.url)
        self.size = int(source.size or 0)
        self.block = block
        self.cache_cap = cache
        self.workers = max(1, workers)
        self.deep = deep
        self.progress: Callable[[int, int], None] | None = None
        """Called ``(done, total)`` after each piece of a bulk read, and ``(total, total)`` when it ends, fetched
        or not (from the reading thread); default ``OPTIONS["progress"]``."""
        self.cancel = threading.Event()
        self._blocks: OrderedDict[int, bytes] = OrderedDict()
        self._cached = 0
        self._lock = threading.Lock()
        self._pool = None
        self._put(0, head)

    # -- what the reader sees
    @property
    def requests(self) -> int:
        return self.source.requests

    @property
    def received(self) -> int:
        return self.source.received

    def buffer(self):
        return RemoteBuffer(self)

    def read(self, offset: int, length: int) -> bytes:
        self._bounds(offset, length)
        if length == 0:
            return b""
        return bytes(self._get(offset, offset + length))

    def span(self, offset: int, length: int) -> memoryview:
        self._bounds(offset, length)
        return memoryview(self._get(offset, offset + length)).toreadonly()

    def view(self, offset: int, length: int):
        import numpy as np

        self._bounds(offset, length)
        if length == 0:
            return np.zeros(0, dtype=np.uint8)
        arr = np.frombuffer(self._get(offset, offset + length), dtype=np.uint8)
        arr.flags.writeable = False
        return arr

    def probe(self, offset: int, length: int) -> bytes:
        """Up to ``length`` bytes at ``offset`` (fewer at the end of the file): from the cache when it holds
        them all, else fetched as they are (one request of that size, not cached)."""
        end = min(offset + length, self.size)
        self._bounds(offset, end - offset)
        b = self.block
        with self._lock:
            cached = all(i in self._blocks for i in range(offset // b, (end - 1) // b + 1))
        if cached:
            return bytes(self._get(offset, end))
        return self._fetch(offset, end)

    def peek(self, offset: int, length: int) -> bytes | None:
        """The bytes at ``offset`` when the cache holds them all, else None (nothing fetched: never waits on the
        network, for the interface's thread)."""
        self._bounds(offset, length)
        if length == 0:
            return b""
        b = self.block
        first, last = offset // b, (offset + length - 1) // b
        with self._lock:
            blocks = [self._blocks.get(i) for i in range(first, last + 1)]
        if any(blk is None for blk in blocks):
            return None
        joined = b"".join(blocks)  # type: ignore[arg-type]
        return joined[offset - first * b:offset - first * b + length]

    def fetch_view(self, offset: int, length: int, cancel=None, progress=None):
        """:meth:`view`, with ``progress(done, total)`` after each piece of a bulk read and ``cancel`` (an Event)
        looked at between pieces: None once it is set (the requests in flight are abandoned)."""
        import numpy as np

        self._bounds(offset, length)
        if length < BULK:
            return self.view(offset, length)
        out = bytearray(length)
        pieces = [(p, min(p + PIECE, offset + length)) for p in range(offset, offset + length, PIECE)]
        done = 0
        fetched = self._fetch_all(pieces, out, offset)
        try:
            for lo, hi in pieces:
                next(fetched)
                done += hi - lo
                self._report(done, length)
                if progress is not None:
                    progress(done, length)
                if cancel is not None and cancel.is_set():
                    return None
        finally:
            fetched.close()
            self._report(length, length)
        arr = np.frombuffer(out, dtype=np.uint8)
        arr.flags.writeable = False
        return arr

    def stream(self, offset: int, length: int, chunk: int):
        """The bytes ``[offset, offset+length)`` as pieces of about ``chunk`` bytes, fetched ahead in parallel."""
        self._bounds(offset, length)
        step = max(chunk, PIECE) * self.workers
        for start in range(offset, offset + length, step):
            yield self._get(start, min(start + step, offset + length))

    def sha1(self) -> str | None:
        """The SHA-1 of the whole file (fetched in bulk pieces, not cached); None when it cannot be read."""
        import hashlib

        h = hashlib.sha1()
        try:
            for piece in self.stream(0, self.size, PIECE):
                h.update(piece)
        except FormatError:
            return None
        return h.hexdigest()

    def close(self) -> None:
        self.cancel.set()
        self.source.close()
        with self._lock:
            self._blocks.clear()
            self._cached = 0
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)

    def _bounds(self, offset: int, length: int) -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatError(Kind.MALFORMED, self.label, offset, f"range {offset}+{length} outside {self.size} bytes")
        if self.cancel.is_set():
            raise FormatError(Kind.IO, "file", None, f"{self.label}: closed")

    # -- the cache
    def _put(self, start: int, data: bytes) -> None:
        """Cache the whole blocks of ``data`` (at ``start``, a block boundary), and a last partial block at the end of the file."""
        b = self.block
        with self._lock:
            for pos in range(0, len(data), b):
                piece = data[pos:pos + b]
                at = start + pos
                if len(piece) == b or at + len(piece) == self.size:
                    idx = at // b
                    if idx not in self._blocks:
                        self._blocks[idx] = bytes(piece)
                        self._cached += len(piece)
            while self._cached > self.cache_cap and self._blocks:
                _i, old = self._blocks.popitem(last=False)
                self._cached -= len(old)

    def _get(self, start: int, end: int):
        if end - start >= BULK:
            return self._bulk(start, end)
        b = self.block
        first, last = start // b, (end - 1) // b
        have: dict[int, bytes] = {}
        with self._lock:
            for i in range(first, last + 1):
                blk = self._blocks.get(i)
                if blk is not None:
                    self._blocks.move_to_end(i)
                    have[i] = blk
        runs: list[tuple[int, int]] = []  # missing block runs [i, j]
        for i in range(first, last + 1):
            if i not in have:
                if runs and runs[-1][1] == i - 1:
                    runs[-1] = (runs[-1][0], i)
                else:
                    runs.append((i, i))
        ranges = [(i * b, min((j + 1) * b, self.size)) for i, j in runs]
        for (lo, _hi), data in zip(ranges, self._fetch_all(ranges)):
            self._put(lo, data)
            for k in range(0, len(data), b):
                have[(lo + k) // b] = data[k:k + b]
        joined = b"".join(have[i] for i in range(first, last + 1))
        base = first * b
        return joined[start - base:end - base]

    def _bulk(self, start: int, end: int) -> bytearray:
        out = bytearray(end - start)
        pieces = [(p, min(p + PIECE, end)) for p in range(start, end, PIECE)]
        done = 0
        try:
            for (lo, hi), _filled in zip(pieces, self._fetch_all(pieces, out, start)):
                done += hi - lo
                self._report(done, end - start)
        finally:
            self._report(end - start, end - start)
        return out

    def _report(self, done: int, total: int) -> None:
        hook = self.progress or OPTIONS.get("progress")
        if hook is not None:
            hook(done, total)

    def _fetch_all(self, ranges: list[tuple[int, int]], out: bytearray | None = None, base: int = 0):
        """The bytes of each range, ``WORKERS`` requests in flight when there are several (yielded in order);
        with ``out``, each range is read straight into ``out[lo - base:hi - base]`` instead (None yielded)."""
        view = memoryview(out) if out is not None else None

        def one(lo: int, hi: int):
            return self._fetch(lo, hi, None if view is None else view[lo - base:hi - base])

        if len(ranges) <= 1 or self.workers == 1:
            for lo, hi in ranges:
                yield one(lo, hi)
            return
        pool = self._executor()
        futures = [pool.submit(one, lo, hi) for lo, hi in ranges[: self.workers * 2]]
        nxt = len(futures)
        try:
            for k in range(len(ranges)):
                data = futures[k].result()
                futures[k] = None  # type: ignore[call-overload]
                if nxt < len(ranges):
                    futures.append(pool.submit(one, *ranges[nxt]))
                    nxt += 1
                yield data
        finally:
            for f in futures:
                if f is not None:
                    f.cancel()

    def _fetch(self, lo: int, hi: int, into: memoryview | None = None) -> bytes | None:
        if self.cancel.is_set():
            raise FormatError(Kind.IO, "file", None, f"{self.label}: cancelled")
        if into is None:
            return self.source.fetch(lo, hi)
        fill = getattr(self.source, "fetch_into", None)  # HTTP: from the socket into place, no copy
        if fill is not None:
            fill(lo, hi, into)
        else:
            into[:] = self.source.fetch(lo, hi)
        return None

    def _executor(self):
        with self._lock:
            if self._pool is None:
                from concurrent.futures import ThreadPoolExecutor

                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="onemodel-fetch")
            return self._pool


class RemoteBuffer:
    """``storage``'s bytes as a lazy sequence: ``len(buf)``, ``buf[i]`` (an int), ``buf[a:b]`` (a read-only memoryview
    of a copy, as a slice of a mapping's memoryview would be).

    A scanner that walks keys reads byte by byte at scattered places (the header of each ONNX tensor, its
    payload skipped): an index outside the windows held fetches a window of :data:`PROBE` bytes from
    there (:meth:`RemoteStorage.probe`, not cached), and slices inside a window are served from it. The
    last :data:`WINDOWS` windows are held: a scanner of nested messages goes back to a message's start
    after it has looked past its end (a Constant node's tensor, then the next node).
    """

    __slots__ = ("storage", "size", "_wins")

    def __init__(self, storage: RemoteStorage) -> None:
        self.storage = storage
        self.size = storage.size
        self._wins: list[tuple[int, bytes]] = []
        """(offset, bytes), the latest first."""

    def __len__(self) -> int:
        return self.size

    def _window(self, start: int, stop: int) -> tuple[int, bytes] | None:
        for k, (at, win) in enumerate(self._wins):
            if at <= start and stop <= at + len(win):
                if k:
                    self._wins.insert(0, self._wins.pop(k))
                return at, win
        return None

    def _fetch(self, start: int) -> tuple[int, bytes]:
        got = (start, self.storage.probe(start, PROBE))
        self._wins.insert(0, got)
        del self._wins[WINDOWS:]
        return got

    def __getitem__(self, key):
        if isinstance(key, slice):
            start, stop, step = key.indices(self.size)
            if step != 1:
                raise ValueError("no strided slices of a remote file")
            if stop <= start:
                return memoryview(b"")
            held = self._window(start, stop)
            if held is not None:
                at, win = held
                return memoryview(win)[start - at:stop - at]
            if stop - start <= PROBE // 2:  # a field across a window's end: a new window from there
                _at, win = self._fetch(start)
                return memoryview(win)[:stop - start]
            return memoryview(self.storage.read(start, stop - start))
        i = key + self.size if key < 0 else key
        if not 0 <= i < self.size:
            raise IndexError("remote file index out of range")
        held = self._window(i, i + 1) or self._fetch(i)
        return held[1][i - held[0]]
