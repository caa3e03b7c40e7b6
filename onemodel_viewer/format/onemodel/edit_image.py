"""The ``--patch`` edits and the in-memory image they apply to (shared by ``--patch`` and the viewer's edit mode).

An EDIT (:func:`parse_edit`; ``str(edit)`` is its text) is one of::

    header.<field>=<integer>         header.flags=1, header.data_length=0x10 (header.magic="ONEMODEX")
    <manifest path>=<JSON value>     manifest.graph.nodes[3].inputs[1]="x"   (null deletes; (null) writes null)
    bytes@<offset>=<hex>             bytes@0x40=7b22 (raw bytes at a file offset)
    truncate=<length>                cut the file to <length> bytes (or extend it with zeros)

:class:`Image` is a file as header + manifest + padding + data region, edited in memory; the data
region stays in the source file (read only by :meth:`Image.write`, or through
:class:`~.overlay.OverlayStorage`). The rules of each edit (what a manifest edit fixes up in the
header, what ``raw`` keeps) are in :mod:`onemodel_viewer.commands.patch`'s docstring.

Imports neither rich nor textual.
"""

from __future__ import annotations

import json
import os
import struct
from typing import NamedTuple

from . import manifest as _manifest
from ..document import HEADER_FIELDS, HEADER_SIZE
from ..errors import FormatError, Kind
from .header import MAGIC
from .json_scan import lazy_orjson
from .manifest_locate import Locator
from ..manifest_path import join, split_path
from ..output import atomic_output, write_all

__all__ = ["CHUNK", "Edit", "EditError", "Image", "copy_range", "parse_edit", "write_all"]

CHUNK = 8 << 20
_FIELDS = {name: (off, size) for name, off, size in HEADER_FIELDS}
FIELD_NAMES = tuple(_FIELDS)
"""The header fields an edit can name, in file order."""


class EditError(ValueError):
    """An edit that does not parse (usage) or cannot be applied to this file."""


class Edit(NamedTuple):
    """One parsed edit; ``str(edit)`` is its ``--patch`` syntax."""

    op: str
    """``header``, ``manifest``, ``bytes`` or ``truncate``."""
    target: str | int
    """Header field name, manifest path, or file offset / length."""
    value: bytes | int | None
    """The integer, the JSON text's bytes (None: delete), or the raw bytes."""
    text: str
    """The edit as written."""

    def __str__(self) -> str:
        return self.text


def _int(text: str, what: str) -> int:
    try:
        v = int(text.replace("_", ""), 0)
    except ValueError:
        raise EditError(f"{what}: {text!r} is not an integer") from None
    if v < 0:
        raise EditError(f"{what}: {v} is negative")
    return v


def parse_edit(text: str) -> Edit:
    """Parse one EDIT (see the module docstring); raises :class:`EditError`."""
    if text.startswith("bytes@"):
        at, sep, hexa = text[6:].partition("=")
        if not sep:
            raise EditError(f"{text!r}: expected bytes@<offset>=<hex>")
        try:
            data = bytes.fromhex(hexa)
        except ValueError:
            raise EditError(f"{text!r}: {hexa!r} is not hex") from None
        return Edit("bytes", _int(at, "bytes@ offset"), data, text)
    if text.startswith("truncate="):
        return Edit("truncate", _int(text[9:], "truncate"), None, text)
    if text.startswith("header."):
        name, sep, value = text[7:].partition("=")
        if not sep or name not in _FIELDS:
            raise EditError(f"{text!r}: expected header.<field>=<integer>, field one of {', '.join(_FIELDS)}")
        if name == "magic":
            try:
                s = json.loads(value)
                raw = s.encode("latin-1") if isinstance(s, str) else None
            except (ValueError, UnicodeEncodeError):
                raw = None
            if raw is None or len(raw) != 8:
                raise EditError(f'{text!r}: header.magic takes a JSON string of 8 characters ("ONEMODEL")')
            return Edit("header", name, raw, text)
        v = _int(value, f"header.{name}")
        if v >= 1 << (8 * _FIELDS[name][1]):
            raise EditError(f"{text!r}: {v} does not fit in the {_FIELDS[name][1]}-byte field")
        return Edit("header", name, v, text)
    if text.startswith(("manifest.", "manifest[", "manifest=")):
        # the path ends at the first '=' after which the prefix parses as a path ("=" may sit in a quoted key)
        pos = text.find("=")
        while pos != -1 and split_path(text[:pos]) is None:
            pos = text.find("=", pos + 1)
        if pos == -1:
            raise EditError(f"{text!r}: expected <manifest path>=<JSON value>")
        path, value = text[:pos], text[pos + 1:].strip()
        if value == "null":
            return Edit("manifest", path, None, text)
        if value.startswith("(") and value.endswith(")"):
            value = value[1:-1].strip()
        try:
            json.loads(value)
        except ValueError as e:
            raise EditError(f"{text!r}: the value is not JSON ({e})") from None
        return Edit("manifest", path, value.encode("utf-8", "surrogateescape"), text)
    raise EditError(f"{text!r}: expected header.<field>=N, manifest...=<JSON>, bytes@<offset>=<hex> or truncate=N")


def _align(n: int) -> int:
    return (n + 63) // 64 * 64


class Image:
    """A file as header + manifest + padding + data region, edited in memory; the data region is read
    from the source file only when written (:meth:`write`).

    ``head`` is the first ``min(64, size)`` bytes. ``manifest`` is None when the header does not
    locate it (not the magic, or a manifest past the end): then everything after the head is the
    tail and only ``header.``/``bytes@``/``truncate`` edits apply.
    """

    def __init__(self, path: str) -> None:
        self.src = path
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            self.head = bytearray(f.read(min(HEADER_SIZE, size)))
            self.manifest: bytearray | None = None
            self.pad = bytearray()
            start = len(self.head)
            if len(self.head) == HEADER_SIZE and self.head[:8] == MAGIC:
                mlen = struct.unpack_from("<Q", self.head, 24)[0]
                if HEADER_SIZE + mlen <= size:
                    f.seek(HEADER_SIZE)
                    self.manifest = bytearray(f.read(mlen))
                    end = HEADER_SIZE + mlen
                    do = struct.unpack_from("<Q", self.head, 32)[0]
                    start = do if end <= do <= size else min(_align(end), size)
                    self.pad = bytearray(f.read(start - end))
        self.tail_start = start
        self.tail_len = size - start
        """Bytes of the source, from ``tail_start``, that follow the padding (the data region)."""
        self.tail_total = self.tail_len
        self.patches: list[tuple[int, bytes]] = []
        """(offset in the tail, bytes) written over the tail, in order; past ``tail_len``: zeros first."""
        self.facts = _ManifestFacts()
        """What is known of ``manifest``'s bytes: shared with copies until an edit changes them (an undo
        goes back to an image whose copy learnt them)."""

    def copy(self) -> "Image":
        """An independent copy (the edits of one do not change the other; the source is shared)."""
        new = object.__new__(Image)
        new.__dict__.update(self.__dict__)
        new.head, new.pad = bytearray(self.head), bytearray(self.pad)
        new.manifest = None if self.manifest is None else bytearray(self.manifest)
        new.patches = list(self.patches)
        return new

    # -- layout -------------------------------------------------------------------------------

    def regions(self) -> list[tuple[int, int, str]]:
        """(start, end, name) of head, manifest, pad and tail in the image as it stands."""
        out, pos = [], 0
        for name, n in (("head", len(self.head)), ("manifest", len(self.manifest or b"")),
                        ("pad", len(self.pad)), ("tail", self.tail_total)):
            out.append((pos, pos + n, name))
            pos += n
        return out

    @property
    def size(self) -> int:
        return self.regions()[-1][1]

    def _field(self, name: str) -> int:
        off, size = _FIELDS[name]
        return int.from_bytes(self.head[off:off + size], "little")

    def _set_field(self, name: str, value: int) -> None:
        off, size = _FIELDS[name]
        if 0 <= value < 1 << (8 * size):
            self.head[off:off + size] = value.to_bytes(size, "little")

    # -- edits --------------------------------------------------------------------------------

    def apply(self, edit: Edit, raw: bool = False) -> None:
        """Apply one edit; raises :class:`EditError` when it cannot be applied to this file."""
        if edit.op != "manifest":
            self.facts = _ManifestFacts()  # the manifest's bytes may have changed (bytes@, truncate, its length)
        if edit.op == "header":
            if len(self.head) < HEADER_SIZE:
                raise EditError(f"{edit}: the file is shorter than the 64-byte header (use bytes@)")
            off, size = _FIELDS[edit.target]
            value = edit.value if isinstance(edit.value, bytes) else int(edit.value).to_bytes(size, "little")
            self.head[off:off + size] = value
        elif edit.op == "bytes":
            self._write_bytes(int(edit.target), edit.value)
        elif edit.op == "truncate":
            self._truncate(int(edit.target))
        else:
            self._manifest_edit(edit, raw)

    def _write_bytes(self, at: int, data: bytes) -> None:
        end = at + len(data)
        if end > self.size:
            self._truncate(end)
        for start, stop, name in self.regions():
            lo, hi = max(at, start), min(end, stop)
            if lo >= hi:
                continue
            chunk = data[lo - at:hi - at]
            if name == "tail":
                self.patches.append((lo - start, chunk))
            else:
                buf = {"head": self.head, "manifest": self.manifest, "pad": self.pad}[name]
                buf[lo - start:hi - start] = chunk

    def _truncate(self, n: int) -> None:
        size = self.size
        if n >= size:
            self.tail_total += n - size
            return
        cut = size - n
        take = min(cut, self.tail_total)
        self.tail_total -= take
        self.tail_len = min(self.tail_len, self.tail_total)
        self.patches = [(o, b[:max(0, self.tail_total - o)]) for o, b in self.patches if o < self.tail_total]
        cut -= take
        for buf in (self.pad, self.manifest, self.head):
            if cut and buf is not None:
                take = min(cut, len(buf))
                del buf[len(buf) - take:]
                cut -= take

    def _manifest_edit(self, edit: Edit, raw: bool) -> None:
        if self.manifest is None:
            raise EditError(f"{edit}: the header does not locate a manifest in this file (use bytes@)")
        steps = split_path(edit.target)
        if not steps:
            raise EditError(f"{edit}: name a value inside the manifest (manifest.graph...), not the whole manifest")
        data = bytes(self.manifest)
        parent = "manifest"
        for s in steps[:-1]:
            parent = f"{parent}[{s}]" if isinstance(s, int) else join(parent, s)
        # one walk for the parent and the value (the second look-up continues the first); with no
        # repeated key it stops at each key (the middle node of 10,000: ~170 -> ~50 ms with the proof, ~25 after)
        unique = self._unique_keys(data)
        finder = Locator(data, unique_keys=unique)
        pspan = finder.span(parent)
        if pspan is None:
            what = "the manifest is not a JSON object this path can follow" if parent == "manifest" else f"{parent} is not in the manifest"
            raise EditError(f"{edit}: {what}")
        ps, pe = pspan
        opener = data[ps:ps + 1]
        last = steps[-1]
        if (opener == b"[") != isinstance(last, int) or opener not in (b"[", b"{"):
            raise EditError(f"{edit}: {parent} is not {'an array' if isinstance(last, int) else 'an object'}")
        span = finder.span(edit.target)
        value = edit.value
        if span is None:
            if value is None:
                raise EditError(f"{edit}: {edit.target} is not in the manifest (nothing to delete)")
            if isinstance(last, int) and last != _count(data, ps, pe):
                raise EditError(f"{edit}: {edit.target} is past the end of {parent} (index == length appends)")
            member = value if isinstance(last, int) else json.dumps(last).encode() + b":" + value
            inner = data[ps + 1:pe - 1].strip()
            new = data[:pe - 1] + (b"," if inner else b"") + member + data[pe - 1:]
        elif value is None:
            s, e = span
            if not isinstance(last, int):
                s = _key_start(data, s)
            before = _skip_ws_back(data, s)
            if data[before - 1:before] == b",":
                s = before - 1
            else:
                after = _skip_ws(data, e)
                if data[after:after + 1] == b",":
                    e = after + 1
            new = data[:s] + data[e:]
        else:
            s, e = span
            new = data[:s] + value + data[e:]
        self._set_manifest(bytearray(new), raw)
        # a new key is one the object did not have, a replaced value keeps its key: only the value can repeat one
        still = unique and (value is None or _manifest.keys_unique(value))
        before = self.facts.value if still and not raw else None
        self.facts = _ManifestFacts(True if still else None, None if before is None else _spliced(before, steps, value))

    def _unique_keys(self, data: bytes) -> bool:
        """Whether no object of the manifest ``data`` repeats a key (parsed once, then kept through edits)."""
        facts = self.facts
        if facts.keys_unique is None:
            try:
                parsed = _manifest.parse(data, HEADER_SIZE)
            except (FormatError, ValueError, RecursionError):
                facts.keys_unique = False
            else:
                facts.keys_unique = parsed.checked_duplicates and not parsed.duplicates
        return facts.keys_unique

    def _set_manifest(self, new: bytearray, raw: bool) -> None:
        old_len = len(self.manifest)
        old_start = HEADER_SIZE + old_len + len(self.pad)
        delta = len(new) - old_len
        shift = _align(HEADER_SIZE + len(new)) - _align(HEADER_SIZE + old_len)
        new_start = old_start + shift
        if new_start < HEADER_SIZE + len(new):
            new_start = _align(HEADER_SIZE + len(new))
            shift = new_start - old_start
        n = new_start - HEADER_SIZE - len(new)
        old = self.pad  # keep the bytes next to the data region (a nonzero-padding finding survives)
        self.pad = old[len(old) - n:] if n <= len(old) else bytearray(n - len(old)) + old
        self.manifest = new
        if not raw:
            self._set_field("manifest_length", self._field("manifest_length") + delta)
            self._set_field("data_offset", self._field("data_offset") + shift)
            self._set_field("file_length", self._field("file_length") + shift)

    def manifest_parse(self) -> dict | None:
        """The parse of the manifest (its top-level object) as a reader of this image would make it: known
        when no key repeats, a re-read of these bytes parsed them (:meth:`learn_parse`) or an edit spliced its
        value into such a parse, and the header still locates exactly these bytes. Else None."""
        if self.facts.value is None or self.manifest is None or len(self.head) < HEADER_SIZE:
            return None
        if self._field("manifest_offset") != HEADER_SIZE or self._field("manifest_length") != len(self.manifest):
            return None
        return self.facts.value

    def learn_parse(self, value: dict, span: tuple[int, int] | None, keys_unique: bool | None) -> None:
        """A re-read parsed the manifest span ``span`` (offset, length) of this image to ``value`` and found
        whether a key repeats (``keys_unique``; None: it did not look). When that span is exactly the manifest's
        bytes, both are kept for the next edit (the parse only while no key repeats)."""
        if self.manifest is None or span != (HEADER_SIZE, len(self.manifest)) or len(self.manifest) > SPLICE_BYTES:
            return
        if keys_unique is not None:
            self.facts.keys_unique = keys_unique
        if self.facts.keys_unique is True:
            self.facts.value = value

    # -- output -------------------------------------------------------------------------------

    def bytes_without_tail(self) -> bytes:
        return bytes(self.head) + bytes(self.manifest or b"") + bytes(self.pad)

    def write(self, dst: str) -> None:
        """Write the image to ``dst`` atomically (temporary file, fsync, rename)."""
        with open(self.src, "rb") as src, atomic_output(dst) as out:
            front = self.bytes_without_tail()
            write_all(out, front)
            copy_range(src.fileno(), out, self.tail_start, self.tail_len, len(front))
            if self.tail_total > self.tail_len:
                out.seek(len(front) + self.tail_len)
                left = self.tail_total - self.tail_len
                while left:
                    write_all(out, bytes(min(left, CHUNK)))
                    left -= min(left, CHUNK)
            for off, chunk in self.patches:
                out.seek(len(front) + off)
                write_all(out, chunk)


def _count(data: bytes, ps: int, pe: int) -> int:
    """Number of elements of the JSON array at data[ps:pe]."""
    try:
        return len(json.loads(data[ps:pe]))
    except (ValueError, RecursionError):
        return -1


def _skip_ws(data: bytes, i: int) -> int:
    while i < len(data) and data[i] in b" \t\r\n":
        i += 1
    return i


def _skip_ws_back(data: bytes, i: int) -> int:
    while i > 0 and data[i - 1] in b" \t\r\n":
        i -= 1
    return i


def _key_start(data: bytes, value_start: int) -> int:
    """Start of the ``"key"`` of the object member whose value starts at ``value_start``."""
    i = _skip_ws_back(data, value_start)
    if data[i - 1:i] != b":":
        raise EditError("cannot find the member's key")
    i = _skip_ws_back(data, i - 1)
    if data[i - 1:i] != b'"':
        raise EditError("cannot find the member's key")
    j = i - 2
    while j >= 0:
        if data[j] == 0x22:  # an unescaped quote: an even number of backslashes before it
            k = j
            while k > 0 and data[k - 1] == 0x5C:
                k -= 1
            if (j - k) % 2 == 0:
                return j
        j -= 1
    raise EditError("cannot find the member's key")


class _ManifestFacts:
    """What is known of one manifest's bytes (an :class:`Image` and its copies share it until one edits them)."""

    __slots__ = ("keys_unique", "value")

    def __init__(self, keys_unique: bool | None = None, value: dict | None = None) -> None:
        self.keys_unique = keys_unique
        """Whether no object repeats a key (None: not known yet)."""
        self.value = value
        """The bytes parsed (the top-level object), once a re-read parsed them or an edit spliced its value into the
        parse of the bytes before it (None: not known). Kept only while no key repeats (then the parse is the bytes)."""


SPLICE_BYTES = 64 << 20
"""Manifests up to this many bytes keep their parse for the next edit (it takes ~5x their bytes; above, a
manifest of 10^6 nodes is mostly node dicts its document keeps anyway, but large JSON arrays are not)."""
_DELETE = object()
_SPLICE_DEPTH = _manifest.MAX_DEPTH // 2
"""Deepest path + value a splice takes: the parse of the whole edited manifest refuses more than
``MAX_DEPTH`` levels, which a splice does not see (a deeper edit is re-read in full)."""


def _spliced(top: dict, steps: list, value: bytes | None) -> dict | None:
    """``top``, the parse of a manifest in which no key repeats, with the edit of ``steps`` (a manifest path's
    steps) to the JSON ``value`` made (None: the member deleted; a new key, or the index one past the end:
    added), as parsing the edited bytes gives it: only the containers on the path are copied. None when it
    may not be that parse: orjson refuses the value (the reader then takes the standard library's rules), it
    nests deep, or the path does not lead through ``top`` as it led through the bytes."""
    orjson = lazy_orjson()  # what the manifest parse uses

    new = _DELETE
    if value is not None:
        try:
            new = orjson.loads(value)
        except orjson.JSONDecodeError:
            return None
        if len(steps) + _depth(new, _SPLICE_DEPTH) > _SPLICE_DEPTH:
            return None
    root = dict(top)
    at = root
    for step in steps[:-1]:
        child = _child(at, step)
        if type(child) is dict:
            child = dict(child)
        elif type(child) is list:
            child = list(child)
        else:
            return None
        at[step] = child
        at = child
    last = steps[-1]
    if type(at) is dict and type(last) is str:
        if new is _DELETE:
            at.pop(last, None)
        else:
            at[last] = new
    elif type(at) is list and type(last) is int and 0 <= last <= len(at):
        if new is _DELETE:
            if last < len(at):
                del at[last]
        elif last == len(at):
            at.append(new)
        else:
            at[last] = new
    else:
        return None
    return root


def _child(container, step):
    if type(container) is dict and type(step) is str:
        return container.get(step)
    if type(container) is list and type(step) is int and 0 <= step < len(container):
        return container[step]
    return None


def _depth(value, cap: int) -> int:
    """How many arrays and objects nest in ``value`` (0 for a scalar), counted up to ``cap`` + 1."""
    deepest, level = 0, [(value, 1)]
    while level:
        v, d = level.pop()
        if type(v) is dict:
            v = list(v.values())
        elif type(v) is not list:
            continue
        deepest = max(deepest, d)
        if d > cap:
            break
        level.extend((x, d + 1) for x in v)
    return deepest


def copy_range(src_fd: int, out, offset: int, length: int, dst_pos: int) -> None:
    """Copy ``length`` bytes of ``src_fd`` at ``offset`` to ``out`` at ``dst_pos`` in bounded memory."""
    done, cfr = 0, hasattr(os, "copy_file_range")
    while done < length:
        n = min(CHUNK, length - done)
        if cfr:
            try:
                got = os.copy_file_range(src_fd, out.fileno(), n, offset + done, dst_pos + done)
            except OSError:
                cfr = False
                continue
        else:
            chunk = os.pread(src_fd, n, offset + done)
            out.seek(dst_pos + done)
            write_all(out, chunk)
            got = len(chunk)
        if got == 0:
            raise FormatError(Kind.IO, "file", offset + done, "the input file is shorter than when it was opened")
        done += got
