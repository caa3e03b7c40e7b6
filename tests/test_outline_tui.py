"""The ``O`` outline screen: computed in a worker, folds shown, figures on the right, enter selects the
scope's first node in the structure tree (or opens a fold); snapshots at 80x24 and 120x40."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from textual.widgets import Tree

from onemodel_viewer.tui.app import make_app
from onemodel_viewer.tui.screens.outline import OutlineScreen
from onemodel_viewer.tui.widgets.structure_tree import StructureTree

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conftest import settle_located as settle, wait_for_workers  # noqa: E402
from outline_models import transformer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = ROOT / "testdata" / "valid" / "showcase.onemodel"


async def open_outline(pilot) -> OutlineScreen:
    await pilot.press("O")
    screen = pilot.app.screen
    assert isinstance(screen, OutlineScreen)
    for _ in range(100):
        await wait_for_workers(pilot.app)
        await pilot.pause()
        if screen.final:
            break
    assert screen.final
    return screen


def labels(tree: Tree, node=None) -> list[str]:
    node = node or tree.root
    return [str(c.label).split("  ")[0] for c in node.children]


def side(screen) -> str:
    from rich.console import Console

    console = Console(width=120, record=True, file=open("/dev/null", "w"))
    console.print(screen.shown)
    return console.export_text()


async def test_outline_folds_layers_and_selects_first_node(viewer, tmp_path):
    src = transformer(tmp_path / "t", 24, odd_attr=5)
    async with viewer(src) as pilot:
        screen = await open_outline(pilot)
        tree = screen.query_one(Tree)
        assert labels(tree) == ["model", "lm_head"]
        model = tree.root.children[0]
        model.expand()
        await pilot.pause()
        assert labels(tree, model) == ["embed_tokens", "layers.0–23", "norm"]
        fold = model.children[1]
        assert "24 × block (14 nodes, 528 params each) · 1 differs" in str(fold.label)
        tree.move_cursor(fold)
        await pilot.pause()
        assert "layers.5: another attribute: Softmax axis=1 (the others -1)" in side(screen)
        await pilot.press("enter")  # a fold: enter opens it
        await pilot.pause()
        assert fold.is_expanded and len(fold.children) == 24
        assert "≠ another attribute" in str(fold.children[5].label)
        tree.move_cursor(fold.children[3])
        await pilot.pause()
        assert "nodes" in side(screen) and "14" in side(screen)
        await pilot.press("enter")  # a scope: enter selects its first node in the structure tree
        await pilot.pause()
        app = pilot.app
        assert not isinstance(app.screen, OutlineScreen)
        first = next(n for n in app.document.model.graph.nodes if n.name.startswith("/model/layers.3/"))
        assert app.current is not None and app.current.where == first.where
        assert app.query_one(StructureTree).cursor_node.data.where == first.where


async def test_outline_kept_and_closed_by_escape(viewer):
    async with viewer(SHOWCASE) as pilot:
        screen = await open_outline(pilot)
        first = screen.outline
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(pilot.app.screen, OutlineScreen)
        await pilot.press("O")
        await pilot.pause()
        again = pilot.app.screen
        assert isinstance(again, OutlineScreen) and again.outline is first and again.final


def test_snapshot_outline_80x24(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        await open_outline(pilot)
        await pilot.press("down")
        await settle(pilot)

    assert snap_compare(make_app(str(SHOWCASE)), terminal_size=(80, 24), run_before=run_before)


def test_snapshot_outline_120x40(snap_compare):
    async def run_before(pilot):
        await settle(pilot)
        screen = await open_outline(pilot)
        await pilot.press("down", "enter")
        await settle(pilot)
        assert screen.query_one(Tree).root.children[1].is_expanded

    assert snap_compare(make_app(str(SHOWCASE)), terminal_size=(120, 40), run_before=run_before)


async def test_outline_of_file_with_problems(viewer):
    path = ROOT / "testdata" / "hostile" / "InvalidModel-duplicate-node-outputs.onemodel"
    if not path.exists():
        pytest.skip("hostile corpus not generated")
    async with viewer(path) as pilot:
        if pilot.app.document.model is None:
            pytest.skip("nothing readable")
        screen = await open_outline(pilot)
        assert screen.query_one(Tree).root.children


async def test_outline_in_the_command_palette(viewer):
    async with viewer(SHOWCASE) as pilot:
        app = pilot.app
        cmds = {c.title: c for c in app.get_system_commands(app.screen)}
        assert "Outline" in cmds and "(O)" in cmds["Outline"].help
        cmds["Outline"].callback()
        await pilot.pause()
        assert isinstance(app.screen, OutlineScreen)


async def test_outline_failure_is_shown_and_the_gc_comes_back(viewer, monkeypatch):
    """A model the outline cannot take (diagnose-mode leftovers): the title says why (made visible), the
    screen stays up, and the GC the screen paused for its worker is on again."""
    import gc

    from onemodel_viewer.analysis.graph import scopes

    def broken(*a, **kw):
        raise ValueError("bad\x1b[2J name")

    monkeypatch.setattr(scopes, "build_outline", broken)
    async with viewer(SHOWCASE) as pilot:
        app = pilot.app
        from onemodel_viewer.tui.screens import outline as mod
        mod.KEPT.clear()
        await pilot.press("O")
        for _ in range(50):
            await wait_for_workers(app)
            await pilot.pause()
            if "could not be built" in str(app.screen.query_one("#outline-title").render()):
                break
        title = str(app.screen.query_one("#outline-title").render())
        assert "ValueError: bad\\x1b[2J name" in title and "\x1b" not in title
        assert isinstance(app.screen, OutlineScreen) and not app.screen.gc_held
        assert gc.isenabled() or app.background_gc_held


async def test_big_graph_shows_its_first_rows_before_all_are_grouped(viewer, tmp_path, monkeypatch):
    """A graph over scopes.PREVIEW_AT nodes: the rows of its first nodes are shown while the rest is grouped
    (here PREVIEW_AT is 20 nodes of 340); the outline in the end is the whole one."""
    from onemodel_viewer.analysis.graph import scopes

    monkeypatch.setattr(scopes, "PREVIEW_AT", 20)
    src = transformer(tmp_path / "t", 24)
    async with viewer(src) as pilot:
        screen = await open_outline(pilot)
        assert screen.previewed
        assert screen.outline.root.count == 24 * 14 + 3
        model = screen.query_one(Tree).root.children[0]
        model.expand()
        await pilot.pause()
        assert labels(screen.query_one(Tree), model) == ["embed_tokens", "layers.0–23", "norm"]


def test_preview_holds_the_first_nodes_rows(tmp_path, monkeypatch):
    from onemodel_viewer import format as omf
    from onemodel_viewer.analysis.graph import scopes

    monkeypatch.setattr(scopes, "PREVIEW_AT", 30)
    seen = []
    doc = omf.open(str(transformer(tmp_path / "t", 4)))
    with doc:
        o = scopes.build_outline(doc.model, step=lambda: None, fold=False,
                                 preview=lambda p: seen.append((p.root.count, [r.label for r in p.root.children[0].children])))
        assert seen == [(30, ["embed_tokens", "layers.0", "layers.1", "layers.2"])]
        assert o.root.count == 4 * 14 + 3
