"""Snapshots of the insight views at 80x24 and 120x40 (pytest-textual-snapshot).

Regenerate after an intended change: ``python -m pytest tests/test_tui_insight_snapshots.py --snapshot-update``
and look at the SVGs in ``tests/__snapshots__/test_tui_insight_snapshots/``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from onemodel_viewer.tui.app import make_app

sys.path.insert(0, str(Path(__file__).resolve().parent))
import insight_models as im  # noqa: E402
from conftest import settle_located as settle  # noqa: E402 - the shared Pilot helper

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = ROOT / "testdata" / "valid" / "showcase.onemodel"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    d = tmp_path_factory.mktemp("snap")
    return {f.__name__: str(f(d / f"{f.__name__}.onemodel")) for f in (im.slices_in_if, im.constant_weights, im.tensors)}


def opening(select, *keys):
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.reveal(select(pilot.app.document.model))
        await settle(pilot)
        for k in keys:
            await pilot.press(k)
            await settle(pilot)

    return run_before


def node_named(name):
    return lambda m: next(n for n in m.graph.nodes if n.name == name).where


def init_named(name):
    return lambda m: next(t for t in m.graph.initializers if t.name == name).where


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
def test_snapshot_neighbourhood(snap_compare, models, size):
    assert snap_compare(make_app(models["constant_weights"]), terminal_size=size,
                        run_before=opening(node_named("matmul1"), "a", "down"))


def test_snapshot_values_80x24(snap_compare, models):
    assert snap_compare(make_app(models["tensors"]), terminal_size=(80, 24),
                        run_before=opening(init_named("cube"), "v", "down", "right", "right"))


def test_snapshot_used_by_initializer_detail(snap_compare, models):
    assert snap_compare(make_app(models["slices_in_if"]), terminal_size=(120, 40), run_before=opening(init_named("w")))


def test_snapshot_parameters(snap_compare, models):
    assert snap_compare(make_app(models["constant_weights"]), terminal_size=(120, 40),
                        run_before=opening(lambda m: m.graph.where, "P"))


def test_snapshot_operator_help(snap_compare):
    if not SHOWCASE.exists():
        pytest.skip("testdata not generated")
    assert snap_compare(make_app(str(SHOWCASE)), terminal_size=(120, 40),
                        run_before=opening(lambda m: next(n for n in m.graph.nodes if n.op == "LayerNormalization").where, "o"))


def test_snapshot_byte_inspector(snap_compare, models):
    assert snap_compare(make_app(models["tensors"]), terminal_size=(120, 40),
                        run_before=opening(init_named("cube"), "i", "h", "right", "right", "right", "right"))


def test_snapshot_byte_inspector_80x24_beside_the_statistics(snap_compare):
    """At 80x24 with the statistics open, the inspector and the hex rows were pushed below the screen."""
    assert snap_compare(make_app(str(SHOWCASE)), terminal_size=(80, 24),
                        run_before=opening(init_named("embed.tokens"), "i"))
