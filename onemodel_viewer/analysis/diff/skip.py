"""Which tensors a diff cannot compare, and why: the bytes of a file opened in diagnose mode.

A file opened in diagnose mode keeps every sound part and lists its problems; a tensor whose
dtype, element count, byte length or place in its storage did not check out has no bytes to
compare (the reader gives it no storage), or bytes that must not be read. :func:`bytes_problem`
says why, in integer arithmetic before anything is allocated or looped over: the document's own
problem about that tensor when it has one (its kind, ``where`` and offset), else a problem made
here from the tensor's facts. The diff reports such a pair as *not compared*
(:class:`~.diff_result.NotCompared`) and goes on with the others; its verdict is then over the
sound parts only.
"""

from __future__ import annotations

import bisect
from typing import Sequence

from ...format.dtypes import DTYPES
from ...format.errors import Finding, Kind, Problem
from ...format.onemodel.header import MAX_COUNT
from ...format.schema import Tensor

__all__ = ["ProblemIndex", "bytes_problem", "check_sizes"]


class ProblemIndex:
    """A document's problems, looked up by the ``where`` of the record they are about; its findings
    too (:attr:`findings`), which can say why a sound file's tensor has no bytes to compare (an
    ``.ort`` tensor whose bytes are in an external file the runtime's reader never looks for)."""

    def __init__(self, problems: Sequence[Problem] = (), findings: Sequence[Finding] = ()) -> None:
        self.findings = ProblemIndex([Problem(Kind.UNSUPPORTED, f.where, f.offset, f"{f.code}: {f.message}")
                                      for f in findings]) if findings else None
        order = sorted(range(len(problems)), key=lambda i: problems[i].where)
        self._problems = [problems[i] for i in order]
        self._rank = order  # document order of each sorted entry: the first one found is reported
        self._wheres = [p.where for p in self._problems]

    def first_about(self, where: str) -> Problem | None:
        """The first problem (in the document's order) at ``where`` or inside it (``where.x``, ``where[3]``)."""
        if not where:
            return None
        best: tuple[int, Problem] | None = None
        i = bisect.bisect_left(self._wheres, where)
        while i < len(self._wheres) and self._wheres[i].startswith(where):
            rest = self._wheres[i][len(where):]
            if not rest or rest[0] in ".[":
                if best is None or self._rank[i] < best[0]:
                    best = (self._rank[i], self._problems[i])
            i += 1
        return best[1] if best is not None else None


def _own_problem(t: Tensor) -> Problem | None:
    """Why ``t``'s bytes cannot be compared, from its own facts; ``None`` when they can."""
    info = DTYPES.get(t.dtype)
    if info is None:
        return Problem(Kind.UNSUPPORTED, t.where + ".dtype", None, f"unknown dtype {t.dtype}")
    count = 1
    for d in t.dims:
        if type(d) is not int or d < 0:
            return Problem(Kind.INVALID_MODEL, t.where + ".dims", None, f"dims {list(t.dims)} are not all counts")
        count *= d
        if count >= MAX_COUNT:  # stops at 2^60 however many dims there are
            if 0 in t.dims:  # empty, however large the other dims
                count = 0
                break
            return Problem(Kind.UNSUPPORTED, t.where + ".dims", None, "element count is 2^60 or more")
    if type(t.length) is not int or info.byte_length(count) != t.length:
        return Problem(Kind.INVALID_MODEL, t.where + ".data.length", None,
                       f"{t.length} bytes for {count} x {info.name} ({info.byte_length(count)} bytes)")
    if t.length == 0:
        return None
    if t.storage is None or t.file_offset is None:
        return Problem(Kind.MALFORMED, t.where, None, "tensor bytes unavailable (the tensor's data could not be read)")
    if t.file_offset < 0 or t.file_offset + t.length > t.storage.size:
        return Problem(Kind.MALFORMED, t.where, t.file_offset,
                       f"bytes {t.file_offset}..{t.file_offset + t.length} outside the {t.storage.size}-byte storage")
    return None


def bytes_problem(t: Tensor, problems: ProblemIndex | None = None) -> Problem | None:
    """Why the bytes of non-string tensor ``t`` cannot be compared (``None`` when they can).

    The document's first problem about ``t`` (from ``problems``) when there is one, else its first
    finding about ``t`` (as an Unsupported problem: ``code: message``); for a tensor
    left without storage and no problem of its own, the first header problem (the data region could
    not be used); else what ``t``'s own facts show: an unknown dtype, 2^60 or more elements, a byte
    length that is not the dims' and dtype's, no storage, or bytes outside the storage.
    """
    own = _own_problem(t)
    if own is None or problems is None:
        return own
    found = problems.first_about(t.where)
    if found is None and problems.findings is not None:
        found = problems.findings.first_about(t.where)
    if found is None and t.storage is None:
        found = problems.first_about("header")
    return found if found is not None else own


def check_sizes(pairs: Sequence[tuple[Tensor, Tensor]]) -> int:
    """The bytes per side of ``pairs``; :class:`~..format.errors.FormatError` for the first pair that cannot be
    compared byte for byte (one side's bytes unusable, or the two lengths differ): a guard before any loop or
    allocation."""
    from ...format.errors import FormatError

    total = 0
    for a, b in pairs:
        for t in (a, b):
            p = _own_problem(t)
            if p is not None:
                raise FormatError.from_problem(p)
        if a.length != b.length:
            raise FormatError(Kind.INVALID_MODEL, b.where + ".data.length", None,
                              f"{b.length} bytes against {a.length} in the other file")
        total += a.length
    return total
