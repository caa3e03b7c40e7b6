"""Finding a value's bytes in the manifest by manifest path (``manifest.graph.nodes[3]``).

One walker, :class:`Locator`, answers every look-up: it goes down the path one container at a
time, enumerating members only as far as each step needs, and remembers what it walked. Valid
UTF-8 JSON is walked as text with the standard library's C scanner; bytes that are not UTF-8, or
not JSON enough for the scanner, are walked as bytes by forward-only regexes (the same member
enumeration, other primitives). :func:`locate` and :func:`locate_nearest` are one-look-up
shortcuts. Linear in the bytes before the value, ``None`` on anything unexpected. The reader uses
it to give manifest-path problems a file offset; the viewer uses it to highlight a record's bytes.
:meth:`Locator.rebased` carries what one locator walked over to an edited copy of its manifest.
"""

from __future__ import annotations

import json
import re
import time
from array import array as _array
from bisect import bisect_left
from json import decoder as _json_decoder
from json import scanner as _json_scanner
from typing import Callable

from .json_scan import LazyRe, container_end
from ..manifest_path import join, split_path

__all__ = ["REBASE_SCAN", "Locator", "LookupCancelled", "locate", "locate_nearest", "nearest_bytes"]

_WS = LazyRe(rb"[ \t\n\r]*")
_STRING = LazyRe(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_SCALAR = LazyRe(rb"[^ \t\n\r,\]}\[{:\"]+")


def _skip_value(data: bytes, pos: int) -> int:
    """End of the JSON value starting at byte ``pos`` (after leading whitespace), or -1."""
    if pos >= len(data):
        return -1
    c = data[pos]
    if c == 0x22:  # "
        m = _STRING.match(data, pos)
        return m.end() if m else -1
    if c in (0x5B, 0x7B):  # [ {
        return container_end(data, pos)
    m = _SCALAR.match(data, pos)
    return m.end() if m else -1


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
        """Text: where the next member starts (after the previous one's value has been skipped).
        Bytes: the end of the last member's value (members are measured as they are read)."""
        self.done = False

    def shifted(self, delta: int) -> "_Members":
        """A copy whose positions are ``delta`` later (0: a plain copy)."""
        new = _Members(self.array, self.pos + delta)
        new.spans = _array("q", self.spans) if not delta else _array("q", [s + delta for s in self.spans])
        new.keys = dict(self.keys)
        new.done = self.done
        return new


REBASE_SCAN = 1 << 16
"""Characters :meth:`Locator.rebased` reads again at most to find where the edited member of a container
now ends (the members after it are kept when it ends where it did, shifted): a bigger one is left to
the next walk that passes it."""


def _common_prefix(a: str, b: str) -> int:
    """Length of the longest common beginning of ``a`` and ``b`` (compared a block at a time, in C)."""
    n, i, block = min(len(a), len(b)), 0, 1 << 16
    while i < n:
        j = min(n, i + block)
        if a[i:j] != b[i:j]:
            while j - i > 1:  # a[:i] == b[:i], and they differ before j
                mid = (i + j) // 2
                if a[i:mid] == b[i:mid]:
                    i = mid
                else:
                    j = mid
            return i
        i = j
    return n


def _common_suffix(a: str, b: str, limit: int) -> int:
    """Length (at most ``limit``) of the longest common end of ``a`` and ``b``."""
    la, lb, i, block = len(a), len(b), 0, 1 << 16
    while i < limit:
        j = min(limit, i + block)
        if a[la - j:la - i] != b[lb - j:lb - i]:
            while j - i > 1:  # the last i characters agree, and they differ within the last j
                mid = (i + j) // 2
                if a[la - mid:la - i] == b[lb - mid:lb - i]:
                    i = mid
                else:
                    j = mid
            return i
        i = j
    return limit


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
    switches the walker to bytes for good (``text`` is then None): the same walk with a
    forward-only byte scanner, each member measured as it is read, a container cut short by
    bytes it cannot read ending there (the members before still count).
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

    def span(self, where: str, cancelled: Callable[[], bool] | None = None) -> tuple[int, int] | None:
        """:func:`locate` through this locator (what earlier look-ups walked is not walked again);
        ``cancelled`` as in :meth:`nearest`."""
        found = self.nearest(where, cancelled)
        if found is None:
            return None
        start, end, path = found
        steps = split_path(where)
        if path == "manifest" and steps:
            return None
        if path != where and split_path(path) != steps:
            return None
        return start, end

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
                found = self._walk(steps)
            except (ValueError, IndexError, StopIteration, RecursionError):
                self._to_bytes()  # not JSON enough: walk the bytes from now on
            else:
                if found is None:
                    return None
                s, e, path = found
                return self._byte(s), self._byte(e), path
        return self._walk(steps)

    def rebased(self, data: bytes, *, unique_keys: bool = False, background: bool = False) -> "Locator":
        """A locator for ``data``, another version of this one's manifest (an edit of it), that keeps
        what this one walked wherever the two are the same text.

        The two have a common beginning and a common end; between them is the change. What was
        walked (where a member's value starts, where a value ends) is kept if the text it was read
        from, and the character after it, lie in the common beginning; shifted if it lies in the
        common end. A container around the change keeps its members up to the one holding the change;
        when that member's value, read again (the innermost container's first, then each one's
        around it), ends where it did, shifted, everything after it is the same text: the members
        after it and the container's end are kept, shifted, too. The answers are the ones a new
        locator of ``data`` gives. Costs a comparison of the two texts (~1 ms for 2.3 MB) and the
        read of the changed member (at most :data:`REBASE_SCAN` characters per container); a manifest
        walked as bytes (not UTF-8 JSON) keeps nothing.
        """
        new = Locator(data, unique_keys=unique_keys, background=background)
        a, b = self.text, new.text
        if a is None or b is None:
            return new
        if a == b:
            new._members = {start: m.shifted(0) for start, m in self._members.items()}
            new._ends = dict(self._ends)
            return new
        p = _common_prefix(a, b)
        cut = len(a) - _common_suffix(a, b, min(len(a), len(b)) - p)  # the change: a[p:cut] became b[p:cut + delta]
        delta = len(b) - len(a)
        old_ends, ends = self._ends, new._ends
        for pos, end in old_ends.items():
            if end < p:
                ends[pos] = end
            elif pos >= cut:
                ends[pos + delta] = end + delta
        around = []
        for start, m in self._members.items():
            end = old_ends.get(start)
            if end is not None and end < p:
                new._members[start] = m.shifted(0)
            elif start >= cut:
                new._members[start + delta] = m.shifted(delta)
            elif start < p:
                around.append(start)
        for start in sorted(around, reverse=True):  # the innermost first: its end tells the one around it
            m = self._members[start]
            if not m.array and len(m.keys) != len(m.spans):
                continue  # a key seen twice: which one counts is found again
            kept = bisect_left(m.spans, p)  # the members whose value starts before the change
            if not kept:
                continue
            at = m.spans[kept - 1]
            nm = _Members(m.array, start + 1)
            if self._kept_end(new, at, m.array, cut, delta):
                nm.spans = _array("q", m.spans[:kept])
                nm.spans.extend([s + delta for s in m.spans[kept:]])
                nm.keys, nm.done = dict(m.keys), m.done
                if start in old_ends:
                    ends[start] = old_ends[start] + delta
            else:
                nm.spans = m.spans[:kept]
                nm.keys = {k: i for k, i in m.keys.items() if i < kept}
            nm.pos = nm.spans[-1]
            new._members[start] = nm
        return new

    def _kept_end(self, new: "Locator", at: int, element: bool, cut: int, delta: int) -> bool:
        """Whether the value at ``at`` (before the change) holds the change and ends in ``new`` where it
        ended here, shifted (then what follows it is the same text)."""
        old_end = self._ends.get(at)
        try:
            if old_end is None and self.text[at] not in "[{":  # a scalar (a container's end was cached if read)
                old_end = self._end(at, element)
            if old_end is None or old_end < cut:
                return False
            end = new._ends.get(at)  # the container inside, kept
            if end is None:
                if old_end - at > REBASE_SCAN:
                    return False
                end = new._end(at, element)
        except (ValueError, IndexError, StopIteration, RecursionError, LookupCancelled):
            return False
        return end == old_end + delta

    def _to_bytes(self) -> None:
        """Walk the bytes from now on (what the text walk cached counts characters: dropped)."""
        self.text = None
        self._members.clear()
        self._ends.clear()

    def _walk(self, steps: list) -> tuple[int, int, str] | None:
        """(start, end, path) in characters (text) or bytes of the deepest value on the way."""
        if self.text is not None:
            pos = _json_decoder.WHITESPACE.match(self.text, 0).end()
            if not self.text.startswith("{", pos):
                return None
        else:
            data = self.data
            pos = _WS.match(data, 0).end()
            if pos >= len(data) or data[pos] != 0x7B or self._end(pos) < 0:
                return None
        path = "manifest"
        for step in steps:
            nxt = self._child(pos, step)
            if nxt is None:
                break
            pos = nxt
            path = f"{path}[{step}]" if isinstance(step, int) else join(path, step)
        return pos, self._end(pos), path

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

    def _child(self, start: int, step) -> int | None:
        """Start of member ``step`` (index or key) of the container at ``start``, or None."""
        m = self._members.get(start)
        if m is None:
            c = self.text[start] if self.text is not None else chr(self.data[start])
            if c != "[" and c != "{":
                return None
            m = self._members[start] = _Members(c == "[", start + 1)
        if isinstance(step, int) != m.array:
            return None
        text_mode = self.text is not None
        read = self._next if text_mode else self._next_bytes
        if m.array:
            while len(m.spans) <= step and not m.done:
                read(m)
                if self.background and text_mode and not len(m.spans) & 0xFFF:
                    self._turn()
            return m.spans[step] if step < len(m.spans) else None
        if self.unique_keys and text_mode:
            k = m.keys.get(step)
            if k is not None:
                return m.spans[k]
            while not m.done:
                if read(m) == step:
                    return m.spans[-1]
            return None
        while not m.done:
            read(m)
        k = m.keys.get(step)
        return m.spans[k] if k is not None else None

    def _next(self, m: _Members):
        """Text: read one more member of ``m`` (skipping the previous member's value first); its key for objects."""
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

    def _next_bytes(self, m: _Members):
        """Bytes: read and measure one more member of ``m``; its key for objects. Whatever cannot be
        read (or a closing bracket) ends ``m`` there."""
        data, ws, n = self.data, _WS.match, len(self.data)
        if m.spans:  # after the previous value: ',' goes on, anything else ends the container
            pos = ws(data, m.pos).end()
            if pos >= n or data[pos] != 0x2C:
                m.done = True
                return None
            pos = ws(data, pos + 1).end()
        else:
            pos = ws(data, m.pos).end()
            if pos < n and data[pos] == (0x5D if m.array else 0x7D):
                m.done = True
                return None
        key = None
        if not m.array:
            k = _STRING.match(data, pos)
            try:
                key = json.loads(k.group()) if k is not None else None
            except ValueError:
                k = None
            if k is None:
                m.done = True
                return None
            pos = ws(data, k.end()).end()
            if pos >= n or data[pos] != 0x3A:  # :
                m.done = True
                return None
            pos = ws(data, pos + 1).end()
        end = _skip_value(data, pos)
        if end < 0:
            m.done = True
            return None
        if key is not None:
            m.keys[key] = len(m.spans)
        m.spans.append(pos)
        m.pos = end
        if end - pos >= 256 or data[pos] in (0x5B, 0x7B):
            self._ends[pos] = end
        return key

    def _turn(self) -> None:
        """Background mode, inside long scans: let the UI thread have the interpreter; stop if cancelled."""
        time.sleep(0)
        if self._cancelled is not None and self._cancelled():
            raise LookupCancelled()

    def _end(self, pos: int, element: bool = False) -> int:
        """End of the value starting at ``pos``. ``element``: an array element (expected small).

        Text: raises ValueError when the scanner cannot read it; bytes: -1. Cached for containers
        and long values only: a scalar is found again at once, and an entry for each of 10^6
        object members cost ~130 MB (a manifest repeating one key 10^6 times)."""
        end = self._ends.get(pos)
        if end is not None:
            return end
        text = self.text
        if text is None:
            end = _skip_value(self.data, pos)
            if end >= 0 and (self.data[pos] in (0x5B, 0x7B) or end - pos >= 256):
                self._ends[pos] = end
            return end
        c = text[pos]
        if (c == "[" or c == "{") and self.background and not element:
            end = container_end(text, pos, self._turn)
            if end < 0:
                raise ValueError("unbalanced brackets")
        elif c == '"':
            end = _json_decoder.scanstring(text, pos + 1)[1]
        else:
            end = self._scan(text, pos)[1]
        if c == "[" or c == "{" or end - pos >= 256:
            self._ends[pos] = end
        return end


def nearest_bytes(data: bytes, steps: list) -> tuple[int, int, str] | None:
    """:meth:`Locator.nearest` of the path ``steps`` by the byte walk alone (what the text walk falls back to)."""
    loc = Locator(data)
    loc._to_bytes()
    return loc._walk(steps)


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
    return Locator(data).span(where)
