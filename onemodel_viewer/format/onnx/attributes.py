"""ONNX attributes -> :class:`..schema.Attribute` records (a mixin of the importer, :mod:`.importer`)."""

from __future__ import annotations

from ..dtypes import AttrType
from ..errors import Kind
from ..schema import Attribute, bits_from_float
from .wire import float_bits

__all__ = ["AttributeDecoding", "infer_attr_type"]


class AttributeDecoding:
    """The importer's attribute method; it provides ``problem``, ``text``, ``tensor``, ``graph``,
    ``sparse`` and ``type``."""

    def attr(self, ap, where: str) -> Attribute:
        t, w = ap.type, where + ".value"
        name, doc = ap.name, ap.doc_string
        if name.__class__ is not str or doc.__class__ is not str:  # not valid UTF-8 (location strings built only then)
            name, doc = self.text(name, where + ".name"), self.text(doc, where + ".doc")
        if ap.ref_attr_name:
            return Attribute(name, t, None, self.text(ap.ref_attr_name, where + ".ref"), doc, where)
        if t == AttrType.UNDEFINED:
            t = infer_attr_type(ap)
            if t == AttrType.UNDEFINED:
                self.problem(Kind.MALFORMED, where + ".type", "attribute without a type")
                return Attribute(name, AttrType.UNDEFINED, None, "", doc, where)
        v: object
        if t == AttrType.FLOAT:
            v = float_bits([ap.f], ap, 2)[-1] if ap.f != ap.f else bits_from_float(ap.f)
        elif t == AttrType.INT:
            v = ap.i
        elif t == AttrType.STRING:
            v = ap.s
        elif t == AttrType.TENSOR:
            v = self.tensor(ap.t, w)
        elif t == AttrType.GRAPH:
            v = self.graph(ap.g, w)
        elif t == AttrType.FLOATS:
            v = float_bits(ap.floats, ap, 7)
        elif t == AttrType.INTS:
            v = tuple(ap.ints)
        elif t == AttrType.STRINGS:
            v = tuple(ap.strings)
        elif t == AttrType.TENSORS:
            v = tuple(self.tensor(x, f"{w}[{i}]") for i, x in enumerate(ap.tensors))
        elif t == AttrType.GRAPHS:
            v = tuple(self.graph(x, f"{w}[{i}]") for i, x in enumerate(ap.graphs))
        elif t == AttrType.SPARSE_TENSOR:
            v = self.sparse(ap.sparse_tensor, w)
        elif t == AttrType.SPARSE_TENSORS:
            v = tuple(self.sparse(x, f"{w}[{i}]") for i, x in enumerate(ap.sparse_tensors))
        elif t == AttrType.TYPE_PROTO:
            v = self.type(ap.tp, w)
            if v is None:
                self.problem(Kind.UNSUPPORTED, w, "empty TypeProto attribute")
        elif t == AttrType.TYPE_PROTOS:
            v = tuple(x for x in (self.type(x, f"{w}[{i}]") for i, x in enumerate(ap.type_protos)) if x is not None)
        else:
            self.problem(Kind.UNSUPPORTED, where + ".type", f"unsupported attribute type {t}")
            v = None
        return Attribute(name, int(t), v, "", doc, where)


def infer_attr_type(ap) -> int:
    """ONNX before IR 4 may leave ``type`` unset: infer it from the one field that is set."""
    for field, t in (("f", 1), ("i", 2), ("s", 3), ("t", 4), ("g", 5), ("sparse_tensor", 11), ("tp", 13)):
        if ap.HasField(field):
            return t
    for field, t in (("floats", 6), ("ints", 7), ("strings", 8), ("tensors", 9), ("graphs", 10), ("sparse_tensors", 12), ("type_protos", 14)):
        if len(getattr(ap, field)):
            return t
    return 0
