"""Terminal-safe text for anything that came from a file.

Every string read from a model (names, ops, docs, metadata, attribute strings,
problem messages quoting the file) is shown through :func:`safe_text`: it becomes
a :class:`rich.text.Text` (never parsed as markup) whose control, escape, bidi and
zero-width characters are replaced by visible escapes, truncated when very long.

``visible`` is :func:`onemodel_viewer.textsafe.visible` (shared with the CLI), uncut.
"""

from __future__ import annotations

from rich.text import Text

from ..textsafe import visible as _shared_visible

MAX_NAME = 120
"""Longest string shown in a label before it is cut (with an ellipsis)."""


def visible(s: str) -> str:
    """``s`` with every control/escape/bidi/zero-width character shown as an escape (not cut)."""
    return _shared_visible(s, limit=None)


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
