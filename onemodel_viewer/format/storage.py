"""Where tensor bytes live: one read-only mapping (or in-memory bytes) per file.

Files of 1 MiB or more are memory-mapped read-only (spec section 5); smaller
ones are read. Views are zero-copy ``numpy.uint8`` arrays. Before handing out a
view, :meth:`FileStorage.check` verifies the file is still the one that was
opened (size, mtime, inode): touching a mapped page past a new, shorter end
would kill the process with SIGBUS.
"""

from __future__ import annotations

import mmap
import os
from typing import TYPE_CHECKING

from .errors import FormatError, Kind

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

MAP_THRESHOLD = 1 << 20


class Storage:
    """Abstract byte source for tensors."""

    size: int
    label: str

    def buffer(self):  # pragma: no cover - interface
        raise NotImplementedError

    def check(self) -> None:
        """Raise ``FormatError(Io)`` when the bytes can no longer be trusted."""

    def view(self, offset: int, length: int) -> "np.ndarray":
        """Zero-copy read-only uint8 view of ``length`` bytes at ``offset``."""
        import numpy as np

        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatError(Kind.MALFORMED, self.label, offset, f"range {offset}+{length} outside {self.size} bytes")
        self.check()
        if length == 0:
            return np.zeros(0, dtype=np.uint8)
        return np.frombuffer(self.buffer(), dtype=np.uint8, count=length, offset=offset)

    def read(self, offset: int, length: int) -> bytes:
        """A copy of ``length`` bytes at ``offset`` (bounds-checked)."""
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatError(Kind.MALFORMED, self.label, offset, f"range {offset}+{length} outside {self.size} bytes")
        self.check()
        return bytes(memoryview(self.buffer())[offset : offset + length])

    def close(self) -> None:
        pass


class BytesStorage(Storage):
    """Bytes already in memory (small files, ONNX ``raw_data``)."""

    def __init__(self, data: bytes, label: str = "memory") -> None:
        self._data = data
        self.size = len(data)
        self.label = label

    def buffer(self):
        return self._data


class FileStorage(Storage):
    """One file opened read-only: mapped when >= 1 MiB, else read into memory."""

    def __init__(self, path: str | os.PathLike, *, map_threshold: int = MAP_THRESHOLD) -> None:
        self.path = os.fspath(path)
        self.label = self.path
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as e:
            raise FormatError(Kind.IO, "file", None, f"cannot open: {e.strerror or e}") from e
        try:
            st = os.fstat(fd)
            self._stamp = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
            self.size = st.st_size
            self._mmap: mmap.mmap | None = None
            self._data: bytes | None = None
            if self.size >= map_threshold:
                self._mmap = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            else:
                chunks, left = [], self.size
                while left > 0:
                    chunk = os.read(fd, left)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    left -= len(chunk)
                self._data = b"".join(chunks)
                self.size = len(self._data)
        except OSError as e:
            raise FormatError(Kind.IO, "file", None, f"cannot read: {e.strerror or e}") from e
        finally:
            os.close(fd)

    @property
    def mapped(self) -> bool:
        return self._mmap is not None

    def buffer(self):
        return self._mmap if self._mmap is not None else self._data

    def changed(self) -> bool:
        """True when the file on disk is no longer the one that was opened."""
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev) != self._stamp

    def check(self) -> None:
        # Only a mapping can fault; bytes read into memory stay valid whatever happens on disk.
        if self._mmap is not None and self.changed():
            raise FormatError(Kind.IO, "file", None, "the file changed on disk since it was opened; reload it")

    def close(self) -> None:
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:  # views still alive; the mapping goes with them
                pass
