"""A tensor to a ``.npy`` file: the viewer's export key and ``onemodel-view --extract``. No UI here.

numpy's ``.npy`` has no type for bfloat16, the float8/float6/float4 formats or 4/2-bit integers
(``np.save`` of an ml_dtypes array writes opaque ``V`` records that load as bytes). So:

* numpy types: saved as they are (little endian), values equal to ``Tensor.values()``;
* int4/uint4/int2/uint2: saved widened to int8/uint8 (the same values);
* bfloat16, float8*, float6*, float4: saved as their raw bits (uint16 / uint8, one element per
  item): ``np.load(p).view(ml_dtypes.bfloat16)`` gives the values back;
* strings: fixed-width bytes (``S``), unless an element ends with a NUL byte (numpy would drop
  it): then they are refused.

The file is written next to the destination under a temporary name and renamed at the end;
the source file is never the destination.
"""

from __future__ import annotations

import os
import tempfile
import threading

import numpy as np

from ..format.schema import Tensor

__all__ = ["ExportError", "npy_array", "export_npy"]


class ExportError(Exception):
    """Why a tensor could not be written (message for people)."""


_ML_BITS = {"bfloat16": "<u2"}


def npy_array(t: Tensor) -> tuple[np.ndarray, str]:
    """The array written for ``t`` and a note saying how exotic types were stored ("" for none)."""
    if t.is_string:
        strings = list(t.strings or ())
        if len(strings) != t.count:
            raise ExportError(f"{len(strings)} strings for {t.count} elements")
        if any(s.endswith(b"\0") for s in strings):
            raise ExportError("a string ends with a NUL byte, which .npy fixed-width bytes would drop")
        arr = np.array(strings, dtype=np.bytes_) if strings else np.zeros(0, dtype="S1")
        return arr.reshape(t.dims), "strings saved as fixed-width bytes (dtype S)"
    info = t.info
    if info is None:
        raise ExportError(f"unknown dtype {t.dtype}")
    try:
        vals = t.values()
    except Exception as e:  # FormatError: bytes out of range, wrong length...
        raise ExportError(str(e)) from e
    name = info.numpy_name or ""
    if not name.startswith("ml_dtypes."):
        return vals, ""
    if info.name in ("int4", "int2"):
        return vals.astype(np.int8), f"{info.name} saved as int8 values"
    if info.name in ("uint4", "uint2"):
        return vals.astype(np.uint8), f"{info.name} saved as uint8 values"
    ml = name.split(".", 1)[1]
    if info.bits >= 8:
        bits = _ML_BITS.get(info.name, "<u1" if info.bits == 8 else f"<u{info.bits // 8}")
        return vals.view(bits), (f"{info.name} has no .npy type: saved its raw bits as {np.dtype(bits).name}; "
                                 f"np.load(path).view(ml_dtypes.{ml}) gives the values")
    return vals.view(np.uint8), (f"{info.name} has no .npy type: saved its raw bits as uint8 (one element each); "
                                 f"np.load(path).view(ml_dtypes.{ml}) gives the values")


def export_npy(t: Tensor, dest: str, *, source: str | None = None, cancel: threading.Event | None = None) -> str:
    """Write ``t`` to ``dest`` (atomically); returns the note of :func:`npy_array`.

    Raises :class:`ExportError` (refused: destination is the source file or a folder, exotic
    strings, unreadable bytes) or ``OSError``.
    """
    dest = os.path.abspath(os.path.expanduser(dest))
    if os.path.isdir(dest):
        raise ExportError("the destination is a folder")
    if source is not None and os.path.exists(dest) and os.path.samefile(dest, source):
        raise ExportError("the destination is the model file itself")
    arr, note = npy_array(t)
    folder = os.path.dirname(dest) or "."
    fd, tmp = tempfile.mkstemp(prefix=".omv-", suffix=".npy.tmp", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)
            f.flush()
            os.fsync(f.fileno())
        if cancel is not None and cancel.is_set():
            raise ExportError("cancelled")
        os.replace(tmp, dest)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    return note
