"""An edit's marks compare the re-read verdict with the one shown: when that one was not complete (its
document's checks failed, or a reload's checks still run), nothing is marked."""

from __future__ import annotations

from conftest import Viewer, identity_chain

from onemodel_viewer.tui.app import make_app

EDIT = 'manifest.graph.nodes[30].inputs[0]="undefined-x"'


async def test_no_change_is_marked_against_a_verdict_whose_checks_did_not_finish(tmp_path):
    """Regression: with "checks incomplete" shown, an edit marked every problem of the re-read as
    appeared ("+1"), compared against the partial list."""
    app = make_app(str(identity_chain(tmp_path, 60)))
    async with app.run_test(size=(120, 40)) as pilot:
        await Viewer.settle(pilot)
        app.checks_failed = True  # what the background job sets when it could not finish the checks
        assert app.apply_edit(EDIT)
        await Viewer.settle(pilot)
        assert [p.where for p in app.document.problems] == ["manifest.graph.nodes[30].inputs[0]"]
        assert app.edit_change == {"appeared": [], "disappeared": []}
        assert any("no change marked" in str(n.message) for n in app._notifications)
        app.action_undo_edit()  # compared with the re-read, whose own checks ran: marked
        await Viewer.settle(pilot)
        assert not app.document.problems and len(app.edit_change["disappeared"]) == 1
