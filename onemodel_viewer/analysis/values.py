"""Tensor values for people: elements read by index (only the bytes they live in), formatted per
dtype (float8/float6/float4, int4/int2, bfloat16 included; NaN and ±Inf told apart), and the
2-D slice a values grid shows of a tensor of any rank. No UI here.

:func:`read_elements` never decodes the whole tensor: for 8-bit and wider types it indexes the
zero-copy view (only the pages holding those elements are read); sub-byte types are unpacked
from the bytes holding the asked elements.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..format.dtypes import DType
from ..format.schema import Tensor
from ..textsafe import visible_bytes

__all__ = ["Cell", "SliceSpec", "format_element", "read_elements", "parse_index", "flat_index", "unravel"]


@dataclass(frozen=True, slots=True)
class Cell:
    text: str
    kind: str
    """``num``, ``nan``, ``inf`` (either sign), ``zero``, ``str``, ``bool``."""


def read_elements(t: Tensor, flat: np.ndarray | list[int]) -> np.ndarray:
    """Elements at flat indices ``flat`` (C order) of a numeric tensor, in their numpy/ml_dtypes type.

    Raises the reader's :class:`FormatError` when the bytes cannot be read, ``IndexError`` for an
    index outside the tensor.
    """
    idx = np.asarray(flat, dtype=np.int64).reshape(-1)
    n = t.count
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError("element index out of range")
    info = t.info
    if info is None or t.is_string:
        raise ValueError("not a numeric tensor")
    if info.bits >= 8:
        vals = t.values().reshape(-1)
        return np.asarray(vals[idx])
    raw = t.raw()
    bits = info.bits
    bit0 = idx * bits
    b0 = raw[bit0 // 8].astype(np.uint16)
    nxt = np.minimum(bit0 // 8 + 1, max(0, raw.size - 1))
    b1 = raw[nxt].astype(np.uint16)
    codes = (((b0 | (b1 << 8)) >> (bit0 % 8)) & ((1 << bits) - 1)).astype(np.uint8)
    return codes.view(info.numpy)


def read_strings(t: Tensor, flat: list[int]) -> list[bytes]:
    s = t.strings or ()
    return [s[i] if 0 <= i < len(s) else b"" for i in flat]


def format_element(x, info: DType | None) -> Cell:
    """One element as text: the shortest form of its own type (``0.1`` for float16 0.1), ``nan``,
    ``inf``/``-inf``, ``true``/``false``; complex as ``re+imj``."""
    if isinstance(x, (bytes, bytearray)):
        return Cell('"' + visible_bytes(bytes(x), limit=200) + '"', "str")
    if info is not None and info.name == "bool":
        return Cell("true" if bool(x) else "false", "bool")
    if info is not None and info.name.startswith("complex"):
        c = complex(x)
        kind = "nan" if (math.isnan(c.real) or math.isnan(c.imag)) else "inf" if (
            math.isinf(c.real) or math.isinf(c.imag)) else "zero" if c == 0 else "num"
        return Cell(f"{_num(np.real(x))}{'+' if not str(_num(np.imag(x))).startswith('-') else ''}{_num(np.imag(x))}j", kind)
    if info is not None and info.is_float:
        f = float(np.asarray(x).astype(np.float64))
        if math.isnan(f):
            return Cell("nan", "nan")
        if math.isinf(f):
            return Cell("inf" if f > 0 else "-inf", "inf")
        return Cell(_num(x), "zero" if f == 0 else "num")
    v = int(np.asarray(x).astype(np.int64)) if info is None or info.name != "uint64" else int(np.asarray(x))
    return Cell(str(v), "zero" if v == 0 else "num")


def _num(x) -> str:
    s = str(x)
    if s.endswith(".0") and "e" not in s:
        s = s[:-2]
    return s


def format_elements(t: Tensor, flat: list[int]) -> list[Cell]:
    """Cells for the flat indices ``flat`` of ``t`` (strings escaped)."""
    if t.is_string:
        return [format_element(b, None) for b in read_strings(t, flat)]
    vals = read_elements(t, flat)
    info = t.info
    return [format_element(v, info) for v in vals]


def flat_index(dims: tuple[int, ...], index: tuple[int, ...]) -> int:
    f = 0
    for d, i in zip(dims, index):
        f = f * d + i
    return f


def unravel(dims: tuple[int, ...], flat: int) -> tuple[int, ...]:
    out = []
    for d in reversed(dims):
        out.append(flat % d if d else 0)
        flat = flat // d if d else 0
    return tuple(reversed(out))


def parse_index(text: str, dims: tuple[int, ...]) -> tuple[int, ...] | None:
    """``3,4`` / ``[3, 4]`` (one index per axis, negative from the end) or ``#17`` / ``17`` for a flat
    index (a single number on a tensor of rank > 1 is flat). None when it names no element."""
    s = text.strip().strip("[]()").replace(" ", "")
    if not s:
        return None
    n = math.prod(dims)
    flat = s.startswith("#")
    s = s.lstrip("#")
    try:
        parts = [int(p, 0) for p in s.split(",") if p != ""]
    except ValueError:
        return None
    if not parts:
        return None
    if flat or (len(parts) == 1 and len(dims) != 1):
        k = parts[0]
        if k < 0:
            k += n
        if not 0 <= k < n:
            return None
        return unravel(dims, k) if dims else ()
    if len(parts) != len(dims):
        return None
    out = []
    for p, d in zip(parts, dims):
        if p < 0:
            p += d
        if not 0 <= p < d:
            return None
        out.append(p)
    return tuple(out)


@dataclass(frozen=True, slots=True)
class SliceSpec:
    """Which 2-D slice of a tensor the grid shows.

    ``row_axis`` and ``col_axis`` are the shown axes (rank 0: neither; rank 1: the column axis
    only, the elements wrapped into rows of ``wrap``); ``fixed`` holds an index for every axis
    (those of the shown axes are ignored).
    """

    dims: tuple[int, ...]
    row_axis: int | None
    col_axis: int | None
    fixed: tuple[int, ...]
    wrap: int = 8

    @classmethod
    def default(cls, dims: tuple[int, ...], wrap: int = 8) -> "SliceSpec":
        r = len(dims)
        if r == 0:
            return cls(dims, None, None, (), wrap)
        if r == 1:
            return cls(dims, None, 0, (0,), wrap)
        return cls(dims, r - 2, r - 1, (0,) * r, wrap)

    @property
    def rows(self) -> int:
        if self.col_axis is None:
            return 1
        if self.row_axis is None:
            return max(1, -(-self.dims[self.col_axis] // self.wrap)) if self.dims[self.col_axis] else 0
        return self.dims[self.row_axis]

    @property
    def cols(self) -> int:
        if self.col_axis is None:
            return 1
        if self.row_axis is None:
            return min(self.wrap, self.dims[self.col_axis])
        return self.dims[self.col_axis]

    def index(self, r: int, c: int) -> tuple[int, ...] | None:
        """The element index of cell (r, c), or None past the end (the wrapped 1-D last row)."""
        if self.col_axis is None:
            return () if (r, c) == (0, 0) and math.prod(self.dims) == 1 else None
        idx = list(self.fixed)
        if self.row_axis is None:
            k = r * self.wrap + c
            if k >= self.dims[self.col_axis]:
                return None
            idx[self.col_axis] = k
        else:
            idx[self.row_axis] = r
            idx[self.col_axis] = c
        return tuple(idx)

    def cell_of(self, index: tuple[int, ...]) -> tuple["SliceSpec", int, int]:
        """The slice holding ``index`` (fixed axes moved to it) and the cell (r, c) there."""
        fixed = tuple(index)
        spec = SliceSpec(self.dims, self.row_axis, self.col_axis, fixed, self.wrap)
        if self.col_axis is None:
            return spec, 0, 0
        if self.row_axis is None:
            k = index[self.col_axis]
            return spec, k // self.wrap, k % self.wrap
        return spec, index[self.row_axis], index[self.col_axis]

    def with_axes(self, row_axis: int, col_axis: int) -> "SliceSpec":
        if row_axis == col_axis or not (0 <= row_axis < len(self.dims) and 0 <= col_axis < len(self.dims)):
            raise ValueError("two different axes of the tensor")
        return SliceSpec(self.dims, row_axis, col_axis, self.fixed, self.wrap)

    def with_fixed(self, axis: int, value: int) -> "SliceSpec":
        if not 0 <= axis < len(self.dims):
            raise ValueError("no such axis")
        d = self.dims[axis]
        value = max(0, min(d - 1, value)) if d else 0
        fixed = list(self.fixed)
        fixed[axis] = value
        return SliceSpec(self.dims, self.row_axis, self.col_axis, tuple(fixed), self.wrap)

    def describe(self) -> str:
        """``[2, :, :]``-style text of the slice (rows axis, columns axis)."""
        if not self.dims:
            return "scalar"
        parts = []
        for a, d in enumerate(self.dims):
            if a == self.row_axis:
                parts.append(":r")
            elif a == self.col_axis:
                parts.append(":" if self.row_axis is not None else ":wrapped")
            else:
                parts.append(str(self.fixed[a]))
        return "[" + ", ".join(parts) + "]"
