"""What an ``.ort`` file adds to the model: format version, kernel tables, runtime optimizations,
per-node execution provider, per-initializer payload placement, and the byte map.

Kept beside the model as ``Document.extra`` (an :class:`OrtFacts`): the viewer, ``--check``
and the layout screen show it; the diff, the writers and the exporters never need it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..dtypes import DTYPES, DataType

Release = tuple[int, int]
"""An ONNX Runtime release as (major, minor): ``(1, 16)``."""


@dataclass(frozen=True, slots=True)
class FormatVersion:
    """One ORT format version (``InferenceSession.ort_version``): what it added, which releases write and read it."""

    change: str
    written: tuple[Release, Release | None]
    """First and last release writing it (None: still written)."""
    full: tuple[tuple[Release, Release | None], ...]
    """Release ranges whose full builds read it (None: and every later release)."""
    minimal: tuple[tuple[Release, Release | None], ...]
    """Release ranges whose minimal (mobile) builds read it."""
    note: str = ""

    def reads(self, release: Release, minimal: bool = False) -> bool:
        return any(lo <= release and (hi is None or release <= hi) for lo, hi in (self.minimal if minimal else self.full))

    def summary(self) -> str:
        def rel(r: Release) -> str:
            return f"{r[0]}.{r[1]}"

        def ranges(rs) -> str:
            return ", ".join(rel(lo) + (" and later" if hi is None else "" if hi == lo else "-" + rel(hi)) for lo, hi in rs)

        first, last = self.written
        out = f"{self.change}; written by ONNX Runtime {rel(first)}" + (" and later" if last is None else "" if last == first else "-" + rel(last))
        if self.full == self.minimal:
            out += f"; read by {ranges(self.full)}"
        else:
            out += f"; read by {ranges(self.minimal)}"
            gap = self.full[0][1]
            if gap is not None and len(self.full) > 1:
                lo, hi = (gap[0], gap[1] + 1), (self.full[1][0][0], self.full[1][0][1] - 1)
                out += f"; {rel(lo)}-{rel(hi)} refuse it" if lo != hi else f"; {rel(lo)} refuses it"
            later = self.full[-1][0]
            out += f"; full builds {rel(later)} and later read it{self.note}, minimal builds do not"
        return out


_LATER = (1, 14)
"""Full builds read every older version again from this release (ORT_Format_Update_in_1.13.md)."""
FORMAT_VERSIONS: dict[str, FormatVersion] = {
    "1": FormatVersion("the first ORT format", ((1, 5), (1, 5)), (((1, 5), (1, 7)), (_LATER, None)), (((1, 5), (1, 7)),)),
    "2": FormatVersion("sparse initializers", ((1, 6), (1, 6)), (((1, 6), (1, 7)), (_LATER, None)), (((1, 6), (1, 7)),)),
    "3": FormatVersion("graph_doc_string", ((1, 7), (1, 7)), (((1, 7), (1, 7)), (_LATER, None)), (((1, 7), (1, 7)),)),
    "4": FormatVersion("kernel def hashes independent of type-constraint order", ((1, 8), (1, 12)),
                       (((1, 8), (1, 12)), (_LATER, None)), (((1, 8), (1, 12)),),
                       " without its saved runtime optimizations"),
    "5": FormatVersion("the kernel type-string resolver replaces kernel def hashes", ((1, 13), (1, 15)),
                       (((1, 13), None),), (((1, 13), None),)),
    "6": FormatVersion("float8 data types", ((1, 16), None), (((1, 16), None),), (((1, 16), None),)),
}
"""ORT format versions and the ONNX Runtime releases that write and read them: onnxruntime's
``ort_format_version.h`` and ``core/flatbuffers/schema/README.md`` (versions 1-5), the compatibility
table of its "ORT model format" page (1.5 v1; 1.6 v1-2; 1.7 v1-3; 1.8-1.12 v4 only; 1.13 v5 only),
``docs/ORT_Format_Update_in_1.13.md`` (1.14 and later: full builds load 1-4 and ignore their saved runtime
optimizations, minimal builds refuse them), the float8 change (onnxruntime #14731, first released in 1.16)
for 6. ONNX Runtime 1.32 (full build) loads 1-6 and refuses 7 (``tests/test_ort_real.py``)."""

VERSIONS: dict[str, str] = {v: f.summary() for v, f in FORMAT_VERSIONS.items()}
"""The same as one line of text per version (the detail pane, the ``ort-old-version`` finding)."""


def reads(version: str, release: Release, minimal: bool = False) -> bool:
    """True when ONNX Runtime ``release`` (a full build, or a minimal one) loads format ``version``."""
    f = FORMAT_VERSIONS.get(version)
    return f is not None and f.reads(release, minimal)


OLD_VERSIONS = ("1", "2", "3", "4")
"""Versions that minimal (mobile) builds of current ONNX Runtime refuse."""

ORT_DTYPES = frozenset(range(DataType.FLOAT, DataType.FLOAT8E5M2FNUZ + 1))
"""``TensorDataType`` codes of ort.fbs (1..20). ONNX codes above (uint4, int4, float4...) are read as the
ONNX type, with an ``ort-unloadable-dtype`` finding: ONNX Runtime 1.32 writes INT4 initializers as 22 and
then refuses its own file."""


@dataclass(frozen=True, slots=True)
class FlatObject:
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


def element_size(dtype: int | None) -> int:
    """Bytes per element of a data type code, 1 to 8 (8 for an unknown or missing code)."""
    info = DTYPES.get(dtype) if dtype is not None else None
    return min(8, max(1, (info.bits if info else 8) // 8))


def in_place(offset: int, dtype: int | None) -> bool:
    """Aligned to its element size (at most 8): usable in place by a strict-alignment reader."""
    return offset % element_size(dtype) == 0


@dataclass(frozen=True, slots=True)
class Payload:
    """Where an initializer's bytes lie in the file, and whether they can be used where they are."""

    where: str
    name: str
    dtype: int
    offset: int
    length: int
    in_place: bool
    """:func:`in_place`: the payload is aligned to its element size (at most 8): a typed view needs no copy on strict-alignment
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
    """Every object visited, sorted by start: ``(start, length, kind, owner)`` tuples (as :class:`FlatObject` fields)."""
    unowned: tuple[tuple[int, int], ...] = ()
    """(start, length) of byte runs no object owns (alignment padding included)."""
    tables_visited: int = 0

    starts: list = field(default_factory=list, repr=False)
    """``span.start`` of each span, for bisection."""
    tables: dict = field(default_factory=dict, repr=False)
    """Schema path -> table offset of each model, graph, node, tensor and kernel entry (the importer's)."""
    _payload_of: dict | None = field(default=None, repr=False)

    def node(self, where: str) -> NodeFacts | None:
        """What ORT keeps for the node at ``where`` (``Node.where``)."""
        return self.nodes.get(where)

    def payload(self, where: str) -> Payload | None:
        """The payload of the initializer at ``where`` (``Tensor.where``); None for a string or empty tensor."""
        if self._payload_of is None:
            self._payload_of = {p.where: p for p in self.payloads}
        return self._payload_of.get(where)

    def table_span(self, where: str) -> tuple[int, int] | None:
        """(start, length) of the table of the record at ``where`` (a node, a tensor, the model...), None if none.

        O(log spans): the offset from :attr:`tables`, the length from the span starting there (a pass over
        the ~10^6 spans of a large file took 0.2-0.9 s on the viewer's first selection)."""
        import bisect

        start = self.tables.get(where)
        if start is None:
            return None
        spans = self.spans
        for j in range(bisect.bisect_left(self.starts, start), bisect.bisect_right(self.starts, start)):
            if spans[j][2] == "table":
                return spans[j][0], spans[j][1]
        return None

    def owner_at(self, offset: int) -> FlatObject | None:
        """The smallest object holding ``offset`` as a :class:`FlatObject` (spans of a sound file do not overlap)."""
        import bisect

        spans = self.spans
        i = bisect.bisect_right(self.starts, offset)
        best = None
        for j in range(i - 1, max(-1, i - 64), -1):
            s = spans[j]
            if s[0] <= offset < s[0] + s[1] and (best is None or s[1] < best[1]):
                best = s
        return None if best is None else FlatObject(*best)


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
