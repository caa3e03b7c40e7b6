"""The fine-tune diff figure (issue 17): ``python -m benchmarks.diff_changed [--size 4G] [--repeat 3]``.

``--diff --json`` of the benchmark model against its all-tensors-changed copy
(:mod:`benchmarks.make_changed`: every float weight times 1 + 0.01 N(0,1)), against the same
command on a byte-for-byte copy, the runs alternating (a burst of load slows both sides).
Targets: at most 2.5x the equal diff, peak RSS under 512 MiB, at least 1 GB/s of tensor bytes
(per side, over the whole process). :func:`rows` is the ``diff_changed`` figure of
``python -m benchmarks`` (one set of rows per ``--size``).
"""

from __future__ import annotations

import argparse
import json
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.diff_changed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="64M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--min-process-runs", type=int, default=3)
    ap.add_argument("--out", default="/tmp/omv-bench")
    args = ap.parse_args(argv)
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
