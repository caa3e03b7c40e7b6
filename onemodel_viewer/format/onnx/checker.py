"""``onnx.checker`` on an ONNX model, with its external data the way the checker needs it.

``onnx.checker.check_model(path, full_check=True)`` fails on valid models with external data:
shape inference cannot read external shape or axes tensors ("Cannot parse data from external
tensors", what ``onnx.save_model(..., size_threshold=0)`` writes), and the checker refuses every
symlinked data file, even one inside the model's folder. Those are limits of how the checker is
called, not problems of the file (CLARIFICATIONS): a model without external data is checked from
its path as before; one with external data is loaded without it and checked as a ModelProto in
which

* every external tensor of at most :data:`INLINE_LIMIT` bytes (shape, axes, small weights), and
  every external tensor outside the main graph's initializers, carries its bytes inline, read
  from the file the importer resolved (same containment rules: :func:`.onnx_external.locate`);
* a larger main-graph initializer becomes a graph input of the same type and shape (the checker
  then validates everything but its values, which shape inference does not need; memory stays
  bounded by the small tensors whatever the weights' size).

External data itself (locations, ranges, lengths) is the importer's verdict, not the checker's.
A checker failure is ``InvalidModel`` at ``onnx.checker``.
"""

from __future__ import annotations

import os

from ..dtypes import DTYPES
from ..errors import Kind, Problem
from .external import locate, open_regular, parse_digits
from .wire import DATA_LOCATION_EXTERNAL

__all__ = ["checker_problems", "INLINE_LIMIT"]

INLINE_LIMIT = 1 << 20
"""External main-graph initializers up to this many bytes are read into the checker's copy."""


def checker_problems(path: str, external: bool) -> list[Problem]:
    """The checker's verdict on the model at ``path``; ``external``: it has external data tensors."""
    try:
        import onnx
        import onnx.checker
    except ImportError as e:  # pragma: no cover - onnx is a dependency
        return [Problem(Kind.UNSUPPORTED, "onnx", None, f"the onnx package is not available: {e}")]
    try:
        if not external:
            onnx.checker.check_model(path, full_check=True)
        else:
            mp = onnx.load(path, load_external_data=False)
            _with_data(mp, path)
            onnx.checker.check_model(mp, full_check=True)
    except Exception as e:  # noqa: BLE001 - ValidationError, InferenceError, DecodeError, ...
        msg = str(e).strip() or type(e).__name__
        return [Problem(Kind.INVALID_MODEL, "onnx.checker", None, f"{type(e).__name__}: {msg}")]
    return []


def _expected(tp) -> int | None:
    info = DTYPES.get(tp.data_type)
    if info is None or any(d < 0 for d in tp.dims):
        return None
    n = 1
    for d in tp.dims:
        n *= d
    return info.byte_length(n)


def _read(path: str, tp) -> bytes | None:
    """The tensor's external bytes, resolved as the importer does; None when they cannot be used."""
    kv = {e.key: e.value for e in tp.external_data}
    full, _why = locate(path, kv.get("location", ""))
    offset = parse_digits(kv.get("offset", "0"))
    expected = _expected(tp)
    length = parse_digits(kv["length"]) if "length" in kv else expected
    if full is None or offset is None or length is None or length != expected:
        return None
    fd = open_regular(full)
    if fd is None:
        return None
    try:
        data = os.pread(fd, length, offset) if length else b""
    except OSError:
        return None
    finally:
        os.close(fd)
    return data if len(data) == length else None


def _inline(tp, data: bytes) -> None:
    del tp.external_data[:]
    tp.data_location = 0
    tp.raw_data = data


def _with_data(mp, path: str) -> None:
    """Rewrite ``mp``'s external tensors as described in the module docstring (in place)."""
    g = mp.graph
    moved: list[int] = []
    for i, tp in enumerate(g.initializer):
        if tp.data_location == DATA_LOCATION_EXTERNAL:
            n = _expected(tp)
            if n is None:
                continue  # unknown dtype or negative dims: the importer's problem
            if n > INLINE_LIMIT:
                moved.append(i)
                continue
            data = _read(path, tp)
            _inline(tp, bytes(n) if data is None else data)  # unreadable: the importer's problem
    if moved:
        import onnx.helper

        names = {v.name for v in g.input}
        for i in moved:
            tp = g.initializer[i]
            if tp.name not in names:
                g.input.append(onnx.helper.make_tensor_value_info(tp.name, tp.data_type, list(tp.dims)))
        for i in reversed(moved):
            del g.initializer[i]
    for tp in _other_tensors(mp):
        if tp.data_location == DATA_LOCATION_EXTERNAL:
            data = _read(path, tp)
            if data is None:
                n = _expected(tp)
                data = bytes(n) if n is not None and n <= INLINE_LIMIT else None
            if data is not None:
                _inline(tp, data)


def _other_tensors(mp):
    """Every TensorProto but the main graph's initializers: subgraph initializers, sparse parts,
    attribute tensors (Constant values), in graphs and functions (explicit stack, no recursion)."""
    graphs = []
    nodes = list(mp.graph.node)
    for sp in mp.graph.sparse_initializer:
        yield sp.values
        yield sp.indices
    for f in mp.functions:
        nodes.extend(f.node)
        attrs = list(f.attribute_proto)
        while attrs:
            yield from _attr_tensors(attrs.pop(), graphs)
    while nodes or graphs:
        if graphs:
            sub = graphs.pop()
            yield from sub.initializer
            for sp in sub.sparse_initializer:
                yield sp.values
                yield sp.indices
            nodes.extend(sub.node)
            continue
        node = nodes.pop()
        for a in node.attribute:
            yield from _attr_tensors(a, graphs)


def _attr_tensors(a, graphs: list):
    if a.HasField("t"):
        yield a.t
    yield from a.tensors
    if a.HasField("sparse_tensor"):
        yield a.sparse_tensor.values
        yield a.sparse_tensor.indices
    for sp in a.sparse_tensors:
        yield sp.values
        yield sp.indices
    if a.HasField("g"):
        graphs.append(a.g)
    graphs.extend(a.graphs)
