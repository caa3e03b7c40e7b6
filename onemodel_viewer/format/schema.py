"""Immutable records of a loaded model (spec section 2), shared by both sources.

A OneModel file and an imported ONNX file produce the same records. Each record
carries ``where``: its manifest path (``manifest.graph.nodes[3]``) for OneModel
files, or an equivalent path for ONNX (``onnx.graph.nodes[3]``). Tensors carry
their byte span; their bytes are read only when :meth:`Tensor.raw` or
:meth:`Tensor.values` is called.
"""

from __future__ import annotations

import math
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Union

from ..process import paused_gc
from . import dtypes
from .dtypes import DTYPES, STRING, DType, name_of
from .errors import FormatError, Kind

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

    from .storage import Storage


def float_from_bits(bits: int) -> float:
    """The value of a 32-bit IEEE-754 pattern (NaN payloads are lost in a Python float: keep the bits)."""
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def bits_from_float(value: float) -> int:
    return struct.unpack("<I", struct.pack("<f", value))[0]


@dataclass(frozen=True, slots=True)
class Type:
    """A value type (spec section 2.7)."""

    kind: str
    """``tensor``, ``sparse_tensor``, ``sequence``, ``optional``, ``map`` or ``opaque``."""
    elem: int = 0
    """Element type code (tensor, sparse_tensor)."""
    shape: tuple[int | str | None, ...] | None = None
    """Dims (int fixed, str named, None unknown); None when the rank is unknown."""
    inner: "Type | None" = None
    """Element type of sequence/optional, value type of map."""
    key: int = 0
    """Key element type code (map)."""
    domain: str = ""
    name: str = ""
    """Opaque type's domain and name."""
    where: str = ""

    def __str__(self) -> str:
        if self.kind in ("tensor", "sparse_tensor"):
            dims = "" if self.shape is None else "[" + ",".join("?" if d is None else str(d) for d in self.shape) + "]"
            prefix = "sparse " if self.kind == "sparse_tensor" else ""
            return f"{prefix}{name_of(self.elem)}{dims}"
        if self.kind in ("sequence", "optional"):
            return f"{self.kind}<{self.inner}>"
        if self.kind == "map":
            return f"map<{name_of(self.key)},{self.inner}>"
        if self.kind == "opaque":
            return f"opaque<{self.domain}:{self.name}>"
        return self.kind


@dataclass(frozen=True, slots=True)
class ValueInfo:
    """A TypedName: graph input, output or value_info entry."""

    name: str
    type: Type | None = None
    where: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class Tensor:
    """A tensor (spec section 2.5). Bytes stay in their storage until asked for."""

    name: str
    dtype: int
    """``TensorProto.DataType`` code."""
    dims: tuple[int, ...]
    doc: str = ""
    offset: int = 0
    """``data.offset`` as in the manifest: relative to the data region (OneModel); 0 for other sources."""
    length: int = 0
    """Byte length of the stored data (``ceil(count * bits / 8)``)."""
    file_offset: int | None = None
    """Absolute offset of the bytes in ``storage`` (for OneModel: in the file); None for string tensors."""
    storage: "Storage | None" = field(default=None, repr=False)
    strings: tuple[bytes, ...] | None = None
    """Elements of a string tensor (dtype 8)."""
    where: str = ""

    @property
    def info(self) -> DType | None:
        return DTYPES.get(self.dtype)

    @property
    def count(self) -> int:
        return math.prod(self.dims)

    @property
    def is_string(self) -> bool:
        return self.dtype == STRING

    def type_str(self) -> str:
        return f"{name_of(self.dtype)}[{','.join(map(str, self.dims))}]"

    def raw(self) -> "np.ndarray":
        """The stored bytes as a zero-copy read-only ``uint8`` view."""
        import numpy as np

        if self.is_string:
            raise FormatError(Kind.UNSUPPORTED, self.where, None, "string tensors have no byte data")
        if self.storage is None or self.file_offset is None:
            if self.length == 0:
                return np.zeros(0, dtype=np.uint8)
            raise FormatError(Kind.MALFORMED, self.where, None, "tensor bytes unavailable (the tensor's data could not be read)")
        return self.storage.view(self.file_offset, self.length)

    def values(self) -> "np.ndarray":
        """Decoded elements with ``dims`` as shape (zero-copy for types of 8 bits or more)."""
        import numpy as np

        from .dtypes import decode

        count = self.count
        if self.is_string:
            strings = self.strings or ()
            if len(strings) != count:
                raise FormatError(
                    Kind.INVALID_MODEL, self.where + ".strings", None, f"{len(strings)} strings for {count} elements"
                )
            flat = np.empty(count, dtype=object)
            flat[:] = strings
        else:
            info = self.info
            if info is None:
                raise FormatError(Kind.UNSUPPORTED, self.where + ".dtype", None, f"unknown dtype {self.dtype}")
            if info.byte_length(count) != self.length:
                raise FormatError(
                    Kind.INVALID_MODEL, self.where + ".data.length", None, f"{self.length} bytes for {count} elements"
                )
            flat = decode(self.raw(), info, count)
        try:
            return flat.reshape(self.dims)
        except ValueError as e:  # e.g. dims [2^31, 2^31, 2^31, 0]: valid, but beyond numpy's index range
            raise FormatError(Kind.UNSUPPORTED, self.where + ".dims", None, f"numpy cannot shape {self.dims}: {e}") from e


@dataclass(frozen=True, slots=True, eq=False)
class SparseTensor:
    """A sparse tensor (spec section 2.6). ``values.name`` is its name."""

    values: Tensor
    indices: Tensor
    dims: tuple[int, ...]
    where: str = ""

    @property
    def name(self) -> str:
        return self.values.name


AttrValue = Union[int, bytes, Tensor, "Graph", SparseTensor, Type, tuple, None]


@dataclass(frozen=True, slots=True, eq=False)
class Attribute:
    """A node attribute or function attribute default (spec section 2.4).

    ``value`` by ``type``: FLOAT an ``int`` (the 32-bit pattern; see :attr:`float_value`),
    INT ``int``, STRING ``bytes``, TENSOR :class:`Tensor`, GRAPH :class:`Graph`,
    FLOATS ``tuple[int]`` of bit patterns, INTS ``tuple[int]``, STRINGS ``tuple[bytes]``,
    TENSORS/GRAPHS/SPARSE_TENSORS/TYPE_PROTOS tuples of records, SPARSE_TENSOR
    :class:`SparseTensor`, TYPE_PROTO :class:`Type`; ``None`` when ``ref`` is set.
    """

    name: str
    type: int
    value: AttrValue = None
    ref: str = ""
    doc: str = ""
    where: str = ""

    @property
    def float_value(self) -> float | tuple[float, ...] | None:
        if self.type == dtypes.AttrType.FLOAT and isinstance(self.value, int):
            return float_from_bits(self.value)
        if self.type == dtypes.AttrType.FLOATS and isinstance(self.value, tuple):
            return tuple(float_from_bits(b) for b in self.value)
        return None

    def graphs(self) -> tuple["Graph", ...]:
        """Graph-valued contents (GRAPH, GRAPHS)."""
        if self.type == dtypes.AttrType.GRAPH and self.value is not None:
            return (self.value,)  # type: ignore[return-value]
        if self.type == dtypes.AttrType.GRAPHS and self.value is not None:
            return tuple(self.value)  # type: ignore[arg-type]
        return ()

    def tensors(self) -> tuple[Tensor, ...]:
        """Tensor-valued contents in writer order (TENSOR, TENSORS, sparse values then indices)."""
        v = self.value
        if self.type == dtypes.AttrType.TENSOR and v is not None:
            return (v,)  # type: ignore[return-value]
        if self.type == dtypes.AttrType.TENSORS and v is not None:
            return tuple(v)  # type: ignore[arg-type]
        if self.type == dtypes.AttrType.SPARSE_TENSOR and v is not None:
            return (v.values, v.indices)  # type: ignore[union-attr]
        if self.type == dtypes.AttrType.SPARSE_TENSORS and v is not None:
            return tuple(t for s in v for t in (s.values, s.indices))  # type: ignore[union-attr]
        return ()


@dataclass(frozen=True, slots=True, eq=False)
class Node:
    """A node (spec section 2.3)."""

    op: str
    name: str = ""
    domain: str = ""
    overload: str = ""
    doc: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    attributes: tuple[Attribute, ...] = ()
    where: str = ""


@dataclass(frozen=True, slots=True, eq=False)
class NodeColumns:
    """What the reading rules (:mod:`.rules`) read of a graph's nodes, without their records."""

    lists: Callable[[], tuple[Sequence[Sequence[str]], Sequence[Sequence[str]], Sequence[str]]]
    """Each node's inputs, outputs and domain, as stored (made only when the rules need more than the sets)."""
    domains: set[str]
    """Every node's domain."""
    defined: set[str]
    """Every output name of every node."""
    output_count: int
    """How many outputs the nodes have in all (``len(defined)`` when no name repeats)."""
    read_early: set[str]
    """Every input name that no earlier node defines as an output (``""`` included)."""


def node_columns(inputs: Sequence[Sequence[str]], outputs: Sequence[Sequence[str]], domains: Sequence[str]) -> NodeColumns:
    """The :class:`NodeColumns` of nodes with these inputs, outputs and domains, in stored order
    (:func:`.builder.plain_nodes` takes the same steps inside its own pass over the nodes)."""
    defined: set[str] = set()
    read_early: set[str] = set()
    count = 0
    for ins, outs in zip(inputs, outputs):
        for x in ins:
            if x not in defined:
                read_early.add(x)
        defined.update(outs)
        count += len(outs)
    return NodeColumns(lambda: (inputs, outputs, domains), set(domains), defined, count, read_early)


class NodeList(Sequence):
    """A graph's nodes, built when the list is first read.

    The reader checks every node when it opens a file, but builds only the nodes whose
    attributes hold more than numbers (tensors, subgraphs, strings, types, refs: their
    checks need the records); the others are built on the first read of the list (for a
    10,000-node model most records, and ~10 ms of the open). :func:`nodes_with_contents`
    reaches the nodes that hold tensors or graphs without building the rest.

    Reads like the tuple it stands for: ``len``, indexing, slicing (a tuple), iteration,
    ``==`` with a tuple or another list, ``hash``, ``+``; its ``repr`` is short (no records).
    Thread-safe: each record is built once. ``columns`` (a :class:`NodeColumns`, for the reader's
    name resolution) is set until the records are built.
    """

    __slots__ = ("_n", "_items", "_make_one", "_built", "_where", "columns", "_lock")

    def __init__(
        self, n: int, make_one: Callable[[int], "Node"], built: dict[int, "Node"], where: str,
        columns: NodeColumns | None = None,
    ) -> None:
        self._n = n
        self._items: tuple[Node, ...] | None = None
        self._make_one: Callable[[int], Node] | None = make_one
        self._built = built
        self._where = where
        self.columns = columns
        self._lock = threading.RLock()
        """Per list (a build of one document's nodes never holds up another's); re-entrant."""

    def _all(self) -> tuple["Node", ...]:
        items = self._items
        if items is None:
            with self._lock:
                items = self._items
                if items is None:
                    make, get = self._make_one, self._built.get
                    assert make is not None
                    with paused_gc():  # 10^6 nodes: 7.3 s with the GC on, ~2 s without
                        items = tuple([get(i) or make(i) for i in range(self._n)])
                    self._items = items
                    self._make_one = None
                    self._built = {}
                    self.columns = None
        return items

    @property
    def built(self) -> bool:
        """Whether every record has been built."""
        return self._items is not None

    def node_at(self, i: int) -> "Node":
        """Node ``i``, building only that record if the list is not built yet."""
        items = self._items
        if items is not None:
            return items[i]
        with self._lock:
            if self._items is not None:
                return self._items[i]
            if not -self._n <= i < self._n:
                raise IndexError(i)
            i %= self._n
            node = self._built.get(i)
            if node is None:
                assert self._make_one is not None
                node = self._built[i] = self._make_one(i)
            return node

    def built_records(self) -> dict[int, "Node"]:
        """{index: node} of the records built so far (every node holding tensors or graphs among them); a copy."""
        if self._items is not None:
            return dict(enumerate(self._items))
        with self._lock:
            return dict(sorted(self._built.items())) if self._items is None else dict(enumerate(self._items))

    def where_of(self, i: int) -> str:
        """``where`` of node ``i`` without building records."""
        items = self._items
        if items is not None:
            return items[i].where
        node = self._built.get(i)
        return node.where if node is not None else f"{self._where}[{i}]"

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __getitem__(self, i):  # int -> Node (that record only, if not built yet), slice -> tuple
        if isinstance(i, int):
            return self.node_at(i)
        return self._all()[i]

    def __iter__(self) -> Iterator["Node"]:
        return iter(self._all())

    def __reversed__(self) -> Iterator["Node"]:
        return reversed(self._all())

    def __contains__(self, x) -> bool:
        return x in self._all()

    def __eq__(self, other) -> bool:
        if isinstance(other, NodeList):
            return self is other or self._all() == other._all()
        if isinstance(other, tuple):
            return self._all() == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._all())

    def __add__(self, other):
        if isinstance(other, (tuple, NodeList)):
            return self._all() + tuple(other)
        return NotImplemented

    def __radd__(self, other):
        if isinstance(other, tuple):
            return other + self._all()
        return NotImplemented

    def __repr__(self) -> str:
        """Its size and place, never its records: Textual describes a worker by the repr of its
        arguments, and a graph's repr holds its nodes (the whole list built to be printed)."""
        return f"NodeList(n={self._n}, where={self._where!r}, built={self._items is not None})"

    def __reduce__(self):
        """Pickles (and copies) as the tuple it stands for: the builder behind it is not picklable."""
        return (tuple, (self._all(),))


def nodes_with_contents(nodes: Sequence["Node"]) -> list["Node"]:
    """Nodes of ``nodes`` (a tuple or a :class:`NodeList`) that may hold tensors or graphs, in stored order.

    Every node whose attributes hold a tensor, sparse tensor or graph is included (possibly some
    others with attributes); a :class:`NodeList` answers without building its other records.
    """
    if type(nodes) is NodeList and not nodes.built:
        return [n for n in nodes.built_records().values() if n.attributes]
    return [n for n in nodes if n.attributes]


@dataclass(frozen=True, slots=True, eq=False)
class Graph:
    """A graph (spec section 2.2)."""

    name: str = ""
    doc: str = ""
    inputs: tuple[ValueInfo, ...] = ()
    outputs: tuple[ValueInfo, ...] = ()
    value_info: tuple[ValueInfo, ...] = ()
    initializers: tuple[Tensor, ...] = ()
    sparse_initializers: tuple[SparseTensor, ...] = ()
    nodes: tuple[Node, ...] = ()
    """Nodes as stored in the file (from the reader: a :class:`NodeList`, built on first read)."""
    order: tuple[int, ...] | None = None
    """Indices into ``nodes`` in dependency order (section 3 rule 3); None when not resolved."""
    where: str = ""

    def ordered_nodes(self) -> tuple[Node, ...]:
        if self.order is None:
            return self.nodes
        return tuple(self.nodes[i] for i in self.order)


@dataclass(frozen=True, slots=True)
class OperatorSet:
    domain: str
    version: int


@dataclass(frozen=True, slots=True, eq=False)
class Function:
    """A model-local function (spec section 2.8). Carried, not expanded."""

    name: str
    domain: str = ""
    overload: str = ""
    doc: str = ""
    inputs: tuple[str, ...] = ()
    outputs: tuple[str, ...] = ()
    attribute_names: tuple[str, ...] = ()
    attribute_defaults: tuple[Attribute, ...] = ()
    nodes: tuple[Node, ...] = ()
    opsets: tuple[OperatorSet, ...] = ()
    where: str = ""
    order: tuple[int, ...] | None = None
    """Indices into ``nodes`` in dependency order (section 3 rule 3, as for a graph); None when not resolved."""

    def ordered_nodes(self) -> tuple[Node, ...]:
        if self.order is None:
            return tuple(self.nodes)
        return tuple(self.nodes[i] for i in self.order)


@dataclass(frozen=True, slots=True, eq=False)
class Model:
    """The top-level object (spec section 2.1)."""

    ir_version: int
    graph: Graph
    format_version: int = 1
    producer_name: str = ""
    producer_version: str = ""
    domain: str = ""
    doc: str = ""
    model_version: int = 0
    opsets: tuple[OperatorSet, ...] = ()
    metadata: tuple[tuple[str, str], ...] = ()
    functions: tuple[Function, ...] = ()
    where: str = "manifest"


def walk_graphs(graph: Graph, where: str | None = None):
    """Yield ``graph`` and every graph nested in its nodes' attributes, depth first, in place."""
    yield graph
    for node in nodes_with_contents(graph.nodes):
        for attr in node.attributes:
            for sub in attr.graphs():
                yield from walk_graphs(sub)


_TENSOR_ATTRS = frozenset(int(t) for t in (dtypes.AttrType.TENSOR, dtypes.AttrType.TENSORS, dtypes.AttrType.SPARSE_TENSOR, dtypes.AttrType.SPARSE_TENSORS))
_GRAPH_ATTRS = frozenset(int(t) for t in (dtypes.AttrType.GRAPH, dtypes.AttrType.GRAPHS))


def all_tensors(model: Model) -> list[Tensor]:
    """Every tensor in the writer's order of section 1.3 (sparse: values then indices).

    Built as one list in a single walk (the reader's findings and the writer call it on LLM-size models:
    no generator frame per node).
    """
    out: list[Tensor] = []

    def attrs(attributes) -> None:
        for a in attributes:
            t = a.type
            if t in _TENSOR_ATTRS:
                out.extend(a.tensors())
            elif t in _GRAPH_ATTRS:  # in place
                for sub in a.graphs():
                    graph(sub)

    def graph(g: Graph) -> None:
        out.extend(g.initializers)
        for sp in g.sparse_initializers:
            out.append(sp.values)
            out.append(sp.indices)
        for n in nodes_with_contents(g.nodes):
            attrs(n.attributes)

    graph(model.graph)
    for f in model.functions:
        for n in f.nodes:
            if n.attributes:
                attrs(n.attributes)
        attrs(f.attribute_defaults)
    return out
