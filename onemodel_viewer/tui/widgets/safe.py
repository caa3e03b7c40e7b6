"""Terminal-safe text for anything that came from a file.

Every string read from a model (names, ops, docs, metadata, attribute strings,
problem messages quoting the file) is shown through :func:`safe_text`: it becomes
a :class:`rich.text.Text` (never parsed as markup) whose control, escape, bidi and
zero-width characters are replaced by visible escapes, truncated when very long.

``visible`` is :func:`onemodel_viewer.textsafe.visible` (shared with the CLI), uncut.
"""

from __future__ import annotations

import re

from rich.text import Text

from ...textsafe import visible as _shared_visible

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


def _is_number_style(style) -> bool:
    """Counts, sizes and types are drawn dim or cyan."""
    s = str(style)
    return "dim" in s or "cyan" in s


def fit_text(text: Text, width: int) -> Text:
    """``text`` in at most ``width`` cells: names are shortened (with ``…``), numbers are not.

    A label is runs of styles (see :mod:`.formatters`): names plain or bold, counts, sizes and
    types dim or cyan (a long dim word without digits, such as a producer name, is a name too).
    The longest name is cut first, down to one character and ``…`` (the label's first word, a
    kind or an op, last); when that is not enough, whole pieces go from the end, replaced by ``…``.
    """
    if width <= 0:
        return Text("")
    if text.cell_len <= width:
        return text
    plain = text.plain
    bounds = sorted({0, len(plain), *(s.start for s in text.spans), *(s.end for s in text.spans)})
    cuts = set(bounds)
    for a, b in zip(bounds, bounds[1:]):  # a run's outer spaces apart from its words
        run = plain[a:b]
        cuts.add(a + len(run) - len(run.lstrip(" ")))
        cuts.add(b - (len(run) - len(run.rstrip(" "))))
    cuts = sorted(c for c in cuts if 0 <= c <= len(plain))
    pieces: list[list] = []  # [text, may be cut, is the first word, drawn dim or cyan]
    first = True
    for a, b in zip(cuts, cuts[1:]):
        if a >= b:
            continue
        word = plain[a:b]
        styles = [s.style for s in text.spans if s.start <= a and s.end >= b]
        numeric = any(_is_number_style(st) for st in styles)
        alpha = any(ch.isalpha() or ch == "_" for ch in word)
        name = alpha and (not numeric or (len(word) >= 8 and not any(ch.isdigit() for ch in word)))
        pieces.append([text[a:b], name, first and alpha, numeric])
        if alpha:
            first = False
    others = any(p[1] and not p[2] for p in pieces)

    def total() -> int:
        return sum(p[0].cell_len for p in pieces)

    def shortest(floor: int) -> int:  # the length with every name cut to ``floor``
        return sum(min(p[0].cell_len, floor) if p[1] and (others is False or not p[2]) else p[0].cell_len
                   for p in pieces)

    # whole pieces go from the end (never the first word), marked by one ``…``, while the names
    # cannot give enough room keeping 6 characters each; then the names are cut to fit
    dropped = False
    while len(pieces) > 1 and shortest(6) + 2 * dropped > width and not pieces[-1][2] and (pieces[-1][3] or not pieces[-1][1]):
        pieces.pop()
        dropped = True
        while len(pieces) > 1 and not pieces[-1][0].plain.strip():
            pieces.pop()
    room = width - 2 * dropped

    def cut_names(first_word: bool) -> None:
        while total() > room:
            names = [p for p in pieces if p[1] and p[2] == first_word and p[0].cell_len > 2]
            if not names:
                return
            p = max(names, key=lambda p: p[0].cell_len)
            piece = p[0].copy()
            piece.truncate(max(2, piece.cell_len - (total() - room)), overflow="ellipsis")
            p[0], p[1] = piece, False  # each name is cut once: then the next one

    cut_names(False)
    cut_names(True)
    out = Text(style=text.style, end=text.end, no_wrap=True)
    for piece, *_ in pieces:
        out.append_text(piece)
    if dropped:
        out.append(" …" if out.cell_len + 2 <= width else "…", style="dim")
    if out.cell_len > width:
        out.truncate(width, overflow="ellipsis")
    return out
