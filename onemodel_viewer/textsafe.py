"""Make file-derived text safe to show on a terminal: one helper for the CLI, the viewer and the diff.

Pure and dependency-free (no rich). Every character that is not printable -- C0/C1 controls,
ESC, DEL, bidi overrides and isolates, zero-width characters, line/paragraph separators, lone
surrogates, private-use and unassigned code points, non-ASCII spaces -- becomes a visible escape:
``\\x1b``, ``\\u202e``, ``\\U000e0001``; ``\\n``, ``\\r`` and ``\\t`` get their short forms.
Printable text (any script, emoji) is left alone. Long strings are cut with a marker.

The result is plain text: give it to ``rich.text.Text(...)`` (never to markup).
"""

from __future__ import annotations

DEFAULT_LIMIT = 200
"""Characters of the original string kept before the truncation marker."""

_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(ch: str) -> str:
    short = _SHORT.get(ch)
    if short is not None:
        return short
    o = ord(ch)
    if o < 0x100:
        return f"\\x{o:02x}"
    if o < 0x10000:
        return f"\\u{o:04x}"
    return f"\\U{o:08x}"


def visible(s: str, limit: int | None = DEFAULT_LIMIT) -> str:
    """``s`` with every non-printable character escaped, cut after ``limit`` characters.

    ``limit=None`` keeps everything. The cut is marked ``…(+N chars)``.
    """
    extra = 0
    if limit is not None and len(s) > limit:
        extra = len(s) - limit
        s = s[:limit]
    if not s.isprintable():
        s = "".join(ch if ch.isprintable() else _escape(ch) for ch in s)
    if extra:
        s += f"…(+{extra} chars)"
    return s


def visible_bytes(b: bytes, limit: int | None = DEFAULT_LIMIT) -> str:
    """Bytes (a string tensor element, a STRING attribute) as visible text.

    Valid UTF-8 is shown as text; undecodable bytes appear as ``\\xNN``.
    """
    extra = 0
    if limit is not None and len(b) > limit * 4:
        extra = len(b) - limit * 4
        b = b[: limit * 4]
    text = b.decode("utf-8", "backslashreplace")
    out = visible(text, limit)
    if extra:
        out += f"…(+{extra} bytes)"
    return out


def is_safe(s: str) -> bool:
    """True when ``s`` would be shown unchanged (no escapes needed)."""
    return s.isprintable()
