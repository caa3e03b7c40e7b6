"""analysis.stats_batch: many tensors at once give each tensor's compute_stats, with progress, cancel, errors."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import onemodel_viewer.analysis.stats.batch as B
from onemodel_viewer.analysis.stats.compute import Cancelled, compute_stats
from onemodel_viewer.analysis.stats.batch import compute_stats_many
from onemodel_viewer.format.dtypes import DTYPES, encode
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage


def make(code: int, values, name: str = "t") -> Tensor:
    data = encode(np.asarray(values), DTYPES[code])
    return Tensor(name, code, (len(values),), storage=BytesStorage(data), file_offset=0, length=len(data), where=name)


def model_like(seed: int = 0) -> list[Tensor]:
    """Scalars, small and medium float16/bfloat16 weights (one with NaN/Inf), float32, int8, strings, empty."""
    rng = np.random.default_rng(seed)
    out = []
    for i, n in enumerate([1, 1, 3, 20_000, 70_000, 150_000, 1, 40_000, 0, 5_000]):
        code = (10, 16, 1, 3)[i % 4]
        v = rng.standard_normal(n) * 0.02
        if n > 100 and code in (10, 16, 1):
            v[7], v[8], v[9] = np.nan, np.inf, -np.inf
        with np.errstate(all="ignore"):
            vals = (v * 1000).astype(np.int8) if code == 3 else v.astype(DTYPES[code].numpy)
        out.append(make(code, vals, f"t{i}"))
    out.append(Tensor("s", 8, (2,), strings=(b"ab", b"c"), where="s"))
    return out


@pytest.mark.parametrize("threads", [1, 2])
def test_every_result_is_the_tensors_own(threads, monkeypatch):
    """Each result equals compute_stats of that tensor on the same threads (the small ones ran on one thread each)."""
    monkeypatch.setattr(B, "ALONE_BYTES", 200_000)  # the 150,000-element float16 tensor (300 kB) runs alone
    monkeypatch.setattr(B, "UNIT_BYTES", 50_000)  # several units: the pool's window is used
    ts = model_like()
    got = compute_stats_many(ts, threads=threads)
    alone = [t.length >= B.ALONE_BYTES and threads > 1 for t in ts]
    assert any(alone) or threads == 1
    want = [compute_stats(t, threads=threads) for t in ts]
    assert got == want


def test_progress_counts_every_byte_in_order():
    ts = model_like(1)
    calls = []
    compute_stats_many(ts, threads=2, progress=lambda d, tot: calls.append((d, tot)))
    total = sum(t.length for t in ts)
    assert calls and all(tot == total for _, tot in calls)
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and dones[-1] == total


@pytest.mark.parametrize("threads", [1, 2])
def test_cancel_between_units(threads, monkeypatch):
    monkeypatch.setattr(B, "UNIT_BYTES", 1)  # one tensor per unit
    ts = model_like(2)
    ev = threading.Event()
    calls = []

    def progress(done, total):
        calls.append(done)
        ev.set()

    with pytest.raises(Cancelled):
        compute_stats_many(ts, threads=threads, progress=progress, cancel=ev)
    assert len(calls) == 1


def test_cancel_before_start():
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        compute_stats_many(model_like(), cancel=ev)


@pytest.mark.parametrize("threads", [1, 2])
def test_a_bad_tensor_raises_its_error(threads, monkeypatch):
    monkeypatch.setattr(B, "UNIT_BYTES", 1)
    ts = model_like(3)
    bad = Tensor("bad", 1, (4,), storage=BytesStorage(b"\0" * 12), file_offset=0, length=12, where="manifest.graph.initializers[5]")
    with pytest.raises(FormatError) as e:
        compute_stats_many(ts[:5] + [bad] + ts[5:], threads=threads)
    assert e.value.kind == Kind.INVALID_MODEL and e.value.where == "manifest.graph.initializers[5]"


def test_no_tensors():
    assert compute_stats_many([]) == []
