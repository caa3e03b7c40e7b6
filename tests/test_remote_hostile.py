"""Differential: a file checked over HTTP gives exactly the problems and findings it gives on disk.

Every file of ``testdata/hostile`` (OneModel), ``testdata/hostile/ort`` and ``testdata/external``
(ONNX external data) is opened in diagnose mode from disk and from a loopback range server; the
problems (kind, where, offset) must be the same, in the same order. Valid files: the same records
and the same tensor bytes. ``deep`` is on so that padding and unowned bytes are scanned remotely too.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from onemodel_viewer.format import reader
from onemodel_viewer.format.remote import storage as remote_storage
from onemodel_viewer.format.schema import all_tensors

sys.path.insert(0, str(Path(__file__).parent))
from remote_server import RangeServer  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent / "testdata"
HOSTILE = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "hostile").glob("*.onemodel"))
ORT = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "hostile" / "ort").glob("*.ort"))
EXTERNAL = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "external").glob("*/*.onnx"))
VALID = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "valid").glob("*") if p.suffix in (".onemodel", ".onnx"))


@pytest.fixture(scope="module")
def server():
    with RangeServer(str(ROOT)) as srv:
        yield srv


@pytest.fixture(autouse=True)
def deep(monkeypatch):
    monkeypatch.setitem(remote_storage.OPTIONS, "deep", True)


def _problems(doc):
    return [(p.kind, p.where, p.offset) for p in doc.problems]


def _findings(doc):
    return [(f.code, f.where, f.offset) for f in doc.findings]


def _check(rel: str, server) -> None:
    local = reader.open_path(str(ROOT / rel), "diagnose")
    remote = reader.open_path(server.url(rel), "diagnose")
    try:
        assert remote.source == local.source
        assert _problems(remote) == _problems(local)
        assert _findings(remote) == _findings(local)
    finally:
        local.close()
        remote.close()


def test_corpora_are_there():
    assert len(HOSTILE) >= 200 and len(ORT) >= 40 and len(EXTERNAL) >= 30


@pytest.mark.parametrize("rel", HOSTILE)
def test_hostile_onemodel_same_problems(rel, server):
    _check(rel, server)


@pytest.mark.parametrize("rel", ORT)
def test_hostile_ort_same_problems(rel, server):
    _check(rel, server)


@pytest.mark.parametrize("rel", EXTERNAL)
def test_external_data_same_problems(rel, server):
    _check(rel, server)


@pytest.mark.parametrize("rel", HOSTILE[:40:4] + ORT[:8])
def test_check_command_same_result(rel, server):
    """``--check``'s whole verdict (findings of the layout scans included) is the disk's."""
    from onemodel_viewer.commands.check import check_file

    local, remote = check_file(str(ROOT / rel)), check_file(server.url(rel))
    assert _problems(remote) == _problems(local)
    assert _findings(remote) == _findings(local)


@pytest.mark.parametrize("rel", VALID)
def test_valid_files_same_records_and_bytes(rel, server):
    local = reader.open_path(str(ROOT / rel), "strict")
    remote = reader.open_path(server.url(rel), "strict")
    try:
        lt, rt = list(all_tensors(local.model)), list(all_tensors(remote.model))
        assert [(t.name, t.dtype, t.dims, t.where, t.length) for t in rt] == \
               [(t.name, t.dtype, t.dims, t.where, t.length) for t in lt]
        for a, b in zip(lt, rt):
            if a.storage is not None and a.file_offset is not None and not a.is_string:
                assert bytes(b.raw()) == bytes(a.raw()), a.where
        assert len(local.model.graph.nodes) == len(remote.model.graph.nodes)
    finally:
        local.close()
        remote.close()
