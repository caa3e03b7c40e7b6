"""The one error type for format problems, and the records it carries.

Every failure the reader can report is a :class:`Problem` with a :class:`Kind`
(section 3.1 of the spec), a ``where`` (``header.flags`` or a manifest path such
as ``manifest.graph.nodes[3].inputs[1]``) and a file ``offset`` (or ``None``).
Strict reading raises the first problem as :class:`FormatError`; diagnose mode
collects them. Nothing else (``ValueError``, ``KeyError``, ``RecursionError``...)
may escape the reader.

A :class:`Finding` is something a careful reader must see that does not make
the file invalid (duplicate JSON keys, bytes no tensor owns, ...). Each has a
stable ``code``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass


class Kind(str, enum.Enum):
    """The four kinds of failure of section 3.1."""

    MALFORMED = "Malformed"
    """Not a well-formed file: bad magic, truncation, invalid JSON, wrong JSON type, range outside the file."""
    INVALID_MODEL = "InvalidModel"
    """Well formed but impossible: duplicate/undefined names, length not matching dims and dtype."""
    UNSUPPORTED = "Unsupported"
    """Something this reader does not handle: newer version, flags, unknown dtype, too much nesting."""
    IO = "Io"
    """The file could not be read or written."""

    def __str__(self) -> str:  # "Malformed", not "Kind.MALFORMED"
        return self.value


@dataclass(frozen=True, slots=True)
class Problem:
    """One reason a file is not a valid model."""

    kind: Kind
    """Which of the four kinds."""
    where: str
    """``header.<field>`` or a manifest path (``manifest.graph.nodes[3].inputs[1]``)."""
    offset: int | None
    """File offset of the offending bytes, when there is one."""
    message: str
    """Human-readable explanation. Never parse it: use ``kind`` and ``where``."""
    file: str | None = None
    """The file ``offset`` is in when it is not the model's own: an ONNX external data ``location``
    as written (relative to the model's folder). None: the model's file."""

    def as_json(self) -> dict:
        out = {"kind": self.kind.value, "where": self.where, "offset": self.offset, "message": self.message}
        if self.file is not None:
            out["file"] = self.file
        return out


@dataclass(frozen=True, slots=True)
class Finding:
    """Something worth seeing that does not make the file invalid."""

    code: str
    """Stable identifier, e.g. ``duplicate-key``, ``nonzero-padding``, ``unowned-bytes``."""
    where: str
    offset: int | None
    message: str
    file: str | None = None
    """As :attr:`Problem.file`: the external data file ``offset`` is in (None: the model's file)."""

    def as_json(self) -> dict:
        out = {"code": self.code, "where": self.where, "offset": self.offset, "message": self.message}
        if self.file is not None:
            out["file"] = self.file
        return out


class FormatError(Exception):
    """A format problem, raised by strict reading and by anything that reads untrusted bytes."""

    def __init__(self, kind: Kind, where: str, offset: int | None, message: str, file: str | None = None) -> None:
        at = f" (offset {offset}" + (f" in {file}" if file is not None else "") + ")" if offset is not None else ""
        super().__init__(f"{kind.value} at {where}{at}: {message}")
        self.problem = Problem(kind, where, offset, message, file)

    @classmethod
    def from_problem(cls, problem: Problem) -> "FormatError":
        return cls(problem.kind, problem.where, problem.offset, problem.message, problem.file)

    @property
    def kind(self) -> Kind:
        return self.problem.kind

    @property
    def where(self) -> str:
        return self.problem.where

    @property
    def offset(self) -> int | None:
        return self.problem.offset

    @property
    def message(self) -> str:
        return self.problem.message
