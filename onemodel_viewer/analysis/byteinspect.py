"""A data inspector (after ImHex's): the bytes at an offset read as u8..u64, i8..i64, f16, bf16, f32,
f64 (little endian), and the element of the tensor owning the byte with its decoded value. No UI.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from ..format.schema import Tensor
from .values import Cell, format_element, read_elements, unravel

__all__ = ["READINGS", "Reading", "ElementAt", "readings", "element_at"]

READINGS = (
    ("u8", "<B", 1), ("i8", "<b", 1), ("u16", "<H", 2), ("i16", "<h", 2), ("u32", "<I", 4), ("i32", "<i", 4),
    ("u64", "<Q", 8), ("i64", "<q", 8), ("f16", "<e", 2), ("bf16", None, 2), ("f32", "<f", 4), ("f64", "<d", 8),
)
"""(name, struct format, bytes); bf16 has no struct format: the upper half of a float32."""


@dataclass(frozen=True, slots=True)
class Reading:
    name: str
    text: str
    """The value; ``-`` when fewer bytes remain than the type needs."""
    kind: str = "num"


def _float_text(v: float) -> tuple[str, str]:
    if v != v:
        return "nan", "nan"
    if v in (float("inf"), float("-inf")):
        return ("inf" if v > 0 else "-inf"), "inf"
    return repr(v), "num"


def readings(data: bytes) -> list[Reading]:
    """Every reading of ``data`` (the bytes from the cursor on; up to 8 are used)."""
    out = []
    for name, fmt, size in READINGS:
        if len(data) < size:
            out.append(Reading(name, "-", "none"))
            continue
        chunk = bytes(data[:size])
        if name == "bf16":
            v = struct.unpack("<f", b"\0\0" + chunk)[0]
            text, kind = _float_text(v)
            # bf16 has 8 significant bits: show the short form its own type prints
            if kind == "num":
                import ml_dtypes

                text = str(np.frombuffer(chunk, dtype=ml_dtypes.bfloat16)[0])
        elif name.startswith("f"):
            v = struct.unpack(fmt, chunk)[0]
            text, kind = _float_text(v)
            if kind == "num" and name == "f16":
                text = str(np.frombuffer(chunk, dtype="<f2")[0])
            elif kind == "num" and name == "f32":
                text = str(np.frombuffer(chunk, dtype="<f4")[0])
        else:
            text, kind = str(struct.unpack(fmt, chunk)[0]), "num"
        out.append(Reading(name, text, kind))
    return out


@dataclass(frozen=True, slots=True)
class ElementAt:
    """The element(s) of a tensor stored in the byte at an offset."""

    tensor: Tensor
    byte: int
    """Offset of the byte inside the tensor's bytes."""
    first: int
    """Flat index of the first element using the byte (several share a byte for sub-byte types)."""
    last: int
    index: tuple[int, ...]
    """Multi-index of ``first``."""
    cells: tuple[Cell, ...]
    """Decoded values of elements ``first..last``."""
    byte_in_element: int
    """For types of 8 bits and more: which byte of the element this is (0 = its first)."""
    element_bytes: int
    """Bytes per element (0 for sub-byte types)."""


def element_at(t: Tensor, file_offset: int) -> ElementAt | None:
    """The element of ``t`` whose bytes hold ``file_offset`` (None outside them, for strings, an unknown dtype).

    Reads only that element's bytes. Raises the reader's FormatError when they cannot be read.
    """
    if t.is_string or t.file_offset is None or t.info is None:
        return None
    rel = file_offset - t.file_offset
    if not 0 <= rel < t.length:
        return None
    info = t.info
    n = t.count
    bits = info.bits
    first = rel * 8 // bits
    last = min(n - 1, ((rel + 1) * 8 - 1) // bits)
    if first >= n:
        return None
    vals = read_elements(t, list(range(first, last + 1)))
    cells = tuple(format_element(v, info) for v in vals)
    per = bits // 8 if bits >= 8 else 0
    return ElementAt(t, rel, first, last, unravel(t.dims, first), cells, rel % per if per else 0, per)
