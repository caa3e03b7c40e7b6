"""The statistics and the diff through the compiled kernels: same figures for any thread count and chunk
size, cancel and the file re-check between the kernels' pieces, and the numpy fallback when the module is
missing (one line on stderr)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

from onemodel_viewer import kernels as K
from onemodel_viewer.analysis.diff import tensors as T
from onemodel_viewer.analysis.stats import patterns as P
from onemodel_viewer.analysis.stats.compute import Cancelled, compute_stats, compute_stats_group
from onemodel_viewer.format.dtypes import DTYPES, DataType, encode
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage

compiled = pytest.mark.skipif(K.KERNELS is None, reason="compiled kernels disabled (ONEMODEL_VIEW_NO_KERNELS)")


def _tensor(vals: np.ndarray, code: int, storage_type=BytesStorage, where: str = "t") -> Tensor:
    data = encode(vals, DTYPES[code])
    return Tensor(where, code, (vals.size,), storage=storage_type(data), file_offset=0, length=len(data), where=where)


def _weights(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n) * 0.02 + 0.001
    v[::977] = 0.0
    return v


@pytest.mark.parametrize("code", [DataType.FLOAT, DataType.DOUBLE, DataType.INT32, DataType.UINT64, DataType.FLOAT16,
                                  DataType.BFLOAT16])
def test_figures_are_the_same_bits_for_any_thread_count_and_chunk_size(code):
    v = _weights(700_001, int(code))  # odd length, several 1 MiB blocks
    if not DTYPES[code].is_float:
        v = (v * 1e9).astype(np.int64)
        if code == DataType.UINT64:
            v = np.abs(v) + 2**60  # beyond 2^53
    else:
        v = v.astype(DTYPES[code].numpy)
        v[5] = np.nan
        v[6] = -np.inf
    t = _tensor(v, code)
    runs = {(threads, chunk): compute_stats(t, threads=threads, chunk_bytes=chunk)
            for threads in (1, 2, 16) for chunk in (1 << 20, 3 << 20, 8 << 20)}
    first = next(iter(runs.values()))
    for key, s in runs.items():
        assert repr(s) == repr(first), key
    assert first.finite == v.size - (2 if DTYPES[code].is_float else 0)


def test_diff_sums_are_the_same_bits_for_any_thread_count():
    a = _weights(3_000_001, 5).astype(np.float32)
    b = a * np.float32(1.001)
    ta, tb = _tensor(a, DataType.FLOAT), _tensor(b, DataType.FLOAT)
    runs = [T.compare_tensors([(ta, tb)], threads=n)[0] for n in (1, 2, 16)]
    assert runs[0] is not None and runs[0].differing > 0
    assert all(repr(r) == repr(runs[0]) for r in runs)


class _CancelAfter:
    def __init__(self, n: int) -> None:
        self.left = n

    def is_set(self) -> bool:
        self.left -= 1
        return self.left < 0


class _Counting:
    """The compiled module, counting its count16 calls and running ``hook`` at each."""

    def __init__(self, hook=None) -> None:
        self.calls = 0
        self.hook = hook

    def count16(self, *a):
        self.calls += 1
        if self.hook is not None:
            self.hook()
        return K.KERNELS.count16(*a)


@compiled
def test_group_cancel_between_kernel_pieces(monkeypatch):
    """The group path checks cancel between the compiled count's pieces, not only between tensors."""
    counting = _Counting()
    monkeypatch.setattr(P, "KERNELS", counting)
    monkeypatch.setattr(P, "KERNEL_PIECE", 1000)
    t = _tensor(_weights(25_000, 1).astype(np.float16), DataType.FLOAT16)
    with pytest.raises(Cancelled):
        compute_stats_group([t], cancel=_CancelAfter(3))  # _start looks once, then one look between pieces passes
    assert 1 <= counting.calls <= 3  # stopped after a few of its 25 pieces


class _Withdrawn(BytesStorage):
    gone = False

    def check(self) -> None:
        if self.gone:
            raise FormatError(Kind.IO, "file", None, "changed on disk")


@compiled
def test_group_rechecks_the_file_after_the_compiled_count(monkeypatch):
    """Counts read from a mapping withdrawn while the kernel counted them (zeros) never pass as data."""
    gone = _tensor(_weights(20_000, 2).astype(np.float16), DataType.FLOAT16, _Withdrawn, "gone")
    monkeypatch.setattr(P, "KERNELS", _Counting(lambda: setattr(gone.storage, "gone", True)))
    with pytest.raises(FormatError) as e:
        compute_stats_group([gone, _tensor(_weights(20_000, 3).astype(np.float16), DataType.FLOAT16)])
    assert (e.value.kind, e.value.where) == (Kind.IO, "file")


class _Changing(BytesStorage):
    changed = False

    def check(self) -> None:
        if self.changed:
            raise FormatError(Kind.IO, "b", None, "changed on disk")


@compiled
def test_a_file_changed_while_the_diff_kernel_reads_it_is_reported(monkeypatch):
    a = np.arange(1000, dtype=np.float32)
    ta, tb = _tensor(a, DataType.FLOAT), _tensor(a * 2, DataType.FLOAT, _Changing)
    real = T._kernel_elements

    def racing(*args, **kw):
        real(*args, **kw)
        tb.storage.changed = True

    monkeypatch.setattr(T, "_kernel_elements", racing)
    for run in (lambda: T.compare_tensors([(ta, tb)], threads=1), lambda: T.compare_data(ta, tb)):
        tb.storage.changed = False
        with pytest.raises(FormatError) as e:
            run()
        assert e.value.kind == Kind.IO


@compiled
def test_the_kernels_release_the_gil():
    """Another thread runs while a kernel counts (the GIL is released in the loop)."""
    codes = np.zeros(1 << 26, dtype=np.uint16)  # 128 MiB: ~50 ms of counting
    ticks = []
    done = threading.Event()

    def ticker():
        while not done.is_set():
            ticks.append(1)

    th = threading.Thread(target=ticker)
    th.start()
    try:
        before = len(ticks)
        out = np.zeros(1 << 16, dtype=np.int64)
        K.KERNELS.count16(codes, out)
        during = len(ticks) - before
    finally:
        done.set()
        th.join()
    assert out[0] == codes.size
    assert during > 100  # with the GIL held the ticker would get at most a switch interval's worth


_FALLBACK = """
import sys, json
sys.modules["onemodel_viewer.ckernels"] = None  # as if it was never built
import numpy as np
from onemodel_viewer import kernels
from onemodel_viewer.analysis.stats.compute import compute_stats
from onemodel_viewer.format.dtypes import DTYPES, encode
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage
v = np.arange(-5, 100_000, dtype=np.float32)
data = encode(v, DTYPES[1])
s = compute_stats(Tensor("t", 1, (v.size,), storage=BytesStorage(data), file_offset=0, length=len(data)))
print(json.dumps([kernels.KERNELS is None, s.min, s.max, s.finite]))
"""


def test_a_missing_module_falls_back_to_numpy_with_one_line_on_stderr():
    env = {k: v for k, v in os.environ.items() if k != K.ENV}
    proc = subprocess.run([sys.executable, "-c", _FALLBACK], env=env, capture_output=True, text=True, check=True)
    assert json.loads(proc.stdout) == [True, -5.0, 99_999.0, 100_005]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and "compiled kernels not available" in lines[0]


def test_the_environment_variable_forces_the_fallback_silently():
    env = dict(os.environ, **{K.ENV: "1"})
    code = "from onemodel_viewer import kernels; print(kernels.KERNELS is None)"
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "True" and proc.stderr == ""


_SAME_BITS = """
import importlib.util, sys, pickle
import numpy as np
spec = importlib.util.spec_from_file_location("ckernels", sys.argv[1])
K = importlib.util.module_from_spec(spec)
spec.loader.exec_module(K)
rng = np.random.default_rng(5)
out = []
for dt, kind in ((np.float32, 2), (np.float64, 3), (np.int32, 8), (np.uint64, 11)):
    x = rng.standard_normal(300_007) * 3 + 0.5
    x = x.astype(dt) if kind in (2, 3) else (x * 1e6).astype(np.int64).astype(dt)
    out.append(K.figures(x, kind))
    c = np.zeros(32, np.int64)
    lo, hi = float(x.min()), float(x.max())
    K.hist32(x, kind, 0 if kind == 2 else 1, lo, 32 / (hi - lo), hi, c)
    out.append(c.tolist())
for kind, dt in ((0, np.float16), (2, np.float32), (3, np.float64)):
    a = rng.standard_normal(100_003).astype(dt)
    out.append(K.diff(a, (a * (1 + 0.01 * rng.standard_normal(a.size))).astype(dt), kind))
a16 = rng.integers(0, 1 << 16, 100_003, dtype=np.uint16)
out.append(K.diff(a16, a16[::-1].copy(), 1))
t = np.zeros(1 << 16, np.int64)
K.count16(a16, t)
out.append(t.tolist())
print(pickle.dumps(out).hex())
"""


@compiled
@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None or not os.path.exists("/proc/cpuinfo"), reason="no gcc, or not Linux")
def test_the_same_bits_from_every_build(tmp_path):
    """Broke: built without optimisation, the AVX2 clones called the 32-byte vector helpers out of line, across
    two calling conventions, and read garbage (min -1.5e35, sums off by 10^4). The helpers are always inlined
    now; a build at -O0, one for the baseline instruction set and one for AVX2 give the installed module's bits."""
    import sysconfig

    src = os.path.join(os.path.dirname(K.__file__), "ckernels.c")
    include = sysconfig.get_paths()["include"]
    results = {subprocess.run([sys.executable, "-c", _SAME_BITS, K.KERNELS.__file__], capture_output=True, text=True,
                              check=True).stdout}
    builds = [["-O0"], ["-O3", "-DOMV_NO_CLONES"]]
    with open("/proc/cpuinfo") as f:
        if " avx2" in f.read():  # (a CPU without it would die on an illegal instruction)
            builds.append(["-O3", "-mavx2", "-DOMV_NO_CLONES"])
    for flags in builds:
        so = str(tmp_path / f"ck{len(results)}{flags[-1].strip('-')}.so")
        subprocess.run(["gcc", "-shared", "-fPIC", "-ffp-contract=off", "-Wno-psabi", *flags, "-I", include, src, "-o", so],
                       check=True, capture_output=True)
        out = subprocess.run([sys.executable, "-c", _SAME_BITS, so], capture_output=True, text=True, check=True).stdout
        assert out in results, flags
