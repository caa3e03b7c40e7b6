"""The builder's base: typed JSON field access, and tensors, sparse tensors, dims and base64 (spec 2.5, 2.6).

Every check calls the reporter (:mod:`.reporter`) and carries on with a safe default.
"""

from __future__ import annotations

from . import header as _header
from ..dtypes import DTYPES, STRING, DataType
from ..errors import Kind
from ..reporter import LOCATE, Reporter
from ..schema import SparseTensor, Tensor
from ..storage import Storage

MAX_LEVEL = 64
"""Graphs and types open at once (main graph = 1)."""
MAX_COUNT = _header.MAX_COUNT
MAX_TENSOR_BYTES = _header.MAX_TENSOR_BYTES
I64_MIN = -(1 << 63)
I64_MAX = (1 << 63) - 1
U32_MAX = (1 << 32) - 1
ABSENT = object()
"""A field the JSON object does not have."""





def all_strings(items: list) -> bool:
    try:
        "".join(items)  # one C call per list, not a loop (10^4 nodes' inputs and outputs: 50 -> 10 ms)
    except TypeError:
        return False
    return True


def jtype(v) -> str:
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


def b64decode(s: str) -> bytes | None:
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


class TensorBuilder:
    """Typed field access (the failure paths build the where strings) and the tensor records."""

    def __init__(self, report: Reporter, data_offset: int | None, data_length: int | None, storage: Storage | None) -> None:
        self.report = report
        self.data_offset = data_offset
        self.data_length = data_length
        self.storage = storage
        self.missing_arrays: list[str] = []

    # -- typed field access (the failure paths build the where strings) ------------------------

    def bad(self, kind: Kind, where: str, message: str, offset=LOCATE) -> None:
        self.report(kind, where, offset, message)

    def req_missing(self, w: str, key: str, what: str) -> None:
        self.bad(Kind.MALFORMED, f"{w}.{key}", f"required field {key!r} ({what}) is missing")

    def wrong(self, w: str, v, what: str) -> None:
        self.bad(Kind.MALFORMED, w, f"expected {what}, found {jtype(v)}")

    def opt_str(self, o: dict, key: str, w: str) -> str:
        v = o.get(key, "")
        if type(v) is str:
            return v
        self.wrong(f"{w}.{key}", v, "a string")
        return ""

    def req_str(self, o: dict, key: str, w: str) -> str:
        v = o.get(key, ABSENT)
        if type(v) is str:
            return v
        if v is ABSENT:
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
        v = o.get(key, ABSENT)
        if type(v) is int and I64_MIN <= v <= I64_MAX:
            return v
        if v is ABSENT:
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
        v = o.get(key, ABSENT)
        if type(v) is list:
            return v
        if v is ABSENT:
            return []
        self.wrong(f"{w}.{key}", v, "an array")
        return []

    def str_list(self, o: dict, key: str, w: str) -> tuple[str, ...]:
        v = o.get(key, ABSENT)
        if type(v) is list:
            if all_strings(v):
                return tuple(v)
            out = []
            for i, x in enumerate(v):
                if type(x) is str:
                    out.append(x)
                else:
                    self.wrong(f"{w}.{key}[{i}]", x, "a string")
                    out.append("")
            return tuple(out)
        if v is ABSENT:
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


    # -- tensors --------------------------------------------------------------------------------

    def b64(self, v, w: str) -> bytes | None:
        if type(v) is not str:
            self.wrong(w, v, "a base64 string")
            return None
        raw = b64decode(v)
        if raw is None:
            self.bad(Kind.MALFORMED, w, "not canonical padded base64 (RFC 4648, standard alphabet)")
        return raw

    def sparse(self, o, w: str) -> SparseTensor | None:
        if not self.obj(o, w, "a SparseTensor"):
            return None
        vals = o.get("values", ABSENT)
        if vals is ABSENT:
            self.req_missing(w, "values", "a Tensor")
            values = Tensor(name="", dtype=DataType.UNDEFINED, dims=(), where=f"{w}.values")
        else:
            values = self.tensor(vals, f"{w}.values")
        idx = o.get("indices", ABSENT)
        if idx is ABSENT:
            self.req_missing(w, "indices", "a Tensor")
            indices = Tensor(name="", dtype=DataType.UNDEFINED, dims=(), where=f"{w}.indices")
        else:
            indices = self.tensor(idx, f"{w}.indices")
        dims = self.dims(o, w, required=False)
        return SparseTensor(values=values, indices=indices, dims=dims[0], where=w)

    def dims(self, o: dict, w: str, required: bool = True) -> tuple[tuple[int, ...], int | None]:
        """(dims, element count or None when unusable); ``required`` by a tensor (its default: no
        keyword in the call a tensor makes, 2,458 tensors 0.96 -> 0.73 ms)."""
        v = o.get("dims", ABSENT)
        if type(v) is list:
            dims = tuple(v)
            # one loop checks each dim and multiplies while the count is below 2^60 (the product of
            # 10^6 dims would be a huge integer); a 0 anywhere makes the count 0
            count = 1
            for d in dims:
                if not (type(d) is int and 0 <= d <= I64_MAX):
                    return self.bad_dims(dims, w), None
                if count < MAX_COUNT:
                    count *= d
            if count >= MAX_COUNT:
                if 0 in dims:
                    return dims, 0
                self.bad(Kind.UNSUPPORTED, f"{w}.dims", f"element count {' x '.join(map(str, dims))} is 2^60 or more")
                return dims, None
            return dims, count
        if v is ABSENT:
            if required:
                self.req_missing(w, "dims", "an array of integers")
                return (), None
            return (), 0
        self.wrong(f"{w}.dims", v, "an array of integers")
        return (), None

    def bad_dims(self, dims: tuple, w: str) -> tuple[int, ...]:
        """Report each dim of ``dims`` that is not an integer in 0..2^63-1; the dims read instead (0 for those)."""
        out = []
        for i, d in enumerate(dims):
            dw = f"{w}.dims[{i}]"
            if type(d) is int and d < 0 and d >= I64_MIN:
                self.bad(Kind.INVALID_MODEL, dw, f"negative dimension {d}")
            elif self.int_ok(d, dw):
                out.append(d)
                continue
            out.append(0)
        return tuple(out)

    def tensor(self, o, w: str) -> Tensor:
        if type(o) is not dict:
            self.wrong(w, o, "a Tensor (an object)")
            return Tensor(name="", dtype=DataType.UNDEFINED, dims=(), where=w)
        get = o.get
        good = True
        name = get("name", "")
        if type(name) is not str:
            name = self.opt_str(o, "name", w)
        dtype = get("dtype", ABSENT)
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
        dims, count = self.dims(o, w)
        if count is None:
            good = False
        doc = get("doc", "")
        if type(doc) is not str:
            doc = self.opt_str(o, "doc", w)
        data = get("data", ABSENT)
        strings = get("strings", ABSENT)
        if dtype == STRING:
            if data is not ABSENT:
                self.bad(Kind.MALFORMED, f"{w}.data", "a string tensor (dtype 8) must not have 'data'")
            svals: tuple[bytes, ...] = ()
            if strings is not ABSENT:
                if type(strings) is list:
                    svals = tuple(self.b64(s, f"{w}.strings[{i}]") or b"" for i, s in enumerate(strings))
                else:
                    self.wrong(f"{w}.strings", strings, "an array of base64 strings")
                    good = False
            if count is not None and len(svals) != count:
                self.bad(Kind.INVALID_MODEL, f"{w}.strings", f"{len(svals)} strings for {count} elements")
            return Tensor(name=name, dtype=dtype, dims=dims, doc=doc, strings=svals, where=w)
        if strings is not ABSENT:
            self.bad(Kind.MALFORMED, f"{w}.strings", "only string tensors (dtype 8) have 'strings'")
            good = False
        if data is ABSENT:
            self.req_missing(w, "data", "an object {offset, length}")
            return Tensor(name=name, dtype=dtype, dims=dims, doc=doc, where=w)
        if type(data) is not dict:
            self.wrong(f"{w}.data", data, "an object {offset, length}")
            return Tensor(name=name, dtype=dtype, dims=dims, doc=doc, where=w)
        offset = data.get("offset", ABSENT)
        length = data.get("length", ABSENT)
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
            # the offending bytes when they start inside the data region, else the manifest bytes that
            # claim them (an offset of 2^63 points at no byte of the file)
            at = do + offset if do is not None and self.data_length is not None and offset < self.data_length else LOCATE
            if length > 0 and offset % 64:
                self.bad(Kind.MALFORMED, f"{w}.data.offset", f"offset {offset} is not a multiple of 64", offset=at)
                good = False
            elif self.data_length is not None and offset + length > self.data_length:
                self.bad(
                    Kind.MALFORMED, f"{w}.data",
                    f"bytes {offset}..{offset + length} run past the {self.data_length}-byte data region",
                    offset=at,
                )
                good = False
        if good and do is not None and self.storage is not None:
            # positional: 10 keywords cost ~1 µs a record (10^5 initializers: ~0.1 s)
            return Tensor(name, dtype, dims, doc, offset, length, do + offset, self.storage, None, w)
        return Tensor(name=name, dtype=dtype, dims=dims, doc=doc, offset=offset, length=length, where=w)
