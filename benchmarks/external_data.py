"""ONNX external data figures (issue 14): streaming re-alignment and --check with the layout report.

``python -m benchmarks.external_data [--size 4G] [--repeat 3] [--old GIT_REV]`` uses the benchmark's
external-data model (``benchmarks.make_models``, under /tmp/omv-bench) and measures, alternating
project and baseline runs (median of ``--repeat``):

* ``--export model_ext.onnx OUT.onnx --align 4096`` (whole process) against ``cp`` of the weights
  file: target at least 0.5x cp's throughput, peak RSS under 256 MiB;
* ``--check --json model_ext.onnx`` (with the ``files`` layout report) against the same command of
  ``--old`` (default: the commit before the layout report), run from an extracted copy of that
  revision: target at most 1.2x.

Outputs go to /tmp/omv-ext-bench and are removed after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

from .make_models import ensure, parse_size
from .proc import run_proc

OUT = "/tmp/omv-ext-bench"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _old_tree(rev: str) -> str:
    dst = os.path.join(OUT, "old-" + rev)
    if not os.path.isdir(dst):
        os.makedirs(dst)
        archive = subprocess.run(["git", "-C", ROOT, "archive", rev, "onemodel_viewer"], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", dst], input=archive, check=True)
    return dst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="4G")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--old", default="830ba34", help="revision whose --check is the baseline")
    args = ap.parse_args(argv)
    summary = ensure(parse_size(args.size), "/tmp/omv-bench", quiet=True)
    src = summary["onnx_ext"]
    data = src + ".data"
    os.makedirs(OUT, exist_ok=True)
    py = sys.executable
    old = _old_tree(args.old)
    exp, cp, chk, chk_old, rss = [], [], [], [], []
    for _ in range(args.repeat):
        out = os.path.join(OUT, "realigned")
        os.makedirs(out, exist_ok=True)
        p = run_proc([py, "-m", "onemodel_viewer", "--export", src, os.path.join(out, "m.onnx"), "--align", "4096"])
        assert p.rc == 0, p.err
        exp.append(p.seconds)
        rss.append(p.maxrss)
        shutil.rmtree(out)
        os.makedirs(out)
        c = run_proc(["cp", data, os.path.join(out, "copy.data")])
        assert c.rc == 0, c.err
        cp.append(c.seconds)
        shutil.rmtree(out)
        n = run_proc([py, "-m", "onemodel_viewer", "--check", "--json", src])
        assert n.rc == 0, n.out[:500]
        assert json.loads(n.out)["files"], "the layout report"
        chk.append(n.seconds)
        o = run_proc([py, "-m", "onemodel_viewer", "--check", "--json", src], env={"PYTHONPATH": old})
        chk_old.append(o.seconds)
    size = os.path.getsize(data)
    e, c, k, ko = (statistics.median(x) for x in (exp, cp, chk, chk_old))
    print(f"model {args.size}: {size / 2**20:,.0f} MiB of weights, median of {args.repeat}, load {os.getloadavg()[0]:.2f}")
    print(f"re-align to 4096 (--export --align 4096): {e:.2f} s ({size / e / 2**30:.2f} GiB/s); cp of the weights "
          f"{c:.2f} s ({size / c / 2**30:.2f} GiB/s); throughput ratio {c / e:.2f}x (target >= 0.5x); "
          f"peak RSS {max(rss) / 2**20:.0f} MiB (target < 256 MiB)")
    print(f"--check --json with the layout report: {k * 1000:.0f} ms; {args.old}'s --check {ko * 1000:.0f} ms; "
          f"ratio {k / ko:.2f}x (target <= 1.2x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
