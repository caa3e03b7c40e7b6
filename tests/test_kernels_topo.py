"""The stable dependency sort of large graphs (format/depsort.py: arrays and the compiled ``topo``) against
the reading rules' Python heap (format/rules.py), which stays the reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onemodel_viewer import kernels as K
from onemodel_viewer.format import depsort
from onemodel_viewer.format.rules import Resolver

compiled = pytest.mark.skipif(K.KERNELS is None, reason="compiled kernels disabled (ONEMODEL_VIEW_NO_KERNELS)")


class _Graph:
    def __init__(self, n: int) -> None:
        self.nodes = [type("N", (), {"name": f"n{i}", "where": f"graph.nodes[{i}]"})() for i in range(n)]


class _Report:
    def __init__(self) -> None:
        self.problems = []


def _resolver() -> Resolver:
    r = Resolver.__new__(Resolver)
    r.report = _Report()
    r.bad = lambda kind, where, message: r.report.problems.append((kind, where, message))
    return r


def _csr(deps: list[list[int]]) -> depsort.Deps:
    ptr = np.zeros(len(deps) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in deps], out=ptr[1:])
    prods = np.array([p for d in deps for p in d], dtype=np.int64)
    return depsort.Deps(ptr, prods)


@st.composite
def graphs(draw):
    """Producer lists of n nodes: a DAG in a shuffled stored order, maybe with a back edge (a cycle)."""
    n = draw(st.integers(0, 60))
    perm = draw(st.permutations(range(n)))
    deps = [[] for _ in range(n)]
    for rank in range(1, n):  # node perm[rank] reads from nodes of lower rank (duplicates allowed)
        for src in draw(st.lists(st.integers(0, rank - 1), max_size=3)):
            deps[perm[rank]].append(perm[src])
    if n >= 2 and draw(st.booleans()):
        a, b = draw(st.integers(0, n - 2)), None
        b = draw(st.integers(a + 1, n - 1))
        deps[perm[a]].append(perm[b])  # an edge against the ranks: a cycle when b reaches a
    return deps


@compiled
@settings(max_examples=150, deadline=None)
@given(graphs())
def test_compiled_order_is_the_heap_order(deps):
    g = _Graph(len(deps))
    ref_r, got_r = _resolver(), _resolver()
    ref = ref_r.topo(g, deps)
    got = got_r.topo(g, _csr(deps))
    assert got == ref
    assert got_r.report.problems == ref_r.report.problems  # the same cycle, reported the same way


@compiled
def test_reverse_stored_chain_of_a_million():
    """2,000,000 nodes stored last-first sorted in C: the order is the reverse."""
    n = 1_000_000
    ptr = np.concatenate([np.arange(n, dtype=np.int64), [n - 1]])
    d = depsort.Deps(ptr, np.arange(1, n, dtype=np.int64))
    order, emitted = d.order()
    assert emitted == n and order[:3] == [n - 1, n - 2, n - 3] and order[-1] == 0


@compiled
def test_inconsistent_arrays_are_refused():
    out = np.empty(2, dtype=np.int64)
    with pytest.raises(ValueError):
        K.KERNELS.topo(np.array([0, 1, 1], dtype=np.int64), np.array([5], dtype=np.int64), out)
    with pytest.raises(ValueError):
        K.KERNELS.topo(np.array([0, 2, 1], dtype=np.int64), np.array([1], dtype=np.int64), out)


@compiled
def test_inputs_pass_flags_undefined_inputs_and_finds_the_order():
    ins = [["x", ""], ["a", "w"], ["b", "nowhere"], ["a"]]
    defs = {"x": -1, "w": -1, "a": 0, "b": 1}
    flagged: set = set()
    node_of, found, in_order = depsort.inputs_pass(ins, defs, flagged)
    assert flagged == {2} and in_order and found.tolist() == [-1, -2, 0, -1, 1, -2, 0]
    defs["a"] = 3  # node 1 reads a value node 3 defines
    assert depsort.inputs_pass(ins, defs, set())[2] is False
    d = depsort.deps(node_of, depsort.inputs_pass(ins, defs, set())[1], 4, {0: [2]})
    assert [d[i] for i in range(4)] == [[2], [3], [1], [3]]


def _summary(doc) -> tuple:
    return (doc.model.graph.order, [(p.kind, p.where, p.message) for p in doc.problems],
            [(f.code, f.where) for f in doc.findings])


@compiled
@pytest.mark.parametrize("shuffle", ["reverse", "swap"])
def test_a_large_graph_out_of_order_reads_the_same_with_and_without_the_arrays(tmp_path, monkeypatch, shuffle):
    """format.open of a 20,000+ node graph stored out of dependency order: the same order, problems and
    findings through depsort (arrays, compiled sort) as through the rules' Python loops."""
    from benchmarks import make_graphs
    from onemodel_viewer import format as fmt

    path = str(tmp_path / "g.onemodel")
    make_graphs.write(path, depsort.BIG + 10, reverse=shuffle == "reverse")
    if shuffle == "swap":  # an input defined nowhere (flagged) and one defined later, downstream: a cycle
        data = open(path, "rb").read()
        data = data.replace(b'"inputs":["v5.0","v4.9"]', b'"inputs":["v5.0","q"]   ', 1)  # same length
        data = data.replace(b'"inputs":["v1.0","v0.9"]', b'"inputs":["v1.0","v7.9"]', 1)
        open(path, "wb").write(data)
    got = _summary(fmt.open(path, mode="diagnose"))
    monkeypatch.setattr(depsort, "KERNELS", None)
    ref = _summary(fmt.open(path, mode="diagnose"))
    assert got == ref
    if shuffle == "reverse":
        assert got[0] == tuple(range(len(got[0]) - 1, -1, -1))  # the sort moved every node
    else:
        assert [p[2].split(" (")[0] for p in got[1]] == [
            "input 'q' is not defined in this graph or an enclosing one", "the nodes form a cycle of 55 nodes"]
