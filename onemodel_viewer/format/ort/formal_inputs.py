"""A node's operator schema (from onnx's registry), its since-version and ``input_arg_counts``.

ONNX Runtime stores one count per *formal* schema input, not one per actual input slot: a
variadic input takes every remaining actual input (a three-input ``Concat`` stores ``[3]``); any
other input counts 1 when an actual slot is there (an explicitly empty optional slot ``""`` too)
and 0 when the node ends before it (``Clip`` at opset 11 with only its required input stores
``[1, 0, 0]``). An operator onnx has no schema for is refused rather than guessed.
"""

from __future__ import annotations

from functools import lru_cache

from ..errors import FormatError, Kind

__all__ = ["schema_for", "input_arg_counts", "onnx_domain"]


def onnx_domain(domain: str) -> str:
    """The registry's name of a domain: ``ai.onnx`` is the default domain ``""``."""
    return "" if domain == "ai.onnx" else domain


@lru_cache(maxsize=4096)
def _lookup(op: str, version: int, domain: str):
    import onnx.defs

    if not 0 <= version < 1 << 31:  # onnx's C++ binding takes an int: a wider version raised TypeError (fuzzing)
        return None
    try:
        return onnx.defs.get_schema(op, version, domain)
    except onnx.defs.SchemaError:
        return None


def schema_for(op: str, domain: str, opsets: dict[str, int], where: str):
    """The schema ``op`` resolves to under the model's ``opsets`` (domain -> version); Unsupported at
    ``where`` when the domain is not imported or onnx knows no such operator at that version."""
    d = onnx_domain(domain)
    version = opsets.get(d)
    if version is None:
        raise FormatError(Kind.UNSUPPORTED, where, None,
                          f"the model imports no opset for domain {d or 'ai.onnx'!r} of operator {op!r}")
    schema = _lookup(op, version, d)
    if schema is None:
        raise FormatError(Kind.UNSUPPORTED, where, None,
                          f"onnx has no schema for {d or 'ai.onnx'}:{op} at opset {version}: the .ort writer needs one "
                          "per node (its formal inputs and type constraints), and does not guess")
    return schema


def input_arg_counts(schema, actual: int, where: str) -> list[int]:
    """One count per formal input of ``schema`` for a node with ``actual`` input slots."""
    import onnx.defs

    variadic = onnx.defs.OpSchema.FormalParameterOption.Variadic
    counts: list[int] = []
    used = 0
    for param in schema.inputs:
        if param.option == variadic:
            n = max(0, actual - used)
        else:
            n = 1 if used < actual else 0
        counts.append(n)
        used += n
    if used < actual:
        raise FormatError(Kind.INVALID_MODEL, where + ".inputs", None,
                          f"{actual} inputs where the schema of {schema.name} (opset {schema.since_version}) takes at most {used}")
    return counts
