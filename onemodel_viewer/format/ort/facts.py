"""What an ``.ort`` file adds to the model: format version, kernel tables, runtime optimizations,
per-node execution provider, per-initializer payload placement, and the byte map.

Kept beside the model as ``Document.extra`` (an :class:`OrtFacts`): the viewer, ``--check``
and the layout screen show it; the diff, the writers and the exporters never need it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..dtypes import DataType

VERSIONS: dict[str, str] = {
    "1": "written by ONNX Runtime 1.5-1.6; read by full builds up to today (saved optimizations ignored), not by minimal builds since 1.8",
    "2": "sparse initializers; written by ONNX Runtime 1.6-1.7; read by full builds only (since 1.8)",
    "3": "graph_doc_string; written by ONNX Runtime 1.7; read by full builds only (since 1.8)",
    "4": "kernel def hashes independent of type order; written by ONNX Runtime 1.8-1.12; minimal builds 1.8-1.12 read it, "
         "later full builds read it without its saved runtime optimizations",
    "5": "kernel type-string resolver replaces kernel def hashes; written by ONNX Runtime 1.13-1.15; read by 1.13 and later",
    "6": "float8 data types; written by ONNX Runtime 1.16 and later; read by 1.16 and later",
}
"""ORT format versions (``InferenceSession.ort_version``) and the ONNX Runtime releases that write and read
them (ORT's ``ort_format_version.h`` history; releases as far as its changelog tells)."""
OLD_VERSIONS = ("1", "2", "3", "4")
"""Versions that minimal (mobile) builds of current ONNX Runtime refuse."""

ORT_DTYPES = frozenset(range(DataType.FLOAT, DataType.FLOAT8E5M2FNUZ + 1))
"""``TensorDataType`` codes of ort.fbs (1..20). ONNX codes above (uint4, int4, float4...) are read as the
ONNX type, with an ``ort-unloadable-dtype`` finding: ONNX Runtime 1.32 writes INT4 initializers as 22 and
then refuses its own file."""


@dataclass(frozen=True, slots=True)
class Span:
    """One object of the flatbuffer: ``kind`` root/vtable/table/vector/string/payload, its owner's schema path."""

    start: int
    length: int
    kind: str
    owner: str


@dataclass(frozen=True, slots=True)
class NodeFacts:
    """What ORT keeps for a node beyond the ONNX fields."""

    where: str
    index: int
    since_version: int
    execution_provider: str
    node_type: int
    """0 Primitive, 1 Fused."""
    input_arg_counts: tuple[int, ...] = ()
    implicit_inputs: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Payload:
    """Where an initializer's bytes lie in the file, and whether they can be used where they are."""

    where: str
    name: str
    dtype: int
    offset: int
    length: int
    in_place: bool
    """The payload is aligned to its element size (at most 8): a typed view needs no copy on strict-alignment
    hardware; numpy reads unaligned views too (slower), so nothing is copied either way."""

    @property
    def mod64(self) -> int:
        return self.offset % 64

    @property
    def mod4096(self) -> int:
        return self.offset % 4096


@dataclass(frozen=True, slots=True)
class KernelTypeStr:
    """One entry of the kernel type-string resolver: an op id and its type-string arguments."""

    op_id: str
    args: tuple[tuple[str, tuple[tuple[int, int], ...]], ...]
    """(kernel type string, ((arg type 0 input/1 output, index), ...))."""


@dataclass(frozen=True, slots=True)
class RuntimeOptimization:
    """A saved runtime-optimization record of a graph."""

    graph: str
    optimizer: str
    action_id: str
    node_indices: tuple[int, ...]
    produced_op_ids: tuple[str, ...]


@dataclass(slots=True, eq=False)
class OrtFacts:
    """Everything ORT-specific about one opened ``.ort`` file."""

    version: str = ""
    version_offset: int | None = None
    readers: str = ""
    """Which ONNX Runtime releases read this version (from :data:`VERSIONS`)."""
    kernel_type_strs: tuple[KernelTypeStr, ...] = ()
    runtime_optimizations: tuple[RuntimeOptimization, ...] = ()
    nodes: dict = field(default_factory=dict)
    """``Node.where`` -> :class:`NodeFacts`."""
    payloads: tuple[Payload, ...] = ()
    spans: list = field(default_factory=list)
    """Every object visited, sorted by start: ``(start, length, kind, owner)`` tuples (as :class:`Span` fields)."""
    unowned: tuple[tuple[int, int], ...] = ()
    """(start, length) of byte runs no object owns (alignment padding included)."""
    tables_visited: int = 0

    starts: list = field(default_factory=list, repr=False)
    """``span.start`` of each span, for bisection."""

    def owner_at(self, offset: int) -> Span | None:
        """The smallest span holding ``offset`` as a :class:`Span` (spans of a sound file do not overlap)."""
        import bisect

        spans = self.spans
        i = bisect.bisect_right(self.starts, offset)
        best = None
        for j in range(i - 1, max(-1, i - 64), -1):
            s = spans[j]
            if s[0] <= offset < s[0] + s[1] and (best is None or s[1] < best[1]):
                best = s
        return None if best is None else Span(*best)


def unowned_runs(spans, size: int, presorted: bool = False) -> list[tuple[int, int]]:
    """(start, length) of every byte run of ``[0, size)`` that no span covers."""
    out = []
    cursor = 0
    for s in (spans if presorted else sorted(spans)):
        if s[0] > cursor:
            out.append((cursor, s[0] - cursor))
        cursor = max(cursor, s[0] + s[1])
    if cursor < size:
        out.append((cursor, size - cursor))
    return out
