"""Export's weights files: which tensors go where, aligned, split, kept; written in bounded memory.

:func:`plan` places every tensor of at least ``threshold`` bytes in ``LOCATION`` (relative to
the destination's folder) at an offset that is a multiple of ``align``, zero padding between;
with ``max_file_size`` a tensor that would end past it starts the next file of the split set
(``LOCATION.1``, ``LOCATION.2``...), so that no file exceeds the size unless it holds one larger
tensor. Tensors in ``keep`` (``--keep-external``: already external in an ``.onnx`` source) keep
pointing at their files: no byte of them is copied (onnx-light's
``SaveModelWithSharedExternalData``).

:func:`write_weights` streams each placed tensor from its storage with
:func:`.writer.copy_storage_range` (``copy_file_range`` in 8 MiB steps, no mapping touched)
into a temporary file renamed at the end (:class:`.writer.atomic_output`); padding is a hole
(``ftruncate``), so re-aligning a 4 GiB model keeps a few chunks in memory at most
(``AlignExternalDataStreaming``).
"""

from __future__ import annotations

import os
import re
from contextlib import ExitStack
from dataclasses import dataclass, field

from ..errors import FormatError, Kind
from .external import unsafe_location
from ..schema import Tensor

__all__ = ["ExternalOptions", "WeightsFile", "plan", "write_weights", "parse_size", "keep_locations"]


@dataclass(frozen=True, slots=True)
class ExternalOptions:
    """How ``--export`` lays out external data."""

    location: str | None = None
    """Relative to the destination's folder; None: ``<DST name>.data``."""
    threshold: int = 1024
    """Tensors of fewer bytes stay inline."""
    align: int = 4096
    """Every external offset is a multiple of this (a power of two)."""
    max_file_size: int | None = None
    """Split the weights over ``LOCATION``, ``LOCATION.1``... so that no file exceeds this (None: one file)."""
    keep: dict = field(default_factory=dict)
    """``id(tensor)`` -> ``(location relative to the destination's folder, offset, length)``: left where it is."""


@dataclass(frozen=True, slots=True)
class WeightsFile:
    """One weights file to write: its location, its path, and ``(tensor, offset)`` in offset order."""

    location: str
    path: str
    items: list = field(default_factory=list)


_SIZE = re.compile(r"^([0-9]+)\s*([KMGT]?)(i?)(B?)$", re.IGNORECASE)


def parse_size(text: str) -> int:
    """``1024``, ``64K``, ``1MiB``, ``2G``, ``3GB``: K/M/G/T and KiB/MiB... are powers of 1024, kB/MB/GB/TB of 1000."""
    m = _SIZE.match(text.strip())
    if not m or not text.isascii():
        raise ValueError(f"not a size: {text!r} (examples: 1048576, 64K, 1MiB, 2G)")
    n, unit, i, b = int(m.group(1)), m.group(2).upper(), m.group(3), m.group(4)
    if not unit:
        if i:
            raise ValueError(f"not a size: {text!r}")
        return n
    power = "KMGT".index(unit) + 1
    base = 1000 if (b and not i) else 1024
    return n * base ** power


def plan(tensors: list[Tensor], dst: str, opts: ExternalOptions) -> tuple[dict[int, tuple[str, int, int]], list[WeightsFile]]:
    """``(external map for the exporter, weights files to write)`` for ``tensors`` (strings excluded by the caller)."""
    align = opts.align
    if align < 1 or align & (align - 1):
        raise FormatError(Kind.UNSUPPORTED, "--align", None, f"the alignment must be a power of two, not {align}")
    folder = os.path.dirname(os.path.abspath(dst))
    base = opts.location if opts.location else os.path.basename(dst) + ".data"
    if unsafe_location(base):
        raise FormatError(Kind.UNSUPPORTED, "--external-data", None,
                          f"the location {base!r} must be a relative path inside the destination's folder")
    if os.path.normpath(os.path.join(folder, base)) == os.path.abspath(dst):
        raise FormatError(Kind.IO, "--external-data", None, "the external data location is the destination itself")
    ext: dict[int, tuple[str, int, int]] = dict(opts.keep)
    files: list[WeightsFile] = []
    cur: WeightsFile | None = None
    pos = 0
    for t in tensors:
        if id(t) in ext or t.length < opts.threshold or t.length == 0:
            continue
        off = -(-pos // align) * align
        if cur is not None and opts.max_file_size is not None and cur.items and off + t.length > opts.max_file_size:
            cur = None
        if cur is None:
            loc = base if not files else f"{base}.{len(files)}"
            cur = WeightsFile(loc, os.path.join(folder, loc))
            files.append(cur)
            off = 0
        cur.items.append((t, off))
        ext[id(t)] = (cur.location, off, t.length)
        pos = off + t.length
    return ext, files


def write_weights(stack: ExitStack, files: list[WeightsFile], fds) -> None:
    """Write every weights file into a temporary file entered on ``stack`` (renamed when it exits cleanly)."""
    from ..onemodel import writer

    for wf in files:
        f = stack.enter_context(writer.atomic_output(wf.path))
        for t, off in wf.items:
            end = f.seek(0, os.SEEK_END)
            if off > end:
                os.ftruncate(f.fileno(), off)  # zero padding as a hole
            writer.copy_storage_range(f, t.storage, t.file_offset, t.length, fds)  # type: ignore[arg-type]


def keep_locations(refs, tensors: list[Tensor], src: str, dst: str) -> dict[int, tuple[str, int, int]]:
    """``--keep-external``: each already-external tensor's entry, its location rewritten for ``dst``'s folder.

    ``refs``: the source's :class:`.onnx_external.ExternalRef` list. The location is kept as written
    when ``dst`` is in the source's folder; otherwise it must still lead into ``dst``'s folder (readers
    refuse ``..``), else Unsupported.
    """
    by_where = {r.where: r for r in refs}
    src_folder = os.path.dirname(os.path.abspath(src))
    dst_folder = os.path.dirname(os.path.abspath(dst))
    same = os.path.realpath(src_folder) == os.path.realpath(dst_folder)
    out: dict[int, tuple[str, int, int]] = {}
    for t in tensors:
        r = by_where.get(t.where)
        if r is None or not t.length or r.length != t.length:
            continue
        loc = r.location
        if not same:
            loc = os.path.relpath(os.path.join(src_folder, r.location), dst_folder).replace(os.sep, "/")
            if unsafe_location(loc):
                raise FormatError(Kind.UNSUPPORTED, t.where + ".external_data.location", None,
                                  f"--keep-external: {r.location!r} would be {loc!r} from the destination's folder; "
                                  f"readers refuse a location leaving the model's folder: export next to the source "
                                  f"or in a folder holding its weights files")
        out[id(t)] = (loc, r.offset, r.length)
    return out
