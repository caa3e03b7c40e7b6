"""ONNX tensors -> :class:`..schema.Tensor` records (a mixin of the importer, :mod:`.importer`).

A tensor's bytes stay where they are: ``raw_data`` left in the file (graph initializers and
attribute tensors, such as a Constant node's ``value``, wherever they are in the graph and its
subgraphs: :func:`.wire.strip_raw_data`) is a view of the model file at those bytes; ``raw_data``
kept in the parsed proto is a copy (a model the stripper leaves to protobuf); typed fields
(``float_data``, ``int32_data``...) are re-encoded into the ``raw_data`` layout; external data is
a view of the external file once its location has been checked (the rules: :mod:`.importer`).
"""

from __future__ import annotations

import math
import os
import stat

from ..dtypes import DTYPES, STRING, DataType
from ..errors import Finding, FormatError, Kind
from ..onemodel.header import MAX_COUNT
from ..schema import SparseTensor, Tensor
from ..storage import BytesStorage, FileStorage
from .external import ExternalRef, locate, sha1_of, parse_digits, unsafe_location
from .wire import DATA_LOCATION_EXTERNAL, float_bits

__all__ = ["TensorDecoding"]


class TensorDecoding:
    """The importer's tensor methods; it provides ``problem``, ``text``, ``dropped``, ``raw_spans``
    (where -> (offset, length) of raw_data left in ``raw_storage``), ``storages``, ``located`` ...."""

    def tensor(self, tp, where: str) -> Tensor:
        name, dtype, doc = self.text(tp.name, where + ".name"), tp.data_type, self.text(tp.doc_string, where + ".doc")
        dims = tuple(tp.dims)
        self.dropped(tp, ("metadata_props",), where)
        bad = False
        for i, d in enumerate(dims):
            if d < 0:
                self.problem(Kind.INVALID_MODEL, f"{where}.dims[{i}]", f"negative dimension {d}")
                bad = True
        info = DTYPES.get(dtype)
        if info is None:
            self.problem(Kind.UNSUPPORTED, where + ".dtype", f"unsupported dtype code {dtype}")
            bad = True
        if tp.HasField("segment"):
            self.problem(Kind.UNSUPPORTED, where + ".segment", "segmented tensors are not supported")
            bad = True
        if bad:
            return Tensor(name, dtype, tuple(max(d, 0) for d in dims), doc, where=where)
        count = math.prod(dims)
        if count >= MAX_COUNT:
            self.problem(Kind.UNSUPPORTED, where + ".dims", "element count is 2^60 or more")
            return Tensor(name, dtype, dims, doc, where=where)
        if dtype == STRING:
            strings = tuple(tp.string_data)
            if len(strings) != count:
                self.problem(Kind.INVALID_MODEL, where + ".string_data", f"{len(strings)} strings for {count} elements")
            return Tensor(name, dtype, dims, doc, strings=strings, where=where)
        expected = info.byte_length(count)
        if tp.data_location == DATA_LOCATION_EXTERNAL:
            return self.external(tp, name, dtype, dims, doc, expected, where)
        if tp.data_location != 0:
            self.problem(Kind.UNSUPPORTED, where + ".data_location", f"unknown data_location {tp.data_location}")
            return Tensor(name, dtype, dims, doc, where=where)
        span = self.raw_spans.get(where) if self.raw_spans else None
        if span is not None:  # raw_data left in the file: a view of it
            off, ln = span
            if ln != expected:
                self.problem(Kind.INVALID_MODEL, where + ".raw_data", f"{ln} bytes of raw_data, {expected} expected from dims and dtype", off)
                return Tensor(name, dtype, dims, doc, where=where)
            if expected == 0:
                return Tensor(name, dtype, dims, doc, where=where)
            return Tensor(name, dtype, dims, doc, 0, expected, off, self.raw_storage, where=where)
        if tp.HasField("raw_data"):
            raw = tp.raw_data
            if len(raw) != expected:
                self.problem(Kind.INVALID_MODEL, where + ".raw_data", f"{len(raw)} bytes of raw_data, {expected} expected from dims and dtype")
                return Tensor(name, dtype, dims, doc, where=where)
            if expected == 0:
                return Tensor(name, dtype, dims, doc, where=where)
            return Tensor(name, dtype, dims, doc, 0, expected, 0, BytesStorage(raw, where), where=where)
        if expected == 0:
            return Tensor(name, dtype, dims, doc, where=where)
        try:
            raw = self.typed_bytes(tp, info)
        except FormatError:
            raise
        except Exception as e:  # numpy_helper raises ValueError/TypeError on a count mismatch
            self.problem(Kind.INVALID_MODEL, where, f"typed data does not match dims and dtype: {e}")
            return Tensor(name, dtype, dims, doc, where=where)
        if len(raw) != expected:
            self.problem(Kind.INVALID_MODEL, where, f"typed data gives {len(raw)} bytes, {expected} expected")
            return Tensor(name, dtype, dims, doc, where=where)
        return Tensor(name, dtype, dims, doc, 0, expected, 0, BytesStorage(raw, where), where=where)

    def typed_bytes(self, tp, info) -> bytes:
        """The raw_data layout of a tensor stored in typed fields."""
        import numpy as np
        from onnx import numpy_helper

        from ..dtypes import encode

        if info.code in (DataType.FLOAT, DataType.COMPLEX64):  # float_data: keep exact bit patterns (NaN payloads)
            bits = float_bits(tp.float_data, tp, 4)
            need = math.prod(tp.dims) * (2 if info.code == DataType.COMPLEX64 else 1)
            if len(bits) != need:
                raise ValueError(f"{len(bits)} values for {need}")
            return np.asarray(bits, dtype="<u4").tobytes()
        arr = numpy_helper.to_array(tp)
        return encode(arr, info)

    def external(self, tp, name, dtype, dims, doc, expected: int, where: str) -> Tensor:
        def empty() -> Tensor:  # made only when returned (1G: 2,458 tensors 24.5 -> 23.4 ms CPU)
            return Tensor(name, dtype, dims, doc, where=where)

        w = where + ".external_data"
        kv: dict[str, str] = {}
        for i, e in enumerate(tp.external_data):
            key, value = self.text(e.key, f"{w}[{i}].key"), self.text(e.value, f"{w}[{i}].value")
            if key in kv:  # onnx keeps the last one; a reader that keeps the first reads other bytes
                self.findings.append(Finding("duplicate-key", f"{w}[{i}]", None,
                                             f"external data key {key!r} is repeated; the last value, {value!r}, is used"))
            kv[key] = value
        loc = kv.get("location", "")
        if unsafe_location(loc):
            self.problem(Kind.MALFORMED, w + ".location", f"external data location {loc!r} is absolute, empty or leaves the model's folder")
            return empty()
        offset = parse_digits(kv.get("offset", "0"))
        if offset is None:
            self.problem(Kind.MALFORMED, w + ".offset", f"external data offset {kv['offset']!r} is not plain decimal digits")
            return empty()
        length = parse_digits(kv["length"]) if "length" in kv else expected
        if length is None:
            self.problem(Kind.MALFORMED, w + ".length", f"external data length {kv['length']!r} is not plain decimal digits")
            return empty()
        if length != expected:
            self.problem(Kind.INVALID_MODEL, w + ".length", f"{length} bytes of external data, {expected} expected from dims and dtype")
            return empty()
        if loc not in self.located:
            self.located[loc] = self.locate(loc)
        full, why = self.located[loc]
        if full is None:
            self.problem(Kind.MALFORMED, w + ".location", why, file=loc)
            return empty()
        storage = self.storages.get(full)
        if storage is None and self.remote:
            from ..remote import open_external

            storage = open_external(self, full, loc, w)
            if storage is None:
                return empty()
        if storage is None:
            try:
                st = os.stat(full)
            except OSError as e:
                self.problem(Kind.IO, w + ".location", f"cannot open external data {loc!r}: {e.strerror or e}", file=loc)
                return empty()
            if not stat.S_ISREG(st.st_mode):
                self.problem(Kind.IO, w + ".location", f"external data {loc!r} is not a regular file", file=loc)
                return empty()
            if st.st_nlink > 1:  # a hard link may be a way out of the folder that realpath cannot see
                self.problem(Kind.MALFORMED, w + ".location", f"external data {loc!r} has {st.st_nlink} hard links; refused", file=loc)
                return empty()
            try:
                storage = FileStorage(full)
            except FormatError as e:
                self.problem(Kind.IO, w + ".location", f"cannot read external data {loc!r}: {e.message}", file=loc)
                return empty()
            self.storages[full] = storage
            self.locations[full] = loc
        if offset + length > storage.size:
            self.problem(Kind.MALFORMED, w + ".offset", f"external data range {offset}+{length} outside {loc!r} ({storage.size} bytes)",
                         offset, file=loc)
            return empty()
        if "checksum" in kv and (not self.remote or storage.deep):  # remote: fetched whole with --deep only
            self.checksum(kv["checksum"], full, loc, w)
        self.refs.append(ExternalRef(where, name, loc, full, offset, length))
        if length == 0:
            return empty()
        return Tensor(name, dtype, dims, doc, 0, length, offset, storage, where=where)

    def locate(self, loc: str) -> tuple[str | None, str]:
        """A path beside the model, or for a model at a URL a URL beside it (same rules: :func:`..remote.urls.relative`)."""
        from ..remote.urls import relative  # stdlib only

        return relative(self.path, loc) if self.remote else locate(self.path, loc)

    def checksum(self, want: str, full: str, loc: str, w: str) -> None:
        """``checksum-mismatch`` when the SHA-1 of the location's file is not ``want`` (computed once per file)."""
        have = self.sha1.get(full)
        if have is None:
            have = self.sha1[full] = (self.storages[full].sha1() if self.remote else sha1_of(full)) or ""
        if have != want.strip().lower() and (full, want) not in self.checked:
            self.checked.add((full, want))
            self.findings.append(Finding("checksum-mismatch", w + ".checksum", None,
                                         f"{loc!r} has SHA-1 {have or '(unreadable)'}, the model says {want!r}", loc))

    def sparse(self, sp, where: str) -> SparseTensor:
        values = self.tensor(sp.values, where + ".values")
        indices = self.tensor(sp.indices, where + ".indices")
        dims = tuple(sp.dims)
        count = 1
        for d in dims:  # bounded as the OneModel reader's: a 10^5-dim product is never built
            if count < MAX_COUNT and d >= 0:
                count *= d
        if count >= MAX_COUNT and 0 not in dims:  # the OneModel reader (and writer) refuse it too
            self.problem(Kind.UNSUPPORTED, where + ".dims", "element count is 2^60 or more")
        return SparseTensor(values, indices, dims, where)
