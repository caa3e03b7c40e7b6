"""Key latency in a pty: time from a key press to the screen update it causes, while background work runs.

``python -m benchmarks.key_latency FILE [--keys 40] [--repeat 1]`` runs the installed
``onemodel-view FILE`` and the minimal Textual tree app (``minimal_tree_app.py --stay``, the
baseline) in a 120x40 pty, alternating, and prints for each the time to the first screen and
the max / p95 / median key latency.

How: a reader thread timestamps every chunk the app writes to the pty. The first screen is the
first frame drawn (the first output chunk of more than 1 KiB after the start-up escape
sequences; the complete-screen figure with the app's exit hook is ``run.py``'s). Then, starting
at once (the viewer starts its background work, the search index and the byte-level findings,
as soon as its first screen is drawn), keys are sent one at a time: wait until the output has
been quiet for ``QUIET`` seconds (so the next bytes are the answer to this key, not the end of
an earlier frame), write the key, and the latency is the time from that write to the next output
bytes (the cursor moved: the tree row and the detail pane are redrawn). Keys alternate down and
up arrow, so the cursor always moves (it starts on the first row). A key with no answer within
``TIMEOUT`` counts as ``TIMEOUT``. Whether the app was busy with background work when a key was
sent is read from its CPU time (``/proc/<pid>/stat``) over the interval before the key: more
than half a core busy counts as "background work running". Keys go on for at least ``--keys``
and, for the viewer, until the app has been idle for ``IDLE_KEYS`` keys in a row (background
work done) or ``--max-seconds`` have passed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field

from .proc import open_pty, read_pty

HERE = os.path.dirname(os.path.abspath(__file__))
QUIET = 0.05
TIMEOUT = 5.0
IDLE_KEYS = 5
KEYS = (b"\x1b[B", b"\x1b[A")
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Latency:
    first_screen: float | None = None
    latencies: list[float] = field(default_factory=list)
    busy: list[bool] = field(default_factory=list)
    timeouts: int = 0
    rc: int | None = None
    note: str = ""

    def stat(self, which: str = "all") -> dict:
        xs = [x for x, b in zip(self.latencies, self.busy) if b or which == "all"]
        if not xs:
            return {"n": 0, "max": None, "p95": None, "median": None}
        s = sorted(xs)
        p95 = s[min(len(s) - 1, max(0, int(round(0.95 * len(s))) - 1))]
        return {"n": len(s), "max": s[-1], "p95": p95, "median": statistics.median(s)}


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0


def measure(cmd: list[str], *, keys: int = 40, max_seconds: float = 60.0, interval: float = 0.1,
            until_idle: bool = True, startup_timeout: float = 120.0, env: dict | None = None) -> Latency:
    """Run ``cmd`` in a 120x40 pty and measure its key latency (see the module docstring)."""
    master, slave = open_pty()
    full_env = dict(os.environ, TERM="xterm-256color")
    full_env.pop("COLUMNS", None)
    full_env.pop("LINES", None)
    full_env.pop("ONEMODEL_VIEW_EXIT_AFTER_FIRST_SCREEN", None)
    for key, value in (env or {}).items():  # None removes a variable
        if value is None:
            full_env.pop(key, None)
        else:
            full_env[key] = value
    lock = threading.Condition()
    last_out = [0.0]
    count = [0]
    stamps: list[float] = []
    first_frame: list[float] = []
    res = Latency()
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=full_env, start_new_session=True)
    os.close(slave)

    def on_data(data: bytes) -> None:
        now = time.perf_counter()
        with lock:
            last_out[0] = now
            count[0] += 1
            stamps.append(now)
            if not first_frame and len(data) > 1024:
                first_frame.append(now)
            lock.notify_all()

    reader = read_pty(master, on_data)
    try:
        with lock:
            lock.wait_for(lambda: bool(first_frame) or p.poll() is not None, timeout=startup_timeout)
        if not first_frame:
            res.note = "no first screen" + (f" (exit status {p.poll()})" if p.poll() is not None else " (timeout)")
            return res
        res.first_screen = first_frame[0] - t0
        start = time.perf_counter()
        cpu_prev, t_prev = _cpu_seconds(p.pid), time.perf_counter()
        idle_run = 0
        i = 0
        while p.poll() is None:
            n_keys = len(res.latencies)
            elapsed = time.perf_counter() - start
            if n_keys >= keys and (not until_idle or idle_run >= IDLE_KEYS or elapsed > max_seconds):
                break
            if elapsed > max_seconds and n_keys >= 3:
                break
            # quiet: no output for QUIET seconds (at most 2 s of waiting: then the key goes anyway)
            deadline = time.perf_counter() + 2.0
            while True:
                with lock:
                    quiet_for = time.perf_counter() - last_out[0]
                if quiet_for >= QUIET or time.perf_counter() > deadline:
                    break
                time.sleep(QUIET - quiet_for if quiet_for < QUIET else 0.005)
            cpu_now, t_now = _cpu_seconds(p.pid), time.perf_counter()
            busy = (cpu_now - cpu_prev) / max(1e-6, t_now - t_prev) > 0.5
            with lock:
                seen = count[0]
            tw = time.perf_counter()
            os.write(master, KEYS[i % 2])
            i += 1
            with lock:
                got = lock.wait_for(lambda: count[0] > seen, timeout=TIMEOUT)
                t_ans = stamps[seen] if got else None  # the first chunk after the key
            if t_ans is None:
                res.timeouts += 1
                lat = TIMEOUT
            else:
                lat = t_ans - tw
            res.latencies.append(lat)
            res.busy.append(busy)
            idle_run = 0 if busy else idle_run + 1
            time.sleep(interval)
            cpu_prev, t_prev = cpu_now, t_now
    finally:
        try:
            os.write(master, b"q")
            p.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            p.kill()
            p.wait()
        res.rc = p.returncode
        reader.join(timeout=2)
        os.close(master)
    return res


def fmt_ms(s: float | None) -> str:
    return "n/a" if s is None else f"{s * 1000:.0f} ms"


def summary(r: Latency) -> str:
    a, b = r.stat("all"), r.stat("busy")
    return (f"first screen {fmt_ms(r.first_screen)}; {a['n']} keys: max {fmt_ms(a['max'])}, p95 {fmt_ms(a['p95'])}, "
            f"median {fmt_ms(a['median'])}; {b['n']} while busy: max {fmt_ms(b['max'])}, p95 {fmt_ms(b['p95'])}"
            + (f"; {r.timeouts} without an answer in {TIMEOUT:.0f} s" if r.timeouts else "") + (f"; {r.note}" if r.note else ""))


def minimal_cmd() -> list[str]:
    return [sys.executable, os.path.join(HERE, "minimal_tree_app.py"), "--stay"]


def main(argv: list[str] | None = None) -> int:
    from .run import ov_cmd

    ap = argparse.ArgumentParser(prog="python -m benchmarks.key_latency", description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--keys", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    args = ap.parse_args(argv)
    for _ in range(args.repeat):
        r = measure([*ov_cmd(), args.file], keys=args.keys, max_seconds=args.max_seconds)
        print("viewer :", summary(r))
        b = measure(minimal_cmd(), keys=args.keys, until_idle=False)
        print("minimal:", summary(b))
    return 0


if __name__ == "__main__":
    sys.exit(main())
