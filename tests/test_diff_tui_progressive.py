"""The diff viewer in stages (issue 17): structure first, weights filled in, cancel, most-changed view, histogram.

The tensor comparison is held back by a gate (a wrapper around ``compare_tensors`` that compares one pair
at a time and waits before each one after the first), so each stage can be looked at; nothing waits on time.
"""

from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from onemodel_viewer.analysis.diff import compare as D
from onemodel_viewer.analysis.diff import tensors as T
from onemodel_viewer.analysis.diff.result import DiffCancelled
from onemodel_viewer.format.document import Document
from onemodel_viewer.format.schema import Graph, Model, Node, OperatorSet
from onemodel_viewer.tui.widgets.detail_pane import DetailPane
from onemodel_viewer.tui.diff.app import make_diff_app
from onemodel_viewer.tui.diff.tree import DiffTree
from onemodel_viewer.tui.diff.most_changed import MostChanged, bar

from test_diff_metrics import tensor  # noqa: E402 - sibling test module
from conftest import wait_for_workers  # noqa: E402 - the shared Pilot helpers


def _models() -> tuple[Document, Document]:
    rng = np.random.default_rng(0)
    ws = [rng.standard_normal(64).astype(np.float32) for _ in range(3)]
    factors = (1.01, 1.0, 1.5)  # w0 a little, w1 not at all, w2 a lot
    mk = lambda arrs, op: Model(ir_version=8, opsets=(OperatorSet("", 17),), graph=Graph(  # noqa: E731
        name="g", initializers=tuple(tensor(f"w{i}", x, 1) for i, x in enumerate(arrs)),
        nodes=(Node(op, "n0", inputs=("w0",), outputs=("y",)),)))
    ma = mk(ws, "Relu")
    mb = mk([x * np.float32(f) for x, f in zip(ws, factors)], "Sigmoid")
    return Document("a.onemodel", "onemodel", 1, model=ma), Document("b.onemodel", "onemodel", 1, model=mb)


class Gate:
    """Replaces ``compare_tensors``: one pair at a time, waiting for :meth:`step` before each after the first."""

    def __init__(self, monkeypatch) -> None:
        self.real = T.compare_tensors
        self.steps = threading.Semaphore(0)
        self.started = threading.Event()
        monkeypatch.setattr(D, "compare_tensors", self)

    def step(self, n: int = 1) -> None:
        for _ in range(n):
            self.steps.release()

    def __call__(self, pairs, *, threads, cancel, progress, on_done):
        out = []
        total = sum(a.length for a, _ in pairs)
        done = 0
        for i, (a, b) in enumerate(pairs):
            if i:
                self.started.set()
                while not self.steps.acquire(timeout=0.02):
                    if cancel is not None and cancel.is_set():
                        raise DiffCancelled()
            r = self.real([(a, b)], threads=1)[0]
            out.append(r)
            on_done(i, r)
            done += a.length
            progress(done, total)
        return out


def _label(tree: DiffTree, where: str) -> str:
    dn = next(n for n in tree._root_entry.walk() if n.where == where)
    assert tree.reveal(dn)
    return tree.cursor_node.label.plain


async def _until(pilot, cond, what: str) -> None:
    for _ in range(500):  # bounded: 500 UI turns
        if cond():
            return
        await pilot.pause()
    raise AssertionError(f"never: {what}")


async def _structure_first_then_markers_fill_in(monkeypatch):
    gate = Gate(monkeypatch)
    app = make_diff_app(*_models())
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.comparing and gate.started.is_set(), "structure shown")
        await pilot.pause()
        tree = app.query_one(DiffTree)
        # the node's op change is there at once; the first tensor is done, the others are pending
        assert _label(tree, "graph.nodes[\"n0\"]").startswith("~ ")
        assert _label(tree, 'graph.initializers["w0"]').startswith("~ ")
        assert _label(tree, 'graph.initializers["w1"]').startswith("… ")
        assert _label(tree, 'graph.initializers["w2"]').startswith("… ")
        assert "comparing weights" in str(app.query_one("#status").render())
        gate.step()  # w1: equal
        await _until(pilot, lambda: not app._staged._s.jobs[1].node.pending, "w1 compared")
        await pilot.pause()
        assert _label(tree, 'graph.initializers["w1"]').startswith("= ")
        assert _label(tree, 'graph.initializers["w2"]').startswith("… ")
        gate.step()
        await wait_for_workers(app)
        await pilot.pause()
        assert not app.comparing
        assert _label(tree, 'graph.initializers["w2"]').startswith("~ ")
        status = str(app.query_one("#status").render())
        assert "3 differences" in status and "comparing" not in status
        assert [d.where for d in app.result.differences] == [
            'graph.initializers["w0"].data', 'graph.initializers["w2"].data', 'graph.nodes["n0"].op']


async def _cancel_leaves_the_rest_pending(monkeypatch):
    gate = Gate(monkeypatch)
    app = make_diff_app(*_models())
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.comparing and gate.started.is_set(), "structure shown")
        await pilot.press("c")
        await wait_for_workers(app)
        await _until(pilot, lambda: app._phase == "cancelled", "cancelled")
        tree = app.query_one(DiffTree)
        assert "cancelled, 2 tensors not compared" in str(app.query_one("#status").render())
        assert _label(tree, 'graph.initializers["w0"]').startswith("~ ")
        assert _label(tree, 'graph.initializers["w2"]').startswith("… ")
        await pilot.press("m")  # what was compared can still be listed
        await pilot.pause()
        assert isinstance(app.screen, MostChanged) and len(app.screen._rows) == 1


async def _most_changed_view_and_histogram():
    app = make_diff_app(*_models())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for_workers(app)
        await pilot.pause()
        await pilot.press("m")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, MostChanged)
        names = [dn.a.name for dn, _ in screen._rows]
        assert names == ["w2", "w0"]  # by rel_l2: 0.5 before 0.01
        assert screen._rows[0][1] == pytest.approx(0.5, rel=1e-6)
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, MostChanged)
        tree = app.query_one(DiffTree)
        assert tree.cursor_node.data.where == 'graph.initializers["w2"]'
        await wait_for_workers(app)  # the histogram worker
        await pilot.pause()
        lines = app.query_one(DetailPane).plain_lines()
        assert any("rel_l2 0.5" in line and "cosine 1" in line for line in lines), lines
        assert any(line.strip().startswith("b − a") and "64 pairs" in line for line in lines), lines


def test_structure_first_then_markers_fill_in(monkeypatch):
    asyncio.run(_structure_first_then_markers_fill_in(monkeypatch))


def test_cancel_leaves_the_rest_pending(monkeypatch):
    asyncio.run(_cancel_leaves_the_rest_pending(monkeypatch))


def test_most_changed_view_and_histogram():
    asyncio.run(_most_changed_view_and_histogram())


def test_bar():
    assert bar(1.0, 4) == "████" and bar(0.0, 4) == "    " and bar(0.5, 4) == "██  "
    assert bar(float("nan"), 2) == "  " and len(bar(0.33, 10)) == 10
