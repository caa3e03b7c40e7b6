"""One long-lived Python child process that runs named functions on bytes, talking by pipe. No UI here.

Work that holds the GIL for long (onnx's C++ shape inference: ~0.3 s on 10^4 nodes) would
stop every thread of the viewer, the UI's included; in a child it stops nothing. Starting a
child per request costs its start and imports (~0.5 s), so :class:`HelperProcess` starts one
child (on the first :meth:`~HelperProcess.call`, or earlier with :meth:`~HelperProcess.start`)
and reuses it.

A request names a function as ``"package.module:function"``; the child imports it (once) and
calls it with the request's bytes; it must return bytes. One request at a time per helper
(a lock); ``call`` raises :class:`HelperError` when the function raised (its last line), when
the child died, or when the request was cancelled (the child is then killed, and the next call
starts a new one).

No orphans: the child exits when its stdin reaches end of file, that is when :meth:`close`
closes it, at interpreter exit (``atexit``) or when the parent dies in any way (the kernel
closes the pipe). A child busy with a request finishes it first. It runs in its own session
(a Ctrl+C meant for the viewer does not reach it) with stderr to /dev/null (it would draw over
the viewer's screen).

Frames: request ``u32 len, name, u64 len, payload``; reply ``u8 ok, u64 len, result or error``
(little endian).
"""

from __future__ import annotations

import atexit
import importlib
import os
import select
import struct
import subprocess
import sys
import threading
import weakref
from pathlib import Path

__all__ = ["HelperError", "HelperProcess", "serve"]

_HEAD = struct.Struct("<BQ")
_PACKAGE_ROOT = str(Path(__file__).resolve().parent.parent)
_CHILD = (f"import os, sys; sys.path.insert(0, {_PACKAGE_ROOT!r}); from onemodel_viewer.helper_process import serve; "
          "int(sys.argv[1]) and os.nice(int(sys.argv[1])); serve(sys.argv[2:])")


class HelperError(RuntimeError):
    """A request failed: the function raised (its message), the child died, or it was cancelled."""


class HelperProcess:
    """A reusable child process for :meth:`call` (thread-safe, one request at a time)."""

    def __init__(self, preload: tuple[str, ...] = (), *, nice: int = 0, restart: bool = True) -> None:
        self.preload = preload
        """Modules the child imports as soon as it starts (while the parent goes on)."""
        self.nice = nice
        """Added to the child's nice value (its CPU priority lowered: background work for the viewer)."""
        self.restart = restart
        """A request after the child ended starts a new one (False: it raises :class:`HelperError`)."""
        self._proc: subprocess.Popen | None = None
        self._started = False
        self._lock = threading.Lock()
        self._closed = False
        atexit.register(_close_ref, weakref.ref(self))

    @property
    def pid(self) -> int | None:
        """The running child's pid (None before it starts or after it ended)."""
        p = self._proc
        return p.pid if p is not None and p.poll() is None else None

    def start(self) -> None:
        """Start the child now, without waiting for it (its first request waits for the preloads)."""
        with self._lock:
            self._ensure()

    def call(self, function: str, payload: bytes, cancel: threading.Event | None = None) -> bytes:
        """``function(payload)`` in the child; ``cancel`` set meanwhile kills the child and raises."""
        name = function.encode()
        with self._lock:
            proc = self._ensure()
            try:
                proc.stdin.write(struct.pack("<I", len(name)) + name + struct.pack("<Q", len(payload)))
                proc.stdin.write(payload)
                proc.stdin.flush()
                ok, n = _HEAD.unpack(self._read(proc, _HEAD.size, cancel))
                body = self._read(proc, n, cancel)
            except HelperError:
                self._kill()
                raise
            except OSError as e:  # the child died under us
                self._kill()
                raise HelperError(f"the helper process ended ({e})") from e
        if not ok:
            raise HelperError(body.decode("utf-8", "replace"))
        return body

    def close(self) -> None:
        """End the child (end of file on its stdin, killed if it does not go within a second)."""
        with self._lock:
            self._closed = True
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.stdin.close()
            proc.wait(timeout=1)
        except (OSError, subprocess.TimeoutExpired):
            proc.kill()
            proc.wait()
        finally:
            proc.stdout.close()

    # ------------------------------------------------------------------ internals
    def _ensure(self) -> subprocess.Popen:
        if self._closed:
            raise HelperError("the helper process is closed")
        if self._proc is None or self._proc.poll() is not None:
            if self._started and not self.restart:
                raise HelperError("the helper process ended")
            self._started = True
            self._proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(self.nice), *self.preload], stdin=subprocess.PIPE,
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                          start_new_session=True, close_fds=True)
        return self._proc

    def _read(self, proc: subprocess.Popen, n: int, cancel: threading.Event | None) -> bytes:
        fd = proc.stdout.fileno()
        chunks, left = [], n
        while left:
            if cancel is not None:
                while not select.select([fd], [], [], 0.05)[0]:
                    if cancel.is_set():
                        raise HelperError("cancelled")
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise HelperError(f"the helper process ended (status {proc.wait()})")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.kill()
            proc.wait()
            proc.stdin.close()
            proc.stdout.close()


def _close_ref(ref: weakref.ref) -> None:
    helper = ref()
    if helper is not None:
        helper.close()


def _read_exact(f, n: int) -> bytes | None:
    data = f.read(n)
    return data if len(data) == n else None


def serve(preload: list[str]) -> None:
    """The child's loop: import ``preload``, then read a request, run it, write the reply; return at end of file."""
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # a stray print must not corrupt the frames
    for module in preload:
        try:
            importlib.import_module(module)
        except Exception:  # the request naming it will say why
            pass
    functions: dict[str, object] = {}
    while True:
        head = _read_exact(stdin, 4)
        if head is None:
            return
        name = _read_exact(stdin, struct.unpack("<I", head)[0])
        size = _read_exact(stdin, 8)
        payload = _read_exact(stdin, struct.unpack("<Q", size)[0]) if size is not None else None
        if name is None or payload is None:
            return
        try:
            fn = functions.get(name.decode())
            if fn is None:
                module, _, attr = name.decode().partition(":")
                fn = functions[name.decode()] = getattr(importlib.import_module(module), attr)
            out, ok = bytes(fn(payload)), 1
        except BaseException as e:  # the parent gets the message; the child stays up for the next request
            out, ok = f"{type(e).__name__}: {e}".encode("utf-8", "replace"), 0
        try:
            stdout.write(_HEAD.pack(ok, len(out)))
            stdout.write(out)
            stdout.flush()
        except OSError:  # the parent is gone
            return
