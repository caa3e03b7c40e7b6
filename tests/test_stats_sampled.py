"""analysis.stats: the sampled histogram of large two-pass tensors (float32/64, complex, wide ints).

The thresholds are lowered through the module constants so small arrays exercise the same code
as a 1 GiB tensor; every sampled histogram is checked against ``numpy.histogram`` of exactly the
elements that :func:`sample_spans` names.
"""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest

import onemodel_viewer.analysis.stats.compute as S
import onemodel_viewer.analysis.stats.bins as stats_bins
from onemodel_viewer.analysis.stats.compute import Cancelled, compute_stats, sample_spans
from onemodel_viewer.format.dtypes import DTYPES, encode
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage

TWO_PASS = [1, 11, 14, 15, 6, 7, 12, 13]
FLOAT32_ARITH = {1, 14}  # bins computed in float32: a value within one rounding of an edge may move


@pytest.fixture
def small_sample(monkeypatch):
    """Sampling from 2,000 elements on, 256-byte sample blocks, about one value in 8, groups of 256 values."""
    monkeypatch.setattr(S, "SAMPLE_MIN", 2000)
    monkeypatch.setattr(S, "SAMPLE_BLOCK_BYTES", 256)
    monkeypatch.setattr(S, "SAMPLE_FRACTION", 8)
    monkeypatch.setattr(S, "SAMPLE_VALUES", 1 << 30)
    monkeypatch.setattr(S, "SAMPLE_UNIT_VALUES", 256)


def make(code: int, values) -> Tensor:
    arr = np.asarray(values)
    data = encode(arr, DTYPES[code])
    return Tensor("t", code, (arr.size,), storage=BytesStorage(data), file_offset=0, length=len(data), where="t")


def values_of(code: int, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    info = DTYPES[code]
    if code in (14, 15):
        return (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(info.numpy)
    if code in (1, 11):
        return (rng.standard_normal(n) * 3).astype(info.numpy)
    if code in (12, 13):
        return rng.integers(0, 10**9, n).astype(info.numpy)
    return rng.integers(-(10**9), 10**9, n).astype(info.numpy)


def magnitudes(code: int, vals: np.ndarray) -> np.ndarray:
    """What the statistics are over, as float64 (|z| for complex)."""
    with np.errstate(all="ignore"):
        return np.abs(vals).astype(np.float64) if code in (14, 15) else vals.astype(np.float64)


def expected_sample(code: int, vals: np.ndarray):
    """(numpy histogram of the sampled finite values, how many, (lo, hi)) by the documented rule."""
    x = magnitudes(code, vals)
    fin = np.isfinite(x)
    lo, hi = x[fin].min(), x[fin].max()
    must = (int(np.flatnonzero(x == lo)[0]), int(np.flatnonzero(x == hi)[0]))
    spans = sample_spans(x.size, DTYPES[code].bits // 8, must)
    picked = np.concatenate([x[a:b] for a, b in spans])
    picked = picked[np.isfinite(picked)]
    hist, _ = np.histogram(picked, bins=32, range=(lo, hi))
    return hist, picked.size, (lo, hi)


def assert_sample_matches(s, code: int, vals: np.ndarray) -> None:
    hist, n, (lo, hi) = expected_sample(code, vals)
    assert not s.hist_exact
    assert s.hist_count == n == sum(s.histogram)
    assert s.hist_range == (lo, hi)
    if code in FLOAT32_ARITH:
        assert np.abs(np.array(s.histogram) - hist).sum() <= 2
    else:
        assert s.histogram == tuple(int(h) for h in hist)


# ---------------------------------------------------------------------------- the rule


def test_sample_spans_rule(monkeypatch):
    monkeypatch.setattr(S, "SAMPLE_BLOCK_BYTES", 64)  # 16 float32 per block
    monkeypatch.setattr(S, "SAMPLE_FRACTION", 32)
    monkeypatch.setattr(S, "SAMPLE_VALUES", 1 << 30)
    # 1000 elements: 62 whole blocks; 1000 // 32 = 31 values -> k = 2 blocks, step 31, first at 15
    assert sample_spans(1000, 4) == [(240, 256), (736, 752)]
    # the blocks of the "must" elements are added (the last, short block too), not repeated
    assert sample_spans(1000, 4, (0, 999, 245, 5)) == [(0, 16), (240, 256), (736, 752), (992, 1000)]
    # the bound on values: SAMPLE_VALUES caps k
    monkeypatch.setattr(S, "SAMPLE_VALUES", 20)
    assert sample_spans(100_000, 4) == [(16 * (3125 // 2 + j * 3125), 16 * (3125 // 2 + j * 3125) + 16)
                                        for j in range(2)]
    # fewer elements than one block: the whole tensor
    assert sample_spans(10, 4) == [(0, 10)]
    assert sample_spans(0, 4) == []


def test_sample_spans_are_even_and_bounded():
    """The real constants: 1 GiB of float32 gives about 8 Mi values in 64 KiB blocks, evenly spread."""
    n = 1 << 28
    spans = sample_spans(n, 4, (5, n - 1))
    sizes = {b - a for a, b in spans}
    assert sizes == {16384}
    total = sum(b - a for a, b in spans)
    assert S.SAMPLE_VALUES <= total <= S.SAMPLE_VALUES + 3 * 16384
    starts = [a for a, _ in spans[1:-1]]
    gaps = {b - a for a, b in zip(starts, starts[1:])}
    assert len(gaps) == 1  # evenly spaced (the first and last spans are the min's and max's blocks)
    assert spans[0] == (0, 16384) and spans[-1] == (n - 16384, n)
    assert all(a1 >= b0 for (_, b0), (a1, _) in zip(spans, spans[1:]))


# ---------------------------------------------------------------------------- against numpy


@pytest.mark.parametrize("code", TWO_PASS, ids=lambda c: DTYPES[c].name)
@pytest.mark.parametrize("threads", [1, 2])
def test_sampled_histogram_matches_numpy_of_the_sample(small_sample, code, threads):
    vals = values_of(code, 20_011, seed=code)
    t = make(code, vals)
    s = compute_stats(t, chunk_bytes=4096, threads=threads, histogram="sampled")
    assert_sample_matches(s, code, vals)
    full = compute_stats(t, chunk_bytes=4096, threads=threads)
    assert full.hist_exact and full.hist_count == full.finite == sum(full.histogram)
    # every other figure is the exact one
    assert s == dataclasses.replace(full, histogram=s.histogram, hist_exact=False, hist_count=s.hist_count)


@pytest.mark.parametrize("code", [1, 11, 7, 15], ids=lambda c: DTYPES[c].name)
def test_min_and_max_bins_are_never_falsely_empty(small_sample, code):
    """The min and the max occur once, in the middle, outside the evenly spaced blocks: their bins count them."""
    n = 40_000
    item = DTYPES[code].bits // 8
    even = sample_spans(n, item)
    covered = np.zeros(n, dtype=bool)
    for a, b in even:
        covered[a:b] = True
    i_lo, i_hi = 17_001, 23_003
    assert not covered[i_lo] and not covered[i_hi]
    vals = values_of(code, n, seed=3)
    if code in (14, 15):
        vals = (vals / np.abs(vals) * (40 + 20 * np.abs(np.tanh(vals.real)))).astype(vals.dtype)  # |z| in [40, 60]
        vals[i_lo], vals[i_hi] = 0.5, 100.0  # ... but one 0.5 and one 100
    elif code == 7:
        vals = (vals // 1000).astype(vals.dtype)
        vals[i_lo], vals[i_hi] = -(10**12), 10**12
    else:
        vals = np.clip(vals, -1, 1)
        vals[i_lo], vals[i_hi] = -100.0, 100.0
    s = compute_stats(make(code, vals), chunk_bytes=2048, threads=2, histogram="sampled")
    assert_sample_matches(s, code, vals)
    assert s.histogram[0] == 1 and s.histogram[-1] == 1
    assert (s.min, s.max) == ((0.5, 100.0) if code in (14, 15) else (vals[i_lo], vals[i_hi]))


@pytest.mark.parametrize("code", [1, 11, 14], ids=lambda c: DTYPES[c].name)
def test_dirty_blocks_in_the_sample(small_sample, code):
    """NaN and infinities inside sampled blocks are left out of the sampled histogram and its count."""
    vals = values_of(code, 30_000, seed=7)
    for a, b in sample_spans(vals.size, DTYPES[code].bits // 8)[::3]:
        vals[a + 1] = np.nan
        vals[a + 2] = np.inf
        vals[b - 1] = -np.inf
    t = make(code, vals)
    s = compute_stats(t, chunk_bytes=4096, threads=2, histogram="sampled")
    assert s.nan > 0 and s.posinf > 0
    assert_sample_matches(s, code, vals)
    full = compute_stats(t, chunk_bytes=4096, threads=2)
    assert full.hist_exact and sum(full.histogram) == full.finite == full.hist_count


# ---------------------------------------------------------------------------- how it is delivered


@pytest.mark.parametrize("threads", [1, 2])
def test_on_summary_receives_the_sampled_histogram_before_the_exact_pass(small_sample, threads):
    vals = values_of(1, 20_000, seed=1)
    t = make(1, vals)
    seen, progress = [], []
    full = compute_stats(t, chunk_bytes=4096, threads=threads, progress=lambda d, tot: progress.append((d, tot)),
                         on_summary=lambda s: seen.append((s, len(progress))))
    assert len(seen) == 1
    early, at = seen[0]
    assert progress[at - 1][0] == t.length  # after pass 1 (the sample reports no progress) ...
    assert at < len(progress) and progress[-1] == (2 * t.length, 2 * t.length)  # ... before pass 2
    assert early == compute_stats(t, chunk_bytes=4096, threads=threads, histogram="sampled")
    assert_sample_matches(early, 1, vals)
    assert full.hist_exact and full.hist_count == full.finite
    assert full == dataclasses.replace(early, histogram=full.histogram, hist_exact=True, hist_count=full.finite)


def test_sampled_mode_is_one_pass_and_never_calls_on_summary(small_sample):
    t = make(11, values_of(11, 20_000))
    progress, called = [], []
    s = compute_stats(t, chunk_bytes=4096, threads=2, histogram="sampled",
                      progress=lambda d, tot: progress.append((d, tot)), on_summary=called.append)
    assert not s.hist_exact and called == []
    assert progress[-1] == (t.length, t.length)


def test_sampled_mode_below_the_threshold_is_exact(small_sample):
    t = make(1, values_of(1, 1500))  # not more than SAMPLE_MIN elements: no sample
    seen = []
    a = compute_stats(t, chunk_bytes=512, threads=2, histogram="sampled")
    b = compute_stats(t, chunk_bytes=512, threads=2, on_summary=seen.append)
    assert a == b and a.hist_exact and a.hist_count == a.finite
    assert len(seen) == 1 and seen[0].histogram == () and seen[0].hist_count is None


def test_constant_tensor_needs_no_sample(small_sample):
    t = make(1, np.full(5000, 1.25, dtype=np.float32))
    called = []
    for mode in (True, "sampled"):
        s = compute_stats(t, chunk_bytes=1024, threads=2, histogram=mode, on_summary=called.append)
        assert s.hist_exact and s.hist_count == 5000 and s.histogram[16] == 5000
    assert called == []


def test_sampled_histogram_is_deterministic(small_sample):
    t = make(1, values_of(1, 50_000, seed=5))
    runs = [compute_stats(t, chunk_bytes=c, threads=th, histogram="sampled")
            for c, th in ((4096, 1), (4096, 2), (4096, 2), (1 << 20, 1), (8192, 2))]
    assert runs[1] == runs[2]  # the same call twice: the same result
    # other chunkings: the same sample (mean and std may differ by a rounding: summation order)
    assert len({(s.histogram, s.hist_range, s.hist_count, s.hist_exact) for s in runs}) == 1


@pytest.mark.parametrize("threads", [1, 2])
def test_cancel_during_the_sample(small_sample, monkeypatch, threads):
    """The sample checks ``cancel`` between its groups of blocks, like the passes between chunks."""
    t = make(1, values_of(1, 40_000))
    ev = threading.Event()
    real = stats_bins.count_small
    calls = []

    def counting(idx):
        calls.append(idx.size)
        ev.set()  # pass 2 has not started: the first call is the sample's
        return real(idx)

    monkeypatch.setattr(stats_bins, "count_small", counting)
    with pytest.raises(Cancelled):
        compute_stats(t, chunk_bytes=4096, threads=threads, cancel=ev)
    groups = -(-sum(b - a for a, b in sample_spans(t.count, 4)) // S.SAMPLE_UNIT_VALUES)
    assert 1 <= len(calls) <= 2 * threads + 1 < groups
    assert all(n <= S.SAMPLE_UNIT_VALUES + 64 for n in calls)


def test_invalid_histogram_argument():
    with pytest.raises(ValueError):
        compute_stats(make(1, values_of(1, 10)), histogram="approximate")
