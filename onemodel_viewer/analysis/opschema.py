"""Operator schema facts from ``onnx.defs`` for a node: inputs, outputs, attributes with defaults,
since-version, and which attributes the node leaves at their default. No UI here.

The schema is the one in force for the model's opset of the node's domain (``onnx.defs.get_schema``
with that version); a domain onnx does not know, or an op it has no schema for, gives a
:class:`SchemaFacts` with ``found`` False and a reason.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

from ..format.dtypes import AttrType
from ..format.schema import Attribute, Node

__all__ = ["AttrFact", "Formal", "SchemaFacts", "schema_facts"]


@dataclass(frozen=True, slots=True)
class Formal:
    """An input or output of the schema."""

    name: str
    type_str: str
    option: str
    """``single``, ``optional`` or ``variadic``."""
    description: str


@dataclass(frozen=True, slots=True)
class AttrFact:
    name: str
    type: str
    """``INT``, ``FLOATS``..."""
    required: bool
    default: str | None
    """The schema's default as text; None when it has none."""
    status: str
    """``set`` (to another value than the default), ``set-default`` (set, equal to the default),
    ``default`` (not set: the default applies), ``missing`` (required, not set),
    ``unset`` (optional, no default, not set)."""
    description: str


@dataclass(slots=True)
class SchemaFacts:
    op: str
    domain: str
    found: bool
    reason: str = ""
    since_version: int = 0
    opset: int | None = None
    """The model's opset version of the node's domain."""
    deprecated: bool = False
    doc: str = ""
    inputs: list[Formal] = field(default_factory=list)
    outputs: list[Formal] = field(default_factory=list)
    attributes: list[AttrFact] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)
    """Attributes the node sets that the schema does not have."""
    type_constraints: list[tuple[str, tuple[str, ...], str]] = field(default_factory=list)
    """(type parameter, allowed types, description)."""
    min_input: int = 0
    max_input: int = 0
    min_output: int = 0
    max_output: int = 0


def _norm_domain(d: str) -> str:
    return "" if d in ("", "ai.onnx") else d


def _proto_value(ap) -> object:
    """The default's value in the records' encoding (floats as their 32-bit patterns)."""
    t = ap.type
    if t == AttrType.FLOAT:
        return struct.unpack("<I", struct.pack("<f", ap.f))[0]
    if t == AttrType.INT:
        return ap.i
    if t == AttrType.STRING:
        return bytes(ap.s)
    if t == AttrType.FLOATS:
        return tuple(struct.unpack("<I", struct.pack("<f", x))[0] for x in ap.floats)
    if t == AttrType.INTS:
        return tuple(ap.ints)
    if t == AttrType.STRINGS:
        return tuple(bytes(x) for x in ap.strings)
    return None


def _default_text(ap) -> str:
    t = ap.type
    if t == AttrType.FLOAT:
        return repr(ap.f)
    if t == AttrType.INT:
        return str(ap.i)
    if t == AttrType.STRING:
        return repr(bytes(ap.s).decode("utf-8", "backslashreplace"))
    if t == AttrType.FLOATS:
        return "[" + ", ".join(repr(x) for x in ap.floats) + "]"
    if t == AttrType.INTS:
        return "[" + ", ".join(str(x) for x in ap.ints) + "]"
    if t == AttrType.STRINGS:
        return "[" + ", ".join(repr(bytes(x).decode("utf-8", "backslashreplace")) for x in ap.strings) + "]"
    return "(default)"


def _attr_type_name(t) -> str:
    name = getattr(t, "name", None)
    if name:
        return name
    try:
        return AttrType(int(t)).name
    except ValueError:
        return str(t)


def _option(o) -> str:
    name = getattr(o, "name", str(o)).lower()
    return {"single": "single", "optional": "optional", "variadic": "variadic"}.get(name, name)


def _first_paragraph(doc: str, limit: int = 600) -> str:
    text = (doc or "").strip()
    para = text.split("\n\n", 1)[0].replace("\n", " ").strip()
    return para if len(para) <= limit else para[: limit - 1] + "…"


def schema_facts(node: Node, opset: int | None) -> SchemaFacts:
    """Schema facts for ``node`` at opset version ``opset`` of its domain (None: the newest known)."""
    domain = _norm_domain(node.domain)
    out = SchemaFacts(op=node.op, domain=domain or "ai.onnx", found=False, opset=opset)
    try:
        from onnx import defs
    except Exception as e:  # pragma: no cover - onnx is a dependency
        out.reason = f"onnx.defs unavailable: {e}"
        return out
    try:
        if opset is None:
            schema = defs.get_schema(node.op, domain)
        else:
            schema = defs.get_schema(node.op, int(opset), domain)
    except Exception:
        try:
            newest = defs.get_schema(node.op, domain)
        except Exception:
            out.reason = (f"onnx {_onnx_version()} has no schema for this operator in domain "
                          f"{domain or 'ai.onnx'}" + ("" if domain == "" else " (custom or unknown domain)"))
            return out
        out.reason = (f"no schema at opset {opset}: the operator first appears at version {newest.since_version}")
        return out
    out.found = True
    out.since_version = schema.since_version
    out.deprecated = bool(schema.deprecated)
    out.doc = _first_paragraph(schema.doc)
    out.inputs = [Formal(p.name, p.type_str, _option(p.option), _first_paragraph(p.description, 160)) for p in schema.inputs]
    out.outputs = [Formal(p.name, p.type_str, _option(p.option), _first_paragraph(p.description, 160)) for p in schema.outputs]
    out.min_input, out.max_input = schema.min_input, schema.max_input
    out.min_output, out.max_output = schema.min_output, schema.max_output
    out.type_constraints = [(tc.type_param_str, tuple(tc.allowed_type_strs), _first_paragraph(tc.description, 160))
                            for tc in schema.type_constraints]
    have: dict[str, Attribute] = {a.name: a for a in node.attributes}
    for name, sa in sorted(schema.attributes.items()):
        dv = sa.default_value
        has_default = dv is not None and dv.type != AttrType.UNDEFINED
        mine = have.get(name)
        if mine is None:
            status = "missing" if sa.required else ("default" if has_default else "unset")
        elif has_default and not mine.ref and mine.type == dv.type and mine.value == _proto_value(dv):
            status = "set-default"
        else:
            status = "set"
        out.attributes.append(AttrFact(name, _attr_type_name(sa.type), bool(sa.required),
                                       _default_text(dv) if has_default else None, status,
                                       _first_paragraph(sa.description, 200)))
    out.unknown = [a.name for a in node.attributes if a.name not in schema.attributes]
    return out


def _onnx_version() -> str:
    try:
        import onnx

        return onnx.__version__
    except Exception:  # pragma: no cover
        return "?"
