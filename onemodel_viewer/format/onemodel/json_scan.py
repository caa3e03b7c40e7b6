"""Bracket-level JSON scanning shared by the manifest parser (the depth problem's offset) and the
:class:`~.manifest_locate.Locator` (skipping containers, background scans), lazily compiled regexes,
and what the manifest parser shares with its duplicate-key detection (:mod:`.manifest_keys`): orjson
imported on first use, the JSON token and whitespace patterns, the chunk size of a bounded read."""

from __future__ import annotations

import re

__all__ = ["CHUNK", "MAX_DEPTH", "TOKEN", "WS_B", "LazyRe", "brackets", "container_end", "lazy_orjson"]

MAX_DEPTH = 1024
"""Deepest JSON nesting accepted (arrays and objects; the top-level object is level 1)."""

CHUNK = 1 << 20
"""Bytes decoded or counted at a time by the manifest's bounded reads (1 MiB)."""


def _orjson_stops_at_max_depth(orjson) -> bool:
    """orjson 3.9.15 and later refuse exactly the 1025th level (3.9.14 had no limit at all)."""
    try:
        orjson.loads(b"[" * MAX_DEPTH + b"]" * MAX_DEPTH)
    except orjson.JSONDecodeError:
        return False
    try:
        orjson.loads(b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1))
    except orjson.JSONDecodeError:
        return True
    return False


_ORJSON = None


def lazy_orjson():
    """The orjson module, imported (and its depth limit checked) on first use: importing it brings
    dataclasses, inspect, uuid and datetime (~8 ms), which a process that parses no manifest
    (``--check`` of an ONNX file, ``--help``) does not pay."""
    global _ORJSON
    if _ORJSON is None:
        import orjson

        if not _orjson_stops_at_max_depth(orjson):  # pragma: no cover - pyproject requires orjson>=3.9.15
            raise ImportError(f"orjson {orjson.__version__} does not stop at {MAX_DEPTH} JSON levels; install orjson>=3.9.15")
        _ORJSON = orjson
    return _ORJSON


class LazyRe:
    """A regex compiled on first use: most of the manifest modules' patterns serve failure paths and
    look-ups, and compiling them all costs ~1 ms of every process's start (``--check``)."""

    __slots__ = ("_args", "match", "search", "finditer", "findall", "sub")

    def __init__(self, pattern, flags: int = 0) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str):
        rx = re.compile(*self._args)
        for attr in ("match", "search", "finditer", "findall", "sub"):
            setattr(self, attr, getattr(rx, attr))
        return getattr(rx, name)


_BRACKET_BYTES = {0x5B: b"[", 0x5D: b"]", 0x7B: b"{", 0x7D: b"}"}


def brackets(data, pos: int, end: int | None = None):
    """(index, bracket) of each ``[``, ``]``, ``{``, ``}`` outside strings in ``data[pos:end]``, in order.

    ``data`` is ``str`` or bytes-like (brackets then come as ``str``/``bytes`` of length 1). Strings
    are skipped whole by a regex; the walk stops at an unterminated string. Linear: a ``finditer``
    with a string alternative re-tried the string at every later escaped quote after an
    unterminated one (quadratic: ~10 s for a 100 KB hostile tail; found in review).
    """
    text = isinstance(data, str)
    find = _TO_BRACKET.match if text else _TO_BRACKET_B.match
    if end is None:
        end = len(data)
    while True:
        m = find(data, pos, end)
        if m is None:
            return
        i = m.end() - 1
        c = data[i]
        if c == '"' or c == 0x22:
            return  # the quote of an unterminated string (whole strings are consumed by the match)
        yield i, (c if text else _BRACKET_BYTES[c])
        pos = i + 1


# Up to and including the next bracket outside strings, strings consumed whole; possessive, so a run
# with no bracket after it fails at once (``(?:[^...]+|...)*`` backtracked exponentially there).
_TO_BRACKET = LazyRe(r'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+["\[\]{}]', re.S)
_TO_BRACKET_B = LazyRe(rb'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+["\[\]{}]', re.S)


def container_end(data, pos: int, every=None) -> int:
    """End of the array/object starting at ``pos`` (``str`` or ``bytes``), or -1 (unbalanced, unterminated).

    ``every`` (if given) is called after each 4,096 brackets (a background look-up yields there).
    """
    depth = 0
    for k, (i, c) in enumerate(brackets(data, pos), 1):
        if every is not None and not k & 0xFFF:
            every()
        if c == "[" or c == "{" or c == b"[" or c == b"{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


WS_B = LazyRe(rb"[ \t\n\r]*")
"""JSON whitespace, in bytes."""

TOKEN = LazyRe(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{},]', re.S)
"""A JSON string, whole, or a bracket or comma (in bytes): the tokens of the manifest's byte walks."""
