"""Run a command and measure it: wall time, exit status, peak RSS. Stdlib only (no numpy).

Peak RSS comes from ``os.wait4`` (``ru_maxrss``). Linux records at ``execve`` the
high-water RSS of the address space being replaced, and ``subprocess`` starts children
with ``vfork``: the parent's own RSS at that moment would show up as the child's peak.
So children are started by a small *launcher* process (this module run as a script,
started before the benchmark process grows), and ``ru_maxrss`` is the child's own
(plus at most the launcher's ~10 MiB). ``anon`` is the peak ``RssAnon`` sampled from
``/proc/<pid>/status`` every 10 ms.
"""

from __future__ import annotations

import fcntl
import json
import os
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
from dataclasses import asdict, dataclass


@dataclass
class Proc:
    seconds: float
    rc: int
    maxrss: int
    """Peak RSS in bytes (ru_maxrss)."""
    anon: int
    """Peak RssAnon in bytes (sampled)."""
    out: str
    err: str


# ---------------------------------------------------------------------------- process runner


def _status_kib(pid: int, field: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0



def open_pty(rows: int = 40, cols: int = 120) -> tuple[int, int]:
    """A pty pair (master, slave) whose window is ``cols`` x ``rows``: the viewer sizes itself to it."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    return master, slave

def read_pty(master: int, on_data) -> threading.Thread:
    """A started daemon thread passing each chunk read from ``master`` to ``on_data`` until the pty closes."""

    def drain() -> None:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            on_data(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    return reader


def run_proc(cmd: list[str], *, env: dict | None = None, tty: bool = False, timeout: float = 900) -> Proc:
    """Run ``cmd`` to completion: wall time, exit code, peak RSS (rusage) and sampled peak anon RSS."""
    full_env = dict(os.environ)
    for key, value in (env or {}).items():  # None removes a variable
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    out_f = tempfile.TemporaryFile()
    err_f = tempfile.TemporaryFile()
    master = slave = None
    chunks: list[bytes] = []
    if tty:
        master, slave = open_pty()
        full_env.setdefault("TERM", "xterm-256color")
        full_env.pop("COLUMNS", None)
        full_env.pop("LINES", None)
    t0 = time.perf_counter()
    if tty:
        p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=full_env, start_new_session=True)
        os.close(slave)

        reader = read_pty(master, chunks.append)
    else:
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out_f, stderr=err_f, env=full_env)
    peak_anon = [0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak_anon[0] = max(peak_anon[0], _status_kib(p.pid, "RssAnon"))
            done.wait(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    killer = threading.Timer(timeout, lambda: p.kill())
    killer.start()
    try:
        _, status, ru = os.wait4(p.pid, 0)
    finally:
        killer.cancel()
        done.set()
    seconds = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    sampler.join()
    out = err = ""
    if tty:
        reader.join(timeout=2)
        os.close(master)
        out = b"".join(chunks).decode("utf-8", "replace")
    else:
        out_f.seek(0)
        err_f.seek(0)
        out = out_f.read().decode("utf-8", "replace")
        err = err_f.read().decode("utf-8", "replace")
    out_f.close()
    err_f.close()
    return Proc(seconds, p.returncode, ru.ru_maxrss * 1024, peak_anon[0] * 1024, out, err)


class Launcher:
    """A long-lived small process that runs commands for us (see the module docstring)."""

    def __init__(self) -> None:
        self.p = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--serve"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)

    def run(self, cmd: list[str], *, env: dict | None = None, tty: bool = False, timeout: float = 900) -> Proc:
        assert self.p.stdin is not None and self.p.stdout is not None
        self.p.stdin.write(json.dumps({"cmd": cmd, "env": env, "tty": tty, "timeout": timeout}) + "\n")
        self.p.stdin.flush()
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("launcher died")
        return Proc(**json.loads(line))

    def close(self) -> None:
        if self.p.stdin is not None:
            self.p.stdin.close()
        self.p.wait(timeout=10)


def serve() -> None:
    for line in sys.stdin:
        req = json.loads(line)
        try:
            r = run_proc(req["cmd"], env=req["env"], tty=req["tty"], timeout=req["timeout"])
        except OSError as e:
            r = Proc(0.0, 127, 0, 0, "", f"cannot run: {e}")
        sys.stdout.write(json.dumps(asdict(r)) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    if sys.argv[1:] == ["--serve"]:
        serve()
