"""Write a model as an ONNX Runtime ``.ort`` file: :func:`write_ort`.

The model is prepared as ONNX Runtime's converter would (:mod:`.prepare`: functions inlined,
Constant nodes made initializers, values typed), turned into ORT tables (:mod:`.builder`) and
laid out front to back (:mod:`.tables`): every table first, then each tensor's ``raw_data`` at a
multiple of ``align`` from the start of the file, zeros between. Only the table region is built
in memory; the payloads are copied straight from the sources (``copy_file_range``, or
``pread``/``pwrite``) in :data:`CHUNK`-byte pieces on ``threads`` threads, each piece at its own
fixed offset: the bytes are the same for any thread count and any run. A model whose buffer
would pass flatbuffers' 2 GiB offset range is refused before anything is written; the output is
atomic (temporary file, fsync, rename) and never one of the files the model reads.
"""

from __future__ import annotations

import gc
import os
import struct
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterable

from ..errors import FormatError, Kind
from ..output import SourceFds, atomic_output, refuse_sources, reserve, start_writeback
from ..schema import Model, all_tensors
from ..storage import FileStorage
from .builder import build
from .prepare import prepare
from .tables import Layout, layout

__all__ = ["CHUNK", "DEFAULT_ALIGN", "MAX_ALIGN", "no_cyclic_gc", "plan", "write_ort"]

CHUNK = 8 << 20
"""Bytes one copy step moves (memory stays bounded by threads x CHUNK at most, for pread/pwrite)."""
DEFAULT_ALIGN = 64
"""The OneModel alignment: a mapped ``.ort`` can use each payload in place."""
MAX_ALIGN = 1 << 20


def check_align(align: int) -> None:
    if align < 1 or align > MAX_ALIGN or align & (align - 1):
        raise FormatError(Kind.UNSUPPORTED, "align", None, f"--align {align}: a power of two from 1 to {MAX_ALIGN:,} is needed")


def plan(model: Model, align: int = DEFAULT_ALIGN, warn: Callable[[str], None] | None = None) -> Layout:
    """The laid-out file (tables encoded, payload positions set), nothing written. FormatError when the
    model has no ORT form (an operator onnx has no schema for, over 2 GiB...)."""
    check_align(align)
    with no_cyclic_gc():
        warn = warn or (lambda _msg: None)
        mp, sources = prepare(model, warn)
        root = build(mp, sources, warn)
        del mp
        return layout(root, align)


@contextmanager
def no_cyclic_gc():
    """The cyclic garbage collector off (as it was before, after): planning makes ~10^5 objects (protos,
    tables, blobs) that all live until the file is written, and each collection only rescans them
    (a third of the planning time on the 1G benchmark model). Reference counting still frees as usual."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


def _model_files(model: Model) -> set[str]:
    out = set()
    for t in all_tensors(model):
        if isinstance(t.storage, FileStorage):
            out.add(t.storage.path)
    return out


def write_ort(model: Model, path: str | os.PathLike, *, sources: Iterable[str] = (), align: int = DEFAULT_ALIGN,
              threads: int | None = None, warn: Callable[[str], None] | None = None) -> Layout:
    """Write ``model`` to ``path`` as an ``.ort`` file; the layout written. ``sources``: more files the model
    was read from (the destination may be none of them). ``threads``: copy threads (default: up to 4)."""
    dst = os.fspath(path)
    srcs = set(sources) | _model_files(model)
    refuse_sources(dst, srcs)
    with no_cyclic_gc():  # through the encoding of the tables too (it runs while the payloads copy)
        return _write(model, dst, align, threads, warn)


def _write(model: Model, dst: str, align: int, threads: int | None, warn) -> Layout:
    lay = plan(model, align, warn)
    threads = max(1, threads if threads is not None else min(4, os.cpu_count() or 1))
    fds = SourceFds()
    try:
        with atomic_output(dst) as f:
            fd = f.fileno()
            os.ftruncate(fd, lay.size)  # the padding between payloads stays zeros
            reserve(fd, lay.size)
            _copy_payloads(fd, lay, fds, threads, lambda: _pwrite_all(fd, lay.head, 0))
    finally:
        fds.close()
    return lay


def _pwrite_all(fd: int, data, pos: int) -> None:
    view = memoryview(data)
    while view.nbytes:
        n = os.pwrite(fd, view, pos)
        view, pos = view[n:], pos + n


def _copy_payloads(fd: int, lay: Layout, fds: SourceFds, threads: int, meanwhile: Callable[[], None]) -> None:
    """Each payload's length prefix, then its bytes in fixed pieces, on ``threads`` threads; ``meanwhile``
    (encoding and writing the tables) runs on this thread while they copy."""
    jobs = []
    storages = {}
    for p in lay.payloads:
        _pwrite_all(fd, struct.pack("<I", p.length), p.pos - 4)
        if not p.length:
            continue
        src = p.source
        if isinstance(src, (bytes, bytearray)):
            _pwrite_all(fd, src, p.pos)
            continue
        storage, offset = src
        if offset < 0 or offset + p.length > storage.size:
            raise FormatError(Kind.MALFORMED, p.where, offset, f"range {offset}+{p.length} outside {storage.size} bytes")
        src_fd = fds.get(storage) if isinstance(storage, FileStorage) else None  # opened here: get() is not thread-safe
        storages[id(storage)] = storage
        for start in range(0, p.length, CHUNK):
            jobs.append((storage, src_fd, offset + start, p.pos + start, min(CHUNK, p.length - start)))
    stop = threading.Event()

    def copy(job) -> None:
        if stop.is_set():
            return
        storage, src_fd, src_off, dst_off, n = job
        if src_fd is None:
            storage.check()
            view = memoryview(storage.buffer())[src_off:src_off + n]
            _pwrite_all(fd, view, dst_off)
        else:
            _copy_range(src_fd, fd, src_off, dst_off, n, storage)
        start_writeback(fd, dst_off, dst_off + n)

    if threads == 1 or len(jobs) <= 1:
        meanwhile()
        for job in jobs:
            copy(job)
    else:
        pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ort-copy")
        try:
            futures = [pool.submit(copy, job) for job in jobs]
            meanwhile()
            for fut in futures:
                fut.result()
        finally:
            stop.set()  # Ctrl-C or a failed piece: the queued pieces do nothing
            pool.shutdown(wait=True, cancel_futures=True)
    for storage in storages.values():
        if isinstance(storage, FileStorage) and storage.changed():
            raise FormatError(Kind.IO, "file", None, f"{storage.path} changed on disk while it was copied")


def _copy_range(src: int, dst: int, src_off: int, dst_off: int, n: int, storage: FileStorage) -> None:
    done = 0
    use_cfr = hasattr(os, "copy_file_range")
    while done < n:
        if use_cfr:
            try:
                got = os.copy_file_range(src, dst, n - done, src_off + done, dst_off + done)
            except OSError:
                use_cfr = False
                continue
        else:
            chunk = os.pread(src, n - done, src_off + done)
            got = len(chunk)
            if got:
                _pwrite_all(dst, chunk, dst_off + done)
        if got == 0:
            raise FormatError(Kind.IO, "file", src_off + done, f"{storage.path} is shorter than when it was opened")
        done += got
