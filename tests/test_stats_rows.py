"""analysis.stats_rows: 16-bit statistics from pattern counts, row by row and many tensors at once."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

import onemodel_viewer.analysis.stats.rows as R
from onemodel_viewer.analysis.stats.compute import compute_stats, compute_stats_group
from onemodel_viewer.analysis.stats.batch import compute_stats_many
from onemodel_viewer.format.dtypes import DTYPES, DataType, encode
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage

CODES = [DataType.FLOAT16, DataType.BFLOAT16, DataType.INT16, DataType.UINT16]


def make(code: int, values, name: str = "t") -> Tensor:
    data = encode(np.asarray(values), DTYPES[code])
    return Tensor(name, code, (len(values),), storage=BytesStorage(data), file_offset=0, length=len(data), where=name)


def weights(code: int, n: int, seed: int, scale: float = 0.02, offset: float = 0.0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    v = rng.standard_normal(n) * scale + offset
    if code in (DataType.INT16, DataType.UINT16):
        return np.clip(v * 3000, *((-32768, 32767) if code == DataType.INT16 else (0, 65535))).astype(DTYPES[code].numpy)
    return v.astype(ml_dtypes.bfloat16 if code == DataType.BFLOAT16 else np.float16)


@pytest.mark.parametrize("code", CODES, ids=lambda c: DTYPES[c].name)
def test_layout_rows_are_affine_and_ordered(code):
    """Every finite pattern's value is (a + b * column) / 2^Z of its row, and the sequence ascends."""
    info = DTYPES[code]
    lay = R.row_layout(info)
    vals = R.pattern_values(info)
    for r in lay.order.tolist():
        a, b = lay.coef[r][:2]
        row = vals[r * lay.width : (r + 1) * lay.width]
        assert all(Fraction(float(v)) == Fraction(a + b * m, 1 << lay.scale) for m, v in enumerate(row.tolist()))
    assert (np.diff(lay.sequence) >= 0).all()
    assert lay.sequence.size == int(np.isfinite(vals).sum())


@pytest.mark.parametrize("code", CODES, ids=lambda c: DTYPES[c].name)
def test_mean_and_std_are_exact(code):
    """The mean and std are the correctly rounded figures of the exact multiset (Fractions), offset weights included."""
    x = weights(code, 50_000, 1, scale=0.001, offset=1.5) if code in (10, 16) else weights(code, 50_000, 1)
    s = compute_stats(make(code, x), threads=1)
    exact = [Fraction(float(v)) for v in x.astype(np.float64)]
    mean = sum(exact) / len(exact)
    var = sum((v - mean) ** 2 for v in exact) / len(exact)
    assert s.mean == float(mean)
    assert math.isclose(s.std, math.sqrt(float(var)), rel_tol=2e-16)


@pytest.mark.parametrize("code", CODES, ids=lambda c: DTYPES[c].name)
def test_many_tensors_at_once_give_each_its_own(code):
    """rows_stats over a table of several tensors (with NaN/Inf, an empty-of-finite one, a constant one) equals one by one."""
    rng = np.random.default_rng(code)
    info = DTYPES[code]
    tensors = []
    for i in range(5):
        pats = rng.integers(0, 1 << 16, 30_000 + i).astype(np.uint16)
        if i == 3:
            pats[:] = 0x3C00  # one value
        tensors.append(pats)
    if info.is_float:
        tensors.append(np.full(20_000, 0x7E00 if code == 10 else 0x7FC0, dtype=np.uint16))  # NaN only
    table = np.stack([np.bincount(p, minlength=1 << 16) for p in tensors]).astype(np.float64)
    sizes = [p.size for p in tensors]
    firsts = [(str(i),) for i in range(len(tensors))]
    together = R.rows_stats(info, table, sizes, firsts)
    alone = [R.row_stats(info, n, np.bincount(p, minlength=1 << 16), f) for p, n, f in zip(tensors, sizes, firsts)]
    assert together == alone
    assert together[3].std == 0.0 and together[3].min == together[3].max
    if info.is_float:
        assert together[-1].finite == 0 and together[-1].nan == 20_000 and together[-1].histogram == ()


def test_grouped_moments_equal_the_row_loop(monkeypatch):
    """The int64 per-exponent sums give the very integers of the Python loop over rows (the fallback for
    tensors too large for int64)."""
    ts = [make(c, weights(c, 40_000, c)) for c in CODES]
    want = [compute_stats(t, threads=1) for t in ts]
    assert all(R.row_layout(DTYPES[c]).safe > 40_000 for c in CODES)
    real_layout, real_loop = R.row_layout, R._moments
    loops = []

    def counted(*args):
        loops.append(1)
        return real_loop(*args)

    monkeypatch.setattr(R, "row_layout", lambda info: dataclasses.replace(real_layout(info), safe=0))
    monkeypatch.setattr(R, "_moments", counted)
    assert [compute_stats(t, threads=1) for t in ts] == want
    assert len(loops) == len(ts)


def test_mean_without_cancellation():
    """Regression: the mean of bfloat16 {-2^100, 1, 2^100} (20,000 each) came out 0.0, not 1/3: the float64 sum
    of count * value lost the 1 against 2^100. The sums are exact integers now."""
    x = np.repeat(np.array([-(2.0**100), 1.0, 2.0**100]), 20_000).astype(ml_dtypes.bfloat16)
    s = compute_stats(make(DataType.BFLOAT16, x))
    assert s.mean == 1 / 3
    assert s.std == math.sqrt(float(Fraction(2 * 2**200, 3) - Fraction(1, 9)))


def test_group_equals_one_by_one():
    """compute_stats_group (16-bit tensors of one type reduced together; other types, small and empty ones
    between them) equals compute_stats of each tensor."""
    ts = []
    for i, n in enumerate([40_000, 20_000, 3, 0, 70_000, 50_000, 17_000, 30_000] * 3):
        code = (DataType.FLOAT16, DataType.BFLOAT16, DataType.FLOAT, DataType.INT8)[i % 4] if i % 3 else DataType.FLOAT16
        v = np.random.default_rng(i).standard_normal(n) * 0.05
        if n > 100:
            v[5], v[6] = np.nan, -np.inf
        with np.errstate(all="ignore"):
            vals = (v * 1000).astype(np.int8) if code == DataType.INT8 else v.astype(
                ml_dtypes.bfloat16 if code == DataType.BFLOAT16 else DTYPES[code].numpy)
        ts.append(make(code, vals, f"t{i}"))
    assert compute_stats_group(ts) == [compute_stats(t, threads=1) for t in ts]
    assert compute_stats_many(ts, threads=2) == [compute_stats(t, threads=2) for t in ts]


def test_bin_edges_are_linspace():
    """The (n, 33) edges are numpy.linspace's, bit for bit, subnormal ranges included."""
    lo = np.array([-1.0, 0.0, 5e-324, -3.0e38, 1e-310, 0.1])
    hi = np.array([1.0, 65504.0, 1.5e-323, 3.0e38, 1e-310 + 1e-322, 0.30000000000000004])
    got = R.bin_edges(lo, hi)
    for i in range(lo.size):
        assert got[i].tobytes() == np.linspace(lo[i], hi[i], 33).tobytes()


def test_first_values_memo_gives_format_floats():
    """The first values of a float16/bfloat16 tensor, memoised per bit pattern, are format_floats' strings."""
    from onemodel_viewer.analysis.stats.result import format_floats

    for code in (DataType.FLOAT16, DataType.BFLOAT16):
        info = DTYPES[code]
        pats = np.array([0, 0x8000, 0x3C00, 0x7C00, 0xFC00, 0x7E00, 1, 0x3555, 0x3C00, 0x1234] * 2, dtype=np.uint16)
        t = Tensor("t", code, (pats.size,), storage=BytesStorage(pats.tobytes()), file_offset=0, length=2 * pats.size)
        for _ in range(2):  # cold, then from the memo
            assert compute_stats(t).first == format_floats(pats[:16].view(info.numpy), code)


def test_group_counts_a_tensor_piece_by_piece(monkeypatch):
    """A tensor of several bincount pieces (counted piece by piece into its row of the table, the pieces
    added) gives the figures of one piece, in a group and alone."""
    import onemodel_viewer.analysis.stats.patterns as P

    ts = [make(code, weights(code, 25_001, i), f"t{i}") for i, code in enumerate(CODES)]
    want = [compute_stats(t, threads=1) for t in ts]
    monkeypatch.setattr(P, "PIECE", 1000)
    assert compute_stats_group(ts) == want
    assert [compute_stats(t, threads=2, chunk_bytes=4096) for t in ts] == want


class _CancelAfter:
    """An event that is set from its ``n``-th look on."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.looks = 0

    def is_set(self) -> bool:
        self.looks += 1
        return self.looks >= self.n


def test_group_cancel_between_pieces(monkeypatch):
    """The group path checks cancel between the pieces of a tensor, not only between tensors."""
    import onemodel_viewer.analysis.stats.patterns as P
    from onemodel_viewer.analysis.stats.compute import Cancelled

    monkeypatch.setattr(P, "KERNELS", None)  # the numpy count (tests/test_kernels_paths.py: the compiled one)
    monkeypatch.setattr(P, "PIECE", 1000)
    counted = []
    real = np.bincount
    monkeypatch.setattr(np, "bincount", lambda *a, **k: counted.append(1) or real(*a, **k))
    ev = _CancelAfter(3)  # _start looks once, then one look between pieces passes
    with pytest.raises(Cancelled):
        compute_stats_group([make(DataType.FLOAT16, weights(DataType.FLOAT16, 25_000, 0))], cancel=ev)
    assert len(counted) == 2  # stopped after two of its 25 pieces


class _Withdrawn(BytesStorage):
    """Bytes whose file is reported changed on disk once ``gone`` is set."""

    gone = False

    def check(self) -> None:
        from onemodel_viewer.format.errors import FormatError, Kind

        if self.gone:
            raise FormatError(Kind.IO, "file", None, "changed on disk")


def test_group_rechecks_the_file_after_counting(monkeypatch):
    """Counts read from a mapping withdrawn while they were counted (zeros) never pass as data: Io, as from
    compute_stats."""
    import onemodel_viewer.analysis.stats.patterns as P
    from onemodel_viewer.format.errors import FormatError, Kind

    data = encode(weights(DataType.FLOAT16, 20_000, 2), DTYPES[DataType.FLOAT16])
    storage = _Withdrawn(data)
    gone = Tensor("gone", DataType.FLOAT16, (20_000,), storage=storage, file_offset=0, length=len(data), where="gone")
    real = np.bincount

    def bincount(*a, **k):
        storage.gone = True  # withdrawn during the count
        return real(*a, **k)

    monkeypatch.setattr(np, "bincount", bincount)
    monkeypatch.setattr(P, "KERNELS", None)  # the numpy count (tests/test_kernels_paths.py: the compiled one)
    with pytest.raises(FormatError) as e:
        compute_stats_group([gone, make(DataType.FLOAT16, weights(DataType.FLOAT16, 20_000, 1), "ok")])
    assert (e.value.kind, e.value.where) == (Kind.IO, "file")
