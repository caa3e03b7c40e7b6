"""What :func:`~onemodel_viewer.analysis.stats.compute.compute_stats` returns, and how one element is formatted."""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from ...format.dtypes import DTYPES, STRING, DataType

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

BINS = 32
"""Histogram bins."""
FIRST = 16
"""How many leading values (or strings) are kept formatted."""


@dataclass(frozen=True, slots=True)
class TensorStats:
    """What :func:`compute_stats` found in one tensor."""

    count: int
    """Elements."""
    dtype: int
    """dtype code."""
    min: float | None
    """Smallest finite value (``int`` for integer/bool dtypes, ``|z|`` for complex); None when none."""
    max: float | None
    """Largest finite value; None when none."""
    mean: float | None
    """Mean of the finite values; None when none."""
    std: float | None
    """Population standard deviation of the finite values; None when none."""
    nan: int
    posinf: int
    neginf: int
    zeros: int
    """Elements equal to zero (``-0.0`` included)."""
    finite: int
    """Elements that are neither NaN nor infinite (all of them for integer dtypes)."""
    histogram: tuple[int, ...]
    """32 bins over ``hist_range``; ``()`` when there is no finite value."""
    hist_range: tuple[float, float] | None
    first: tuple[str, ...]
    """The first up to 16 values, each formatted by :func:`format_value`."""
    min_len: int | None = None
    """String tensors: shortest element, in bytes."""
    max_len: int | None = None
    total_len: int | None = None
    previews: tuple[str, ...] = ()
    """String tensors: the first up to 16 elements decoded as UTF-8 (``backslashreplace``),
    at most 256 bytes each; NOT made terminal-safe (the UI does that)."""
    cancelled: bool = False
    """Never set by :func:`compute_stats` (it raises :class:`Cancelled`); kept for callers
    that want to record an interrupted computation."""
    hist_exact: bool = True
    """False when ``histogram`` counts a sample (see :func:`sample_spans`), not every finite value."""
    hist_count: int | None = None
    """How many values ``histogram`` counted (``sum(histogram)``): ``finite`` when exact, the
    finite values of the sample otherwise; None when there is no histogram. The counts of a
    sample are raw (not scaled to the tensor): draw proportions."""


class Cancelled(Exception):
    """Raised by :func:`compute_stats` when ``cancel`` was set."""


# ---------------------------------------------------------------------------- formatting


def _short_float(v: float, cast: Callable[[float], Any] | None, shortest: Any = None) -> str:
    """Shortest decimal that reads back as the same value of the element type (``shortest``: ``v`` as
    the numpy scalar of :func:`_fewest_digits`, when the caller has it)."""
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    if cast is None:
        return repr(v)
    if v == int(v) and abs(v) < 2**53:
        return repr(v)  # integral: all digits (float8 448 is "448.0", not the shorter "450.0")
    target = cast(v)
    for digits in range(_fewest_digits(v, cast, shortest), 18):
        s = f"{v:.{digits}g}"
        if cast(float(s)) == target:
            return repr(float(s))
    return repr(v)  # pragma: no cover - 17 digits always round-trip


def _fewest_digits(v: float, cast, shortest: Any = None) -> int:
    """A lower bound on the digits :func:`_short_float` needs: those of numpy's shortest repr of the type
    (of ``shortest``, ``v`` as that numpy scalar, when given).

    Saves the tries below it (~4 per float16 weight, each a format and a cast)."""
    if shortest is None:
        scalar = _SCALARS.get(cast)
        if scalar is None:
            return 1
        shortest = scalar(v)
    text = str(shortest).partition("e")[0]
    return max(1, len(text.replace("-", "").replace(".", "").strip("0")))


def _packer(fmt: str) -> Callable[[float], bytes | None]:
    """The bytes of a float rounded to a struct format's type (None when it overflows the type).

    Used for float16 and float32 instead of numpy scalars: a fifth of the time per digit tried
    (the first 16 values of each tensor were ~20% of the statistics of a 288 KiB float16 tensor)."""
    pack = struct.Struct(fmt).pack

    def cast(v: float) -> bytes | None:
        try:
            return pack(v)
        except OverflowError:
            return None

    return cast


_PACKERS = {DataType.FLOAT16: _packer("<e"), DataType.FLOAT: _packer("<f"), DataType.COMPLEX64: _packer("<f")}
_SCALARS: dict = {}
"""numpy scalar type of each packer (filled on first use: numpy is imported lazily)."""


def _scalar_types() -> None:
    import numpy as np

    _SCALARS.update({_PACKERS[DataType.FLOAT16]: np.float16, _PACKERS[DataType.FLOAT]: np.float32,
                     _PACKERS[DataType.COMPLEX64]: np.float32})


def _caster(dtype_code: int) -> Callable[[float], Any] | None:
    info = DTYPES[dtype_code]
    if dtype_code in (DataType.DOUBLE, DataType.COMPLEX128):
        return None
    packer = _PACKERS.get(dtype_code)
    if packer is not None and not _SCALARS:
        _scalar_types()
    return packer if packer is not None else info.numpy.type


def format_floats(x: "np.ndarray", dtype_code: int) -> tuple[str, ...]:
    """``format_value`` of each element of ``x``, an array of a real float dtype ``dtype_code``.

    The lookups are made once, and float16/float32 elements come with their numpy scalars (the
    digit search's lower bound): 16 float16 values in ~33 us instead of ~53."""
    import numpy as np

    cast = _caster(dtype_code)
    with np.errstate(all="ignore"):  # NaN patterns of the float8 types
        vals = x.astype(np.float64).tolist()
    if cast is None or cast not in _SCALARS:
        return tuple(_short_float(v, cast) for v in vals)
    return tuple(_short_float(v, cast, s) for v, s in zip(vals, x))


def format_value(value: Any, dtype_code: int) -> str:
    """One element formatted for its dtype.

    Floats print the shortest decimal that reads back as the same value of their
    type (float16 ``1.5``, float32 ``0.1``), ``nan``, ``inf``, ``-inf``; integers
    in decimal; bool ``true``/``false``; complex ``1.5+2.0j``; strings (``bytes``)
    decoded as UTF-8 with ``backslashreplace`` (not made terminal-safe).
    """
    info = DTYPES.get(dtype_code)
    if dtype_code == STRING:
        if isinstance(value, (bytes, bytearray, memoryview)):
            return bytes(value).decode("utf-8", "backslashreplace")
        return str(value)
    if info is None:
        return str(value)
    if dtype_code == DataType.BOOL:
        return "true" if bool(value) else "false"
    if info.is_complex:
        z = complex(value)
        cast = _caster(dtype_code)
        re, im = _short_float(z.real, cast), _short_float(z.imag, cast)
        sign = "" if im.startswith("-") else "+"
        return f"{re}{sign}{im}j"
    if info.is_float:
        return _short_float(float(value), _caster(dtype_code))
    return str(int(value))

