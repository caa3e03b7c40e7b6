"""The OneModel reader: header, manifest, schema, reading rules (spec sections 1-3), strict or diagnose.

``open_path(path, mode)`` sniffs the first 8 bytes: ``ONEMODEL`` goes to this reader; a file
that does not end in ``.onemodel``, has at least 8 bytes and does not start with something close
to the magic goes to the ONNX importer (``onnx_import.import_onnx``); anything else is read here
(and fails at ``header.magic``).

One code path for both modes: every check calls ``self.report(kind, where, offset, message)``;
the strict reporter raises, the diagnose reporter records and the builder carries on with a
safe default, so strict's error is exactly diagnose's ``problems[0]``. Manifest-path problems
get the file offset of their JSON value from :func:`.manifest.locate` (failure path only; in
diagnose mode only the first ``LOCATE_CAP`` problems are located).

Decisions the spec leaves open (see also CLARIFICATIONS.md, ``header.py`` and ``manifest.py``):

* A ``where`` points at the JSON value that holds the offending thing. Names: a duplicate
  definition is reported at the second definition's name string (``...inputs[1].name``,
  ``...initializers[2].name``, ``...sparse_initializers[0].values.name``,
  ``...nodes[3].outputs[0]``); an undefined name at the reference (``...nodes[3].inputs[1]``,
  ``...outputs[0].name``, ``manifest.functions[0].outputs[1]``). A graph or function output named
  ``""`` is such an undefined name (``""`` as an omitted operand is for node operands only).
* Tensor element count at 2^60 or more: **Unsupported** at ``...dims`` (the reader does not
  handle it; it is not "impossible"). A negative dim: InvalidModel at ``...dims[i]``.
* Tensor ``data``: negative or non-integer offset/length: Malformed at ``.data.offset`` /
  ``.data.length``; length not ``ceil(count*bits/8)``: InvalidModel at ``.data.length``; length
  over 2^31-1: Unsupported at ``.data.length``; offset not a multiple of 64 (length > 0):
  Malformed at ``.data.offset``; ``offset + length > data_length``: Malformed at ``.data``.
  The two range problems carry the claimed file offset (data_offset + offset).
* A string tensor with ``data``: Malformed at ``.data``; a non-string tensor with ``strings``:
  Malformed at ``.strings``; string count not the element count: InvalidModel at ``.strings``.
* base64 must be canonical RFC 4648 (alphabet, padding, zero pad bits): else Malformed.
* Sparse tensors: ``values`` and ``indices`` required, ``dims`` optional.
* Opset entries: ``version`` required, ``domain`` optional. Function nodes may use the domains of
  the function's ``opsets`` or the model's.
* An attribute ``ref`` outside a function, or naming neither an ``attribute_names`` entry nor an
  ``attribute_defaults`` name of its function: **InvalidModel** at ``...attributes[k].ref``
  (an undefined reference, like an undefined value name).
* Nesting: the main graph and each function body are level 1; a graph in a node attribute, a
  type in a graph (value infos, TYPE_PROTO attributes) or in a type is one more. Level 65 is
  Unsupported at that graph's/type's path.
* A node referring to an outer-scope value through a subgraph depends on that value's producer
  (implicit input) for the dependency order, as in ONNX.
* A cycle: InvalidModel at the first (lowest-index) node of one cycle, ``...nodes[i]``;
  diagnose mode still orders every node (the unorderable ones last, in stored order).
* A path that is not a regular file (FIFO, device, directory) or cannot be opened: Io at ``file``.

``open_with_manifest(path, mode)`` is ``open_path`` plus the parsed manifest JSON (``--check``
proves the manifest canonical from it: ``analysis.layout.noncanonical(doc, parsed)``).

Records: graphs of ``BULK_NODES`` nodes or more get a :class:`~.schema.NodeList`. Every node is
checked at open, but the records of nodes whose attributes hold only numbers (INT, INTS, FLOAT,
FLOATS) are built on the first read of the list (``--check`` and name resolution never build
them: resolution reads each node's inputs, outputs and domain from the checked JSON). Anything
doubtful is built at open through the per-node path, so problems are the same either way
(``tests/test_reader_lazy.py`` reads every bundled file and mutation both ways).

Findings reported at open time (cheap): ``wide-data-offset``, ``missing-graph-array``,
``out-of-order`` (at the first node stored before something it reads), and in diagnose mode
``duplicate-key`` (strict opens skip its detection: it costs ~13% of an open).
``analysis.layout.all_findings`` adds the rest (padding, unowned/shared bytes, canonical form).
"""

from __future__ import annotations

import gc
import itertools
import operator
import os
import stat
import sys
import threading
from collections.abc import Sequence

from . import header as _header
from . import manifest as _manifest
from . import ort as _ort
from .document import HEADER_SIZE, Document
from .dtypes import DTYPES, STRING
from .errors import Finding, FormatError, Kind, Problem
from .records import MISSING, record_fields
from .schema import (  # promote_survivors: re-exported for commands/check
    Attribute,
    AttrType,
    Function,
    Graph,
    Model,
    Node,
    NodeList,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
    promote_survivors,
)
from .storage import FileStorage, Storage

MAX_LEVEL = 64
"""Graphs and types open at once (main graph = 1)."""
MAX_COUNT = _header.MAX_COUNT
MAX_TENSOR_BYTES = _header.MAX_TENSOR_BYTES
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1
U32_MAX = (1 << 32) - 1
LOCATE_CAP = 2000
"""Diagnose mode: how many problems, and how many findings, get a located manifest offset (the first look-up in
each array is linear, later ones are cached; past the cap the offset is None)."""

_LOCATE = object()
_ABSENT = object()
_EMPTY: list = []
_join = "".join
_chain = itertools.chain
_tensor_fields = operator.itemgetter("name", "dtype", "dims", "data")
_data_fields = operator.itemgetter("offset", "length")
_attr_fields = operator.itemgetter("name", "type", "value")
_node_fields = operator.itemgetter("name", "op", "domain", "overload", "inputs", "outputs", "attributes")
_get_inputs = operator.itemgetter("inputs")
_get_outputs = operator.itemgetter("outputs")
_get_domain = operator.itemgetter("domain")
_DEFAULT_DOMAINS = ("", "ai.onnx")
_TYPE_KINDS = ("tensor", "sparse_tensor", "sequence", "optional", "map", "opaque")
_GRAPH_ARRAYS = ("inputs", "outputs", "value_info", "initializers", "sparse_initializers", "nodes")
BULK_NODES = 32
"""Graphs with at least this many nodes, all sound on the fast path, get a lazily built :class:`NodeList`."""


# ---------------------------------------------------------------------------------------------
# fast record construction: a mutable twin with the same slots, re-classed after __init__
# (a frozen record's __init__ pays object.__setattr__ per field: ~9x slower for a Node)


def fast_constructor(cls):
    """A constructor for a frozen slotted record ``cls`` that skips ``object.__setattr__``.

    It builds a mutable twin class with the same slots, sets the fields, then re-classes the
    instance to ``cls``: the result is an ordinary ``cls`` instance (frozen, same repr/eq), built
    ~9x faster. Falls back to ``cls`` itself when the twin is not layout-compatible.
    """
    fields = record_fields(cls)
    names = tuple(name for name, _default in fields)
    if getattr(cls, "__slots__", None) != names:  # pragma: no cover - schema changed shape
        return cls
    ns: dict = {"_cls": cls}
    params = []
    for name, default in fields:
        if default is not MISSING:
            ns[f"_d_{name}"] = default
            params.append(f"{name}=_d_{name}")
        else:
            params.append(name)
    body = "".join(f"    self.{n} = {n}\n" for n in names)
    src = f"def __init__(self, {', '.join(params)}):\n{body}    self.__class__ = _cls\n"
    exec(src, ns)  # noqa: S102 - generated from the record's own field names
    twin = type(f"_{cls.__name__}Maker", (), {"__slots__": names, "__init__": ns["__init__"]})
    try:
        probe = twin(**{name: None for name, default in fields if default is MISSING})
        if type(probe) is not cls:  # pragma: no cover
            return cls
    except TypeError:  # pragma: no cover - layouts not compatible on this Python
        return cls
    return twin


_Node = fast_constructor(Node)
_Tensor = fast_constructor(Tensor)
_ValueInfo = fast_constructor(ValueInfo)
_Type = fast_constructor(Type)
_Attribute = fast_constructor(Attribute)
_Graph = fast_constructor(Graph)


# ---------------------------------------------------------------------------------------------
# the reporter


class Reporter:
    """Raises (strict) or records (diagnose) every problem: one code path for both modes."""

    __slots__ = ("strict", "problems", "findings", "manifest", "base", "_located", "_locator")

    def __init__(self, strict: bool) -> None:
        self.strict = strict
        self.problems: list[Problem] = []
        self.findings: list[Finding] = []
        self.manifest: bytes | None = None
        self.base = 64
        self._located = [0, 0]  # problems, findings
        self._locator: _manifest.Locator | None = None

    def locate(self, where: str, finding: bool = False) -> int | None:
        # problems and findings have a cap each: findings (e.g. thousands of duplicate keys) must
        # not use up the look-ups of the problems, or diagnose's problems[0] would lose the offset
        # that strict's error has
        if self.manifest is None or self._located[finding] >= LOCATE_CAP:
            return None
        self._located[finding] += 1
        if self._locator is None:
            self._locator = _manifest.Locator(self.manifest)
        found = self._locator.nearest(where)
        return None if found is None else self.base + found[0]

    def __call__(self, kind: Kind, where: str, offset, message: str) -> None:
        if offset is _LOCATE:
            offset = self.locate(where)
        if self.strict:
            raise FormatError(kind, where, offset, message)
        self.problems.append(Problem(kind, where, offset, message))

    def finding(self, code: str, where: str, offset, message: str) -> None:
        if offset is _LOCATE:
            offset = self.locate(where, finding=True)
        self.findings.append(Finding(code, where, offset, message))


def _jtype(v) -> str:
    if v is None:
        return "null"
    t = type(v)
    if t is bool:
        return "a boolean"
    if t is int:
        return "an integer"
    if t is float:
        return "a number with a fraction or exponent"
    if t is str:
        return "a string"
    if t is list:
        return "an array"
    if t is dict:
        return "an object"
    return t.__name__  # pragma: no cover


def _b64decode(s: str) -> bytes | None:
    """Strict RFC 4648 base64 (standard alphabet, padded, canonical) or None."""
    if len(s) % 4:
        return None
    import base64  # lazily: the --check path of a file without STRING data never needs it
    import binascii

    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None
    if base64.b64encode(raw).decode("ascii") != s:  # non-zero pad bits
        return None
    return raw


# ---------------------------------------------------------------------------------------------
# the builder: JSON values -> schema records


class _Builder:
    def __init__(self, report: Reporter, data_offset: int | None, data_length: int | None, storage: Storage | None) -> None:
        self.report = report
        self.data_offset = data_offset
        self.data_length = data_length
        self.storage = storage
        self.missing_arrays: list[str] = []

    # -- typed field access (the failure paths build the where strings) ------------------------

    def bad(self, kind: Kind, where: str, message: str, offset=_LOCATE) -> None:
        self.report(kind, where, offset, message)

    def req_missing(self, w: str, key: str, what: str) -> None:
        self.bad(Kind.MALFORMED, f"{w}.{key}", f"required field {key!r} ({what}) is missing")

    def wrong(self, w: str, v, what: str) -> None:
        self.bad(Kind.MALFORMED, w, f"expected {what}, found {_jtype(v)}")

    def opt_str(self, o: dict, key: str, w: str) -> str:
        v = o.get(key, "")
        if type(v) is str:
            return v
        self.wrong(f"{w}.{key}", v, "a string")
        return ""

    def req_str(self, o: dict, key: str, w: str) -> str:
        v = o.get(key, _ABSENT)
        if type(v) is str:
            return v
        if v is _ABSENT:
            self.req_missing(w, key, "a string")
        else:
            self.wrong(f"{w}.{key}", v, "a string")
        return ""

    def int_ok(self, v, w: str) -> bool:
        if type(v) is int:
            if I64_MIN <= v <= I64_MAX:
                return True
            self.bad(Kind.MALFORMED, w, f"integer {v} does not fit in 64 bits")
            return False
        self.wrong(w, v, "an integer")
        return False

    def req_int(self, o: dict, key: str, w: str) -> int | None:
        v = o.get(key, _ABSENT)
        if type(v) is int and I64_MIN <= v <= I64_MAX:
            return v
        if v is _ABSENT:
            self.req_missing(w, key, "an integer")
            return None
        self.int_ok(v, f"{w}.{key}")
        return None

    def opt_int(self, o: dict, key: str, w: str) -> int:
        v = o.get(key, 0)
        if type(v) is int and I64_MIN <= v <= I64_MAX:
            return v
        self.int_ok(v, f"{w}.{key}")
        return 0

    def opt_list(self, o: dict, key: str, w: str) -> list:
        v = o.get(key, _ABSENT)
        if type(v) is list:
            return v
        if v is _ABSENT:
            return []
        self.wrong(f"{w}.{key}", v, "an array")
        return []

    def str_list(self, o: dict, key: str, w: str) -> tuple[str, ...]:
        v = o.get(key, _ABSENT)
        if type(v) is list:
            t = tuple(v)
            for x in t:
                if type(x) is not str:
                    break
            else:
                return t
            out = []
            for i, x in enumerate(t):
                if type(x) is str:
                    out.append(x)
                else:
                    self.wrong(f"{w}.{key}[{i}]", x, "a string")
                    out.append("")
            return tuple(out)
        if v is _ABSENT:
            return ()
        self.wrong(f"{w}.{key}", v, "an array")
        return ()

    def obj(self, v, w: str, what: str) -> bool:
        if type(v) is dict:
            return True
        self.wrong(w, v, f"{what} (an object)")
        return False

    def too_deep(self, w: str, what: str) -> None:
        self.bad(Kind.UNSUPPORTED, w, f"{what} nested more than {MAX_LEVEL} levels deep (graphs and types count together)")

    # -- records -------------------------------------------------------------------------------

    def model(self, o: dict, header_version: int) -> Model | None:
        w = "manifest"
        fmt = o.get("format", _ABSENT)
        if fmt is _ABSENT:
            self.req_missing(w, "format", "a string")
        elif fmt != "onemodel" or type(fmt) is not str:
            if type(fmt) is str:
                self.bad(Kind.MALFORMED, "manifest.format", f"format is {fmt!r}, not 'onemodel'")
            else:
                self.wrong("manifest.format", fmt, "a string")
        version = self.req_int(o, "version", w)
        if version is not None and version != header_version:
            self.bad(Kind.MALFORMED, "manifest.version", f"manifest version {version} differs from the header's {header_version}")
        ir = self.req_int(o, "ir_version", w)
        if ir is not None and ir < 3:
            self.bad(Kind.INVALID_MODEL, "manifest.ir_version", f"ir_version {ir} is below 3")
        producer_name = self.opt_str(o, "producer_name", w)
        producer_version = self.opt_str(o, "producer_version", w)
        domain = self.opt_str(o, "domain", w)
        doc = self.opt_str(o, "doc", w)
        model_version = self.opt_int(o, "model_version", w)
        opsets = self.opsets(o, w)
        metadata = []
        for i, m in enumerate(self.opt_list(o, "metadata", w)):
            mw = f"manifest.metadata[{i}]"
            if self.obj(m, mw, "a metadata entry"):
                metadata.append((self.req_str(m, "key", mw), self.req_str(m, "value", mw)))
        g = o.get("graph", _ABSENT)
        if g is _ABSENT:
            self.req_missing(w, "graph", "a Graph")
            graph = None
        elif self.obj(g, "manifest.graph", "a Graph"):
            graph = self.graph(g, "manifest.graph", 1)
        else:
            graph = None
        functions = tuple(
            self.function(f, f"manifest.functions[{i}]") for i, f in enumerate(self.opt_list(o, "functions", w))
        )
        if graph is None:
            graph = _Graph(where="manifest.graph")
        return Model(
            ir_version=ir if ir is not None else 0,
            graph=graph,
            format_version=version if version is not None else header_version,
            producer_name=producer_name,
            producer_version=producer_version,
            domain=domain,
            doc=doc,
            model_version=model_version,
            opsets=opsets,
            metadata=tuple(metadata),
            functions=tuple(f for f in functions if f is not None),
        )

    def opsets(self, o: dict, w: str) -> tuple[OperatorSet, ...]:
        out = []
        for i, e in enumerate(self.opt_list(o, "opsets", w)):
            ew = f"{w}.opsets[{i}]"
            if self.obj(e, ew, "an operator set"):
                d = self.opt_str(e, "domain", ew)
                v = self.req_int(e, "version", ew)
                out.append(OperatorSet(d, v if v is not None else 0))
        return tuple(out)

    def function(self, o, w: str) -> Function | None:
        if not self.obj(o, w, "a Function"):
            return None
        name = self.req_str(o, "name", w)
        domain = self.opt_str(o, "domain", w)
        overload = self.opt_str(o, "overload", w)
        doc = self.opt_str(o, "doc", w)
        inputs = self.str_list(o, "inputs", w)
        outputs = self.str_list(o, "outputs", w)
        attribute_names = self.str_list(o, "attribute_names", w)
        defaults = tuple(
            self.attribute(a, f"{w}.attribute_defaults[{i}]", 1) for i, a in enumerate(self.opt_list(o, "attribute_defaults", w))
        )
        nodes = tuple(self.node(n, f"{w}.nodes[{i}]", 1) for i, n in enumerate(self.opt_list(o, "nodes", w)))
        opsets = self.opsets(o, w)
        return Function(
            name=name, domain=domain, overload=overload, doc=doc, inputs=inputs, outputs=outputs,
            attribute_names=attribute_names, attribute_defaults=defaults, nodes=nodes, opsets=opsets, where=w,
        )

    def graph(self, o: dict, w: str, level: int) -> Graph:
        """``o`` is a dict; ``level`` its nesting level (checked by the caller)."""
        get = o.get
        name = get("name", "")
        if type(name) is not str:
            name = self.opt_str(o, "name", w)
        doc = get("doc", "")
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        arrays = []
        for key in _GRAPH_ARRAYS:
            v = get(key, _ABSENT)
            if type(v) is list:
                arrays.append(v)
            elif v is _ABSENT:
                self.missing_arrays.append(f"{w}.{key}")
                arrays.append([])
            else:
                self.wrong(f"{w}.{key}", v, "an array")
                arrays.append([])
        ins, outs, vinfo, inits, sparse, nodes = arrays
        tl = level + 1
        vi = self.value_info
        return _Graph(
            name=name,
            doc=doc,
            inputs=tuple([vi(x, f"{w}.inputs[{i}]", tl) for i, x in enumerate(ins)]),
            outputs=tuple([vi(x, f"{w}.outputs[{i}]", tl) for i, x in enumerate(outs)]),
            value_info=tuple([vi(x, f"{w}.value_info[{i}]", tl) for i, x in enumerate(vinfo)]),
            initializers=tuple([self.tensor(x, f"{w}.initializers[{i}]") for i, x in enumerate(inits)]),
            sparse_initializers=tuple(
                [s for s in (self.sparse(x, f"{w}.sparse_initializers[{i}]") for i, x in enumerate(sparse)) if s is not None]
            ),
            nodes=self.nodes(nodes, f"{w}.nodes", level),
            order=None,
            where=w,
        )

    def value_info(self, o, w: str, type_level: int) -> ValueInfo:
        if type(o) is not dict:
            self.wrong(w, o, "a TypedName (an object)")
            return _ValueInfo(name="", type=None, where=w)
        name = o.get("name", _ABSENT)
        if type(name) is not str:
            name = self.req_str(o, "name", w)
        t = o.get("type", _ABSENT)
        typ = None if t is _ABSENT else self.type(t, f"{w}.type", type_level)
        return _ValueInfo(name=name, type=typ, where=w)

    def type(self, o, w: str, level: int) -> Type | None:
        if level > MAX_LEVEL:
            self.too_deep(w, "type")
            return None
        if type(o) is not dict:
            self.wrong(w, o, "a Type (an object)")
            return None
        get = o.get
        kind = get("kind", _ABSENT)
        if type(kind) is not str:
            if kind is _ABSENT:
                self.req_missing(w, "kind", "a string")
            else:
                self.wrong(f"{w}.kind", kind, "a string")
            return None
        if kind == "tensor" or kind == "sparse_tensor":
            elem = get("elem", _ABSENT)
            if not (type(elem) is int and I64_MIN <= elem <= I64_MAX):
                elem = self.req_int(o, "elem", w) or 0
            shape = get("shape", _ABSENT)
            if shape is _ABSENT:
                dims = None
            elif type(shape) is list:
                dims = tuple(shape)
                for d in dims:
                    tp = type(d)
                    if not ((tp is int and 0 <= d <= I64_MAX) or tp is str or d is None):
                        dims = self.shape_slow(dims, f"{w}.shape")
                        break
            else:
                self.wrong(f"{w}.shape", shape, "an array")
                dims = None
            return _Type(kind=kind, elem=elem, shape=dims, where=w)
        if kind == "sequence" or kind == "optional":
            inner = self.inner(o, "inner", w, level)
            return _Type(kind=kind, inner=inner, where=w)
        if kind == "map":
            key = self.req_int(o, "key", w)
            inner = self.inner(o, "inner", w, level)
            return _Type(kind=kind, key=key or 0, inner=inner, where=w)
        if kind == "opaque":
            return _Type(kind=kind, domain=self.opt_str(o, "domain", w), name=self.opt_str(o, "name", w), where=w)
        self.bad(Kind.UNSUPPORTED, f"{w}.kind", f"unknown type kind {kind!r}")
        return None

    def shape_slow(self, dims: tuple, w: str) -> tuple:
        out = []
        for i, d in enumerate(dims):
            tp = type(d)
            if tp is str or d is None:
                out.append(d)
            elif tp is int:
                if d < 0:
                    self.bad(Kind.INVALID_MODEL, f"{w}[{i}]", f"negative dimension {d}")
                    out.append(None)
                elif d > I64_MAX:
                    self.bad(Kind.MALFORMED, f"{w}[{i}]", f"integer {d} does not fit in 64 bits")
                    out.append(None)
                else:
                    out.append(d)
            else:
                self.wrong(f"{w}[{i}]", d, "an integer, a string or null")
                out.append(None)
        return tuple(out)

    def inner(self, o: dict, key: str, w: str, level: int) -> Type | None:
        v = o.get(key, _ABSENT)
        if v is _ABSENT:
            self.req_missing(w, key, "a Type")
            return None
        return self.type(v, f"{w}.{key}", level + 1)

    def nodes(self, raw: list, w: str, level: int):
        """A graph's nodes (``w``: the array's where): a lazily built :class:`NodeList`, or a tuple.

        Graphs of ``BULK_NODES`` nodes or more whose every node is sound on the fast path get a
        :class:`NodeList`: every node is checked now exactly as :meth:`node` would check it, but
        only the nodes whose attributes hold more than numbers (tensors, graphs, strings, types,
        refs) are built now; the rest when the list is first read (a record costs more than its
        check). Anything doubtful: every node built now through :meth:`node`, which reports it.
        """
        n = len(raw)
        node = self.node
        if n >= BULK_NODES:
            eager_at = self.sound_nodes(raw)
            if eager_at is not None:
                eager = {i: node(raw[i], f"{w}[{i}]", level) for i in eager_at}
                columns = (list(map(_get_inputs, raw)), list(map(_get_outputs, raw)), list(map(_get_domain, raw)))
                return NodeList(n, lambda i: node(raw[i], f"{w}[{i}]", level), eager, w, columns)
        return tuple([node(x, f"{w}[{i}]", level) for i, x in enumerate(raw)])

    @staticmethod
    def sound_nodes(raw: list) -> list[int] | None:
        """Indices of the nodes to build now, or None when some node is not sound on :meth:`node`'s fast path.

        A node may wait when all seven fields have their JSON types, its inputs and outputs are
        strings, and each attribute is exactly {name, type, value} with an INT, INTS, FLOAT or
        FLOATS value that :meth:`attr_value` accepts; a node with any other attribute is built now.
        """
        eager: list[int] = []
        i = -1
        for o in raw:
            i += 1
            try:
                name, op, domain, overload, inputs, outputs, attrs = _node_fields(o)
            except (KeyError, TypeError):
                return None
            if not (
                type(op) is str and type(name) is str and type(domain) is str and type(overload) is str
                and type(inputs) is list and type(outputs) is list and type(attrs) is list
            ):
                return None
            if len(o) != 7 and type(o.get("doc", "")) is not str:
                return None
            try:
                _join(inputs)
                _join(outputs)
            except TypeError:
                return None
            for a in attrs:
                if type(a) is not dict or len(a) != 3:
                    break
                try:
                    an, at, av = _attr_fields(a)
                except KeyError:
                    break
                if type(an) is not str or type(at) is not int:
                    break
                if at == 2:
                    if not (type(av) is int and I64_MIN <= av <= I64_MAX):
                        break
                elif at == 7:
                    if type(av) is not list:
                        break
                    for x in av:
                        if not (type(x) is int and I64_MIN <= x <= I64_MAX):
                            break
                    else:
                        continue
                    break
                elif at == 1:
                    if not (type(av) is int and 0 <= av <= U32_MAX):
                        break
                elif at == 6:
                    if type(av) is not list:
                        break
                    for x in av:
                        if not (type(x) is int and 0 <= x <= U32_MAX):
                            break
                    else:
                        continue
                    break
                else:
                    break
            else:
                continue
            eager.append(i)
        return eager

    def node(self, o, w: str, level: int) -> Node:
        # Fast path: every field present with the right JSON type (what writers emit: section 4
        # always writes these seven), fetched in one C call.
        try:
            name, op, domain, overload, inputs, outputs, attrs = _node_fields(o)
        except (KeyError, TypeError):
            pass
        else:
            doc = "" if len(o) == 7 else o.get("doc", "")
            if (
                type(op) is str and type(name) is str and type(domain) is str and type(overload) is str
                and type(doc) is str and type(inputs) is list and type(outputs) is list and type(attrs) is list
            ):
                try:
                    _join(inputs)
                    _join(outputs)
                except TypeError:
                    pass
                else:
                    if attrs:
                        attributes = tuple([self.attribute(a, f"{w}.attributes[{i}]", level) for i, a in enumerate(attrs)])
                    else:
                        attributes = ()
                    return _Node(op, name, domain, overload, doc, tuple(inputs), tuple(outputs), attributes, w)
        return self.node_slow(o, w, level)

    def node_slow(self, o, w: str, level: int) -> Node:
        if type(o) is not dict:
            self.wrong(w, o, "a Node (an object)")
            return _Node(op="", where=w)
        op = self.req_str(o, "op", w)
        name = self.opt_str(o, "name", w)
        domain = self.opt_str(o, "domain", w)
        overload = self.opt_str(o, "overload", w)
        doc = self.opt_str(o, "doc", w)
        inputs = self.str_list(o, "inputs", w)
        outputs = self.str_list(o, "outputs", w)
        attributes = tuple(
            [self.attribute(a, f"{w}.attributes[{i}]", level) for i, a in enumerate(self.opt_list(o, "attributes", w))]
        )
        return _Node(
            op=op, name=name, domain=domain, overload=overload, doc=doc,
            inputs=inputs, outputs=outputs, attributes=attributes, where=w,
        )

    def attribute(self, o, w: str, level: int) -> Attribute:
        # Fast path: exactly {name, type, value} (no doc, no ref) with a known type code.
        try:
            name, t, value = _attr_fields(o)
        except (KeyError, TypeError):
            pass
        else:
            if len(o) == 3 and type(name) is str and type(t) is int and 1 <= t <= 14:
                if t == 2 and type(value) is int and I64_MIN <= value <= I64_MAX:
                    return _Attribute(name, 2, value, "", "", w)
                return _Attribute(name, t, self.attr_value(t, value, f"{w}.value", level), "", "", w)
        return self.attribute_slow(o, w, level)

    def attribute_slow(self, o, w: str, level: int) -> Attribute:
        if type(o) is not dict:
            self.wrong(w, o, "an Attribute (an object)")
            return _Attribute(name="", type=0, where=w)
        get = o.get
        name = get("name", _ABSENT)
        if type(name) is not str:
            name = self.req_str(o, "name", w)
        t = get("type", _ABSENT)
        if not (type(t) is int and I64_MIN <= t <= I64_MAX):
            t = self.req_int(o, "type", w)
            if t is None:
                return _Attribute(name=name, type=0, where=w)
        doc = get("doc", "")
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        ref = get("ref", "")
        if type(ref) is not str:
            ref = self.opt_str(o, "ref", w)
        if not 0 <= t <= 14:
            self.bad(Kind.UNSUPPORTED, f"{w}.type", f"unknown attribute type {t}")
            return _Attribute(name=name, type=t, ref=ref, doc=doc, where=w)
        value = get("value", _ABSENT)
        if ref:
            if value is not _ABSENT:
                self.bad(Kind.MALFORMED, f"{w}.value", "an attribute with a 'ref' must not have a 'value'")
            return _Attribute(name=name, type=t, value=None, ref=ref, doc=doc, where=w)
        if t == 0:
            self.bad(Kind.MALFORMED, f"{w}.type", "attribute type 0 (undefined) without a 'ref'")
            return _Attribute(name=name, type=t, doc=doc, where=w)
        if value is _ABSENT:
            self.req_missing(w, "value", AttrType(t).name)
            return _Attribute(name=name, type=t, doc=doc, where=w)
        return _Attribute(name=name, type=t, value=self.attr_value(t, value, f"{w}.value", level), ref="", doc=doc, where=w)

    def attr_value(self, t: int, v, w: str, level: int):
        if t == 2:  # INT
            return v if self.int_ok(v, w) else None
        if t == 1:  # FLOAT
            if type(v) is int and 0 <= v <= U32_MAX:
                return v
            if type(v) is int:
                self.bad(Kind.MALFORMED, w, f"float bits {v} outside 0..2^32-1")
            else:
                self.wrong(w, v, "an unsigned integer (the float's bits)")
            return None
        if t == 3:  # STRING
            return self.b64(v, w)
        if t == 4:  # TENSOR
            return self.tensor(v, w)
        if t == 5:  # GRAPH
            return self.sub_graph(v, w, level + 1)
        if t == 13:  # TYPE_PROTO
            return self.type(v, w, level + 1)
        if t == 11:  # SPARSE_TENSOR
            return self.sparse(v, w)
        if type(v) is not list:
            self.wrong(w, v, "an array")
            return None
        if t == 7:  # INTS
            out = tuple(v)
            for x in out:
                if not (type(x) is int and I64_MIN <= x <= I64_MAX):
                    return tuple(x if self.int_ok(x, f"{w}[{i}]") else 0 for i, x in enumerate(out))
            return out
        if t == 6:  # FLOATS
            out = tuple(v)
            for x in out:
                if not (type(x) is int and 0 <= x <= U32_MAX):
                    res = []
                    for i, y in enumerate(out):
                        if type(y) is int and 0 <= y <= U32_MAX:
                            res.append(y)
                        else:
                            if type(y) is int:
                                self.bad(Kind.MALFORMED, f"{w}[{i}]", f"float bits {y} outside 0..2^32-1")
                            else:
                                self.wrong(f"{w}[{i}]", y, "an unsigned integer (the float's bits)")
                            res.append(0)
                    return tuple(res)
            return out
        if t == 8:  # STRINGS
            return tuple(self.b64(x, f"{w}[{i}]") or b"" for i, x in enumerate(v))
        if t == 9:  # TENSORS
            return tuple(self.tensor(x, f"{w}[{i}]") for i, x in enumerate(v))
        if t == 10:  # GRAPHS
            return tuple(g for g in (self.sub_graph(x, f"{w}[{i}]", level + 1) for i, x in enumerate(v)) if g is not None)
        if t == 12:  # SPARSE_TENSORS
            return tuple(s for s in (self.sparse(x, f"{w}[{i}]") for i, x in enumerate(v)) if s is not None)
        if t == 14:  # TYPE_PROTOS
            return tuple(x for x in (self.type(x, f"{w}[{i}]", level + 1) for i, x in enumerate(v)) if x is not None)
        raise AssertionError(t)  # pragma: no cover - 0..14 handled above

    def sub_graph(self, v, w: str, level: int) -> Graph | None:
        if level > MAX_LEVEL:
            self.too_deep(w, "graph")
            return None
        if not self.obj(v, w, "a Graph"):
            return None
        return self.graph(v, w, level)

    def b64(self, v, w: str) -> bytes | None:
        if type(v) is not str:
            self.wrong(w, v, "a base64 string")
            return None
        raw = _b64decode(v)
        if raw is None:
            self.bad(Kind.MALFORMED, w, "not canonical padded base64 (RFC 4648, standard alphabet)")
        return raw

    def sparse(self, o, w: str) -> SparseTensor | None:
        if not self.obj(o, w, "a SparseTensor"):
            return None
        vals = o.get("values", _ABSENT)
        if vals is _ABSENT:
            self.req_missing(w, "values", "a Tensor")
            values = _Tensor(name="", dtype=0, dims=(), where=f"{w}.values")
        else:
            values = self.tensor(vals, f"{w}.values")
        idx = o.get("indices", _ABSENT)
        if idx is _ABSENT:
            self.req_missing(w, "indices", "a Tensor")
            indices = _Tensor(name="", dtype=0, dims=(), where=f"{w}.indices")
        else:
            indices = self.tensor(idx, f"{w}.indices")
        dims = self.dims(o, w, required=False)
        return SparseTensor(values=values, indices=indices, dims=dims[0], where=w)

    def dims(self, o: dict, w: str, required: bool) -> tuple[tuple[int, ...], int | None]:
        """(dims, element count or None when unusable)."""
        v = o.get("dims", _ABSENT)
        if type(v) is list:
            dims = tuple(v)
            ok = True
            for d in dims:
                if not (type(d) is int and 0 <= d <= I64_MAX):
                    ok = False
                    break
            if not ok:
                out = []
                for i, d in enumerate(dims):
                    dw = f"{w}.dims[{i}]"
                    if type(d) is int and d < 0 and d >= I64_MIN:
                        self.bad(Kind.INVALID_MODEL, dw, f"negative dimension {d}")
                    elif self.int_ok(d, dw):
                        out.append(d)
                        continue
                    out.append(0)
                return tuple(out), None
            if 0 in dims:
                return dims, 0
            count = 1
            for d in dims:
                count *= d
                if count >= MAX_COUNT:
                    self.bad(Kind.UNSUPPORTED, f"{w}.dims", f"element count {' x '.join(map(str, dims))} is 2^60 or more")
                    return dims, None
            return dims, count
        if v is _ABSENT:
            if required:
                self.req_missing(w, "dims", "an array of integers")
                return (), None
            return (), 0
        self.wrong(f"{w}.dims", v, "an array of integers")
        return (), None

    def tensor(self, o, w: str) -> Tensor:
        # Fast path: a sound non-string tensor with a usable data region; anything else (or
        # anything doubtful) goes through tensor_slow, which reports it.
        storage = self.storage
        if storage is not None:
            try:
                name, dtype, dims, data = _tensor_fields(o)
                offset, length = _data_fields(data)
            except (KeyError, TypeError):
                name = None
            if name is not None and len(o) != 4:
                doc = o.get("doc", "")
                if "strings" in o:
                    name = None
            else:
                doc = ""
            if (
                type(name) is str and type(dtype) is int and type(dims) is list and type(doc) is str
                and dtype != STRING and type(offset) is int and type(length) is int
            ):
                info = DTYPES.get(dtype)
                if info is not None:
                    count = 1
                    for d in dims:
                        if type(d) is not int or d < 0 or d > I64_MAX or count >= MAX_COUNT:
                            break
                        count *= d
                    else:
                        if (
                            count < MAX_COUNT and length == (count * info.bits + 7) // 8 and length <= MAX_TENSOR_BYTES
                            and 0 <= offset and (length == 0 or offset % 64 == 0) and offset + length <= self.data_length
                        ):
                            return _Tensor(name, dtype, tuple(dims), doc, offset, length, self.data_offset + offset, storage, None, w)
        return self.tensor_slow(o, w)

    def tensor_slow(self, o, w: str) -> Tensor:
        if type(o) is not dict:
            self.wrong(w, o, "a Tensor (an object)")
            return _Tensor(name="", dtype=0, dims=(), where=w)
        get = o.get
        good = True
        name = get("name", "")
        if type(name) is not str:
            name = self.opt_str(o, "name", w)
        dtype = get("dtype", _ABSENT)
        info = None
        if type(dtype) is int:
            info = DTYPES.get(dtype)
            if info is None:
                if I64_MIN <= dtype <= I64_MAX:
                    self.bad(Kind.UNSUPPORTED, f"{w}.dtype", f"unknown dtype {dtype}")
                else:
                    self.int_ok(dtype, f"{w}.dtype")
                good = False
        else:
            self.req_int(o, "dtype", w)
            dtype = 0
            good = False
        dims, count = self.dims(o, w, required=True)
        if count is None:
            good = False
        doc = get("doc", "")
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        data = get("data", _ABSENT)
        strings = get("strings", _ABSENT)
        if dtype == STRING:
            if data is not _ABSENT:
                self.bad(Kind.MALFORMED, f"{w}.data", "a string tensor (dtype 8) must not have 'data'")
            svals: tuple[bytes, ...] = ()
            if strings is not _ABSENT:
                if type(strings) is list:
                    svals = tuple(self.b64(s, f"{w}.strings[{i}]") or b"" for i, s in enumerate(strings))
                else:
                    self.wrong(f"{w}.strings", strings, "an array of base64 strings")
                    good = False
            if count is not None and len(svals) != count:
                self.bad(Kind.INVALID_MODEL, f"{w}.strings", f"{len(svals)} strings for {count} elements")
            return _Tensor(name=name, dtype=dtype, dims=dims, doc=doc, strings=svals, where=w)
        if strings is not _ABSENT:
            self.bad(Kind.MALFORMED, f"{w}.strings", "only string tensors (dtype 8) have 'strings'")
            good = False
        if data is _ABSENT:
            self.req_missing(w, "data", "an object {offset, length}")
            return _Tensor(name=name, dtype=dtype, dims=dims, doc=doc, where=w)
        if type(data) is not dict:
            self.wrong(f"{w}.data", data, "an object {offset, length}")
            return _Tensor(name=name, dtype=dtype, dims=dims, doc=doc, where=w)
        offset = data.get("offset", _ABSENT)
        length = data.get("length", _ABSENT)
        if not (type(offset) is int and 0 <= offset <= I64_MAX):
            good = False
            if type(offset) is int and I64_MIN <= offset < 0:
                self.bad(Kind.MALFORMED, f"{w}.data.offset", f"negative offset {offset}")
            else:
                self.req_int(data, "offset", f"{w}.data")
            offset = 0
        if not (type(length) is int and 0 <= length <= I64_MAX):
            good = False
            if type(length) is int and I64_MIN <= length < 0:
                self.bad(Kind.MALFORMED, f"{w}.data.length", f"negative length {length}")
            else:
                self.req_int(data, "length", f"{w}.data")
            length = 0
        elif info is not None and count is not None:
            expected = (count * info.bits + 7) // 8
            if length != expected:
                self.bad(
                    Kind.INVALID_MODEL, f"{w}.data.length",
                    f"length {length}, but {count} x {info.name} ({info.bits} bits) is {expected} bytes",
                )
                good = False
            elif length > MAX_TENSOR_BYTES:
                self.bad(Kind.UNSUPPORTED, f"{w}.data.length", f"tensor of {length} bytes exceeds 2^31-1")
                good = False
        do = self.data_offset
        if good:
            if length > 0 and offset % 64:
                self.bad(
                    Kind.MALFORMED, f"{w}.data.offset", f"offset {offset} is not a multiple of 64",
                    offset=do + offset if do is not None else None,
                )
                good = False
            elif self.data_length is not None and offset + length > self.data_length:
                self.bad(
                    Kind.MALFORMED, f"{w}.data",
                    f"bytes {offset}..{offset + length} run past the {self.data_length}-byte data region",
                    offset=do + offset if do is not None else None,
                )
                good = False
        if good and do is not None and self.storage is not None:
            return _Tensor(
                name=name, dtype=dtype, dims=dims, doc=doc, offset=offset, length=length,
                file_offset=do + offset, storage=self.storage, where=w,
            )
        return _Tensor(name=name, dtype=dtype, dims=dims, doc=doc, offset=offset, length=length, where=w)


# ---------------------------------------------------------------------------------------------
# reading rules (section 3): definitions, references, dependency order, opsets, refs


def _scoped_attrs(node: Node) -> bool:
    """The node has an attribute that needs scope work: a subgraph or a function attribute ref."""
    for a in node.attributes:
        if a.ref or a.type == 5 or a.type == 10:
            return True
    return False


def _node_columns(nodes) -> tuple[Sequence, Sequence, Sequence, dict]:
    """(each node's inputs, outputs, domain; {index: node} including every node whose attributes may hold a
    subgraph or a ref), without building a NodeList's other records (those hold INT/INTS/FLOAT/FLOATS only)."""
    if type(nodes) is NodeList and nodes.columns is not None:
        ins, outs, doms = nodes.columns
        return ins, outs, doms, nodes.built_records()
    return (
        [n.inputs for n in nodes], [n.outputs for n in nodes], [n.domain for n in nodes],
        {i: n for i, n in enumerate(nodes) if n.attributes},
    )


def _where_of(nodes):
    """``where_of(i)`` for a node list (a NodeList answers without building its records)."""
    if type(nodes) is NodeList:
        return nodes.where_of
    return lambda i: nodes[i].where


def _domains(opsets) -> set:
    """Domains with an opset entry; ``""`` and ``"ai.onnx"`` stand for each other."""
    out = {o.domain for o in opsets}
    if out & {"", "ai.onnx"}:
        out |= {"", "ai.onnx"}
    return out


class _Resolver:
    def __init__(self, report: Reporter, model: Model) -> None:
        self.report = report
        self.model = model
        self.domains = _domains(model.opsets)

    def bad(self, kind: Kind, where: str, message: str) -> None:
        self.report(kind, where, _LOCATE, message)

    def run(self) -> None:
        self.graph(self.model.graph, (), None, self.domains)
        for f in self.model.functions:
            self.function(f)

    def function(self, f: Function) -> None:
        domains = self.domains | _domains(f.opsets)
        attr_names = set(f.attribute_names) | {a.name for a in f.attribute_defaults}
        defs: dict[str, int] = {}
        for i, name in enumerate(f.inputs):
            if name == "":
                continue
            if name in defs:
                self.bad(Kind.INVALID_MODEL, f"{f.where}.inputs[{i}]", f"{name!r} is defined twice")
            defs[name] = -1
        where_of = _where_of(f.nodes)
        producer = self.define_outputs([n.outputs for n in f.nodes], where_of, defs)
        deps = []
        for node in f.nodes:
            used = self.node_refs(node, defs, (), attr_names, domains, None)
            deps.append([producer[x] for x in used if x in producer])
        # Rule 3 holds in a function body as in a graph: the stable dependency order, a cycle an error.
        in_order = all(p < i for i, ps in enumerate(deps) for p in ps)
        self.set_order(f, None if in_order else deps, where_of, "function nodes")
        for a in f.attribute_defaults:
            for sub in a.graphs():
                self.graph(sub, (defs,), attr_names, domains)
        for i, name in enumerate(f.outputs):
            if name == "":  # as for a graph output (rule 2): the empty name defines nothing
                self.bad(Kind.INVALID_MODEL, f"{f.where}.outputs[{i}]", "a function output named '' names no defined value")
            elif name not in defs:
                self.bad(Kind.INVALID_MODEL, f"{f.where}.outputs[{i}]", f"function output {name!r} is not defined")

    def define_outputs(self, outputs: Sequence, where_of, defs: dict) -> dict[str, int]:
        """Define each node's outputs in ``defs`` (``outputs[i]``: node i's output names; ``where_of(i)``:
        node i's where); return {output name: index of the node that defines it}."""
        producer = {o: i for i, outs in enumerate(outputs) for o in outs}
        if len(producer) == sum(map(len, outputs)) and "" not in producer and producer.keys().isdisjoint(defs):
            defs.update(producer)  # every output distinct, non-empty and new: nothing to report
            return producer
        producer = {}
        for i, outs in enumerate(outputs):
            for j, out in enumerate(outs):
                if out == "":
                    continue
                if out in defs:
                    self.bad(Kind.INVALID_MODEL, f"{where_of(i)}.outputs[{j}]", f"{out!r} is already defined in this graph")
                    continue
                defs[out] = i
                producer[out] = i
        return producer

    def node_refs(self, node: Node, defs: dict, outer: tuple, attr_names, domains, free: set | None) -> set:
        """Check a node's inputs, attribute refs, subgraphs and domain; return producers' names it reads."""
        used: set = set()
        for j, x in enumerate(node.inputs):
            if x == "":
                continue
            if x in defs:
                used.add(x)
                continue
            for scope in outer:
                if x in scope:
                    if free is not None:
                        free.add(x)
                    break
            else:
                self.bad(Kind.INVALID_MODEL, f"{node.where}.inputs[{j}]", f"input {x!r} is not defined in this graph or an enclosing one")
        for k, a in enumerate(node.attributes):
            if a.ref:
                if attr_names is None:
                    self.bad(Kind.INVALID_MODEL, f"{a.where}.ref", f"attribute reference {a.ref!r} outside a function")
                elif a.ref not in attr_names:
                    self.bad(Kind.INVALID_MODEL, f"{a.where}.ref", f"the function has no attribute {a.ref!r}")
            if a.type == AttrType.GRAPH or a.type == AttrType.GRAPHS:
                for sub in a.graphs():
                    sub_free = self.graph(sub, (defs, *outer), attr_names, domains)
                    for x in sub_free:
                        if x in defs:
                            used.add(x)
                        elif free is not None:
                            free.add(x)
        if node.domain not in domains:
            self.bad(Kind.INVALID_MODEL, f"{node.where}.domain", f"domain {node.domain!r} has no entry in opsets")
        return used

    def graph(self, g: Graph, outer: tuple, attr_names, domains) -> set:
        """Resolve ``g`` inside the scopes ``outer`` (innermost first); set ``g.order``; return free names."""
        defs: dict[str, int] = {}
        inputs: set = set()
        for vi in g.inputs:
            if vi.name == "":
                continue
            if vi.name in defs:
                self.bad(Kind.INVALID_MODEL, f"{vi.where}.name", f"{vi.name!r} is already defined in this graph")
                continue
            defs[vi.name] = -1
            inputs.add(vi.name)
        attached: set = set()
        for t in g.initializers:
            self.define_init(t.name, f"{t.where}.name", defs, inputs, attached)
        for s in g.sparse_initializers:
            self.define_init(s.values.name, f"{s.where}.values.name", defs, inputs, attached)
        nodes = g.nodes
        ins_col, outs_col, doms_col, with_attrs = _node_columns(nodes)
        where_of = _where_of(nodes)
        producer = self.define_outputs(outs_col, where_of, defs)
        free: set = set()
        # One pass over every input: an input not defined here flags its node for the per-node walk
        # (which reports in node order, or finds it in an enclosing graph); an input defined by this
        # node or a later one means the nodes are not stored in dependency order. Typical graphs
        # flag only the nodes with subgraphs/refs.
        dget = defs.get
        in_order = True
        flagged = {i for i, nd in with_attrs.items() if _scoped_attrs(nd)}
        for i, ins in enumerate(ins_col):
            for x in ins:
                p = dget(x)
                if p is None:
                    if x:
                        flagged.add(i)
                elif p >= i:
                    in_order = False
        bad_domains = set(doms_col).difference(domains)
        if bad_domains:
            flagged.update(i for i, d in enumerate(doms_col) if d in bad_domains)
        implicit: dict[int, list[int]] = {}
        for i in sorted(flagged):
            node = with_attrs.get(i) or nodes[i]  # a NodeList builds that one record
            used = self.node_refs(node, defs, outer, attr_names, domains, free)
            extra = [producer[x] for x in used.difference(node.inputs) if x in producer]
            if extra:
                implicit[i] = extra
        # In order when no node reads a value produced at or after its own position (the pass
        # above), counting the values a node's subgraphs read from this graph.
        pget = producer.get
        if in_order:
            for i, extra in implicit.items():
                if max(extra) >= i:
                    in_order = False
                    break
        deps: list = []
        if not in_order:
            for i, ins in enumerate(ins_col):
                ps = [p for p in map(pget, ins) if p is not None]
                ps.extend(implicit.get(i, ()))
                deps.append(ps)
        for vi in g.outputs:
            x = vi.name
            if x in defs:
                continue
            if x == "":  # rule 2: "" as an omitted operand is for node operands only; it defines nothing
                self.bad(Kind.INVALID_MODEL, f"{vi.where}.name", "a graph output named '' names no defined value")
                continue
            for scope in outer:
                if x in scope:
                    free.add(x)
                    break
            else:
                self.bad(Kind.INVALID_MODEL, f"{vi.where}.name", f"graph output {x!r} is not defined")
        self.set_order(g, None if in_order else deps, where_of, "nodes")
        return free

    def define_init(self, name: str, where: str, defs: dict, inputs: set, attached: set) -> None:
        if name in inputs and name not in attached:
            attached.add(name)
            return
        if name == "":
            return
        if name in defs:
            self.bad(Kind.INVALID_MODEL, where, f"{name!r} is already defined in this graph")
            return
        defs[name] = -1

    def set_order(self, owner: Graph | Function, deps: list | None, where_of, what: str) -> None:
        """Set ``owner.order``: the stored order when ``deps`` is None (known to be in order), else the
        stable dependency order of ``deps`` (:meth:`topo` reports a cycle), with an ``out-of-order``
        finding at the first node it moved."""
        n = len(owner.nodes)
        if deps is None:
            order = tuple(range(n))
        else:
            order, cyclic = self.topo(owner, deps)
            if not cyclic and order != tuple(range(n)):
                first = next(i for i in range(n) if order[i] != i)
                self.report.finding(
                    "out-of-order", where_of(first), _LOCATE, f"{what} are not stored in dependency order (the reader sorts them)",
                )
        object.__setattr__(owner, "order", order)

    def topo(self, g: Graph | Function, deps: list) -> tuple[tuple[int, ...], bool]:
        """Kahn's algorithm with a min-heap: the stable dependency order; a cycle is reported."""
        import heapq  # lazily: only for graphs stored out of dependency order
        n = len(deps)
        indeg = [0] * n
        consumers: list[list[int]] = [[] for _ in range(n)]
        for i, ps in enumerate(deps):
            for p in ps:
                indeg[i] += 1
                consumers[p].append(i)
        heap = [i for i in range(n) if indeg[i] == 0]
        heapq.heapify(heap)
        order: list[int] = []
        while heap:
            i = heapq.heappop(heap)
            order.append(i)
            for c in consumers[i]:
                indeg[c] -= 1
                if indeg[c] == 0:
                    heapq.heappush(heap, c)
        if len(order) < n:
            done = set(order)
            stuck = [i for i in range(n) if i not in done]
            # Every stuck node has a stuck producer: walk producers until one repeats to find a
            # node on a cycle (not merely downstream of one); report the cycle's first node.
            stuck_set = set(stuck)
            seen: dict[int, int] = {}
            path: list[int] = []
            cur = stuck[0]
            while cur not in seen:
                seen[cur] = len(path)
                path.append(cur)
                cur = next(p for p in deps[cur] if p in stuck_set)
            cycle = path[seen[cur]:]
            self.bad(
                Kind.INVALID_MODEL, _where_of(g.nodes)(min(cycle)),
                f"the nodes form a cycle of {len(cycle)} node(s); {len(stuck)} nodes cannot be ordered",
            )
            order.extend(stuck)
            return tuple(order), True
        return tuple(order), False


# ---------------------------------------------------------------------------------------------
# opening


def resolve(model: Model, report: Reporter) -> None:
    """Section 3's reading rules on a model another importer built (``.ort``): names, opsets, dependency order."""
    _Resolver(report, model).run()


def duplicate_key_findings(manifest: bytes, base: int = 64) -> list[Finding]:
    """``duplicate-key`` findings of a manifest that parses (else [])."""
    report = Reporter(False)
    report.manifest = manifest
    report.base = base
    try:
        parsed = _manifest.parse(manifest, base)
    except FormatError:
        return []
    _finding_duplicates(report, parsed)
    return report.findings


def _finding_duplicates(report: Reporter, parsed: _manifest.Parsed) -> None:
    if not parsed.duplicates:
        return
    dup_ids = {id(d): keys for d, keys in parsed.duplicates}
    stack = [(parsed.value, "manifest")]
    while stack and dup_ids:
        v, w = stack.pop()
        if type(v) is dict:
            keys = dup_ids.pop(id(v), None)
            if keys is not None:
                for k in dict.fromkeys(keys):
                    report.finding(
                        "duplicate-key", _manifest.join(w, k), _LOCATE,
                        f"key {k!r} appears more than once in this object (the last one is used)",
                    )
            for k, x in v.items():
                if type(x) in (dict, list):
                    stack.append((x, _manifest.join(w, k)))
        elif type(v) is list:
            for i, x in enumerate(v):
                if type(x) in (dict, list):
                    stack.append((x, f"{w}[{i}]"))


def sniff_onemodel(path: str, first8: bytes, size: int) -> bool:
    """True when the file goes to the OneModel reader (spec section 5 plus damaged-file rules)."""
    if first8 == _header.MAGIC:
        return True
    if os.fspath(path).lower().endswith(".onemodel") or size < 8:
        return True
    return _header.looks_like_magic(first8)


def _regular_file(path: str) -> None:
    """Refuse what is not a regular file before opening it (a FIFO would block, a device never end)."""
    try:
        st = os.stat(path)
    except OSError as e:
        raise FormatError(Kind.IO, "file", None, f"cannot open: {e.strerror or e}") from e
    if not stat.S_ISREG(st.st_mode):
        what = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise FormatError(Kind.IO, "file", None, f"cannot read: {what}")


def open_path(path, mode: str = "strict") -> Document:
    """Open a OneModel (or, by its first bytes, ONNX) file. See the module docstring."""
    return _open(path, mode, None)


def open_with_manifest(path, mode: str = "diagnose") -> tuple[Document, _manifest.Parsed | None]:
    """:func:`open_path`, plus the parsed manifest JSON when the OneModel reader parsed one.

    ``--check`` uses the parsed value to prove the manifest canonical cheaply
    (:func:`onemodel_viewer.analysis.layout.noncanonical`); plain opens drop it.
    """
    keep: list = []
    doc = _open(path, mode, keep)
    return doc, (keep[0] if keep else None)


def _open(path, mode: str, keep: list | None) -> Document:
    if mode not in ("strict", "diagnose"):
        raise ValueError(f"mode must be 'strict' or 'diagnose', not {mode!r}")
    path = os.fspath(path)
    strict = mode == "strict"
    report = Reporter(strict)
    try:
        _regular_file(path)
        storage = FileStorage(path)
    except FormatError as e:
        if strict:
            raise
        return Document(path, "onemodel", 0, problems=[e.problem])
    try:
        first = storage.read(0, min(HEADER_SIZE, storage.size))
        if first[:8] != _header.MAGIC and _ort.sniff(path, first[:8]):  # "ORTM" at 4..8, or a .ort name
            return _ort.open_ort(path, mode, storage, report, resolve)
        if not sniff_onemodel(path, first[:8], storage.size):
            storage.close()
            from .onnx_import import import_onnx

            return import_onnx(path, mode=mode)
        doc = Document(path, "onemodel", storage.size, storage=storage, mode=mode)
        _read(doc, first, report, keep)
    except FormatError:
        storage.close()
        raise
    doc.problems = report.problems
    doc.findings = report.findings
    return doc


def _read(doc: Document, first: bytes, report: Reporter, keep: list | None = None) -> None:
    storage = doc.storage
    size = storage.size
    verdict = _header.check(first, size, report)
    h = verdict.header
    doc.header = h
    if h is None:
        return
    mlen = h.manifest_length
    if h.manifest_offset == 64 and 64 + mlen <= size:
        doc.manifest_span = (64, mlen)
    if verdict.data_ok:
        doc.data_span = (h.data_offset, h.data_length)
        aligned = _header.align_up(64 + mlen)
        if h.data_offset > aligned:
            report.finding(
                "wide-data-offset", "header.data_offset", 32,
                f"data_offset {h.data_offset} is beyond the next multiple of 64 after the manifest ({aligned})",
            )
    if not verdict.manifest_ok:
        return
    data = storage.read(64, mlen)
    report.manifest = data
    # The parse and the build allocate ~10^5 objects that all stay alive: collecting during
    # them is pure cost (measured: ~1/3 of the open time).
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        built = _with_stack_room(_parse_and_build, data, h, verdict, report, storage, keep)
    finally:
        # lazily built node lists keep the builder (and this reporter) alive: not the manifest bytes
        # and the locator's decoded copy of them (nothing is reported after the open)
        report.manifest = None
        report._locator = None
        if was_enabled:
            promote_survivors()
            gc.enable()
    if built is None:
        return
    model = built
    doc.model = model


_STACK_ROOM = 800
"""Frames the parse, build and resolve of the deepest legal model need, with room to spare (64
nested graphs: 514 measured on Python 3.11, 386 on 3.12 and 3.13; 63 nested types: 137)."""


def _with_stack_room(fn, *args):
    """``fn(*args)``, on a fresh thread's stack when this thread is within :data:`_STACK_ROOM`
    frames of the recursion limit: a deep caller gets no RecursionError from a legal model, and
    the limit, like every process-wide setting, stays as it is (any thread may open a file)."""
    limit = sys.getrecursionlimit()
    depth, f = 0, sys._getframe()
    while f is not None and depth + _STACK_ROOM <= limit:
        depth += 1
        f = f.f_back
    if depth + _STACK_ROOM <= limit:
        return fn(*args)
    out: list = []

    def run() -> None:
        try:
            out.append((True, fn(*args)))
        except BaseException as e:  # noqa: BLE001 - handed back to the caller's thread
            out.append((False, e))

    t = threading.Thread(target=run, name="onemodel-open", daemon=True)
    t.start()
    t.join()
    ok, result = out[0]
    if not ok:
        raise result
    return result


def _parse_and_build(data, h, verdict, report: Reporter, storage, keep: list | None):
    """The model of the manifest ``data`` (None when diagnose mode could not parse it)."""
    # Duplicate keys are findings; detecting them costs, so strict opens leave them to
    # analysis.layout.all_findings (diagnose mode, used by --check and the viewer, finds them).
    parsed = _manifest.parse(data, 64, duplicates=False) if report.strict else _parse_diagnose(data, report)
    if parsed is None:
        return None
    _finding_duplicates(report, parsed)
    builder = _Builder(
        report,
        h.data_offset if verdict.data_ok else None,
        h.data_length if verdict.data_ok else None,
        storage if verdict.data_ok else None,
    )
    model = builder.model(parsed.value, h.version)
    _Resolver(report, model).run()
    for w in builder.missing_arrays:
        report.finding("missing-graph-array", w, _LOCATE, f"{w.rsplit('.', 1)[1]} is absent (read as empty)")
    if keep is not None:
        keep.append(parsed)
    return model


def _parse_diagnose(data: bytes, report: Reporter):
    try:
        return _manifest.parse(data, 64)
    except FormatError as e:
        report.problems.append(e.problem)
        return None
