"""URLs: which strings are one, and that credentials are never shown (format/remote/urls.py)."""

from __future__ import annotations

import pytest

from onemodel_viewer.format.remote.urls import is_url, name_of, redact, shown_name


@pytest.mark.parametrize("text, shown", [
    ("https://host/a/m.onemodel", "https://host/a/m.onemodel"),
    ("https://user:pw@host:8443/a/m.onemodel", "https://…@host:8443/a/m.onemodel"),
    ("https://host/m.onnx?token=abc&x=1", "https://host/m.onnx?…"),
    ("s3://bucket/k.onemodel?X-Amz-Signature=deadbeef&X-Amz-Credential=AKIA", "s3://bucket/k.onemodel?…"),
    ("https://host/m.onnx#frag", "https://host/m.onnx?…"),
    ("cannot open https://u:p@h/x?sig=1: HTTP 404", "cannot open https://…@h/x?… HTTP 404"),  # the query to the next space
    ("'http://a:b@h/x?k' and 'hf://org/repo/f?token=t'", "'http://…@h/x?…' and 'hf://org/repo/f?…'"),
])
def test_redact(text, shown):
    assert redact(text) == shown


def test_is_url_and_names():
    assert is_url("https://h/x") and is_url("s3://b/k") and is_url("hf://o/r/f") and is_url("ftp://h/x")
    assert not is_url("/tmp/x.onemodel") and not is_url("C:\\x") and not is_url("a/b://c")
    assert name_of("https://h/a/m.ort?x=.onnx") == "https://h/a/m.ort"
    assert shown_name("/tmp/dir/m.onemodel") == "m.onemodel"
    assert shown_name("https://u:p@h/m.onemodel?t=1") == "https://…@h/m.onemodel?…"
