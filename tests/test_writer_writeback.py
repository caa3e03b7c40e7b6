"""The writer tells the kernel early where its bytes go: the file's blocks reserved up front
(``fallocate`` keeping the size), each whole MiB copied handed to the disk at once
(``sync_file_range``), so that the ``fsync`` before the rename has little left to wait for.
Neither may change a byte of the output, nor its size, nor what happens on an error."""

from __future__ import annotations

import os
import struct
import sys

import numpy as np
import pytest

from onemodel_viewer.format import output
from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.schema import Graph, Model, Tensor
from onemodel_viewer.format.storage import BytesStorage, FileStorage

MIB = 1 << 20


class FakeLibc:
    """Records the two calls; ``fallocate`` answers ``fallocate_result`` (-1: the filesystem refuses)."""

    def __init__(self, fallocate_result: int = 0) -> None:
        self.calls: list[tuple] = []
        self.fallocate_result = fallocate_result

    def fallocate(self, fd, mode, offset, length):
        self.calls.append(("fallocate", os.fstat(fd).st_size, mode, offset, length))
        return self.fallocate_result

    def sync_file_range(self, fd, offset, length, flags):
        self.calls.append(("sync_file_range", offset, length, flags))
        return 0


def _model(tmp_path, n: int) -> Model:
    data = np.random.default_rng(1).integers(0, 256, n + 100, dtype=np.uint8).tobytes()
    (tmp_path / "src.bin").write_bytes(data)
    big = Tensor("big", 2, (n,), length=n, file_offset=100, storage=FileStorage(tmp_path / "src.bin"))
    small = Tensor("small", 2, (3,), length=3, file_offset=0, storage=BytesStorage(b"abc"))
    return Model(8, Graph(initializers=(small, big)))


def _file_length(blob: bytes) -> int:
    return struct.unpack_from("<Q", blob, 48)[0]


@pytest.mark.parametrize("copy_file_range", [True, False])
def test_the_file_is_reserved_and_each_whole_mib_handed_to_the_disk_once(tmp_path, monkeypatch, copy_file_range):
    monkeypatch.setattr(writer, "CHUNK", 300_000)  # chunks that do not end on a MiB boundary
    if not copy_file_range:
        monkeypatch.delattr(os, "copy_file_range", raising=False)  # the pread/write path
    fake = FakeLibc()
    monkeypatch.setattr(output, "_LIBC", [fake])
    model = _model(tmp_path, 3 * MIB + 12345)
    out = tmp_path / "out.onemodel"
    writer.write(model, out)
    blob = out.read_bytes()
    assert blob == writer.to_bytes(model)
    total = _file_length(blob)
    assert fake.calls[0] == ("fallocate", 0, output._FALLOC_FL_KEEP_SIZE, 0, total)  # before any byte, size kept
    ranges = [(off, n, flags) for what, off, n, flags in fake.calls[1:] if what == "sync_file_range"]
    assert len(ranges) == len(fake.calls) - 1 and {f for _o, _n, f in ranges} == {output._SYNC_FILE_RANGE_WRITE}
    # contiguous whole MiBs from the start, each once, up to the last MiB boundary the copy passed
    assert all(off % MIB == 0 and n % MIB == 0 and n > 0 for off, n, _f in ranges)
    assert [off for off, _n, _f in ranges] == [0] + [off + n for off, n, _f in ranges[:-1]]
    assert ranges[-1][0] + ranges[-1][1] == total // MIB * MIB


def test_a_filesystem_that_refuses_to_reserve_still_gets_the_whole_file(tmp_path, monkeypatch):
    monkeypatch.setattr(output, "_LIBC", [FakeLibc(fallocate_result=-1)])
    model = _model(tmp_path, MIB + 7)
    writer.write(model, tmp_path / "out.onemodel")
    assert (tmp_path / "out.onemodel").read_bytes() == writer.to_bytes(model)


def test_without_the_calls_nothing_changes(tmp_path, monkeypatch):
    """Not Linux (or no libc): both helpers do nothing, the writer writes the same bytes."""
    monkeypatch.setattr(output, "_LIBC", [None])
    model = _model(tmp_path, MIB + 7)
    writer.write(model, tmp_path / "out.onemodel")
    assert (tmp_path / "out.onemodel").read_bytes() == writer.to_bytes(model)


def test_bytes_within_one_mib_start_no_writeback(monkeypatch):
    fake = FakeLibc()
    monkeypatch.setattr(output, "_LIBC", [fake])
    output.start_writeback(3, 10, MIB - 1)
    output.start_writeback(3, MIB, 2 * MIB - 1)
    assert fake.calls == []
    output.start_writeback(3, MIB - 1, 3 * MIB + 5)
    assert fake.calls == [("sync_file_range", 0, 3 * MIB, output._SYNC_FILE_RANGE_WRITE)]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fallocate and sync_file_range are Linux calls")
def test_the_real_calls_leave_the_size_and_bytes_exact(tmp_path):
    """With the real libc: the reservation does not extend the file (the copies append at its end)."""
    assert output._libc() is not None
    model = _model(tmp_path, 2 * MIB + 3)
    out = tmp_path / "out.onemodel"
    writer.write(model, out)
    blob = out.read_bytes()
    assert blob == writer.to_bytes(model) and os.path.getsize(out) == _file_length(blob)
