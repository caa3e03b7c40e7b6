"""The model's field rows (producer, format version, ir_version, model_version, domain, doc) of a OneModel
file carry their own manifest paths: selecting one shows its bytes, and ``E`` edits that value."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import TextArea

from conftest import Viewer

from onemodel_viewer.tui.app import make_app
from onemodel_viewer.tui.edit.screens import JsonEditor
from onemodel_viewer.tui.widgets.structure_tree import StructureTree

SHOWCASE = Path(__file__).resolve().parent.parent / "testdata" / "valid" / "showcase.onemodel"


async def test_e_on_the_domain_row_edits_the_domain():
    """Regression: ``E`` on the model's ``domain`` row opened the whole manifest in the editor (every field
    row carried the model's path, ``manifest``)."""
    app = make_app(str(SHOWCASE))
    async with app.run_test(size=(120, 40)) as pilot:
        await Viewer.settle(pilot)
        tree = app.query_one(StructureTree)
        tree.focus()
        for _ in range(12):  # header, model, producer, ... domain
            if app.current is not None and app.current.kind == "meta" and str(app.current.label).startswith("domain"):
                break
            await pilot.press("down")
            await pilot.pause()
        assert app.current.where == "manifest.domain"
        await pilot.press("E")
        await Viewer.settle(pilot)
        assert isinstance(app.screen, JsonEditor)
        area = app.screen.query_one(TextArea)
        assert area.text == '"org.onemodel.showcase"'
        area.text = '"org.example"'
        await pilot.press("ctrl+s")
        await Viewer.settle(pilot)
        assert app.edit_session.edit_list() == ['manifest.domain="org.example"']
        assert app.document.model.domain == "org.example" and not app.document.problems


def test_every_field_row_names_a_value_of_the_manifest():
    import json

    from onemodel_viewer import format as omf
    from onemodel_viewer.format.onemodel.manifest_locate import Locator
    from onemodel_viewer.tui.widgets.entries import EntryFactory

    doc = omf.open(str(SHOWCASE))
    try:
        [model] = [e for e in EntryFactory(doc).root() if e.kind == "model"]
        rows = [e for e in model.children() if e.kind == "meta"]
        data = SHOWCASE.read_bytes()
        manifest = data[64:64 + int.from_bytes(data[24:32], "little")]
        locator = Locator(manifest)
        text = {e.obj[0]: json.loads(manifest[slice(*locator.span(e.where))]) for e in rows}
        assert text == {"producer": "onemodel-view-testdata", "format version": 1, "ir_version": 10,
                        "model_version": 3, "domain": "org.onemodel.showcase", "doc": doc.model.doc}
    finally:
        doc.close()
