#!/usr/bin/env python3
"""Resource bounds of ``onemodel-view --check`` on huge-but-legal files (not part of the test run).

Generates files in ``--out`` (default /tmp/onemodel-bounds; NEVER commit them), runs
``python -m onemodel_viewer --check --json FILE`` on each in a child process with an address-space
cap, and prints wall time, peak RSS and the verdict:

* ``nodes-<N>``: a chain of N tiny nodes (default 2,000,000: a ~200 MB manifest);
* ``tensors-<N>``: N tiny initializers (default 200,000);
* ``subgraphs-<N>``: N If nodes whose subgraphs omit every optional array (many findings);
* ``data-100MB``: a 100 MB data region in one tensor (the check must not read it all);
* ``manifest-600MiB``: a header announcing a manifest over the 512 MiB limit (sparse file).

    python fuzz/resource_bounds.py                 # everything (needs ~4 GB RAM free, ~2 min)
    python fuzz/resource_bounds.py --nodes 200000  # smaller
"""

from __future__ import annotations

import argparse
import resource
import struct
import subprocess
import sys
import time
from pathlib import Path

HEADER = struct.Struct("<8sIIQQQQQQ")


def align64(n: int) -> int:
    return (n + 63) // 64 * 64


def write_model(path: Path, pieces, data_len: int = 0, data_writer=None) -> int:
    """Stream a OneModel file: header placeholder, manifest pieces, padding, data. Returns the size."""
    with open(path, "wb") as f:
        f.write(b"\0" * 64)
        ml = 0
        for piece in pieces:
            b = piece.encode()
            f.write(b)
            ml += len(b)
        do = align64(64 + ml)
        f.write(b"\0" * (do - 64 - ml))
        if data_writer is not None:
            data_writer(f)
        size = do + data_len
        f.seek(0)
        f.write(HEADER.pack(b"ONEMODEL", 1, 0, 64, ml, do, data_len, size, 0))
    assert path.stat().st_size == size
    return size


PROLOGUE = ('{"format":"onemodel","version":1,"ir_version":8,"opsets":[{"domain":"","version":17}],'
            '"graph":{"name":"g","inputs":[{"name":"v0","type":{"kind":"tensor","elem":1,"shape":[1]}}],')


def nodes_model(path: Path, n: int) -> int:
    def pieces():
        yield PROLOGUE
        yield f'"outputs":[{{"name":"v{n}"}}],"nodes":['
        for i in range(1, n + 1):
            sep = "," if i > 1 else ""
            yield (f'{sep}{{"name":"n{i}","op":"Relu","domain":"","overload":"","inputs":["v{i - 1}"],'
                   f'"outputs":["v{i}"],"attributes":[]}}')
        yield "]}}"

    return write_model(path, pieces())


def tensors_model(path: Path, n: int) -> int:
    def pieces():
        yield PROLOGUE
        yield '"outputs":[{"name":"v0"}],"initializers":['
        for i in range(n):
            sep = "," if i else ""
            yield f'{sep}{{"name":"t{i}","dtype":1,"dims":[1],"data":{{"offset":{64 * i},"length":4}}}}'
        yield '],"nodes":[]}}'

    data_len = 64 * (n - 1) + 4

    def data(f):
        block = struct.pack("<f", 1.0) + b"\0" * 60
        for i in range(n - 1):
            f.write(block)
        f.write(struct.pack("<f", 1.0))

    return write_model(path, pieces(), data_len, data)


def subgraphs_model(path: Path, n: int) -> int:
    def pieces():
        yield PROLOGUE.replace('"inputs":[', '"inputs":[{"name":"c","type":{"kind":"tensor","elem":9}},')
        yield '"outputs":[{"name":"v0"}],"nodes":['
        for i in range(n):
            sep = "," if i else ""
            yield (f'{sep}{{"name":"if{i}","op":"If","inputs":["c"],"outputs":["o{i}"],"attributes":[{{"name":'
                   f'"then_branch","type":5,"value":{{"outputs":[{{"name":"s{i}"}}],"nodes":[{{"op":"Identity",'
                   f'"inputs":["v0"],"outputs":["s{i}"]}}]}}}}]}}')
        yield "]}}"

    return write_model(path, pieces())


def data_model(path: Path, nbytes: int) -> int:
    n = nbytes // 4

    def pieces():
        yield PROLOGUE
        yield f'"outputs":[{{"name":"v0"}}],"initializers":[{{"name":"w","dtype":1,"dims":[{n}],'
        yield f'"data":{{"offset":0,"length":{4 * n}}}}}],"nodes":[]}}}}'

    def data(f):
        chunk = bytes(range(256)) * 4096  # 1 MiB, non-zero
        left = 4 * n
        while left:
            k = min(left, len(chunk))
            f.write(chunk[:k])
            left -= k

    return write_model(path, pieces(), 4 * n, data)


def big_manifest_header(path: Path) -> int:
    ml = 600 << 20
    do = align64(64 + ml)
    with open(path, "wb") as f:
        f.write(HEADER.pack(b"ONEMODEL", 1, 0, 64, ml, do, 0, do, 0))
        f.truncate(do)
    return do


def run_check(path: Path, as_limit_gb: int) -> dict:
    def limit():
        cap = as_limit_gb << 30
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    code = ("import resource, sys\n"
            "from onemodel_viewer.cli import main\n"
            "try:\n    rc = main(sys.argv[1:])\n"
            "finally:\n    print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
            "sys.exit(rc)\n")
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code, "--check", "--json", str(path)],
                       capture_output=True, text=True, preexec_fn=limit, timeout=1800)
    wall = time.perf_counter() - t
    rss = [int(line.split()[1]) for line in r.stderr.splitlines() if line.startswith("PEAK_RSS_KB")]
    first = r.stdout.splitlines()[0] if r.stdout else ""
    verdict = "valid" if '"valid": true' in first else (first[first.find('"problems"'):][:160] or r.stderr[-300:])
    return {"exit": r.returncode, "wall_s": round(wall, 2),
            "peak_rss_mb": round(rss[0] / 1024) if rss else None,
            "verdict": verdict}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=Path("/tmp/onemodel-bounds"))
    p.add_argument("--nodes", type=int, default=2_000_000)
    p.add_argument("--tensors", type=int, default=200_000)
    p.add_argument("--subgraphs", type=int, default=50_000)
    p.add_argument("--data-mb", type=int, default=100)
    p.add_argument("--as-limit-gb", type=int, default=12, help="address-space cap of the checked process")
    p.add_argument("--only", nargs="*", help="case name prefixes to run")
    args = p.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    cases = [
        (f"nodes-{args.nodes}", lambda q: nodes_model(q, args.nodes)),
        (f"tensors-{args.tensors}", lambda q: tensors_model(q, args.tensors)),
        (f"subgraphs-{args.subgraphs}", lambda q: subgraphs_model(q, args.subgraphs)),
        (f"data-{args.data_mb}MB", lambda q: data_model(q, args.data_mb << 20)),
        ("manifest-600MiB", big_manifest_header),
    ]
    for name, make in cases:
        if args.only and not any(name.startswith(o) for o in args.only):
            continue
        path = args.out / f"{name}.onemodel"
        t = time.perf_counter()
        size = make(path)
        gen = time.perf_counter() - t
        res = run_check(path, args.as_limit_gb)
        print(f"{name}: {size / 1e6:.1f} MB (generated in {gen:.1f} s) -> {res}", flush=True)
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
