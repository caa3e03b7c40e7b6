"""Duplicate keys in manifest bytes: the cheap proofs that there are none, and the byte walk that finds them.

JSON's last value wins (as in orjson and every parser measured), and orjson keeps it silently, so
the manifest parser (:func:`.manifest.parse`, :func:`.manifest.with_duplicates`) asks here which of
its objects repeated a key. Cheapest proof first: the bytes are orjson's encoding of the value;
then the ``:`` orjson writes for the value against the manifest's own (:func:`duplicates`, or a
piece at a time for a background job: :func:`written_colons`, :func:`spelt_colons`); only when
that fails the bytes are walked (:func:`duplicate_objects`, linear, no recursion).
:func:`keys_unique` answers the same of any JSON value (an edit's).
"""

from __future__ import annotations

import json

from .json_scan import CHUNK as _CHUNK
from .json_scan import TOKEN as _TOKEN
from .json_scan import WS_B as _WS_B
from .json_scan import lazy_orjson as _orjson

__all__ = ["duplicate_objects", "duplicates", "keys_unique", "spelt_colons", "written_colons"]


def keys_unique(data) -> bool:
    """Whether ``data`` (bytes or a memoryview) is one JSON value of any type in which no object repeats
    a key (``"a"`` and ``"\\u0061"`` repeat); False when one does or when it does not parse by the standard
    library's rules (``NaN``, ``1e400``, a lone surrogate parse). The proofs of :func:`duplicates`, then the walk."""
    try:
        value = _orjson().loads(data)
    except _orjson().JSONDecodeError:  # what orjson refuses and the standard library may take
        try:
            json.loads(bytes(data))
        except (ValueError, RecursionError):
            return False
        start = _WS_B.match(data).end()
        return data[start] not in (0x7B, 0x5B) or not _duplicate_keys(data)
    return type(value) not in (dict, list) or not duplicates(data, value)[0]  # the walk wants a container


def duplicates(data, value: dict) -> tuple[list, bool]:
    """(``Parsed.duplicates``, ``Parsed.compact``) of valid JSON ``data`` whose parse is ``value``
    (:class:`.manifest.Parsed`: the objects of ``value`` that repeated a key, and whether ``data`` is
    exactly orjson's compact encoding of ``value``).

    Cheapest proof first: ``data`` is orjson's encoding of ``value`` (a memcmp; a repeated key would
    be missing from the encoding), as for every file this project's writer wrote. Then:
    orjson writes one ``:`` per key of ``value`` plus those inside its strings;
    ``data`` holds one per key it spells out plus those inside its strings (a ``\\u003a`` escape
    is a ``:`` too: counted, perhaps too many). A dropped duplicate loses its key (and maybe its
    value's keys and strings), so equal counts prove there was none (~3 ms for 2.3 MB). Else the
    byte walk, linear, no recursion.
    """
    try:
        encoded = _orjson().dumps(value)
    except _orjson().JSONEncodeError:  # deeper than orjson writes (255 levels)
        encoded = None
    if encoded is not None:
        if encoded == data:
            return [], True
        written = encoded.count(b":")
        del encoded
        if written == spelt_colons(data):
            return [], False
    return duplicate_objects(data, value), False


def spelt_colons(data, step=None) -> int | None:
    """The ``:`` of manifest bytes ``data``, a ``\\u003a`` escape counted as one; None when ``step()`` said stop."""
    spelt = _count(data, b":", step)
    escapes = None if spelt is None else _count(data, b"\\", step)
    if not escapes:
        return None if escapes is None else spelt
    for escaped in (b"\\u003a", b"\\u003A"):
        more = _count(data, escaped, step)
        if more is None:
            return None
        spelt += more
    return spelt


_PIECE = 2048
"""Array items :func:`written_colons` encodes in one call (2,048 plain nodes: ~0.5 ms)."""


def written_colons(value, step) -> int | None:
    """The ``:`` of orjson's encoding of ``value``, encoded a piece at a time (``step()`` asked after
    each; None when it said stop): objects reached through objects from the top key by key (one ``:``
    a key, plus those in the key), arrays :data:`_PIECE` items at a time, anything else whole."""
    dumps = _orjson().dumps
    total = 0
    stack = [value]
    while stack:
        v = stack.pop()
        if type(v) is dict:
            total += len(v) + sum(k.count(":") for k in v)
            for x in v.values():
                if type(x) is list:
                    stack.extend(x[i : i + _PIECE] for i in range(0, len(x), _PIECE))
                else:
                    stack.append(x)
            continue
        try:
            total += dumps(v).count(b":")
        except _orjson().JSONEncodeError:  # deeper than orjson writes (255 levels)
            return -1  # a count no manifest spells: the byte walk decides
        if step():
            return None
    return total


def duplicate_objects(data, value: dict) -> list:
    """``Parsed.duplicates`` of valid JSON ``data`` whose parse is ``value``: the byte walk."""
    out = []
    for steps, keys in _duplicate_keys(data):
        d = value
        for s in steps:
            d = d[s]
        if type(d) is dict:
            out.append((d, keys))
    return out


def _count(data, needle: bytes, step=None) -> int | None:
    """``data.count(needle)`` for bytes or a memoryview (which has no ``count``), 1 MiB at a time;
    with ``step`` (asked between chunks: a background job's), bytes too; None when ``step()`` said stop."""
    if isinstance(data, bytes) and step is None:
        return data.count(needle)
    n, k, total = len(data), len(needle) - 1, 0
    with memoryview(data) as mv:
        for pos in range(0, n, _CHUNK):
            with mv[pos : min(n, pos + _CHUNK + k)] as chunk:
                total += bytes(chunk).count(needle)
            if step is not None and step():
                return None
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
                t = json.loads(t).encode("utf-8", "surrogatepass") if 0x5C in t else t[1:-1]  # 0x5C: \
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
            out.append((steps, [k.decode("utf-8", "surrogatepass") for k in keys]))
        if children:
            items = children.items() if is_object else children
            for step, child in reversed(list(items)):
                todo.append((steps + [step.decode("utf-8", "surrogatepass") if is_object else step], child))
    return out
