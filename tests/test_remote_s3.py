"""``s3://`` against moto's S3 server on loopback, with the real s3fs client; ``hf://`` and ``gs://`` resolution.

The moto server runs in a thread on 127.0.0.1 (a free port) for this module; s3fs reaches it through
``AWS_ENDPOINT_URL`` with dummy credentials. Nothing leaves the machine.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

import pytest

from onemodel_viewer.format import FormatError, Kind, reader
from onemodel_viewer.format.schema import all_tensors

s3fs = pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "testdata"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def s3():
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    env = {"AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}", "AWS_ACCESS_KEY_ID": "testing",
           "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    import boto3

    client = boto3.client("s3", endpoint_url=env["AWS_ENDPOINT_URL"])
    client.create_bucket(Bucket="models")
    for rel in ("valid/showcase.onemodel", "valid/external.onnx", "valid/external.onnx.data",
                "hostile/Malformed-data-offset-past-file.onemodel"):
        client.upload_file(str(DATA / rel), "models", rel)
    s3fs.S3FileSystem.clear_instance_cache()
    try:
        yield client
    finally:
        s3fs.S3FileSystem.clear_instance_cache()
        server.stop()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_s3_valid_file_same_records_and_bytes(s3):
    local = reader.open_path(str(DATA / "valid/showcase.onemodel"), "strict")
    doc = reader.open_path("s3://models/valid/showcase.onemodel", "strict")
    try:
        assert doc.size == local.size
        pairs = list(zip(all_tensors(local.model), all_tensors(doc.model)))
        assert len(pairs) == len(list(all_tensors(local.model)))
        for a, b in pairs:
            assert (a.name, a.where, a.length) == (b.name, b.where, b.length)
            if a.length and not a.is_string:
                assert bytes(a.raw()) == bytes(b.raw())
        assert doc.storage.requests <= 3  # info, the first MiB, the rest (tensors read above)
    finally:
        doc.close()
        local.close()


def test_s3_hostile_same_problem(s3):
    rel = "hostile/Malformed-data-offset-past-file.onemodel"
    local = reader.open_path(str(DATA / rel), "diagnose")
    doc = reader.open_path(f"s3://models/{rel}", "diagnose")
    assert [(p.kind, p.where, p.offset) for p in doc.problems] == [(p.kind, p.where, p.offset) for p in local.problems]
    assert doc.problems


def test_s3_external_data_beside_the_model(s3):
    doc = reader.open_path("s3://models/valid/external.onnx", "strict")
    try:
        ext = [t for t in all_tensors(doc.model) if t.storage is not None and getattr(t.storage, "remote", False)
               and t.storage.url.endswith(".data")]
        assert ext and all(t.storage.url == "s3://models/valid/external.onnx.data" for t in ext)
        local = reader.open_path(str(DATA / "valid/external.onnx"), "strict")
        for a, b in zip(all_tensors(local.model), all_tensors(doc.model)):
            if a.length and not a.is_string:
                assert bytes(a.raw()) == bytes(b.raw())
        local.close()
    finally:
        doc.close()


def test_s3_missing_object_is_io(s3):
    with pytest.raises(FormatError) as e:
        reader.open_path("s3://models/valid/nothing.onemodel", "strict")
    assert (e.value.kind, e.value.where) == (Kind.IO, "file") and "not found" in e.value.message


def test_hf_url_resolution():
    """``hf://`` goes to huggingface_hub's filesystem with the repo path (no request made)."""
    pytest.importorskip("huggingface_hub")
    from onemodel_viewer.format.remote.sources import filesystem

    fs, path = filesystem("hf://org/repo/sub/model.onemodel")
    assert type(fs).__name__ == "HfFileSystem" and path == "org/repo/sub/model.onemodel"


def test_external_location_never_leaves_the_bucket():
    from onemodel_viewer.format.remote.urls import relative

    assert relative("s3://b/m/model.onnx", "w.data") == ("s3://b/m/w.data", "")
    assert relative("hf://org/repo/model.onnx?x=1", "sub/w.data") == ("hf://org/repo/sub/w.data", "")
    for loc in ("../w.data", "/w.data", "s3://other/w.data", "//other/w.data", "a/../../w.data", "C:w", "w?x", "%2e%2e/w", ""):
        full, why = relative("s3://b/m/model.onnx", loc)
        assert full is None and why, loc
