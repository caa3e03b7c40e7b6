"""Tensor data comparison: which elements of two same-shaped tensors differ, and how much (issues 5, 17).

:func:`compare_tensors` compares many pairs on a small pool of threads (numpy releases the
GIL) and reports each pair as it completes; :func:`compare_data` compares one.

Bytes are compared first, in chunks, as ``uint64`` without allocating: equal files cost
one pass over the bytes. Only when a tensor differs are its elements decoded:

* every type: ``differing`` (elements whose bit patterns differ, so ``-0.0`` vs ``0.0`` and
  NaN payloads count), the first differing element and its index;
* integers (and bool): ``max_abs``, exact;
* floats (every float dtype of the dtype table), over the *finite pairs* (both sides finite)
  and summed in float64: ``rel_l2`` = ‖b − a‖₂ / ‖a‖₂, ``cosine`` of the flattened values,
  ``mean_abs`` = mean |b − a|, ``max_abs``, ``max_rel`` = max |b − a| / max(|a|, |b|);
  ``nonfinite`` counts the pairs where either side is NaN or ±Inf (they are left out of
  every metric). When ‖a‖₂ = 0, ``rel_l2`` is 0 if b is all zeros too, else ``inf``;
  ``cosine`` is 1 when both sides are all zeros, ``None`` when one is; ``mean_abs`` is
  ``None`` without finite pairs. Complex tensors count as vectors of (re, im) pairs.

How (measured on the 4 GiB benchmark model, 2 cores): float16/bfloat16/float32 (and the
8/6/4-bit floats, decoded) are widened to float32, exactly; float16 by moving its bits
(numpy's float16 cast runs at ~1 GB/s, this at ~6). Sums of products are float32 dot
products of :data:`ROW` elements (numpy's einsum, not BLAS: np.vecdot's OpenBLAS sdot rounds
differently per OPENBLAS_CORETYPE; each row exact to ~1e-7) added in float64, stretches merged in
byte order (the same figures on every run and kernel).
A slice whose float32 sums show a NaN/Inf, an overflow or too much underflow (see :func:`_sound`)
is redone in float64 with the non-finite pairs masked out; float64 and complex tensors always
take that path. ``max_rel`` comes from (b − a)/(b + a) (:func:`_max_rel`).

No UI here; cancellation is a plain ``threading.Event``.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from typing import Callable, Sequence

import numpy as np

from ...format.dtypes import DTYPES, DataType, DType, decode
from ...format.schema import Tensor
from ...kernels import KERNELS, kind
from .pages import check_files, flush, release
from .result import DataDelta, DiffCancelled
from .skip import check_sizes

__all__ = ["CHUNK", "THREADS", "DataDelta", "compare_data", "compare_tensors", "tensor_norms"]

CHUNK = 6 << 20
"""Bytes compared per step (6 MiB: a multiple of 8 for ``uint64`` views and of 3 for 6-bit elements)."""

SLICE = 256 << 10
"""Elements decoded at once inside a differing chunk (bounds the scratch memory: ~5 MiB per thread)."""

ROW = 256
"""Elements per float32 dot product; the products are summed in float64 (einsum: 0.160 ns an element in rows of
256, 0.173 in rows of 512)."""

SUM_ROW = 512
"""Elements per float32 sum (Σ|b − a|; einsum: 0.071 ns an element in rows of 512, 0.080 in rows of 256)."""

SEGMENT = 8 * CHUNK
"""Bytes per stretch: larger tensors are split into stretches of this size (one unit of work each)."""

GROUP = 2 * CHUNK
"""Bytes of small tensors grouped into one unit of work (see :func:`_units`)."""

THREADS = 2
"""Threads comparing tensor data."""

_TINY = 2.0 ** -100
"""A float32 sum of n squares under n·_TINY may have lost terms to underflow: redone in float64."""

_F32_SUM_SAFE = 2.0 ** 250
"""Largest Σa² (and Σb²) of a slice whose ``a + b`` cannot overflow float32 (every |a| below 2^125)."""

_F16_SCALE = np.float32(2.0 ** 112)
_F16_MASK = np.int32(-0x70000001)  # 0x8FFFFFFF: sign and the 28 low bits of the shifted half
_F16_FINITE = 65504.0
"""Largest finite float16; its NaN/Inf come out of the bit move as 65536 or more."""


# ---------------------------------------------------------------------------- running sums


class _Sums:
    """Running facts over one stretch of a tensor pair (mergeable)."""

    __slots__ = ("differing", "first", "a_first", "b_first", "max_abs", "max_rel", "nonfinite", "finite",
                 "aa", "bb", "ab", "dd", "abs", "unsummed", "done")

    def __init__(self) -> None:
        self.differing = 0
        self.first: int | None = None
        self.a_first = self.b_first = ""
        self.max_abs: float | int = 0
        self.max_rel = 0.0
        self.nonfinite = self.finite = 0
        self.aa = self.bb = self.ab = self.dd = self.abs = 0.0
        self.unsummed: list[tuple[int, int]] = []
        """Equal byte ranges seen before any difference: summed only if the tensor turns out to differ."""
        self.done = 0
        """Bytes compared."""

    def merge(self, o: "_Sums") -> None:
        self.differing += o.differing
        if o.first is not None and (self.first is None or o.first < self.first):
            self.first, self.a_first, self.b_first = o.first, o.a_first, o.b_first
        self.max_abs = max(self.max_abs, o.max_abs)
        self.max_rel = max(self.max_rel, o.max_rel)
        self.nonfinite += o.nonfinite
        self.finite += o.finite
        self.aa += o.aa
        self.bb += o.bb
        self.ab += o.ab
        self.dd += o.dd
        self.abs += o.abs
        self.unsummed += o.unsummed
        self.done += o.done


# ---------------------------------------------------------------------------- elements


def _element_text(arr: np.ndarray, info: DType) -> str:
    """One decoded element as text, keeping NaN payloads and signed zeros visible."""
    v = arr.reshape(-1)[0]
    if np.iscomplexobj(arr):
        return str(complex(v))
    if info.is_float:
        f = float(v)
        if math.isnan(f):
            raw = arr.reshape(-1)[:1].view(np.uint8) if info.bits >= 8 else None
            return "nan" + ("" if raw is None else "(0x" + bytes(raw[::-1]).hex() + ")")
        return str(v)
    if info.name == "bool":
        return str(bool(v))
    return str(int(v))


_UINT = {8: np.uint8, 16: np.uint16, 32: np.uint32, 64: np.uint64}


def _bit_view(raw: np.ndarray, info: DType, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(one integer per element for bitwise comparison, the decoded elements) of a byte slice."""
    bits = info.bits
    if bits < 8:  # unpacked by the dtype table, one code per element
        vals = decode(raw, info, n)
        return vals.view(np.uint8), vals
    if bits == 128:
        return raw.view(np.uint64).reshape(-1, 2), raw.view(info.numpy)
    return raw.view(_UINT[bits]), raw.view(info.numpy)


class _Scratch(threading.local):
    """Per-thread work arrays of :data:`SLICE` elements, reused from slice to slice."""

    def __init__(self) -> None:
        # one block, arrays 4 KiB + 64 bytes off a power of two apart (equal low address bits: slices took 2x)
        step = SLICE + 1040
        block = np.empty(5 * step, np.float32)
        self.f = [block[k * step : k * step + SLICE] for k in range(4)]
        self.i = block[4 * step : 4 * step + SLICE].view(np.int32)
        self.ne = np.empty(SLICE, np.bool_)


_scratch = _Scratch()


def _dot(x: np.ndarray, y: np.ndarray | None = None, row: int = ROW) -> float:
    """Σ x·y (``y`` None: Σ x) of float32 vectors: float32 sums of ``row`` products (einsum, not BLAS: see
    the module docstring; ~0.16 ns per element, vecdot's sdot ~0.09; Σ x ~0.07, np.add.reduce ~0.16), added
    in float64."""
    k = x.size - x.size % row
    rows = (x[:k].reshape(-1, row),) if y is None else (x[:k].reshape(-1, row), y[:k].reshape(-1, row))
    s = float(np.add.reduce(np.einsum("ij->i" if y is None else "ij,ij->i", *rows), dtype=np.float64)) if k else 0.0
    if k < x.size:
        s += float(np.add.reduce(x[k:].astype(np.float64) * (1 if y is None else y[k:])))
    return s


def _as_f32(vals: np.ndarray, bits: np.ndarray, info: DType, out: np.ndarray, tmp: np.ndarray) -> np.ndarray:
    """Float elements (32 bits or fewer) widened to float32, exactly (float16: NaN/Inf become >= 65536)."""
    if info.code == DataType.FLOAT:
        return vals
    n = vals.size
    if info.code == DataType.FLOAT16:  # float16 by its bits: sign-extend, move the exponent and mantissa up, rescale
        t = tmp[:n]
        np.copyto(t, bits.view(np.int16), casting="unsafe")  # sign-extended (0.30 ns/element with the shift in place,
        np.left_shift(t, 13, out=t)  # 0.37-0.45 for a shift that widens as it goes; a 65,536-entry table through
        np.bitwise_and(t, _F16_MASK, out=t)  # np.take: 0.93)
        return np.multiply(t.view(np.float32), _F16_SCALE, out=out[:n])
    np.copyto(out[:n], vals, casting="unsafe")
    return out[:n]


def _sound(s: float, x: np.ndarray) -> bool:
    """Whether a float32 sum of the squares of ``x`` kept float32's precision: finite (no NaN/Inf met, nothing
    overflowed) and at least n·2^-100, so what underflow dropped (under 2^-150 a term) is under 2^-50 of it;
    or 0 with every value 0 (a zero-initialised tensor: looked at only then)."""
    return x.size * _TINY <= s < math.inf or (s == 0 and not np.any(x))


def _float_fast(xa: np.ndarray, xb: np.ndarray, equal: bool, f16: bool, st: _Sums) -> bool:
    """Metrics of one slice in float32 work arrays; False (nothing counted) when it needs float64.

    Σb² and Σab come from Σa², Σa(b − a) and Σ(b − a)² (three dot products instead of five);
    where that would cancel (b much smaller than a, or cosine under 1/2) the slice goes to
    float64 instead. Whether float32 was enough is read off the sums (a NaN/Inf, an overflow or
    an underflow shows there: no pass over the values for it); float16's NaN/Inf, which the bit
    move makes finite (>= 65536), show as squares of at least 2^32 (float16's squares and
    differences never leave float32's range). ``max_rel``: see :func:`_max_rel`.
    """
    n = xa.size
    f = _scratch.f
    if equal:
        s = _dot(xa, xa)
        if not (_f16_finite(xa, s, 0.0) if f16 else _sound(s, xa)):
            return False
        st.aa += s
        st.bb += s
        st.ab += s
        st.finite += n
        return True
    d = np.subtract(xb, xa, out=f[3][:n])
    aa, ad, dd = _dot(xa, xa), _dot(xa, d), _dot(d, d)
    if not (_f16_finite(xa, aa, dd, xb) if f16 else _sound(aa, xa) and _sound(dd, d) and math.isfinite(ad)):
        return False
    bb, ab = aa + 2 * ad + dd, aa + ad
    if bb < aa / 2 or ab < math.sqrt(max(aa * bb, 0.0)) / 2:
        return False
    if max(aa, bb) > _F32_SUM_SAFE:  # a + b may overflow float32 in max_rel's (b − a)/(b + a): float64
        return False
    rel = _max_rel(d, xa, xb, f[2][:n])
    np.abs(d, out=d)
    st.aa += aa
    st.bb += bb
    st.ab += ab
    st.dd += dd
    st.abs += _dot(d, row=SUM_ROW)
    st.finite += n
    st.max_abs = max(st.max_abs, float(np.maximum.reduce(d)))
    if rel == rel:
        st.max_rel = max(st.max_rel, rel)
    return True


def _f16_finite(xa: np.ndarray, aa: float, dd: float, xb: np.ndarray | None = None) -> bool:
    """Whether float16 values widened by their bits hold no NaN/Inf (those come out as 65536 or more): sure when
    Σa² and (‖a‖ + ‖b − a‖)² (at least Σb²) stay under 2^31; else each side's largest magnitude is looked at."""
    if aa < 2.0 ** 31 and (math.sqrt(aa) + math.sqrt(dd)) ** 2 < 2.0 ** 31:
        return True
    return all(float(np.fmax.reduce(np.abs(x))) <= _F16_FINITE for x in (xa, xb) if x is not None)


def _max_rel(d: np.ndarray, xa: np.ndarray, xb: np.ndarray, work: np.ndarray) -> float:
    """max |b − a| / max(|a|, |b|) over the slice (NaN when every pair is two zeros), from t = (b − a)/(b + a).

    That ratio is 2|t| / (1 + |t|) for every pair, sign flips included (b = -a: t = ±inf, ratio 2), so
    the largest comes from the smallest and the largest t: an addition, a division and two reductions,
    0.37 ns an element (|a|, |b|, their maximum, a division and a reduction: 0.45). Each of the three
    float32 operations is rounded once on exact inputs (b + a is exact where it cancels): t is right to
    ~2e-7. ``work`` is a scratch array of the slice's size.
    """
    t = np.add(xa, xb, out=work)
    np.divide(d, t, out=t)  # 0/0 (both zero) is NaN, which fmax/fmin skip
    big = max(-float(np.fmin.reduce(t)), float(np.fmax.reduce(t)))
    return 2.0 if big == math.inf else 2 * big / (1 + big)


def _float_exact(va: np.ndarray, vb: np.ndarray, st: _Sums) -> None:
    """Metrics of one slice in float64 (complex128), non-finite pairs masked out; no BLAS."""
    work = np.complex128 if np.iscomplexobj(va) else np.float64
    xa, xb = va.astype(work), vb.astype(work)
    fin = np.isfinite(xa) & np.isfinite(xb)
    kept = int(np.count_nonzero(fin))
    if kept < fin.size:
        st.nonfinite += fin.size - kept
        xa, xb = xa[fin], xb[fin]
    st.finite += kept
    if not kept:
        return
    d = xb - xa
    ad = np.abs(d)
    if work is np.complex128:
        ra, rb = xa.view(np.float64), xb.view(np.float64)  # (re, im) pairs
        rd = d.view(np.float64)
    else:
        ra, rb, rd = xa, xb, d
    st.aa += float(np.add.reduce(ra * ra))
    st.bb += float(np.add.reduce(rb * rb))
    st.ab += float(np.add.reduce(ra * rb))
    st.dd += float(np.add.reduce(rd * rd))
    st.abs += float(np.add.reduce(ad))
    st.max_abs = max(st.max_abs, float(ad.max()))
    mag = np.maximum(np.abs(xa), np.abs(xb))
    with np.errstate(invalid="ignore"):
        rel = np.fmax.reduce(ad / mag)  # 0/0 is NaN, skipped
    if rel == rel:
        st.max_rel = max(st.max_rel, float(rel))


def _int_max_abs(va: np.ndarray, vb: np.ndarray) -> int:
    """Largest |b − a| of integer (or bool) elements, exact for every width."""
    if va.dtype == np.bool_:
        return int(np.any(va != vb))
    if va.dtype.itemsize < 8 or va.dtype.kind not in "iu":
        return int(np.abs(vb.astype(np.int64) - va.astype(np.int64)).max())
    hi, lo = np.maximum(va, vb), np.minimum(va, vb)
    return int((hi.view(np.uint64) - lo.view(np.uint64)).max())  # the true difference, wrapping never needed


def _slice(ra: np.ndarray, rb: np.ndarray, elem0: int, n: int, info: DType, st: _Sums, changed: bool) -> None:
    """Element pass over ``n`` elements starting at element ``elem0`` (``ra``, ``rb``: their bytes).

    ``changed``: the tensor is known to differ, so equal slices are summed too (‖a‖ needs them).
    """
    ba, va = _bit_view(ra, info, n)
    bb, vb = _bit_view(rb, info, n)
    # into a kept array: a fresh 256 KiB one per slice is an mmap, page faults and an munmap each time
    ne = np.any(ba != bb, axis=1) if ba.ndim == 2 else np.not_equal(ba, bb, out=_scratch.ne[:n])
    cnt = int(np.count_nonzero(ne))
    if cnt:
        st.differing += cnt
        if st.first is None:
            i = int(ne.argmax())
            st.first = elem0 + i
            st.a_first = _element_text(va[i : i + 1], info)
            st.b_first = _element_text(vb[i : i + 1], info)
    elif not changed:
        return
    if not info.is_float:
        if cnt:
            st.max_abs = max(st.max_abs, _int_max_abs(va, vb))
        return
    if info.bits <= 32 and not np.iscomplexobj(va):
        f = _scratch.f
        xa = _as_f32(va, ba, info, f[0], _scratch.i)
        xb = xa if not cnt else _as_f32(vb, bb, info, f[1], _scratch.i)
        if _float_fast(xa, xb, not cnt, info.code == DataType.FLOAT16, st):
            return
    _float_exact(va, vb, st)


def _kernel_kind(info: DType) -> int | None:
    """The compiled kernel's element kind for ``info`` (``None``: the numpy passes)."""
    if KERNELS is None or info.bits < 8 or info.is_complex:
        return None
    return kind(np.dtype(info.numpy))


def _kernel_elements(ra: np.ndarray, rb: np.ndarray, elem0: int, info: DType, k: int, st: _Sums) -> None:
    """:func:`_slice` over whole elements ``ra``/``rb`` (starting at element ``elem0``) by the compiled kernel:
    the same figures, summed in float64 (the numpy passes sum float32 rows of 256 in float64)."""
    differing, first, nonfinite, finite, aa, bb, ab, dd, sabs, max_abs, max_rel = KERNELS.diff(ra, rb, k)
    if differing:
        st.differing += differing
        if st.first is None:
            va, vb = ra.view(info.numpy), rb.view(info.numpy)
            st.first = elem0 + first
            st.a_first = _element_text(va[first : first + 1], info)
            st.b_first = _element_text(vb[first : first + 1], info)
    if not info.is_float:
        if differing:
            st.max_abs = max(st.max_abs, max_abs)
        return
    st.nonfinite += nonfinite
    st.finite += finite
    st.aa += aa
    st.bb += bb
    st.ab += ab
    st.dd += dd
    st.abs += sabs
    st.max_abs = max(st.max_abs, max_abs)
    if max_rel == max_rel:
        st.max_rel = max(st.max_rel, max_rel)


# ---------------------------------------------------------------------------- byte ranges


def _elements(a: Tensor, b: Tensor, ra: np.ndarray, rb: np.ndarray, start: int, end: int, info: DType | None,
              st: _Sums, changed: bool) -> None:
    """Element passes over bytes ``[start, end)`` (chunk-aligned), :data:`SLICE` elements at a time."""
    if info is None:  # unknown dtype: bytes only
        st.differing += int(np.count_nonzero(ra[start:end] != rb[start:end]))
        return
    bits = info.bits
    e0, e_end = start * 8 // bits, min(end * 8 // bits, a.count)
    k = _kernel_kind(info)
    if k is not None:  # the compiled pass: each byte read once, float64 sums, the GIL released
        _kernel_elements(ra[start : e_end * bits // 8], rb[start : e_end * bits // 8], e0, info, k, st)
        return
    for e in range(e0, e_end, SLICE):
        n = min(SLICE, e_end - e)
        lo, hi = e * bits // 8, (e * bits + n * bits + 7) // 8
        _slice(ra[lo:hi], rb[lo:hi], e, n, info, st, changed)


_PROBE = 64 << 10
"""Bytes compared first in a stretch: when they differ (a fine-tune), no uint64 pass over the whole chunk."""


def _stretch(a: Tensor, b: Tensor, start: int, end: int, cancel: threading.Event | None) -> _Sums:
    """Compare bytes ``[start, end)`` of a tensor pair (a multiple of :data:`CHUNK` from the start); the
    caller checks the files before and after (one ``stat`` per run of small tensors, not two per tensor)."""
    info = DTYPES.get(a.dtype)
    ra, rb = a.raw(), b.raw()
    st = _Sums()
    eq = np.empty(min(CHUNK, max(end - start, 0)) // 8, dtype=np.bool_)
    with np.errstate(all="ignore"):
        for c0 in range(start, end, CHUNK):
            if cancel is not None and cancel.is_set():
                raise DiffCancelled()
            if c0 != start:
                check_files(((a, b),))
            c1 = min(c0 + CHUNK, end)
            ca, cb = ra[c0:c1], rb[c0:c1]
            size = c1 - c0
            if st.differing:  # known to differ: the element pass sees equal slices itself
                same = False
            elif c0 == start and size > _PROBE and not np.array_equal(ca[:_PROBE].view(np.uint64), cb[:_PROBE].view(np.uint64)):
                same = False
            elif KERNELS is not None:  # memcmp, the GIL released
                same = KERNELS.equal(ca, cb)
            elif size % 8 == 0:
                same = bool(np.equal(ca.view(np.uint64), cb.view(np.uint64), out=eq[: size // 8]).all())
            else:
                same = bool(np.array_equal(ca, cb))
            if same:
                st.unsummed.append((c0, c1))
            else:
                _elements(a, b, ra, rb, c0, c1, info, st, changed=True)
            release(a, c0, c1)
            release(b, c0, c1)
            st.done += size
    return st


def _finish(a: Tensor, b: Tensor, st: _Sums, cancel: threading.Event | None) -> DataDelta | None:
    """The delta of a tensor pair from its merged stretches (summing the equal ranges left unsummed)."""
    if not st.differing:
        return None
    info = DTYPES.get(a.dtype)
    if info is not None and info.is_float and st.unsummed:
        ra, rb = a.raw(), b.raw()
        with np.errstate(all="ignore"):
            for c0, c1 in st.unsummed:
                if cancel is not None and cancel.is_set():
                    raise DiffCancelled()
                _elements(a, b, ra, rb, c0, c1, info, st, changed=True)
                release(a, c0, c1)
        flush()
    return DataDelta(a.count, st.differing, st.first or 0, st.a_first, st.b_first, bool(info and info.is_float),
                     st.max_abs, st.max_rel, st.nonfinite, st.finite, st.aa, st.bb, st.ab, st.dd, st.abs)


def compare_data(a: Tensor, b: Tensor, cancel: threading.Event | None = None) -> DataDelta | None:
    """Compare the data of two tensors of one (non-string) dtype and shape; ``None`` when equal."""
    check_files(((a, b),))
    st = _stretch(a, b, 0, min(a.length, b.length), cancel)
    flush()
    check_files(((a, b),))  # a file changed while it was read: its pages may have read as zeros
    return _finish(a, b, st, cancel)


def _units(pairs: Sequence[tuple[Tensor, Tensor]]) -> list[list[tuple[int, int, int]]]:
    """The units of work of :func:`compare_tensors`, largest first; each a list of (pair, start, end) stretches.

    A tensor over :data:`SEGMENT` bytes is cut into stretches of that size, one unit each; a tensor
    over :data:`GROUP` bytes is one unit; smaller ones are grouped, in order, up to :data:`GROUP`. The
    stretches (and so the sums) depend on :data:`SEGMENT` only. Largest first, so the last units
    are small ones and the threads finish close together (with units in file order a 48 MiB one
    could come last and leave the other thread idle for its ~0.1 s).
    """
    units: list[tuple[int, list[tuple[int, int, int]]]] = []  # (bytes, stretches)
    cur: list[tuple[int, int, int]] = []
    cur_bytes = 0
    for i, (a, b) in enumerate(pairs):
        n = min(a.length, b.length)
        if n > min(GROUP, SEGMENT):
            units.extend((min(SEGMENT, n - s), [(i, s, min(s + SEGMENT, n))]) for s in range(0, n, SEGMENT))
            continue
        cur.append((i, 0, n))
        cur_bytes += n
        if cur_bytes >= GROUP:
            units.append((cur_bytes, cur))
            cur, cur_bytes = [], 0
    if cur:
        units.append((cur_bytes, cur))
    units.sort(key=lambda u: -u[0])  # stable: file order among equal sizes
    return [u for _, u in units]


def compare_tensors(
    pairs: Sequence[tuple[Tensor, Tensor]],
    *,
    threads: int = THREADS,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    on_done: Callable[[int, DataDelta | None], None] | None = None,
) -> list[DataDelta | None]:
    """Compare the data of every pair (same dtype and length each), ``threads`` at a time.

    ``on_done(i, delta)`` runs in the calling thread as each pair completes (not in order);
    ``progress(bytes_done, bytes_total)`` after each unit of work. A pair whose bytes cannot be
    compared (see :func:`.diff_skip.check_sizes`) raises ``FormatError`` before anything is done.
    """
    total = check_sizes(pairs)
    results: list[DataDelta | None] = [None] * len(pairs)
    units = _units(pairs)
    left = [0] * len(pairs)
    for unit in units:
        for i, _, _ in unit:
            left[i] += 1
    parts: list[list[tuple[int, _Sums]]] = [[] for _ in pairs]  # each pair's stretches as they complete
    stop = threading.Event()  # the caller's cancel, or a failure: the workers stop between chunks

    def run(unit: list[tuple[int, int, int]]) -> list[tuple[int, int, _Sums]]:
        out = []
        mine = [pairs[i] for i, _, _ in unit]
        check_files(mine)
        try:
            for i, s, e in unit:
                if stop.is_set():
                    raise DiffCancelled()
                a, b = pairs[i]
                out.append((i, s, _stretch(a, b, s, e, stop)))
        finally:
            flush()
        check_files(mine)  # a file changed while it was read: its pages may have read as zeros
        return out

    done = 0
    pool = ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="omv-diff")
    try:
        pending = {pool.submit(run, u) for u in units}
        while pending:
            finished, pending = wait(pending, timeout=0.05, return_when=FIRST_COMPLETED)
            if cancel is not None and cancel.is_set():
                raise DiffCancelled()
            for fut in finished:
                for i, start, st in fut.result():
                    parts[i].append((start, st))
                    done += st.done
                    left[i] -= 1
                    if left[i] == 0:
                        # in byte order, not the threads' finishing order (float64 sums: other last bits)
                        merged = _Sums()
                        for _, part in sorted(parts[i], key=lambda x: x[0]):
                            merged.merge(part)
                        parts[i] = []
                        a, b = pairs[i]
                        results[i] = _finish(a, b, merged, stop)
                        if on_done is not None:
                            on_done(i, results[i])
            if finished and progress is not None:
                progress(done, total)
    finally:
        stop.set()
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def _norm(t: Tensor, cancel: threading.Event | None) -> float:
    info = DTYPES.get(t.dtype)
    if info is None or not info.is_float or t.length == 0:
        return 0.0
    raw = t.raw()
    st = _Sums()
    with np.errstate(all="ignore"):
        for c0 in range(0, t.length, CHUNK):
            if cancel is not None and cancel.is_set():
                raise DiffCancelled()
            c1 = min(c0 + CHUNK, t.length)
            _elements(t, t, raw, raw, c0, c1, info, st, changed=True)
            release(t, c0, c1)
    flush()
    return st.aa


def tensor_norms(tensors: Sequence[Tensor], *, threads: int = THREADS,
                 cancel: threading.Event | None = None) -> list[float]:
    """Σx² over the finite values of each float tensor (0 for other types), ``threads`` at a time."""
    if not tensors:
        return []
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="omv-diff") as pool:
        return list(pool.map(lambda t: _norm(t, cancel), tensors))
