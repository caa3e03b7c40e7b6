"""The benchmark suite: ``python -m benchmarks [--size 4G] [--repeat 3] [--markdown PATH]``.

Every figure is measured ``--repeat`` times (whole-process figures at least 5) and the
median is reported, next to a baseline measured the same way in the same run, on a warm
page cache. Peak RSS of a child process comes from ``os.wait4`` (``ru_maxrss``: every page
the process touched, file-backed mapped pages included), children being started by a
small launcher process (see :mod:`benchmarks.proc` for why); "anon" is the peak of
``RssAnon`` sampled from ``/proc/<pid>/status`` every 10 ms (memory the process allocated,
not page cache it mapped). Nothing here asserts a time: pass/fail is printed, never raised.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import statistics
import struct
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Callable

from . import make_models
from .proc import Launcher, Proc

_launcher: Launcher | None = None


# Byte-code caching, the same for both sides of every process comparison. The environment these
# benchmarks run in may set PYTHONDONTWRITEBYTECODE=1: then no .pyc is ever written and every
# process recompiles every module it imports from source, which a real install (pip writes and
# uses .pyc) never does. That penalises the project side (dozens of modules) far more than a bare
# `python -c` baseline. So every child gets bytecode writing back, into a private cache
# (PYTHONPYCACHEPREFIX: nothing is written next to the sources); the warm-up run fills it.
# A value of None removes the variable (see proc.run_proc).
PYC_ENV: dict = {
    "PYTHONDONTWRITEBYTECODE": None,
    "PYTHONPYCACHEPREFIX": os.path.join(tempfile.gettempdir(), "omv-bench-pyc"),
}


def run_proc(cmd: list[str], **kw) -> Proc:
    """Run through the launcher (started in :func:`main`), else directly; with :data:`PYC_ENV`."""
    kw["env"] = {**PYC_ENV, **(kw.get("env") or {})}
    if _launcher is not None:
        return _launcher.run(cmd, **kw)
    from .proc import run_proc as direct

    return direct(cmd, **kw)

HERE = os.path.dirname(os.path.abspath(__file__))
EXIT_ENV = "ONEMODEL_VIEW_EXIT_AFTER_FIRST_SCREEN"
MIB = 1 << 20


@dataclass
class Row:
    figure: str
    project: str = "n/a"
    baseline: str = "n/a"
    ratio: str = ""
    target: str = ""
    ok: bool | None = None
    rss: str = ""
    note: str = ""

    @property
    def verdict(self) -> str:
        return "n/a" if self.ok is None else ("pass" if self.ok else "FAIL")


def median_pair(cmd: list[str], base: list[str], repeat: int, *, base_kw: dict | None = None,
                check: Callable[[Proc], str] | None = None, base_check: Callable[[Proc], str] | None = None,
                **kw) -> tuple[tuple[float, Proc], tuple[float, Proc]]:
    """:func:`median_proc` of ``cmd`` and of the baseline ``base``, their runs alternating.

    A burst of load on this shared machine then slows both sides, not just the one that was
    running: the ratio is what the targets are about. ``check(proc)`` says what is wrong with a
    run's result ('' when nothing): the run returned is then the first one it rejects (a crashed
    run must not pass as a fast one), else the one with the largest peak RSS.
    """
    bkw = kw if base_kw is None else base_kw
    if repeat > 1:
        run_proc(cmd, **kw)
        run_proc(base, **bkw)
    runs, bruns = [], []
    for _ in range(repeat):
        runs.append(run_proc(cmd, **kw))
        bruns.append(run_proc(base, **bkw))

    def pick(rs: list[Proc], ok: Callable[[Proc], str] | None) -> tuple[float, Proc]:
        bad = [r for r in rs if ok is not None and ok(r)]
        return statistics.median(r.seconds for r in rs), bad[0] if bad else max(rs, key=lambda r: r.maxrss)

    return pick(runs, check), pick(bruns, base_check)


def median_proc(cmd: list[str], repeat: int, **kw) -> tuple[float, Proc]:
    """Median wall time over ``repeat`` runs (after one warm-up run); the last run's details."""
    if repeat > 1:
        run_proc(cmd, **kw)
    runs = [run_proc(cmd, **kw) for _ in range(repeat)]
    return statistics.median(r.seconds for r in runs), max(runs, key=lambda r: r.maxrss)


def median_call(fn: Callable[[], object], repeat: int, warmup: int = 1, clock: Callable[[], float] = time.perf_counter) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def kernels_state() -> str:
    """Whether the compiled kernels run (``ONEMODEL_VIEW_NO_KERNELS`` set: the numpy code)."""
    try:
        from onemodel_viewer import kernels
    except ImportError:  # a tree from before them (a before/after run)
        return "none (before issue 28)"
    return "compiled" if kernels.KERNELS is not None else "numpy fallback"


def ov_cmd() -> list[str]:
    # The console script installed next to this interpreter, like the baselines' sys.executable:
    # a PATH lookup may find a version-manager shim (pyenv's is a bash script that runs
    # `pyenv exec`: ~20 ms more per process, charged to the project side only).
    exe = os.path.join(os.path.dirname(sys.executable), "onemodel-view")
    if not os.access(exe, os.X_OK):
        exe = shutil.which("onemodel-view")
    return [exe] if exe else [sys.executable, "-m", "onemodel_viewer"]


# ---------------------------------------------------------------------------- formatting


def fmt_s(s: float | None) -> str:
    if s is None:
        return "n/a"
    if s < 1:
        return f"{s * 1000:.1f} ms"
    return f"{s:.2f} s"


def fmt_b(n: int | None) -> str:
    return "n/a" if not n else f"{n / MIB:.0f} MiB"


def fmt_rss(p: Proc) -> str:
    return f"{fmt_b(p.maxrss)} (anon {fmt_b(p.anon)})"


def ratio_row(figure: str, project: float | None, baseline: float | None, limit: float, target: str, **kw) -> Row:
    if project is None or baseline is None or baseline <= 0:
        return Row(figure, fmt_s(project), fmt_s(baseline), "", target, None, **kw)
    r = project / baseline
    return Row(figure, fmt_s(project), fmt_s(baseline), f"{r:.2f}x", target, r <= limit, **kw)


def machine_info() -> list[str]:
    cpu = platform.processor() or "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover
        cores = os.cpu_count() or 0
    import numpy

    versions = [f"python {platform.python_version()}", f"numpy {numpy.__version__}"]
    for mod in ("onnx", "textual", "ml_dtypes"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001 - informational only
            pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            mem = f"{int(f.readline().split()[1]) / (1 << 20):.0f} GiB RAM"
    except OSError:
        pass
    return [f"CPU: {cpu}, {cores} cores usable ({os.cpu_count()} online), {mem}",
            ", ".join(versions) + f", {platform.system()} {platform.release()}"]


def render_text(rows: list[Row]) -> str:
    head = ("figure", "project", "baseline", "ratio", "target", "result", "peak RSS")
    data = [(r.figure, r.project, r.baseline, r.ratio, r.target, r.verdict, r.rss) for r in rows]
    widths = [max(len(h), *(len(d[i]) for d in data)) for i, h in enumerate(head)]
    line = lambda cells: "  ".join(c.ljust(w) for c, w in zip(cells, widths)).rstrip()  # noqa: E731
    out = [line(head), line(tuple("-" * w for w in widths))]
    out += [line(d) for d in data]
    notes = [f"  * {r.figure}: {r.note}" for r in rows if r.note]
    return "\n".join(out + ([""] + notes if notes else []))


def render_markdown(rows: list[Row], header: list[str]) -> str:
    out = [*(f"{h}  " for h in header), *([""] if header else []),
           "| figure | project | baseline | ratio | target | result | peak RSS |",
           "|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [r.figure, r.project, r.baseline, r.ratio, r.target, r.verdict, r.rss]
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    notes = [f"* {r.figure}: {r.note}" for r in rows if r.note]
    return "\n".join(out + ([""] + notes if notes else [])) + "\n"


# ---------------------------------------------------------------------------- figures

BARE_READ = r"""
import json, struct, sys
with open(sys.argv[1], "rb") as f:
    h = f.read(64)
    off, length = struct.unpack_from("<QQ", h, 16)
    f.seek(off)
    m = json.loads(f.read(length))
print(len(m["graph"]["nodes"]))
"""

XOR_READ = r"""
import mmap, struct, sys
import numpy as np
with open(sys.argv[1], "rb") as f:
    h = f.read(64)
    off, length = struct.unpack_from("<QQ", h, 32)  # data region offset and length
    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
acc = np.uint64(0)
CH = 8 << 20
for s in range(off, off + length - 7, CH):
    acc ^= np.bitwise_xor.reduce(np.frombuffer(m, dtype=np.uint64, count=min(CH, off + length - s) // 8, offset=s))
print(int(acc))
"""
"""Reads every byte of a .onemodel's data region once (uint64 XOR in 8 MiB chunks): the floor of a pass over the weights."""

COMPARE = r"""
import json, mmap, sys
import numpy as np
pairs = json.load(open(sys.argv[1]))
maps = {}
def view(path, off, n):
    if path not in maps:
        f = open(path, "rb")
        maps[path] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return np.frombuffer(maps[path], dtype=np.uint8, count=n, offset=off)
equal = True
CH = 8 << 20
for pa, oa, pb, ob, n in pairs:
    a, b = view(pa, oa, n), view(pb, ob, n)
    for s in range(0, n, CH):
        x, y = a[s:s + CH], b[s:s + CH]
        k = x.size // 8 * 8
        if not (np.array_equal(x[:k].view(np.uint64), y[:k].view(np.uint64)) and np.array_equal(x[k:], y[k:])):
            equal = False
print("equal" if equal else "different")
"""


def diff_says(rc: int) -> Callable[[Proc], str]:
    """A check of a ``--diff --json`` run: exit status ``rc`` (0 equal, 1 different) and JSON that says so."""

    def check(p: Proc) -> str:
        if p.rc != rc:
            return f"exit status {p.rc}, want {rc}: {(p.err or p.out)[-200:]}"
        try:
            equal = json.loads(p.out).get("equal")
        except (ValueError, AttributeError):
            return f"no JSON result: {(p.err or p.out)[-200:]}"
        return "" if equal is (rc == 0) else f"JSON says equal={equal!r} with exit status {p.rc}"

    return check


class Suite:
    def __init__(self, summary: dict, repeat: int, work: str, log: Callable[[str], None], min_proc: int = 5) -> None:
        self.s = summary
        self.min_proc = min_proc
        self.repeat = repeat
        self.work = work
        self.log = log
        self.ov = ov_cmd()
        self.rows: list[Row] = []
        self.onemodel = summary.get("onemodel")
        self.ext = summary.get("onnx_ext")
        self.inline = summary.get("onnx_inline")

    def add(self, row: Row) -> None:
        self.rows.append(row)
        self.log(f"  {row.figure}: {row.project} vs {row.baseline} {row.ratio} {row.verdict} {row.rss}")

    def missing(self, figure: str, target: str, why: str) -> None:
        self.add(Row(figure, "n/a", "n/a", "", target, None, note=why))

    def rss_rows(self, what: str, p: Proc) -> None:
        self.add(Row(f"{what} peak RSS (ru_maxrss)", fmt_b(p.maxrss), "", "", "< 512 MiB", p.maxrss < 512 * MIB, fmt_rss(p),
                     note="counts every mapped file page the process touched (reclaimable page cache)"))
        self.add(Row(f"{what} peak anonymous RSS", fmt_b(p.anon), "", "", "< 512 MiB", p.anon < 512 * MIB, fmt_rss(p),
                     note="RssAnon sampled every 10 ms: the memory the process itself allocated"))

    # -- whole-process --check
    def check(self) -> None:
        fig, target = "--check --json (whole process)", "<= 2x"
        if not self.onemodel:
            return self.missing(fig, target, "no .onemodel (converter failed)")
        rep = max(self.min_proc, self.repeat)
        (t, p), (tb, _) = median_pair([*self.ov, "--check", "--json", self.onemodel],
                                      [sys.executable, "-c", BARE_READ, self.onemodel], rep)
        note = "" if p.rc == 0 else f"exit status {p.rc}: {(p.err or p.out)[-200:]}"
        # a valid model: any other status (1 is also what a traceback exits with) is no figure
        self.add(ratio_row(fig, t if p.rc == 0 else None, tb, 2.0, target, rss=fmt_rss(p),
                           note=note or "baseline: bare `python -c` reading the header and json.loads of the manifest"))
        # the noncanonical-manifest comparison on files this project's writer did not write
        for key, what in (("onemodel_other_writer", "another writer's file"),
                          ("onemodel_late_default", "the writer's file but one explicit default in its last node")):
            path = self.s.get(key)
            fig = f"--check --json, {what} (whole process)"
            if not path:
                self.missing(fig, target, "no such model (converter failed)")
                continue
            (t, p), (tb, _) = median_pair([*self.ov, "--check", "--json", path],
                                          [sys.executable, "-c", BARE_READ, path], rep)
            found = "noncanonical-manifest" in p.out
            note = (f"exit status {p.rc}: {(p.err or p.out)[-200:]}" if p.rc != 0 else
                    "noncanonical-manifest found" if found else "noncanonical-manifest MISSING")
            self.add(ratio_row(fig, t if p.rc == 0 else None, tb, 2.0, target, rss=fmt_rss(p), note=note))
            if key == "onemodel_other_writer":  # the readable report too (to a pipe: issue 28's row)
                (t, p), (tb, _) = median_pair([*self.ov, "--check", path], [sys.executable, "-c", BARE_READ, path], rep)
                self.add(ratio_row(f"--check (text report), {what} (whole process)", t if p.rc == 0 else None, tb,
                                   2.0, target, rss=fmt_rss(p), note="stdout a pipe; " + (
                                       "noncanonical-manifest found" if "noncanonical-manifest" in p.out
                                       else f"exit status {p.rc}, noncanonical-manifest MISSING")))

    # -- library open, in process
    def open_lib(self) -> None:
        from onemodel_viewer import format as omf

        fig = "library open, header -> resolved model (in process) vs json.loads"
        if not self.onemodel:
            return self.missing(fig, "<= 1.6x", "no .onemodel")
        path = self.onemodel

        def bare(loads: Callable[[bytes], object] = json.loads) -> object:
            with open(path, "rb") as f:
                h = f.read(64)
                off, length = struct.unpack_from("<QQ", h, 16)
                f.seek(off)
                return loads(f.read(length))

        def project() -> float:
            # the open only: closing and freeing the document (~4 ms of deallocation for this
            # model) is not part of "header -> resolved model" and happens outside the clock
            t0 = time.perf_counter()
            doc = omf.open(path)
            t = time.perf_counter() - t0
            doc.close()
            del doc
            return t

        try:
            import orjson
        except ImportError:  # pragma: no cover - orjson is a dependency of the reader
            orjson = None

        def baseline(loads: Callable[[bytes], object] = json.loads) -> float:
            t0 = time.perf_counter()
            value = bare(loads)
            t = time.perf_counter() - t0
            del value
            return t

        rep = max(7 if self.min_proc > 1 else 1, self.repeat)
        project()
        baseline()
        if orjson is not None:
            baseline(orjson.loads)
        tp_l, tb_l, to_l = [], [], []
        for _ in range(rep):  # alternating: a burst of load slows every side alike
            tp_l.append(project())
            tb_l.append(baseline())
            if orjson is not None:
                to_l.append(baseline(orjson.loads))
        tp, tb = statistics.median(tp_l), statistics.median(tb_l)
        self.add(ratio_row(fig, tp, tb, 1.6, "<= 1.6x",
                           note="baseline: header read + json.loads of the manifest only; both timed without freeing "
                                f"their result; load {os.getloadavg()[0]:.2f}"))
        if to_l:
            to = statistics.median(to_l)
            self.add(ratio_row("library open vs orjson.loads of the manifest (the faster floor)", tp, to, 1.6,
                               "<= 1.6x", note="same open, baseline header read + orjson.loads"))

    # -- first screen
    def first_screen(self) -> None:
        fig = "first complete viewer screen (whole process, pty 120x40)"
        if not self.onemodel:
            return self.missing(fig, "<= 1.3x", "no .onemodel")
        rep = max(self.min_proc, self.repeat)
        (t, p), (tb, pb) = median_pair([*self.ov, self.onemodel], [sys.executable, os.path.join(HERE, "minimal_tree_app.py")],
                                       rep, env={EXIT_ENV: "1"}, tty=True, timeout=120,
                                       base_kw={"tty": True, "timeout": 120})
        ok_run = p.rc == 0
        self.add(ratio_row(fig, t if ok_run else None, tb, 1.3, "<= 1.3x", rss=fmt_rss(p),
                           note="" if ok_run else f"exit status {p.rc} (no exit-after-first-screen hook?)"))
        self.add(Row("viewer peak RSS after open", fmt_b(p.maxrss), fmt_b(pb.maxrss), "", "< 300 MiB",
                     (p.maxrss < 300 * MIB) if ok_run else None, fmt_rss(p),
                     note="baseline: the minimal Textual app's peak RSS"))

    # -- stats
    def stats(self) -> None:
        import numpy as np

        from onemodel_viewer import format as omf
        from onemodel_viewer.analysis.stats.compute import compute_stats
        from onemodel_viewer.analysis.stats.batch import compute_stats_many
        from onemodel_viewer.format.dtypes import DataType
        from onemodel_viewer.format.schema import all_tensors

        fig = "stats of the largest float32 tensor, every figure (histogram sampled) vs one numpy.sum"
        if not self.onemodel:
            return self.missing(fig, "<= 3x", "no .onemodel")
        doc = omf.open(self.onemodel)
        tensors = list(all_tensors(doc.model))
        f32 = max((t for t in tensors if t.dtype == DataType.FLOAT), key=lambda t: t.length)
        x = f32.raw().view(np.float32)
        rep = self.repeat

        def one_call() -> tuple[float, float, object]:
            # one full computation: the time at which on_summary hands over every figure with the
            # histogram counted from a sample (what the viewer draws at once, marked approximate),
            # and the time at which the exact histogram (pass 2) has replaced it
            at: list[tuple[float, object]] = []
            t0 = time.perf_counter()
            compute_stats(f32, on_summary=lambda s: at.append((time.perf_counter(), s)))
            t1 = time.perf_counter()
            if not at or not at[0][1].histogram:  # below the sampling threshold: the histogram comes at the end
                return t1 - t0, t1 - t0, (at[0][1] if at else None)
            return at[0][0] - t0, t1 - t0, at[0][1]

        x.sum()
        one_call()
        tb_l, ts_l, tf_l = [], [], []
        early = None
        for _ in range(rep):  # interleaved: a load change on the shared machine hits both sides alike
            t0 = time.perf_counter()
            x.sum()
            tb_l.append(time.perf_counter() - t0)
            ts, tf, early = one_call()
            ts_l.append(ts)
            tf_l.append(tf)
        tb, ts, tf = statistics.median(tb_l), statistics.median(ts_l), statistics.median(tf_l)
        cb = median_call(lambda: x.sum(), rep, clock=time.process_time)
        cs = median_call(lambda: compute_stats(f32, histogram="sampled"), rep, clock=time.process_time)
        sample = "no sampled histogram (below the threshold)"
        if early is not None and early.histogram and not early.hist_exact:
            sample = (f"histogram of a {100.0 * early.hist_count / early.finite:.1f}% sample "
                      f"({early.hist_count:,} values) marked approximate")
        self.add(ratio_row(fig, ts, tb, 3.0, "<= 3x",
                           note=f"{f32.name} ({f32.length / MIB:.0f} MiB); time until on_summary delivers min/max/mean/std/NaN/Inf/zeros and a "
                                f"{sample}; up to 2 threads; CPU time (all threads) {fmt_s(cs)} vs {fmt_s(cb)}: "
                                f"{cs / cb:.1f}x; load {os.getloadavg()[0]:.2f}"))
        # one thread (the compiled kernels release the GIL: the second thread is the other row)
        one_t = statistics.median([(lambda t0: (compute_stats(f32, threads=1, histogram="sampled"),
                                                time.perf_counter() - t0)[1])(time.perf_counter()) for _ in range(rep)])
        self.add(ratio_row("  same, one thread (histogram sampled)", one_t, tb, 3.0, "(info)",
                           note=f"compute_stats(threads=1, histogram='sampled'); kernels: {kernels_state()}"))
        self.rows[-1].ok = None
        row = ratio_row("  same call, until the exact histogram has replaced the sample", tf, tb, 3.0,
                        "(info)", note="pass 2: every value binned (a bincount over index pairs), then the exact "
                                       "32-bin histogram replaces the sampled one")
        row.ok = None
        self.add(row)
        f16 = [t for t in tensors if t.dtype == DataType.FLOAT16 and t.length > 0]
        total = sum(t.length for t in f16)
        for code, label in ((DataType.FLOAT16, "float16"), (DataType.BFLOAT16, "bfloat16")):
            ts = [t if code == DataType.FLOAT16 else dataclasses.replace(t, dtype=DataType.BFLOAT16) for t in f16]
            for t in ts:  # warm the page cache and the code path
                t.raw().sum()
            many: list[float] = []
            many_cpu: list[float] = []
            loop: list[float] = []
            one: list[float] = []
            compute_stats_many(ts)
            for _ in range(rep):  # alternating: the batch, one call per tensor, the batch on one thread
                t0, c0 = time.perf_counter(), time.process_time()
                compute_stats_many(ts)
                many.append(time.perf_counter() - t0)
                many_cpu.append(time.process_time() - c0)
                t0 = time.perf_counter()
                for t in ts:
                    compute_stats(t)
                loop.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                compute_stats_many(ts, threads=1)
                one.append(time.perf_counter() - t0)
            sec, sec1, cpu = statistics.median(many), statistics.median(loop), statistics.median(many_cpu)
            sec_one = statistics.median(one)
            gbs = total / sec / 1e9
            note = f"all {len(ts)} float16 tensors of the model ({total / MIB:.0f} MiB)"
            if code == DataType.BFLOAT16:
                note += ", their bytes read as bfloat16"
            self.add(Row(f"{label} stats throughput, every float16 tensor", f"{gbs:.2f} GB/s", "", "", ">= 2 GB/s",
                         gbs >= 2.0, note=note + f", compute_stats_many; {fmt_s(sec)}, CPU time (all threads) "
                                                 f"{fmt_s(cpu)} = {total / cpu / 1e9:.2f} GB/s per CPU second; one "
                                                 f"compute_stats call per tensor: {total / sec1 / 1e9:.2f} GB/s "
                                                 f"({fmt_s(sec1)}); compute_stats_many on one thread: "
                                                 f"{total / sec_one / 1e9:.2f} GB/s ({fmt_s(sec_one)}); "
                                                 f"load {os.getloadavg()[0]:.2f}"))
        f32s = [t for t in tensors if t.dtype == DataType.FLOAT and t.length > 0]
        total32 = sum(t.length for t in f32s)
        sec = median_call(lambda: compute_stats_many(f32s), rep)
        self.add(Row("float32 stats throughput, every float32 tensor", f"{total32 / sec / 1e9:.2f} GB/s", "", "",
                     "(info)", None, note=f"all {len(f32s)} float32 tensors ({total32 / MIB:.0f} MiB), exact "
                                          f"histograms, compute_stats_many; {fmt_s(sec)}; load {os.getloadavg()[0]:.2f}"))
        for code, label in ((DataType.FLOAT16, "float16"), (DataType.BFLOAT16, "bfloat16")):
            n = f32.length // 2
            big = dataclasses.replace(f32, dtype=code, dims=(n,))
            sec = median_call(lambda: compute_stats(big), rep)
            gbs = big.length / sec / 1e9
            self.add(Row(f"{label} stats throughput, one large tensor", f"{gbs:.2f} GB/s", "", "",
                         ">= 2 GB/s", gbs >= 2.0,
                         note=f"the float32 embedding's bytes ({big.length / MIB:.0f} MiB) read as {label}; {fmt_s(sec)}"))
        doc.close()

    # -- whole-model statistics, whole process (issue 28)
    def stats_json(self) -> None:
        fig, target = "--stats --json of every tensor (whole process) vs one XOR-reduce read of the data region", "<= 3x"
        if not self.onemodel:
            return self.missing(fig, target, "no .onemodel")
        rep = max(self.min_proc, self.repeat)
        (t, p), (tb, _) = median_pair([*self.ov, "--stats", "--json", self.onemodel],
                                      [sys.executable, "-c", XOR_READ, self.onemodel], rep)
        note = "" if p.rc == 0 else f"exit status {p.rc}: {(p.err or p.out)[-200:]}"
        self.add(ratio_row(fig, t if p.rc == 0 else None, tb, 3.0, target, rss=fmt_rss(p),
                           note=note or f"warm page cache; kernels: {kernels_state()}; load {os.getloadavg()[0]:.2f}"))

    # -- convert
    def convert(self) -> None:
        fig = "--convert external-data ONNX (whole process) vs cp + sync of the weights"
        target = "<= 2x time (>= 0.5x cp throughput)"
        if not self.ext:
            return self.missing(fig, target, "no model")
        dst = os.path.join(self.work, "bench-convert.onemodel")
        cp_dst = os.path.join(self.work, "bench-cp.bin")
        data = self.ext + ".data"
        times, proc = [], None
        cp_times = []
        for i in range(self.repeat + (1 if self.repeat > 1 else 0)):
            p = run_proc([*self.ov, "--convert", self.ext, dst])
            # like for like: the converter fsyncs its output, so the copy is synced too (`sync FILE`)
            c = run_proc(["sh", "-c", 'cp "$0" "$1" && sync "$1"', data, cp_dst])
            for f in (dst, cp_dst):
                if os.path.exists(f):
                    os.unlink(f)
            if i or self.repeat == 1:
                times.append(p.seconds)
                cp_times.append(c.seconds)
            proc = p if proc is None or p.maxrss > proc.maxrss else proc
        assert proc is not None
        if proc.rc != 0:
            return self.add(Row(fig, "n/a", fmt_s(statistics.median(cp_times)), "", target, None,
                                note=f"exit status {proc.rc}: {proc.err[-200:]}"))
        t, tb = statistics.median(times), statistics.median(cp_times)
        self.add(ratio_row(fig, t, tb, 2.0, target, rss=fmt_rss(proc),
                           note=f"{os.path.getsize(data) / MIB:.0f} MiB of weights; output deleted after each run"))
        self.rss_rows("--convert", proc)

    # -- diff
    def diff(self) -> None:
        from onemodel_viewer import format as omf
        from onemodel_viewer.analysis.diff.compare import staged

        fig = "--diff --json .onemodel vs its .onnx (whole process) vs chunked np.array_equal"
        target = "<= 1.5x"
        if not (self.onemodel and self.ext):
            return self.missing(fig, target, "no models")
        # the baseline compares exactly the byte ranges the diff compares: the diff's own tensor pairs
        a, b = omf.open(self.onemodel), omf.open(self.ext)
        try:
            st = staged(a, b)
            pairs, elsewhere = [], 0
            for ta, tb_ in st.pairs:
                n = min(ta.length, tb_.length)
                pa, pb = getattr(ta.storage, "path", None), getattr(tb_.storage, "path", None)
                if n and (pa is None or pb is None or ta.file_offset is None or tb_.file_offset is None):
                    elsewhere += n  # bytes held in memory (decoded ONNX fields): no file range to map
                elif n:
                    pairs.append((pa, ta.file_offset, pb, tb_.file_offset, n))
            total = st.total_bytes
        finally:
            a.close()
            b.close()
        pairs_file = os.path.join(self.work, f"bench-pairs-{os.getpid()}.json")  # one per run: runs may overlap
        with open(pairs_file, "w") as f:
            json.dump(pairs, f)
        try:
            (t, p), (tb, pb) = median_pair([*self.ov, "--diff", self.onemodel, self.ext, "--json"],
                                           [sys.executable, "-c", COMPARE, pairs_file], max(self.min_proc, self.repeat),
                                           check=diff_says(0), base_check=lambda r: "" if r.rc == 0 and
                                           r.out.strip() == "equal" else f"baseline says {r.out.strip()!r} (rc {r.rc})")
        finally:
            os.unlink(pairs_file)
        nbytes = sum(x[4] for x in pairs)
        wrong = diff_says(0)(p) or (f"baseline says {pb.out.strip()!r}" if pb.out.strip() != "equal" else "")
        if nbytes + elsewhere != total:
            wrong = wrong or f"baseline pairs cover {nbytes + elsewhere:,} bytes, the diff compares {total:,}"
        note = (f"{nbytes / MIB:.0f} MiB compared (the diff's {len(st.pairs):,} tensor pairs, every byte range in "
                f"both); diff and baseline say equal")
        if elsewhere:
            note += f"; {elsewhere:,} bytes held in memory are not in the baseline"
        if wrong:
            return self.add(Row(fig, "n/a", fmt_s(tb), "", target, None, fmt_rss(p), note=f"not measured: {wrong}"))
        self.add(ratio_row(fig, t, tb, 1.5, target, rss=fmt_rss(p), note=note))
        self.rss_rows("--diff", p)

    # -- fine-tune diff (issue 17): benchmarks/diff_changed.py
    def diff_changed(self) -> None:
        from .diff_changed import rows

        for r in rows(self):
            self.add(r)

    # -- open vs onnx.load
    def onnx_load(self) -> None:
        import onnx

        from onemodel_viewer import format as omf

        rep = self.repeat
        cases = []
        if self.inline:
            cases.append(("open inline .onnx vs onnx.load (in process)", self.inline, lambda: onnx.load(self.inline)))
        if self.ext:
            cases.append(("open external-data .onnx vs onnx.load with its data", self.ext, lambda: onnx.load(self.ext)))
        if self.onemodel:
            cases.append(("open .onemodel vs onnx.load of the external-data .onnx with data", self.onemodel,
                          lambda: onnx.load(self.ext)))
        for fig, path, base in cases:
            tp = median_call(lambda: omf.open(path).close(), rep)
            tb = median_call(base, rep)
            self.add(Row(fig, fmt_s(tp), fmt_s(tb), f"{tp / tb:.3f}x", "(info)", None))

    # -- shrink (issue 18): benchmarks/shrink_figure.py
    def shrink(self) -> None:
        from .shrink_figure import measure

        measure(self, run_proc, Row, fmt_s, fmt_rss)


class Scale:
    """The figures that do not depend on ``--size``: graph-heavy models (``make_graphs.py``), run once."""

    def __init__(self, models: dict[str, dict], repeat: int, log: Callable[[str], None], min_proc: int = 5,
                 key_runs: int = 2, keys: int = 40) -> None:
        self.m = models
        self.repeat = repeat
        self.min_proc = min_proc
        self.log = log
        self.ov = ov_cmd()
        self.rows: list[Row] = []
        self.key_runs = key_runs
        self.keys = keys

    add = Suite.add

    def _first_screen(self, key: str, limit: float, absolute: float | None, rep: int) -> None:
        g = self.m[key]
        what = f"{g['nodes']:,}-node model"
        fig = f"first complete viewer screen, {what} (whole process, pty 120x40)"
        (t, p), (tb, _) = median_pair([*self.ov, g["path"]], [sys.executable, os.path.join(HERE, "minimal_tree_app.py")],
                                      rep, env={EXIT_ENV: "1"}, tty=True, timeout=300,
                                      base_kw={"tty": True, "timeout": 120})
        ok_run = p.rc == 0
        if absolute is None:
            self.add(ratio_row(fig, t if ok_run else None, tb, limit, f"<= {limit:g}x", rss=fmt_rss(p),
                               note=f"baseline: minimal_tree_app.py; {g['manifest_bytes'] / 1e6:.0f} MB manifest"
                                    + ("" if ok_run else f"; exit status {p.rc}")))
        else:
            row = ratio_row(fig, t if ok_run else None, tb, 1e9, f"<= {fmt_s(absolute)}", rss=fmt_rss(p),
                            note=f"ratio vs minimal_tree_app.py for information; {g['manifest_bytes'] / 1e6:.0f} MB "
                                 "manifest" + ("" if ok_run else f"; exit status {p.rc}"))
            row.ok = (t <= absolute) if ok_run else None
            self.add(row)

    def screens(self) -> None:
        if "graph_100k" in self.m:
            self._first_screen("graph_100k", 1.5, None, max(self.min_proc, self.repeat))
        if "graph_1m" in self.m:
            self._first_screen("graph_1m", 0, 3.0, max(1, self.repeat))

    def keys_latency(self) -> None:
        from . import key_latency as kl

        g = self.m.get("graph_1m")
        if g is None:
            return
        what = f"{g['nodes']:,}-node model"
        runs, bases = [], []
        for _ in range(self.key_runs):  # alternating with the baseline
            runs.append(kl.measure([*self.ov, g["path"]], keys=self.keys, env=PYC_ENV))
            bases.append(kl.measure(kl.minimal_cmd(), keys=self.keys, until_idle=False, env=PYC_ENV))
        for r in runs + bases:
            self.log("    " + kl.summary(r))
        pool = kl.Latency(latencies=[x for r in runs for x in r.latencies], busy=[b for r in runs for b in r.busy],
                          timeouts=sum(r.timeouts for r in runs))
        bpool = kl.Latency(latencies=[x for r in bases for x in r.latencies], busy=[True for r in bases for _ in r.latencies])
        busy, every, base = pool.stat("busy"), pool.stat("all"), bpool.stat("all")
        firsts = [r.first_screen for r in runs if r.first_screen is not None]
        bfirsts = [r.first_screen for r in bases if r.first_screen is not None]
        first = statistics.median(firsts) if firsts else None
        row = ratio_row(f"time to first screen in the key-latency run, {what} (pty, no exit hook)", first,
                        statistics.median(bfirsts) if bfirsts else None, 1e9, "<= 3.00 s",
                        note="first frame drawn (first output chunk > 1 KiB); baseline the minimal tree app")
        row.ok = None if first is None else first <= 3.0
        self.add(row)
        note = (f"{self.key_runs} run(s), {every['n']} keys (down/up alternating, one at a time after 50 ms of quiet "
                f"output), {busy['n']} of them while background work ran (> 0.5 core busy); "
                f"{pool.timeouts} without an answer in {kl.TIMEOUT:.0f} s; baseline: minimal_tree_app.py --stay, "
                f"{base['n']} keys")
        worst = busy["max"] if busy["n"] else None
        row = ratio_row(f"key latency while background work runs, max, {what} (pty)", worst, base["max"], 1e9,
                        "<= 100 ms", note=note + ("" if busy["n"] else "; NO key landed while background work ran"))
        row.ok = None if worst is None else worst <= 0.100
        self.add(row)
        row = ratio_row("  key latency while background work runs, p95", busy["p95"], base["p95"], 1e9, "(info)")
        row.ok = None
        self.add(row)
        row = ratio_row("  key latency over every key (background work or not), max", every["max"], base["max"], 1e9,
                        "<= 100 ms", note=f"median {fmt_s(every['median'])} vs {fmt_s(base['median'])}")
        row.ok = None if every["max"] is None else every["max"] <= 0.100
        self.add(row)

    def check_big(self) -> None:
        for key, order in (("graph_2m", ""), ("graph_2m_reversed", ", nodes in reverse dependency order")):
            g = self.m.get(key)
            if g is not None:
                self.check_graph(g, order)

    def check_graph(self, g: dict, order: str) -> None:
        what = f"{g['nodes']:,}-node model{order}, {g['manifest_bytes'] / 1e6:.0f} MB manifest"
        rep = max(1, min(self.repeat, 3))
        (t, p), (tb, pb) = median_pair([*self.ov, "--check", "--json", g["path"]],
                                       [sys.executable, "-c", BARE_READ, g["path"]], rep)
        ok_run = p.rc == 0
        note = (f"baseline (info): bare `python -c` header read + json.loads, {fmt_s(tb)}, peak RSS {fmt_b(pb.maxrss)}; "
                f"median of {rep}")
        if not ok_run:
            note += f"; exit status {p.rc}: {(p.err or p.out)[-200:]}"
        row = ratio_row(f"--check --json, {what} (whole process)", t if ok_run else None, tb, 1e9, "<= 10 s",
                        rss=fmt_rss(p), note=note + f"; kernels: {kernels_state()}; load {os.getloadavg()[0]:.2f}")
        row.ok = (t <= 10.0) if ok_run else None
        self.add(row)
        limit = 20 * g["manifest_bytes"]
        self.add(Row("  its peak RSS vs the manifest size", fmt_b(p.maxrss), fmt_b(g["manifest_bytes"]),
                     f"{p.maxrss / g['manifest_bytes']:.1f}x", "<= 20x", p.maxrss <= limit if p.maxrss else None,
                     fmt_rss(p), note="ru_maxrss of the child (os.wait4 in the launcher)"))


FIGURES = ("check", "open", "first_screen", "stats", "stats_json", "convert", "diff", "diff_changed", "onnx_load",
           "shrink")
SCALE_FIGURES = ("screens", "keys", "check_big")
"""Run once, whatever ``--size``: the 100,000- and 10^6-node viewer figures and the 2,000,000-node --check."""


def cell(r: Row) -> str:
    text = r.project
    if r.baseline and r.baseline != "n/a" or r.ratio:
        text += f" vs {r.baseline}"
    if r.ratio:
        text += f" = {r.ratio}"
    return text + f" {r.verdict}"


def render_sizes(per_size: dict[str, list[Row]], markdown: bool) -> str:
    """One row per figure, one column per size: 'project vs baseline = ratio pass'."""
    labels = list(per_size)
    order: list[str] = []
    target: dict[str, str] = {}
    cells: dict[tuple[str, str], Row] = {}
    for label, rows in per_size.items():
        for r in rows:
            if r.figure not in target:
                order.append(r.figure)
                target[r.figure] = r.target
            cells[(r.figure, label)] = r
    head = ["figure", "target", *labels]
    data = [[f, target[f], *(cell(cells[(f, lab)]) if (f, lab) in cells else "" for lab in labels)] for f in order]
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(c.replace("|", "\\|") for c in d) + " |" for d in data]
    else:
        widths = [max(len(h), *(len(d[i]) for d in data)) if data else len(h) for i, h in enumerate(head)]
        line = lambda cs: "  ".join(c.ljust(w) for c, w in zip(cs, widths)).rstrip()  # noqa: E731
        out = [line(head), line(["-" * w for w in widths])] + [line(d) for d in data]
    notes = []
    for label, rows in per_size.items():
        notes += [f"{'*' if markdown else '  *'} {label}, {r.figure}: {r.note}" for r in rows if r.note]
    return "\n".join(out + ([""] + notes if notes else []))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks", description="onemodel-view benchmark suite")
    ap.add_argument("--size", default="64M",
                    help="model weight bytes, a comma list: 8M, 64M, 1G, 4G, 1G,4G (default 64M); every figure per size")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; medians are reported (default 3)")
    ap.add_argument("--out", default="/tmp/omv-bench", help="where the models go (default /tmp/omv-bench)")
    ap.add_argument("--markdown", metavar="PATH", help="also write the table as markdown")
    ap.add_argument("--json", metavar="PATH", help="also write the rows as JSON")
    ap.add_argument("--min-process-runs", type=int, default=5,
                    help="at least this many runs for whole-process figures (default 5)")
    ap.add_argument("--only", help=f"comma-separated subset of: {','.join(FIGURES + SCALE_FIGURES)}")
    ap.add_argument("--scale-nodes", default="100000,1000000,2000000", metavar="N1,N2,N3",
                    help="node counts of the graph-heavy models: first-screen ratio model, 10^6-node viewer model "
                         "(first screen, key latency), --check model (default 100000,1000000,2000000)")
    ap.add_argument("--key-runs", type=int, default=2, help="key-latency runs (each: viewer then baseline; default 2)")
    ap.add_argument("--keys", type=int, default=40, help="keys per key-latency run, at least (default 40)")
    args = ap.parse_args(argv)
    global _launcher
    _launcher = Launcher()  # before this process grows: see benchmarks/proc.py
    only = set(args.only.split(",")) if args.only else set(FIGURES + SCALE_FIGURES)
    unknown = only - set(FIGURES + SCALE_FIGURES)
    if unknown:
        ap.error(f"unknown figure(s): {', '.join(sorted(unknown))}")
    sizes = [make_models.parse_size(x) for x in args.size.split(",") if x.strip()]
    scale_nodes = [int(x) for x in args.scale_nodes.split(",")]
    if len(scale_nodes) != 3:
        ap.error("--scale-nodes takes three counts")
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    summaries = {}
    for size in sizes:  # every model first: the timed part then runs without the generator in between
        log(f"models: {args.out}/{make_models.size_label(size)}")
        summaries[make_models.size_label(size)] = make_models.ensure(size, args.out)
        if "diff_changed" in only:  # the fine-tune copies too (make_changed.py), before any timing
            from . import make_changed

            make_changed.ensure(summaries[make_models.size_label(size)])
    graphs: dict[str, dict] = {}
    if only & set(SCALE_FIGURES):
        from . import make_graphs

        need = {"screens": ("graph_100k", "graph_1m"), "keys": ("graph_1m",), "check_big": ("graph_2m",)}
        keys_needed = {k for f in only & set(SCALE_FIGURES) for k in need[f]}
        for key, n in zip(("graph_100k", "graph_1m", "graph_2m"), scale_nodes):
            if key in keys_needed:
                log(f"graph model: {n:,} nodes")
                graphs[key] = make_graphs.ensure(n, args.out)
        if "check_big" in only:  # the same graph stored in reverse dependency order (issue 28)
            graphs["graph_2m_reversed"] = make_graphs.ensure(scale_nodes[2], args.out, reverse=True)
    load0 = os.getloadavg()
    per_size: dict[str, list[Row]] = {}
    loads: list[str] = []
    for label, summary in summaries.items():
        suite = Suite(summary, max(1, args.repeat), os.path.join(args.out, label), log, max(1, args.min_process_runs))
        la = os.getloadavg()[0]
        for name in FIGURES:
            if name in only:
                log(f"{label} {name}...")
                getattr(suite, {"open": "open_lib"}.get(name, name))()
        per_size[label] = suite.rows
        loads.append(f"{label}: {la:.2f} -> {os.getloadavg()[0]:.2f}")
    scale = Scale(graphs, max(1, args.repeat), log, max(1, args.min_process_runs), max(1, args.key_runs), max(1, args.keys))
    if graphs:
        la = os.getloadavg()[0]
        for name in SCALE_FIGURES:
            if name in only:
                log(f"scale {name}...")
                getattr(scale, {"keys": "keys_latency"}.get(name, name))()
        loads.append(f"scale figures: {la:.2f} -> {os.getloadavg()[0]:.2f}")
    load1 = os.getloadavg()
    _launcher.close()
    models = "; ".join(f"{label}: {s['tensors']:,} tensors, {s['nodes']:,} nodes, {s['data_bytes'] / MIB:,.0f} MiB of weights"
                       for label, s in summaries.items())
    header = [
        f"onemodel-view benchmarks, models {models}; median of {args.repeat} (whole-process figures: at least "
        f"{args.min_process_runs}), warm page cache",
        *machine_info(),
        f"load average (1 min) {load0[0]:.2f} at start, {load1[0]:.2f} at end ({'; '.join(loads)})",
    ]
    for label, s in summaries.items():
        if s.get("onemodel") is None:
            header.append(f"{label}: --convert failed, no .onemodel: {s.get('convert_message', '')}")
    if graphs:
        header.append("graph-heavy models (make_graphs.py): " + "; ".join(
            f"{g['nodes']:,} nodes, {g['tensors']:,} tensors, {g['manifest_bytes'] / 1e6:.0f} MB manifest"
            for g in graphs.values()))
    text = ["\n".join(header), "", render_sizes(per_size, False)] if per_size else ["\n".join(header)]
    if scale.rows:
        text += ["", "Figures independent of --size:", "", render_text(scale.rows)]
    print("\n".join(text))
    if args.markdown:
        md = [*(f"{h}  " for h in header), ""]
        if per_size:
            md += [render_sizes(per_size, True), ""]
        if scale.rows:
            md += ["Figures independent of `--size`:", "", render_markdown(scale.rows, [])]
        with open(args.markdown, "w") as f:
            f.write("\n".join(md).rstrip() + "\n")
    if args.json:
        as_json = lambda rows: [dataclasses.asdict(r) | {"result": r.verdict} for r in rows]  # noqa: E731
        with open(args.json, "w") as f:
            json.dump({"header": header, "sizes": {k: as_json(v) for k, v in per_size.items()},
                       "scale": as_json(scale.rows),
                       "rows": [r for rows in per_size.values() for r in as_json(rows)] + as_json(scale.rows)},
                      f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
