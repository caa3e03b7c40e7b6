"""Manifest look-ups in a child process, for the viewer's big manifests (:class:`LocateChild`).

Finding a record's manifest bytes (the hex pane's highlight) decodes the whole manifest and walks
it (:class:`~onemodel_viewer.format.manifest_locate.Locator`). In the viewer's process that held
the interpreter from the UI thread: on a 139 MB manifest (10^6 nodes) the copy and the decode
alone took 0.3-4 s, and the walks ran as a third busy thread beside the background job. A child
process has its own interpreter (and the machine's other core): the viewer's look-up thread only
waits on a pipe.

Protocol, one JSON value a line: the parent writes a ``where`` path, the child answers
``[start, end]`` (byte offsets in the manifest) or ``null``. The child reads the manifest bytes
itself (``path``, ``offset``, ``length``) and ends at the end of its input (the parent closed
the pipe or exited). Run as ``python -m onemodel_viewer.tui.locate_child PATH OFFSET LENGTH UNIQUE``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading

__all__ = ["LocateChild"]


class LocateChild:
    """One child process answering look-ups in one manifest (thread-safe: one look-up at a time)."""

    def __init__(self, path: str, offset: int, length: int, unique_keys: bool) -> None:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = subprocess.Popen(
            [sys.executable, "-m", "onemodel_viewer.tui.locate_child", path, str(offset), str(length),
             "1" if unique_keys else "0"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, close_fds=True)

    def span(self, where: str) -> tuple[int, int] | None:
        """``(start, end)`` of ``where`` in the manifest, None when there is none or the child is gone."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.stdout is None:
                return None
            try:
                proc.stdin.write(json.dumps(where).encode() + b"\n")
                proc.stdin.flush()
                line = proc.stdout.readline()  # waits without the interpreter
                answer = json.loads(line) if line else None
            except (OSError, ValueError):
                answer = None
                line = b""
            if not line:  # the child ended (killed, or a bug): no more look-ups
                self._close_locked()
                return None
        if isinstance(answer, list) and len(answer) == 2 and all(type(x) is int for x in answer):
            return answer[0], answer[1]
        return None

    def close(self) -> None:
        """End the child (a look-up under way in it is given up)."""
        proc = self._proc
        if proc is not None:
            try:
                proc.kill()  # before the lock: a look-up may be waiting on it
            except OSError:
                pass
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            proc.kill()
            proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            pass
        for f in (proc.stdin, proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass


def _serve(path: str, offset: int, length: int, unique_keys: bool) -> None:
    from ..format.manifest_locate import Locator

    with open(path, "rb") as f:
        f.seek(offset)
        data = f.read(length)
    locator = Locator(data, unique_keys=unique_keys)
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            where = json.loads(line)
            found = locator.nearest(where) if isinstance(where, str) else None
        except Exception:  # a hostile manifest or path: no answer, never a crash
            found = None
        out.write(json.dumps([found[0], found[1]] if found else None).encode() + b"\n")
        out.flush()


if __name__ == "__main__":
    try:
        _serve(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1")
    except (KeyboardInterrupt, BrokenPipeError):
        pass
