"""The deterministic OneModel writer (spec sections 1.3 and 4).

Three steps, each usable alone:

* :func:`plan` gives every tensor its place in the data region in one pass, in
  the order of section 1.3 (:func:`~.schema.all_tensors`): each tensor record its
  own bytes, at a multiple of 64, zero-length tensors at offset 0, the region
  ending right after the last tensor's last byte.
* :func:`encode_manifest` serializes a model's manifest as it stands (each
  tensor's existing ``offset``/``length``), compact JSON with fields in the order
  of section 2's tables. The reader uses it to tell a canonical manifest apart.
* :func:`write` / :func:`to_bytes` plan, then stream header, manifest, padding
  and tensor bytes; :func:`write` goes through a temporary file in the
  destination folder and ``os.replace``, so a failure (or Ctrl-C) never leaves a
  partial destination, and it refuses to overwrite any file the model reads.

Same model in, same bytes out. numpy is never imported here: tensor bytes are
copied through ``memoryview`` slices or ``os.copy_file_range``.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import replace
from typing import Callable, Iterable

from ...process import paused_gc
from ..document import HEADER_SIZE
from ..dtypes import DTYPES, STRING, AttrType
from ..errors import FormatError, Kind
from .header import ALIGN, MAGIC, MAX_COUNT, MAX_TENSOR_BYTES, STRUCT as _HEADER, VERSION, align_up as _align
from ..output import SourceFds, atomic_output, refuse_sources, reserve, start_writeback, write_all
from ..schema import (
    Attribute,
    Function,
    Graph,
    Model,
    Node,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
    all_tensors,
)
from ..storage import FileStorage, Storage

__all__ = [
    "ALIGN", "MAGIC", "VERSION", "MAX_TENSOR_BYTES", "plan", "encode_manifest", "manifest_dict",
    "header_bytes", "to_bytes", "write", "model_sources", "atomic_output", "copy_storage_range",
    "refuse_sources", "write_all", "SourceFds",  # from .output, where they live
]

CHUNK = 8 << 20
"""Bytes copied per write call when streaming tensor data."""

# ---------------------------------------------------------------------------------------------
# Rebuilding the record tree with manifest paths (used by plan)
# ---------------------------------------------------------------------------------------------


class _Rebuild:
    """Copies a model, mapping every tensor through ``fn`` and setting ``where`` to manifest paths.

    The records made by the ten thousand (types, value infos, attributes, nodes) are built with their
    constructor, positionally, not ``dataclasses.replace`` (which looks up every field by name: a
    node 1.9 -> 0.6 µs; 1G ``--convert`` plan 68 -> 40 ms CPU)."""

    def __init__(self, fn: Callable[[Tensor, str], Tensor]) -> None:
        self.fn = fn

    def type(self, t: Type | None, where: str) -> Type | None:
        if t is None:
            return None
        inner = self.type(t.inner, where + ".inner") if t.inner is not None else None
        return Type(t.kind, t.elem, t.shape, inner, t.key, t.domain, t.name, where)

    def vi(self, v: ValueInfo, where: str) -> ValueInfo:
        return ValueInfo(v.name, self.type(v.type, where + ".type"), where)

    def sparse(self, s: SparseTensor, where: str) -> SparseTensor:
        values = self.fn(s.values, where + ".values")
        indices = self.fn(s.indices, where + ".indices")
        return replace(s, values=values, indices=indices, where=where)

    def attr(self, a: Attribute, where: str) -> Attribute:
        v, t, w = a.value, a.type, where + ".value"
        if v is None or a.ref:
            pass
        elif t == AttrType.TENSOR:
            v = self.fn(v, w)
        elif t == AttrType.TENSORS:
            v = tuple(self.fn(x, f"{w}[{i}]") for i, x in enumerate(v))
        elif t == AttrType.GRAPH:
            v = self.graph(v, w)
        elif t == AttrType.GRAPHS:
            v = tuple(self.graph(x, f"{w}[{i}]") for i, x in enumerate(v))
        elif t == AttrType.SPARSE_TENSOR:
            v = self.sparse(v, w)
        elif t == AttrType.SPARSE_TENSORS:
            v = tuple(self.sparse(x, f"{w}[{i}]") for i, x in enumerate(v))
        elif t == AttrType.TYPE_PROTO:
            v = self.type(v, w)
        elif t == AttrType.TYPE_PROTOS:
            v = tuple(self.type(x, f"{w}[{i}]") for i, x in enumerate(v))
        return Attribute(a.name, a.type, v, a.ref, a.doc, where)

    def node(self, n: Node, where: str) -> Node:
        attrs = tuple([self.attr(a, f"{where}.attributes[{i}]") for i, a in enumerate(n.attributes)]) if n.attributes else ()
        return Node(n.op, n.name, n.domain, n.overload, n.doc, n.inputs, n.outputs, attrs, where)

    def graph(self, g: Graph, where: str) -> Graph:
        # Order matters: section 1.3 (initializers, sparse values+indices, nodes in place).
        inits = tuple(self.fn(t, f"{where}.initializers[{i}]") for i, t in enumerate(g.initializers))
        sparse = tuple(self.sparse(s, f"{where}.sparse_initializers[{i}]") for i, s in enumerate(g.sparse_initializers))
        nodes = tuple(self.node(n, f"{where}.nodes[{i}]") for i, n in enumerate(g.nodes))
        return replace(
            g,
            inputs=tuple(self.vi(v, f"{where}.inputs[{i}]") for i, v in enumerate(g.inputs)),
            outputs=tuple(self.vi(v, f"{where}.outputs[{i}]") for i, v in enumerate(g.outputs)),
            value_info=tuple(self.vi(v, f"{where}.value_info[{i}]") for i, v in enumerate(g.value_info)),
            initializers=inits,
            sparse_initializers=sparse,
            nodes=nodes,
            where=where,
        )

    def function(self, f: Function, where: str) -> Function:
        nodes = tuple(self.node(n, f"{where}.nodes[{i}]") for i, n in enumerate(f.nodes))
        defaults = tuple(
            self.attr(a, f"{where}.attribute_defaults[{i}]") for i, a in enumerate(f.attribute_defaults)
        )
        return replace(f, nodes=nodes, attribute_defaults=defaults, where=where)

    def model(self, m: Model) -> Model:
        graph = self.graph(m.graph, "manifest.graph")
        functions = tuple(self.function(f, f"manifest.functions[{i}]") for i, f in enumerate(m.functions))
        return replace(m, graph=graph, functions=functions, where="manifest")


def _checked_length(t: Tensor, where: str) -> int:
    """The byte length ``t`` must have, after checking dtype, dims and its stored bytes."""
    where = where or t.where
    info = DTYPES.get(t.dtype)
    if info is None:
        raise FormatError(Kind.UNSUPPORTED, where + ".dtype", None, f"unsupported dtype code {t.dtype}")
    count = 1
    for i, d in enumerate(t.dims):
        if not isinstance(d, int) or d < 0:
            raise FormatError(Kind.INVALID_MODEL, f"{where}.dims[{i}]", None, f"dimension {d!r} is not a non-negative integer")
        count *= d
        if count >= MAX_COUNT:
            raise FormatError(Kind.UNSUPPORTED, where + ".dims", None, "element count is 2^60 or more")
    if t.dtype == STRING:
        n = len(t.strings or ())
        if n != count:
            raise FormatError(Kind.INVALID_MODEL, where + ".strings", None, f"{n} strings for {count} elements")
        return 0
    length = info.byte_length(count)
    if length > MAX_TENSOR_BYTES:
        raise FormatError(Kind.UNSUPPORTED, where, None, f"tensor of {length} bytes: more than 2^31-1 bytes")
    if length > 0:
        if t.storage is None or t.file_offset is None:
            raise FormatError(Kind.INVALID_MODEL, where, None, f"tensor has no bytes ({length} expected)")
        if t.length != length:
            raise FormatError(
                Kind.INVALID_MODEL, where + ".data.length", None, f"{t.length} bytes stored, {length} expected from dims and dtype"
            )
        if t.file_offset < 0 or t.file_offset + length > t.storage.size:
            raise FormatError(Kind.MALFORMED, where, t.file_offset, "tensor bytes lie outside their storage")
    return length


def plan(model: Model) -> Model:
    """A copy of ``model`` whose tensors have the offsets this writer gives them (section 1.3).

    One pass in :func:`~.schema.all_tensors` order: a tensor record of ``n > 0``
    bytes goes at the next multiple of 64; a zero-length tensor gets offset 0.
    Two records get two copies even when they share storage. ``where`` fields
    become manifest paths. Raises :class:`FormatError` for a tensor that cannot
    be written (unknown dtype, bytes not matching dims, over 2^31-1 bytes).
    """
    if not isinstance(model.ir_version, int) or model.ir_version < 3:
        raise FormatError(Kind.INVALID_MODEL, "manifest.ir_version", None, f"ir_version {model.ir_version} is below 3")
    cursor = 0

    def place(t: Tensor, where: str) -> Tensor:
        nonlocal cursor
        length = _checked_length(t, where)
        if t.dtype == STRING or length == 0:
            offset = length = 0
        else:
            offset = _align(cursor)
            cursor = offset + length
        return Tensor(t.name, t.dtype, t.dims, t.doc, offset, length, t.file_offset, t.storage, t.strings, where)

    return _Rebuild(place).model(model)


def data_length(model: Model) -> int:
    """End of the data region of a planned model: right after the last tensor's last byte."""
    end = 0
    for t in all_tensors(model):
        if t.dtype != STRING and t.length > 0:
            end = max(end, t.offset + t.length)
    return end


# ---------------------------------------------------------------------------------------------
# Manifest encoding (section 2 field order, compact JSON)
# ---------------------------------------------------------------------------------------------


def _b64(b: bytes) -> str:
    return base64.b64encode(b).decode("ascii")


def _type(t: Type) -> dict:
    d: dict = {"kind": t.kind}
    k = t.kind
    if k == "tensor" or k == "sparse_tensor":
        d["elem"] = t.elem
        if t.shape is not None:
            d["shape"] = list(t.shape)
    elif k == "sequence" or k == "optional":
        if t.inner is not None:
            d["inner"] = _type(t.inner)
    elif k == "map":
        d["key"] = t.key
        if t.inner is not None:
            d["inner"] = _type(t.inner)
    elif k == "opaque":
        d["domain"] = t.domain
        d["name"] = t.name
    return d


def _vi(v: ValueInfo) -> dict:
    if v.type is None:
        return {"name": v.name}
    return {"name": v.name, "type": _type(v.type)}


def _tensor(t: Tensor) -> dict:
    d: dict = {"name": t.name, "dtype": t.dtype, "dims": list(t.dims)}
    if t.doc:
        d["doc"] = t.doc
    if t.dtype == STRING:
        d["strings"] = [_b64(s) for s in (t.strings or ())]
    else:
        d["data"] = {"offset": t.offset, "length": t.length}
    return d


def _sparse(s: SparseTensor) -> dict:
    return {"values": _tensor(s.values), "indices": _tensor(s.indices), "dims": list(s.dims)}


def _bits(v, a: Attribute) -> int:
    """A FLOAT value is its 32-bit pattern (an int), never a Python float: 1.0 would silently become 1."""
    if v.__class__ is not int or not 0 <= v <= 0xFFFFFFFF:
        raise FormatError(Kind.INVALID_MODEL, a.where + ".value", None, f"FLOAT attribute value {v!r} is not a 32-bit pattern")
    return v


def _attr(a: Attribute) -> dict:
    d: dict = {"name": a.name, "type": int(a.type)}
    if a.doc:
        d["doc"] = a.doc
    if a.ref:
        d["ref"] = a.ref
        return d
    v, t = a.value, a.type
    if v is None:
        return d
    if t == AttrType.FLOAT:
        d["value"] = _bits(v, a)
    elif t == AttrType.INT:
        if v.__class__ is not int:
            raise FormatError(Kind.INVALID_MODEL, a.where + ".value", None, f"INT attribute value {v!r} is not an integer")
        d["value"] = v
    elif t == AttrType.STRING:
        d["value"] = _b64(v)
    elif t == AttrType.TENSOR:
        d["value"] = _tensor(v)
    elif t == AttrType.GRAPH:
        d["value"] = _graph(v)
    elif t == AttrType.FLOATS:
        d["value"] = [_bits(x, a) for x in v]
    elif t == AttrType.INTS:
        d["value"] = list(v)
    elif t == AttrType.STRINGS:
        d["value"] = [_b64(x) for x in v]
    elif t == AttrType.TENSORS:
        d["value"] = [_tensor(x) for x in v]
    elif t == AttrType.GRAPHS:
        d["value"] = [_graph(x) for x in v]
    elif t == AttrType.SPARSE_TENSOR:
        d["value"] = _sparse(v)
    elif t == AttrType.SPARSE_TENSORS:
        d["value"] = [_sparse(x) for x in v]
    elif t == AttrType.TYPE_PROTO:
        d["value"] = _type(v)
    elif t == AttrType.TYPE_PROTOS:
        d["value"] = [_type(x) for x in v]
    else:
        raise FormatError(Kind.UNSUPPORTED, a.where + ".type", None, f"unsupported attribute type {t}")
    return d


def _node(n: Node) -> dict:
    d: dict = {"name": n.name, "op": n.op, "domain": n.domain, "overload": n.overload}
    if n.doc:
        d["doc"] = n.doc
    d["inputs"] = list(n.inputs)
    d["outputs"] = list(n.outputs)
    d["attributes"] = [_attr(a) for a in n.attributes]
    return d


def _graph(g: Graph) -> dict:
    d: dict = {}
    if g.name:
        d["name"] = g.name
    if g.doc:
        d["doc"] = g.doc
    d["inputs"] = [_vi(v) for v in g.inputs]
    d["outputs"] = [_vi(v) for v in g.outputs]
    d["value_info"] = [_vi(v) for v in g.value_info]
    d["initializers"] = [_tensor(t) for t in g.initializers]
    d["sparse_initializers"] = [_sparse(s) for s in g.sparse_initializers]
    d["nodes"] = [_node(n) for n in g.nodes]
    return d


def _opsets(ops) -> list:
    return [{"domain": o.domain, "version": o.version} for o in ops]


def _function(f: Function) -> dict:
    d: dict = {"name": f.name, "domain": f.domain, "overload": f.overload}
    if f.doc:
        d["doc"] = f.doc
    d["inputs"] = list(f.inputs)
    d["outputs"] = list(f.outputs)
    d["attribute_names"] = list(f.attribute_names)
    d["attribute_defaults"] = [_attr(a) for a in f.attribute_defaults]
    d["nodes"] = [_node(n) for n in f.nodes]
    d["opsets"] = _opsets(f.opsets)
    return d


def manifest_dict(model: Model) -> dict:
    """The manifest as a JSON-ready dict, keys in the order of section 2's tables."""
    d: dict = {"format": "onemodel", "version": VERSION, "ir_version": model.ir_version}
    for key, value in (
        ("producer_name", model.producer_name),
        ("producer_version", model.producer_version),
        ("domain", model.domain),
        ("doc", model.doc),
    ):
        if value:
            d[key] = value
    if model.model_version:
        d["model_version"] = model.model_version
    d["opsets"] = _opsets(model.opsets)
    if model.metadata:
        d["metadata"] = [{"key": k, "value": v} for k, v in model.metadata]
    d["graph"] = _graph(model.graph)
    if model.functions:
        d["functions"] = [_function(f) for f in model.functions]
    return d


def encode_manifest(model: Model) -> bytes:
    """The manifest bytes of ``model`` as it stands (each tensor's existing offset/length).

    Compact UTF-8 JSON (no insignificant whitespace), fields in section 2's
    order, ``doc`` only when non-empty, optional fields omitted at their default;
    a node always carries name, domain, overload, inputs, outputs, attributes and
    a graph always carries its six arrays. Floats are bit patterns, bytes base64.
    """
    try:
        with paused_gc():  # building ~10^5 small dicts: the cyclic GC would triple the time
            # check_circular=False: manifest_dict makes a fresh tree (a cyclic model recurses in it first);
            # the encoder then keeps no id of each of its ~10^5 containers (1G: 30.4 -> 27.7 ms CPU)
            text = json.dumps(manifest_dict(model), separators=(",", ":"), ensure_ascii=False, allow_nan=False,
                              check_circular=False)
        return text.encode("utf-8")
    except UnicodeEncodeError as e:
        raise FormatError(Kind.INVALID_MODEL, "manifest", None, "a name or text is not valid Unicode (lone surrogate)") from e
    except (TypeError, ValueError) as e:
        raise FormatError(Kind.INVALID_MODEL, "manifest", None, f"cannot encode the manifest: {e}") from e
    except RecursionError as e:
        raise FormatError(Kind.UNSUPPORTED, "manifest", None, "the model is nested too deeply to encode") from e


def header_bytes(manifest_length: int, data_length_: int) -> bytes:
    """The 64-byte header for a manifest and data region of these lengths (section 1.1)."""
    data_offset = _align(HEADER_SIZE + manifest_length)
    file_length = data_offset + data_length_
    return _HEADER.pack(MAGIC, VERSION, 0, HEADER_SIZE, manifest_length, data_offset, data_length_, file_length, 0)


# ---------------------------------------------------------------------------------------------
# Writing
# ---------------------------------------------------------------------------------------------


def _layout(model: Model) -> tuple[Model, bytes, int, int]:
    planned = plan(model)
    manifest = encode_manifest(planned)
    return planned, manifest, _align(HEADER_SIZE + len(manifest)), data_length(planned)


def _data_items(planned: Model) -> list[Tensor]:
    return [t for t in all_tensors(planned) if t.dtype != STRING and t.length > 0]


def to_bytes(model: Model) -> bytes:
    """The whole file in memory (small models, tests)."""
    planned, manifest, data_offset, dlen = _layout(model)
    out = bytearray(data_offset + dlen)
    out[:HEADER_SIZE] = header_bytes(len(manifest), dlen)
    out[HEADER_SIZE : HEADER_SIZE + len(manifest)] = manifest
    for t in _data_items(planned):
        start = data_offset + t.offset
        out[start : start + t.length] = t.storage.read(t.file_offset, t.length)  # type: ignore[union-attr]
    return bytes(out)


def model_sources(model: Model) -> set[str]:
    """Paths of every file the model's tensors read from."""
    paths: set[str] = set()
    seen: set[int] = set()
    for t in all_tensors(model):
        s = t.storage
        if isinstance(s, FileStorage) and id(s) not in seen:
            seen.add(id(s))
            paths.add(s.path)
    return paths


def copy_storage_range(out, storage: Storage, offset: int, length: int, fds: "SourceFds | None" = None) -> None:
    """Append ``length`` bytes of ``storage`` at ``offset`` to the file ``out``, in bounded memory.

    Files are copied with ``os.copy_file_range`` (in-kernel) or ``pread`` in
    8 MiB chunks, without touching a mapping; in-memory storages through
    ``memoryview`` slices. ``out`` is positioned at its end afterwards.
    """
    if offset < 0 or length < 0 or offset + length > storage.size:
        raise FormatError(Kind.MALFORMED, storage.label, offset, f"range {offset}+{length} outside {storage.size} bytes")
    if length == 0:
        return
    if isinstance(storage, FileStorage) and fds is not None:
        src = fds.get(storage)
        dst = out.fileno()
        pos = out.seek(0, os.SEEK_END)
        done = 0
        use_cfr = hasattr(os, "copy_file_range")  # not on every platform (macOS has none)
        while done < length:
            n = min(CHUNK, length - done)
            if use_cfr:
                try:
                    got = os.copy_file_range(src, dst, n, offset + done, pos + done)
                except OSError:
                    use_cfr = False
                    continue
                if got == 0:
                    raise FormatError(Kind.IO, "file", offset + done, f"{storage.path} is shorter than when it was opened")
            else:
                chunk = os.pread(src, n, offset + done)
                if not chunk:
                    raise FormatError(Kind.IO, "file", offset + done, f"{storage.path} is shorter than when it was opened")
                os.lseek(dst, pos + done, os.SEEK_SET)
                write_all(out, chunk)
                got = len(chunk)
            start_writeback(dst, pos + done, pos + done + got)
            done += got
        out.seek(0, os.SEEK_END)
        if storage.changed():
            raise FormatError(Kind.IO, "file", None, f"{storage.path} changed on disk while it was copied")
        return
    storage.check()
    if getattr(storage, "remote", False):  # a URL (format/remote): pieces fetched ahead, several in flight
        for piece in storage.stream(offset, length, CHUNK):
            write_all(out, piece)
        return
    buf = memoryview(storage.buffer())
    for start in range(offset, offset + length, CHUNK):
        write_all(out, buf[start : min(start + CHUNK, offset + length)])


_ZEROS = bytes(ALIGN)


def write(model: Model, path: str | os.PathLike, *, sources: Iterable[str] = ()) -> Model:
    """Write ``model`` to ``path`` as a OneModel file; returns the planned model.

    Streams tensor bytes from their storage (bounded memory), through a
    temporary file beside ``path`` renamed at the end. Refuses a destination that
    is any file the model reads (or any path in ``sources``), as FormatError(Io).
    """
    dst = os.fspath(path)
    planned, manifest, data_offset, dlen = _layout(model)
    refuse_sources(dst, set(sources) | model_sources(model))
    items = _data_items(planned)
    fds = SourceFds()
    try:
        with atomic_output(dst) as f:
            reserve(f.fileno(), data_offset + dlen)
            write_all(f, header_bytes(len(manifest), dlen))
            write_all(f, manifest)
            write_all(f, bytes(data_offset - HEADER_SIZE - len(manifest)))
            pos = 0
            for t in items:
                if t.offset > pos:
                    write_all(f, _ZEROS[: t.offset - pos] if t.offset - pos <= ALIGN else bytes(t.offset - pos))
                copy_storage_range(f, t.storage, t.file_offset, t.length, fds)  # type: ignore[arg-type]
                pos = t.offset + t.length
    finally:
        fds.close()
    return planned
