"""``.ort`` writing figures (issue 26): ``--export SRC DST.ort`` against ``cp`` + ``sync`` and against ONNX Runtime.

``python -m benchmarks.ort_export [--size 1G] [--ort-size 512M] [--repeat 3] [--models /tmp/omv-bench]``
uses the benchmark models (``benchmarks.make_models``) and measures whole processes (wall time, peak
RSS), alternating the runs compared, median of ``--repeat``:

* the ``--size`` model's ``model.onemodel`` and its external-data ``model_ext.onnx`` to ``.ort``
  against ``cp`` of the same bytes (the .onemodel file; the .onnx's weights file) followed by ``sync``:
  target at most 1.5x, peak RSS under 300 MiB;
* the ``--ort-size`` model (``model_ext.onnx``) to ``.ort`` by this tool and by ONNX Runtime's converter
  (an ``InferenceSession`` with ``optimized_model_filepath`` and optimisations off, as
  ``convert_onnx_models_to_ort`` does without its optimisations): time and peak RSS of each; target at
  least 3x faster with at most a quarter of its memory. Skipped without onnxruntime.

Outputs go to /tmp/omv-ort-bench and are removed after each run. The load average is printed: on a
shared machine compare the ratios, not the seconds.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shutil
import statistics
import sys

from .make_models import ensure, parse_size
from .proc import run_proc

OUT = "/tmp/omv-ort-bench"
NO_BYTECODE_OFF = {"PYTHONDONTWRITEBYTECODE": None}
CONVERTER = """
import sys, onnxruntime as ort
so = ort.SessionOptions()
so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
so.optimized_model_filepath = sys.argv[2]
so.add_session_config_entry("session.save_model_format", "ORT")
so.log_severity_level = 3
ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
"""


def _fresh() -> str:
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    return OUT


def export(src: str) -> tuple[float, int]:
    p = run_proc([sys.executable, "-m", "onemodel_viewer", "--export", src, os.path.join(_fresh(), "m.ort")],
                 env=NO_BYTECODE_OFF)
    assert p.rc == 0, p.err
    return p.seconds, p.maxrss


def cp_sync(data: str) -> float:
    c = run_proc(["sh", "-c", 'cp "$0" "$1" && sync', data, os.path.join(_fresh(), "copy.bin")])
    assert c.rc == 0, c.err
    return c.seconds


def converter(src: str) -> tuple[float, int]:
    p = run_proc([sys.executable, "-c", CONVERTER, src, os.path.join(_fresh(), "conv.ort")], env=NO_BYTECODE_OFF)
    assert p.rc == 0, p.err
    return p.seconds, p.maxrss


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", default="1G")
    ap.add_argument("--ort-size", default="512M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--models", default="/tmp/omv-bench")
    args = ap.parse_args(argv)
    mib = 2 ** 20
    summary = ensure(parse_size(args.size), args.models, quiet=True)
    print(f"load average at start {os.getloadavg()[0]:.2f}; median of {args.repeat}, alternating")
    for label, src, data in (("model.onemodel", summary["onemodel"], summary["onemodel"]),
                             ("model_ext.onnx", summary["onnx_ext"], summary["onnx_ext"] + ".data")):
        ours, base, rss = [], [], []
        for _ in range(args.repeat):
            s, r = export(src)
            ours.append(s)
            rss.append(r)
            base.append(cp_sync(data))
        o, b = statistics.median(ours), statistics.median(base)
        print(f"{args.size} {label} -> .ort: {o:.2f} s; cp + sync of {os.path.getsize(data) / mib:,.0f} MiB {b:.2f} s; "
              f"ratio {o / b:.2f}x (target <= 1.5x); peak RSS {max(rss) / mib:.0f} MiB (target < 300 MiB)")
    if importlib.util.find_spec("onnxruntime") is None:
        print("onnxruntime not installed: the converter comparison is skipped")
    else:
        src = ensure(parse_size(args.ort_size), args.models, quiet=True)["onnx_ext"]
        ours, theirs = [], []
        for _ in range(args.repeat):
            ours.append(export(src))
            theirs.append(converter(src))
        os_, or_ = statistics.median(s for s, _ in ours), max(r for _, r in ours)
        ts, tr = statistics.median(s for s, _ in theirs), max(r for _, r in theirs)
        print(f"{args.ort_size} model_ext.onnx -> .ort: this tool {os_:.2f} s, peak RSS {or_ / mib:.0f} MiB; "
              f"ONNX Runtime's converter {ts:.2f} s, peak RSS {tr / mib:.0f} MiB; "
              f"{ts / os_:.2f}x faster (target >= 3x), {or_ / tr:.2f} of its memory (target <= 0.25)")
    shutil.rmtree(OUT, ignore_errors=True)
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
