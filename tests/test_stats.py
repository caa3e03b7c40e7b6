"""analysis.stats: every dtype against a plain numpy reference, chunking, cancel, progress, errors."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import subprocess
import sys
import threading

import ml_dtypes
import numpy as np
import pytest

from onemodel_viewer.analysis.stats.compute import Cancelled, TensorStats, compute_stats, format_value
from onemodel_viewer.format.dtypes import DTYPES, decode, encode
from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage, FileStorage

NUMERIC = sorted(c for c in DTYPES if c != 8)
FLOAT32_ARITH = {1, 14}  # histogram bins computed in float32: edges may differ by one rounding


def make(code: int, values, dims=None, where="t") -> Tensor:
    info = DTYPES[code]
    arr = np.asarray(values)
    data = encode(arr, info) if arr.size else b""
    dims = (arr.size,) if dims is None else dims
    return Tensor("t", code, tuple(dims), storage=BytesStorage(data), file_offset=0, length=len(data), where=where)


def sample(code: int, n: int = 257, seed: int = 0) -> np.ndarray:
    """Values representative of ``code``, with NaN/Inf/zeros where the type has them (shuffled)."""
    rng = np.random.default_rng(seed + code)
    return rng.permutation(_sample(code, max(n, 64), rng))[:n]


def _sample(code: int, n: int, rng) -> np.ndarray:
    info = DTYPES[code]
    if code == 9:
        return rng.integers(0, 2, n).astype(bool)
    if not info.is_float:
        lo, hi = (-(2 ** (info.bits - 1)), 2 ** (info.bits - 1)) if info.numpy.kind == "i" or code in (22, 26) else (0, 2**info.bits)
        if info.bits >= 32:
            lo, hi = (-(10**9), 10**9) if info.numpy.kind == "i" else (0, 10**9)
        v = rng.integers(lo, hi, n, dtype=np.int64)
        v[:5] = 0
        return v.astype(info.numpy)
    if code in (14, 15):
        v = (rng.standard_normal(n) + 1j * rng.standard_normal(n)).astype(info.numpy)
        v[3] = 0
        v[7] = complex(np.nan, 1)
        v[9] = complex(np.inf, 2)
        return v
    v = rng.standard_normal(n) * 3
    v[:4] = 0.0
    v[10] = -0.0
    if code in (27, 28, 23):  # no NaN/Inf in these formats
        return v.astype(np.float32).astype(info.numpy)
    if code == 24:  # float8e8m0: positive powers of two, NaN, no zero
        v = np.exp2(rng.integers(-20, 20, n)).astype(np.float32)
        v[5] = np.nan
        return v.astype(info.numpy)
    v[20] = np.nan
    v[21] = np.nan
    if code not in (17, 18, 20):  # the fn/fnuz formats have no infinity
        v[30] = np.inf
        v[31] = -np.inf
    with np.errstate(all="ignore"):
        return v.astype(info.numpy)


def reference(t: Tensor) -> dict:
    info = t.info
    raw = np.frombuffer(t.storage.buffer(), dtype=np.uint8)[: t.length]
    vals = decode(raw, info, t.count)
    if info.code == 9:
        x = (raw[: t.count] != 0).astype(np.float64)
    elif info.code in (14, 15):
        x = np.abs(vals).astype(np.float64)
    else:
        with np.errstate(all="ignore"):
            x = vals.astype(np.float64)
    fin = x[np.isfinite(x)]
    out = dict(
        count=t.count,
        nan=int(np.isnan(x).sum()),
        posinf=int((x == np.inf).sum()),
        neginf=int((x == -np.inf).sum()),
        zeros=int((x == 0).sum()),
        finite=int(fin.size),
    )
    if fin.size:
        hist, edges = np.histogram(fin, bins=32, range=(fin.min(), fin.max()))
        out.update(min=fin.min(), max=fin.max(), mean=fin.mean(), std=fin.std(), histogram=hist,
                   hist_range=(edges[0], edges[-1]))
    return out


def assert_matches(s: TensorStats, t: Tensor) -> None:
    ref = reference(t)
    for k in ("count", "nan", "posinf", "neginf", "zeros", "finite"):
        assert getattr(s, k) == ref[k], k
    if not ref["finite"]:
        assert s.min is None and s.max is None and s.mean is None and s.std is None
        assert s.histogram == () and s.hist_range is None
        return
    assert s.min == ref["min"] and s.max == ref["max"]
    assert math.isclose(s.mean, ref["mean"], rel_tol=1e-6, abs_tol=1e-9 * max(1.0, abs(ref["max"])))
    assert math.isclose(s.std, ref["std"], rel_tol=1e-5, abs_tol=1e-9 * max(1.0, abs(ref["max"])))
    assert len(s.histogram) == 32 and sum(s.histogram) == ref["finite"]
    assert s.hist_exact and s.hist_count == ref["finite"]
    assert s.hist_range == pytest.approx(ref["hist_range"])
    if t.dtype in FLOAT32_ARITH:
        # a value within one float32 rounding of an edge may land in the neighbouring bin
        assert np.abs(np.array(s.histogram) - ref["histogram"]).sum() <= 2
    else:
        assert s.histogram == tuple(int(h) for h in ref["histogram"])


@pytest.mark.parametrize("code", NUMERIC, ids=lambda c: DTYPES[c].name)
@pytest.mark.parametrize("chunk_bytes,threads", [(8 << 20, 1), (7, 1), (24, 2)])
def test_every_dtype_matches_numpy(code, chunk_bytes, threads):
    t = make(code, sample(code))
    s = compute_stats(t, chunk_bytes=chunk_bytes, threads=threads)
    assert s.dtype == code
    assert_matches(s, t)
    assert len(s.first) == 16
    if not DTYPES[code].is_float:
        assert isinstance(s.min, int) and isinstance(s.max, int)


@pytest.mark.parametrize("code,n", [(21, 7), (22, 1), (23, 9), (25, 5), (26, 3), (27, 5), (28, 1), (27, 6), (22, 15)])
@pytest.mark.parametrize("chunk_bytes", [1, 2, 3, 1 << 20])
def test_odd_subbyte_counts(code, n, chunk_bytes):
    """The padding bits of the last byte are not counted as elements."""
    vals = sample(code, n=n, seed=n)
    t = make(code, vals)
    assert t.length == DTYPES[code].byte_length(n)
    s = compute_stats(t, chunk_bytes=chunk_bytes, threads=1)
    assert_matches(s, t)
    assert len(s.first) == min(16, n)


def test_subbyte_padding_nonzero_is_ignored():
    """A 4-bit tensor of 3 elements whose padding nibble is 0xF: the nibble is not an element."""
    data = bytes([0x21, 0xF3])  # elements 1, 2, 3; padding 0xF
    t = Tensor("t", 21, (3,), storage=BytesStorage(data), file_offset=0, length=2)
    s = compute_stats(t)
    assert (s.min, s.max, s.count, s.finite) == (1, 3, 3, 3)
    assert s.first == ("1", "2", "3")


@pytest.mark.parametrize("code", [1, 10, 16, 11, 6, 21, 9, 14])
@pytest.mark.parametrize("dims", [(0,), (3, 0)])
def test_empty_tensor(code, dims):
    t = Tensor("t", code, dims, storage=BytesStorage(b""), file_offset=0, length=0)
    s = compute_stats(t)
    assert s.count == 0 and s.min is None and s.histogram == () and s.first == ()
    assert (s.nan, s.zeros, s.finite) == (0, 0, 0)


def test_scalar_tensor():
    t = make(1, np.array([2.5], dtype=np.float32), dims=())
    s = compute_stats(t)
    assert (s.count, s.min, s.max, s.mean, s.std) == (1, 2.5, 2.5, 2.5, 0.0)
    assert s.hist_range == (2.0, 3.0) and s.histogram[16] == 1 and sum(s.histogram) == 1


@pytest.mark.parametrize("code", [1, 10, 16, 11])
def test_all_nan_and_inf(code):
    vals = np.array([np.nan, np.inf, -np.inf, np.nan], dtype=np.float32).astype(DTYPES[code].numpy)
    s = compute_stats(make(code, vals))
    assert (s.nan, s.posinf, s.neginf, s.finite) == (2, 1, 1, 0)
    assert s.min is None and s.mean is None and s.histogram == () and s.hist_range is None
    assert s.first == ("nan", "inf", "-inf", "nan")


@pytest.mark.parametrize("code", [1, 10, 16, 11, 3, 7])
def test_constant_tensor_histogram_convention(code):
    vals = np.full(1000, 4, dtype=DTYPES[code].numpy)
    s = compute_stats(make(code, vals), chunk_bytes=64, threads=2)
    assert s.min == 4 and s.max == 4 and s.std == 0.0 and s.mean == 4.0
    assert s.hist_range == (3.5, 4.5) and s.histogram[16] == 1000


def test_float32_chunk_sum_overflow_is_recomputed():
    """Finite values whose float32 sum overflows: the mean must come from a float64 sum, not NaN/inf."""
    vals = np.full(64, 3e38, dtype=np.float32)
    vals[::2] = -3e38
    vals[5] = 1.0
    t = make(1, vals)
    s = compute_stats(t, chunk_bytes=64, threads=1)
    assert_matches(s, t)
    assert (s.nan, s.posinf, s.neginf) == (0, 0, 0)


def test_float64_huge_range_histogram():
    vals = np.array([-1.7e308, 1.7e308, 0.0, 1.0], dtype=np.float64)
    s = compute_stats(make(11, vals))
    assert s.min == -1.7e308 and s.max == 1.7e308 and sum(s.histogram) == 4
    assert s.histogram[0] == 1 and s.histogram[31] == 1 and s.histogram[16] == 2


def test_int64_extremes_are_exact():
    vals = np.array([np.iinfo(np.int64).min, 0, np.iinfo(np.int64).max], dtype=np.int64)
    s = compute_stats(make(7, vals))
    assert s.min == np.iinfo(np.int64).min and s.max == np.iinfo(np.int64).max
    assert isinstance(s.min, int) and sum(s.histogram) == 3 and s.zeros == 1
    vals = np.array([0, 2**64 - 1], dtype=np.uint64)
    s = compute_stats(make(13, vals))
    assert s.max == 2**64 - 1 and s.first == ("0", str(2**64 - 1))


def test_float32_mean_and_std_precision():
    """Large offset, small spread: the two-pass variance keeps the digits E[x²]-E[x]² would lose (float64-grade)."""
    rng = np.random.default_rng(5)
    vals = (1000.0 + rng.standard_normal(100_000) * 1e-3).astype(np.float32)
    t = make(1, vals)
    s = compute_stats(t, chunk_bytes=4096, threads=2)
    ref = vals.astype(np.float64)
    assert math.isclose(s.mean, ref.mean(), rel_tol=1e-13)
    assert math.isclose(s.std, ref.std(), rel_tol=1e-11)  # numpy's own float64 std is good to ~1e-13 here


def test_bool_nonzero_bytes_are_true():
    t = Tensor("t", 9, (4,), storage=BytesStorage(bytes([0, 1, 2, 255])), file_offset=0, length=4)
    s = compute_stats(t)
    assert (s.min, s.max, s.zeros, s.mean) == (0, 1, 1, 0.75)
    assert s.first == ("false", "true", "true", "true")


def test_complex_semantics():
    vals = np.array([3 + 4j, 0j, complex(np.nan, 0), complex(np.inf, np.nan), -1j], dtype=np.complex64)
    s = compute_stats(make(14, vals))
    assert (s.nan, s.posinf, s.neginf, s.zeros, s.finite) == (1, 1, 0, 1, 3)
    assert (s.min, s.max) == (0.0, 5.0)
    assert s.first[0] == "3.0+4.0j" and s.first[4] == "-0.0-1.0j"


@pytest.mark.parametrize("n", [3, 20_000])
def test_one_huge_value_fills_the_middle_bin(n):
    """Regression: a bfloat16 tensor holding only 1e38 (v - 0.5 == v + 0.5) raised ZeroDivisionError
    below 16,384 elements and put every count in the last bin above; both get bin 16."""
    s = compute_stats(make(16, np.full(n, 1e38, dtype=ml_dtypes.bfloat16)))
    v = float(ml_dtypes.bfloat16(1e38))
    assert (s.min, s.max, s.mean, s.std, s.finite) == (v, v, v, 0.0, n)
    assert s.histogram[16] == n and sum(s.histogram) == n and s.hist_range == (v, v)


def test_first_values_formatted():
    s = compute_stats(make(10, np.array([1.5, -2, np.nan, 0.1], dtype=np.float16)))
    assert s.first == ("1.5", "-2.0", "nan", "0.1")
    s = compute_stats(make(16, np.array([0.1, 3], dtype=ml_dtypes.bfloat16)))
    assert s.first == ("0.1", "3.0")
    s = compute_stats(make(22, np.array([-3, 7], dtype=ml_dtypes.int4)))
    assert s.first == ("-3", "7")
    s = compute_stats(make(1, np.arange(40, dtype=np.float32)))
    assert len(s.first) == 16 and s.first[:2] == ("0.0", "1.0")


@pytest.mark.parametrize(
    "value,code,text",
    [
        (1.5, 10, "1.5"),
        (0.1, 1, "0.1"),
        (np.float32(0.1), 1, "0.1"),
        (0.1, 11, "0.1"),
        (float("nan"), 1, "nan"),
        (float("inf"), 16, "inf"),
        (float("-inf"), 10, "-inf"),
        (ml_dtypes.bfloat16(0.1), 16, "0.1"),
        (ml_dtypes.float8_e4m3fn(448), 17, "448.0"),
        (-3, 22, "-3"),
        (True, 9, "true"),
        (0, 9, "false"),
        (1 + 2j, 14, "1.0+2.0j"),
        (2**63, 13, str(2**63)),
        (b"a\xffb", 8, "a\\xffb"),
        (1e-8, 1, "1e-08"),
    ],
)
def test_format_value(value, code, text):
    assert format_value(value, code) == text


def test_format_value_is_the_shortest_round_trip_for_every_float16():
    """Every finite float16 prints the fewest significant digits that read back as it (the correctly
    rounded decimal of that length); the digit search starts at numpy's shortest repr, which must
    never skip the answer."""
    vals = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    for v in vals[np.isfinite(vals)].astype(np.float64).tolist():
        text = format_value(v, 10)
        assert np.float16(float(text)) == np.float16(v), (v, text)
        if v != int(v):
            digits = next(d for d in range(1, 18) if np.float16(float(f"{v:.{d}g}")) == np.float16(v))
            assert text == repr(float(f"{v:.{digits}g}")), (v, text)


@pytest.mark.parametrize("code", sorted(c for c, d in DTYPES.items() if d.is_float and not d.is_complex))
def test_format_floats_is_format_value_of_each(code):
    """format_floats (the first values of a tensor, lookups hoisted and numpy scalars passed along)
    prints exactly what format_value prints for each element: every bit pattern of types of up to
    16 bits, awkward float32/float64 values beyond."""
    from onemodel_viewer.analysis.stats.result import format_floats

    info = DTYPES[code]
    if info.bits <= 16:  # every bit pattern (ml_dtypes' sub-byte types hold one code per byte)
        x = np.arange(1 << info.bits, dtype=np.uint16 if info.bits == 16 else np.uint8).view(info.numpy)
    else:
        rng = np.random.default_rng(code)
        x = np.concatenate([rng.standard_normal(500) * 10.0 ** rng.integers(-40, 38, 500),
                            [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, 0.1, 1 / 3]]).astype(info.numpy)
    with np.errstate(all="ignore"):
        want = tuple(format_value(v, code) for v in x.astype(np.float64).tolist())
    assert format_floats(x, code) == want


def test_strings():
    strings = (b"hello", b"", b"\xff\xfeok", b"x" * 1000, "é\u202e".encode())
    t = Tensor("s", 8, (5,), strings=strings)
    s = compute_stats(t)
    assert (s.count, s.min_len, s.max_len, s.total_len) == (5, 0, 1000, 5 + 0 + 4 + 1000 + len("é\u202e".encode()))
    assert s.previews[0] == "hello" and s.previews[2] == "\\xff\\xfeok"
    assert s.previews[3] == "x" * 256 + "…"
    assert s.previews[4] == "é\u202e"  # raw: the UI makes it visible
    assert s.min is None and s.histogram == ()


def test_string_count_mismatch_is_invalid_model():
    t = Tensor("s", 8, (3,), strings=(b"a",), where="manifest.graph.initializers[2]")
    with pytest.raises(FormatError) as e:
        compute_stats(t)
    assert e.value.kind == Kind.INVALID_MODEL and e.value.where == "manifest.graph.initializers[2]"


def test_length_mismatch_is_invalid_model():
    t = Tensor("t", 1, (4,), storage=BytesStorage(b"\0" * 12), file_offset=0, length=12, where="manifest.graph.initializers[0]")
    with pytest.raises(FormatError) as e:
        compute_stats(t)
    assert e.value.kind == Kind.INVALID_MODEL and e.value.where == "manifest.graph.initializers[0]"


def test_unknown_dtype_is_unsupported():
    t = Tensor("t", 99, (1,), storage=BytesStorage(b"\0"), file_offset=0, length=1, where="w")
    with pytest.raises(FormatError) as e:
        compute_stats(t)
    assert e.value.kind == Kind.UNSUPPORTED and e.value.where == "w.dtype"


@pytest.mark.parametrize("code,passes", [(1, 2), (10, 1), (3, 1), (21, 1), (7, 2)])
@pytest.mark.parametrize("threads", [1, 2])
def test_progress_reports_every_chunk(code, passes, threads):
    t = make(code, sample(code, n=1000))
    calls = []
    compute_stats(t, chunk_bytes=100, threads=threads, progress=lambda d, tot: calls.append((d, tot)))
    assert len(calls) >= passes * (t.length // 100)
    assert all(tot == passes * t.length for _, tot in calls)
    dones = [d for d, _ in calls]
    assert dones == sorted(dones) and dones[-1] == passes * t.length


@pytest.mark.parametrize("code", [1, 10, 22])
@pytest.mark.parametrize("threads", [1, 2])
def test_cancel_between_chunks(code, threads):
    t = make(code, sample(code, n=4000))
    ev = threading.Event()
    calls = []

    def progress(done, total):
        calls.append(done)
        ev.set()

    with pytest.raises(Cancelled):
        compute_stats(t, chunk_bytes=64, threads=threads, progress=progress, cancel=ev)
    assert len(calls) == 1


def test_cancel_before_start():
    ev = threading.Event()
    ev.set()
    with pytest.raises(Cancelled):
        compute_stats(make(1, sample(1)), cancel=ev)
    with pytest.raises(Cancelled):
        compute_stats(Tensor("s", 8, (1,), strings=(b"a",)), cancel=ev)


def test_file_changed_on_disk_raises_io(tmp_path):
    path = tmp_path / "w.bin"
    n = 1 << 19
    path.write_bytes(np.arange(n, dtype=np.float32).tobytes())
    st = FileStorage(path)
    assert st.mapped
    t = Tensor("w", 1, (n,), storage=st, file_offset=0, length=4 * n, where="manifest.graph.initializers[0]")
    assert compute_stats(t).max == n - 1

    def progress(done, total):
        if done == 1 << 16:
            with open(path, "ab") as f:
                f.write(b"more")
            os.utime(path, ns=(1, 1))

    with pytest.raises(FormatError) as e:
        compute_stats(t, chunk_bytes=1 << 16, threads=1, progress=progress)
    assert e.value.kind == Kind.IO
    st.close()


def test_memory_bounded_chunking_on_mapped_file(tmp_path):
    """A mapped float16 tensor in many chunks gives the same answer as one chunk."""
    path = tmp_path / "h.bin"
    vals = sample(10, n=300_001)
    path.write_bytes(vals.tobytes() + b"\0" * (1 << 20))
    st = FileStorage(path)
    t = Tensor("h", 10, (vals.size,), storage=st, file_offset=0, length=vals.nbytes)
    a = compute_stats(t, chunk_bytes=4096, threads=2)
    b = compute_stats(t, chunk_bytes=1 << 30, threads=1)
    assert a == b
    st.close()


def test_core_does_not_import_ui():
    code = (
        "import sys; sys.modules['textual'] = None; sys.modules['rich'] = None\n"
        "import onemodel_viewer.analysis.stats.compute as s\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("name", ["dtypes", "typed", "strings", "sparse"])
def test_same_stats_from_onnx_and_onemodel(name):
    """A tensor gives the same statistics whichever file format carried it (testdata/valid pairs)."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format.schema import all_tensors

    root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "testdata", "valid")
    a_path, b_path = os.path.join(root, f"{name}.onemodel"), os.path.join(root, f"{name}.onnx")
    if not (os.path.exists(a_path) and os.path.exists(b_path)):
        pytest.skip("testdata/valid not generated")
    a, b = omf.open(a_path), omf.open(b_path)
    ta = {t.name: t for t in all_tensors(a.model)}
    tb = {t.name: t for t in all_tensors(b.model)}
    assert ta.keys() == tb.keys() and ta
    for k in ta:
        assert compute_stats(ta[k]) == compute_stats(tb[k]), k
    a.close()
    b.close()


@pytest.mark.parametrize("code", [1, 11, 14, 7, 10])
def test_histogram_can_be_left_out(code):
    t = make(code, sample(code, n=3000))
    full = compute_stats(t, chunk_bytes=512, threads=2)
    lean = compute_stats(t, chunk_bytes=512, threads=2, histogram=False)
    if code == 10:  # pattern counts: the histogram costs nothing and is always there
        assert lean == full
        return
    # one pass (per-block centred sums of squares merged) instead of two: same up to rounding
    assert math.isclose(lean.mean, full.mean, rel_tol=1e-6, abs_tol=1e-7 * full.std)
    assert math.isclose(lean.std, full.std, rel_tol=1e-6)
    assert lean.hist_count is None and full.hist_count == full.finite and full.hist_exact
    assert lean == dataclasses.replace(full, histogram=(), hist_range=None, hist_count=None, mean=lean.mean,
                                       std=lean.std)
    assert_matches(dataclasses.replace(lean, histogram=full.histogram, hist_range=full.hist_range,
                                       hist_count=full.hist_count), t)


@pytest.mark.parametrize("threads", [1, 2])
def test_histogram_false_is_one_pass(threads):
    t = make(1, sample(1, n=5000))
    calls = []
    compute_stats(t, chunk_bytes=1000, threads=threads, histogram=False, progress=lambda d, tot: calls.append((d, tot)))
    assert calls[-1] == (t.length, t.length)


def test_histogram_false_precision():
    rng = np.random.default_rng(9)
    vals = (1000.0 + rng.standard_normal(100_000) * 1e-3).astype(np.float32)
    s = compute_stats(make(1, vals), chunk_bytes=4096, threads=2, histogram=False)
    ref = vals.astype(np.float64)
    assert math.isclose(s.mean, ref.mean(), rel_tol=1e-13)
    assert math.isclose(s.std, ref.std(), rel_tol=1e-11)


@pytest.mark.parametrize("seed", range(5))
def test_weighted_histogram_matches_numpy_on_edges(seed):
    """The multiset histogram puts values lying exactly on (or a rounding off) an edge where numpy does."""
    from onemodel_viewer.analysis.stats.patterns import weighted_histogram

    rng = np.random.default_rng(seed)
    lo, hi = sorted(rng.standard_normal(2) * 10.0 ** rng.integers(-3, 4))
    edges = np.linspace(lo, hi, 33)
    v = np.concatenate([edges, np.nextafter(edges, -np.inf)[1:], np.nextafter(edges, np.inf)[:-1],
                        rng.uniform(lo, hi, 500)])
    c = rng.integers(1, 1000, v.size)
    ref, ref_edges = np.histogram(v, bins=32, range=(lo, hi), weights=c)
    got, rng_ = weighted_histogram(v, c, lo, hi)
    assert got == tuple(int(x) for x in ref) and rng_ == (ref_edges[0], ref_edges[-1])


@pytest.mark.parametrize("code", [10, 16, 5, 4, 17, 2, 3])
@pytest.mark.parametrize("threads", [1, 2])
def test_pattern_counts_every_bit_pattern(code, threads):
    """Every bit pattern of the type, some many times: the sorted-pattern table gives numpy's exact answers."""
    info = DTYPES[code]
    rng = np.random.default_rng(code)
    pats = np.arange(1 << info.bits, dtype=np.uint16 if info.bits == 16 else np.uint8)
    pats = np.concatenate([pats, rng.choice(pats, 40_000)])
    data = rng.permutation(pats).tobytes()
    t = Tensor("t", code, (pats.size,), storage=BytesStorage(data), file_offset=0, length=len(data))
    assert_matches(compute_stats(t, chunk_bytes=20_000, threads=threads), t)


@pytest.mark.parametrize("code", [3, 5, 10])
def test_pattern_histogram_values_on_edges(code):
    """Integers 0..64 (and float16 of them) lie exactly on the 32 bin edges of [0, 64]: numpy's bins."""
    vals = np.repeat(np.arange(65), 300).astype(DTYPES[code].numpy)
    t = make(code, vals)
    s = compute_stats(t, chunk_bytes=4096, threads=1)
    assert_matches(s, t)
    assert s.histogram == tuple([600] * 31 + [900])


@pytest.mark.parametrize("code", [1, 11, 7])
def test_on_summary_comes_before_the_histogram(code):
    t = make(code, sample(code, n=5000))
    seen = []
    progress = []
    full = compute_stats(t, chunk_bytes=1000, threads=2, on_summary=lambda s: seen.append((s, len(progress))),
                         progress=lambda d, tot: progress.append(d))
    assert len(seen) == 1
    summary, at = seen[0]
    assert at == len(progress) // 2  # after pass 1, before pass 2
    assert summary.histogram == () and summary.hist_range is None
    assert summary == dataclasses.replace(full, histogram=(), hist_range=None, hist_count=None)
    assert_matches(full, t)


def test_on_summary_not_called_without_a_second_pass():
    called = []
    compute_stats(make(1, sample(1, n=5000)), histogram=False, on_summary=called.append)
    compute_stats(make(10, sample(10, n=50000)), on_summary=called.append)
    compute_stats(make(1, np.full(3000, 2.5, dtype=np.float32)), chunk_bytes=1000, on_summary=called.append)
    assert called == []


def test_float32_offset_blocks_keep_precision():
    """Blocks of a large offset (centred) next to blocks around zero (the Σx² shortcut): float64-grade results.

    Broke with OPENBLAS_CORETYPE=Haswell: the sums were float32 BLAS dots, 4e-9 off in the mean
    under that kernel (3e-10 under SkylakeX); they are float64 sums without BLAS now."""
    rng = np.random.default_rng(11)
    a = (rng.standard_normal(50_000) * 0.02).astype(np.float32)
    b = (300.0 + rng.standard_normal(50_000) * 1e-3).astype(np.float32)
    vals = np.concatenate([a, b, a[::-1]])
    s = compute_stats(make(1, vals), chunk_bytes=1 << 16, threads=2)
    ref = vals.astype(np.float64)
    assert math.isclose(s.mean, ref.mean(), rel_tol=1e-13)
    assert math.isclose(s.std, ref.std(), rel_tol=1e-13)


_KERNEL_PROBE = """
import json, sys
import numpy as np
from onemodel_viewer.analysis.stats.compute import compute_stats
from onemodel_viewer.format.dtypes import DTYPES, encode
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage

rng = np.random.default_rng(11)
a = (rng.standard_normal(300_000) * 0.02).astype(np.float32)
b = (300.0 + rng.standard_normal(300_000) * 1e-3).astype(np.float32)
cases = [(1, a), (1, np.concatenate([a, b, a[::-1]])), (11, np.concatenate([a, b]).astype(np.float64) * 1.1),
         (6, rng.integers(-10**6, 10**6, 200_000).astype(np.int32)), (14, (a[:200_000] + 1j * a[100_000:]).astype(np.complex64))]
out = []
for code, v in cases:
    data = encode(v, DTYPES[code])
    s = compute_stats(Tensor("t", code, (v.size,), storage=BytesStorage(data), file_offset=0, length=len(data)),
                      chunk_bytes=1 << 18, threads=2)
    ref = np.abs(v).astype(np.float64) if code == 14 else v.astype(np.float64)
    out.append([s.mean.hex(), s.std.hex(), float(ref.mean()), float(ref.std())])
try:
    import threadpoolctl  # not a dependency: where it is installed, report which kernel ran
    arch = [i.get("architecture") for i in threadpoolctl.threadpool_info() if i.get("internal_api") == "openblas"]
except ImportError:
    arch = []
print(json.dumps({"cases": out, "arch": arch}))
"""


def _openblas_kernels() -> list[str | None]:
    """``OPENBLAS_CORETYPE`` values this CPU can run (None = OpenBLAS's own choice)."""
    kernels: list[str | None] = [None]
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return kernels
    if {"avx2", "fma"} <= set(flags):
        kernels.append("Haswell")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= set(flags):
        kernels.append("SkylakeX")
    return kernels


@pytest.mark.slow
def test_figures_do_not_depend_on_the_blas_kernel():
    """Same bits and float64-grade figures under every OpenBLAS kernel this CPU runs.

    Broke where OPENBLAS_CORETYPE=Haswell is set (some of these machines set it): the mean and
    std of float32 tensors came from float32 BLAS dots, whose rounding depends on the kernel
    (the README's test command failed there). OPENBLAS_CORETYPE is read when numpy is
    imported, hence one interpreter per kernel."""
    results = {}
    for kernel in _openblas_kernels():
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if kernel is not None:
            env["OPENBLAS_CORETYPE"] = kernel
        proc = subprocess.run([sys.executable, "-c", _KERNEL_PROBE], env=env, capture_output=True, text=True, check=True)
        got = json.loads(proc.stdout)
        if kernel is not None and got["arch"]:
            assert got["arch"] == [kernel] * len(got["arch"])  # the kernel asked for is the one that ran
        results[kernel] = got["cases"]
        for mean_hex, std_hex, ref_mean, ref_std in got["cases"]:
            assert math.isclose(float.fromhex(mean_hex), ref_mean, rel_tol=1e-13), kernel
            assert math.isclose(float.fromhex(std_hex), ref_std, rel_tol=1e-13), kernel
    first = next(iter(results.values()))
    assert all(r == first for r in results.values()), results


@pytest.mark.parametrize("code,vals", [(11, [5e-324, 1e-323, 0.0]), (1, [1e-45, 3e-45, 0.0])])
def test_subnormal_range_histogram(code, vals):
    """A range so small that 32 / (max - min) overflows: still equal bins (numpy refuses this one)."""
    t = make(code, np.array(vals * 70, dtype=DTYPES[code].numpy))
    s = compute_stats(t, chunk_bytes=64, threads=2)
    assert [(i, c) for i, c in enumerate(s.histogram) if c] == [(0, 70), (16, 70), (31, 70)]
    assert s.hist_range == (0.0, max(s.max, 0.0))
