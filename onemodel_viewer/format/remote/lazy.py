"""A remote file's bytes fetched on demand into a private anonymous mapping, for a walker that reads a
buffer with ``struct`` (the ``.ort`` verifying walk: :class:`..ort.verify.Walker`).

:class:`LazyCopy` has ``buf`` (an anonymous, zero-filled mapping of the file's size: pages that are
never written take no memory) and ``need(offset, length)``: the missing :data:`CHUNK`-byte chunks of
that range are fetched through the storage (its block cache; adjacent missing chunks in one read)
and copied in. A walker tells ``need`` of every range before it reads it, so the mapping's zeros are
never read as the file's bytes. A miss near fetched bytes fetches the gap between (:data:`GAP`) and
reads ahead in the direction the walk goes (:data:`AHEAD`): small payloads between tables come
along (a round trip costs more than they do), large ones are skipped.
"""

from __future__ import annotations

import mmap

from ..errors import FormatError, Kind

CHUNK = 64 << 10
GAP = 16
"""A miss within this many chunks (1 MiB) of fetched bytes fetches the gap too: one request instead of two."""
AHEAD = 64
"""Chunks fetched ahead at most (4 MiB, about what one round trip costs at 200 MB/s and 20 ms) when the
walk goes on in one direction: one, then twice as many each time."""
WORKERS = 4
"""Requests in flight for :meth:`LazyCopy.hint`."""
WHOLE = 4
"""Once a walk has fetched a quarter of the file (small payloads between its tables, fetched along),
the rest is fetched at once, in parallel pieces: cheaper than going on one round trip at a time."""


class LazyCopy:
    def __init__(self, storage, chunk: int = CHUNK) -> None:
        self.storage = storage
        self.size = storage.size
        self.chunk = chunk
        # private, not reserved: a size the server states takes no memory until pages are written
        flags = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0) | getattr(mmap, "MAP_NORESERVE", 0)
        try:
            self.buf = mmap.mmap(-1, max(self.size, 1), flags=flags) if flags else mmap.mmap(-1, max(self.size, 1))
        except (OSError, OverflowError, ValueError) as e:
            raise FormatError(Kind.UNSUPPORTED, "file", None,
                              f"cannot set aside {self.size:,} bytes of address space to walk the file: {e}") from e
        self.have = bytearray(-(-self.size // chunk))
        self.fetched = 0
        """Bytes copied in (fetched or from the cache)."""
        self._ahead = 1

    def need(self, offset: int, length: int) -> None:
        end = min(offset + length, self.size)
        if offset < 0 or end <= offset:
            return
        c, have = self.chunk, self.have
        first, last = offset // c, (end - 1) // c
        if first == last and have[first]:  # the common case: one chunk, fetched
            return
        if self.fetched * WHOLE >= self.size:
            self._rest()
            return
        i = first
        while i <= last:
            if have[i]:
                i += 1
                continue
            j = i
            while j + 1 <= last and not have[j + 1]:
                j += 1
            lo, hi = self._widen(i, j)
            start, stop = lo * c, min((hi + 1) * c, self.size)
            self.buf[start:stop] = self.storage.read(start, stop - start)
            self.fetched += stop - start
            for k in range(lo, hi + 1):
                have[k] = 1
            i = j + 1

    def hint(self, offsets: list[int]) -> None:
        """The walk is about to read objects at ``offsets`` (the tables of a vector, one after the other): their
        chunks not fetched yet are fetched now, :data:`WORKERS` requests in flight, rather than one round trip
        per table as the walk comes to each."""
        c, have, size = self.chunk, self.have, self.size
        want = sorted({o // c for o in offsets if 0 <= o < size and not have[o // c]})
        if len(want) < 2 or self.fetched * WHOLE >= size:
            return
        runs: list[list[int]] = []
        for k in want:
            if runs and runs[-1][1] == k - 1:
                runs[-1][1] = k
            else:
                runs.append([k, k])
        spans = [(i * c, min((j + 1) * c, size)) for i, j in runs]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(WORKERS, thread_name_prefix="onemodel-walk") as pool:
            for (start, stop), data in zip(spans, pool.map(lambda r: self.storage.read(r[0], r[1] - r[0]), spans)):
                self.buf[start:stop] = data
                self.fetched += stop - start
        for i, j in runs:
            for k in range(i, j + 1):
                have[k] = 1

    def _rest(self) -> None:
        """Every chunk not fetched yet, a run of them per read (a long one in parallel pieces: the storage's bulk read)."""
        c, have, n = self.chunk, self.have, len(self.have)
        i = 0
        while i < n:
            if have[i]:
                i += 1
                continue
            j = i
            while j + 1 < n and not have[j + 1]:
                j += 1
            start, stop = i * c, min((j + 1) * c, self.size)
            self.buf[start:stop] = self.storage.read(start, stop - start)
            self.fetched += stop - start
            for k in range(i, j + 1):
                have[k] = 1
            i = j + 1

    def _widen(self, i: int, j: int) -> tuple[int, int]:
        """The missing chunks ``[i, j]`` widened: over a short gap to fetched chunks, and ahead in the walk's direction."""
        have, n = self.have, len(self.have)
        above = next((k for k in range(j + 1, min(j + 1 + GAP, n)) if have[k]), None)
        below = next((k for k in range(i - 1, max(i - 1 - GAP, -1), -1) if have[k]), None)
        if above is not None:
            j = above - 1
        if below is not None:
            i = below + 1
        if (above is None) == (below is None):  # a jump (or a hole filled): no direction
            self._ahead = 1
            return i, j
        step = self._ahead
        self._ahead = min(step * 2, AHEAD)
        if below is None:  # going down the file (a flatbuffer is built from its end)
            while step and i > 0 and not have[i - 1]:
                i -= 1
                step -= 1
        else:
            while step and j + 1 < n and not have[j + 1]:
                j += 1
                step -= 1
        return i, j

    def close(self) -> None:
        self.buf.close()
