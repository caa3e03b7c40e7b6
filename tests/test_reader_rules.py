"""Reading rules (spec section 3) and limits (3.1): names, scopes, order, opsets, refs, tensor ranges, nesting."""

from __future__ import annotations

import pytest

from onemodel_viewer.format.errors import FormatError, Kind
from onemodel_viewer.format.reader import open_path

from test_reader_util import graph, model, node, pack, tensor, write


def read(tmp_path, m, data=b""):
    return open_path(write(tmp_path, pack(m, data)))


def diag(tmp_path, m, data=b""):
    p = write(tmp_path, pack(m, data))
    d = open_path(p, mode="diagnose")
    try:
        open_path(p)
        assert d.problems == []
    except FormatError as e:
        assert d.problems and d.problems[0] == e.problem
    return [(p.kind, p.where) for p in d.problems], d


def first(tmp_path, m, data=b""):
    ps, _ = diag(tmp_path, m, data)
    assert ps, "expected a problem"
    return ps[0]


IV = Kind.INVALID_MODEL


# --- rule 1: one definition per name -----------------------------------------------------------


def test_duplicate_graph_input(tmp_path):
    g = graph(inputs=[{"name": "x"}, {"name": "x"}])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.inputs[1].name")


def test_duplicate_initializer(tmp_path):
    g = graph(initializers=[tensor("w", 1, [0], 0, 0), tensor("w", 1, [0], 0, 0)])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.initializers[1].name")


def test_node_output_redefines_input(tmp_path):
    g = graph(inputs=[{"name": "x"}], nodes=[node("Relu", ["x"], ["y"]), node("Relu", ["y"], ["x"])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[1].outputs[0]")


def test_two_nodes_same_output(tmp_path):
    g = graph(nodes=[node("A", [], ["y"]), node("B", [], ["y"])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[1].outputs[0]")


def test_initializer_attaches_to_input(tmp_path):
    g = graph(inputs=[{"name": "w"}], initializers=[tensor("w", 1, [0], 0, 0)], nodes=[node("Relu", ["w"], ["y"])], outputs=[{"name": "y"}])
    assert read(tmp_path, model(g)).valid


def test_second_initializer_for_same_input_is_duplicate(tmp_path):
    g = graph(inputs=[{"name": "w"}], initializers=[tensor("w", 1, [0], 0, 0), tensor("w", 1, [0], 0, 0)])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.initializers[1].name")


def test_sparse_initializer_attaches_to_input(tmp_path):
    sp = {"values": tensor("s", 1, [0], 0, 0), "indices": tensor("", 7, [0], 0, 0), "dims": [4]}
    g = graph(inputs=[{"name": "s"}], sparse_initializers=[sp], nodes=[node("Relu", ["s"], ["y"])])
    assert read(tmp_path, model(g)).valid


def test_sparse_duplicate_of_initializer(tmp_path):
    sp = {"values": tensor("w", 1, [0], 0, 0), "indices": tensor("", 7, [0], 0, 0), "dims": [4]}
    g = graph(initializers=[tensor("w", 1, [0], 0, 0)], sparse_initializers=[sp])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.sparse_initializers[0].values.name")


def test_empty_output_names_are_omitted_operands(tmp_path):
    g = graph(nodes=[node("Dropout", [], ["y", ""]), node("Dropout", ["y", "", ""], ["z", ""])])
    assert read(tmp_path, model(g)).valid


# --- rule 2: references ------------------------------------------------------------------------


def test_undefined_node_input(tmp_path):
    g = graph(nodes=[node("A", [], ["y"]), node("B", ["y", "nope"], ["z"])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[1].inputs[1]")


def test_undefined_graph_output(tmp_path):
    g = graph(outputs=[{"name": "ghost"}])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.outputs[0].name")


def test_graph_output_named_empty_is_undefined(tmp_path):
    """A graph output named "" was accepted (skipped like an omitted node operand). Rule 2: a graph output
    names a defined value, and a node's "" output defines nothing (CLARIFICATIONS)."""
    g = graph(nodes=[node("Dropout", [], ["y", ""])], outputs=[{"name": "y"}, {"name": ""}])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.outputs[1].name")


def test_every_empty_graph_output_is_reported_where_an_undefined_one_is(tmp_path):
    """Diagnose mode reports each "" output once, at ``.name`` like an undefined output, in output order."""
    g = graph(inputs=[{"name": "x"}], outputs=[{"name": ""}, {"name": "x"}, {"name": "ghost"}, {"name": ""}])
    ps, _ = diag(tmp_path, model(g))
    assert ps == [(IV, "manifest.graph.outputs[0].name"), (IV, "manifest.graph.outputs[2].name"),
                  (IV, "manifest.graph.outputs[3].name")]


@pytest.mark.parametrize("op,attr", [("If", "then_branch"), ("Loop", "body")])
def test_subgraph_output_named_empty_is_undefined(tmp_path, op, attr):
    """A subgraph (If/Loop body) output named "" was accepted; it names no value, as in the main graph."""
    body = graph(nodes=[node("Identity", ["x"], ["b_out"])], outputs=[{"name": "b_out"}, {"name": ""}])
    g = graph(inputs=[{"name": "x"}], nodes=[node(op, [], ["r"], attributes=[{"name": attr, "type": 5, "value": body}])],
              outputs=[{"name": "r"}])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[0].attributes[0].value.outputs[1].name")


def test_graphs_attribute_output_named_empty_is_undefined(tmp_path):
    """The same inside a GRAPHS attribute's second graph."""
    ok = graph(nodes=[node("A", [], ["o"])], outputs=[{"name": "o"}])
    bad = graph(nodes=[node("A", [], ["o"])], outputs=[{"name": ""}])
    g = graph(nodes=[node("Custom", [], ["r"], attributes=[{"name": "gs", "type": 10, "value": [ok, bad]}])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[0].attributes[0].value[1].outputs[0].name")


def _if_node(branch_inputs, out="r"):
    body = graph(nodes=[node("Identity", branch_inputs, ["b_out"])], outputs=[{"name": "b_out"}])
    return node("If", ["cond"], [out], attributes=[{"name": "then_branch", "type": 5, "value": body}])


def test_subgraph_reads_outer_scope(tmp_path):
    g = graph(inputs=[{"name": "cond"}, {"name": "x"}], nodes=[_if_node(["x"])], outputs=[{"name": "r"}])
    doc = read(tmp_path, model(g))
    assert doc.valid


def test_subgraph_undefined_name(tmp_path):
    g = graph(inputs=[{"name": "cond"}], nodes=[_if_node(["nope"])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[0].attributes[0].value.nodes[0].inputs[0]")


def test_subgraph_output_may_name_outer_value(tmp_path):
    body = graph(outputs=[{"name": "x"}])
    g = graph(inputs=[{"name": "x"}], nodes=[node("Loop", [], ["r"], attributes=[{"name": "body", "type": 5, "value": body}])])
    assert read(tmp_path, model(g)).valid


def test_sibling_subgraph_names_are_not_visible(tmp_path):
    b1 = graph(nodes=[node("A", [], ["inner"])])
    b2 = graph(nodes=[node("B", ["inner"], ["o"])])
    g = graph(nodes=[node("If", [], ["r"], attributes=[{"name": "a", "type": 5, "value": b1}, {"name": "b", "type": 5, "value": b2}])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[0].attributes[1].value.nodes[0].inputs[0]")


def test_same_name_in_subgraph_is_another_scope(tmp_path):
    body = graph(nodes=[node("A", [], ["y"])], outputs=[{"name": "y"}])
    g = graph(nodes=[node("A", [], ["y"]), node("If", ["y"], ["r"], attributes=[{"name": "b", "type": 5, "value": body}])])
    assert read(tmp_path, model(g)).valid


# --- rule 3: stable dependency order -----------------------------------------------------------


def test_in_order_graph_keeps_positions(tmp_path):
    g = graph(inputs=[{"name": "x"}], nodes=[node("A", ["x"], ["a"]), node("B", ["x"], ["b"]), node("C", ["a", "b"], ["c"])])
    doc = read(tmp_path, model(g))
    assert doc.model.graph.order == (0, 1, 2) and not [f for f in doc.findings if f.code == "out-of-order"]


def test_out_of_order_sorted_stably_and_reported(tmp_path):
    g = graph(
        inputs=[{"name": "x"}],
        nodes=[
            node("D", ["c"], ["d"]),  # 0 needs 3
            node("A", ["x"], ["a"]),  # 1
            node("E", ["x"], ["e"]),  # 2
            node("C", ["a"], ["c"]),  # 3 needs 1
            node("F", ["d", "e"], ["f"]),  # 4
        ],
    )
    doc = read(tmp_path, model(g))
    assert doc.valid
    assert doc.model.graph.order == (1, 2, 3, 0, 4)
    [f] = [f for f in doc.findings if f.code == "out-of-order"]
    assert f.where == "manifest.graph.nodes[0]"
    assert [n.op for n in doc.model.graph.ordered_nodes()] == ["A", "E", "C", "D", "F"]


def test_implicit_input_through_subgraph_orders_the_producer_first(tmp_path):
    g = graph(
        inputs=[{"name": "cond"}],
        nodes=[_if_node(["late"]), node("P", [], ["late"])],
    )
    doc = read(tmp_path, model(g))
    assert doc.valid and doc.model.graph.order == (1, 0)


def test_cycle(tmp_path):
    g = graph(nodes=[node("A", ["c"], ["a"]), node("B", ["a"], ["b"]), node("C", ["b"], ["c"])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[0]")


def test_self_loop(tmp_path):
    g = graph(nodes=[node("X", [], ["ok"]), node("A", ["a"], ["a"])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[1]")


def test_cycle_diagnose_still_orders_every_node(tmp_path):
    g = graph(nodes=[node("Z", [], ["z"]), node("A", ["b"], ["a"]), node("B", ["a"], ["b"])])
    _, d = diag(tmp_path, model(g))
    assert d.model.graph.order == (0, 1, 2)


# --- rule 4: opsets ----------------------------------------------------------------------------


def test_missing_domain(tmp_path):
    g = graph(nodes=[node("A", [], ["a"]), node("Custom", [], ["b"], domain="com.acme")])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[1].domain")


@pytest.mark.parametrize("opset_domain,node_domain", [("", "ai.onnx"), ("ai.onnx", ""), ("ai.onnx", "ai.onnx")])
def test_default_domain_aliases(tmp_path, opset_domain, node_domain):
    g = graph(nodes=[node("A", [], ["a"], domain=node_domain)])
    assert read(tmp_path, model(g, opsets=[{"domain": opset_domain, "version": 17}])).valid


def test_no_opsets_at_all(tmp_path):
    g = graph(nodes=[node("A", [], ["a"])])
    assert first(tmp_path, model(g, opsets=[])) == (IV, "manifest.graph.nodes[0].domain")


def test_subgraph_node_domain_checked(tmp_path):
    body = graph(nodes=[node("X", [], ["o"], domain="nope")])
    g = graph(nodes=[node("If", [], ["r"], attributes=[{"name": "b", "type": 5, "value": body}])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[0].attributes[0].value.nodes[0].domain")


# --- functions ---------------------------------------------------------------------------------


def fn(**kw):
    f = {"name": "F", "domain": "local", "inputs": ["x"], "outputs": ["y"], "attribute_names": ["alpha"], "nodes": [node("Relu", ["x"], ["y"])], "opsets": []}
    f.update(kw)
    return f


def test_function_ok(tmp_path):
    assert read(tmp_path, model(functions=[fn()])).valid


def test_function_undefined_input(tmp_path):
    assert first(tmp_path, model(functions=[fn(nodes=[node("Relu", ["nope"], ["y"])])])) == (IV, "manifest.functions[0].nodes[0].inputs[0]")


def test_function_cannot_see_main_graph(tmp_path):
    g = graph(inputs=[{"name": "outer"}])
    assert first(tmp_path, model(g, functions=[fn(nodes=[node("Relu", ["outer"], ["y"])])])) == (IV, "manifest.functions[0].nodes[0].inputs[0]")


def test_function_undefined_output(tmp_path):
    assert first(tmp_path, model(functions=[fn(outputs=["y", "ghost"])])) == (IV, "manifest.functions[0].outputs[1]")


def test_function_output_named_empty_is_undefined(tmp_path):
    """A function output named "" was skipped; it names no value of the body, as for a graph output."""
    assert first(tmp_path, model(functions=[fn(outputs=["y", ""])])) == (IV, "manifest.functions[0].outputs[1]")


def test_function_ref_unknown_attribute(tmp_path):
    n = node("Elu", ["x"], ["y"], attributes=[{"name": "alpha", "type": 1, "ref": "gamma"}])
    assert first(tmp_path, model(functions=[fn(nodes=[n])])) == (IV, "manifest.functions[0].nodes[0].attributes[0].ref")


def test_function_ref_to_default_and_in_subgraph(tmp_path):
    body = graph(nodes=[node("Elu", [], ["o"], attributes=[{"name": "alpha", "type": 1, "ref": "beta"}])])
    n = node("If", ["x"], ["y"], attributes=[{"name": "b", "type": 5, "value": body}])
    f = fn(nodes=[n], attribute_defaults=[{"name": "beta", "type": 1, "value": 0}])
    assert read(tmp_path, model(functions=[f])).valid


def test_ref_outside_function(tmp_path):
    g = graph(nodes=[node("Elu", [], ["o"], attributes=[{"name": "alpha", "type": 1, "ref": "alpha"}])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[0].attributes[0].ref")


def test_function_opsets_cover_its_nodes(tmp_path):
    f = fn(nodes=[node("Relu", ["x"], ["y"], domain="com.f")], opsets=[{"domain": "com.f", "version": 1}])
    assert read(tmp_path, model(functions=[f])).valid
    f["opsets"] = []
    assert first(tmp_path, model(functions=[f])) == (IV, "manifest.functions[0].nodes[0].domain")


# --- diagnose collects all name problems -------------------------------------------------------


def test_all_name_problems_reported(tmp_path):
    g = graph(
        inputs=[{"name": "x"}, {"name": "x"}],
        nodes=[node("A", ["u1"], ["y"]), node("B", ["u2"], ["y"])],
        outputs=[{"name": "u3"}],
    )
    ps, d = diag(tmp_path, model(g))
    assert ps == [
        (IV, "manifest.graph.inputs[1].name"),
        (IV, "manifest.graph.nodes[1].outputs[0]"),
        (IV, "manifest.graph.nodes[0].inputs[0]"),
        (IV, "manifest.graph.nodes[1].inputs[0]"),
        (IV, "manifest.graph.outputs[0].name"),
    ]
    assert all(p.offset is not None for p in d.problems)


# --- limits (3.1) ------------------------------------------------------------------------------


def t_err(tmp_path, t, data=bytes(64)):
    ps, d = diag(tmp_path, model(graph(initializers=[t])), data)
    assert ps, "expected a problem"
    return ps[0][0], ps[0][1].replace("manifest.graph.initializers[0]", "T"), d.problems[0].offset, d


@pytest.mark.parametrize("dtype", [0, 29, 99, -1, 1 << 40])
def test_unknown_dtype(tmp_path, dtype):
    assert t_err(tmp_path, tensor("w", dtype, [1], 0, 1))[:2] == (Kind.UNSUPPORTED, "T.dtype")


def test_dtype_beyond_int64(tmp_path):
    assert t_err(tmp_path, tensor("w", 1 << 64, [1], 0, 1))[:2] == (Kind.MALFORMED, "T.dtype")


def test_negative_dim(tmp_path):
    assert t_err(tmp_path, tensor("w", 1, [2, -1], 0, 0))[:2] == (IV, "T.dims[1]")
    # a bad dim after the count has passed 2^60 is reported, not the count
    assert t_err(tmp_path, tensor("w", 1, [1 << 62, 1 << 62, -1], 0, 0))[:2] == (IV, "T.dims[2]")
    assert t_err(tmp_path, tensor("w", 1, [1 << 62, 1 << 62, 1.5], 0, 0))[:2] == (Kind.MALFORMED, "T.dims[2]")


def test_count_at_2_pow_60_unsupported(tmp_path):
    assert t_err(tmp_path, tensor("w", 2, [1 << 30, 1 << 30], 0, 1 << 60))[:2] == (Kind.UNSUPPORTED, "T.dims")
    assert t_err(tmp_path, tensor("w", 2, [1 << 62, 1 << 62, 1 << 62], 0, 0))[:2] == (Kind.UNSUPPORTED, "T.dims")


def test_count_just_below_2_pow_60_then_size_limit(tmp_path):
    n = (1 << 60) - 1
    assert t_err(tmp_path, tensor("w", 2, [n], 0, n))[:2] == (Kind.UNSUPPORTED, "T.data.length")


def test_zero_dim_makes_huge_dims_empty(tmp_path):
    doc = read(tmp_path, model(graph(initializers=[tensor("w", 1, [1 << 62, 0, 1 << 62], 0, 0)])))
    assert doc.valid and doc.model.graph.initializers[0].count == 0


@pytest.mark.parametrize("length", [3, 5, 0])
def test_length_must_match(tmp_path, length):
    assert t_err(tmp_path, tensor("w", 1, [1], 0, length))[:2] == (IV, "T.data.length")


@pytest.mark.parametrize("dtype,n,length", [(21, 3, 2), (25, 5, 2), (27, 3, 3), (27, 4, 3), (15, 1, 16), (9, 3, 3)])
def test_subbyte_and_wide_lengths(tmp_path, dtype, n, length):
    doc = read(tmp_path, model(graph(initializers=[tensor("w", dtype, [n], 0, length)])), bytes(64))
    assert doc.valid


def test_tensor_over_2_31_bytes_unsupported(tmp_path):
    assert t_err(tmp_path, tensor("w", 2, [1 << 31], 0, 1 << 31))[:2] == (Kind.UNSUPPORTED, "T.data.length")
    n = (1 << 31) - 1  # the largest supported tensor: only its range is wrong here
    assert t_err(tmp_path, tensor("w", 2, [n], 0, n))[:2] == (Kind.MALFORMED, "T.data")


def test_misaligned_offset(tmp_path):
    kind, where, offset, d = t_err(tmp_path, tensor("w", 1, [1], 4, 4))
    assert (kind, where) == (Kind.MALFORMED, "T.data.offset")
    assert offset == d.data_span[0] + 4


def test_misaligned_zero_length_is_fine(tmp_path):
    assert read(tmp_path, model(graph(initializers=[tensor("w", 1, [0], 3, 0)])), bytes(64)).valid


def test_range_outside_data_region(tmp_path):
    """The range starts at the data region's end (the file's end): the offset is that of the manifest's
    ``data`` object claiming it (it was data_offset + 64, the file's length: no byte of the file)."""
    kind, where, offset, d = t_err(tmp_path, tensor("w", 1, [16], 64, 64), bytes(64))
    assert (kind, where) == (Kind.MALFORMED, "T.data")
    assert d.manifest_span[0] <= offset < d.manifest_span[0] + d.manifest_span[1]


def test_huge_offset_range(tmp_path):
    kind, where, _, _ = t_err(tmp_path, tensor("w", 1, [1], (1 << 63) - 64, 4))
    assert (kind, where) == (Kind.MALFORMED, "T.data")


@pytest.mark.parametrize("field,value", [("offset", -64), ("length", -4), ("offset", 1 << 63), ("length", 1.0)])
def test_bad_offset_or_length(tmp_path, field, value):
    t = tensor("w", 1, [1], 0, 4)
    t["data"][field] = value
    assert t_err(tmp_path, t)[:2] == (Kind.MALFORMED, f"T.data.{field}")


def test_strings(tmp_path):
    ok = {"name": "s", "dtype": 8, "dims": [2], "strings": ["YQ==", ""]}
    assert read(tmp_path, model(graph(initializers=[ok]))).model.graph.initializers[0].strings == (b"a", b"")
    assert t_err(tmp_path, dict(ok, strings=["YQ=="]))[:2] == (IV, "T.strings")
    assert t_err(tmp_path, dict(ok, data={"offset": 0, "length": 0}))[:2] == (Kind.MALFORMED, "T.data")
    assert t_err(tmp_path, dict(ok, strings="YQ=="))[:2] == (Kind.MALFORMED, "T.strings")
    assert t_err(tmp_path, dict(tensor("w", 1, [0], 0, 0), strings=[]))[:2] == (Kind.MALFORMED, "T.strings")


def test_bad_tensor_kept_without_storage_in_diagnose(tmp_path):
    *_, d = t_err(tmp_path, tensor("w", 1, [16], 64, 64))
    t = d.model.graph.initializers[0]
    assert t.storage is None and t.file_offset is None and t.name == "w"


def _nested_graphs(levels: int) -> dict:
    """A model whose main graph (level 1) nests ``levels`` graphs in total."""
    g = graph()
    for _ in range(levels - 1):
        g = graph(nodes=[node("If", [], [], attributes=[{"name": "b", "type": 5, "value": g}])])
    return model(g)


def test_graph_nesting_64_ok_65_unsupported(tmp_path):
    assert read(tmp_path, _nested_graphs(64)).valid
    kind, where = first(tmp_path, _nested_graphs(65))
    assert kind == Kind.UNSUPPORTED
    assert where == "manifest.graph" + ".nodes[0].attributes[0].value" * 64


def _nested_types(levels: int) -> dict:
    t = {"kind": "tensor", "elem": 1}
    for _ in range(levels - 1):
        t = {"kind": "sequence", "inner": t}
    return model(graph(inputs=[{"name": "x", "type": t}]))


def test_type_nesting_counts_with_graphs(tmp_path):
    assert read(tmp_path, _nested_types(63)).valid  # graph (1) + 63 types = 64
    kind, where = first(tmp_path, _nested_types(64))
    assert kind == Kind.UNSUPPORTED
    assert where == "manifest.graph.inputs[0].type" + ".inner" * 63


def test_type_proto_attribute_counts(tmp_path):
    t = {"kind": "tensor", "elem": 1}
    for _ in range(62):
        t = {"kind": "sequence", "inner": t}
    g = graph(nodes=[node("X", [], ["o"], attributes=[{"name": "t", "type": 13, "value": t}])])
    assert read(tmp_path, model(g)).valid
    g["nodes"][0]["attributes"][0]["value"] = {"kind": "optional", "inner": t}
    assert first(tmp_path, model(g))[0] == Kind.UNSUPPORTED


def test_deep_caller_gets_no_recursionerror(tmp_path):
    """Opening 64 nested graphs from a call stack that is already near the recursion limit."""
    import sys

    p = write(tmp_path, pack(_nested_graphs(64)))

    def at(k):
        if k:
            return at(k - 1)
        return open_path(p).valid

    assert at(sys.getrecursionlimit() - 120)


def test_cycle_reported_on_the_cycle_not_downstream(tmp_path):
    g = graph(nodes=[node("Down", ["b"], ["d"]), node("A", ["b"], ["a"]), node("B", ["a"], ["b"])])
    assert first(tmp_path, model(g)) == (IV, "manifest.graph.nodes[1]")


def test_non_object_sparse_initializer_diagnose(tmp_path):
    """Regression: a sparse initializer that is not an object left None in the graph (AttributeError)."""
    ps, d = diag(tmp_path, model(graph(sparse_initializers=[5])))
    assert ps == [(Kind.MALFORMED, "manifest.graph.sparse_initializers[0]")]
    assert d.model.graph.sparse_initializers == ()


def test_function_nodes_out_of_order_are_sorted_with_a_finding(tmp_path):
    f = fn(nodes=[node("Relu", ["t"], ["y"], name="second"), node("Neg", ["x"], ["t"], name="first")])
    doc = read(tmp_path, model(functions=[f]))
    fun = doc.model.functions[0]
    assert doc.valid and fun.order == (1, 0)
    assert [n.name for n in fun.ordered_nodes()] == ["first", "second"]
    assert [(x.code, x.where) for x in doc.findings] == [("out-of-order", "manifest.functions[0].nodes[0]")]


def test_function_nodes_in_order_keep_their_positions(tmp_path):
    f = fn(nodes=[node("Neg", ["x"], ["t"]), node("Relu", ["t"], ["y"])])
    doc = read(tmp_path, model(functions=[f]))
    assert doc.model.functions[0].order == (0, 1) and doc.findings == []


def test_function_cycle(tmp_path):
    f = fn(nodes=[node("Neg", ["x"], ["t"]), node("Add", ["t", "u"], ["v"]), node("Relu", ["v"], ["u"]), node("Neg", ["t"], ["y"])])
    assert first(tmp_path, model(functions=[f])) == (IV, "manifest.functions[0].nodes[1]")
    _, d = diag(tmp_path, model(functions=[f]))
    assert sorted(d.model.functions[0].order) == [0, 1, 2, 3]


def test_function_node_reading_its_own_output(tmp_path):
    f = fn(nodes=[node("Relu", ["x"], ["t"]), node("Add", ["t", "y"], ["y"])])
    assert first(tmp_path, model(functions=[f])) == (IV, "manifest.functions[0].nodes[1]")


def test_function_subgraph_reading_a_later_value_orders_its_node(tmp_path):
    body = graph(nodes=[node("Identity", ["t"], ["o"])], outputs=[{"name": "o"}])
    f = fn(nodes=[node("If", ["x"], ["y"], attributes=[{"name": "then_branch", "type": 5, "value": body}]),
                  node("Neg", ["x"], ["t"])])
    doc = read(tmp_path, model(functions=[f]))
    assert doc.model.functions[0].order == (1, 0)
