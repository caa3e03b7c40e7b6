"""Lazily built node records (``schema.NodeList``): same model, same problems, fewer records at open.

The reader checks every node at open but builds the records of nodes whose attributes hold only
numbers when the list is first read. The differential tests read every bundled file (valid and
hostile) and a set of single-defect mutations twice — every graph eager (``BULK_NODES`` huge) and
every graph lazy (``BULK_NODES = 1``) — and require the same problems, findings and records.
"""

from __future__ import annotations

import dataclasses
import glob
import os
import threading

import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.analysis.layout import onemodel as layout
from onemodel_viewer.format import reader
from onemodel_viewer.format.schema import Graph, NodeList, Tensor, all_tensors, nodes_with_contents, walk_graphs

from test_reader_util import graph, model, node, pack, tensor, write

ROOT = os.path.join(os.path.dirname(__file__), "..", "testdata")
FILES = sorted(glob.glob(os.path.join(ROOT, "valid", "*.onemodel")) + glob.glob(os.path.join(ROOT, "hostile", "*.onemodel")))


def dump(x, seen=None):
    """Every field of a record tree as plain tuples (tensors without their storage)."""
    if isinstance(x, NodeList):
        x = tuple(x)
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        out = [type(x).__name__]
        for f in dataclasses.fields(x):
            if isinstance(x, Tensor) and f.name == "storage":
                continue
            out.append((f.name, dump(getattr(x, f.name))))
        return tuple(out)
    if isinstance(x, (tuple, list)):
        return tuple(dump(v) for v in x)
    return x


def read(path, mode, bulk, monkeypatch):
    monkeypatch.setattr(reader, "BULK_NODES", bulk)
    try:
        doc = omf.open(path, mode=mode)
    except omf.FormatError as e:
        return ("error", e.problem)
    try:
        return (
            list(doc.problems), list(doc.findings),
            dump(doc.model) if doc.model is not None else None,
        )
    finally:
        doc.close()


@pytest.mark.parametrize("path", FILES, ids=os.path.basename)
def test_lazy_and_eager_reads_agree_on_every_bundled_file(path, monkeypatch):
    for mode in ("strict", "diagnose"):
        eager = read(path, mode, 10**9, monkeypatch)
        lazy = read(path, mode, 1, monkeypatch)
        assert lazy == eager, mode


# ---------------------------------------------------------------------------------------------- mutations
# A 40-node chain with attributes of every kind the lazy path accepts, then one defect at node 33.


def _chain_model() -> dict:
    nodes = []
    for i in range(40):
        attrs = []
        if i % 4 == 1:
            attrs = [{"name": "axis", "type": 2, "value": -1}]
        elif i % 4 == 2:
            attrs = [{"name": "perm", "type": 7, "value": [1, 0]}, {"name": "alpha", "type": 1, "value": 0x3F800000}]
        elif i % 4 == 3:
            attrs = [{"name": "scales", "type": 6, "value": [0, 0x7FC00001, 0xFFFFFFFF]}]
        nodes.append(node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}", attributes=attrs))
    nodes[20]["doc"] = "a doc"
    nodes[21]["unknown_field"] = {"ignored": True}
    nodes[22]["attributes"] = [{"name": "t", "type": 4, "value": tensor("c", 1, [2], 0, 8)}]
    g = graph(nodes=nodes, inputs=[{"name": "v0"}], outputs=[{"name": "v40"}], initializers=[tensor("w", 1, [2], 0, 8)])
    return model(g)


def _set(path_value):
    def edit(m):
        target = m["graph"]["nodes"][33]
        *keys, last = path_value[0]
        for k in keys:
            target = target[k]
        target[last] = path_value[1]
    return edit


def _delete(key):
    def edit(m):
        del m["graph"]["nodes"][33][key]
    return edit


MUTATIONS = {
    "none": lambda m: None,
    "op-int": _set((["op"], 5)),
    "op-missing": _delete("op"),
    "name-null": _set((["name"], None)),
    "domain-missing": _delete("domain"),
    "domain-unknown": _set((["domain"], "com.example")),
    "overload-bool": _set((["overload"], True)),
    "doc-int": _set((["doc"], 7)),
    "inputs-str": _set((["inputs"], "v33")),
    "input-int": _set((["inputs"], [33])),
    "input-undefined": _set((["inputs"], ["nowhere"])),
    "input-later": _set((["inputs"], ["v39"])),
    "input-own-output": _set((["inputs"], ["v34"])),
    "output-duplicate": _set((["outputs"], ["v10"])),
    "output-empty": _set((["outputs"], [""])),
    "outputs-null": _set((["outputs"], None)),
    "attributes-object": _set((["attributes"], {})),
    "attribute-not-object": _set((["attributes"], [3])),
    "attribute-extra-key": _set((["attributes"], [{"name": "a", "type": 2, "value": 1, "doc": "d"}])),
    "attribute-defaults-written": _set((["attributes"], [{"name": "a", "type": 2, "value": 1, "doc": "", "ref": ""}])),
    "attribute-doc-int": _set((["attributes"], [{"name": "a", "type": 2, "value": 1, "doc": 5}])),
    "attribute-ref-int": _set((["attributes"], [{"name": "a", "type": 2, "value": 1, "ref": 0}])),
    "attribute-ref-and-value": _set((["attributes"], [{"name": "a", "type": 2, "value": 1, "ref": "r"}])),
    "attribute-no-value": _set((["attributes"], [{"name": "a", "type": 2, "doc": ""}])),
    "attribute-type-bool": _set((["attributes"], [{"name": "a", "type": True, "value": 1}])),
    "attribute-type-unknown": _set((["attributes"], [{"name": "a", "type": 99, "value": 1}])),
    "attribute-name-int": _set((["attributes"], [{"name": 1, "type": 2, "value": 1}])),
    "int-bool": _set((["attributes"], [{"name": "a", "type": 2, "value": False}])),
    "int-float": _set((["attributes"], [{"name": "a", "type": 2, "value": 1.0}])),
    "int-too-big": _set((["attributes"], [{"name": "a", "type": 2, "value": 2**63}])),
    "ints-bad-element": _set((["attributes"], [{"name": "a", "type": 7, "value": [1, "x"]}])),
    "ints-not-list": _set((["attributes"], [{"name": "a", "type": 7, "value": 3}])),
    "float-negative": _set((["attributes"], [{"name": "a", "type": 1, "value": -1}])),
    "float-too-big": _set((["attributes"], [{"name": "a", "type": 1, "value": 2**32}])),
    "floats-bad-element": _set((["attributes"], [{"name": "a", "type": 6, "value": [0, 2**32]}])),
    "string-attr": _set((["attributes"], [{"name": "a", "type": 3, "value": "aGk="}])),
    "string-attr-bad-base64": _set((["attributes"], [{"name": "a", "type": 3, "value": "a"}])),
    "ref-outside-function": _set((["attributes"], [{"name": "a", "type": 2, "ref": "r"}])),
    "node-not-object": lambda m: m["graph"]["nodes"].__setitem__(33, ["not", "a", "node"]),
}


@pytest.mark.parametrize("name", sorted(MUTATIONS))
def test_lazy_and_eager_reads_agree_on_single_defects(name, tmp_path, monkeypatch):
    m = _chain_model()
    MUTATIONS[name](m)
    path = write(tmp_path, pack(m, b"\0" * 8))
    for mode in ("strict", "diagnose"):
        eager = read(path, mode, 10**9, monkeypatch)
        lazy = read(path, mode, 1, monkeypatch)
        assert lazy == eager, mode
    if name != "none":
        diag = read(path, "diagnose", reader.BULK_NODES, monkeypatch)
        strict = read(path, "strict", reader.BULK_NODES, monkeypatch)
        if strict[0] == "error":  # strict's error is diagnose's first problem, lazy or not
            assert diag[0] and strict[1] == diag[0][0]


# ---------------------------------------------------------------------------------------------- NodeList


@pytest.fixture
def big(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    path = write(tmp_path, pack(_chain_model(), b"\0" * 8))
    doc = omf.open(path)
    yield doc
    doc.close()


def test_plain_nodes_wait_and_nodes_with_tensors_are_built_records(big):
    nodes = big.model.graph.nodes
    assert isinstance(nodes, NodeList) and not nodes.built
    assert len(nodes) == 40 and bool(nodes)
    built = nodes.built_records()
    assert list(built) == [22]  # the TENSOR attribute: checked through its record
    assert built[22].attributes[0].value.name == "c"
    assert [t.name for t in all_tensors(big.model)] == ["w", "c"]
    assert [g for g in walk_graphs(big.model.graph)] == [big.model.graph]
    assert [n.where for n in nodes_with_contents(nodes)] == ["manifest.graph.nodes[22]"]
    assert nodes.where_of(5) == "manifest.graph.nodes[5]"
    assert nodes[3].name == "n3" and nodes[-1].name == "n39"  # one record each
    with pytest.raises(IndexError):
        nodes[40]
    assert not nodes.built  # none of that built the list
    assert sorted(nodes.built_records()) == [3, 22, 39]


def test_repr_of_a_node_list_builds_no_record(big):
    """``repr`` of a NodeList (and of the graph holding it) built every node record, on the UI
    thread when Textual described a worker taking the document: now its size and place only."""
    nodes = big.model.graph.nodes
    assert repr(nodes) == "NodeList(n=40, where='manifest.graph.nodes', built=False)"
    assert "NodeList(n=40" in repr(big.model.graph)
    assert not nodes.built and sorted(nodes.built_records()) == [22]
    tuple(nodes)
    assert repr(nodes) == "NodeList(n=40, where='manifest.graph.nodes', built=True)"


def test_nodes_written_with_their_defaults_stay_lazy(tmp_path, monkeypatch):
    """Another writer's file (every optional field written at its default: ``doc: ""`` on nodes and
    attributes, ``ref: ""``) builds no node record at open. It used to build every node with an
    attribute at open (an attribute had to be exactly {name, type, value})."""
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    m = _chain_model()
    del m["graph"]["nodes"][22]  # the one TENSOR attribute (always built at open)
    for i, n in enumerate(m["graph"]["nodes"]):
        n["doc"] = ""
        n["inputs"] = [f"v{i}"]
        n["outputs"] = [f"v{i + 1}"]
        for a in n["attributes"]:
            a.update(doc="", ref="")
    m["graph"]["outputs"] = [{"name": "v39"}]
    doc = omf.open(write(tmp_path, pack(m, b"\0" * 8)))
    try:
        nodes = doc.model.graph.nodes
        assert isinstance(nodes, NodeList) and nodes.built_records() == {}
        assert nodes[2].attributes[0].name == "perm" and nodes[2].attributes[0].value == (1, 0)
        assert nodes[3].attributes[0].value == (0, 0x7FC00001, 0xFFFFFFFF)
    finally:
        doc.close()


def test_checks_of_check_do_not_build_the_records(tmp_path, monkeypatch):
    """``--check`` of a canonical file (what the writer emits) builds no lazy record."""
    from onemodel_viewer.format.onemodel.writer import to_bytes

    monkeypatch.setattr(reader, "BULK_NODES", 32)
    first = omf.open(write(tmp_path, pack(_chain_model(), b"\0" * 8)))
    try:
        canonical = write(tmp_path, to_bytes(first.model), "canonical.onemodel")
    finally:
        first.close()
    doc, parsed = reader.open_with_manifest(canonical, "diagnose")
    try:
        assert isinstance(doc.model.graph.nodes, NodeList)
        findings = layout.all_findings(doc, parsed=parsed)
        assert "noncanonical-manifest" not in [f.code for f in findings]
        assert not doc.model.graph.nodes.built
    finally:
        doc.close()


def test_node_list_reads_like_a_tuple(big):
    nodes = big.model.graph.nodes
    one = nodes.node_at(7)
    assert not nodes.built
    assert nodes.node_at(7) is one and nodes.node_at(-33) is one
    with pytest.raises(IndexError):
        nodes.node_at(40)
    as_tuple = tuple(nodes)
    assert nodes.built and nodes[7] is one  # a record built early is the one the list holds
    assert nodes == as_tuple and as_tuple == nodes and nodes == nodes
    assert nodes != as_tuple[:-1] and nodes != list(as_tuple)
    assert hash(nodes) == hash(as_tuple)
    assert nodes[2:5] == as_tuple[2:5] and isinstance(nodes[2:5], tuple)
    assert nodes[-1].name == "n39" and nodes[0].name == "n0"
    assert list(reversed(nodes)) == list(reversed(as_tuple))
    assert one in nodes and nodes.index(one) == 7 and nodes.count(one) == 1
    assert nodes + () == as_tuple and () + nodes == as_tuple
    assert nodes[20].doc == "a doc" and nodes[2].attributes[1].float_value == 1.0
    assert nodes[3].attributes[0].value == (0, 0x7FC00001, 0xFFFFFFFF)
    assert [n.where for n in nodes] == [f"manifest.graph.nodes[{i}]" for i in range(40)]
    assert nodes.built_records() == dict(enumerate(as_tuple))
    assert nodes.columns is None  # released once built
    assert big.model.graph.order == tuple(range(40))


def test_node_list_is_built_once_when_threads_race(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    m = _chain_model()
    m["graph"]["nodes"] += [node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}") for i in range(40, 4000)]
    m["graph"]["outputs"] = [{"name": "v4000"}]
    path = write(tmp_path, pack(m, b"\0" * 8))
    for _ in range(3):
        doc = omf.open(path)
        try:
            nodes = doc.model.graph.nodes
            results: list = [None] * 6
            start = threading.Barrier(6)

            def grab(k: int) -> None:
                start.wait()
                results[k] = [id(n) for n in (nodes if k % 2 else [nodes.node_at(i) for i in range(len(nodes))])]

            threads = [threading.Thread(target=grab, args=(k,)) for k in range(6)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert all(r == results[0] for r in results)
            assert len(set(results[0])) == 4000
        finally:
            doc.close()


def test_out_of_order_and_cycle_locations_on_a_lazy_list(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    m = _chain_model()
    ns = m["graph"]["nodes"]
    ns[10], ns[11] = ns[11], ns[10]  # node 10 now reads v11, produced by node 11
    doc = omf.open(write(tmp_path, pack(m, b"\0" * 8)))
    try:
        assert [(f.code, f.where) for f in doc.findings] == [("out-of-order", "manifest.graph.nodes[10]")]
        assert not doc.model.graph.nodes.built
        order = doc.model.graph.order
        assert order[10:12] == (11, 10)
    finally:
        doc.close()
    m = _chain_model()
    m["graph"]["nodes"][5]["inputs"] = ["v30"]  # 5 -> ... -> 30 -> 5
    path = write(tmp_path, pack(m, b"\0" * 8), "cycle.onemodel")
    with pytest.raises(omf.FormatError) as e:
        omf.open(path)
    assert (e.value.kind, e.value.where) == (omf.Kind.INVALID_MODEL, "manifest.graph.nodes[5]")


def test_subgraph_nodes_reading_outer_values_stay_lazy_except_the_readers(tmp_path, monkeypatch):
    monkeypatch.setattr(reader, "BULK_NODES", 32)
    body = graph(
        nodes=[node("Identity", ["outer" if i == 3 else f"b{i}"], [f"b{i + 1}"], name=f"b{i}") for i in range(40)],
        inputs=[{"name": "b0"}], outputs=[{"name": "b40"}],
    )
    main = [node("Relu", ["x"], ["outer"], name="producer"),
            node("Loop", ["x"], ["y"], name="loop", attributes=[{"name": "body", "type": 5, "value": body}])]
    m = model(graph(nodes=main, inputs=[{"name": "x"}], outputs=[{"name": "y"}]))
    doc = omf.open(write(tmp_path, pack(m)))
    try:
        sub = doc.model.graph.nodes[1].attributes[0].value
        assert isinstance(sub, Graph) and isinstance(sub.nodes, NodeList)
        assert not sub.nodes.built and list(sub.nodes.built_records()) == [3]
        assert doc.problems == [] and sub.order == tuple(range(40))
    finally:
        doc.close()


def test_findings_do_not_use_up_the_located_offsets_of_problems(tmp_path, monkeypatch):
    """Found in review: thousands of duplicate-key findings took every look-up, so diagnose's problems[0]
    had offset None where strict's error had the offset."""
    import json as _json

    monkeypatch.setattr(reader, "LOCATE_CAP", 3)
    text = _json.dumps(model(graph(nodes=[node("Relu", ["nowhere"], ["y"])])), separators=(",", ":"))
    text = text[:-1] + ',"metadata":[' + ",".join('{"key":"k","key":"k","value":"v"}' for _ in range(5)) + "]}"
    path = write(tmp_path, pack(text))
    with pytest.raises(omf.FormatError) as e:
        omf.open(path)
    doc = omf.open(path, mode="diagnose")
    try:
        assert doc.problems[0] == e.value.problem and e.value.offset is not None
        dups = [f for f in doc.findings if f.code == "duplicate-key"]
        assert len(dups) == 5 and [f.offset is not None for f in dups] == [True] * 3 + [False] * 2
    finally:
        doc.close()


def test_diff_tree_counts_the_members_of_a_lazy_node_list(tmp_path, monkeypatch):
    """Found in review: the diff viewer's nodes group lost its '(N)' for a NodeList."""
    from onemodel_viewer.analysis.diff.compare import diff
    from onemodel_viewer.tui.diff.tree import describe

    monkeypatch.setattr(reader, "BULK_NODES", 32)
    a = omf.open(write(tmp_path, pack(_chain_model(), b"\0" * 8), "a.onemodel"))
    m = _chain_model()
    m["graph"]["nodes"][3]["name"] = "renamed"
    b = omf.open(write(tmp_path, pack(m, b"\0" * 8), "b.onemodel"))
    try:
        assert isinstance(a.model.graph.nodes, NodeList)
        todo, seen = [diff(a, b).root], []
        while todo:
            dn = todo.pop()
            if dn.label == "nodes":
                seen.append(describe(dn))
            todo.extend(dn.children)
        assert seen == ["(40)"]
    finally:
        a.close()
        b.close()


def test_a_lazy_node_list_pickles_and_copies_as_its_tuple(big):
    import copy
    import pickle

    nodes = big.model.graph.nodes
    assert isinstance(nodes, NodeList) and not nodes.built
    for other in (pickle.loads(pickle.dumps(nodes)), copy.copy(nodes), copy.deepcopy(nodes)):
        assert type(other) is tuple and len(other) == 40
        assert [n.where for n in other] == [n.where for n in nodes]
    g = pickle.loads(pickle.dumps(big.model.graph))
    assert type(g.nodes) is tuple and g.nodes[33].name == "n33" and g.order == tuple(range(40))


def test_an_unbuilt_node_list_does_not_keep_the_manifest_bytes(tmp_path, monkeypatch):
    import gc as _gc

    monkeypatch.setattr(reader, "BULK_NODES", 32)
    doc = omf.open(write(tmp_path, pack(_chain_model(), b"\0" * 8)))
    try:
        nodes = doc.model.graph.nodes
        assert not nodes.built
        reps = [x for x in _gc.get_objects() if type(x) is reader.Reporter]
        assert reps and all(r.manifest is None and r._locator is None for r in reps)
        assert nodes[5].name == "n5"  # still builds
    finally:
        doc.close()


def test_plain_nodes_collects_the_same_columns_as_node_columns():
    """``builder.plain_nodes`` takes ``schema.node_columns``' steps inline (a node with one output adds it
    with ``set.add``): the same sets and counts for nodes with no, one and two outputs, names defined
    twice, read before, by and after their definition, and ``""`` operands."""
    from onemodel_viewer.format.onemodel.builder import plain_nodes
    from onemodel_viewer.format.schema import node_columns

    specs = [
        (["w", ""], ["a"]), (["a", "late"], ["b", "c"]), ([], []), (["b"], ["a"]),  # "a" twice
        (["self"], ["self"]), (["c", "w"], ["late"]), (["x", "late"], ["d", "d"]), (["d"], []),
    ]
    raw = [{"name": f"n{i}", "op": "Op", "domain": "" if i % 3 else "x", "overload": "", "inputs": ins,
            "outputs": outs, "attributes": []} for i, (ins, outs) in enumerate(specs)]
    eager, got = plain_nodes(raw)
    want = node_columns([o["inputs"] for o in raw], [o["outputs"] for o in raw], [o["domain"] for o in raw])
    assert eager == []
    assert (got.domains, got.defined, got.output_count, got.read_early) == (
        want.domains, want.defined, want.output_count, want.read_early)
    assert got.read_early == {"w", "", "late", "self", "x"} and got.output_count == 8
