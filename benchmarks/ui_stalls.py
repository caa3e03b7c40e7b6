"""What holds the viewer's interpreter: stalls of the UI process and GC pauses, while keys are sent.

``python -m benchmarks.ui_stalls FILE [--keys 40] [--top 15]`` runs the viewer on FILE in a 120x40
pty under the key-latency driver (:mod:`benchmarks.key_latency`: down/up keys, one at a time, from
the first frame on, until the viewer is idle) with two probes inside the viewer's process:

* a watchdog thread that sleeps 2 ms at a time: a wake-up later than 50 ms means no thread of
  the process could get the interpreter (or the machine did not run it) for that long; the stacks
  of the other threads at that moment say who held it;
* ``gc.callbacks``: every collection of more than 10 ms, with its generation.

It prints the key latencies, then the longest stalls with the stacks and the GC pauses. A
diagnosis, not a figure of the table: the probes themselves take a little of the interpreter.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import tempfile
import threading
import time
import traceback

REPORT_ENV = "OMV_UI_STALLS_REPORT"
STALL = 0.05
GC_PAUSE = 0.01


def _child(path: str) -> int:
    """Inside the viewer's process: the probes, then the viewer; the report is written at the end."""
    t0 = time.perf_counter()
    gcs: list[list] = []
    stalls: list[list] = []
    started = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            started[0] = time.perf_counter()
        elif time.perf_counter() - started[0] > GC_PAUSE:
            gcs.append([round(started[0] - t0, 3), info["generation"], round(time.perf_counter() - started[0], 4)])

    def watchdog() -> None:
        me = threading.get_ident()
        last = time.perf_counter()
        while True:
            time.sleep(0.002)
            now = time.perf_counter()
            if now - last > STALL:
                stacks = []
                for tid, frame in sys._current_frames().items():
                    if tid != me:
                        st = traceback.extract_stack(frame, limit=6)
                        stacks.append(" <- ".join(f"{os.path.basename(s.filename)}:{s.lineno}:{s.name}"
                                                  for s in reversed(st)))
                stalls.append([round(now - t0, 3), round(now - last, 4), stacks])
            last = now

    gc.callbacks.append(on_gc)
    threading.Thread(target=watchdog, daemon=True).start()
    from onemodel_viewer.tui.app import run_viewer

    try:
        return run_viewer(path)
    finally:
        with open(os.environ[REPORT_ENV], "w") as f:
            json.dump({"gc": gcs, "stalls": stalls}, f)


def main(argv: list[str] | None = None) -> int:
    from . import key_latency as kl

    ap = argparse.ArgumentParser(prog="python -m benchmarks.ui_stalls", description=__doc__.split("\n\n")[0])
    ap.add_argument("file")
    ap.add_argument("--keys", type=int, default=40)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--top", type=int, default=15, help="stalls listed (longest first)")
    args = ap.parse_args(argv)
    fd, report = tempfile.mkstemp(prefix="omv-ui-stalls-", suffix=".json")
    os.close(fd)
    try:
        here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        env = {REPORT_ENV: report, "PYTHONPATH": os.pathsep.join(p for p in (os.environ.get("PYTHONPATH"), here) if p)}
        r = kl.measure([sys.executable, "-m", "benchmarks.ui_stalls", "--child", args.file], keys=args.keys,
                       max_seconds=args.max_seconds, env=env)
        print("keys:", kl.summary(r))
        try:
            with open(report) as f:
                got = json.load(f)
        except (OSError, ValueError):
            print("no report from the viewer's process (did it start?)")
            return 1
    finally:
        os.unlink(report)
    first = r.first_screen or 0.0
    print(f"stalls over {STALL * 1000:.0f} ms: {len(got['stalls'])}; "
          f"{sum(1 for s in got['stalls'] if s[0] > first)} after the first frame (~{first:.1f} s)")
    for t, d, stacks in sorted(got["stalls"], key=lambda s: -s[1])[:args.top]:
        print(f"  t={t:7.2f} s  {d * 1000:6.0f} ms")
        for s in stacks:
            if "select" not in s.split(" <- ", 1)[0] and "wait" not in s.split(" <- ", 1)[0]:
                print(f"      {s}")
    print(f"GC pauses over {GC_PAUSE * 1000:.0f} ms: {len(got['gc'])}, "
          f"{sum(g[2] for g in got['gc']):.2f} s in all; longest:")
    for t, gen, d in sorted(got["gc"], key=lambda g: -g[2])[:5]:
        print(f"  t={t:7.2f} s  generation {gen}  {d * 1000:.0f} ms")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        sys.exit(_child(sys.argv[2]))
    sys.exit(main())
