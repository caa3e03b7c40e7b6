"""A byte range of one file and who owns it: the one record of every byte map.

:func:`.layout.layout` (a OneModel file's extents, behind ``--check``'s findings),
:func:`.external_layout.external_layout` (each weights file of an ONNX model),
:func:`.ort_layout.ort_layout` (an ``.ort`` file's payloads and unowned runs) and the viewer's
byte map (``tui/hex/bytemap.py``: header fields, manifest, flatbuffer objects, tensors) all describe
their bytes as :class:`Span`\\ s. Which tensors hold a byte and which share bytes is answered once,
by :class:`.tensor_spans.TensorSpans`.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Span"]


@dataclass(frozen=True, slots=True)
class Span:
    """A byte range ``[start, end)`` of one file and what owns it."""

    start: int
    end: int
    kind: str
    """What the bytes are: ``header``, ``manifest``, ``padding``, ``tensor``, ``overlap``, ``gap``,
    ``tail`` (the layouts); ``payload``, ``unowned`` (``.ort``); the viewer's map adds ``data``
    (the data region), ``onnx``, ``external``, ``none`` and the ``.ort`` object classes."""
    names: tuple[str, ...] = ()
    """Owners' names: tensors (tensor, overlap, payload; the tensor before a padding span), a header
    field, an ``.ort`` object."""
    wheres: tuple[str, ...] = ()
    """Paths of those owners (manifest or schema paths)."""
    nonzero: bool | None = None
    """Padding, gap, tail, unowned: some byte is not zero (None: not scanned)."""
    owners: int = 0
    """How many tensors own these bytes (``names`` may be capped below it)."""

    @property
    def length(self) -> int:
        return self.end - self.start

    @property
    def name(self) -> str:
        """The first owner's name ('' when none)."""
        return self.names[0] if self.names else ""
