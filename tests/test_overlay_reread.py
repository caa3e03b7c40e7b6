"""An edit session's re-read (format/onemodel/overlay.py ``EditSession.document``) with the key proof it keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from onemodel_viewer.format.onemodel import manifest_keys
from onemodel_viewer.format import reader
from onemodel_viewer.format.onemodel.overlay import EditSession

ROOT = Path(__file__).resolve().parent.parent
VALID = sorted((ROOT / "testdata" / "valid").glob("*.onemodel"))
EDITS = [
    'manifest.graph.nodes[0].inputs[0]="undefined-x"',
    "manifest.graph.nodes[0]=null",
    'manifest.doc="a doc"',
    "header.flags=1",
]


def verdict(doc) -> tuple:
    return ([(p.kind, p.where, p.offset, p.message) for p in doc.problems],
            [(f.code, f.where, f.offset, f.message) for f in doc.findings])


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_a_re_read_that_trusts_the_kept_key_proof_finds_what_a_full_diagnose_open_finds(path, tmp_path):
    """The proof only skips work: problems and findings (offsets included) are those of the same bytes
    opened from a file, after each edit that applies and after undoing them all."""
    session = EditSession(str(path))
    compared = 0
    for edit in EDITS:
        try:
            session.apply(edit)
        except Exception:  # noqa: BLE001 - an edit this file has no place for
            continue
        out = tmp_path / f"e{compared}.onemodel"
        session.save_as(str(out))
        with session.document() as got, reader.open_path(str(out), "diagnose") as want:
            assert verdict(got) == verdict(want), edit
        compared += 1
    while session.undo() is not None:
        pass
    with session.document() as got, reader.open_path(str(path), "diagnose") as want:
        assert verdict(got) == verdict(want)


def test_manifest_edits_keep_the_proof_and_the_re_read_does_not_look_for_duplicates_again(tmp_path, monkeypatch):
    """Regression: each re-read of an edited file re-encoded the whole manifest to prove that no key
    repeats (3-12 ms on 10,000 nodes in one call the UI thread could not interrupt), though the session
    had proved it at its first manifest edit and kept the proof through the edits."""
    session = EditSession(str(ROOT / "testdata" / "valid" / "showcase.onemodel"))
    session.apply('manifest.graph.nodes[0].inputs[0]="undefined-x"')
    assert session.keys_unique
    searched = []
    real = manifest_keys.duplicates
    monkeypatch.setattr(manifest_keys, "duplicates", lambda *a: searched.append(1) or real(*a))
    with session.document() as doc:
        assert searched == []
        assert any(p.where == "manifest.graph.nodes[0].inputs[0]" for p in doc.problems)
    session.apply("header.flags=1")  # raw bytes may change the manifest: the proof goes
    assert not session.keys_unique
    with session.document():
        assert searched == [1]


def test_a_value_that_repeats_a_key_drops_the_proof_and_its_duplicate_is_found(tmp_path):
    session = EditSession(str(ROOT / "testdata" / "valid" / "showcase.onemodel"))
    session.apply('manifest.metadata=[{"key": "a", "value": "1", "value": "2"}]')
    assert not session.keys_unique
    with session.document() as doc:
        assert [f.where for f in doc.findings if f.code == "duplicate-key"] == ["manifest.metadata[0].value"]
