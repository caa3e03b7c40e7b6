"""``--patch IN OUT EDIT...``: precise edits, header fix-up, atomic output, IN never written."""

from __future__ import annotations

import io
import json
import os
import struct
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from onemodel_viewer import cli
from onemodel_viewer import format as omf
from onemodel_viewer.commands.patch import EditError, parse_edit
from conftest import digest, first_failure as first_problem  # noqa: E402 - shared test helpers

ROOT = Path(__file__).resolve().parent.parent
HOSTILE = ROOT / "testdata" / "hostile"
EXPECTED: dict[str, dict] = json.loads((HOSTILE / "expected.json").read_text())
BASE = HOSTILE / "valid-base.onemodel"
HEADER = struct.Struct("<8sIIQQQQQQ")


def patch(src, dst, *edits, raw=False):
    out, err = io.StringIO(), io.StringIO()
    argv = ["--patch", str(src), str(dst), *edits, "--json"] + (["--raw"] if raw else [])
    with redirect_stdout(out), redirect_stderr(err):
        rc = cli.main(argv)
    obj = json.loads(out.getvalue()) if out.getvalue().strip() else None
    return rc, obj, err.getvalue()


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_no_op_edit_copies_every_hostile_file_byte_for_byte(name, tmp_path):
    src = HOSTILE / name
    before = digest(src)
    data = src.read_bytes()
    edit = f"bytes@0={data[:1].hex()}" if data else "truncate=0"
    rc, obj, _ = patch(src, tmp_path / "out.onemodel", edit)
    assert rc == 0
    assert (tmp_path / "out.onemodel").read_bytes() == data
    assert obj["appeared"] == {"problems": [], "findings": []}
    assert obj["disappeared"] == {"problems": [], "findings": []}
    assert digest(src) == before


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_an_unknown_manifest_field_keeps_each_hostile_files_first_problem(name, tmp_path):
    """A manifest edit moves the data region and the header's lengths: the file keeps exactly its defect."""
    src = HOSTILE / name
    before = digest(src)
    rc, obj, err = patch(src, tmp_path / "out.onemodel", 'manifest.x_note="a note that grows the manifest past 64 bytes"')
    assert digest(src) == before
    if rc == 1:  # no manifest to follow (header or JSON defect): refused, nothing written
        assert "error: edit" in err and not (tmp_path / "out.onemodel").exists()
        return
    e = EXPECTED[name]
    assert first_problem(tmp_path / "out.onemodel") == ((e["kind"], e["where"]) if e["kind"] else None)


@pytest.mark.parametrize(
    "edits, kind, where",
    [
        (["header.flags=1"], "Unsupported", "header.flags"),
        (["header.version=0"], "Malformed", "header.version"),
        (["header.reserved=0x10"], "Unsupported", "header.reserved"),
        (['manifest.graph.nodes[1].inputs[0]="nope"'], "InvalidModel", "manifest.graph.nodes[1].inputs[0]"),
        (["manifest.graph.initializers[0].dims[0]=-2"], "InvalidModel", "manifest.graph.initializers[0].dims[0]"),
        (["manifest.graph.initializers[0].data.length=12"], "InvalidModel", "manifest.graph.initializers[0].data.length"),
        (["manifest.graph.nodes[0].op=null"], "Malformed", "manifest.graph.nodes[0].op"),
        (["manifest.ir_version=3.0"], "Malformed", "manifest.ir_version"),
        (['manifest.graph.nodes[2].outputs[0]="t"'], "InvalidModel", "manifest.graph.nodes[2].outputs[0]"),
        (["truncate=1000"], "Malformed", "header.file_length"),
        (["bytes@0=4f4e454d4f44454c00"], "Malformed", "header.version"),
    ],
)
def test_edits_build_one_defect_on_a_valid_file(edits, kind, where, tmp_path):
    before = digest(BASE)
    rc, obj, _ = patch(BASE, tmp_path / "out.onemodel", *edits)
    assert rc == 0 and obj["valid"] is False
    assert (obj["problems"][0]["kind"], obj["problems"][0]["where"]) == (kind, where)
    assert first_problem(tmp_path / "out.onemodel") == (kind, where)
    assert (kind, where) in {(p["kind"], p["where"]) for p in obj["appeared"]["problems"]}
    assert obj["input"] == str(BASE)
    assert digest(BASE) == before


def test_a_growing_manifest_moves_the_data_region_and_the_header(tmp_path):
    out = tmp_path / "out.onemodel"
    rc, obj, _ = patch(BASE, out, 'manifest.doc="' + "d" * 500 + '"')
    assert rc == 0 and obj["valid"]
    h = HEADER.unpack_from(out.read_bytes())
    assert h[5] % 64 == 0 and h[5] >= 64 + h[4] and h[7] == out.stat().st_size
    doc = omf.open(out)
    try:
        assert doc.model.doc == "d" * 500
        ref = omf.open(BASE)
        try:
            assert doc.model.graph.initializers[0].values().tobytes() == ref.model.graph.initializers[0].values().tobytes()
        finally:
            ref.close()
    finally:
        doc.close()


def test_raw_keeps_the_header(tmp_path):
    rc, obj, _ = patch(BASE, tmp_path / "out.onemodel", 'manifest.doc="' + "d" * 500 + '"', raw=True)
    assert rc == 0 and obj["problems"][0]["where"].startswith("header.")
    assert HEADER.unpack_from((tmp_path / "out.onemodel").read_bytes())[1:] == HEADER.unpack_from(BASE.read_bytes())[1:]


def test_add_delete_and_append(tmp_path):
    out = tmp_path / "out.onemodel"
    rc, obj, _ = patch(BASE, out, 'manifest.producer_name="p"', "manifest.producer_name=null",
                       'manifest.metadata=[]', 'manifest.metadata[0]={"key":"k","value":"v"}',
                       'manifest.metadata[1]={"key":"k2","value":"v2"}', "manifest.metadata[0]=null")
    assert rc == 0 and obj["valid"], obj["problems"]
    doc = omf.open(out)
    try:
        assert doc.model.producer_name == "" and doc.model.metadata == (("k2", "v2"),)
    finally:
        doc.close()
    rc, _, _ = patch(BASE, out, "manifest.graph.inputs[0].type.shape[0]=(null)")
    assert rc == 0
    assert b'"shape":[null' in out.read_bytes()


def test_the_input_is_refused_as_output_under_any_name(tmp_path):
    src = tmp_path / "in.onemodel"
    src.write_bytes(BASE.read_bytes())
    os.link(src, tmp_path / "hard.onemodel")
    os.symlink(src, tmp_path / "soft.onemodel")
    for dst in (src, tmp_path / "hard.onemodel", tmp_path / "soft.onemodel", tmp_path / "." / "in.onemodel"):
        rc, obj, err = patch(src, dst, "header.flags=1")
        assert rc == 1 and obj is None and "refusing" in err
    assert src.read_bytes() == BASE.read_bytes()


def test_bad_edits_are_usage_errors_and_unappliable_ones_write_nothing(tmp_path):
    for bad in ("header.nope=1", "header.flags=x", "header.version=4294967296", "manifest.doc=not json",
                "bytes@1=zz", "graph.nodes=1", "truncate=-1"):
        with pytest.raises(EditError):
            parse_edit(bad)
        rc, _, err = patch(BASE, tmp_path / "o.onemodel", bad)
        assert rc == 2 and "error: edit" in err
    for unappliable in ("manifest.graph.nodes[99].op=null", "manifest.graph.nodes[99]=1", "manifest.graph.nodes.x=1"):
        rc, _, err = patch(BASE, tmp_path / "o.onemodel", unappliable)
        assert rc == 1 and "error: edit" in err
    assert not (tmp_path / "o.onemodel").exists()
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_where_strings_paste_back_and_edits_print_as_written():
    e = parse_edit('manifest.graph["a=b"].x=1')
    assert e.target == 'manifest.graph["a=b"].x' and str(e) == 'manifest.graph["a=b"].x=1'


def test_text_report_lists_what_appeared(tmp_path, capsys):
    rc = cli.main(["--patch", str(BASE), str(tmp_path / "o.onemodel"), "header.flags=1"])
    out = capsys.readouterr().out
    assert rc == 0 and "appeared" in out and "+ Unsupported at header.flags" in out and "§1.1 header: flags" in out
