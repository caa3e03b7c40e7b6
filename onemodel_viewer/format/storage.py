"""Where tensor bytes live: one read-only mapping (or in-memory bytes) per file.

Files of 1 MiB or more are memory-mapped read-only (spec section 5); smaller
ones are read. Views are zero-copy ``numpy.uint8`` arrays.

A file that shrinks under a live mapping would kill the process with SIGBUS the
next time a page past the new end is touched. Two defences:

* :meth:`FileStorage.check` (called before every view or read is handed out)
  compares size, mtime, inode and device with what was opened and raises
  ``FormatError(Io)``.
* On Linux a mapped file also holds a read **lease** (``F_SETLEASE``): the
  kernel makes any process (this one included) that opens the file for writing
  or truncates it wait, and signals us first. A small daemon thread (``lease``
  below) receives that signal with ``sigwaitinfo``, replaces the whole mapping
  with anonymous zero pages (``mmap(MAP_FIXED)``), marks the storage *revoked*
  and only then releases the lease, so the writer proceeds. Views handed out
  before read zeros instead of faulting; ``check()`` raises ``FormatError(Io)``
  from then on. Where no lease can be taken (another process already has the
  file open for writing, a file owned by someone else without ``CAP_LEASE``, a
  filesystem without leases, not Linux) the storage is mapped as before with
  ``protected`` False and the reason in ``protection_note``.
"""

from __future__ import annotations

import mmap
import os
import sys
import threading
from typing import TYPE_CHECKING, Callable

from .errors import FormatError, Kind

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

MAP_THRESHOLD = 1 << 20

_CHANGED = "the file changed on disk since it was opened; reload it"


class Storage:
    """Abstract byte source for tensors."""

    size: int
    label: str
    protected: bool = True
    """False when a change of the file on disk could still crash the process (see ``FileStorage``)."""
    protection_note: str = ""
    """Why ``protected`` is False ("" when it is True)."""

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

    def span(self, offset: int, length: int) -> memoryview:
        """``length`` bytes at ``offset`` as a read-only memoryview (bounds-checked): of the mapping
        where there is one (no copy), else of a copy. Release it before closing the storage."""
        return memoryview(self.read(offset, length))

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
    """One file opened read-only: mapped when >= 1 MiB, else read into memory.

    A mapped file keeps its read-only descriptor (and, on Linux, a read lease) until
    :meth:`close` or until the mapping is garbage-collected. ``protect=False`` maps
    without a lease (tests of the fallback).
    """

    def __init__(self, path: str | os.PathLike, *, map_threshold: int = MAP_THRESHOLD, protect: bool = True) -> None:
        self.path = os.fspath(path)
        self.label = self.path
        self._mmap: mmap.mmap | None = None
        self._data: bytes | None = None
        self._lease: _Lease | None = None
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        except OSError as e:
            raise FormatError(Kind.IO, "file", None, f"cannot open: {e.strerror or e}") from e
        keep_fd = False
        try:
            st = os.fstat(fd)
            refused = ""
            if st.st_size >= map_threshold:
                # The lease first: from here on nobody can open the file for writing or truncate it
                # without our say, so the size read below stays true until we let go.
                refused = _take_lease(fd) if protect else "protection turned off"
                if not refused:
                    st = os.fstat(fd)
            self._stamp = (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev)
            self.size = st.st_size
            if self.size >= map_threshold:
                self._mmap = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
                if refused:
                    self.protected, self.protection_note = False, refused
                else:
                    self._lease = _register(fd, self._mmap)
                    keep_fd = self._lease is not None
                    if not keep_fd:
                        self.protected, self.protection_note = False, "cannot locate the mapping"
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
            if not keep_fd:
                os.close(fd)

    @property
    def mapped(self) -> bool:
        return self._mmap is not None

    @property
    def revoked(self) -> bool:
        """True once the file was opened for writing or truncated elsewhere and the mapping withdrawn."""
        return self._lease is not None and self._lease.revoked

    def buffer(self):
        return self._mmap if self._mmap is not None else self._data

    def span(self, offset: int, length: int) -> memoryview:
        if self._mmap is None:
            return super().span(offset, length)
        if offset < 0 or length < 0 or offset + length > self.size:
            raise FormatError(Kind.MALFORMED, self.label, offset, f"range {offset}+{length} outside {self.size} bytes")
        self.check()
        with memoryview(self._mmap) as whole:
            return whole[offset : offset + length]

    def on_revoke(self, callback: Callable[[], None]) -> None:
        """Call ``callback()`` once the mapping is withdrawn (from the lease thread, not the caller's).

        It runs on the lease thread, which serves every mapped file: it must return at once and
        never block (a UI posts a message to its loop, e.g. Textual's ``post_message``, not the
        blocking ``call_from_thread``). Dropped by :meth:`close`. Never called for an unprotected
        or unmapped storage.
        """
        if self._lease is not None:
            self._lease.listeners.append(callback)

    def changed(self) -> bool:
        """True when the file on disk is no longer the one that was opened."""
        if self.revoked:
            return True
        try:
            st = os.stat(self.path)
        except OSError:
            return True
        return (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev) != self._stamp

    def check(self) -> None:
        # Only a mapping can fault; bytes read into memory stay valid whatever happens on disk.
        if self._mmap is not None and self.changed():
            lease = self._lease
            if lease is not None and lease.revoked:
                # ``revoked`` is set (under the lock) just before the zero pages go in: wait for the
                # withdrawal to finish, so that once check() has said no, old views read zeros.
                with _LOCK:
                    pass
            raise FormatError(Kind.IO, "file", None, _CHANGED)

    def close(self) -> None:
        if self._mmap is None:
            return
        lease = self._lease
        with _LOCK:
            try:
                self._mmap.close()
            except BufferError:  # views still alive; the mapping (and its lease) go with them
                if lease is not None:
                    lease.listeners.clear()
                return
            if lease is not None:
                lease.forget()


# ----------------------------------------------------------------------------------------- leases
#
# Linux only, pure Python (fcntl + ctypes). Values from <fcntl.h>/<sys/mman.h>, the same on every
# architecture listed in _ARCHES (alpha, hppa and mips differ: no lease protection there).

_F_SETLEASE = 1024
_F_GETLEASE = 1025
_F_SETSIG = 10
_F_SETOWN_EX = 15
_F_OWNER_TID = 0
_MAP_FIXED = 0x10
_ARCHES = ("x86_64", "amd64", "i386", "i686", "aarch64", "arm64", "armv7l", "armv8l", "riscv64", "ppc64le",
           "ppc64", "s390x", "loongarch64")

_LOCK = threading.RLock()
"""Serialises withdrawing a mapping against closing it (never held across anything that can block)."""
_LEASES: dict[int, "_Lease"] = {}
_THREAD: dict[str, object] = {}
"""The lease thread once started: ``tid`` (native id), ``signal``, ``error`` (why it could not start)."""


class _Lease:
    """A mapped range whose file we hold a read lease on."""

    __slots__ = ("fd", "ref", "addr", "length", "revoked", "dead", "listeners", "finalizer", "__weakref__")

    def __init__(self, fd: int, mm: mmap.mmap, addr: int) -> None:
        import weakref

        self.fd = fd
        self.ref = weakref.ref(mm)
        self.addr = addr
        self.length = len(mm)
        self.revoked = False
        self.dead = False
        self.listeners: list[Callable[[], None]] = []
        # When the mapping is garbage-collected (the storage dropped without close(), views gone):
        # forget the lease and close the descriptor. The mapping is already unmapped by then, and
        # ``ref()`` answers None from the start of its deallocation, so withdraw() never touches it.
        self.finalizer = weakref.finalize(mm, self.forget)
        self.finalizer.atexit = False

    def forget(self) -> None:
        with _LOCK:
            if self.dead:
                return
            self.dead = True
            self.listeners.clear()
            _LEASES.pop(id(self), None)
            self.finalizer.detach()
            try:
                os.close(self.fd)  # the lease goes with the last descriptor of the open file
            except OSError:
                pass

    def withdraw_if_breaking(self) -> None:
        import fcntl

        with _LOCK:
            if self.dead or self.revoked:
                return
            try:
                if fcntl.fcntl(self.fd, _F_GETLEASE) == fcntl.F_RDLCK:
                    return  # not this one
            except OSError:
                pass
            # A strong reference for the rest of this block: the mapping cannot be unmapped (nor the
            # descriptor closed by forget()) under us. None: it is being deallocated right now.
            mm = self.ref()
            # Revoked before the zeros appear: a reader that checks after its pass (stats) cannot
            # see zeros and a clean check.
            self.revoked = True
            if mm is not None and not mm.closed and not _zero_fill(self.addr, self.length):  # pragma: no cover
                return  # ENOMEM at worst: keep the lease; the writer waits out the kernel's lease-break-time
            listeners, self.listeners = self.listeners, []
        # The listeners run before the writer is let go (outside the lock, as before): when the
        # writer's open() returns, every listener has been told.
        for fn in listeners:
            try:
                fn()
            except Exception:  # a listener's bug must not kill the lease thread
                pass
        with _LOCK:
            if not self.dead:  # forget() closed the descriptor: the lease went with it
                try:
                    fcntl.fcntl(self.fd, _F_SETLEASE, fcntl.F_UNLCK)
                except OSError:
                    pass


def _libc():
    lib = _THREAD.get("libc")
    if lib is None:
        import ctypes

        lib = ctypes.CDLL(None, use_errno=True)
        lib.mmap.restype = ctypes.c_void_p
        lib.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        _THREAD["libc"] = lib
    return lib


def _zero_fill(addr: int, length: int) -> bool:
    """Replace the pages at ``addr`` with anonymous zero pages, in place (same address, same length)."""
    r = _libc().mmap(addr, length, mmap.PROT_READ, _MAP_FIXED | mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS, -1, 0)
    return r == addr


def _address(mm: mmap.mmap) -> int | None:
    """Start address of a read-only mapping (through the buffer protocol: no numpy on the --check path)."""
    import ctypes

    if "buffer_api" not in _THREAD:

        class PyBuffer(ctypes.Structure):  # Py_buffer, part of the stable ABI since 3.11
            _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                        ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                        ("format", ctypes.c_void_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                        ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]

        api = ctypes.PyDLL(None)  # our own handle: ctypes.pythonapi's argtypes stay untouched
        get, release = api.PyObject_GetBuffer, api.PyBuffer_Release
        get.argtypes, get.restype = [ctypes.py_object, ctypes.POINTER(PyBuffer), ctypes.c_int], ctypes.c_int
        release.argtypes, release.restype = [ctypes.POINTER(PyBuffer)], None
        _THREAD["buffer_api"] = (PyBuffer, get, release)
    PyBuffer, get, release = _THREAD["buffer_api"]  # type: ignore[misc]
    view = PyBuffer()
    if get(mm, ctypes.byref(view), 0) != 0:  # PyBUF_SIMPLE
        return None
    try:
        return view.buf if view.len == len(mm) else None
    finally:
        release(ctypes.byref(view))


def _after_fork_in_child() -> None:
    """A forked child has no lease thread and its own copies of the mappings: start afresh.

    Leases it inherited stay with the parent (the open file is shared); the child's copies of those
    mappings are only checked, not withdrawn.
    """
    global _LOCK
    _LOCK = threading.RLock()
    _LEASES.clear()  # never withdrawn from here: the parent's thread serves them
    for key in ("tid", "signal", "error"):
        _THREAD.pop(key, None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _lease_loop(sig: int, ready: threading.Event) -> None:
    import signal

    wanted = {sig}
    # When the real-time signal cannot be queued (RLIMIT_SIGPENDING) the kernel sends SIGIO to this
    # thread instead, whose default action ends the process: wait for it too, unless someone in
    # the process handles SIGIO (then it is theirs).
    if signal.getsignal(signal.SIGIO) == signal.SIG_DFL:
        wanted.add(signal.SIGIO)
    try:
        # Blocked here (and only here): the kernel queues the lease-break signal, which is directed
        # at this thread, until sigwaitinfo() takes it. No Python signal handler runs anywhere.
        signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
        _THREAD["tid"] = threading.get_native_id()
    except Exception as e:  # pragma: no cover - defensive
        _THREAD["error"] = f"lease thread: {e}"
    finally:
        ready.set()
    if "tid" not in _THREAD:  # pragma: no cover
        return
    while True:
        try:
            signal.sigwaitinfo(wanted)
            for lease in list(_LEASES.values()):
                lease.withdraw_if_breaking()
        except Exception:  # pragma: no cover - the thread must outlive any surprise
            pass


def _start_thread() -> str:
    """Start the lease thread once; "" when running, else why not."""
    with _LOCK:
        if "tid" in _THREAD:
            return ""
        if "error" in _THREAD:
            return str(_THREAD["error"])
        import signal

        # os.uname().machine is what platform.machine() reports on Linux (without importing
        # platform: ~1.5 ms of every --check)
        if not sys.platform.startswith("linux"):
            _THREAD["error"] = "file leases are Linux-only"
        elif os.uname().machine.lower() not in _ARCHES:
            _THREAD["error"] = f"no lease support on {os.uname().machine}"
        else:
            # A real-time signal nobody in this process handles. Its disposition becomes "ignore":
            # blocked in the lease thread it is still queued there, and a stray process-directed copy
            # (possible between F_SETLEASE and F_SETOWN_EX) cannot kill the process.
            sig = next((s for s in range(signal.SIGRTMIN + 8, signal.SIGRTMAX - 1)
                        if signal.getsignal(s) in (signal.SIG_DFL, signal.SIG_IGN)), None)
            if sig is None:
                _THREAD["error"] = "no free real-time signal"
            else:
                try:
                    if threading.current_thread() is threading.main_thread():
                        signal.signal(sig, signal.SIG_IGN)
                    else:  # signal.signal() only works from the main thread; the C call works anywhere
                        import ctypes

                        handler = _libc().signal
                        handler.argtypes, handler.restype = [ctypes.c_int, ctypes.c_void_p], ctypes.c_void_p
                        handler(sig, 1)  # SIG_IGN
                    ready = threading.Event()
                    threading.Thread(target=_lease_loop, args=(sig, ready), name="onemodel-lease", daemon=True).start()
                    ready.wait()
                    _THREAD.setdefault("signal", sig)
                except Exception as e:
                    _THREAD.setdefault("error", f"cannot start the lease thread: {e}")
        return str(_THREAD.get("error", ""))


def _take_lease(fd: int) -> str:
    """Take a read lease on ``fd``; "" on success, else why not (the caller maps unprotected)."""
    why = _start_thread()
    if why:
        return why
    import errno
    import fcntl

    try:
        fcntl.fcntl(fd, _F_SETSIG, int(_THREAD["signal"]))  # type: ignore[arg-type]
        fcntl.fcntl(fd, _F_SETLEASE, fcntl.F_RDLCK)
    except OSError as e:
        if e.errno == errno.EAGAIN:
            return "the file is open for writing elsewhere"
        if e.errno == errno.EACCES:
            return "the file belongs to another user (no CAP_LEASE)"
        return f"no file lease: {e.strerror or e}"
    return ""


def _register(fd: int, mm: mmap.mmap) -> "_Lease | None":
    """Direct the lease-break signal of ``fd`` at the lease thread and watch ``mm``; None on failure."""
    import fcntl
    import struct

    addr = _address(mm)
    if addr is None:
        return None
    lease = _Lease(fd, mm, addr)
    with _LOCK:
        _LEASES[id(lease)] = lease
    try:
        # F_SETLEASE made the whole process the owner; a break signalled before this line was
        # ignored, and is caught by the F_GETLEASE below.
        fcntl.fcntl(fd, _F_SETOWN_EX, struct.pack("ii", _F_OWNER_TID, int(_THREAD["tid"])))  # type: ignore[arg-type]
    except OSError:
        with _LOCK:
            _LEASES.pop(id(lease), None)
            lease.finalizer.detach()
        return None
    lease.withdraw_if_breaking()
    return lease
