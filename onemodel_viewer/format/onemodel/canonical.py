"""The canonical form of a manifest: a cheap proof that the writer would emit these very bytes,
and the exact writer comparison it shortcuts (the ``noncanonical-manifest`` finding).

The ``noncanonical-manifest`` finding compares the manifest with what the section 4 writer
emits (``writer.encode_manifest(model)``), which costs about as much as the whole open. For a
manifest that parsed without duplicate keys and built a model without problems, the writer
emits exactly ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)`` of a value that
differs from the parsed one only in key order, unknown keys and optional keys at their default
(every scalar in a known field was validated by the reader and is written back unchanged;
base64 is canonical or a problem; a float anywhere in a known field is a problem). So
``data == writer output`` when (1) ``data`` is the compact dump of its own parse
(:func:`canonical_text`) and (2) every object has the writer's keys in the writer's order
(:func:`canonical_structure`). Both are proofs only: False means "maybe not", and the caller
then runs the exact writer comparison (tests compare both ways on every corpus file):
:func:`writer_difference`, which encodes record by record and stops at the first differing
byte (another writer's file usually differs in its first object's key order: nothing else
is encoded, and no lazy node record is built).
"""

from __future__ import annotations

import json
import re
from itertools import accumulate as _accumulate
from itertools import repeat as _repeat
from operator import itemgetter as _itemgetter

from ..dtypes import AttrType
from .json_scan import LazyRe
from .json_scan import lazy_orjson as _orjson

__all__ = ["canonical_structure", "canonical_text", "writer_difference"]


STEP_CHUNKS = 256
"""Records encoded between two ``step()`` of :func:`writer_difference` (~5 ms: 10,000 nodes take ~200 ms)."""


def writer_difference(have: bytes, model, value: dict | None = None, *, structured: bool | None = None,
                      step=None) -> int | None:
    """Index of the first byte where ``have`` differs from ``writer.encode_manifest(model)``
    (the shorter one's length when one is a prefix of the other), or None when they are equal.

    ``value`` is the parsed manifest ``model`` was read from (without problems). When its objects
    have the writer's keys in the writer's order (:func:`canonical_structure`), the writer emits
    its compact encoding, which orjson writes in one call (a pretty-printed or newline-terminated
    copy of the writer's manifest: ~3 ms for 2.3 MB). Otherwise the writer's encoding is made a
    record at a time (:func:`writer_chunks`) and compared as it comes, so that another writer's
    key order stops it at the first object. ``structured``: ``canonical_structure(value)`` when the
    caller has it already. Raises what the writer raises (``FormatError``; ``ValueError`` for a
    lone surrogate). ``step()`` is asked every few hundred records (a background job's cancel: it
    waits there while the UI draws); True stops the comparison, which then returns None (the caller,
    having asked, knows the answer is no answer).
    """
    if value is not None and (canonical_structure(value) if structured is None else structured):
        try:
            return _first_difference(have, _orjson().dumps(value))
        except _orjson().JSONEncodeError:  # deeper than orjson writes: record by record
            pass
    pos, n = 0, len(have)
    for i, chunk in enumerate(writer_chunks(model, value)):
        if step is not None and i % STEP_CHUNKS == 0 and step():
            return None
        if not have.startswith(chunk, pos):
            return pos + _first_difference(have[pos : pos + len(chunk)], chunk)
        pos += len(chunk)
    return None if pos == n else pos


def _first_difference(a: bytes, b: bytes) -> int | None:
    """First index where ``a`` and ``b`` differ (the shorter length if one is a prefix), or None.
    Equal halves are skipped with ``startswith`` (a memcmp; b's slices copy about len(b) in all)."""
    if a == b:
        return None
    n = min(len(a), len(b))
    if a.startswith(b) or b.startswith(a):
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo], a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a.startswith(b[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


def compact_json(value) -> bytes:
    """``json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)`` as UTF-8,
    which orjson writes byte for byte for the writer's records (no floats: tests compare the two);
    the standard library for what orjson refuses (over 254 levels, integers beyond 64 bits)."""
    try:
        return _orjson().dumps(value)
    except _orjson().JSONEncodeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def writer_chunks(model, value: dict | None = None):
    """``writer.encode_manifest(model)`` in pieces, in order: the writer's own dicts (key order and
    optional fields are its decision), built and encoded one record (value info, tensor, node,
    function) at a time; the top level and each graph from the writer's encoding of a copy
    without its records. With ``value`` (the parse ``model`` was read from), a main-graph node
    stored with the writer's keys and only number or string attributes is its parsed dict, as
    the writer would write it (:func:`canonical_structure`'s rule), and its record is not built."""
    import dataclasses

    from . import writer as W
    from ..schema import Graph

    def array(n: int, one):
        yield b"["
        for i in range(n):
            yield one(i) if i == 0 else b"," + one(i)
        yield b"]"

    def records(items, encode_one):
        return array(len(items), lambda i: compact_json(encode_one(items[i])))

    def nodes(g, raw):
        if raw is None:
            return records(g.nodes, W._node)

        def one(i):
            if _writer_shaped_node(raw[i]):
                try:
                    return _orjson().dumps(raw[i])
                except _orjson().JSONEncodeError:  # pragma: no cover - the reader checked every number
                    pass
            return compact_json(W._node(g.nodes[i]))

        return array(len(g.nodes), one)

    def graph(g, raw):
        arrays = {
            "inputs": lambda: records(g.inputs, W._vi), "outputs": lambda: records(g.outputs, W._vi),
            "value_info": lambda: records(g.value_info, W._vi), "initializers": lambda: records(g.initializers, W._tensor),
            "sparse_initializers": lambda: records(g.sparse_initializers, W._sparse), "nodes": lambda: nodes(g, raw),
        }
        skeleton = W._graph(dataclasses.replace(g, **{k: () for k in arrays}))
        yield from members(skeleton, lambda k: arrays[k]() if k in arrays else None)

    def members(d: dict, streamed):
        yield b"{"
        for i, (k, v) in enumerate(d.items()):
            yield (b"," if i else b"") + compact_json(k) + b":"
            parts = streamed(k)
            if parts is None:
                yield compact_json(v)
            else:
                yield from parts
        yield b"}"

    raw = None
    if value is not None:
        raw = value.get("graph", {}).get("nodes") if type(value.get("graph")) is dict else None
        if type(raw) is not list or len(raw) != len(model.graph.nodes):
            raw = None
    # one function at most in the copy: the key is there exactly when the model has functions
    top = W.manifest_dict(dataclasses.replace(model, graph=Graph(), functions=tuple(model.functions[:1])))
    yield from members(top, lambda k: graph(model.graph, raw) if k == "graph"
                       else records(model.functions, W._function) if k == "functions" else None)


_K_SCALAR_ATTR = ("name", "type", "value")


def _writer_shaped_node(raw) -> bool:
    """A parsed node the writer writes back as it is: its keys and order, a non-empty ``doc`` if any,
    attributes of exactly {name, type, value} with a number or string value (:data:`_SCALAR_ATTRS`)."""
    if type(raw) is not dict:
        return False
    keys = tuple(raw)
    if keys != _K_NODE and not (keys == _K_NODE_DOC and raw["doc"]):
        return False
    for a in raw["attributes"]:
        if type(a) is not dict or tuple(a) != _K_SCALAR_ATTR or a["type"] not in _SCALAR_ATTRS:
            return False
    return True


_CANON_ESCAPES = frozenset(
    [b'\\"', b"\\\\", b"\\b", b"\\f", b"\\n", b"\\r", b"\\t"]
    + [b"\\u%04x" % c for c in range(32) if c not in (8, 9, 10, 12, 13)]
)
_ESCAPES = LazyRe(rb"\\(?:u[0-9a-fA-F]{4}|.)", re.S)
_NEG_ZERO = LazyRe(rb"[:,\[]-0[,\]}]")
_MINUS_ZERO = LazyRe(rb"-0")


def has_minus_zero(data: bytes) -> bool:
    """``b"-0" in data``, faster: ``bytes.__contains__`` with this two-byte needle is slow on JSON
    full of digits (~2 ms for 2 MB), a regex ~0.7 ms; '-' is rare, and ``find`` of one byte is a
    memchr. Past a few thousand '-' the regex takes over."""
    i = data.find(b"-")
    for _ in range(4096):
        if i < 0:
            return False
        if data[i + 1 : i + 2] == b"0":
            return True
        i = data.find(b"-", i + 1)
    return _MINUS_ZERO.search(data, i) is not None


def canonical_text(data: bytes) -> bool:
    """True only if ``data`` (JSON that parses, no duplicate keys) is the compact
    ``json.dumps(..., separators=(",", ":"), ensure_ascii=False)`` of its own parse.

    No whitespace outside strings (raw tab/newline/CR cannot be inside one), every escape the
    one ``json.dumps`` writes (``\\"``, ``\\\\``, ``\\n``-style, lowercase ``\\u00xx`` for other
    controls), no ``-0``. Escapes pair up left to right (every backslash in valid JSON starts an
    escape or ends ``\\\\``), so one regex scan finds them all. Spaces and ``-0`` are proven
    inside strings by quote parity; with an escaped quote anywhere they are not proven (``False``:
    the caller then compares exactly).
    """
    if b"\n" in data or b"\r" in data or b"\t" in data:
        return False
    if b"\\" in data and not _CANON_ESCAPES.issuperset(_ESCAPES.findall(data)):
        return False
    if b" " in data or (has_minus_zero(data) and _NEG_ZERO.search(data) is not None):
        # Inside a string or not? Count quotes before each: an odd count is inside, exactly,
        # when no quote is escaped (then every '"' opens or closes a string). C-speed counts.
        if b'\\"' in data:
            return False
        if b" " in data:
            segs = data.split(b" ")
            counts = list(map(bytes.count, segs, _repeat(b'"', len(segs) - 1)))
            if set(map((1).__and__, _accumulate(counts))) != {1}:
                return False
        if has_minus_zero(data):
            prev = quotes = 0
            for m in _NEG_ZERO.finditer(data):
                quotes += data.count(b'"', prev, m.start())
                prev = m.start()
                if not quotes & 1:
                    return False
    return True


_K_NODE = ("name", "op", "domain", "overload", "inputs", "outputs", "attributes")
_K_NODE_DOC = ("name", "op", "domain", "overload", "doc", "inputs", "outputs", "attributes")
_K_ATTRS = {
    ("name", "type", "value"): (),
    ("name", "type", "doc", "value"): ("doc",),
    ("name", "type", "ref"): ("ref",),
    ("name", "type", "doc", "ref"): ("doc", "ref"),
}
_K_TENSORS = {
    ("name", "dtype", "dims", "data"): False,
    ("name", "dtype", "dims", "strings"): False,
    ("name", "dtype", "dims", "doc", "data"): True,
    ("name", "dtype", "dims", "doc", "strings"): True,
}
_K_DATA = ("offset", "length")
_K_VI = {("name",), ("name", "type")}
_K_TYPES = frozenset(
    [(k, ("kind", "elem")) for k in ("tensor", "sparse_tensor")]
    + [(k, ("kind", "elem", "shape")) for k in ("tensor", "sparse_tensor")]
    + [(k, ("kind", "inner")) for k in ("sequence", "optional")]
    + [("map", ("kind", "key", "inner")), ("opaque", ("kind", "domain", "name"))]
)
_K_GRAPH = ("inputs", "outputs", "value_info", "initializers", "sparse_initializers", "nodes")
_K_SPARSE = ("values", "indices", "dims")
_K_FUNCTION = ("inputs", "outputs", "attribute_names", "attribute_defaults", "nodes", "opsets")
_K_OPSET = ("domain", "version")
_K_META = ("key", "value")
_get_kind = _itemgetter("kind")
_get_type = _itemgetter("type")
_SCALAR_ATTRS = frozenset(int(t) for t in (AttrType.FLOAT, AttrType.INT, AttrType.STRING, AttrType.FLOATS, AttrType.INTS,
                                             AttrType.STRINGS))


class _NotCanonical(Exception):
    pass


def _need(ok) -> None:
    if not ok:
        raise _NotCanonical


def canonical_structure(value: dict) -> bool:
    """True only if every object of ``value`` (a manifest whose model read without problems) has
    exactly the keys the writer emits for its record, in the writer's order (optional keys
    present only when not at their default). Bulk checks at C speed: distinct key tuples."""
    try:
        _CanonWalk().model(value)
    except (_NotCanonical, KeyError, TypeError, AttributeError):
        return False
    return True


class _CanonWalk:
    def __init__(self) -> None:
        self.graphs: list = []
        self.types: list = []
        self.tensors: list = []

    def model(self, o: dict) -> None:
        want = ["format", "version", "ir_version"]
        want += [k for k in ("producer_name", "producer_version", "domain", "doc", "model_version") if o.get(k)]
        want.append("opsets")
        if o.get("metadata"):
            want.append("metadata")
        want.append("graph")
        if o.get("functions"):
            want.append("functions")
        _need(list(o) == want)
        self.opsets(o["opsets"])
        for m in o.get("metadata", ()):
            _need(tuple(m) == _K_META)
        self.graphs.append(o["graph"])
        for f in o.get("functions", ()):
            want = ["name", "domain", "overload"]
            if f.get("doc"):
                want.append("doc")
            want += _K_FUNCTION
            _need(list(f) == want)
            self.attributes(f["attribute_defaults"])
            self.nodes(f["nodes"])
            self.opsets(f["opsets"])
        while self.graphs or self.types or self.tensors:
            while self.graphs:
                self.graph(self.graphs.pop())
            if self.tensors:
                tensors, self.tensors = self.tensors, []
                self.tensor_list(tensors)
            if self.types:
                types, self.types = self.types, []
                self.type_list(types)

    def opsets(self, ops: list) -> None:
        _need(set(map(tuple, ops)) <= {_K_OPSET})

    def graph(self, g: dict) -> None:
        want = [k for k in ("name", "doc") if g.get(k)]
        want += _K_GRAPH
        _need(list(g) == want)
        vis = g["inputs"] + g["outputs"] + g["value_info"]
        _need(set(map(tuple, vis)) <= _K_VI)
        self.types.extend([v["type"] for v in vis if len(v) == 2])
        self.tensors.extend(g["initializers"])
        self.sparse_list(g["sparse_initializers"])
        self.nodes(g["nodes"])

    def sparse_list(self, sparse: list) -> None:
        if sparse:
            _need(set(map(tuple, sparse)) == {_K_SPARSE})
            for s in sparse:
                self.tensors.append(s["values"])
                self.tensors.append(s["indices"])

    def nodes(self, nodes: list) -> None:
        # one pass for the key tuples and the attributes: each pass over 2*10^6 parsed nodes is a
        # cache miss a node (two C-speed passes 1.22 s, this loop 0.72 s, CPU at load 5)
        keys: set = set()
        add = keys.add
        attrs: list = []
        gather = attrs.extend
        for n in nodes:
            add(tuple(n))
            a = n["attributes"]
            if a:
                gather(a)
        if keys - {_K_NODE}:
            _need(keys <= {_K_NODE, _K_NODE_DOC})
            _need(all(n["doc"] for n in nodes if len(n) == 8))
        if attrs:
            self.attributes(attrs)

    def attributes(self, attrs: list) -> None:
        for keys in set(map(tuple, attrs)):
            nondefault = _K_ATTRS[keys]  # KeyError: not a writer's key tuple
            for k in nondefault:
                _need(all(a[k] for a in attrs if tuple(a) == keys))
        if set(map(_get_type, attrs)) <= _SCALAR_ATTRS:
            return  # no attribute holds a tensor, graph or type
        for a in attrs:
            t = a["type"]
            if t in _SCALAR_ATTRS or "value" not in a:
                continue
            v = a["value"]
            if t == AttrType.TENSOR:
                self.tensors.append(v)
            elif t == AttrType.GRAPH:
                self.graphs.append(v)
            elif t == AttrType.TENSORS:
                self.tensors.extend(v)
            elif t == AttrType.GRAPHS:
                self.graphs.extend(v)
            elif t == AttrType.SPARSE_TENSOR:
                self.sparse_list([v])
            elif t == AttrType.SPARSE_TENSORS:
                self.sparse_list(v)
            elif t == AttrType.TYPE_PROTO:
                self.types.append(v)
            elif t == AttrType.TYPE_PROTOS:
                self.types.extend(v)
            else:  # pragma: no cover - the reader reports other codes
                raise _NotCanonical

    def tensor_list(self, tensors: list) -> None:
        for keys in set(map(tuple, tensors)):
            if _K_TENSORS[keys]:  # KeyError: not a writer's key tuple
                _need(all(t["doc"] for t in tensors if len(t) == 5))
        datas = [t["data"] for t in tensors if "data" in t]
        _need(set(map(tuple, datas)) <= {_K_DATA})

    def type_list(self, types: list) -> None:
        _need(set(zip(map(_get_kind, types), map(tuple, types))) <= _K_TYPES)
        self.types.extend([t["inner"] for t in types if "inner" in t])
