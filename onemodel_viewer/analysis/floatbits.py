"""A float32 bit pattern as text: the one formatter behind the diff's JSON and the viewer's detail pane.

No UI here: the viewer styles the two parts :func:`float32_text` returns (see
``tui/formatters.float_bits_text``).
"""

from __future__ import annotations

import struct

__all__ = ["float32_text", "format_f32"]


def float32_text(bits: int) -> tuple[str, str]:
    """``(value, note)`` for a float32 bit pattern.

    ``value`` is the shortest text that reads back as the same float32 (``0.1``, ``1e-45``,
    ``-0.0``, ``inf``, ``nan``, ``-nan``); ``note`` names the bits when the value alone hides
    them, else it is empty: NaN (``0x7fc00001 quiet payload 0x1``; ``signalling``), ``-0.0``
    and infinities (``0x80000000``), subnormals (``subnormal 0x00000001``).
    """
    bits &= 0xFFFFFFFF
    exp, mant, neg = (bits >> 23) & 0xFF, bits & 0x7FFFFF, bool(bits >> 31)
    if exp == 0xFF and mant:
        quiet = bool(mant >> 22)
        return ("-nan" if neg else "nan",
                f"0x{bits:08x} {'quiet' if quiet else 'signalling'} payload 0x{mant & 0x3FFFFF:x}")
    if exp == 0xFF:
        return ("-inf" if neg else "inf", f"0x{bits:08x}")
    if exp == 0 and not mant:
        return ("-0.0", f"0x{bits:08x}") if neg else ("0.0", "")
    value = _shortest(bits)
    return (value, f"subnormal 0x{bits:08x}") if exp == 0 else (value, "")


def format_f32(bits: int) -> str:
    """:func:`float32_text` as one JSON string: the value, with the bits only for NaN (``nan (0x7fc00001 quiet
    payload 0x1)``), where the value alone would hide a difference; ``-0.0`` and ``inf`` say enough."""
    value, note = float32_text(bits)
    return f"{value} ({note})" if note and "nan" in value else value


def _shortest(bits: int) -> str:
    """The shortest decimal that rounds to this (finite) float32, written as ``repr`` writes a float."""
    x = struct.unpack("<f", struct.pack("<I", bits))[0]
    for digits in range(1, 10):  # 9 significant digits always identify a float32
        text = f"{x:.{digits}g}"
        try:
            if struct.unpack("<f", struct.pack("<f", float(text)))[0] == x:
                break
        except OverflowError:  # rounded past float32's largest value (3e+38 for 3.4028235e+38)
            continue
    return repr(float(text))  # repr's look for those digits: 100000.0, 1e-45, 3.4028235e+38
