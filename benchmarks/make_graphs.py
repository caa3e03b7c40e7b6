"""Graph-heavy ``.onemodel`` files for the viewer and ``--check`` scale figures (files under /tmp only).

``python -m benchmarks.make_graphs --nodes 100000 [--nodes 1000000 ...] [--out /tmp/omv-bench]``
writes ``OUT/graph-<nodes>/model.onemodel`` (reused while :data:`GENERATOR_VERSION` and the node
count are unchanged: ``summary.json``).

The model: one float32 input ``x`` [1, 16], then blocks of ten nodes (Mul by a weight, residual
Add, Relu, Sigmoid, Mul, Transpose ``perm``, Softmax ``axis``, Neg, Sub, Identity), each block
with one float32 weight of 16 values (64 bytes): many nodes, small weights (100,000 tensors and
~115 MB of manifest for 10^6 nodes; 2,000,000 nodes give a ~230 MB manifest). Written directly
in the writer's canonical form (compact JSON, fields in the spec's order, tensors at multiples
of 64 in the data region), so ``--check`` finds nothing; deterministic (seeded weights).
The manifest is built a block list at a time (never one dict of the whole model in memory).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
import time

import numpy as np

GENERATOR_VERSION = 1
ALIGN = 64
WIDTH = 16
BLOCK = 10
_HEADER = struct.Struct("<8sIIQQQQQQ")


def _block(b: int, x: str) -> tuple[list[str], str]:
    """The JSON of block ``b``'s ten nodes (input value ``x``); (node texts, output value)."""
    v = lambda k: f"v{b}.{k}"  # noqa: E731
    w = f"w{b}"
    specs = [
        ("Mul", [x, w], ""),
        ("Add", [v(0), x], ""),
        ("Relu", [v(1)], ""),
        ("Sigmoid", [v(2)], ""),
        ("Mul", [v(2), v(3)], ""),
        ("Transpose", [v(4)], '{"name":"perm","type":7,"value":[0,1]}'),
        ("Softmax", [v(5)], '{"name":"axis","type":2,"value":-1}'),
        ("Neg", [v(6)], ""),
        ("Sub", [v(6), v(7)], ""),
        ("Identity", [v(8)], ""),
    ]
    out = []
    for k, (op, ins, attr) in enumerate(specs):
        out.append('{"name":"n%d.%d","op":"%s","domain":"","overload":"","inputs":%s,"outputs":["%s"],"attributes":[%s]}'
                   % (b, k, op, json.dumps(ins, separators=(",", ":")), v(k), attr))
    return out, v(9)


def write(path: str, nodes: int, reverse: bool = False) -> dict:
    """Write the model with ``nodes`` nodes (rounded up to a multiple of 10) to ``path``; a summary.

    ``reverse``: the nodes stored in reverse dependency order (the last node first: ``--check``
    reports ``out-of-order`` and sorts them)."""
    blocks = max(1, -(-nodes // BLOCK))
    parts: list[bytes] = [
        b'{"format":"onemodel","version":1,"ir_version":8,"producer_name":"omv-bench-graph",'
        b'"producer_version":"%d","opsets":[{"domain":"","version":17}],"graph":{"name":"graph",'
        b'"inputs":[{"name":"x","type":{"kind":"tensor","elem":1,"shape":[1,%d]}}],' % (GENERATOR_VERSION, WIDTH),
    ]
    last = f"v{blocks - 1}.9"
    parts.append(b'"outputs":[{"name":"%s","type":{"kind":"tensor","elem":1,"shape":[1,%d]}}],"value_info":[],'
                 % (last.encode(), WIDTH))
    tbytes = WIDTH * 4  # 64: every tensor starts at a multiple of ALIGN, back to back
    inits = ['{"name":"w%d","dtype":1,"dims":[%d],"data":{"offset":%d,"length":%d}}' % (b, WIDTH, b * tbytes, tbytes)
             for b in range(blocks)]
    parts.append(('"initializers":[' + ",".join(inits) + '],"sparse_initializers":[],"nodes":[').encode())
    del inits
    x = "x"
    step = 10_000
    for start in range(0, blocks, step):
        texts = []
        span = range(start, min(blocks, start + step))
        for b in (reversed(range(blocks - span.stop, blocks - span.start)) if reverse else span):
            t, x = _block(b, "x" if b == 0 else f"v{b - 1}.9")
            texts.extend(t[::-1] if reverse else t)
        parts.append((("," if start else "") + ",".join(texts)).encode())
    parts.append(b"]}}")
    manifest = b"".join(parts)
    del parts
    data_len = blocks * tbytes
    data_off = -(-(64 + len(manifest)) // ALIGN) * ALIGN
    rng = np.random.default_rng(20260219)
    weights = (1.0 + 0.01 * rng.standard_normal(blocks * WIDTH)).astype("<f4")
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(_HEADER.pack(b"ONEMODEL", 1, 0, 64, len(manifest), data_off, data_len, data_off + data_len, 0))
        f.write(manifest)
        f.write(b"\0" * (data_off - 64 - len(manifest)))
        f.write(weights.tobytes())
    os.replace(tmp, path)
    return {"nodes": blocks * BLOCK, "tensors": blocks, "manifest_bytes": len(manifest), "data_bytes": data_len,
            "file_bytes": data_off + data_len, "generator": GENERATOR_VERSION, "path": path}


def ensure(nodes: int, out: str, *, quiet: bool = False, reverse: bool = False) -> dict:
    """``OUT/graph-<nodes>/model.onemodel`` (``graph-<nodes>-reversed``: nodes in reverse dependency order),
    written unless an up-to-date one is there; its summary."""
    out_dir = os.path.join(out, f"graph-{nodes}" + ("-reversed" if reverse else ""))
    path = os.path.join(out_dir, "model.onemodel")
    stamp = os.path.join(out_dir, "summary.json")
    if os.path.exists(stamp) and os.path.exists(path):
        with open(stamp) as f:
            summary = json.load(f)
        if summary.get("generator") == GENERATOR_VERSION and summary.get("requested") == nodes \
                and os.path.getsize(path) == summary.get("file_bytes"):
            return summary
    os.makedirs(out_dir, exist_ok=True)
    t0 = time.perf_counter()
    summary = write(path, nodes, reverse) | {"requested": nodes}
    if not quiet:
        print(f"wrote {path}: {summary['nodes']:,} nodes, {summary['tensors']:,} tensors, "
              f"{summary['manifest_bytes'] / 1e6:.0f} MB manifest in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    with open(stamp, "w") as f:
        json.dump(summary, f, indent=1)
    return summary


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.make_graphs", description=__doc__.split("\n\n")[0])
    ap.add_argument("--nodes", type=int, action="append", help="node count (repeatable; default 100000)")
    ap.add_argument("--out", default="/tmp/omv-bench", help="output directory (default /tmp/omv-bench)")
    ap.add_argument("--reverse", action="store_true", help="nodes in reverse dependency order (graph-<N>-reversed)")
    args = ap.parse_args(argv)
    for n in args.nodes or [100_000]:
        print(json.dumps(ensure(n, args.out, reverse=args.reverse), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
