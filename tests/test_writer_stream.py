"""Streaming: converting big external weights in bounded memory, at disk speed (opt-in, slow).

Run with ``ONEMODEL_STREAM_GIB=1 python -m pytest tests/test_writer_stream.py -q -s`` (size in GiB;
needs about 3x that much free disk in the temp folder). Skipped otherwise. It builds an ONNX
model whose weights are real pseudo-random bytes in an external file, then times
``onemodel-view --convert`` (and ``--export`` back) against ``cp`` of the weights file, each in a
fresh process whose peak RSS is read from ``wait4``, with ``sync`` included in every timing.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

GIB = float(os.environ.get("ONEMODEL_STREAM_GIB", "0") or 0)
pytestmark = [pytest.mark.slow, pytest.mark.skipif(GIB <= 0, reason="set ONEMODEL_STREAM_GIB to run")]
TENSOR = 64 << 20


def _make(folder, gib: float) -> tuple[str, str]:
    n = max(1, int(gib * (1 << 30) // TENSOR))
    data = os.path.join(folder, "w.data")
    block = np.random.default_rng(0).integers(0, 256, TENSOR, dtype=np.uint8).tobytes()
    with open(data, "wb") as f:
        for i in range(n):
            f.write(block[i % 61 :] + block[: i % 61])
    inits = []
    for i in range(n):
        t = onnx.TensorProto(name=f"w{i}", data_type=TP.FLOAT, dims=[TENSOR // 4])
        t.data_location = TP.EXTERNAL
        for k, v in (("location", "w.data"), ("offset", str(i * TENSOR)), ("length", str(TENSOR))):
            e = t.external_data.add()
            e.key, e.value = k, v
        inits.append(t)
    outs = [helper.make_tensor_value_info(f"w{i}", 1, [TENSOR // 4]) for i in range(n)]
    m = helper.make_model(helper.make_graph([], "g", [], outs, initializer=inits))
    m.ir_version = 10
    src = os.path.join(folder, "m.onnx")
    with open(src, "wb") as f:
        f.write(m.SerializeToString())
    return src, data


def _child(cmd: list[str], tmp) -> tuple[float, float]:
    """(seconds including a final sync, peak RSS in MiB) of one fresh process.

    RSS comes from GNU time when present: a child spawned straight from pytest
    would report pytest's own pages it shared before exec.
    """
    timer = shutil.which("time") or "/usr/bin/time"
    rss_file = os.path.join(tmp, "rss.txt")
    if os.path.exists(timer):
        cmd = [timer, "-f", "%M", "-o", rss_file] + cmd
    os.sync()
    t = time.perf_counter()
    pid = os.posix_spawn(cmd[0], cmd, os.environ)
    _, status, ru = os.wait4(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, cmd
    os.sync()
    elapsed = time.perf_counter() - t
    if os.path.exists(rss_file):
        with open(rss_file) as f:
            return elapsed, int(f.read().split()[-1]) / 1024
    return elapsed, ru.ru_maxrss / 1024


@pytest.fixture
def folder():
    """Its own folder: concurrent pytest runs prune old ``tmp_path`` folders, even mid-test."""
    path = tempfile.mkdtemp(prefix="onemodel-stream-")
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def test_convert_streams_external_weights(folder):
    tmp_path = folder
    src, data = _make(str(tmp_path), GIB)
    size = os.path.getsize(data)
    exe = [sys.executable, "-m", "onemodel_viewer"]
    cp, conv = [], []
    for _ in range(3):
        cp.append(_child([shutil.which("cp") or "/bin/cp", data, str(tmp_path / "cp.out")], str(tmp_path))[0])
        os.unlink(tmp_path / "cp.out")
        conv.append(_child(exe + ["--convert", src, str(tmp_path / "m.onemodel")], str(tmp_path)))
    t_cp, t_conv = statistics.median(cp), statistics.median(c[0] for c in conv)
    rss = max(c[1] for c in conv)
    t_exp, rss_exp = _child(exe + ["--export", str(tmp_path / "m.onemodel"), str(tmp_path / "back.onnx")], str(tmp_path))
    print(f"\n{size / 2**30:.2f} GiB: cp {size / t_cp / 1e9:.2f} GB/s, convert {size / t_conv / 1e9:.2f} GB/s "
          f"({t_cp / t_conv:.0%} of cp), peak RSS {rss:.0f} MiB; export {size / t_exp / 1e9:.2f} GB/s, peak RSS {rss_exp:.0f} MiB")
    assert rss < 512 and rss_exp < 512
    # Disks here swing 0.1-1.4 GB/s between runs: allow for that and for the ~0.5 s of Python start-up.
    assert t_conv <= 2 * t_cp + 1.0, "convert much slower than cp"
