"""One opened file: what the reader found, whatever the file's state.

``format.open(path, mode)`` returns a :class:`Document`. In ``strict`` mode a
problem raises :class:`~.errors.FormatError` instead; in ``diagnose`` mode the
document holds every problem found and whatever part of the model is sound.
A document is a context manager: ``with format.open(path) as doc:`` closes its file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .errors import Finding, Problem
from .schema import Model
from .storage import Storage

HEADER_SIZE = 64

HEADER_FIELDS: tuple[tuple[str, int, int], ...] = (
    ("magic", 0, 8),
    ("version", 8, 4),
    ("flags", 12, 4),
    ("manifest_offset", 16, 8),
    ("manifest_length", 24, 8),
    ("data_offset", 32, 8),
    ("data_length", 40, 8),
    ("file_length", 48, 8),
    ("reserved", 56, 8),
)
"""(name, offset, size) of each header field (spec section 1.1)."""


@dataclass(frozen=True, slots=True)
class Header:
    """The 64-byte header as decoded (values as stored, before validation)."""

    magic: bytes
    version: int
    flags: int
    manifest_offset: int
    manifest_length: int
    data_offset: int
    data_length: int
    file_length: int
    reserved: int

    @staticmethod
    def field_span(name: str) -> tuple[int, int]:
        """(offset, size) of a header field."""
        for n, off, size in HEADER_FIELDS:
            if n == name:
                return off, size
        raise KeyError(name)


@dataclass(slots=True)
class Document:
    """An opened OneModel or ONNX file."""

    path: str
    source: str
    """``onemodel``, ``onnx`` or ``ort``."""
    size: int
    """File length in bytes."""
    storage: Storage | None = None
    """The file's bytes (OneModel) or None (ONNX: tensors carry their own storage)."""
    header: Header | None = None
    manifest_span: tuple[int, int] | None = None
    """(offset, length) of the manifest bytes in the file."""
    data_span: tuple[int, int] | None = None
    """(offset, length) of the data region in the file."""
    model: Model | None = None
    """The model, or None when nothing sound could be read."""
    problems: list[Problem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    external_files: tuple[str, ...] = ()
    """ONNX: the external data files the model reads."""
    extra: object = None
    """What one format alone has (``.ort``: a :class:`~.ort.facts.OrtFacts`); None for the others."""
    mode: str = ""
    """How the OneModel reader opened it (``strict``/``diagnose``): strict skips the costly
    ``duplicate-key`` detection, which ``analysis.layout.all_findings`` then adds."""
    keys_unique: bool | None = None
    """Whether no object of the manifest repeats a key, once looked for (a diagnose open's parse; the
    viewer's background job, after its open left the detection to it); None while not known. A manifest
    look-up may stop at the first match of a key only when it is True."""

    @property
    def valid(self) -> bool:
        return not self.problems

    def close(self) -> None:
        if self.storage is not None:
            self.storage.close()

    def __enter__(self) -> "Document":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
