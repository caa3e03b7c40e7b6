"""Operators ONNX Runtime runs by expanding their schema function: expanded here, as its converter does.

ONNX Runtime has no kernel for some operators whose onnx schema defines them as a function of other
operators (``CastLike``, the loss functions...); when it loads an ``.onnx`` model it inlines the
function body in their place, and its converter writes the expansion. An ``.ort`` file holding
the operator itself loads in no build. :data:`EXPANDED` lists them for ONNX Runtime 1.32 (from
running every onnx backend test model through it: ``tests/test_ort_writer.py``), with the first
since-version it has no kernel for. Each such node becomes a model-local function built from its
schema (context-dependent ones from the node and its input types), then ``onnx.inliner`` inlines
them all; attribute defaults the node omits are filled in from the schema first.
"""

from __future__ import annotations

from .formal_inputs import onnx_domain, schema_for

__all__ = ["EXPANDED", "body_input_types", "expand_function_ops", "tensor_type_proto"]

EXPANDED: dict[tuple[str, str], int] = {
    ("", "CastLike"): 0,
    ("", "SoftmaxCrossEntropyLoss"): 13,
    ("", "NegativeLogLikelihoodLoss"): 13,
    ("", "LinearAttention"): 0,
    ("", "CausalConvWithState"): 0,
    ("", "SequenceMap"): 0,
    ("", "CenterCropPad"): 0,
    ("", "Swish"): 0,
    ("", "Attention"): 25,
    ("", "ReduceLogSumExp"): 28,
    ("", "ReduceLogSum"): 28,
    ("", "Range"): 27,
    ("", "GroupNormalization"): 21,
    ("", "Mish"): 22,
    ("", "HardSwish"): 22,
}
"""(domain, op) -> the first since-version ONNX Runtime 1.32's CPU provider has no kernel for (0: none)."""
DOMAIN = "onemodel-view.expanded"
"""The made-up domain of the functions built here (gone after inlining)."""


def _graphs(graph):
    yield graph
    for n in graph.node:
        for a in n.attribute:
            if a.HasField("g"):
                yield from _graphs(a.g)
            yield from (x for g in a.graphs for x in _graphs(g))


def _types(mp) -> dict:
    """name -> TypeProto of every value of every graph: declared or inferred, an initializer's own,
    and the inputs of Loop and Scan bodies the source leaves untyped (from the holding node)."""
    out: dict = {}

    def visit(g) -> None:
        for vi in (*g.value_info, *g.input, *g.output):
            if vi.HasField("type"):
                out[vi.name] = vi.type
        for t in g.initializer:
            out.setdefault(t.name, tensor_type_proto(t.data_type, list(t.dims)))
        for n in g.node:
            for a in n.attribute:
                if a.HasField("g"):
                    for name, t in body_input_types(n, a.name, a.g, out).items():
                        out.setdefault(name, t)
                    visit(a.g)
                for sub in a.graphs:
                    visit(sub)

    visit(mp.graph)
    return out


def tensor_type_proto(elem: int, dims=None):
    from onnx import helper

    return helper.make_tensor_type_proto(elem, None if dims is None else list(dims))


def body_input_types(node, attr: str, g, types: dict) -> dict:
    """Types for a Loop or Scan body's undeclared inputs, as ONNX Runtime's type inference gives them:
    Loop: iteration count int64[], condition bool[], then the loop-carried values' types; Scan (opset 9
    on): the state values' types, then each scanned input's element type (rank left open)."""
    if node is None or attr != "body" or node.domain not in ("", "ai.onnx"):
        return {}
    out: dict = {}
    names = [vi.name for vi in g.input if not vi.HasField("type")]
    if not names:
        return {}
    inputs = [vi.name for vi in g.input]
    if node.op_type == "Loop":
        known = [tensor_type_proto(7, []), tensor_type_proto(9, [])] + [types.get(x) for x in node.input[2:]]
    elif node.op_type == "Scan":
        m = next((a.i for a in node.attribute if a.name == "num_scan_inputs"), 0)
        state = len(node.input) - m
        known = [types.get(x) for x in node.input[:state]]
        for x in node.input[state:]:
            t = types.get(x)
            known.append(tensor_type_proto(t.tensor_type.elem_type) if t is not None and t.HasField("tensor_type") else None)
    else:
        return {}
    for name, t in zip(inputs, known):
        if name in names and t is not None:
            out[name] = t
    return out




def _function(node, schema, version: int, types: dict):
    """The node's expansion as FunctionProto bytes, or None (no function, or an input type unknown)."""
    if schema.has_context_dependent_function:
        arg_types = []
        for x in node.input:
            if not x:
                arg_types.append(b"")
                continue
            t = types.get(x)
            if t is None:
                return None
            arg_types.append(t.SerializeToString())
        versions = [v for v in schema.context_dependent_function_opset_versions if v <= version]
        if versions:
            return schema.get_context_dependent_function_with_opset_version(max(versions), node.SerializeToString(), arg_types)
        return schema.get_context_dependent_function(node.SerializeToString(), arg_types)
    if schema.has_function:
        versions = [v for v in schema.function_opset_versions if v <= version]
        return schema.get_function_with_opset_version(max(versions)) if versions else schema.function_body.SerializeToString()
    return None


def _fill_defaults(node, schema) -> None:
    have = {a.name for a in node.attribute}
    for name, attr in schema.attributes.items():
        d = attr.default_value
        if name not in have and d is not None and d.name:
            node.attribute.append(d)


def expand_function_ops(mp):
    """``(model, names)``: ``mp`` with every :data:`EXPANDED` node inlined (one round), and the op ids
    expanded (empty: ``mp`` unchanged)."""
    import onnx

    opsets = {onnx_domain(o.domain): o.version for o in mp.opset_import}
    types = None
    funcs, names = [], []
    for g in _graphs(mp.graph):
        for i, node in enumerate(g.node):
            first = EXPANDED.get((onnx_domain(node.domain), node.op_type))
            if first is None:
                continue
            schema = schema_for(node.op_type, node.domain, opsets, f"node {node.name or i}")
            if schema.since_version < first:
                continue
            if types is None:
                types = _types(mp)
            _fill_defaults(node, schema)
            data = _function(node, schema, opsets.get(onnx_domain(node.domain), 0), types)
            if data is None:
                continue
            f = onnx.FunctionProto()
            f.ParseFromString(data)
            f.name, f.domain = f"{node.op_type}_{len(funcs)}", DOMAIN
            for o in f.opset_import:  # the body at the model's opsets (the inliner skips a function at others)
                o.version = opsets.get(onnx_domain(o.domain), o.version)
            names.append(f"{node.op_type}-{schema.since_version}")
            node.op_type, node.domain = f.name, DOMAIN
            funcs.append(f)
    if not funcs:
        return mp, []
    from onnx import inliner

    mp.functions.extend(funcs)
    mp.opset_import.add(domain=DOMAIN, version=1)
    mp = inliner.inline_local_functions(mp)
    keep = [o for o in mp.opset_import if o.domain != DOMAIN]
    del mp.opset_import[:]
    mp.opset_import.extend(keep)
    del mp.functions[:]
    return mp, names
