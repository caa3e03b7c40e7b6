"""The reader's garbage-collector hand-off: gc state restored, records promoted without a scan."""

from __future__ import annotations

import gc
import subprocess
import sys

from onemodel_viewer import format as omf

from test_reader_util import graph, model, node, pack, tensor, write


def _file(tmp_path):
    nodes = [node("Relu", [f"v{i}"], [f"v{i + 1}"], name=f"n{i}") for i in range(300)]
    m = model(graph(nodes=nodes, inputs=[{"name": "v0"}], outputs=[{"name": "v300"}], initializers=[tensor("w", 1, [2], 0, 8)]))
    return write(tmp_path, pack(m, b"\0" * 8))


def test_open_leaves_gc_enabled_and_generation_0_empty(tmp_path):
    # in a fresh interpreter: threads left running by other tests of this worker allocate too
    path = _file(tmp_path)
    code = (
        "import gc, sys\n"
        "from onemodel_viewer import format as omf\n"
        "assert gc.isenabled()\n"
        "doc = omf.open(sys.argv[1])\n"
        "print(gc.isenabled(), gc.get_count()[0], gc.get_freeze_count(), len(doc.model.graph.nodes))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout.split()
    enabled, young, frozen, nodes = out
    assert enabled == "True"
    # the records went straight to the oldest generation: no pending young-generation scan
    assert int(young) < 100
    assert int(frozen) == 0
    assert int(nodes) == 300


def test_open_with_gc_disabled_keeps_it_disabled(tmp_path):
    path = _file(tmp_path)
    gc.disable()
    try:
        omf.open(path, mode="diagnose").close()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_open_does_not_unfreeze_the_callers_frozen_objects(tmp_path):
    path = _file(tmp_path)
    keep = [[] for _ in range(10)]
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        omf.open(path).close()
        # unfreeze() would empty the permanent generation; a few frozen objects that earlier tests
        # left in caches may be freed by the open itself (seen under xdist: 2 of ~10^5), which is fine
        assert gc.get_freeze_count() > frozen - 100
    finally:
        gc.unfreeze()
    del keep


def test_building_a_lazy_node_list_pauses_and_restores_the_gc(tmp_path):
    path = _file(tmp_path)
    code = (
        "import gc, sys\n"
        "from onemodel_viewer import format as omf\n"
        "doc = omf.open(sys.argv[1])\n"
        "nodes = doc.model.graph.nodes\n"
        "assert type(nodes).__name__ == 'NodeList' and not nodes.built\n"
        "gc.collect()\n"
        "built = tuple(nodes)\n"
        "print(gc.isenabled(), gc.get_count()[0], gc.get_freeze_count(), len(built))\n"
        "gc.disable()\n"
        "doc2 = omf.open(sys.argv[1])\n"
        "tuple(doc2.model.graph.nodes)\n"
        "print(gc.isenabled())\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True).stdout.split()
    enabled, young, frozen, nodes, still_disabled = out
    assert enabled == "True" and int(young) < 100 and int(frozen) == 0 and int(nodes) == 300
    assert still_disabled == "False"  # a caller's disabled GC stays disabled
