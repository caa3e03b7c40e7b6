"""The kernel type-string table (``InferenceSession.kernel_type_str_resolver``) from onnx's schemas.

For each operator the model uses (op id ``domain:op_type:since_version``), each type-constraint
string of its schema (``T``, ``T1``...) with the formal inputs, then outputs, whose type is that
string: ``(arg type, index)`` with INPUT 0, OUTPUT 1; a formal parameter of a fixed type
(``Reshape``'s ``shape``: ``tensor(int64)``) is listed under its own name instead. Constraints no
input or output uses have no entry. Ops and strings are sorted
(bytewise), as ONNX Runtime's ``CreateVectorOfSortedTables`` leaves them: the table is keyed.
Minimal ONNX Runtime builds match kernels through it; full builds re-derive it.
"""

from __future__ import annotations

from .fbs import ENUMS
from .tables import Table

__all__ = ["op_id", "entries", "resolver_table"]

_INPUT = ENUMS["ArgType"]["INPUT"]
_OUTPUT = ENUMS["ArgType"]["OUTPUT"]


def op_id(domain: str, op: str, since: int) -> str:
    return f"{domain}:{op}:{since}"


def entries(schema) -> list[tuple[str, list[tuple[int, int]]]]:
    """``[(type string, [(arg type, formal index), ...]), ...]`` of one schema, sorted by string."""
    names = {c.type_param_str for c in schema.type_constraints}
    found: dict[str, list[tuple[int, int]]] = {}
    for kind, params in ((_INPUT, schema.inputs), (_OUTPUT, schema.outputs)):
        for i, p in enumerate(params):
            key = p.type_str if p.type_str in names else p.name  # a fixed type: the parameter's own name
            found.setdefault(key, []).append((kind, i))
    return sorted(found.items(), key=lambda kv: kv[0].encode("utf-8"))


def resolver_table(ops: dict[str, object]) -> Table:
    """The ``KernelTypeStrResolver`` table of ``ops`` (op id -> schema)."""
    rows = []
    for oid in sorted(ops, key=lambda s: s.encode("utf-8")):
        args = [Table("KernelTypeStrArgsEntry", kernel_type_str=ts,
                      args=[Table("ArgTypeAndIndex", arg_type=k, index=i) for k, i in pairs])
                for ts, pairs in entries(ops[oid])]
        rows.append(Table("OpIdKernelTypeStrArgsEntry", op_id=oid, kernel_type_str_args=args))
    return Table("KernelTypeStrResolver", op_kernel_type_str_args=rows)
