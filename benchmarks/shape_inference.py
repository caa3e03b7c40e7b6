"""Shape inference as the viewer runs it (in the long-lived helper process) vs ``infer_shapes`` in process.

    python -m benchmarks.shape_inference [/tmp/omv-bench/4G/model.onemodel] [--repeat 7]

Project: ``infer_types(model, isolate=True)``, a whole request of the viewer (the weightless
proto built, sent to the warm helper, inferred there, read back and paired with the records).
Baseline: ``onnx.shape_inference.infer_shapes`` in this process on the weightless proto, built
beforehand. Runs alternate; medians. Target: <= 2x. For information: the helper's part alone,
the first request (the helper's start and onnx import included) and a fresh child per request
(how the viewer did it before the helper).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

DEFAULT = "/tmp/omv-bench/4G/model.onemodel"
_FRESH_CHILD = (
    "import sys\n"
    "from onnx import onnx_cpp2py_export as C\n"
    "sys.stdout.buffer.write(C.shape_inference.infer_shapes(sys.stdin.buffer.read(), False, False, False))\n"
)


def cpu_of(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc, clock ticks)."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def fresh_child(mp) -> None:
    """The previous way: one new child per request."""
    r = subprocess.run([sys.executable, "-c", _FRESH_CHILD], input=mp.SerializeToString(), capture_output=True,
                       check=True)
    import onnx

    onnx.ModelProto.FromString(r.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", default=DEFAULT)
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args(argv)

    import onnx
    from onnx import shape_inference

    from onemodel_viewer import format as omf
    from onemodel_viewer.analysis import shapes
    from onemodel_viewer.helper_process import HelperProcess

    doc = omf.open(args.file, mode="diagnose")
    m = doc.model
    mp = shapes.weightless_proto(m)
    print(f"{args.file}: {len(m.graph.nodes):,} nodes; weightless proto {mp.ByteSize() / 1e6:.1f} MB")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")

    t = time.perf_counter()
    shapes.infer_types(m, isolate=True)  # the process's helper: start, imports, first request
    first = time.perf_counter() - t
    shape_inference.infer_shapes(mp, check_type=False, strict_mode=False, data_prop=False)  # warm-up
    helper = shapes.inference_helper()
    fn = f"{shapes.__name__}:infer_serialized"

    base, ours, part, fresh = [], [], [], []
    cpu_base = cpu_ours = 0.0
    for _ in range(args.repeat):
        c = time.process_time()
        t = time.perf_counter()
        shape_inference.infer_shapes(mp, check_type=False, strict_mode=False, data_prop=False)
        base.append(time.perf_counter() - t)
        cpu_base += time.process_time() - c
        c, cc = time.process_time(), cpu_of(helper.pid)
        t = time.perf_counter()
        r = shapes.infer_types(m, isolate=True)
        ours.append(time.perf_counter() - t)
        cpu_ours += time.process_time() - c + cpu_of(helper.pid) - cc
        assert not r.error, r.error
        t = time.perf_counter()
        onnx.ModelProto.FromString(helper.call(fn, mp.SerializeToString()))
        part.append(time.perf_counter() - t)
    for _ in range(max(1, args.repeat // 3)):
        t = time.perf_counter()
        fresh_child(mp)
        fresh.append(time.perf_counter() - t)
    cold = HelperProcess(preload=("onnx.onnx_cpp2py_export",))
    t = time.perf_counter()
    cold.call(fn, mp.SerializeToString())
    cold_first = time.perf_counter() - t
    cold.close()

    med = statistics.median
    ratio = med(ours) / med(base)
    print(f"infer_shapes in process (baseline): {med(base) * 1000:.0f} ms (median of {args.repeat})")
    print(f"viewer request, warm helper (weightless proto + helper + pairing): {med(ours) * 1000:.0f} ms "
          f"= {ratio:.2f}x  target <= 2x: {'pass' if ratio <= 2 else 'FAIL'}")
    print(f"  CPU time (this process + the helper), mean: {cpu_ours / args.repeat * 1000:.0f} ms vs "
          f"{cpu_base / args.repeat * 1000:.0f} ms = {cpu_ours / cpu_base:.2f}x")
    print(f"  the helper's part alone (serialize, pipe, infer, pipe, parse): {med(part) * 1000:.0f} ms "
          f"= {med(part) / med(base):.2f}x")
    print(f"first request of a new helper (start + onnx import + infer): {cold_first * 1000:.0f} ms; "
          f"the viewer's first request this run: {first * 1000:.0f} ms")
    print(f"a fresh child per request (before): {med(fresh) * 1000:.0f} ms = {med(fresh) / med(base):.2f}x")
    print(f"load after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
