"""Graph facts kept in ShardMaps: the same names, producers, consumers and types as plain dicts."""

from __future__ import annotations

from pathlib import Path

import pytest

from onemodel_viewer import format as omf
from onemodel_viewer.analysis import shardmap
from onemodel_viewer.analysis.facts import Facts
from onemodel_viewer.analysis.shardmap import ShardMap

VALID = Path(__file__).resolve().parent.parent / "testdata" / "valid"


def test_shardmap_reads_like_the_dict_it_was_filled_as(monkeypatch):
    monkeypatch.setattr(shardmap, "SHARD_SIZE", 2)
    m: ShardMap[int] = ShardMap(50)
    assert len(m.shards) == 32
    ref = {f"v{i}": i for i in range(50)}
    for k, v in ref.items():
        m.shard(k)[k] = v
    assert sum(1 for s in m.shards if s) > 1  # spread over several dicts
    assert m == ref and dict(m) == ref and len(m) == 50 and sorted(m) == sorted(ref)
    assert m["v7"] == 7 and m.get("v7") == 7 and "v7" in m
    assert m.get("nope") is None and m.get("nope", -1) == -1 and "nope" not in m
    with pytest.raises(KeyError):
        m["nope"]


def test_shardmap_small_is_one_dict():
    assert len(ShardMap(0).shards) == 1 and len(ShardMap(shardmap.SHARD_SIZE).shards) == 1
    assert len(ShardMap(shardmap.SHARD_SIZE + 1).shards) == 2


def _plain_facts(g):
    """The maps as one dict each (how they were built before ShardMap)."""
    types, where, init, producer, consumers = {}, {}, {}, {}, {}
    for t in g.initializers:
        types.setdefault(t.name, t.type_str())
        where.setdefault(t.name, t.where)
        init.setdefault(t.name, t)
    for s in g.sparse_initializers:
        types.setdefault(s.name, "sparse " + s.values.type_str())
        where.setdefault(s.name, s.where)
    for v in (*g.value_info, *g.outputs, *g.inputs):
        if v.type is not None:
            types[v.name] = v.type
        where[v.name] = v.where
    for i, n in enumerate(g.nodes):
        for o in n.outputs:
            if o:
                producer.setdefault(o, i)
        for x in n.inputs:
            if x:
                consumers.setdefault(x, []).append(i)
    return {"types": types, "value_where": where, "initializer": init, "producer": producer, "consumers": consumers}


def _graphs(g):
    yield g
    for n in g.nodes:
        for a in n.attributes:
            for sub in a.graphs():
                yield from _graphs(sub)


@pytest.mark.parametrize("name", sorted(p.name for p in VALID.glob("*.onemodel")))
def test_facts_split_in_many_dicts_equal_plain_dicts(name, monkeypatch):
    """Every bundled file, every graph, with one dict per entry or so: the same facts as plain dicts."""
    monkeypatch.setattr(shardmap, "SHARD_SIZE", 1)
    doc = omf.open(str(VALID / name), mode="diagnose")
    assert doc.model is not None
    facts = Facts()
    for g in _graphs(doc.model.graph):
        f = facts.of(g)
        for field, ref in _plain_facts(g).items():
            got = getattr(f, field)
            assert sorted(got) == sorted(ref) and len(got) == len(ref), field
            for k, v in ref.items():  # looked up by key: each entry in the dict its hash picks
                assert k in got and got.get(k) is got[k], (field, k)
                assert (got[k] is v) if field == "initializer" else (got[k] == v), (field, k)
