"""How much each tensor changed (issue 17): rel_l2, cosine, mean_abs, max_abs/max_rel, nonfinite against
numpy in float64, on every float dtype; integer max_abs; edge cases; the --summary ranking and layout."""

from __future__ import annotations

import dataclasses
import io
import json
import math

import numpy as np
import pytest

from onemodel_viewer.analysis.diff import compare as D
from onemodel_viewer.analysis.diff import tensors as T
from onemodel_viewer.format.dtypes import DTYPES, encode
from onemodel_viewer.format.schema import Graph, Model, OperatorSet, Tensor
from onemodel_viewer.format.storage import BytesStorage

FLOATS = [c for c, d in DTYPES.items() if d.is_float]
INTS = [c for c, d in DTYPES.items() if not d.is_float and d.bits]


def tensor(name: str, values, code: int) -> Tensor:
    arr = np.asarray(values)
    data = encode(arr, DTYPES[code])
    return Tensor(name, code, tuple(arr.shape), length=len(data), file_offset=0, storage=BytesStorage(data))


def model(*tensors: Tensor) -> Model:
    return Model(ir_version=8, graph=Graph(name="g", initializers=tuple(tensors)), opsets=(OperatorSet("", 17),))


def reference(va: np.ndarray, vb: np.ndarray) -> dict:
    """The metrics computed plainly in float64 (complex: as (re, im) pairs)."""
    work = np.complex128 if np.iscomplexobj(va) else np.float64
    a, b = va.reshape(-1).astype(work), vb.reshape(-1).astype(work)
    fin = np.isfinite(a) & np.isfinite(b)
    a, b = a[fin], b[fin]
    ra, rb = (a.view(np.float64), b.view(np.float64)) if work is np.complex128 else (a, b)
    na, nb, nd = np.linalg.norm(ra), np.linalg.norm(rb), np.linalg.norm(rb - ra)
    d = np.abs(b - a)
    mag = np.maximum(np.abs(a), np.abs(b))
    rel = np.divide(d, mag, out=np.zeros_like(d), where=mag > 0)
    return {"rel_l2": nd / na, "cosine": float(ra @ rb) / (na * nb), "mean_abs": d.mean(), "max_abs": d.max(),
            "max_rel": rel.max(), "nonfinite": int((~fin).sum())}


def compare(a: Tensor, b: Tensor) -> T.DataDelta | None:
    return T.compare_tensors([(a, b)], threads=2)[0]


def values_for(code: int, n: int, rng, scale: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    info = DTYPES[code]
    x = rng.standard_normal(n) * scale
    y = x * (1 + 0.05 * rng.standard_normal(n)) + 0.001 * scale * rng.standard_normal(n)
    if info.name == "float8e8m0":  # powers of two only, no sign (a negative value is its NaN)
        x, y = np.abs(x), np.abs(y)
    if info.name.startswith("complex"):
        x, y = x + 1j * rng.standard_normal(n), y + 1j * rng.standard_normal(n) * 0.1
    return np.asarray(x).astype(info.numpy), np.asarray(y).astype(info.numpy)


@pytest.mark.parametrize("n", [1, 7, 1000, 600_000])
@pytest.mark.parametrize("code", FLOATS)
def test_metrics_match_numpy_float64(code, n):
    rng = np.random.default_rng(code * 31 + n)
    a, b = values_for(code, n, rng, scale=2.0 if DTYPES[code].name == "float8e8m0" else 0.5)
    a.flat[0], b.flat[0] = 1.0, 2.0  # never all zeros (coarse types round small values to 0): see test_zero_norm_a
    ta, tb = tensor("w", a, code), tensor("w", b, code)
    delta = compare(ta, tb)
    if delta is None:  # coarse types may round every change away
        assert np.array_equal(ta.raw(), tb.raw())
        return
    ref = reference(ta.values(), tb.values())
    for key in ("rel_l2", "cosine", "mean_abs", "max_abs", "max_rel"):
        assert math.isclose(getattr(delta, key), ref[key], rel_tol=1e-6, abs_tol=1e-12), (key, getattr(delta, key), ref[key])
    assert delta.nonfinite == ref["nonfinite"] == 0


@pytest.mark.parametrize("code", [c for c in FLOATS if DTYPES[c].name not in ("float4e2m1", "float6e2m3", "float6e3m2",
                                                                              "float8e4m3fn", "float8e8m0")])
def test_nan_inf_and_signed_zero_mixes(code):
    """Non-finite pairs are counted and left out of every metric; -0.0 vs 0.0 differs but moves nothing."""
    rng = np.random.default_rng(code)
    a, b = values_for(code, 5000, rng)
    b[10] = np.nan          # finite vs NaN
    a[20] = np.inf          # Inf vs finite
    a[30], b[30] = -np.inf, -np.inf  # equal non-finite pair: not differing, still not finite
    a[40], b[40] = 0.0, -0.0
    delta = compare(tensor("w", a, code), tensor("w", b, code))
    ref = reference(tensor("w", a, code).values(), tensor("w", b, code).values())
    assert delta.nonfinite == ref["nonfinite"] == 3
    for key in ("rel_l2", "cosine", "mean_abs", "max_abs", "max_rel"):
        assert math.isclose(getattr(delta, key), ref[key], rel_tol=1e-6), key


def test_float16_nan_and_inf_through_the_bit_path():
    """float16 is widened by moving bits (NaN/Inf come out as large finite numbers there): they must still be
    counted as non-finite, and a slice holding one is redone exactly."""
    a = np.linspace(-1, 1, 300_000).astype(np.float16)
    b = (a * np.float16(1.01)).astype(np.float16)
    b[5], a[7], a[8], b[8] = np.nan, -np.inf, np.inf, np.inf
    delta = compare(tensor("w", a, 10), tensor("w", b, 10))
    ref = reference(a, b)
    assert delta.nonfinite == 3
    assert math.isclose(delta.rel_l2, ref["rel_l2"], rel_tol=1e-6)
    assert math.isclose(delta.max_abs, ref["max_abs"], rel_tol=1e-6)


def test_only_signed_zeros_differ():
    a = np.zeros(64, np.float32)
    b = a.copy()
    b[3] = -0.0
    delta = compare(tensor("w", a, 1), tensor("w", b, 1))
    assert delta.differing == 1
    assert (delta.rel_l2, delta.cosine, delta.mean_abs, delta.max_abs, delta.max_rel) == (0.0, 1.0, 0.0, 0.0, 0.0)


def test_zero_norm_a():
    """‖a‖ = 0 and b not: rel_l2 is inf ("inf" in JSON), cosine undefined (null)."""
    a, b = np.zeros(100, np.float32), np.zeros(100, np.float32)
    b[50] = 2.0
    delta = compare(tensor("w", a, 1), tensor("w", b, 1))
    assert delta.rel_l2 == math.inf and delta.cosine is None
    assert delta.mean_abs == pytest.approx(0.02) and delta.max_abs == 2.0 and delta.max_rel == 1.0
    m = delta.metrics()
    assert m["rel_l2"] == "inf" and m["cosine"] is None
    json.dumps(m, allow_nan=False)


def test_no_finite_pair():
    a = np.full(10, np.nan, np.float32)
    b = a.view(np.uint32).copy()
    b[:] += 1  # other NaN payloads
    delta = compare(tensor("w", a, 1), tensor("w", b.view(np.float32), 1))
    assert delta.differing == 10 and delta.nonfinite == 10 and delta.finite == 0
    assert delta.mean_abs is None and delta.metrics()["mean_abs"] is None


def test_empty_tensors_are_equal():
    for code in FLOATS + INTS:
        e = tensor("e", np.zeros(0, DTYPES[code].numpy), code)
        assert compare(e, e) is None
        assert D.diff_models(model(e), model(dataclasses.replace(e))).equal


@pytest.mark.parametrize("scale", [1e30, 1e-30])
def test_values_beyond_the_float32_work_range(scale):
    """Squares of 1e30 overflow float32 and of 1e-30 underflow: those slices are computed in float64."""
    rng = np.random.default_rng(1)
    a = (rng.standard_normal(10_000) * scale).astype(np.float32)
    b = (a * (1 + 0.01 * rng.standard_normal(10_000))).astype(np.float32)
    delta = compare(tensor("w", a, 1), tensor("w", b, 1))
    ref = reference(a, b)
    for key in ("rel_l2", "cosine", "mean_abs", "max_abs", "max_rel"):
        assert math.isclose(getattr(delta, key), ref[key], rel_tol=1e-6), key


@pytest.mark.parametrize("code", [1, 10, 16])
def test_max_rel_with_sign_flips_and_zeros_in_float32_work(code, monkeypatch):
    """max_rel comes from t = (b − a)/(b + a) in float32 (2|t|/(1 + |t|)): sign flips either way, b = -a
    (ratio 2, t infinite), a = 0 or b = 0 (ratio 1) and two zeros (left out) must all come out right there,
    without the float64 redo."""
    rng = np.random.default_rng(code + 7)
    a = rng.standard_normal(20_000) * 0.02
    b = a * (1 + 0.01 * rng.standard_normal(20_000))
    monkeypatch.setattr(T, "_float_exact", lambda *args: pytest.fail("redone in float64"))
    cases = {"flip, |b| > |a|": (0.5, -0.75), "flip, |b| < |a|": (0.5, -0.3), "b = -a": (0.25, -0.25),
             "a = 0": (0.0, 0.01), "b = 0": (0.01, 0.0), "two zeros": (0.0, -0.0)}
    for k, (name, (x, y)) in enumerate(cases.items()):
        va, vb = a.copy(), b.copy()
        va[100 + k], vb[100 + k] = x, y
        ta, tb = tensor("w", va, code), tensor("w", vb, code)
        delta = compare(ta, tb)
        ref = reference(ta.values(), tb.values())
        for key in ("rel_l2", "cosine", "mean_abs", "max_abs", "max_rel"):
            assert math.isclose(getattr(delta, key), ref[key], rel_tol=1e-6), (name, key, getattr(delta, key), ref[key])
        assert delta.nonfinite == 0


@pytest.mark.parametrize("top", [1.0, 200.0, 65504.0])  # 200: Σa² ~1.6e9, one Inf in b leaves cosine > 1/2
@pytest.mark.parametrize("special", [None, np.inf, -np.inf, np.nan])
def test_float16_nan_inf_in_b_small_or_near_the_largest_values(special, top):
    """float16's NaN/Inf are found from Σa² and Σ(b − a)² (a bit-moved NaN/Inf squares to 2^32 or more); large
    finite values (Σa² past 2^31) are looked at one by one instead: counted right either way, also when
    only b holds one."""
    rng = np.random.default_rng(11)
    a = (rng.uniform(-top, top, 120_000)).astype(np.float16)
    b = (a.astype(np.float32) * (1 + 0.001 * rng.standard_normal(120_000))).clip(-65504, 65504).astype(np.float16)
    if special is not None:
        b[1234] = special
    delta = compare(tensor("w", a, 10), tensor("w", b, 10))
    ref = reference(a, b)
    assert delta.nonfinite == ref["nonfinite"] == (0 if special is None else 1)
    for key in ("rel_l2", "cosine", "mean_abs", "max_abs", "max_rel"):
        assert math.isclose(getattr(delta, key), ref[key], rel_tol=1e-6), key


@pytest.mark.parametrize("code", [1, 16])
def test_zero_initialised_a_stays_in_float32_work(code, monkeypatch):
    """A zero Σa² in float32 is either all zeros (exact: kept) or everything underflowed (redone in float64):
    a zero-initialised tensor that was trained must not take the float64 redo, and come out right."""
    rng = np.random.default_rng(3)
    a, b = np.zeros(50_000), rng.standard_normal(50_000) * 0.01
    b[:1000] = 0.0  # zero pairs: left out of max_rel, counted everywhere else
    monkeypatch.setattr(T, "_float_exact", lambda *args: pytest.fail("redone in float64"))
    ta, tb = tensor("w", a, code), tensor("w", b, code)
    delta = compare(ta, tb)
    with np.errstate(all="ignore"):  # ‖a‖ = 0: the reference's rel_l2 and cosine divide by it
        ref = reference(ta.values(), tb.values())
    assert delta.rel_l2 == math.inf and delta.cosine is None and delta.max_rel == 1.0
    for key in ("mean_abs", "max_abs"):
        assert math.isclose(getattr(delta, key), ref[key], rel_tol=1e-6), key
    assert math.isclose(delta.sum_bb, float(np.square(tb.values().astype(np.float64)).sum()), rel_tol=1e-6)


def test_unrelated_tensors_cosine_near_zero():
    """Where Σab would be derived with cancellation (cosine ~ 0), it is computed directly."""
    rng = np.random.default_rng(2)
    a, b = rng.standard_normal(400_000).astype(np.float32), rng.standard_normal(400_000).astype(np.float32)
    delta = compare(tensor("w", a, 1), tensor("w", b, 1))
    ref = reference(a, b)
    assert abs(ref["cosine"]) < 0.01
    assert math.isclose(delta.cosine, ref["cosine"], rel_tol=1e-6)
    assert math.isclose(delta.rel_l2, ref["rel_l2"], rel_tol=1e-6)


@pytest.mark.parametrize("code", INTS)
def test_integer_max_abs_is_exact(code):
    info = DTYPES[code]
    if info.name == "bool":
        a = np.array([True, False, True])
        b = np.array([True, True, True])
        want = 1
    else:
        lo, hi = (int(np.iinfo(info.numpy).min), int(np.iinfo(info.numpy).max)) if info.bits >= 8 else \
            ((-(1 << (info.bits - 1)), (1 << (info.bits - 1)) - 1) if info.name.startswith("int") else (0, (1 << info.bits) - 1))
        a = np.array([lo, 0, hi, 1], dtype=object)
        b = np.array([hi, 0, hi, 2], dtype=object)
        want = hi - lo
        a, b = a.astype(np.int64 if info.name != "uint64" else np.uint64), b.astype(np.int64 if info.name != "uint64" else np.uint64)
        a, b = a.astype(info.numpy), b.astype(info.numpy)
    delta = compare(tensor("q", a, code), tensor("q", b, code))
    assert delta.max_abs == want and isinstance(delta.metrics()["max_abs"], int)
    assert "rel_l2" not in delta.metrics()


def test_threads_slices_and_segments_agree(monkeypatch):
    """The same figures whatever the chunk, slice and segment sizes and the number of threads."""
    rng = np.random.default_rng(3)
    a = (rng.standard_normal(50_000) * 0.02).astype(np.float16)
    b = (a.astype(np.float32) * (1 + 0.01 * rng.standard_normal(50_000))).astype(np.float16)
    b[:20_000] = a[:20_000]  # an equal stretch first: summed only once the tensor is seen to differ
    ta, tb = tensor("w", a, 10), tensor("w", b, 10)
    whole = T.compare_tensors([(ta, tb)], threads=1)[0]
    monkeypatch.setattr(T, "CHUNK", 48 * 8 * 16)
    monkeypatch.setattr(T, "SEGMENT", 48 * 8 * 32)
    monkeypatch.setattr(T, "SLICE", 1024)
    monkeypatch.setattr(T, "_scratch", T._Scratch())  # work arrays of that size, given back afterwards
    split = T.compare_tensors([(ta, tb)], threads=2)[0]
    assert (split.differing, split.first, split.nonfinite, split.finite) == (whole.differing, whole.first, 0, 50_000)
    for key in ("rel_l2", "cosine", "mean_abs", "max_abs", "max_rel"):
        assert math.isclose(getattr(split, key), getattr(whole, key), rel_tol=1e-6), key
    ref = reference(a, b)
    assert math.isclose(split.rel_l2, ref["rel_l2"], rel_tol=1e-6)


def test_units_cover_every_byte_once_largest_first(monkeypatch):
    """Units of work: a big tensor cut into SEGMENT stretches, a middling one alone, small ones grouped in file
    order up to GROUP; every byte of every pair in exactly one stretch; the largest units first.

    Broke (slow, not wrong): units were handed out in file order, so a 48 MiB one could come last and leave
    the other thread idle while it ran."""
    from types import SimpleNamespace

    monkeypatch.setattr(T, "SEGMENT", 1000)
    monkeypatch.setattr(T, "GROUP", 300)
    sizes = [100, 2500, 120, 90, 0, 400, 50]
    pairs = [(SimpleNamespace(length=n), SimpleNamespace(length=n)) for n in sizes]
    units = T._units(pairs)
    unit_bytes = [sum(e - s for _, s, e in u) for u in units]
    assert unit_bytes == sorted(unit_bytes, reverse=True)
    assert units[:4] == [[(1, 0, 1000)], [(1, 1000, 2000)], [(1, 2000, 2500)], [(5, 0, 400)]]
    assert sorted(units[4:]) == [[(0, 0, 100), (2, 0, 120), (3, 0, 90)], [(4, 0, 0), (6, 0, 50)]]
    covered = sorted((i, s, e) for u in units for i, s, e in u)
    for i, n in enumerate(sizes):
        mine = [(s, e) for j, s, e in covered if j == i]
        assert mine[0][0] == 0 and mine[-1][1] == n and all(x[1] == y[0] for x, y in zip(mine, mine[1:]))


def test_sums_do_not_depend_on_which_thread_finishes_first(monkeypatch):
    """Bit-identical sums whatever order the threads finish a tensor's stretches in.

    Broke: each stretch's sums were added as its thread finished, so a tensor split between threads
    could print other last digits from one run to the next. Here the first stretch is made to finish last."""
    import time

    rng = np.random.default_rng(5)
    a = rng.standard_normal(30_000) * 0.3  # float64: each stretch's sums use every bit of a double
    b = a * (1 + 0.01 * rng.standard_normal(30_000))
    ta, tb = tensor("w", a, 11), tensor("w", b, 11)
    monkeypatch.setattr(T, "CHUNK", 48 * 8 * 16)
    monkeypatch.setattr(T, "SEGMENT", 48 * 8 * 16)
    monkeypatch.setattr(T, "SLICE", 1024)
    monkeypatch.setattr(T, "_scratch", T._Scratch())  # work arrays of that size, given back afterwards
    in_order = T.compare_tensors([(ta, tb)], threads=1)[0]
    stretch = T._stretch

    def late_first(x, y, start, end, cancel):
        if start == 0:
            time.sleep(0.3)
        return stretch(x, y, start, end, cancel)

    monkeypatch.setattr(T, "_stretch", late_first)
    shuffled = T.compare_tensors([(ta, tb)], threads=2)[0]
    fields = ("sum_aa", "sum_bb", "sum_ab", "sum_dd", "sum_abs", "max_abs", "max_rel", "differing", "first")
    assert [getattr(shuffled, f) for f in fields] == [getattr(in_order, f) for f in fields]


def test_json_detail_and_totals():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((30, 40)).astype(np.float32)
    keep = rng.standard_normal(100).astype(np.float32)
    w2 = w * np.float32(1.1)
    r = D.diff_models(model(tensor("w", w, 1), tensor("k", keep, 1)), model(tensor("w", w2, 1), tensor("k", keep, 1)))
    (d,) = r.differences
    det = d.detail
    assert set(det) >= {"differing", "count", "first_index", "first_byte", "max_abs", "max_rel", "rel_l2", "cosine",
                        "mean_abs", "nonfinite"}
    assert det["rel_l2"] == pytest.approx(0.1, rel=1e-6) and det["cosine"] == pytest.approx(1.0)
    # over all weights: ‖Δw‖ / ‖(w, keep)‖
    want = np.linalg.norm((w2 - w).astype(np.float64)) / math.hypot(np.linalg.norm(w.astype(np.float64)),
                                                                      np.linalg.norm(keep.astype(np.float64)))
    assert r.totals["rel_l2"] == pytest.approx(want, rel=1e-6)
    assert (r.totals["changed_tensors"], r.totals["float_tensors"]) == (1, 2)
    json.dumps(r.as_json("a", "b"), allow_nan=False)


def test_differences_keep_walk_order():
    """Data differences finish in any order on the threads but are listed in the order of the walk."""
    ts = [tensor(f"t{i}", np.arange(1000, dtype=np.float32) + i, 1) for i in range(6)]
    ts2 = [dataclasses.replace(t, doc="x") if i % 2 else t for i, t in enumerate(ts)]
    ts2 = [tensor(t.name, t.values() * 2, 1) if i in (1, 4) else t for i, t in enumerate(ts2)]
    r = D.diff_models(model(*ts), model(*ts2))
    assert [d.where for d in r.differences] == [
        'graph.initializers["t1"].data', 'graph.initializers["t3"].doc', 'graph.initializers["t4"].data',
        'graph.initializers["t5"].doc']


# ---------------------------------------------------------------------------- --summary


def _summary(ma: Model, mb: Model, **kw) -> str:
    from onemodel_viewer.commands.diff import _summary as summary
    from onemodel_viewer.format.document import Document

    r = D.diff_models(ma, mb)
    out = io.StringIO()
    docs = (Document("a.onemodel", "onemodel", 100, model=ma), Document("b.onemodel", "onemodel", 100, model=mb))
    summary("a.onemodel", "b.onemodel", docs, r, out, **kw)
    return out.getvalue()


def test_summary_ranks_tensors_by_rel_l2():
    rng = np.random.default_rng(5)
    base = [tensor(f"w{i}", rng.standard_normal(500).astype(np.float32), 1) for i in range(5)]
    factors = {"w0": 1.001, "w1": 1.5, "w2": 1.0, "w3": 1.05, "w4": 1.2}
    changed = [tensor(t.name, t.values() * np.float32(factors[t.name]), 1) for t in base]
    text = _summary(model(*base), model(*changed), top=3)
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("most changed tensors"))
    assert "3 of 4" in lines[head]
    names = [lines[head + 2 + k].split()[0] for k in range(3)]
    assert names == ["w1", "w4", "w3"]
    assert "… 1 more changed float tensor" in text
    assert "weights: 4 of 5 float tensors changed" in text
    row = lines[head + 2].split()
    assert row[1:3] == ["float", "[500]"] and row[-1] == "100.0%"
    assert float(row[3]) == pytest.approx(0.5, rel=1e-3)


def test_summary_one_line_per_structure_difference_and_plurals():
    m = model(tensor("w", np.arange(4, dtype=np.float32), 1))
    long = "x" * 120
    m2 = model(tensor("w", np.arange(4, dtype=np.float32), 1), tensor(long, np.arange(3, dtype=np.int64), 7))
    text = _summary(m, m2)
    assert "1 difference: 1 added" in text and "1 differences" not in text
    line = next(line for line in text.splitlines() if long in line)  # not wrapped at 80 columns
    assert line.strip().startswith("+ graph.initializers") and "int64[3]" in line
    assert "graph.initializers (1 added)" in text


def test_summary_cli_top_option(tmp_path, capsys):
    from onemodel_viewer.cli import main

    with pytest.raises(SystemExit):
        main(["--diff", "a", "b", "--top", "3"])  # --top without --summary
    assert "--top goes with --diff --summary" in capsys.readouterr().err


_KERNEL_PROBE = r"""
import json, sys
import numpy as np
from onemodel_viewer.analysis.diff import tensors as T
from onemodel_viewer.format.dtypes import DTYPES, encode
from onemodel_viewer.format.schema import Tensor
from onemodel_viewer.format.storage import BytesStorage
rng = np.random.default_rng(17)
out = []
for code in (1, 10, 16):  # float32, float16, bfloat16: the float32 fast path
    x = rng.standard_normal(300_000) * 0.3
    y = x * (1 + 0.01 * rng.standard_normal(x.size))
    pair = []
    for v in (x, y):
        data = encode(v.astype(DTYPES[code].numpy), DTYPES[code])
        pair.append(Tensor("t", code, (v.size,), length=len(data), file_offset=0, storage=BytesStorage(data)))
    d = T.compare_data(*pair)
    out.append([float(d.sum_aa).hex(), float(d.sum_bb).hex(), float(d.sum_ab).hex(), float(d.sum_dd).hex(),
                float(d.sum_abs).hex()])
print(json.dumps(out))
"""


def _openblas_kernels() -> list[str | None]:
    """``OPENBLAS_CORETYPE`` values this CPU can run (None = OpenBLAS's own choice)."""
    kernels: list[str | None] = [None]
    try:
        with open("/proc/cpuinfo") as f:
            flags = set(next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), []))
    except OSError:
        return kernels
    if {"avx2", "fma"} <= flags:
        kernels.append("Haswell")
    if {"avx512f", "avx512bw", "avx512dq", "avx512vl"} <= flags:
        kernels.append("SkylakeX")
    return kernels


@pytest.mark.slow
def test_metrics_do_not_depend_on_the_blas_kernel():
    """The same sums, to the bit, under every OpenBLAS kernel this CPU runs.

    Broke under OPENBLAS_CORETYPE=SkylakeX: the float32 row products were np.vecdot, which calls
    OpenBLAS's sdot, so --diff --json printed other last digits than under Haswell. The kernel is
    chosen when numpy is imported: one interpreter per kernel."""
    import os
    import subprocess
    import sys

    results = {}
    for kernel in _openblas_kernels():
        env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
        if kernel is not None:
            env["OPENBLAS_CORETYPE"] = kernel
        proc = subprocess.run([sys.executable, "-c", _KERNEL_PROBE], env=env, capture_output=True, text=True, check=True)
        results[kernel] = json.loads(proc.stdout)
    first = next(iter(results.values()))
    assert all(r == first for r in results.values()), results


# ---------------------------------------------------------------------------- the files under a comparison


class _Changing(BytesStorage):
    """Bytes whose file 'changes on disk' once ``changed`` is set (a writer racing the comparison)."""

    changed = False

    def check(self) -> None:
        from onemodel_viewer.format.errors import FormatError, Kind

        if self.changed:
            raise FormatError(Kind.IO, "file", None, "the file changed on disk since it was opened; reload it")


def test_a_file_changed_while_its_last_chunk_is_read_is_reported(monkeypatch):
    """Broke: the files were checked before each chunk only, so a change while the last (here the only) chunk
    was read gave a result from bytes that may have read as zeros; they are checked after each unit too."""
    from onemodel_viewer.format.errors import FormatError, Kind

    a = np.arange(1000, dtype=np.float32)
    data_a, data_b = encode(a, DTYPES[1]), encode(a * 2, DTYPES[1])
    ta = Tensor("w", 1, (1000,), length=len(data_a), file_offset=0, storage=BytesStorage(data_a))
    tb = Tensor("w", 1, (1000,), length=len(data_b), file_offset=0, storage=_Changing(data_b))
    element_pass = T._slice

    def racing(*args, **kw):  # the file changes while its elements are compared
        element_pass(*args, **kw)
        tb.storage.changed = True

    monkeypatch.setattr(T, "_slice", racing)
    monkeypatch.setattr(T, "KERNELS", None)  # the numpy passes (tests/test_kernels_paths.py: the compiled one)
    for run in (lambda: T.compare_tensors([(ta, tb)], threads=1), lambda: T.compare_data(ta, tb)):
        tb.storage.changed = False
        with pytest.raises(FormatError) as e:
            run()
        assert e.value.kind == Kind.IO


def test_small_tensors_release_their_pages_in_batches(tmp_path, monkeypatch):
    """The mapped pages of neighbouring small tensors are released together (one madvise per few MiB of a
    file, not one per tensor and side: ~5,000 calls on the 1 GiB benchmark model), and every one of them."""
    from onemodel_viewer.analysis.diff import pages as diff_pages
    from onemodel_viewer.format.storage import FileStorage

    n, size = 300, 16 << 10  # 300 tensors of 16 KiB, 64-byte aligned, in two 4.7 MiB files
    rng = np.random.default_rng(9)
    blob_a = rng.integers(0, 255, n * size, dtype=np.uint8)
    blob_b = blob_a.copy()
    blob_b[::size] ^= 1  # every tensor differs in its first byte
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(blob_a.tobytes())
    pb.write_bytes(blob_b.tobytes())
    sa, sb = FileStorage(pa), FileStorage(pb)
    try:
        assert sa.mapped and sb.mapped
        pairs = [tuple(Tensor(f"t{i}", 2, (size,), length=size, file_offset=i * size, storage=s) for s in (sa, sb))
                 for i in range(n)]
        dropped: list[tuple[int, int, int]] = []
        drop = diff_pages._drop
        monkeypatch.setattr(diff_pages, "_drop", lambda buf, lo, hi: (dropped.append((id(buf), lo, hi)), drop(buf, lo, hi)))
        deltas = T.compare_tensors(pairs, threads=2)
        assert all(d is not None and d.differing == 1 for d in deltas)
        assert len(dropped) <= 8, len(dropped)
        for s in (sa, sb):  # every compared byte of each file released (ranges join across small gaps only)
            reach = 0
            for _, lo, hi in sorted(x for x in dropped if x[0] == id(s.buffer())):
                assert lo <= reach + diff_pages._JOIN
                reach = max(reach, hi)
            assert reach == n * size
    finally:
        sa.close()
        sb.close()
