"""Terminal-safe text for anything that came from a file.

Every string read from a model (names, ops, docs, metadata, attribute strings,
problem messages quoting the file) is shown through :func:`safe_text`: it becomes
a :class:`rich.text.Text` (never parsed as markup) whose control, escape, bidi and
zero-width characters are replaced by visible escapes, truncated when very long.

``visible`` comes from :mod:`onemodel_viewer.textsafe` when the reader helper's
module is present; the local fallback below does the same job.
"""

from __future__ import annotations

import unicodedata

from rich.text import Text

try:  # the project's shared helper, when present
    from ..textsafe import visible as _shared_visible  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the other helper's progress
    _shared_visible = None

MAX_NAME = 120
"""Longest string shown in a label before it is cut (with an ellipsis)."""

_BIDI_AND_INVISIBLE = frozenset(
    [0x061C, 0x200B, 0x200C, 0x200D, 0x200E, 0x200F, 0x2028, 0x2029, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xFEFF]
    + list(range(0x202A, 0x202F))
    + list(range(0x2066, 0x206A))
    + list(range(0xFFF9, 0xFFFC))
)


def _local_visible(s: str) -> str:
    out: list[str] = []
    for ch in s:
        o = ord(ch)
        if o < 0x20 or o == 0x7F or 0x80 <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        elif o in _BIDI_AND_INVISIBLE:
            out.append(f"\\u{o:04x}")
        elif 0xD800 <= o < 0xE000:
            out.append(f"\\u{o:04x}")
        elif unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn") and o > 0x7F:
            out.append(f"\\u{o:04x}" if o <= 0xFFFF else f"\\U{o:08x}")
        else:
            out.append(ch)
    return "".join(out)


def visible(s: str) -> str:
    """``s`` with every control/escape/bidi/zero-width character shown as an escape (not cut)."""
    if _shared_visible is not None:
        return _shared_visible(s, limit=None)
    return _local_visible(s)


def decode_bytes(b: bytes) -> str:
    """Bytes from the file (STRING attributes, string tensor elements) as printable text."""
    return b.decode("utf-8", errors="backslashreplace")


def cut(s: str, limit: int = MAX_NAME) -> str:
    """``s`` cut to ``limit`` characters with an ellipsis."""
    return s if len(s) <= limit else s[: max(1, limit - 1)] + "…"


def safe_text(s: str | bytes, style: str = "", limit: int = MAX_NAME) -> Text:
    """File content as literal, visible, bounded :class:`Text` (never markup)."""
    if isinstance(s, bytes):
        s = decode_bytes(s[: limit * 4 + 4])
    return Text(cut(visible(s[: limit + 1]), limit), style=style, no_wrap=False)


def safe_str(s: str | bytes, limit: int = MAX_NAME) -> str:
    """Plain-string form of :func:`safe_text` (for search matching and plain output)."""
    if isinstance(s, bytes):
        s = decode_bytes(s[: limit * 4 + 4])
    return cut(visible(s[: limit + 1]), limit)


def human_size(n: int) -> str:
    """1536 -> '1.5 KiB' (binary units, one decimal)."""
    if n < 1024:
        return f"{n} B"
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        n /= 1024.0
        if n < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}"
    return f"{n} B"  # pragma: no cover
