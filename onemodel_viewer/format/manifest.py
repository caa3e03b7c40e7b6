"""The JSON manifest (spec section 1.2): strict parsing, and finding a value's bytes by manifest path.

:func:`parse` turns the manifest bytes into Python values with stdlib ``json`` and enforces what
``json`` does not:

* no byte-order mark, valid UTF-8 (encoded surrogates included: Python's codec rejects them);
* no lone surrogate escapes (``"\\ud800"``): a cheap byte scan, then a walk only if it hits;
* no ``NaN`` / ``Infinity`` literals (``parse_constant``);
* nesting of at most 1024 JSON levels, exactly: the C scanner counts one recursion level per
  array/object, so for the duration of the call the recursion limit is set so that, from the
  parsing frame, a 1024-deep probe parses and a 1025-deep one fails (two tiny probe parses per
  call, ~0.15 ms; the frame count alone is not exact because C calls in the stack count too).
  Deeper input raises ``RecursionError`` inside the scanner, which becomes ``Unsupported`` at
  ``manifest``. No RecursionError escapes, whatever the caller's stack depth.
* duplicate keys are detected with ``object_pairs_hook`` and returned (they are findings, not
  problems; JSON's last value wins, as in every parser measured). ``duplicates=False`` skips
  the hook (~13% of a whole open).

Integer exactness is the schema builder's job: ``json`` keeps integers exact (``int``) and gives
``1.0`` / ``1e3`` as ``float``, so a required integer is checked with ``type(v) is int``.

Problems: kind ``Malformed`` at ``manifest`` (offset: manifest offset + byte position of the
error) for BOM, invalid UTF-8, invalid JSON, NaN/Infinity, a top level that is not an object;
``Malformed`` at the string's manifest path for a lone surrogate; ``Unsupported`` at ``manifest``
for nesting deeper than 1024 levels (offset of the 1025th opening bracket).

:func:`locate` walks the raw bytes to the value at a manifest path (``manifest.graph.nodes[3]``),
skipping sibling values with the C scanner (or, for bytes that are not UTF-8, a forward-only
byte scanner): linear in the bytes before the value, ``None`` on anything unexpected. The reader uses it to give manifest-path problems a file offset; the viewer
uses it to highlight a record's bytes; keep one :class:`Locator` per manifest for many look-ups
(it caches each container's member spans, so later look-ups are nearly free).
"""

from __future__ import annotations

import json
import re
import sys
from json import decoder as _json_decoder
from json import scanner as _json_scanner

from .errors import FormatError, Kind

MAX_DEPTH = 1024
"""Deepest JSON nesting accepted (arrays and objects; the top-level object is level 1)."""

_BOM = b"\xef\xbb\xbf"


class _Constant(Exception):
    pass


def _reject_constant(name: str):
    raise _Constant(name)


class Parsed:
    """A parsed manifest: the top-level object and the objects that had duplicate keys."""

    __slots__ = ("value", "duplicates", "text")

    def __init__(self, value: dict, duplicates: list, text: str) -> None:
        self.value = value
        self.duplicates = duplicates
        """``[(dict, [key, ...]), ...]``: each object that repeated a key, and the repeated keys."""
        self.text = text


# ---------------------------------------------------------------------------------------------
# depth limit


def _frame_depth() -> int:
    f = sys._getframe(1)
    n = 0
    while f is not None:
        n += 1
        f = f.f_back
    return n


_EXTRA = 1
"""Recursion levels the scanner needs beyond frame depth + JSON depth (re-verified on each parse)."""
_PROBE_OK = "[" * MAX_DEPTH + "]" * MAX_DEPTH
_PROBE_DEEP = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)


def _scan_at(scan, text: str, idx: int):
    """Run the scanner; probes and the real parse go through here so they run at the same depth."""
    return scan(text, idx)


def _max_depth(text: str) -> tuple[int, int]:
    """(maximum nesting depth, character index of the first bracket past MAX_DEPTH or -1). Slow path."""
    depth = best = 0
    where = -1
    for m in _DEPTH_TOKENS.finditer(text):
        c = m.group()
        if c in "[{":
            depth += 1
            if depth > best:
                best = depth
                if depth > MAX_DEPTH and where < 0:
                    where = m.start()
        elif c in "]}":
            depth -= 1
    return best, where


_DEPTH_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)


# ---------------------------------------------------------------------------------------------
# parse


def _byte_pos(text: str, char_pos: int) -> int:
    return len(text[:char_pos].encode("utf-8", "surrogatepass"))


def _err(kind: Kind, where: str, offset: int | None, message: str) -> FormatError:
    return FormatError(kind, where, offset, message)


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_CONSTANT_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?Infinity|NaN)', re.S)


def parse(data: bytes, base: int = 64, duplicates: bool = True) -> Parsed:
    """Parse manifest bytes (raises :class:`FormatError`). ``base`` is the manifest's file offset.

    ``duplicates=False`` skips duplicate-key detection (``Parsed.duplicates`` stays empty): the
    ``object_pairs_hook`` it needs costs ~13% of a whole open (measured with callgrind).
    """
    global _EXTRA
    if data.startswith(_BOM):
        raise _err(Kind.MALFORMED, "manifest", base, "the manifest starts with a byte-order mark")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise _err(Kind.MALFORMED, "manifest", base + e.start, f"invalid UTF-8: {e.reason}") from e

    dups: list = []

    def pairs_hook(pairs):
        d = dict(pairs)
        if len(d) != len(pairs):
            seen: set = set()
            dup = [k for k, _ in pairs if k in seen or seen.add(k)]
            dups.append((d, dup))
        return d

    ctx = _json_decoder.JSONDecoder(object_pairs_hook=pairs_hook if duplicates else None, parse_constant=_reject_constant)
    scan = _json_scanner.make_scanner(ctx)
    ws = _json_decoder.WHITESPACE
    start = ws.match(text, 0).end()
    old = sys.getrecursionlimit()
    try:
        try:
            # Find the limit at which _scan_at, called from this very frame, accepts depth 1024 and
            # rejects 1025. The frame count only estimates CPython's recursion counter (C calls
            # in the stack count too), so probe two tiny documents, starting from the last answer.
            depth0 = _frame_depth()
            extra = _EXTRA
            exact = False
            tried: set = set()
            while extra not in tried and len(tried) < 64:
                tried.add(extra)
                try:
                    sys.setrecursionlimit(depth0 + MAX_DEPTH + extra)
                except RecursionError:  # pragma: no cover - below the current depth
                    extra += 1
                    continue
                try:
                    _scan_at(scan, _PROBE_OK, 0)
                except RecursionError:
                    extra += 1
                    continue
                try:
                    _scan_at(scan, _PROBE_DEEP, 0)
                except RecursionError:
                    _EXTRA = extra
                    exact = True
                    break
                extra -= 1
            if not exact:  # pragma: no cover - not CPython 3.11's scanner: count the depth ourselves
                sys.setrecursionlimit(max(old, _frame_depth() + 4 * MAX_DEPTH))
                depth, where = _max_depth(text)
                if depth > MAX_DEPTH:
                    raise RecursionError
            value, end = _scan_at(scan, text, start)
        finally:
            sys.setrecursionlimit(old)
    except StopIteration as e:
        raise _err(Kind.MALFORMED, "manifest", base + _byte_pos(text, e.value), "invalid JSON: expecting a value") from None
    except json.JSONDecodeError as e:
        raise _err(Kind.MALFORMED, "manifest", base + _byte_pos(text, e.pos), f"invalid JSON: {e.msg}") from None
    except RecursionError:
        _depth, where = _max_depth(text)
        off = base + _byte_pos(text, where) if where >= 0 else base
        raise _err(Kind.UNSUPPORTED, "manifest", off, f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except _Constant as e:
        m = next((m for m in _CONSTANT_TOKENS.finditer(text) if m.group(1)), None)
        off = base + _byte_pos(text, m.start(1)) if m else base
        raise _err(Kind.MALFORMED, "manifest", off, f"{e.args[0]} is not JSON") from None
    except ValueError as e:  # e.g. an integer literal beyond sys.get_int_max_str_digits()
        raise _err(Kind.MALFORMED, "manifest", base, f"invalid JSON: {e}") from None
    end = ws.match(text, end).end()
    if end != len(text):
        raise _err(Kind.MALFORMED, "manifest", base + _byte_pos(text, end), "invalid JSON: extra data after the top-level value")
    if type(value) is not dict:
        raise _err(Kind.MALFORMED, "manifest", base + _byte_pos(text, start), "the manifest is not a JSON object")
    if _SURROGATE_ESCAPE.search(data):
        bad = _find_surrogate(value, "manifest")
        if bad is not None:
            where, what = bad
            span = locate(data, where)
            raise _err(Kind.MALFORMED, where, base + span[0] if span else base, f"lone surrogate in a {what}")
    return Parsed(value, dups, text)


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
# paths

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def join(where: str, key: str) -> str:
    """``where.key``, or ``where["k.e y"]`` when the key is not an identifier."""
    if _IDENT.match(key):
        return f"{where}.{key}"
    return f"{where}[{json.dumps(key, ensure_ascii=True)}]"


_STEP = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("[^"\\]*(?:\\.[^"\\]*)*")\]')


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

_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = re.compile(rb"[^ \t\n\r,\]}\[{:\"]+")
_NEST = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.S)


def _skip_value(data: bytes, pos: int) -> int:
    """End of the JSON value starting at ``pos`` (after leading whitespace), or -1."""
    if pos >= len(data):
        return -1
    c = data[pos]
    if c == 0x22:  # "
        m = _STRING.match(data, pos)
        return m.end() if m else -1
    if c in (0x5B, 0x7B):  # [ {
        depth = 0
        for m in _NEST.finditer(data, pos):
            tok = m.group()
            if tok in (b"[", b"{"):
                depth += 1
            elif tok in (b"]", b"}"):
                depth -= 1
                if depth == 0:
                    return m.end()
        return -1
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


class Locator:
    """Finds values by manifest path in one manifest, caching each array's and object's members.

    Valid UTF-8 JSON is walked with the C scanner (siblings are skipped at parser speed, each
    container's member spans computed once); anything else with a forward-only byte scanner.
    """

    def __init__(self, data: bytes) -> None:
        self.data = data
        try:
            self.text: str | None = data.decode("utf-8")
        except UnicodeDecodeError:
            self.text = None
        self.ascii = self.text is not None and self.text.isascii()
        self._members: dict[int, object] = {}
        self._blocks: list[int] | None = None
        self._scan = _json_scanner.make_scanner(_json_decoder.JSONDecoder())

    def nearest(self, where: str) -> tuple[int, int, str] | None:
        steps = split_path(where)
        if steps is None:
            return None
        if self.text is not None:
            old = sys.getrecursionlimit()
            try:
                sys.setrecursionlimit(max(old, _frame_depth() + 2 * MAX_DEPTH + 64))
                found = self._nearest_text(steps)
            except (ValueError, StopIteration, RecursionError):
                self.text = None  # not JSON enough for the scanner: walk the bytes from now on
                found = False
            finally:
                sys.setrecursionlimit(old)
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
        span = (pos, -1)
        path = "manifest"
        for step in steps:
            nxt = self._child(span[0], step)
            if nxt is None:
                break
            span = nxt
            path = f"{path}[{step}]" if isinstance(step, int) else join(path, step)
        if span[1] < 0:
            span = (span[0], self._scan(text, span[0])[1])
        return span[0], span[1], path

    def _child(self, start: int, step):
        members = self._members.get(start)
        if members is None:
            members = self._collect(start)
            self._members[start] = members
        if isinstance(step, int):
            return members[step] if type(members) is list and step < len(members) else None
        return members.get(step) if type(members) is dict else None

    def _collect(self, start: int):
        """Member spans of the array (list) or object (dict, last duplicate wins) at ``start``."""
        text, scan = self.text, self._scan
        ws = _json_decoder.WHITESPACE.match
        n = len(text)
        c = text[start]
        if c == "[":
            out: list = []
            pos = ws(text, start + 1).end()
            if text.startswith("]", pos):
                return out
            while pos < n:
                _v, end = scan(text, pos)
                out.append((pos, end))
                pos = ws(text, end).end()
                if not text.startswith(",", pos):
                    break
                pos = ws(text, pos + 1).end()
            return out
        if c != "{":
            return None
        obj: dict = {}
        pos = ws(text, start + 1).end()
        if text.startswith("}", pos):
            return obj
        while pos < n and text.startswith('"', pos):
            key, pos = _json_decoder.scanstring(text, pos + 1)
            pos = ws(text, pos).end()
            if not text.startswith(":", pos):
                break
            pos = ws(text, pos + 1).end()
            _v, end = scan(text, pos)
            obj[key] = (pos, end)
            pos = ws(text, end).end()
            if not text.startswith(",", pos):
                break
            pos = ws(text, pos + 1).end()
        return obj


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
