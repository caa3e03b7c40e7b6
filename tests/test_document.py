"""``Document`` as a context manager: the file is closed on the way out, error or not."""

from __future__ import annotations

import pytest

from onemodel_viewer import format as omf

from test_reader_util import graph, model, pack, write


def _spy_close(doc, closed: list) -> None:
    orig = doc.storage.close
    doc.storage.close = lambda: (closed.append(True), orig())  # type: ignore[method-assign]


def test_with_gives_the_document_and_closes_its_file(tmp_path):
    path = write(tmp_path, pack(model(graph())))
    closed: list = []
    with omf.open(path) as doc:
        assert isinstance(doc, omf.Document) and doc.model is not None
        _spy_close(doc, closed)
        assert closed == []
    assert closed == [True]


def test_with_closes_the_file_when_the_block_raises(tmp_path):
    path = write(tmp_path, pack(model(graph())))
    closed: list = []
    with pytest.raises(KeyError):
        with omf.open(path, mode="diagnose") as doc:
            _spy_close(doc, closed)
            raise KeyError("x")
    assert closed == [True]
