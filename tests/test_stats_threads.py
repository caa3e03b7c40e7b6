"""analysis.stats: the figures are a function of the tensor alone, the same bits whatever the threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

from onemodel_viewer.analysis.stats.compute import compute_stats
from onemodel_viewer.analysis.stats.batch import compute_stats_many
from onemodel_viewer.format.dtypes import DTYPES, DataType, encode
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage

N = (3 << 20) + 12_345
"""Elements: 12 MiB and more of float32, several 8 MiB chunks and several 1 MiB blocks."""


def make(code: int, values) -> Tensor:
    data = encode(np.asarray(values), DTYPES[code])
    return Tensor("t", code, (len(values),), storage=BytesStorage(data), file_offset=0, length=len(data), where="t")


def order_sensitive(code: int, n: int = N, seed: int = 3) -> np.ndarray:
    """Values over twelve decades around an offset, with NaN/Inf/zeros: sums in another order round otherwise."""
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n) * 10.0 ** rng.uniform(-6, 6, n) + 1234.5
    v[::1000] = 0.0
    v[5], v[n // 2], v[n - 3] = np.nan, np.inf, -np.inf
    if code == DataType.BFLOAT16:
        return v.astype(ml_dtypes.bfloat16)
    with np.errstate(all="ignore"):
        return v.astype(DTYPES[code].numpy)


CODES = [DataType.FLOAT, DataType.FLOAT16, DataType.BFLOAT16, DataType.DOUBLE]


@pytest.mark.parametrize("code", CODES, ids=lambda c: DTYPES[c].name)
def test_same_bits_for_1_2_3_threads(code):
    """Regression: float32 figures differed in their last bits between 1 and 2 threads (45 of 3,773 tensors
    of the 1G benchmark model): the work units were sized from the thread count, and the merge of the
    partial sums followed the units."""
    t = make(code, order_sensitive(code))
    runs = [compute_stats(t, threads=k) for k in (1, 2, 3)]
    assert runs[1] == runs[0]
    assert runs[2] == runs[0]


@pytest.mark.parametrize("n", [(1 << 20) + 7, (2 << 20) + 1, (5 << 20) + 3])
def test_same_bits_at_sizes_around_the_units(n):
    """Float32 tensors of 4, 8 and 20 MiB (one to three chunks, units finer than a chunk) on 1 to 3 threads."""
    t = make(DataType.FLOAT, order_sensitive(DataType.FLOAT, n, seed=n))
    runs = [compute_stats(t, threads=k) for k in (1, 2, 3)]
    assert runs[1] == runs[0] and runs[2] == runs[0]


@pytest.mark.parametrize("code", [DataType.FLOAT, DataType.DOUBLE], ids=lambda c: DTYPES[c].name)
def test_same_bits_for_any_chunk_of_whole_blocks(code):
    """Chunks of 1, 3 and 8 MiB (the default) and one chunk for the whole tensor: the blocks, and so the bits,
    stay (the partial sums were merged chunk by chunk: other last bits per chunk size)."""
    t = make(code, order_sensitive(code, seed=4))
    runs = [compute_stats(t, threads=1, chunk_bytes=c) for c in (1 << 20, 3 << 20, 8 << 20, 1 << 30)]
    assert all(r == runs[0] for r in runs[1:])


def test_many_tensors_give_each_tensors_own_bits():
    """compute_stats_many (small tensors one thread each, side by side) equals compute_stats on any thread count."""
    ts = [make(c, order_sensitive(c, n, seed=n)) for c in (DataType.FLOAT, DataType.DOUBLE)
          for n in (300_001, (1 << 20) + 5)]
    want = [compute_stats(t, threads=2) for t in ts]
    for k in (1, 2, 3):
        assert compute_stats_many(ts, threads=k) == want


_CHILD = """
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
from tests.test_stats_threads import make, order_sensitive
from onemodel_viewer.analysis.stats.compute import compute_stats
out = []
for code in (1, 11):
    s = compute_stats(make(code, order_sensitive(code, 400_003, seed=9)), threads=2)
    out.append([s.mean.hex(), s.std.hex(), float(s.min).hex(), float(s.max).hex(), list(s.histogram)])
print(json.dumps(out))
"""


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:  # pragma: no cover - not Linux
        pass
    return set()


def test_same_bits_under_every_blas_setting():
    """The figures do not go through BLAS: its kernel (OPENBLAS_CORETYPE) and threads change no bit.

    Each setting runs in a fresh interpreter (OpenBLAS reads them when numpy is imported); only the
    kernels this CPU can run."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    flags = _cpu_flags()
    settings = [{"OPENBLAS_NUM_THREADS": "1"}, {"OPENBLAS_NUM_THREADS": "2"}]
    if {"avx2", "fma"} <= flags:
        settings.append({"OPENBLAS_CORETYPE": "Haswell"})
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        settings.append({"OPENBLAS_CORETYPE": "SkylakeX"})
    results = []
    for extra in settings:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_"))}
        env.update(extra, PYTHONPATH=root)
        done = subprocess.run([sys.executable, "-c", _CHILD, root], env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout))
    assert all(r == results[0] for r in results[1:])
