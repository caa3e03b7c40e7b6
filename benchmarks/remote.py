"""Remote files (issue 27): what opening, checking and reading a model over HTTP fetches, and how fast.

``python -m benchmarks.remote [--size 1G] [--repeat 3] [--latency 0.02] [--rate 200e6]`` builds (or
reuses) the benchmark models (``benchmarks.make_models``, under /tmp/omv-bench-remote), starts the
tests' loopback range server (``tests/remote_server.py``) in its own process with ``--latency`` added
to each request and bandwidth capped at ``--rate`` bytes/s for all connections together, and measures
(median of ``--repeat``; the server's request log summed for each):

1. the first screen's open (``reader.open_deferred``, in process) of ``model.onemodel``: bytes and
   requests (target: the manifest + 1 MiB, 3 requests) and time against the same open of the local
   file plus three round trips;
2. ``--check --json model.onemodel`` (whole process) remote against local: target at most local +
   the manifest's transfer at the capped rate + four round trips;
3. bytes fetched to open ``model_inline.onnx`` (weights in ``raw_data``): target under 1% of the file;
4. the statistics of the largest tensor (the 256 MiB embedding at 1G: ``compute_stats`` of a remote
   tensor, fetched in parallel pieces): target at least 80% of the capped rate.

Nothing here asserts a time: pass/fail is printed, never raised.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request

from .make_models import ensure, parse_size
from .proc import run_proc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "tests", "remote_server.py")


class Server:
    def __init__(self, root: str, latency: float, rate: float) -> None:
        self.proc = subprocess.Popen([sys.executable, SERVER, root, "--latency", str(latency), "--rate", str(rate)],
                                     stdout=subprocess.PIPE, text=True)
        self.port = int(self.proc.stdout.readline())
        self.base = f"http://127.0.0.1:{self.port}/"

    def control(self, what: str) -> dict:
        with urllib.request.urlopen(self.base + what, timeout=30) as r:
            return json.loads(r.read())

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _median(xs):
    return statistics.median(xs) if xs else float("nan")


def first_screen(srv: Server, local: str, name: str, repeat: int) -> dict:
    from onemodel_viewer.format.reader import open_deferred

    def once(path):
        t0 = time.perf_counter()
        doc, _parsed, _finish = open_deferred(path)
        dt = time.perf_counter() - t0
        span = doc.manifest_span
        doc.close()
        return dt, span

    loc = [once(local)[0] for _ in range(repeat)]
    rem, logs = [], []
    span = None
    for _ in range(repeat):
        srv.control("_reset")
        dt, span = once(srv.base + name)
        rem.append(dt)
        logs.append(srv.control("_stats"))
    return {"local_s": _median(loc), "remote_s": _median(rem), "log": logs[-1], "manifest_end": sum(span or (0, 0))}


def check(srv: Server, local: str, name: str, repeat: int) -> dict:
    env = {"PYTHONPATH": ROOT, "PYTHONDONTWRITEBYTECODE": None, "PYTHONPYCACHEPREFIX": "/tmp/omv-remote-pycache"}
    cmd = [sys.executable, "-m", "onemodel_viewer.cli", "--check", "--json"]
    run_proc(cmd + [local], env=env)  # warm-up: byte code, page cache
    run_proc(cmd + [srv.base + name], env=env)
    loc, rem, logs = [], [], []
    for _ in range(repeat):
        loc.append(run_proc(cmd + [local], env=env).seconds)
        srv.control("_reset")
        p = run_proc(cmd + [srv.base + name], env=env)
        rem.append(p.seconds)
        logs.append(srv.control("_stats"))
        if p.rc != 0:
            print(f"--check of the URL exited {p.rc}: {p.err[-300:]}", file=sys.stderr)
    return {"local_s": _median(loc), "remote_s": _median(rem), "log": logs[-1]}


def inline_onnx(srv: Server, local: str, size: int) -> dict:
    from onemodel_viewer.format.reader import open_path

    def once(path):
        t0 = time.perf_counter()
        doc = open_path(path, "diagnose")
        dt = time.perf_counter() - t0
        problems = [(p.kind, p.where, p.offset) for p in doc.problems]
        doc.close()
        return dt, problems

    local_s, lp = once(local)
    srv.control("_reset")
    dt, rp = once(srv.base + os.path.basename(local))
    log = srv.control("_stats")
    return {"remote_s": dt, "local_s": local_s, "log": log, "fraction": log["bytes"] / size, "same": lp == rp}


def stats_of_largest(srv: Server, name: str) -> dict:
    from onemodel_viewer.analysis.stats.compute import compute_stats
    from onemodel_viewer.format.reader import open_path
    from onemodel_viewer.format.schema import all_tensors

    doc = open_path(srv.base + name, "strict")
    t = max(all_tensors(doc.model), key=lambda t: t.length)
    srv.control("_reset")
    t0 = time.perf_counter()
    compute_stats(t)
    dt = time.perf_counter() - t0
    log = srv.control("_stats")
    doc.close()
    return {"tensor": t.name, "bytes": t.length, "seconds": dt, "rate": t.length / dt, "log": log}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.remote", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.02)
    ap.add_argument("--rate", type=float, default=200e6)
    ap.add_argument("--out", default="/tmp/omv-bench-remote")
    ap.add_argument("--only", default="1234", help="which figures (default 1234)")
    a = ap.parse_args(argv)
    sys.path.insert(0, ROOT)
    summary = ensure(parse_size(a.size), a.out)
    srv = Server(summary["dir"], a.latency, a.rate)
    try:
        figures(a, summary, srv)
    finally:
        srv.close()
    return 0


def figures(a, summary: dict, srv: Server) -> None:
    folder, rtt = summary["dir"], a.latency
    om = os.path.join(folder, "model.onemodel")
    r1 = first_screen(srv, om, "model.onemodel", a.repeat) if set("12") & set(a.only) else None
    if "1" in a.only:
        budget_b = r1["manifest_end"] + (1 << 20)
        target1 = r1["local_s"] + 3 * rtt
        print(f"1. first screen of model.onemodel ({os.path.getsize(om):,} bytes, manifest ends at {r1['manifest_end']:,}): "
              f"remote {r1['remote_s']:.3f} s, local {r1['local_s']:.3f} s (+3 RTT = {target1:.3f} s) "
              f"{'PASS' if r1['remote_s'] <= target1 else 'MISS'}; server: {r1['log']['requests']} requests, "
              f"{r1['log']['bytes']:,} bytes (budget 3, {budget_b:,}) "
              f"{'PASS' if r1['log']['requests'] <= 3 and r1['log']['bytes'] <= budget_b else 'MISS'}", flush=True)
    if "2" in a.only:
        r2 = check(srv, om, "model.onemodel", max(a.repeat, 3))
        target2 = r2["local_s"] + r1["manifest_end"] / a.rate + 4 * rtt
        print(f"2. --check --json: remote {r2['remote_s']:.3f} s, local {r2['local_s']:.3f} s, target {target2:.3f} s "
              f"{'PASS' if r2['remote_s'] <= target2 else 'MISS'}; server: {r2['log']['requests']} requests, "
              f"{r2['log']['bytes']:,} bytes", flush=True)
    if "3" in a.only and summary.get("onnx_inline"):
        size = os.path.getsize(summary["onnx_inline"])
        r3 = inline_onnx(srv, summary["onnx_inline"], size)
        print(f"3. open model_inline.onnx ({size:,} bytes): {r3['log']['bytes']:,} bytes fetched = "
              f"{100 * r3['fraction']:.3f}% {'PASS' if r3['fraction'] < 0.01 else 'MISS'} (target < 1%), "
              f"{r3['log']['requests']} requests, {r3['remote_s']:.2f} s (local {r3['local_s']:.2f} s + "
              f"{r3['log']['requests']} x {rtt * 1000:.0f} ms = {r3['local_s'] + r3['log']['requests'] * rtt:.2f} s), "
              f"same problems: {r3['same']}", flush=True)
    if "4" in a.only:
        r4 = stats_of_largest(srv, "model.onemodel")
        print(f"4. statistics of {r4['tensor']} ({r4['bytes']:,} bytes): {r4['seconds']:.2f} s = "
              f"{r4['rate'] / 1e6:.0f} MB/s of {a.rate / 1e6:.0f} MB/s ({100 * r4['rate'] / a.rate:.0f}%) "
              f"{'PASS' if r4['rate'] >= 0.8 * a.rate else 'MISS'} (target >= 80%); server: {r4['log']['requests']} "
              f"requests, {r4['log']['bytes']:,} bytes", flush=True)


if __name__ == "__main__":
    sys.exit(main())
