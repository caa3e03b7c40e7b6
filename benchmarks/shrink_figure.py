"""The ``shrink`` figure: ``--shrink`` of one defect injected into the benchmark model (issue 18).

The defect is written with ``--patch`` (not timed); each shrink is a whole process, with its
peak RSS. Targets: under 60 s, peak RSS under 512 MiB, on the 4 GiB model.
"""

from __future__ import annotations

import json
import os
import statistics
import struct


def _manifest(path: str) -> dict:
    with open(path, "rb") as f:
        head = f.read(64)
        mlen = struct.unpack_from("<Q", head, 24)[0]
        return json.loads(f.read(mlen))


def defects(path: str) -> dict[str, str]:
    """name -> one ``--patch`` edit: an undefined input mid-graph, a data length that does not match."""
    g = _manifest(path)["graph"]
    n = len(g["nodes"])
    i = max(range(len(g["initializers"])), key=lambda k: (g["initializers"][k]["data"]["length"], -k))
    return {
        "undefined input": f'manifest.graph.nodes[{n // 2}].inputs[0]="no.such.value"',
        "data length": f"manifest.graph.initializers[{i}].data.length={g['initializers'][i]['data']['length'] - 4}",
    }


def measure(suite, run_proc, Row, fmt_s, fmt_rss) -> None:
    """Add the rows to ``suite`` (a :class:`benchmarks.run.Suite`)."""
    target = "< 60 s"
    if not suite.onemodel:
        return suite.missing("--shrink of one defect", target, "no .onemodel")
    bad = os.path.join(suite.work, "bench-shrink-in.onemodel")
    small = os.path.join(suite.work, "bench-shrink-out.onemodel")
    worst = None
    try:
        for name, edit in defects(suite.onemodel).items():
            p = run_proc([*suite.ov, "--patch", suite.onemodel, bad, edit, "--json"])
            fig = f"--shrink of one defect ({name}) (whole process)"
            if p.rc != 0:
                suite.add(Row(fig, "n/a", "", "", target, None, note=f"--patch failed: {p.err[-200:]}"))
                continue
            runs = []
            for _ in range(max(1, min(3, suite.repeat))):
                runs.append(run_proc([*suite.ov, "--shrink", bad, small]))
            t = statistics.median(r.seconds for r in runs)
            top = max(runs, key=lambda r: r.maxrss)
            ok = all(r.rc == 0 for r in runs)
            out = os.path.getsize(small) if os.path.exists(small) else None
            last = (top.err.strip().splitlines() or [""])[-1]
            suite.add(Row(fig, fmt_s(t), "", "", target, ok and t < 60, fmt_rss(top),
                          note=f"{os.path.getsize(bad):,} -> {out:,} bytes: {last.rsplit(': ', 1)[-1]}" if ok else f"exit {top.rc}: {last}"))
            worst = top if worst is None or top.maxrss > worst.maxrss else worst
    finally:
        for f in (bad, small):
            if os.path.exists(f):
                os.unlink(f)
    if worst is not None:
        suite.rss_rows("--shrink", worst)
