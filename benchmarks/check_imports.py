"""Benchmark: what ``--check`` costs before it reads the file, this tree against an older commit.

    python -m benchmarks.check_imports --before COMMIT [--repeat 15] [--file F.onemodel ...]

``git archive COMMIT`` is unpacked under ``/tmp/omv-bench-before/COMMIT``; both trees are run from
``/tmp`` (the working directory must not shadow the package) with ``PYTHONPATH`` set to each, runs
alternating, with byte-code caching as in :data:`.run.PYC_ENV`. Per tree, whole processes:

* ``--check --json`` of each ``--file`` (default: the 1G and 4G benchmark models and a 1 KB file);
* ``import``: a ``python -c`` importing what ``--check`` imports before it opens a file
  (``cli``, ``commands.check``, ``format.reader``, ``analysis.layout``).

Each figure is the median wall time and the median CPU time (user + system, ``os.wait4``) with its
ratio to the older tree, and the 1-minute load at the start and the end. ``--importtime`` adds
the median ``-X importtime`` self time of every module of the small file's ``--check`` per tree
(the modules that differ most first). Not a target of its own: issue 12's rule is that the README's
rows stay within 10% of the figures before it.
"""

from __future__ import annotations

import argparse
import collections
import os
import statistics
import subprocess
import sys
import time

from .run import PYC_ENV

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMPORTS = ("import onemodel_viewer.cli, onemodel_viewer.commands.check, onemodel_viewer.format.reader, "
           "onemodel_viewer.analysis.layout.onemodel")
SMALL = os.path.join(ROOT, "testdata", "valid", "attributes.onemodel")


def unpack(commit: str) -> str:
    """The tree of ``commit`` under /tmp (made once)."""
    sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", commit], check=True, capture_output=True,
                         text=True).stdout.strip()
    out = os.path.join("/tmp/omv-bench-before", sha)
    if not os.path.isdir(os.path.join(out, "onemodel_viewer")):
        os.makedirs(out, exist_ok=True)
        archive = subprocess.Popen(["git", "-C", ROOT, "archive", sha], stdout=subprocess.PIPE)
        subprocess.run(["tar", "-x", "-C", out], stdin=archive.stdout, check=True)
        archive.wait()
    return out


def env_for(tree: str) -> dict:
    env = dict(os.environ, PYTHONPATH=tree)
    for k, v in PYC_ENV.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


def run(tree: str, args: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one whole process; exit status 0 or 1 (a file with problems) only."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, *args], cwd="/tmp", env=env_for(tree), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t
    err = p.stderr.read()
    p.stderr.close()
    rc = os.waitstatus_to_exitcode(status)
    if rc not in (0, 1):
        raise SystemExit(f"{tree} {' '.join(args)}: exit status {rc}: {err[-300:]!r}")
    return wall, ru.ru_utime + ru.ru_stime


def load() -> str:
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def importtime(trees: list[str], repeat: int) -> None:
    data = {t: collections.defaultdict(list) for t in trees}
    for r in range(repeat):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            p = subprocess.run([sys.executable, "-X", "importtime", "-m", "onemodel_viewer", "--check", "--json", SMALL],
                               cwd="/tmp", env=env_for(tree), capture_output=True, text=True)
            for line in p.stderr.splitlines():
                if line.startswith("import time:") and "self" not in line:
                    own, _cum, name = line[12:].split("|")
                    data[tree][name.strip()].append(int(own))
    med = {t: {k: statistics.median(v) for k, v in d.items()} for t, d in data.items()}
    names = set().union(*med.values())
    rows = sorted(names, key=lambda k: -abs(med[trees[-1]].get(k, 0) - med[trees[0]].get(k, 0)))
    print("\n-X importtime self time, median us (the --check of a small file)")
    print(f"{'module':48s}" + "".join(f"{os.path.basename(t):>14s}" for t in trees))
    for k in rows[:30]:
        print(f"{k:48s}" + "".join(f"{med[t].get(k, 0):14.0f}" for t in trees))
    print(f"{'all modules':48s}" + "".join(f"{sum(med[t].values()):14.0f}" for t in trees))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.check_imports", description=__doc__.split("\n\n")[0])
    ap.add_argument("--before", required=True, help="the older commit")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--file", action="append", help="a file to --check (repeatable)")
    ap.add_argument("--importtime", action="store_true", help="also the per-module -X importtime table")
    a = ap.parse_args(argv)
    files = a.file or [p for p in ("/tmp/omv-bench/1G/model.onemodel", "/tmp/omv-bench/4G/model.onemodel")
                       if os.path.exists(p)] + [SMALL]
    trees = [unpack(a.before), ROOT]
    cmds = {f"--check {os.path.relpath(f, '/tmp') if f.startswith('/tmp/') else os.path.basename(f)}":
            ["-m", "onemodel_viewer", "--check", "--json", f] for f in files}
    cmds["import"] = ["-c", IMPORTS]
    res = {(t, k): ([], []) for t in trees for k in cmds}
    start = load()
    for k, args in cmds.items():  # warm-up: byte-code caches, page cache
        for t in trees:
            run(t, args)
    for r in range(a.repeat):
        for k, args in cmds.items():
            for t in trees if r % 2 == 0 else trees[::-1]:
                w, c = run(t, args)
                res[t, k][0].append(w)
                res[t, k][1].append(c)
    print(f"{a.repeat} alternating runs each, 1-minute load {start} at start, {load()} at end")
    print(f"{'figure':40s} {'tree':>14s} {'wall ms':>9s} {'ratio':>6s} {'CPU ms':>8s} {'ratio':>6s}")
    for k in cmds:
        bw, bc = (statistics.median(x) for x in res[trees[0], k])
        for t in trees:
            w, c = (statistics.median(x) for x in res[t, k])
            name = os.path.basename(t) if t != ROOT else "this tree"
            print(f"{k:40s} {name:>14s} {w * 1e3:9.1f} {w / bw:5.2f}x {c * 1e3:8.1f} {c / bc:5.2f}x")
    if a.importtime:
        importtime(trees, a.repeat)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
