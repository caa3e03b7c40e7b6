"""``Document.keys_unique``: whether a manifest repeats no key, once looked for, and who trusts it."""

from __future__ import annotations

from pathlib import Path

from conftest import Viewer, hold_method

from onemodel_viewer.format import reader
from onemodel_viewer.tui.app import make_app
from onemodel_viewer.tui.hex.locate import ManifestSpans

ROOT = Path(__file__).resolve().parent.parent
SHOWCASE = str(ROOT / "testdata" / "valid" / "showcase.onemodel")
REPEATS = str(ROOT / "testdata" / "hostile" / "valid-duplicate-keys.onemodel")


def test_a_diagnose_open_knows_the_answer_a_strict_or_deferred_open_leaves_it_unknown():
    with reader.open_path(SHOWCASE, "diagnose") as doc:
        assert doc.keys_unique is True
    with reader.open_path(REPEATS, "diagnose") as doc:
        assert doc.keys_unique is False
    with reader.open_path(SHOWCASE, "strict") as doc:
        assert doc.keys_unique is None
    doc, parsed, finish = reader.open_deferred(SHOWCASE)
    with doc:
        assert doc.keys_unique is None and not parsed.checked_duplicates


def test_look_ups_stop_at_the_first_match_only_once_the_keys_were_looked_for():
    """Regression: a look-up took "no duplicate-key finding yet" as the proof, which the viewer's open
    has before its background job has looked: it stopped at the first of a repeated key, not at the one
    the reader uses (the last)."""
    with reader.open_path(REPEATS, "diagnose") as full:
        last = next(f.offset for f in full.findings if f.code == "duplicate-key")
    doc, _parsed, _finish = reader.open_deferred(REPEATS)
    spans = ManifestSpans()
    try:
        start, _length = spans.span(doc, "manifest.x_dup", lambda: True, lambda: False)
        assert start == last
    finally:
        spans.close()
        doc.close()


async def test_the_viewers_job_settles_the_fact_and_an_edit_session_takes_it(monkeypatch):
    from onemodel_viewer.tui.background import BackgroundWork

    reached, go = hold_method(monkeypatch, BackgroundWork, "_duplicate_findings")
    monkeypatch.setattr("onemodel_viewer.tui.background.DEFER_BYTES", 0)  # the viewer's two-step open
    app = make_app(REPEATS)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        reached.wait(10)
        assert app.document.keys_unique is None
        go.set()
        await Viewer.settle(pilot)
        assert app.document.keys_unique is False
        session = app._session()
        assert session.image.facts.keys_unique is False
