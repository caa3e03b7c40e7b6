"""Snapshot tests of the viewer's main screens (pytest-textual-snapshot).

Regenerate after an intended change: ``python -m pytest tests/test_tui_snapshots.py --snapshot-update``
and look at the SVGs in ``tests/__snapshots__/test_tui_snapshots/``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from onemodel_viewer.tui.app import make_app
from conftest import settle_located as settle  # noqa: E402 - the shared Pilot helper

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = ROOT / "testdata" / "valid" / "showcase.onemodel"
HOSTILE = ROOT / "testdata" / "hostile"


def app_for(path: Path):
    if not path.exists():
        pytest.skip(f"{path.name} not generated yet")
    return make_app(str(path))


def test_snapshot_main_screen(snap_compare):
    async def run_before(pilot):
        await settle(pilot)

    assert snap_compare(app_for(SHOWCASE), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_node_detail(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        g = pilot.app.document.model.graph
        pilot.app.reveal(next(n for n in g.nodes if n.op == "LayerNormalization").where)
        await settle(pilot)

    assert snap_compare(app_for(SHOWCASE), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_tensor_stats(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.reveal(pilot.app.document.model.graph.initializers[0].where)
        await settle(pilot)

    assert snap_compare(app_for(SHOWCASE), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_problems(snap_compare):
    """The problems screen (problems fixed here, so the picture does not follow the reader's wording)."""
    from onemodel_viewer import format as omf
    from onemodel_viewer.format.errors import Finding, Kind, Problem

    path = HOSTILE / "valid-base.onemodel"
    if not path.exists():
        pytest.skip("hostile corpus not generated")
    doc = omf.open(str(path), mode="diagnose")
    doc.problems = [
        Problem(Kind.MALFORMED, "header.file_length", 48, "the header says 3656 bytes; the file has 3600"),
        Problem(Kind.INVALID_MODEL, "manifest.graph.nodes[4]", 2039, "the nodes form a cycle"),
        Problem(Kind.UNSUPPORTED, "manifest.graph.initializers[1].dtype", None, "unknown dtype 99"),
    ]
    doc.findings = [Finding("nonzero-padding", "file", 3300, "padding byte is not zero [bold]x[/]\x1b[2J")]

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("p")
        await settle(pilot)

    assert snap_compare(make_app(document=doc), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_layout(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("l")
        await settle(pilot)

    assert snap_compare(app_for(HOSTILE / "valid-shared-bytes.onemodel"), terminal_size=(120, 40),
                        run_before=run_before)


def test_snapshot_help(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("question_mark")
        await settle(pilot)

    assert snap_compare(app_for(SHOWCASE), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_80x24(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        pilot.app.reveal(pilot.app.document.model.graph.initializers[1].where)
        await settle(pilot)

    assert snap_compare(app_for(SHOWCASE), terminal_size=(80, 24), run_before=run_before)


def test_snapshot_hostile_names(snap_compare):
    """Markup, ANSI escapes, bidi and control characters in names are shown as visible text."""

    async def run_before(pilot):
        await settle(pilot)
        doc = pilot.app.document
        pilot.app.reveal(doc.model.graph.nodes[0].where)
        await settle(pilot)

    assert snap_compare(app_for(HOSTILE / "valid-term-all.onemodel"), terminal_size=(120, 40), run_before=run_before)


def test_snapshot_light_theme(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("ctrl+t")
        pilot.app.reveal(pilot.app.document.model.graph.initializers[2].where)
        await settle(pilot)

    assert snap_compare(app_for(SHOWCASE), terminal_size=(120, 40), run_before=run_before)
