"""The fine-tune diff figure (issue 17): ``python -m benchmarks.diff_changed [--size 4G] [--repeat 3]``.

``--diff --json`` of the benchmark model against its all-tensors-changed copy
(:mod:`benchmarks.make_changed`: every float weight times 1 + 0.01 N(0,1)), against the same
command on a byte-for-byte copy, the runs alternating (a burst of load slows both sides).
Targets: at most 2.5x the equal diff, peak RSS under 512 MiB, at least 1 GB/s of tensor bytes
(per side, over the whole process). :func:`rows` is the ``diff_changed`` figure of
``python -m benchmarks`` (one set of rows per ``--size``).

``--kernel`` prints instead the CPU time per element of the element pass alone (:func:`kernel`): in
memory, one thread, no page faults, so a loaded machine moves it little; the whole-process rows
add file pages, the structure diff and the output to it.
"""

from __future__ import annotations

import argparse
import json
import math
import sys

from . import make_changed, make_models
from . import run as bench

MIB = 1 << 20


def rows(suite: "bench.Suite") -> list["bench.Row"]:
    fig = "--diff --json vs its all-tensors-changed copy (whole process) vs the same vs an identical copy"
    target = "<= 2.5x"
    made = make_changed.ensure(suite.s)
    if not made:
        return [bench.Row(fig, target=target, note="no .onemodel (converter failed)")]
    src = suite.onemodel
    rep = max(suite.min_proc, suite.repeat)
    (t, p), (te, pe) = bench.median_pair([*suite.ov, "--diff", src, made["changed"], "--json"],
                                         [*suite.ov, "--diff", src, made["copy"], "--json"], rep,
                                         check=bench.diff_says(1), base_check=bench.diff_says(0))
    wrong = bench.diff_says(1)(p) or bench.diff_says(0)(pe)
    if wrong:  # a crash exits 1 too: only a JSON result that says so counts
        return [bench.Row(fig, target=target, note=f"not measured: {wrong}")]
    try:
        out = json.loads(p.out)
        totals = out.get("totals") or {}
        changed = f"{totals.get('changed_tensors', 0):,} tensors changed, rel_l2 over all weights {totals.get('rel_l2')}"
    except ValueError:
        changed = "unreadable JSON"
    nbytes = made["changed_bytes"]
    gbs = nbytes / t / 1e9
    out_rows = [
        bench.ratio_row(fig, t, te, 2.5, target, rss=bench.fmt_rss(p),
                        note=f"{nbytes / MIB:,.0f} MiB of float weights changed; {changed}; "
                             f"equal side peak RSS {bench.fmt_rss(pe)}"),
        bench.Row("  changed diff throughput (tensor bytes per side / whole process)", f"{gbs:.2f} GB/s", "", "",
                  ">= 1 GB/s", gbs >= 1.0, bench.fmt_rss(p)),
    ]
    out_rows.append(bench.Row("  changed diff peak RSS (ru_maxrss)", bench.fmt_b(p.maxrss), "", "", "< 512 MiB",
                              p.maxrss < 512 * MIB, bench.fmt_rss(p)))
    return out_rows


def kernel(elements: int = 1 << 22, repeat: int = 5) -> list[str]:
    """CPU nanoseconds per element (and bytes per CPU second) of ``compare_tensors`` on one changed tensor pair
    per dtype of the benchmark model (values times 1 + 0.01 N(0,1), as :mod:`benchmarks.make_changed` makes
    them), held in memory, on one thread: the best of ``repeat`` runs."""
    import time

    import ml_dtypes
    import numpy as np

    from onemodel_viewer.analysis.diff.tensors import compare_tensors
    from onemodel_viewer.format.dtypes import DTYPES, encode
    from onemodel_viewer.format.schema import Tensor
    from onemodel_viewer.format.storage import BytesStorage

    rng = np.random.default_rng(17)
    x = rng.standard_normal(elements) * 0.02
    y = x * (1 + 0.01 * rng.standard_normal(elements))
    lines = []
    for code, dt in ((10, np.float16), (16, ml_dtypes.bfloat16), (1, np.float32)):
        info = DTYPES[code]
        pair = [Tensor("w", code, (elements,), length=elements * info.bits // 8, file_offset=0,
                       storage=BytesStorage(encode(v.astype(dt), info))) for v in (x, y)]
        best = math.inf
        for _ in range(repeat):
            c0 = time.process_time()
            compare_tensors([(pair[0], pair[1])], threads=1)
            best = min(best, time.process_time() - c0)
        lines.append(f"{info.name:9s} {best / elements * 1e9:5.3g} ns CPU per element, "
                     f"{elements * info.bits / 8 / best / 1e9:5.3g} GB/s of tensor bytes per side per CPU second")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.diff_changed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="64M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-process-runs", type=int, default=3)
    ap.add_argument("--out", default="/tmp/omv-bench")
    ap.add_argument("--kernel", action="store_true", help="the element pass alone, in memory, one thread (CPU time)")
    args = ap.parse_args(argv)
    if args.kernel:
        print("\n".join(bench.machine_info() + kernel(repeat=args.repeat)))
        return 0
    bench._launcher = bench.Launcher()
    size = make_models.parse_size(args.size)
    summary = make_models.ensure(size, args.out)
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    suite = bench.Suite(summary, args.repeat, summary.get("dir", args.out), log, args.min_process_runs)
    import os

    load0 = os.getloadavg()[0]
    got = rows(suite)
    bench._launcher.close()
    print("\n".join(bench.machine_info()) + f"\nload average {load0:.2f} at start, {os.getloadavg()[0]:.2f} at end\n")
    print(bench.render_text(got))
    return 0


if __name__ == "__main__":
    sys.exit(main())
