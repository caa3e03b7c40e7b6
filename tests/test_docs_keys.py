"""The key tables of the documentation (docs/snippets/keys.md, included by docs/viewer.md) are the apps'
``BINDINGS``: a key added, removed or renamed in the code without ``python scripts/gen_key_tables.py``
fails here."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from textual.binding import Binding

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "gen_key_tables.py"


def generator():
    spec = importlib.util.spec_from_file_location("gen_key_tables", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_key_tables_are_the_bindings():
    gen = generator()
    assert gen.OUT.read_text(encoding="utf-8") == gen.render(), "run: python scripts/gen_key_tables.py"


def test_the_tables_cover_both_apps_and_their_screens():
    from onemodel_viewer.tui.app import OneModelApp
    from onemodel_viewer.tui.diff.app import DiffApp
    from onemodel_viewer.tui.screens.help import HelpScreen

    names = [c.__name__ for c in generator().binding_classes()]
    assert names[:2] == [OneModelApp.__name__, DiffApp.__name__]
    assert HelpScreen.__name__ in names


def test_a_new_binding_changes_the_tables(monkeypatch):
    """What the comparison above rests on: a binding added to the app shows in the rendered tables."""
    from onemodel_viewer.tui.app import OneModelApp

    gen = generator()
    before = gen.render()
    monkeypatch.setattr(OneModelApp, "BINDINGS", [*OneModelApp.BINDINGS, Binding("ctrl+k", "kite", "Fly a kite")])
    after = gen.render()
    assert after != before
    assert "| `ctrl+k` | Fly a kite | `kite` | yes |" in after.splitlines()
    assert "| `/` | Search | `search` | yes |" in after.splitlines()  # key names shown as the key
