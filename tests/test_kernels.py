"""The compiled kernels (``onemodel_viewer/ckernels.c``) against their numpy references.

Each kernel is fed bit patterns drawn from the whole range of its dtype (NaN payloads, ±Inf, ±0,
subnormals, the dtype's limits), empty and one-element blocks, odd lengths, and unaligned read-only
views. Counts, min/max, the histogram and the integer diff figures must equal the reference exactly;
float64 sums agree within the tolerances stated at each comparison (the references sum in another
order; float32 diffs in float32 rows).
"""

from __future__ import annotations

import math
import os

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onemodel_viewer import kernels as K
from onemodel_viewer.analysis.diff import tensors as T
from onemodel_viewer.analysis.stats import bins as B
from onemodel_viewer.analysis.stats import kernel as SK
from onemodel_viewer.analysis.stats.chunks import Chunk
from onemodel_viewer.format.dtypes import DTYPES, DataType
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage

compiled = pytest.mark.skipif(K.KERNELS is None, reason="compiled kernels disabled (ONEMODEL_VIEW_NO_KERNELS)")

HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_SPECIALS = {
    np.float16: [0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE37],
    ml_dtypes.bfloat16: [0x0000, 0x8000, 0x0001, 0x807F, 0x7F7F, 0xFF7F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC3],
    np.float32: [0, 0x80000000, 1, 0x807FFFFF, 0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F800000, 0xFF800000,
                 0x7FC00000, 0x7F800001, 0xFFC01234, 0x3F800000],
    np.float64: [0, 1 << 63, 1, (1 << 63) | 0xFFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF,
                 0xFFEFFFFFFFFFFFFF, 0x7FF0000000000000, 0xFFF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001,
                 0xFFF8000000001234, 0x3FF0000000000000],
}
_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
REAL = [np.float32, np.float64, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]
DIFFED = [np.float16, ml_dtypes.bfloat16] + REAL


@st.composite
def blocks(draw, dtype, max_size: int = 700, specials: bool = True):
    """(values, unaligned read-only view of their bytes): bit patterns from the whole range, specials mixed in."""
    dt = np.dtype(dtype)
    width = dt.itemsize * 8
    pool = _SPECIALS.get(dtype, []) if dt.kind in "fV" else []
    if dt.kind in "iu":
        info = np.iinfo(dt)
        lim = [int(np.array(v, dtype=dt).view(_UINT[dt.itemsize])) for v in (info.min, info.max, 0, -1 if dt.kind == "i" else 1)]
        pool = lim
    if not specials:
        pool = []
    mode = draw(st.sampled_from(["bits", "small"]))
    if mode == "bits" or dt.kind in "V":
        element = st.integers(0, (1 << width) - 1)
    else:  # values that cluster (realistic weights, shared exponent), as bit patterns
        base = np.array(0.5 if dt.kind in "fV" else 3, dtype=dt).view(_UINT[dt.itemsize])
        element = st.integers(0, 1 << 12).map(lambda d: (int(base) + d) % (1 << width))
    if pool:
        element = st.one_of(element, st.sampled_from(pool))
    bits = draw(st.lists(element, max_size=max_size))
    vals = np.array(bits, dtype=_UINT[dt.itemsize]).view(dt)
    buf = bytes(1) + vals.tobytes()  # one byte in front: the view starts at an odd address
    view = np.frombuffer(buf, dtype=np.uint8)[1:]
    assert not view.flags.writeable
    return vals, view


def _isclose(a: float, b: float, rel: float, scale: float) -> bool:
    """a and b agree within ``rel`` of ``scale`` (both NaN, or equal infinities, also agree)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= rel * scale + 1e-300


def _fsum(values) -> float:
    """The exact sum, rounded once (inf where it overflows)."""
    try:
        return math.fsum(values)
    except OverflowError:
        return math.inf


# ---------------------------------------------------------------------------- module


def test_the_compiled_module_is_the_one_in_use():
    """The package imported the compiled kernels, not the fallback (unless they are switched off on purpose)."""
    if os.environ.get(K.ENV, "") not in ("", "0"):
        assert K.KERNELS is None
        return
    assert K.KERNELS is not None, "onemodel_viewer.ckernels was not built: pip install -e . builds it"
    assert K.KERNELS.__name__ == "onemodel_viewer.ckernels"
    assert K.KERNELS.__file__.endswith((".so", ".pyd"))


def test_kind_maps_every_supported_dtype_and_nothing_else():
    kinds = {np.dtype(t): K.kind(np.dtype(t)) for t in DIFFED}
    assert sorted(kinds.values()) == list(range(12))
    for other in (np.bool_, np.complex64, ml_dtypes.float8_e4m3fn, np.dtype(">f4"), np.dtype(object)):
        assert K.kind(np.dtype(other)) is None


# ---------------------------------------------------------------------------- count16


@compiled
@HYP
@given(st.data())
def test_count16_is_bincount(data):
    vals, view = data.draw(blocks(np.float16, max_size=3000))
    out = np.zeros(1 << 16, dtype=np.int64)
    out[7] = 5  # adds to what is there
    K.KERNELS.count16(view, out)
    ref = np.bincount(vals.view(np.uint16), minlength=1 << 16)
    ref[7] += 5
    assert np.array_equal(out, ref)
    row = np.zeros(1 << 16, dtype=np.float64)  # the float64 rows of the group path
    K.KERNELS.count16(view, row, True)
    K.KERNELS.count16(view, row, True)
    assert np.array_equal(row, 2 * (ref - (np.arange(1 << 16) == 7) * 5))


@compiled
def test_count16_of_a_large_block_uses_its_tables_and_leaves_them_clean():
    """Above a million values the counts go through per-thread uint32 tables: twice the same block, same counts."""
    rng = np.random.default_rng(1)
    codes = rng.integers(0, 1 << 16, 3_000_001, dtype=np.uint16)
    codes[:100_000] = 7  # a long run of one value
    ref = np.bincount(codes, minlength=1 << 16)
    for as_float in (False, True, False):
        out = np.zeros(1 << 16, dtype=np.float64 if as_float else np.int64)
        K.KERNELS.count16(codes, out, as_float)
        assert np.array_equal(out, ref)


@compiled
def test_count16_rejects_a_wrong_table():
    with pytest.raises(ValueError):
        K.KERNELS.count16(bytes(4), np.zeros(10, dtype=np.int64))
    with pytest.raises((BufferError, TypeError)):  # read-only table
        K.KERNELS.count16(bytes(4), bytes(8 << 16))


# ---------------------------------------------------------------------------- pass-1 figures


@compiled
@pytest.mark.parametrize("dtype", REAL, ids=lambda t: np.dtype(t).name)
@HYP
@given(data=st.data())
def test_figures_match_block_figures(dtype, data):
    vals, view = data.draw(blocks(dtype))
    k = K.kind(np.dtype(dtype))
    got = SK.BlockFigures(*K.KERNELS.figures(view, k))
    is_int = np.dtype(dtype).kind in "iu"
    if vals.size == 0:
        assert (got.n, got.lo, got.hi, got.zeros, got.nan, got.posinf, got.neginf, got.dirty) == (0, None, None, 0, 0, 0, 0, False)
        return
    with np.errstate(all="ignore"):
        ref = SK.block_figures(vals, is_int)
    # exact: counts, min, max
    assert (got.n, got.zeros, got.nan, got.posinf, got.neginf, got.dirty) == (
        ref.n, ref.zeros, ref.nan, ref.posinf, ref.neginf, ref.dirty)
    assert (got.lo, got.hi) == (ref.lo, ref.hi)
    assert type(got.lo) is type(ref.lo)
    if ref.n == 0:
        return
    fin = [float(v) for v in vals.tolist() if math.isfinite(float(v))]
    scale = _fsum(abs(v) for v in fin)
    if scale > 1e300:  # sums that may overflow in one order and not in another: not compared
        return
    exact = math.fsum(fin)
    # the sum: within 1e-13 of Σ|x| of the exact sum (and so of the reference)
    assert _isclose(got.s, exact, 1e-13, scale), (got.s, exact)
    assert _isclose(got.s, ref.s, 1e-13, scale)
    squares = _fsum(v * v for v in fin)
    if squares > 1e300:
        return
    # squared deviations: within 1e-11 of Σx² (the reference: Σx² − s²/n or a centred sum)
    assert _isclose(got.m2, ref.m2, 1e-11, squares), (got.m2, ref.m2)


@compiled
def test_integer_moments_beyond_2_to_the_53():
    """int64/uint64 values above 2^53: exact min/max as Python ints, float64-grade sums."""
    vals = np.array([2**62 + 1, 2**62 + 3, 2**62 + 5, -(2**63), 2**63 - 1], dtype=np.int64)
    got = SK.BlockFigures(*K.KERNELS.figures(vals, K.kind(vals.dtype)))
    assert (got.lo, got.hi) == (-(2**63), 2**63 - 1)
    exact = sum(int(v) for v in vals)
    assert math.isclose(got.s, exact, rel_tol=1e-15)
    u = np.array([2**64 - 1, 2**64 - 2, 2**53 + 1, 0], dtype=np.uint64)
    got = SK.BlockFigures(*K.KERNELS.figures(u, K.kind(u.dtype)))
    assert (got.lo, got.hi, got.zeros) == (0, 2**64 - 1, 1)
    mean = sum(int(v) for v in u) / 4
    m2 = sum((int(v) - mean) ** 2 for v in u)
    assert math.isclose(got.m2, m2, rel_tol=1e-12)


# ---------------------------------------------------------------------------- 32-bin histogram


def _histogram(vals: np.ndarray, dtype, lo: float, hi: float) -> tuple[list[int], list[int]]:
    info = next(i for i in DTYPES.values() if i.numpy is not None and np.dtype(i.numpy) == np.dtype(dtype))
    raw = vals.view(np.uint8)
    c = Chunk(0, raw.size, vals.size, 0)
    binner = B.Binner(info, lo, hi)
    got = B.chunk_histogram(raw, info, c, binner, {0})
    with pytest.MonkeyPatch.context() as m:
        m.setattr(B, "KERNELS", None)
        ref = B.chunk_histogram(raw, info, c, binner, {0})
    return got.tolist(), ref.tolist()


@compiled
@pytest.mark.parametrize("dtype", REAL, ids=lambda t: np.dtype(t).name)
@HYP
@given(data=st.data())
def test_histogram_matches_the_numpy_binning(dtype, data):
    vals, _ = data.draw(blocks(dtype))
    with np.errstate(all="ignore"):
        fin = vals[np.isfinite(vals)] if vals.dtype.kind == "f" else vals
    if fin.size == 0 or fin.min() == fin.max():
        return
    got, ref = _histogram(vals, dtype, float(fin.min()) if vals.dtype.kind == "f" else int(fin.min()),
                          float(fin.max()) if vals.dtype.kind == "f" else int(fin.max()))
    assert got == ref
    assert sum(got) == fin.size


@compiled
@pytest.mark.parametrize("lo,hi", [(-1.7e308, 1.7e308), (5e-324, 2e-323), (0.0, 1e-310), (-3.0, 2.5)])
def test_histogram_wide_and_subnormal_ranges(lo, hi):
    """The Binner's other float64 forms: a range that overflows (halved), one whose 32/range overflows."""
    rng = np.random.default_rng(3)
    vals = np.concatenate([[lo, hi], lo + (rng.random(999) * (hi / 2 - lo / 2)) * 2]).astype(np.float64)
    vals = np.clip(vals, lo, hi)
    got, ref = _histogram(vals, np.float64, lo, hi)
    assert got == ref and sum(got) == vals.size


# ---------------------------------------------------------------------------- diff


def _tensor(vals: np.ndarray, code: int, offset: int = 1) -> Tensor:
    data = bytes(offset) + vals.tobytes()  # an unaligned start in a read-only buffer
    return Tensor("w", code, (vals.size,), length=vals.nbytes, file_offset=offset, storage=BytesStorage(data))


_CODE = {np.dtype(i.numpy): c for c, i in DTYPES.items() if i.numpy is not None and i.bits >= 8}


def _diff_both(a: np.ndarray, b: np.ndarray):
    code = _CODE[a.dtype]
    ta, tb = _tensor(a, code), _tensor(b, code, 3)
    got = T.compare_data(ta, tb)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(T, "KERNELS", None)
        ref = T.compare_data(ta, tb)
    return got, ref


@compiled
@pytest.mark.parametrize("dtype", DIFFED, ids=lambda t: np.dtype(t).name)
@HYP
@given(data=st.data())
def test_diff_matches_the_numpy_passes(dtype, data):
    a, _ = data.draw(blocks(dtype))
    dt = np.dtype(dtype)
    # b: a with some elements replaced (bit patterns from the whole range, or a near value)
    b = a.copy()
    ub = b.view(_UINT[dt.itemsize])
    for i in data.draw(st.lists(st.integers(0, max(a.size - 1, 0)), max_size=40)) if a.size else []:
        how = data.draw(st.sampled_from(["bits", "near", "sign"]))
        if how == "bits":
            ub[i] = data.draw(st.integers(0, (1 << (8 * dt.itemsize)) - 1))
        elif how == "near":
            ub[i] = ub[i] ^ data.draw(st.integers(1, 255))
        else:
            ub[i] = ub[i] ^ (1 << (8 * dt.itemsize - 1))
    got, ref = _diff_both(a, b)
    if ref is None:
        assert got is None
        return
    assert got is not None
    # exact: which elements differ, the first one, how many pairs were left out
    assert (got.count, got.differing, got.first, got.a_first, got.b_first, got.is_float) == (
        ref.count, ref.differing, ref.first, ref.a_first, ref.b_first, ref.is_float)
    assert (got.nonfinite, got.finite) == (ref.nonfinite, ref.finite)
    if not ref.is_float:
        assert got.max_abs == ref.max_abs and type(got.max_abs) is int
        return
    norms = ref.sum_aa + ref.sum_bb
    if not math.isfinite(norms) or norms > 1e300 or not math.isfinite(got.sum_aa + got.sum_bb):
        return  # squares that overflow float64 (float64 limits): sums not compared
    # the reference sums float32 rows of 256 (rounded to ~1e-7 each) where the kernel sums in float64
    tol = 1e-5 if dt.itemsize <= 4 else 1e-12
    for g, r in ((got.sum_aa, ref.sum_aa), (got.sum_bb, ref.sum_bb), (got.sum_ab, ref.sum_ab)):
        assert _isclose(g, r, tol, norms), (g, r)
    assert _isclose(got.sum_dd, ref.sum_dd, tol, ref.sum_dd + 1e-30 * norms), (got.sum_dd, ref.sum_dd)
    assert _isclose(got.sum_abs, ref.sum_abs, tol, ref.sum_abs), (got.sum_abs, ref.sum_abs)
    assert _isclose(float(got.max_abs), float(ref.max_abs), tol, float(ref.max_abs))
    assert _isclose(got.max_rel, ref.max_rel, tol * 10, 1.0), (got.max_rel, ref.max_rel)


@compiled
def test_diff_of_integers_at_their_limits():
    """|b − a| over the whole int64/uint64 range, exact."""
    for dt, lo, hi in ((np.int64, -(2**63), 2**63 - 1), (np.uint64, 0, 2**64 - 1), (np.int8, -128, 127)):
        a = np.array([lo, 0, hi], dtype=dt)
        b = np.array([hi, 0, lo], dtype=dt)
        r = K.KERNELS.diff(a, b, K.kind(a.dtype))
        assert r[:2] == (2, 0) and r[9] == hi - lo


@compiled
def test_diff_and_equal_reject_blocks_of_other_lengths():
    with pytest.raises(ValueError):
        K.KERNELS.diff(bytes(8), bytes(4), K.F32)
    assert K.KERNELS.equal(bytes(8), bytes(4)) is False
    assert K.KERNELS.equal(b"", b"") is True


@compiled
@HYP
@given(st.binary(max_size=300), st.integers(0, 299), st.integers(0, 7))
def test_equal_is_byte_equality(data, at, offset):
    a = np.frombuffer(bytes(offset) + data, dtype=np.uint8)[offset:]
    b = bytearray(data)
    assert K.KERNELS.equal(a, bytes(b)) is True
    if data:
        b[at % len(b)] ^= 1
        assert K.KERNELS.equal(a, bytes(b)) is False


def test_max_rel_near_the_float32_limit_does_not_overflow(monkeypatch):
    """Broke (found by the differential test above): the numpy passes took max_rel from (b − a)/(b + a) in
    float32, where b + a overflowed for values near float32's largest (a slice of a few elements, whose sums
    are made in float64, passed as sound): max_rel came out 0 instead of |b − a| / max(|a|, |b|)."""
    a = np.array([0, 0, 3.38953e38], dtype=ml_dtypes.bfloat16)
    b = np.array([0, 0, 3.37624e38], dtype=ml_dtypes.bfloat16)
    expected = abs(float(b[2]) - float(a[2])) / float(a[2])
    monkeypatch.setattr(T, "KERNELS", None)
    ref = T.compare_data(_tensor(a, 16), _tensor(b, 16))
    assert ref is not None and math.isclose(ref.max_rel, expected, rel_tol=1e-6)
    f32 = np.array([3.3e38, -3.3e38], dtype=np.float32)
    ref = T.compare_data(_tensor(f32, 1), _tensor(f32 * np.float32(0.99), 1))
    assert math.isclose(ref.max_rel, 0.01, rel_tol=1e-5)
