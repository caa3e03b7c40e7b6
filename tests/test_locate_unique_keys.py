"""A look-up stops at its key only when no object repeats one: the reader's problem offsets and the
edits' spans are those of the last duplicate (the one JSON keeps) whenever a key does repeat."""

from __future__ import annotations

import struct
from pathlib import Path

from onemodel_viewer import format as omf
from onemodel_viewer.format.onemodel.overlay import EditSession

HOSTILE = Path(__file__).resolve().parent.parent / "testdata" / "hostile"
BASE = HOSTILE / "valid-base.onemodel"
NODE2 = '{"name":"n2","op":"Add","domain":"","overload":"","inputs":["u","b"],%s"outputs":["y"],"attributes":[]}'


def manifest(path) -> bytes:
    data = Path(path).read_bytes()
    return data[64:64 + struct.unpack_from("<Q", data, 24)[0]]


def saved(session: EditSession, tmp_path) -> Path:
    out = tmp_path / "out.onemodel"
    session.save_as(out)
    return out


def test_a_problem_after_a_repeated_key_is_located_in_the_last_duplicate(tmp_path):
    """The reader's look-up may stop at the first match only when its parse proved no key repeats:
    here the node's second "inputs" (the one read) names the undefined value, not the first."""
    session = EditSession(BASE)
    session.apply("manifest.graph.nodes[2]=" + NODE2 % '"inputs":["nowhere","b"],')
    out = saved(session, tmp_path)
    expected = 64 + manifest(out).index(b'"nowhere"')
    doc = omf.open(out, mode="diagnose")
    try:
        found = [(p.where, p.offset) for p in doc.problems if p.where == "manifest.graph.nodes[2].inputs[0]"]
        assert found == [("manifest.graph.nodes[2].inputs[0]", expected)]
    finally:
        doc.close()
    try:
        omf.open(out).close()
    except omf.FormatError as e:
        assert (e.where, e.offset) == ("manifest.graph.nodes[2].inputs[0]", expected)
    else:
        raise AssertionError("the strict open read the undefined input")


def test_an_edit_after_one_that_repeats_a_key_changes_the_last_duplicate(tmp_path):
    """An edit whose value repeats a key leaves the image's keys not known to be unique: the next edit
    inside that object walks to its end and changes the second "inputs" (the one read)."""
    session = EditSession(BASE)
    session.apply("manifest.graph.nodes[2]=" + NODE2 % '"inputs":["u","b"],')
    session.apply('manifest.graph.nodes[2].inputs[0]="t"')
    assert (NODE2 % '"inputs":["t","b"],').encode() in manifest(saved(session, tmp_path))


def test_a_file_with_repeated_keys_is_edited_at_the_last_one(tmp_path):
    """The first edit's proof: valid-duplicate-keys repeats "x_dup" at the top level."""
    session = EditSession(HOSTILE / "valid-duplicate-keys.onemodel")
    session.apply("manifest.x_dup=3")
    assert manifest(saved(session, tmp_path)).endswith(b'"x_dup":1,"x_dup":3}')


def test_a_bytes_edit_forgets_that_the_keys_were_unique(tmp_path):
    """bytes@ can spell a key again: after it, a manifest edit walks each object to its end."""
    session = EditSession(BASE)
    session.apply('manifest.doc="d"')  # proves the keys unique
    at = 64 + manifest(saved(session, tmp_path)).index(b'"producer_version"')
    session.apply(f"bytes@{at}=" + b'"producer_name"   '.hex())  # same length: now two producer_name keys
    session.apply('manifest.producer_name="Z"')
    assert b'"producer_name":"make_hostile","producer_name"   :"Z"' in manifest(saved(session, tmp_path))
