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
that fails walks the bytes (linear, no recursion): both in :mod:`.manifest_keys`, whose
:func:`keys_unique` (re-exported here) answers the same of any JSON value (an edit's).

Problems: kind ``Malformed`` at ``manifest`` (offset: manifest offset + byte position of the
error) for BOM, invalid UTF-8, invalid JSON, NaN/Infinity, a top level that is not an object;
``Malformed`` at the string's manifest path for a lone surrogate (a key's: at its object);
``Unsupported`` at ``manifest`` for nesting deeper than 1024 levels (offset of the 1025th
opening bracket).

Manifest paths are written and read by :mod:`.manifest_path` (:func:`join`, :func:`split_path`);
a path's bytes are found by :mod:`.manifest_locate` (:class:`Locator`, :func:`locate`); the
canonical-form proof and the writer comparison are in :mod:`.canonical`. The public names of
those three are re-exported here (``manifest.locate``, ``manifest.Locator``, ...).
"""

from __future__ import annotations

import codecs
import json
import re
import time  # noqa: F401 - tests patch ``M.time.sleep`` (the Locator's background turns)
from json import decoder as _json_decoder
from json import scanner as _json_scanner

from . import manifest_keys as _keys
from .canonical import canonical_structure, canonical_text, writer_difference  # noqa: F401
from ..errors import FormatError, Kind
from .json_scan import CHUNK as _CHUNK
from .json_scan import MAX_DEPTH
from .json_scan import TOKEN as _TOKEN
from .json_scan import WS_B as _WS_B
from .json_scan import LazyRe as _LazyRe
from .json_scan import brackets as _brackets
from .json_scan import lazy_orjson as _orjson
from .manifest_keys import keys_unique  # noqa: F401
from .manifest_locate import Locator, LookupCancelled, locate, locate_nearest  # noqa: F401
from ..manifest_path import join, split_path  # noqa: F401

_BOM = b"\xef\xbb\xbf"


class _Constant(Exception):
    pass


def _reject_constant(name: str):
    raise _Constant(name)


class Parsed:
    """A parsed manifest: the top-level object and the objects that had duplicate keys."""

    __slots__ = ("value", "duplicates", "checked_duplicates", "compact", "stdlib")

    def __init__(self, value: dict, duplicates: list, checked_duplicates: bool = True, compact: bool = False,
                 stdlib: bool = False) -> None:
        self.value = value
        self.duplicates = duplicates
        """``[(dict, [key, ...]), ...]``: each object of ``value`` that repeated a key, and the repeated keys."""
        self.checked_duplicates = checked_duplicates
        """Whether ``duplicates`` was detected (``parse(duplicates=False)`` leaves it empty, unknown)."""
        self.compact = compact
        """True when the manifest bytes are exactly orjson's compact encoding of ``value`` (found while
        detecting duplicates; False when not known): then no key repeats and no byte is formatting."""
        self.stdlib = stdlib
        """True when the standard library parsed the bytes (orjson refused a number beyond a double, a lone
        surrogate): its values differ from orjson's (a 20-digit integer is an ``int``, not a ``float``)."""


# ---------------------------------------------------------------------------------------------
# bytes without copies: UTF-8 and character positions in bounded chunks

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
    stdlib = False
    try:
        value = _orjson().loads(data)
    except _orjson().JSONDecodeError as e:
        value = _refused(data, base, e.pos, e.msg)  # raises, or the standard library's value
        stdlib = True
    if not duplicates:
        return Parsed(value, [], False, stdlib=stdlib)
    dups, compact = _keys.duplicates(data, value)
    return Parsed(value, dups, True, compact, stdlib)


def with_duplicates(data, parsed: Parsed, step=None) -> Parsed | None:
    """``parsed`` (a parse of ``data`` made with ``duplicates=False``) with its duplicate keys detected,
    without parsing again (:func:`.manifest_keys.duplicates`: ~2 ms for 2.3 MB against ~15 ms for the
    parse and the collections its ~10^5 new objects trigger); ``parsed`` itself when they were detected
    already.

    ``step`` (a background job's): the count proof is made a piece at a time
    (:func:`.manifest_keys.written_colons`), ``step()`` asked between pieces, so that no call holds the
    interpreter long (one ``orjson.dumps`` of a 10^6-node manifest holds it ~0.2 s); ``compact`` stays
    unknown; None when ``step()`` said stop.
    """
    if parsed.checked_duplicates:
        return parsed
    if step is None:
        dups, compact = _keys.duplicates(data, parsed.value)
        return Parsed(parsed.value, dups, True, compact, parsed.stdlib)
    written = _keys.written_colons(parsed.value, step)
    spelt = None if written is None else _keys.spelt_colons(data, step)
    if spelt is None:
        return None
    dups = [] if written == spelt else _keys.duplicate_objects(data, parsed.value)
    return Parsed(parsed.value, dups, True, False, parsed.stdlib)


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
# walking the bytes: the path of a byte


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
