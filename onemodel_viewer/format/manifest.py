"""The JSON manifest (spec section 1.2): strict parsing, and finding a value's bytes by manifest path.

:func:`parse` turns the manifest bytes (``bytes`` or a ``memoryview``: nothing is copied or
decoded) into Python values with ``orjson``, which itself enforces what section 1.2 and
CLARIFICATIONS.md ask: valid UTF-8 (encoded surrogates included), no byte-order mark, no lone
surrogate escape (``"\\ud800"``), no ``NaN`` / ``Infinity``, nothing after the top-level value,
and at most 1024 JSON levels, exactly (its own counter: no recursion limit, no process-wide
setting, the same on every Python and in every thread; checked when orjson is first imported).
Integers stay exact ``int`` from -2^63 to 2^64 - 1; beyond that orjson gives a ``float``, which
an integer field reports like any float (the schema builder takes only ``type(v) is int``, then
checks the int64 range); ``1.0`` / ``1e3`` are ``float`` too. A manifest whose first byte after
whitespace is not ``{`` is not a JSON object whatever follows, and is not parsed at all.

Only when orjson refuses the bytes is more read, to report what the standard-library parser
reported before (kinds, ``where``, offsets and messages; orjson's positions count characters and
its messages vary between versions): a UTF-8 check in 1 MiB chunks, the bracket walk for the
depth limit, and for a syntax error the standard-library scanner over a bounded prefix (from the
start to 64 KiB past orjson's position, at most ``_EXPLAIN_CAP`` bytes; beyond that, orjson's
message at its position). Where the standard library accepts what orjson refuses (a lone
surrogate escape, a number beyond a double such as ``1e400``), it parses the whole manifest, as
before: a number field then reports such a number at its own path.

Duplicate keys are findings, not problems (JSON's last value wins, as in orjson and every parser
measured). orjson keeps the last value silently, so ``duplicates=True`` first proves there are
none cheaply (the ``:`` orjson writes for the value against the manifest's own), and only when
that fails walks the bytes (:func:`_duplicate_keys`, linear, no recursion).

Problems: kind ``Malformed`` at ``manifest`` (offset: manifest offset + byte position of the
error) for BOM, invalid UTF-8, invalid JSON, NaN/Infinity, a top level that is not an object;
``Malformed`` at the string's manifest path for a lone surrogate (a key's: at its object);
``Unsupported`` at ``manifest`` for nesting deeper than 1024 levels (offset of the 1025th
opening bracket).

:func:`locate` walks the raw bytes to the value at a manifest path (``manifest.graph.nodes[3]``),
skipping sibling values with the C scanner (or, for bytes that are not UTF-8, a forward-only
byte scanner): linear in the bytes before the value, ``None`` on anything unexpected. The reader uses it to give manifest-path problems a file offset; the viewer
uses it to highlight a record's bytes; keep one :class:`Locator` per manifest for many look-ups
(it caches each container's member spans, so later look-ups are nearly free).
"""

from __future__ import annotations

import codecs
import json
import re
import time
from typing import Callable
from array import array as _array
from itertools import accumulate as _accumulate
from itertools import repeat as _repeat
from operator import itemgetter as _itemgetter
from json import decoder as _json_decoder
from json import scanner as _json_scanner

from .errors import FormatError, Kind

MAX_DEPTH = 1024
"""Deepest JSON nesting accepted (arrays and objects; the top-level object is level 1)."""

_BOM = b"\xef\xbb\xbf"


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


def _orjson():
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


class _LazyRe:
    """A regex compiled on first use: most of this module's patterns serve failure paths and
    look-ups, and compiling them all costs ~1 ms of every process's start (``--check``)."""

    __slots__ = ("_args", "match", "search", "finditer", "findall", "sub")

    def __init__(self, pattern, flags: int = 0) -> None:
        self._args = (pattern, flags)

    def __getattr__(self, name: str):
        rx = re.compile(*self._args)
        for attr in ("match", "search", "finditer", "findall", "sub"):
            setattr(self, attr, getattr(rx, attr))
        return getattr(rx, name)


class _Constant(Exception):
    pass


def _reject_constant(name: str):
    raise _Constant(name)


class Parsed:
    """A parsed manifest: the top-level object and the objects that had duplicate keys."""

    __slots__ = ("value", "duplicates", "checked_duplicates")

    def __init__(self, value: dict, duplicates: list, checked_duplicates: bool = True) -> None:
        self.value = value
        self.duplicates = duplicates
        """``[(dict, [key, ...]), ...]``: each object of ``value`` that repeated a key, and the repeated keys."""
        self.checked_duplicates = checked_duplicates
        """Whether ``duplicates`` was detected (``parse(duplicates=False)`` leaves it empty, unknown)."""


# ---------------------------------------------------------------------------------------------
# bytes without copies: UTF-8 and character positions in bounded chunks

_CHUNK = 1 << 20


def _utf8_error(data) -> tuple[int, str] | None:
    """(byte offset, reason) of the first invalid UTF-8 in ``data``, or None; decodes 1 MiB at a time."""
    with memoryview(data) as mv:
        n = len(mv)
        pos = 0
        while pos < n:
            end = min(n, pos + _CHUNK)
            try:
                _s, used = codecs.utf_8_decode(mv[pos:end], "strict", end == n)
            except UnicodeDecodeError as e:
                return pos + e.start, e.reason
            pos += used
    return None


def _byte_offset(data, chars: int) -> int:
    """Byte offset of character ``chars`` of valid UTF-8 ``data`` (orjson counts characters)."""
    with memoryview(data) as mv:
        n = len(mv)
        pos = 0
        while pos < n:
            s, used = codecs.utf_8_decode(mv[pos : pos + _CHUNK], "strict", False)
            if len(s) >= chars:
                return pos + len(s[:chars].encode("utf-8"))
            chars -= len(s)
            pos += used
            if not used:  # pragma: no cover - valid UTF-8 always decodes some of a 1 MiB chunk
                break
    return n


# ---------------------------------------------------------------------------------------------
# brackets (the depth problem's offset, and the Locator's background scans)

_BRACKET_BYTES = {0x5B: b"[", 0x5D: b"]", 0x7B: b"{", 0x7D: b"}"}


def _brackets(data, pos: int, end: int | None = None):
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
_TO_BRACKET = _LazyRe(r'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+["\[\]{}]', re.S)
_TO_BRACKET_B = _LazyRe(rb'(?:[^"\[\]{}]++|"[^"\\]*+(?:\\.[^"\\]*+)*+")*+["\[\]{}]', re.S)


def _container_end(data, pos: int, every=None) -> int:
    """End of the array/object starting at ``pos`` (``str`` or ``bytes``), or -1 (unbalanced, unterminated).

    ``every`` (if given) is called after each 4,096 brackets (a background look-up yields there).
    """
    depth = 0
    for k, (i, c) in enumerate(_brackets(data, pos), 1):
        if every is not None and not k & 0xFFF:
            every()
        if c == "[" or c == "{" or c == b"[" or c == b"{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return i + 1
    return -1


def _first_too_deep(data, end: int | None = None) -> int:
    """Index of the first bracket in ``data[:end]`` that opens level MAX_DEPTH + 1, or -1."""
    depth = 0
    for i, c in _brackets(data, 0, end):
        if c == b"[" or c == b"{" or c == "[" or c == "{":
            depth += 1
            if depth > MAX_DEPTH:
                return i
        else:
            depth -= 1
    return -1


# ---------------------------------------------------------------------------------------------
# parse


def _err(kind: Kind, where: str, offset: int | None, message: str) -> FormatError:
    return FormatError(kind, where, offset, message)


_WS_B = _LazyRe(rb"[ \t\n\r]*")
_VALUE_START = frozenset(b'"[-0123456789tfn')
_SURROGATE_ESCAPE = _LazyRe(rb"\\u[dD][89a-fA-F]")
_CONSTANT_TOKENS = _LazyRe(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)', re.S)
_NUMBER = _LazyRe(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_EXPLAIN_MARGIN = 1 << 16
_EXPLAIN_CAP = 8 << 20
"""The standard-library scanner explains a syntax error only within this many bytes of the start."""


def parse(data, base: int = 64, duplicates: bool = True) -> Parsed:
    """Parse manifest bytes (raises :class:`FormatError`). ``base`` is the manifest's file offset.

    ``data`` is ``bytes`` or a ``memoryview`` (of the mapping: nothing is copied). ``duplicates=False``
    skips duplicate-key detection (``Parsed.duplicates`` stays empty).
    """
    if data[:3] == _BOM:
        raise _err(Kind.MALFORMED, "manifest", base, "the manifest starts with a byte-order mark")
    start = _WS_B.match(data).end()
    if start >= len(data) or data[start] != 0x7B:  # {
        # Not an object, whatever follows: no need to build the value (a 300 MB string) or to give
        # orjson the bytes (it first allocates a working buffer the size of its input).
        raise _not_an_object(data, base, start)
    try:
        value = _orjson().loads(data)
    except _orjson().JSONDecodeError as e:
        value = _refused(data, base, e.pos, e.msg)  # raises, or the standard library's value
    dups = _duplicates(data, value) if duplicates else []
    return Parsed(value, dups, duplicates)


def _not_an_object(data, base: int, start: int) -> FormatError:
    """The problem of a manifest whose first byte after whitespace is not ``{``: invalid UTF-8
    anywhere (as for any manifest), else "not a JSON object" at a byte that starts a JSON value
    (``"``, ``[``, a digit, ``-``, ``t``, ``f``, ``n``: what follows is not read, so a top-level
    array nested deeper than 1024 levels is this too), else the JSON error there."""
    bad = _utf8_error(data)
    if bad is not None:
        return _err(Kind.MALFORMED, "manifest", base + bad[0], f"invalid UTF-8: {bad[1]}")
    if start < len(data) and data[start] in _VALUE_START:
        return _err(Kind.MALFORMED, "manifest", base + start, "the manifest is not a JSON object")
    found = _stdlib_error(data, start)
    if found is not None:
        return _err(Kind.MALFORMED, "manifest", base + found[0], found[1])
    return _err(Kind.MALFORMED, "manifest", base + start, "invalid JSON: expecting a value")  # pragma: no cover


def _refused(data, base: int, char_pos: int, message: str) -> dict:
    """What orjson refused at character ``char_pos``: raises the problem, with the standard
    library's offsets and words; or, for a number beyond a double (which the standard library
    reads: ``1e400`` is ``inf``, a 400-digit integer an ``int``), returns the standard library's
    value, so that a number field reports it at its own path as before."""
    bad = _utf8_error(data)
    if bad is not None:
        raise _err(Kind.MALFORMED, "manifest", base + bad[0], f"invalid UTF-8: {bad[1]}")
    b = min(_byte_offset(data, char_pos), len(data))
    # orjson stops right after the bracket that opens level 1025; its messages vary between versions
    near_bracket = any(0 <= j < len(data) and data[j] in (0x5B, 0x7B) for j in (b - 1, b))
    if near_bracket or "depth" in message or "recursion" in message:
        deep = _first_too_deep(data, b + 1)
        if deep >= 0:
            raise _err(Kind.UNSUPPORTED, "manifest", base + deep, f"JSON nested deeper than {MAX_DEPTH} levels")
    # What the standard library takes and orjson does not: a lone surrogate escape (the old rules
    # report it only after the whole manifest parsed, at the string's path in the parsed value),
    # a number beyond a double (1e400 is inf, a 400-digit integer an int: a number field reports
    # it at its own path). For these, the standard library parses the whole manifest, as before.
    surrogate = _SURROGATE_ESCAPE.search(data, max(0, b - 12), min(len(data), b + 13))
    number = _NUMBER.match(data, b)
    if surrogate is not None or (number is not None and abs(float(number.group())) == float("inf")):
        return _stdlib_value(data, base, b, surrogate.start() if surrogate is not None else -1)
    found = _stdlib_error(data, b)
    if found is not None:
        raise _err(Kind.MALFORMED, "manifest", base + found[0], found[1])
    raise _err(Kind.MALFORMED, "manifest", base + b, f"invalid JSON: {message}")


def _stdlib_value(data, base: int, b: int, surrogate: int) -> dict:
    """The standard library's parse of the whole manifest (a dict), or its problem; ``b`` is where
    orjson stopped, ``surrogate`` the byte of the escape there (or -1)."""
    found = _stdlib_scan(data, len(data))
    if found is None:  # nested deeper than this thread's recursion limit lets the scanner go
        deep = _first_too_deep(data)
        if deep >= 0:
            raise _err(Kind.UNSUPPORTED, "manifest", base + deep, f"JSON nested deeper than {MAX_DEPTH} levels")
        bad = _lone_surrogate(data, surrogate) if surrogate >= 0 else None
        if bad is not None:
            raise _err(Kind.MALFORMED, bad[0], base + bad[1], f"lone surrogate in a {bad[2]}")
        raise _err(Kind.MALFORMED, "manifest", base + b, "invalid JSON: a number beyond the range of a double")
    if found[0] is not _VALUE:
        raise _err(Kind.MALFORMED, "manifest", base + found[0], found[1])
    value = found[1]
    if type(value) is not dict:  # pragma: no cover - a manifest that starts with '{' parses to an object
        raise _err(Kind.MALFORMED, "manifest", base, "the manifest is not a JSON object")
    if _SURROGATE_ESCAPE.search(data):
        bad = _find_surrogate(value, "manifest")
        if bad is not None:
            where, what = bad
            span = locate(data, where)
            raise _err(Kind.MALFORMED, where, base + span[0] if span else base, f"lone surrogate in a {what}")
    return value


_VALUE = object()


def _stdlib_error(data, near: int) -> tuple[int, str] | None:
    """(byte offset, message) of the standard-library scanner's error in valid-UTF-8 ``data``, read
    from the start to 64 KiB past byte ``near`` (at most ``_EXPLAIN_CAP`` bytes); None when that
    cannot say for sure (an error where the prefix was cut, a longer prefix, no error in it, a
    nesting deeper than this thread's recursion limit lets the scanner go)."""
    cut = min(len(data), near + _EXPLAIN_MARGIN)
    if cut > _EXPLAIN_CAP:
        return None
    found = _stdlib_scan(data, cut)
    if found is None or found[0] is _VALUE:
        return None
    return found


def _stdlib_scan(data, cut: int):
    """The standard-library scanner over ``data[:cut]`` (valid UTF-8; ``cut`` moves back to a
    character boundary): ``(_VALUE, value)`` when it parsed the whole of ``data``, ``(byte offset,
    message)`` of an error it is sure of, None otherwise (see :func:`_stdlib_error`)."""
    n = len(data)
    while cut < n and data[cut] & 0xC0 == 0x80:
        cut -= 1
    whole = cut == n
    with memoryview(data) as mv, mv[:cut] as head:
        text = str(head, "utf-8")
    scan = _json_scanner.make_scanner(_json_decoder.JSONDecoder(parse_constant=_reject_constant))
    ws = _json_decoder.WHITESPACE.match
    start = ws(text, 0).end()
    # an error this close to the cut may be the cut's (a number, a literal or an escape cut short)
    near_cut = len(text) - 16
    try:
        value, end = scan(text, start)
    except StopIteration as e:
        pos, msg, sure = e.value, "invalid JSON: expecting a value", e.value < near_cut
    except json.JSONDecodeError as e:
        pos, msg = e.pos, f"invalid JSON: {e.msg}"
        sure = e.pos < near_cut and not e.msg.startswith("Unterminated string")
    except _Constant as e:
        m = next((m for m in _CONSTANT_TOKENS.finditer(text) if m.group(1)), None)
        if m is None:  # pragma: no cover - the scanner met the constant outside a string
            return None
        pos, msg, sure = m.start(1), f"{e.args[0]} is not JSON", True
    except RecursionError:
        return None
    except ValueError as e:  # an integer literal beyond sys.get_int_max_str_digits()
        pos, msg, sure = 0, f"invalid JSON: {e}", True
    else:
        pos = ws(text, end).end()
        if pos >= len(text):
            return (_VALUE, value) if whole else None
        msg, sure = "invalid JSON: extra data after the top-level value", True
    if not (sure or whole):
        return None
    return len(text[:pos].encode("utf-8")), msg


def _has_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _find_surrogate(value, where: str):
    """(manifest path, "string"|"key") of the first string holding a lone surrogate, or None."""
    stack = [(value, where)]
    while stack:
        v, w = stack.pop()
        t = type(v)
        if t is str:
            if _has_surrogate(v):
                return w, "string"
        elif t is dict:
            items = list(v.items())
            for k, x in reversed(items):
                if _has_surrogate(k):
                    return w, "key"
                stack.append((x, join(w, k)))
        elif t is list:
            for i in range(len(v) - 1, -1, -1):
                stack.append((v[i], f"{w}[{i}]"))
    return None


# ---------------------------------------------------------------------------------------------
# walking the bytes: duplicate keys, the path of a byte

_TOKEN = _LazyRe(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{},]', re.S)


def _lone_surrogate(data, pos: int) -> tuple[str, int, str] | None:
    """(where, offset, "string"|"key") of the string holding the escape at byte ``pos``, when it
    decodes to a lone surrogate: a string at its own path and offset, a key at its object's.

    A walk of the bytes before ``pos`` (which orjson found valid), no recursion."""
    stack: list[list] = []  # [is_object, path, start, key-or-index, expecting_key]
    for m in _TOKEN.finditer(data):
        s = m.start()
        if s > pos:
            return None
        t = m.group()
        c = t[0]
        if c == 0x22:  # a string
            top = stack[-1] if stack else None
            is_key = top is not None and top[0] and top[4]
            if is_key:
                top[4] = False
                top[3] = json.loads(t)
            if s <= pos < m.end():
                if not _has_surrogate(json.loads(t)):
                    return None
                if top is None:
                    return "manifest", s, "string"
                if is_key:
                    return top[1], top[2], "key"
                return (join(top[1], top[3]) if top[0] else f"{top[1]}[{top[3]}]"), s, "string"
        elif c == 0x2C:  # ,
            top = stack[-1]
            if top[0]:
                top[4] = True
            else:
                top[3] += 1
        elif c == 0x7B or c == 0x5B:
            if stack:
                top = stack[-1]
                path = join(top[1], top[3]) if top[0] else f"{top[1]}[{top[3]}]"
            else:
                path = "manifest"
            stack.append([c == 0x7B, path, s, 0 if c == 0x5B else None, True])
        elif stack:
            stack.pop()
    return None


def _duplicates(data, value: dict) -> list:
    """``Parsed.duplicates`` of valid JSON ``data`` whose parse is ``value``.

    Cheap proof first: orjson writes one ``:`` per key of ``value`` plus those inside its strings;
    ``data`` holds one per key it spells out plus those inside its strings (a ``\\u003a`` escape
    is a ``:`` too: counted, perhaps too many). A dropped duplicate loses its key (and maybe its
    value's keys and strings), so equal counts prove there was none (~3 ms for 2.3 MB). Else the
    byte walk, linear, no recursion.
    """
    try:
        written = _orjson().dumps(value).count(b":")
    except _orjson().JSONEncodeError:  # deeper than orjson writes (255 levels)
        written = -1
    if written >= 0:
        spelt = _count(data, b":")
        if _count(data, b"\\"):
            spelt += _count(data, b"\\u003a") + _count(data, b"\\u003A")
        if written == spelt:
            return []
    out = []
    for steps, keys in _duplicate_keys(data):
        d = value
        for s in steps:
            d = d[s]
        if type(d) is dict:
            out.append((d, keys))
    return out


def _count(data, needle: bytes) -> int:
    """``data.count(needle)`` for bytes or a memoryview (which has no ``count``), 1 MiB at a time."""
    if isinstance(data, bytes):
        return data.count(needle)
    n, k, total = len(data), len(needle) - 1, 0
    with memoryview(data) as mv:
        for pos in range(0, n, _CHUNK):
            with mv[pos : min(n, pos + _CHUNK + k)] as chunk:
                total += bytes(chunk).count(needle)
    return total  # a needle that starts in one chunk and ends in the next is counted once: in its first


def _duplicate_keys(data) -> list[tuple[list, list[str]]]:
    """(path steps, repeated keys) of each object of valid JSON ``data`` that repeats a key and is
    part of the parsed value: an object inside a value that a later duplicate replaced is not
    (the last value wins). Keys compare as their decoded bytes (``"a"`` and ``"\\u0061"`` repeat)."""
    # frame: [is_object, keys seen (objects), key or index, expecting a key, repeated keys, children]
    # children: what was found inside, per key (objects; a repeated key drops its earlier value's)
    # or as (index, bundle) (arrays); a bundle is (repeated keys or None, children, is_object)
    stack: list[list] = []
    root = None
    for m in _TOKEN.finditer(data):
        t = m.group()
        c = t[0]
        if c == 0x22:
            top = stack[-1]
            if top[3]:
                top[3] = False
                t = json.loads(t).encode("utf-8") if 0x5C in t else t[1:-1]  # 0x5C: \
                if t in top[1]:
                    if top[4] is None:
                        top[4] = {}
                    top[4][t] = None
                    if top[5]:
                        top[5].pop(t, None)
                else:
                    top[1].add(t)
                top[2] = t
        elif c == 0x2C:
            top = stack[-1]
            if top[0]:
                top[3] = True
            else:
                top[2] += 1
        elif c == 0x7B:
            stack.append([True, set(), None, True, None, None])
        elif c == 0x5B:
            stack.append([False, None, 0, False, None, None])
        else:
            f = stack.pop()
            if f[4] is None and not f[5]:
                continue
            bundle = (f[4], f[5], f[0])
            if not stack:
                root = bundle
                break
            p = stack[-1]
            if p[0]:
                if p[5] is None:
                    p[5] = {}
                p[5][p[2]] = bundle
            else:
                if p[5] is None:
                    p[5] = []
                p[5].append((p[2], bundle))
    out: list = []
    todo = [([], root)] if root is not None else []
    while todo:
        steps, (keys, children, is_object) = todo.pop()
        if keys:
            out.append((steps, [k.decode("utf-8") for k in keys]))
        if children:
            items = children.items() if is_object else children
            for step, child in reversed(list(items)):
                todo.append((steps + [step.decode("utf-8") if is_object else step], child))
    return out


# ---------------------------------------------------------------------------------------------
# paths

_IDENT = _LazyRe(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def join(where: str, key: str) -> str:
    """``where.key``, or ``where["k.e y"]`` when the key is not an identifier."""
    if _IDENT.match(key):
        return f"{where}.{key}"
    return f"{where}[{json.dumps(key, ensure_ascii=True)}]"


_STEP = _LazyRe(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("[^"\\]*(?:\\.[^"\\]*)*")\]')


def split_path(where: str) -> list[str | int] | None:
    """``manifest.graph.nodes[3]`` -> ``["graph", "nodes", 3]``; None if not a manifest path."""
    if where != "manifest" and not where.startswith(("manifest.", "manifest[")):
        return None
    steps: list[str | int] = []
    pos = len("manifest")
    while pos < len(where):
        m = _STEP.match(where, pos)
        if m is None:
            return None
        if m.group(1) is not None:
            steps.append(m.group(1))
        elif m.group(2) is not None:
            steps.append(int(m.group(2)))
        else:
            try:
                steps.append(json.loads(m.group(3)))
            except ValueError:
                return None
        pos = m.end()
    return steps


# ---------------------------------------------------------------------------------------------
# locate

_WS = _LazyRe(rb"[ \t\n\r]*")
_STRING = _LazyRe(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = _LazyRe(rb"[^ \t\n\r,\]}\[{:\"]+")


def _skip_value(data: bytes, pos: int) -> int:
    """End of the JSON value starting at ``pos`` (after leading whitespace), or -1."""
    if pos >= len(data):
        return -1
    c = data[pos]
    if c == 0x22:  # "
        m = _STRING.match(data, pos)
        return m.end() if m else -1
    if c in (0x5B, 0x7B):  # [ {
        return _container_end(data, pos)
    m = _SCALAR.match(data, pos)
    return m.end() if m else -1


def _child(data: bytes, start: int, step: str | int) -> tuple[int, int] | None:
    """Span of member ``step`` (key or index) of the object/array at ``start``."""
    n = len(data)
    if start >= n:
        return None
    c = data[start]
    if isinstance(step, int):
        if c != 0x5B:
            return None
        pos = _WS.match(data, start + 1).end()
        if pos < n and data[pos] == 0x5D:
            return None
        i = 0
        while pos < n:
            end = _skip_value(data, pos)
            if end < 0:
                return None
            if i == step:
                return pos, end
            pos = _WS.match(data, end).end()
            if pos >= n or data[pos] != 0x2C:  # ,
                return None
            pos = _WS.match(data, pos + 1).end()
            i += 1
        return None
    if c != 0x7B:
        return None
    pos = _WS.match(data, start + 1).end()
    if pos < n and data[pos] == 0x7D:
        return None
    found = None
    while pos < n:
        m = _STRING.match(data, pos)
        if m is None:
            return found
        try:
            key = json.loads(m.group())
        except ValueError:
            return found
        pos = _WS.match(data, m.end()).end()
        if pos >= n or data[pos] != 0x3A:  # :
            return found
        pos = _WS.match(data, pos + 1).end()
        end = _skip_value(data, pos)
        if end < 0:
            return found
        if key == step:
            found = (pos, end)  # keep going: the last duplicate wins, as in json
        pos = _WS.match(data, end).end()
        if pos >= n or data[pos] != 0x2C:
            return found
        pos = _WS.match(data, pos + 1).end()
    return found


class LookupCancelled(Exception):
    """A background :meth:`Locator.nearest` stopped because its caller no longer wants the answer."""


class _Members:
    """What a :class:`Locator` knows of one array or object: member spans found so far, where to go on."""

    __slots__ = ("array", "spans", "keys", "pos", "done")

    def __init__(self, array: bool, pos: int) -> None:
        self.array = array
        self.spans = _array("q")
        """Each member's value start, in stored order (8 bytes a member: an object may have 10^6)."""
        self.keys: dict[str, int] = {}
        """Objects: key -> index into ``spans`` (the last duplicate once seen)."""
        self.pos = pos
        """Where the next member starts (after the previous one's value has been skipped)."""
        self.done = False


class Locator:
    """Finds values by manifest path in one manifest, walking only as far as each look-up needs.

    Valid UTF-8 JSON is walked as text: an array's elements are skipped one by one up to the
    requested index, an object's members up to the requested key (with ``unique_keys``, the
    caller's promise that no object repeats a key, the walk stops at the first match; otherwise
    it reads on to the object's end, as the last duplicate wins in ``json``). What was walked is
    remembered, so later look-ups continue from there. Values are skipped with the C scanner;
    with ``background`` (a viewer's worker thread) an object member's value (which may be a
    whole graph) is skipped by a bracket scan in Python instead, which never holds the
    interpreter for long, so the UI thread keeps running. Anything that is not JSON enough
    falls back to a forward-only byte scanner.
    """

    def __init__(self, data: bytes, *, unique_keys: bool = False, background: bool = False) -> None:
        if not isinstance(data, bytes):  # a memoryview of the mapping: the look-ups need bytes
            data = bytes(data)
        self.data = data
        self.unique_keys = unique_keys
        self.background = background
        try:
            self.text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            self.text = None
        self.ascii = self.text is not None and self.text.isascii()
        self._members: dict[int, _Members] = {}
        self._ends: dict[int, int] = {}
        self._cancelled: Callable[[], bool] | None = None
        self._blocks: list[int] | None = None
        self._scan = _json_scanner.make_scanner(_json_decoder.JSONDecoder())

    def nearest(self, where: str, cancelled: Callable[[], bool] | None = None) -> tuple[int, int, str] | None:
        """(start, end, path) of the deepest value on the way to ``where`` (byte offsets in the manifest).

        ``cancelled`` (background mode): polled during long scans; when it returns True the
        look-up stops with :class:`LookupCancelled` (what was walked stays cached).
        """
        steps = split_path(where)
        if steps is None:
            return None
        if self.text is not None:
            self._cancelled = cancelled
            try:
                found = self._nearest_text(steps)
            except (ValueError, IndexError, StopIteration, RecursionError):
                self.text = None  # not JSON enough: walk the bytes from now on
                found = False
            if found is not False:
                if found is None:
                    return None
                s, e, path = found
                return self._byte(s), self._byte(e), path
        return _nearest_bytes(self.data, steps)

    _BLOCK = 4096

    def _byte(self, pos: int) -> int:
        """Byte offset of character ``pos`` (block prefix sums: O(block) per call after one pass)."""
        if self.ascii:
            return pos
        text = self.text
        if self._blocks is None:
            acc, blocks = 0, [0]
            for i in range(0, len(text), self._BLOCK):
                acc += len(text[i : i + self._BLOCK].encode("utf-8", "surrogatepass"))
                blocks.append(acc)
            self._blocks = blocks
        k = pos // self._BLOCK
        return self._blocks[k] + len(text[k * self._BLOCK : pos].encode("utf-8", "surrogatepass"))

    def _nearest_text(self, steps: list):
        text = self.text
        pos = _json_decoder.WHITESPACE.match(text, 0).end()
        if not text.startswith("{", pos):
            return None
        path = "manifest"
        for step in steps:
            nxt = self._child(pos, step)
            if nxt is None:
                break
            pos = nxt
            path = f"{path}[{step}]" if isinstance(step, int) else join(path, step)
        return pos, self._end(pos), path

    def _child(self, start: int, step) -> int | None:
        """Start of member ``step`` (index or key) of the container at ``start``, or None."""
        text = self.text
        c = text[start]
        if isinstance(step, int) != (c == "["):
            return None
        if c != "[" and c != "{":
            return None
        m = self._members.get(start)
        if m is None:
            m = self._members[start] = _Members(c == "[", start + 1)
        if m.array:
            while len(m.spans) <= step and not m.done:
                self._next(m)
                if self.background and not len(m.spans) & 0xFFF:
                    self._turn()
            return m.spans[step] if step < len(m.spans) else None
        if self.unique_keys:
            k = m.keys.get(step)
            if k is not None:
                return m.spans[k]
            while not m.done:
                if self._next(m) == step:
                    return m.spans[-1]
            return None
        while not m.done:
            self._next(m)
        k = m.keys.get(step)
        return m.spans[k] if k is not None else None

    def _next(self, m: _Members):
        """Read one more member of ``m`` (skipping the previous member's value first); its key for objects."""
        text = self.text
        ws = _json_decoder.WHITESPACE.match
        if m.spans:  # step over the previous value, then ',' or the closing bracket
            pos = ws(text, self._end(m.spans[-1], m.array)).end()
            if text.startswith(",", pos):
                pos += 1
            elif text.startswith("]" if m.array else "}", pos):
                m.done = True
                return None
            else:
                raise ValueError("expected ',' or a closing bracket")
        else:
            pos = m.pos
        pos = ws(text, pos).end()
        if not m.spans and text.startswith("]" if m.array else "}", pos):
            m.done = True
            return None
        key = None
        if not m.array:
            if not text.startswith('"', pos):
                raise ValueError("expected a key")
            key, pos = _json_decoder.scanstring(text, pos + 1)
            pos = ws(text, pos).end()
            if not text.startswith(":", pos):
                raise ValueError("expected ':'")
            pos = ws(text, pos + 1).end()
            m.keys[key] = len(m.spans)
        if pos >= len(text):
            raise ValueError("truncated")
        m.spans.append(pos)
        m.pos = pos
        return key

    def _turn(self) -> None:
        """Background mode, inside long scans: let the UI thread have the interpreter; stop if cancelled."""
        time.sleep(0)
        if self._cancelled is not None and self._cancelled():
            raise LookupCancelled()

    def _end(self, pos: int, element: bool = False) -> int:
        """End of the value starting at ``pos``. ``element``: an array element (expected small).

        Cached for containers and long values only: a scalar is found again at once, and an entry
        for each of 10^6 object members cost ~130 MB (a manifest repeating one key 10^6 times)."""
        end = self._ends.get(pos)
        if end is not None:
            return end
        text = self.text
        c = text[pos]
        if (c == "[" or c == "{") and self.background and not element:
            end = _container_end(text, pos, self._turn)
            if end < 0:
                raise ValueError("unbalanced brackets")
        elif c == '"':
            end = _json_decoder.scanstring(text, pos + 1)[1]
        else:
            end = self._scan(text, pos)[1]
        if c == "[" or c == "{" or end - pos >= 256:
            self._ends[pos] = end
        return end


def _nearest_bytes(data: bytes, steps: list) -> tuple[int, int, str] | None:
    pos = _WS.match(data, 0).end()
    end = _skip_value(data, pos) if pos < len(data) and data[pos] == 0x7B else -1
    if end < 0:
        return None
    span = (pos, end)
    path = "manifest"
    for step in steps:
        nxt = _child(data, span[0], step)
        if nxt is None:
            break
        span = nxt
        path = f"{path}[{step}]" if isinstance(step, int) else join(path, step)
    return span[0], span[1], path


def locate_nearest(data: bytes, where: str) -> tuple[int, int, str] | None:
    """(start, end, path) of the deepest value on the way to ``where`` that exists in ``data``.

    Offsets are byte offsets relative to the manifest. None when ``where`` is not a manifest path
    or the manifest does not start with a JSON object. For many look-ups in one manifest, keep a
    :class:`Locator`.
    """
    return Locator(data).nearest(where)


def locate(data: bytes, where: str) -> tuple[int, int] | None:
    """(start, end) byte span, relative to the manifest, of the JSON value at manifest path ``where``.

    None when the path does not exist (or ``data`` is not JSON enough to follow it).
    Linear in the bytes before the value; never raises on hostile input.
    """
    found = locate_nearest(data, where)
    if found is None:
        return None
    start, end, path = found
    steps = split_path(where)
    if path == "manifest" and steps:
        return None
    if path != where and split_path(path) != steps:
        return None
    return start, end


# ---------------------------------------------------------------------------------------------
# canonical form: a cheap proof that the writer would emit these very bytes
#
# The ``noncanonical-manifest`` finding compares the manifest with what the section 4 writer
# emits (``writer.encode_manifest(model)``), which costs about as much as the whole open. For a
# manifest that parsed without duplicate keys and built a model without problems, the writer
# emits exactly ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` of a value that
# differs from the parsed one only in key order, unknown keys and optional keys at their default
# (every scalar in a known field was validated by the reader and is written back unchanged;
# base64 is canonical or a problem; a float anywhere in a known field is a problem). So
# ``data == writer output`` when (1) ``data`` is the compact dump of its own parse
# (:func:`canonical_text`) and (2) every object has the writer's keys in the writer's order
# (:func:`canonical_structure`). Both are proofs only: False means "maybe not", and the caller
# then runs the exact writer comparison (tests compare both ways on every corpus file):
# :func:`writer_difference`, which encodes record by record and stops at the first differing
# byte (another writer's file usually differs in its first object's key order: nothing else
# is encoded, and no lazy node record is built).


def writer_difference(have: bytes, model, value: dict | None = None, *, structured: bool | None = None) -> int | None:
    """Index of the first byte where ``have`` differs from ``writer.encode_manifest(model)``
    (the shorter one's length when one is a prefix of the other), or None when they are equal.

    ``value`` is the parsed manifest ``model`` was read from (without problems). When its objects
    have the writer's keys in the writer's order (:func:`canonical_structure`), the writer emits
    its compact encoding, which orjson writes in one call (a pretty-printed or newline-terminated
    copy of the writer's manifest: ~3 ms for 2.3 MB). Otherwise the writer's encoding is made a
    record at a time (:func:`_writer_chunks`) and compared as it comes, so that another writer's
    key order stops it at the first object. ``structured``: ``canonical_structure(value)`` when the
    caller has it already. Raises what the writer raises (``FormatError``; ``ValueError`` for a
    lone surrogate).
    """
    if value is not None and (canonical_structure(value) if structured is None else structured):
        try:
            return _first_difference(have, _orjson().dumps(value))
        except _orjson().JSONEncodeError:  # deeper than orjson writes: record by record
            pass
    pos, n = 0, len(have)
    for chunk in _writer_chunks(model, value):
        if not have.startswith(chunk, pos):
            return pos + _first_difference(have[pos : pos + len(chunk)], chunk)
        pos += len(chunk)
    return None if pos == n else pos


def _first_difference(a: bytes, b: bytes) -> int | None:
    """First index where ``a`` and ``b`` differ (the shorter length if one is a prefix), or None.
    Equal halves are skipped with ``startswith`` (a memcmp; b's slices copy about len(b) in all)."""
    if a == b:
        return None
    n = min(len(a), len(b))
    if a.startswith(b) or b.startswith(a):
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a.startswith(b[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


def _encode(value) -> bytes:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)`` as UTF-8,
    which orjson writes byte for byte for the writer's records (no floats: tests compare the two);
    the standard library for what orjson refuses (over 254 levels, integers beyond 64 bits)."""
    try:
        return _orjson().dumps(value)
    except _orjson().JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def _writer_chunks(model, value: dict | None = None):
    """``writer.encode_manifest(model)`` in pieces, in order: the writer's own dicts (key order and
    optional fields are its decision), built and encoded one record (value info, tensor, node,
    function) at a time; the top level and each graph from the writer's encoding of a copy
    without its records. With ``value`` (the parse ``model`` was read from), a main-graph node
    stored with the writer's keys and only number or string attributes is its parsed dict, as
    the writer would write it (:func:`canonical_structure`'s rule), and its record is not built."""
    import dataclasses

    from . import writer as W
    from .schema import Graph

    def array(n: int, one):
        yield b"["
        for i in range(n):
            yield one(i) if i == 0 else b"," + one(i)
        yield b"]"

    def records(items, encode_one):
        return array(len(items), lambda i: _encode(encode_one(items[i])))

    def nodes(g, raw):
        if raw is None:
            return records(g.nodes, W._node)

        def one(i):
            if _writer_shaped_node(raw[i]):
                try:
                    return _orjson().dumps(raw[i])
                except _orjson().JSONEncodeError:  # pragma: no cover - the reader checked every number
                    pass
            return _encode(W._node(g.nodes[i]))

        return array(len(g.nodes), one)

    def graph(g, raw):
        arrays = {
            "inputs": lambda: records(g.inputs, W._vi), "outputs": lambda: records(g.outputs, W._vi),
            "value_info": lambda: records(g.value_info, W._vi), "initializers": lambda: records(g.initializers, W._tensor),
            "sparse_initializers": lambda: records(g.sparse_initializers, W._sparse), "nodes": lambda: nodes(g, raw),
        }
        skeleton = W._graph(dataclasses.replace(g, **{k: () for k in arrays}))
        yield from members(skeleton, lambda k: arrays[k]() if k in arrays else None)

    def members(d: dict, streamed):
        yield b"{"
        for i, (k, v) in enumerate(d.items()):
            yield (b"," if i else b"") + _encode(k) + b":"
            parts = streamed(k)
            if parts is None:
                yield _encode(v)
            else:
                yield from parts
        yield b"}"

    raw = None
    if value is not None:
        raw = value.get("graph", {}).get("nodes") if type(value.get("graph")) is dict else None
        if type(raw) is not list or len(raw) != len(model.graph.nodes):
            raw = None
    # one function at most in the copy: the key is there exactly when the model has functions
    top = W.manifest_dict(dataclasses.replace(model, graph=Graph(), functions=tuple(model.functions[:1])))
    yield from members(top, lambda k: graph(model.graph, raw) if k == "graph"
                       else records(model.functions, W._function) if k == "functions" else None)


_K_SCALAR_ATTR = ("name", "type", "value")


def _writer_shaped_node(raw) -> bool:
    """A parsed node the writer writes back as it is: its keys and order, a non-empty ``doc`` if any,
    attributes of exactly {name, type, value} with a number or string value (types 1-3, 6-8)."""
    if type(raw) is not dict:
        return False
    keys = tuple(raw)
    if keys != _K_NODE and not (keys == _K_NODE_DOC and raw["doc"]):
        return False
    for a in raw["attributes"]:
        if type(a) is not dict or tuple(a) != _K_SCALAR_ATTR or a["type"] not in _SCALAR_ATTRS:
            return False
    return True


_CANON_ESCAPES = frozenset(
    [b'\\"', b"\\\\", b"\\b", b"\\f", b"\\n", b"\\r", b"\\t"]
    + [b"\\u%04x" % c for c in range(32) if c not in (8, 9, 10, 12, 13)]
)
_ESCAPES = _LazyRe(rb"\\(?:u[0-9a-fA-F]{4}|.)", re.S)
_NEG_ZERO = _LazyRe(rb"[:,\[]-0[,\]}]")
_MINUS_ZERO = _LazyRe(rb"-0")


def _has_minus_zero(data: bytes) -> bool:
    """``b"-0" in data``, faster: ``bytes.__contains__`` with this two-byte needle is slow on JSON
    full of digits (~2 ms for 2 MB), a regex ~0.7 ms; '-' is rare, and ``find`` of one byte is a
    memchr. Past a few thousand '-' the regex takes over."""
    i = data.find(b"-")
    for _ in range(4096):
        if i < 0:
            return False
        if data[i + 1 : i + 2] == b"0":
            return True
        i = data.find(b"-", i + 1)
    return _MINUS_ZERO.search(data, i) is not None


def canonical_text(data: bytes) -> bool:
    """True only if ``data`` (JSON that parses, no duplicate keys) is the compact
    ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` of its own parse.

    No whitespace outside strings (raw tab/newline/CR cannot be inside one), every escape the
    one ``json.dumps`` writes (``\\"``, ``\\\\``, ``\\n``-style, lowercase ``\\u00xx`` for other
    controls), no ``-0``. Escapes pair up left to right (every backslash in valid JSON starts an
    escape or ends ``\\\\``), so one regex scan finds them all. Spaces and ``-0`` are proven
    inside strings by quote parity; with an escaped quote anywhere they are not proven (``False``:
    the caller then compares exactly).
    """
    if b"\n" in data or b"\r" in data or b"\t" in data:
        return False
    if b"\\" in data and not _CANON_ESCAPES.issuperset(_ESCAPES.findall(data)):
        return False
    if b" " in data or (_has_minus_zero(data) and _NEG_ZERO.search(data) is not None):
        # Inside a string or not? Count quotes before each: an odd count is inside, exactly,
        # when no quote is escaped (then every '"' opens or closes a string). C-speed counts.
        if b'\\"' in data:
            return False
        if b" " in data:
            segs = data.split(b" ")
            counts = list(map(bytes.count, segs, _repeat(b'"', len(segs) - 1)))
            if set(map((1).__and__, _accumulate(counts))) != {1}:
                return False
        if _has_minus_zero(data):
            prev = quotes = 0
            for m in _NEG_ZERO.finditer(data):
                quotes += data.count(b'"', prev, m.start())
                prev = m.start()
                if not quotes & 1:
                    return False
    return True


_K_NODE = ("name", "op", "domain", "overload", "inputs", "outputs", "attributes")
_K_NODE_DOC = ("name", "op", "domain", "overload", "doc", "inputs", "outputs", "attributes")
_K_ATTRS = {
    ("name", "type", "value"): (),
    ("name", "type", "doc", "value"): ("doc",),
    ("name", "type", "ref"): ("ref",),
    ("name", "type", "doc", "ref"): ("doc", "ref"),
}
_K_TENSORS = {
    ("name", "dtype", "dims", "data"): False,
    ("name", "dtype", "dims", "strings"): False,
    ("name", "dtype", "dims", "doc", "data"): True,
    ("name", "dtype", "dims", "doc", "strings"): True,
}
_K_DATA = ("offset", "length")
_K_VI = {("name",), ("name", "type")}
_K_TYPES = frozenset(
    [(k, ("kind", "elem")) for k in ("tensor", "sparse_tensor")]
    + [(k, ("kind", "elem", "shape")) for k in ("tensor", "sparse_tensor")]
    + [(k, ("kind", "inner")) for k in ("sequence", "optional")]
    + [("map", ("kind", "key", "inner")), ("opaque", ("kind", "domain", "name"))]
)
_K_GRAPH = ("inputs", "outputs", "value_info", "initializers", "sparse_initializers", "nodes")
_K_SPARSE = ("values", "indices", "dims")
_K_FUNCTION = ("inputs", "outputs", "attribute_names", "attribute_defaults", "nodes", "opsets")
_K_OPSET = ("domain", "version")
_K_META = ("key", "value")
_get_kind = _itemgetter("kind")
_get_type = _itemgetter("type")
_SCALAR_ATTRS = frozenset((1, 2, 3, 6, 7, 8))
_get_attributes = _itemgetter("attributes")


class _NotCanonical(Exception):
    pass


def _need(ok) -> None:
    if not ok:
        raise _NotCanonical


def canonical_structure(value: dict) -> bool:
    """True only if every object of ``value`` (a manifest whose model read without problems) has
    exactly the keys the writer emits for its record, in the writer's order (optional keys
    present only when not at their default). Bulk checks at C speed: distinct key tuples."""
    try:
        _CanonWalk().model(value)
    except (_NotCanonical, KeyError, TypeError, AttributeError):
        return False
    return True


class _CanonWalk:
    def __init__(self) -> None:
        self.graphs: list = []
        self.types: list = []
        self.tensors: list = []

    def model(self, o: dict) -> None:
        want = ["format", "version", "ir_version"]
        want += [k for k in ("producer_name", "producer_version", "domain", "doc", "model_version") if o.get(k)]
        want.append("opsets")
        if o.get("metadata"):
            want.append("metadata")
        want.append("graph")
        if o.get("functions"):
            want.append("functions")
        _need(list(o) == want)
        self.opsets(o["opsets"])
        for m in o.get("metadata", ()):
            _need(tuple(m) == _K_META)
        self.graphs.append(o["graph"])
        for f in o.get("functions", ()):
            want = ["name", "domain", "overload"]
            if f.get("doc"):
                want.append("doc")
            want += _K_FUNCTION
            _need(list(f) == want)
            self.attributes(f["attribute_defaults"])
            self.nodes(f["nodes"])
            self.opsets(f["opsets"])
        while self.graphs or self.types or self.tensors:
            while self.graphs:
                self.graph(self.graphs.pop())
            if self.tensors:
                tensors, self.tensors = self.tensors, []
                self.tensor_list(tensors)
            if self.types:
                types, self.types = self.types, []
                self.type_list(types)

    def opsets(self, ops: list) -> None:
        _need(set(map(tuple, ops)) <= {_K_OPSET})

    def graph(self, g: dict) -> None:
        want = [k for k in ("name", "doc") if g.get(k)]
        want += _K_GRAPH
        _need(list(g) == want)
        vis = g["inputs"] + g["outputs"] + g["value_info"]
        _need(set(map(tuple, vis)) <= _K_VI)
        self.types.extend([v["type"] for v in vis if len(v) == 2])
        self.tensors.extend(g["initializers"])
        self.sparse_list(g["sparse_initializers"])
        self.nodes(g["nodes"])

    def sparse_list(self, sparse: list) -> None:
        if sparse:
            _need(set(map(tuple, sparse)) == {_K_SPARSE})
            for s in sparse:
                self.tensors.append(s["values"])
                self.tensors.append(s["indices"])

    def nodes(self, nodes: list) -> None:
        keys = set(map(tuple, nodes))
        if keys - {_K_NODE}:
            _need(keys <= {_K_NODE, _K_NODE_DOC})
            _need(all(n["doc"] for n in nodes if len(n) == 8))
        attrs = [a for n in map(_get_attributes, nodes) if n for a in n]
        if attrs:
            self.attributes(attrs)

    def attributes(self, attrs: list) -> None:
        for keys in set(map(tuple, attrs)):
            nondefault = _K_ATTRS[keys]  # KeyError: not a writer's key tuple
            for k in nondefault:
                _need(all(a[k] for a in attrs if tuple(a) == keys))
        if set(map(_get_type, attrs)) <= _SCALAR_ATTRS:
            return  # no attribute holds a tensor, graph or type
        for a in attrs:
            t = a["type"]
            if t in _SCALAR_ATTRS or "value" not in a:
                continue
            v = a["value"]
            if t == 4:
                self.tensors.append(v)
            elif t == 5:
                self.graphs.append(v)
            elif t == 9:
                self.tensors.extend(v)
            elif t == 10:
                self.graphs.extend(v)
            elif t == 11:
                self.sparse_list([v])
            elif t == 12:
                self.sparse_list(v)
            elif t == 13:
                self.types.append(v)
            elif t == 14:
                self.types.extend(v)
            else:  # pragma: no cover - the reader reports other codes
                raise _NotCanonical

    def tensor_list(self, tensors: list) -> None:
        for keys in set(map(tuple, tensors)):
            if _K_TENSORS[keys]:  # KeyError: not a writer's key tuple
                _need(all(t["doc"] for t in tensors if len(t) == 5))
        datas = [t["data"] for t in tensors if "data" in t]
        _need(set(map(tuple, datas)) <= {_K_DATA})

    def type_list(self, types: list) -> None:
        _need(set(zip(map(_get_kind, types), map(tuple, types))) <= _K_TYPES)
        self.types.extend([t["inner"] for t in types if "inner" in t])
