"""Which rule of the spec a problem breaks: a declarative table (kind + ``where`` pattern -> rule).

Every :class:`~.errors.Problem` the readers report names, through :func:`rule_of`, the section of
``onemodel-format.md`` (``§2.5 tensor: data.length``, ``§3 rule 1``, ``§1.1 header: flags``) or
the ``CLARIFICATIONS.md`` entry that decides it. ``--check`` prints it and ``--check --json``
gives its :attr:`Rule.id` as ``"rule"``; implementers in other languages use it to find the text
a case rests on. Ids are short and stable: scripts may compare them.

:data:`TABLE` is read top to bottom; the first row whose kind matches and whose pattern matches
the whole ``where`` wins. A pattern is a ``where`` with ``[]`` for any array index and ``*`` for
any run of characters (``*.data.length`` matches ``manifest.graph.initializers[3].data.length``
and ``manifest.graph.nodes[2].attributes[0].value.data.length``). Specific rows come before the
catch-all rows at the end of each kind.

A kind/``where`` pair sometimes has more than one cause (``Malformed`` at ``….data.length`` is a
negative length or a length that is not an integer); the rule is then the one of the field, and
its summary covers every cause. The message (never parsed) tells them apart for people.

Pure data and one regular expression per pattern, compiled on first use; no imports beyond the
standard library and :mod:`.errors`.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .errors import Kind, Problem


class Rule(NamedTuple):
    """One rule of the spec (or one CLARIFICATIONS decision) that a problem can break."""

    id: str
    """Short stable id (``tensor-data-length``), the ``"rule"`` of ``--check --json``."""
    section: str
    """Where the text says it: ``§2.5 tensor: data.length``, ``§3 rule 2``."""
    summary: str
    """What the text requires, in one sentence."""
    clarification: str = ""
    """The ``CLARIFICATIONS.md`` case that decides the kind, when there is one."""

    def label(self) -> str:
        """``§3 rule 2 [rule-2-defined]; CLARIFICATIONS.md: …`` (one line for people)."""
        text = f"{self.section} [{self.id}]"
        if self.clarification:
            text += f"; CLARIFICATIONS.md: {self.clarification}"
        return text


_R = Rule
RULES: dict[str, Rule] = {r.id: r for r in (
    # -- §1.1 header -----------------------------------------------------------------------
    _R("header-magic", "§1.1 header: magic", "the file starts with the 8 ASCII bytes ONEMODEL"),
    _R("header-short", "§1.1 header", "the header is 64 bytes: a file with the magic is at least 64 bytes long"),
    _R("header-version-0", "§1.1 header: version", "version is the u32 1", "header `version` 0"),
    _R("header-version-newer", "§1.1 header: version", "version is the u32 1; a newer version is not read",
       "header `version` 0 (a version above 1 is Unsupported)"),
    _R("header-flags", "§1.1 header: flags", "flags is 0; a reader rejects any other value"),
    _R("header-reserved", "§1.1 header: reserved", "reserved is zero; a reader rejects anything else",
       "header `reserved` non-zero"),
    _R("header-u64", "§1.1 header", "every u64 field is at most 2^63-1"),
    _R("header-file-length", "§1.1 header: file_length", "file_length is the exact length of the file (at most 2^63-1)"),
    _R("header-manifest-offset", "§1.1 header: manifest_offset", "manifest_offset is 64"),
    _R("header-manifest-length", "§1.1 header: manifest_length",
       "the manifest (64 + manifest_length) lies inside the file (at most 2^63-1)"),
    _R("header-data-offset", "§1.1 header: data_offset",
       "data_offset is a multiple of 64, at least 64 + manifest_length, at most the file length"),
    _R("header-data-length", "§1.1 header: data_length", "data_length is file length - data_offset"),
    # -- §1.2 manifest -----------------------------------------------------------------------
    _R("manifest-size", "§1.2 manifest: size limit", "readers limit the manifest's size (512 MiB)"),
    _R("manifest-json", "§1.2 manifest",
       "UTF-8 JSON (RFC 8259) without a byte-order mark, one object; no NaN/Infinity, nothing after it"),
    _R("manifest-depth", "§1.2 manifest: nesting depth", "readers limit the JSON nesting depth (1024 levels)",
       "manifest nested deeper than 1024 JSON levels"),
    _R("json-integer", "§1.2 manifest: integers",
       "an integer field holds a JSON integer (no fraction or exponent) that fits in signed 64 bits",
       "a required field missing, or of the wrong JSON type"),
    _R("schema-field", "§2 manifest schema",
       "each field holds its JSON type (strings valid Unicode, no lone surrogate, §1.2) and required fields are present",
       "a required field missing, or of the wrong JSON type"),
    # -- §2.1 model ------------------------------------------------------------------------------
    _R("model-format", "§2.1 model: format", 'format is the string "onemodel"', "manifest `format` not \"onemodel\""),
    _R("model-version", "§2.1 model: version", "version is an integer equal to the header's version",
       "manifest `version` differs from the header's"),
    _R("model-ir-version", "§2.1 model: ir_version", "ir_version is at least 3", "`ir_version` below 3"),
    # -- §2.4 attributes -------------------------------------------------------------------------
    _R("attribute-type", "§2.4 attribute: type",
       "type is an AttributeType code; type 0 only with a ref", "attribute `type` 0 without `ref`"),
    _R("attribute-type-unknown", "§2.4 attribute: type", "type is one of the AttributeType codes 1..14 (0 with a ref)"),
    _R("attribute-value", "§2.4 attribute: value",
       "value is required (unless ref) and has the JSON form its type gives: float bits 0..2^32-1, canonical base64...",
       "FLOAT/FLOATS attribute value outside 0..2^32-1; attribute with a non-empty `ref` that also has a `value`"),
    _R("attribute-ref", "§2.4 attribute: ref",
       "a ref names an attribute of the enclosing function (ONNX ref_attr_name); there is none outside a function"),
    # -- §2.5 tensors ----------------------------------------------------------------------------
    _R("tensor-dtype", "§2.5 tensor: dtype", "dtype is one of the TensorProto.DataType codes of the bit-width table"),
    _R("tensor-dims", "§2.5 tensor: dims", "dims are non-negative integers (§3.1: no negative dimension)"),
    _R("tensor-count", "§2.5 tensor: dims", "the element count (product of dims) stays below 2^60",
       "element count of 2^60 or more"),
    _R("tensor-data", "§2.5 tensor: data",
       "a non-string tensor has data {offset, length} inside the data region (offset + length <= data_length); "
       "a string tensor has none", "string tensor (dtype 8) carrying `data`"),
    _R("tensor-data-offset", "§2.5 tensor: data.offset",
       "offset is a non-negative integer, a multiple of 64 when length > 0"),
    _R("tensor-data-field", "§2.5 tensor: data.length", "length is a non-negative integer"),
    _R("tensor-data-length", "§2.5 tensor: data.length", "length equals ceil(count x bits / 8) for dims and dtype"),
    _R("tensor-size", "§2.5 tensor: size limit", "this library supports tensors of up to 2^31-1 bytes"),
    _R("tensor-strings", "§2.5 tensor: strings",
       "strings (dtype 8 only) is an array of canonical base64 strings (§1.2 bytes)"),
    _R("tensor-strings-count", "§2.5 tensor: strings", "a string tensor has one string per element"),
    # -- §2.7 types ------------------------------------------------------------------------------
    _R("type-kind", "§2.7 type: kind", "a Type has a kind (a string)", "Type object without `kind`"),
    _R("type-kind-unknown", "§2.7 type: kind", "kind is one of tensor, sparse_tensor, sequence, optional, map, opaque",
       "Type object without `kind` (an unknown `kind` is Unsupported)"),
    _R("type-field", "§2.7 type", "a Type is an object whose fields (elem, shape, inner, key) have the kind's forms"),
    _R("type-shape-negative", "§2.7 type: shape", "a shape entry is a non-negative integer, a string or null",
       "a negative entry in a Type's `shape`"),
    # -- §3 reading rules ------------------------------------------------------------------------
    _R("rule-1-unique", "§3 rule 1", "within one graph every name defines at most one value"),
    _R("rule-2-defined", "§3 rule 2", "a node input names a value defined in the same or an enclosing graph"),
    _R("rule-2-graph-output", "§3 rule 2", "a graph output names a value defined in the same or an enclosing graph",
       'a graph output named ""'),
    _R("rule-2-function-output", "§3 rule 2 (function bodies)",
       "a function output names a value its inputs or nodes define", 'a graph output named ""'),
    _R("rule-3-cycle", "§3 rule 3", "the nodes can be put in dependency order: a cycle is an error"),
    _R("rule-3-cycle-function", "§3 rule 3 (function bodies)", "a function's nodes can be put in dependency order",
       "section 3 rule 3 (dependency order) inside function bodies"),
    _R("rule-4-opset", "§3 rule 4", "a node's domain has an entry in opsets (\"\" and \"ai.onnx\" are one domain)"),
    _R("nesting", "§3.1 limits: nesting", "graphs and types nest at most 64 deep (counted together)",
       "nesting of graphs and types (the main graph counts as level 1)"),
    _R("io", "§3.1 kinds: Io", "the file can be opened and read (a regular file)"),
    # -- ONNX files (the viewer opens them too) ----------------------------------------------------
    _R("onnx-protobuf", "ONNX: ModelProto", "an ONNX file is one valid ModelProto protobuf (nested at most 100 deep)"),
    _R("onnx-checker", "ONNX: onnx.checker", "the model passes onnx.checker.check_model(full_check=True)"),
    _R("onnx-external-location", "ONNX external data: location",
       "location is relative and stays inside the model's folder (no symlink escape, one hard link)",
       "external data `location` naming the model file itself"),
    _R("onnx-external-range", "ONNX external data: offset/length",
       "offset and length are plain decimal digits and lie inside the data file",
       "external data `offset` / `length` not plain ASCII decimal digits"),
    _R("onnx-field", "ONNX: ModelProto fields", "the model's fields have values this reader can carry"),
)}

M, I, U, IO = Kind.MALFORMED, Kind.INVALID_MODEL, Kind.UNSUPPORTED, Kind.IO
_ATTR = ("*.attributes[]", "*.attribute_defaults[]")

TABLE: tuple[tuple[Kind, str, str], ...] = (
    # header (§1.1), in the reader's order
    (M, "header.magic", "header-magic"),
    (M, "header", "header-short"),
    (M, "header.version", "header-version-0"),
    (U, "header.version", "header-version-newer"),
    (U, "header.flags", "header-flags"),
    (M, "header.reserved", "header-u64"),
    (U, "header.reserved", "header-reserved"),
    (M, "header.file_length", "header-file-length"),
    (M, "header.manifest_offset", "header-manifest-offset"),
    (M, "header.manifest_length", "header-manifest-length"),
    (U, "header.manifest_length", "manifest-size"),
    (M, "header.data_offset", "header-data-offset"),
    (M, "header.data_length", "header-data-length"),
    # the manifest as JSON (§1.2)
    (M, "manifest", "manifest-json"),
    (U, "manifest", "manifest-depth"),
    # the model object (§2.1)
    (M, "manifest.format", "model-format"),
    (M, "manifest.version", "model-version"),
    (I, "manifest.ir_version", "model-ir-version"),
    (M, "manifest.ir_version", "json-integer"),
    (M, "manifest.model_version", "json-integer"),
    (M, "*.opsets[].version", "json-integer"),
    # attributes (§2.4)
    *((M, f"{a}.type", "attribute-type") for a in _ATTR),
    *((U, f"{a}.type", "attribute-type-unknown") for a in _ATTR),
    *((M, f"{a}.value", "attribute-value") for a in _ATTR),
    *((M, f"{a}.value[]", "attribute-value") for a in _ATTR),
    *((I, f"{a}.ref", "attribute-ref") for a in _ATTR),
    # tensors (§2.5; also sparse values/indices and tensor attributes, and ONNX tensors)
    (U, "*.dtype", "tensor-dtype"),
    (M, "*.dtype", "json-integer"),
    (I, "*.dims[]", "tensor-dims"),
    (M, "*.dims[]", "json-integer"),
    (U, "*.dims", "tensor-count"),
    (M, "*.external_data.location", "onnx-external-location"),
    (Kind.IO, "*.external_data.location", "io"),
    (M, "*.external_data", "onnx-external-range"),
    (M, "*.external_data.offset", "onnx-external-range"),
    (I, "*.external_data.length", "tensor-data-length"),
    (M, "*.data", "tensor-data"),
    (M, "*.data.offset", "tensor-data-offset"),
    (M, "*.data.length", "tensor-data-field"),
    (I, "*.data.length", "tensor-data-length"),
    (I, "*.raw_data", "tensor-data-length"),
    (U, "*.data.length", "tensor-size"),
    (I, "*.strings", "tensor-strings-count"),
    (I, "*.string_data", "tensor-strings-count"),
    (M, "*.strings", "tensor-strings"),
    (M, "*.strings[]", "tensor-strings"),
    # types (§2.7)
    (M, "*.kind", "type-kind"),
    (U, "*.kind", "type-kind-unknown"),
    (I, "*.shape[]", "type-shape-negative"),
    (M, "*.shape", "type-field"),
    (M, "*.shape[]", "type-field"),
    (M, "*.elem", "type-field"),
    (M, "*.key", "type-field"),
    (M, "*.inner", "type-field"),
    (M, "*.type", "type-field"),
    # reading rules (§3)
    (I, "manifest.functions[].outputs[]", "rule-2-function-output"),
    (I, "manifest.functions[].inputs[]", "rule-1-unique"),
    (I, "manifest.functions[].nodes[]", "rule-3-cycle-function"),
    (I, "*.nodes[].outputs[]", "rule-1-unique"),
    (I, "*.inputs[].name", "rule-1-unique"),
    (I, "*.initializers[].name", "rule-1-unique"),
    (I, "*.sparse_initializers[].values.name", "rule-1-unique"),
    (I, "*.nodes[].inputs[]", "rule-2-defined"),
    (I, "*.outputs[].name", "rule-2-graph-output"),
    (I, "*.nodes[]", "rule-3-cycle"),
    (I, "*.nodes[].domain", "rule-4-opset"),
    # ONNX files
    (M, "onnx", "onnx-protobuf"),
    (U, "onnx", "onnx-protobuf"),
    (I, "onnx.checker", "onnx-checker"),
    (U, "onnx.checker", "onnx-checker"),
    # catch-alls: any other field of the wrong JSON type / missing; anything nested too deeply
    (M, "manifest*", "schema-field"),
    (U, "manifest*", "nesting"),
    (M, "onnx*", "onnx-field"),
    (U, "onnx*", "onnx-field"),
    (I, "onnx*", "onnx-field"),
    (IO, "file", "io"),
    (IO, "*", "io"),
)
"""(kind, where pattern, rule id), first match wins."""

_INDEX = re.compile(r"\[\d+\]")
_compiled: list[tuple[Kind, re.Pattern, str]] | None = None


def _pattern(p: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part).replace(r"\[\]", r"\[\d+\]") for part in p.split("*")) + r"\Z", re.S)


def _table() -> list[tuple[Kind, re.Pattern, str]]:
    global _compiled
    if _compiled is None:
        _compiled = [(k, _pattern(p), rid) for k, p, rid in TABLE]
    return _compiled


def rule_for(kind: Kind | str, where: str) -> Rule | None:
    """The rule a problem of ``kind`` at ``where`` breaks, or None when the table has no row for it."""
    kind = Kind(kind)
    for k, pat, rid in _table():
        if k is kind and pat.match(where):
            return RULES[rid]
    return None


def rule_of(problem: Problem) -> Rule | None:
    """:func:`rule_for` of a :class:`~.errors.Problem`."""
    return rule_for(problem.kind, problem.where)


def problem_json(problem: Problem) -> dict:
    """A problem as ``--check --json`` writes it: its fields and the ``rule`` id (None when no row matches)."""
    return dict(problem.as_json(), rule=getattr(rule_of(problem), "id", None))


def shape_of(where: str) -> str:
    """``where`` with every array index written ``[]`` (``manifest.graph.nodes[]``)."""
    return _INDEX.sub("[]", where)
