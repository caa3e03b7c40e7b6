"""The 64-byte header (spec section 1.1): decode it and check every field against the real file length.

Nothing here allocates from a header value: every check is Python integer arithmetic on the
nine fields and the real file length, done before the manifest is read.

Decisions (CLARIFICATIONS.md plus the ones the spec leaves to us), in the order they are checked,
which is also the order in which diagnose mode lists them (strict raises the first):

==========================  ===========  ==========================================================
where                       kind         when
==========================  ===========  ==========================================================
``header.magic``            Malformed    the first 8 bytes are not ``ONEMODEL`` (also for a file
                                         shorter than 8 bytes)
``header``                  Malformed    the file has the magic but is shorter than 64 bytes
                                         (offset: 0)
``header.version``          Malformed    0
``header.version``          Unsupported  above 1
``header.flags``            Unsupported  not 0
``header.reserved``         Malformed    above 2^63-1
``header.reserved``         Unsupported  not 0
``header.file_length``      Malformed    above 2^63-1, or not the real file length
``header.manifest_offset``  Malformed    above 2^63-1, or not 64
``header.manifest_length``  Malformed    above 2^63-1, or 64 + it runs past the real file length
``header.manifest_length``  Unsupported  above 512 MiB (the manifest size limit)
``header.data_offset``      Malformed    above 2^63-1, not a multiple of 64, below
                                         64 + manifest_length, or past the real file length
``header.data_length``      Malformed    above 2^63-1, or not real file length - data_offset
==========================  ===========  ==========================================================

Version, flags and reserved come first: a later version may give the other fields another meaning.
The offset of each problem is the field's file offset.
"""

from __future__ import annotations

import struct
from typing import Callable

from ..document import HEADER_FIELDS, HEADER_SIZE, Header
from ..errors import Kind

MAGIC = b"ONEMODEL"
VERSION = 1
MANIFEST_OFFSET = 64
MAX_U63 = (1 << 63) - 1
MAX_MANIFEST = 512 << 20
"""Manifest size limit (the C# reader's): larger is Unsupported."""
ALIGN = 64
MAX_COUNT = 1 << 60
"""Element counts must stay below this (spec section 2.5)."""
MAX_TENSOR_BYTES = (1 << 31) - 1
"""Largest tensor this library reads or writes (spec section 2.5); larger is Unsupported."""

STRUCT = struct.Struct("<8sIIQQQQQQ")
"""The 64-byte header (section 1.1), field by field."""
_OFFSETS = {name: off for name, off, _size in HEADER_FIELDS}

Report = Callable[[Kind, str, "int | None", str], None]
"""``report(kind, where, offset, message)``: raises in strict mode, records in diagnose mode."""


def decode(first64: bytes) -> Header:
    """The nine fields of a 64-byte header as stored (no validation)."""
    return Header(*STRUCT.unpack(first64[:HEADER_SIZE]))


def looks_like_magic(first8: bytes) -> bool:
    """True when ``first8`` is the magic or close to it (a damaged OneModel file, not an ONNX file).

    Close means: equal ignoring ASCII case, or at most two of the eight bytes differ, or it is a
    non-empty prefix of the magic (a file cut short).
    """
    if not first8:
        return False
    if len(first8) < 8:
        return MAGIC.startswith(first8) or MAGIC.lower().startswith(first8.lower())
    head = first8[:8]
    if head.upper() == MAGIC:
        return True
    return sum(1 for a, b in zip(head, MAGIC) if a != b) <= 2


def align_up(n: int, align: int = ALIGN) -> int:
    return (n + align - 1) // align * align


class HeaderVerdict:
    """What the header checks allow the reader to do next."""

    __slots__ = ("header", "manifest_ok", "data_ok")

    def __init__(self, header: Header | None, manifest_ok: bool, data_ok: bool) -> None:
        self.header = header
        self.manifest_ok = manifest_ok
        """The manifest range [64, 64+manifest_length) is inside the file and under the size limit."""
        self.data_ok = data_ok
        """The data region [data_offset, file end) is consistent: tensors may be given storage."""


def check(first64: bytes, real_length: int, report: Report) -> HeaderVerdict:
    """Check the header against the real file length; report every problem found.

    ``first64`` holds the first ``min(64, real_length)`` bytes of the file.
    """
    if first64[:8] != MAGIC:
        head = first64[:8]
        report(Kind.MALFORMED, "header.magic", 0, f"the file does not start with {MAGIC.decode()!r}: it starts with "
               + (f"{head!r} ({head.hex(' ')})" if head else "nothing (it is empty)"))
        return HeaderVerdict(None, False, False)
    if real_length < HEADER_SIZE or len(first64) < HEADER_SIZE:
        report(Kind.MALFORMED, "header", 0, f"the file is {real_length} bytes, shorter than the 64-byte header")
        return HeaderVerdict(None, False, False)
    h = decode(first64)
    off = _OFFSETS
    manifest_ok = data_ok = True

    if h.version == 0:
        report(Kind.MALFORMED, "header.version", off["version"], "version 0 does not exist")
        manifest_ok = data_ok = False
    elif h.version > VERSION:
        report(Kind.UNSUPPORTED, "header.version", off["version"], f"format version {h.version} is newer than {VERSION}")
        manifest_ok = data_ok = False
    if h.flags != 0:
        report(Kind.UNSUPPORTED, "header.flags", off["flags"], f"flags {h.flags:#x} are not supported (must be 0)")
    if h.reserved > MAX_U63:
        report(Kind.MALFORMED, "header.reserved", off["reserved"], f"{h.reserved} exceeds 2^63-1")
    elif h.reserved != 0:
        report(Kind.UNSUPPORTED, "header.reserved", off["reserved"], f"reserved is {h.reserved:#x}, not 0")

    if h.file_length > MAX_U63:
        report(Kind.MALFORMED, "header.file_length", off["file_length"], f"{h.file_length} exceeds 2^63-1")
        data_ok = False
    elif h.file_length != real_length:
        how = "truncated" if h.file_length > real_length else "extended"
        report(
            Kind.MALFORMED, "header.file_length", off["file_length"],
            f"the header says {h.file_length} bytes but the file has {real_length} (file {how}?)",
        )
        data_ok = False

    if h.manifest_offset > MAX_U63:
        report(Kind.MALFORMED, "header.manifest_offset", off["manifest_offset"], f"{h.manifest_offset} exceeds 2^63-1")
        manifest_ok = data_ok = False
    elif h.manifest_offset != MANIFEST_OFFSET:
        report(Kind.MALFORMED, "header.manifest_offset", off["manifest_offset"], f"{h.manifest_offset}, must be 64")
        manifest_ok = data_ok = False

    mlen = h.manifest_length
    if mlen > MAX_U63:
        report(Kind.MALFORMED, "header.manifest_length", off["manifest_length"], f"{mlen} exceeds 2^63-1")
        manifest_ok = data_ok = False
    elif MANIFEST_OFFSET + mlen > real_length:
        report(
            Kind.MALFORMED, "header.manifest_length", off["manifest_length"],
            f"manifest of {mlen} bytes at 64 runs past the end of the {real_length}-byte file",
        )
        manifest_ok = data_ok = False
    elif mlen > MAX_MANIFEST:
        report(
            Kind.UNSUPPORTED, "header.manifest_length", off["manifest_length"],
            f"manifest of {mlen} bytes exceeds the {MAX_MANIFEST >> 20} MiB limit",
        )
        manifest_ok = False

    do = h.data_offset
    if do > MAX_U63:
        report(Kind.MALFORMED, "header.data_offset", off["data_offset"], f"{do} exceeds 2^63-1")
        data_ok = False
    elif do % ALIGN:
        report(Kind.MALFORMED, "header.data_offset", off["data_offset"], f"{do} is not a multiple of 64")
        data_ok = False
    elif mlen <= MAX_U63 and do < MANIFEST_OFFSET + mlen:
        report(
            Kind.MALFORMED, "header.data_offset", off["data_offset"],
            f"{do} is inside the manifest (which ends at {MANIFEST_OFFSET + mlen})",
        )
        data_ok = False
    elif do > real_length:
        report(Kind.MALFORMED, "header.data_offset", off["data_offset"], f"{do} is past the end of the file ({real_length})")
        data_ok = False

    dl = h.data_length
    if dl > MAX_U63:
        report(Kind.MALFORMED, "header.data_length", off["data_length"], f"{dl} exceeds 2^63-1")
        data_ok = False
    elif do <= real_length and dl != real_length - do:
        report(
            Kind.MALFORMED, "header.data_length", off["data_length"],
            f"{dl}, but the file has {real_length - do} bytes after data_offset {do}",
        )
        data_ok = False
    elif do > real_length and data_ok:  # pragma: no cover - reported at data_offset above
        data_ok = False

    return HeaderVerdict(h, manifest_ok, data_ok)
