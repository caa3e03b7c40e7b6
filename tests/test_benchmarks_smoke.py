"""The benchmark suite runs end to end on a tiny model and prints its table (no time is asserted)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:  # `benchmarks` is not an installed package
    sys.path.insert(0, ROOT)


@pytest.mark.slow
def test_benchmark_suite_smoke(tmp_path):
    md = tmp_path / "bench.md"
    js = tmp_path / "bench.json"
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--size", "4M", "--repeat", "1", "--min-process-runs", "1", "--out", str(tmp_path),
         "--markdown", str(md), "--json", str(js), "--scale-nodes", "200,1000,2000", "--keys", "4", "--key-runs", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    for figure in ("--check --json", "library open", "first complete viewer screen", "stats of the largest float32",
                   "float16 stats throughput", "--convert", "--diff --json", "onnx.load"):
        assert figure in r.stdout
    rows = json.loads(js.read_text())["rows"]
    assert {row["result"] for row in rows} <= {"pass", "FAIL", "n/a"}
    # every command the suite drives actually ran (a row with a number, not "n/a")
    measured = {row["figure"].split(" (")[0] for row in rows if row["project"] != "n/a"}
    assert any(f.startswith("--check") for f in measured)
    assert any(f.startswith("--convert") for f in measured)
    assert md.read_text().startswith("onemodel-view benchmarks")
    assert "| figure | target | 4M |" in md.read_text() and "| figure | project |" in md.read_text()


@pytest.mark.slow
def test_benchmark_sizes_and_scale_figures_smoke(tmp_path):
    """`--size A,B` (one column per size) and the size-independent figures at tiny node counts."""
    js = tmp_path / "bench.json"
    md = tmp_path / "bench.md"
    r = subprocess.run(
        [sys.executable, "-m", "benchmarks", "--size", "4M,8M", "--repeat", "1", "--min-process-runs", "1",
         "--out", str(tmp_path), "--only", "check,open,screens,keys,check_big", "--scale-nodes", "200,1000,2000",
         "--keys", "4", "--key-runs", "1", "--json", str(js), "--markdown", str(md)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    data = json.loads(js.read_text())
    assert list(data["sizes"]) == ["4M", "8M"]
    for rows in data["sizes"].values():
        figures = [row["figure"] for row in rows]
        assert any(f.startswith("--check --json") for f in figures)
        assert any("vs orjson.loads" in f for f in figures)
    scale = {row["figure"]: row for row in data["scale"]}
    for prefix in ("first complete viewer screen, 200-node", "first complete viewer screen, 1,000-node",
                   "time to first screen in the key-latency run", "key latency while background work runs, max",
                   "--check --json, 2,000-node", "  its peak RSS vs the manifest size"):
        assert any(f.startswith(prefix) for f in scale), prefix
    assert all(row["result"] in ("pass", "FAIL", "n/a") for row in data["rows"])
    latency = next(row for f, row in scale.items() if f.startswith("time to first screen in the key-latency"))
    assert latency["project"] != "n/a"  # the viewer drew a screen in the pty and answered keys
    text = md.read_text()
    assert "| figure | target | 4M | 8M |" in text and "Figures independent of `--size`" in text


def test_make_graphs_is_deterministic_and_valid(tmp_path):
    from benchmarks import make_graphs

    a = make_graphs.ensure(1000, str(tmp_path / "a"), quiet=True)
    b = make_graphs.ensure(1000, str(tmp_path / "b"), quiet=True)
    assert a["nodes"] == 1000 and a["tensors"] == 100
    assert open(a["path"], "rb").read() == open(b["path"], "rb").read()
    assert make_graphs.ensure(1000, str(tmp_path / "a"), quiet=True) == a  # cached
    from onemodel_viewer import format as omf

    doc = omf.open(a["path"])
    try:
        assert len(doc.model.graph.nodes) == 1000 and not doc.problems
    finally:
        doc.close()


def test_make_models_is_deterministic(tmp_path):
    from benchmarks import make_models

    a = make_models.build(str(tmp_path / "a"), 1 << 20)
    b = make_models.build(str(tmp_path / "b"), 1 << 20)
    assert a == b and a["tensors"] > 50 and a["nodes"] > 200
    for name in ("model_ext.onnx", "model_ext.onnx.data"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    import onnx

    m = onnx.load(str(tmp_path / "a" / "model_ext.onnx"))  # external data resolves
    onnx.checker.check_model(m)


def test_size_parsing():
    from benchmarks.make_models import parse_size, size_label

    assert parse_size("64M") == 64 << 20 and parse_size("4G") == 4 << 30 and parse_size("1GiB") == 1 << 30
    assert parse_size("1000") == 1000 and size_label(4 << 30) == "4G" and size_label(8 << 20) == "8M"


def test_shape_inference_benchmark_smoke(capsys):
    """benchmarks/shape_inference.py runs on a small model and prints its ratio against infer_shapes."""
    from benchmarks import shape_inference

    assert shape_inference.main([os.path.join(ROOT, "testdata", "valid", "showcase.onemodel"), "--repeat", "1"]) == 0
    out = capsys.readouterr().out
    assert "infer_shapes in process (baseline)" in out and "target <= 2x" in out


def test_diff_rows_reject_a_crashed_run():
    """A --diff that crashed (a traceback exits 1, like "different") was timed as a result: 40 ms, "0.10x pass"."""
    from benchmarks.proc import Proc
    from benchmarks.run import diff_says

    crashed = Proc(0.04, 1, 1 << 24, 1 << 23, "", "Traceback (most recent call last):\nImportError: x")
    assert diff_says(0)(crashed).startswith("exit status 1, want 0")
    assert diff_says(1)(crashed).startswith("no JSON result")
    assert diff_says(1)(Proc(1.0, 1, 1, 1, '{"equal": true}', "")).startswith("JSON says equal=True")
    assert diff_says(1)(Proc(1.0, 1, 1, 1, '{"equal": false, "differences": []}', "")) == ""
    assert diff_says(0)(Proc(1.0, 0, 1, 1, '{"equal": true}', "")) == ""


def test_diff_pairs_are_the_compared_bytes(tmp_path):
    """The diff figure's baseline rebuilt its tensor pairs by name; it now takes the diff's own pairs (same bytes)."""
    import numpy as np

    from onemodel_viewer import format as omf
    from onemodel_viewer.analysis.diff.compare import staged
    from benchmarks import make_models

    s = make_models.ensure(make_models.parse_size("4M"), str(tmp_path))
    a, b = omf.open(s["onemodel"]), omf.open(s["onnx_ext"])
    try:
        st = staged(a, b)
        assert st.pairs and sum(min(x.length, y.length) for x, y in st.pairs) == st.total_bytes
        for x, y in st.pairs:
            assert x.name == y.name and np.array_equal(x.raw(), y.raw())
    finally:
        a.close()
        b.close()


def test_diff_kernel_figure_runs():
    """``python -m benchmarks.diff_changed --kernel``: one line per dtype of the benchmark model, each a CPU time
    per element and a throughput (no time is asserted)."""
    from benchmarks import diff_changed

    lines = diff_changed.kernel(elements=1 << 16, repeat=1)
    assert [line.split()[0] for line in lines] == ["float16", "bfloat16", "float"]
    for line in lines:
        ns, gbs = float(line.split()[1]), float(line.split(",")[1].split()[0])
        assert ns > 0 and gbs > 0
