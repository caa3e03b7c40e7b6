"""The compiled kernels (``ckernels``, built from ``ckernels.c`` by ``pip install``), or ``None``.

:data:`KERNELS` is the compiled module when it was built and may be used, else ``None``: the
callers (analysis/stats, analysis/diff, format/depsort) then run their numpy code, which is also the tests' reference. The
environment variable ``ONEMODEL_VIEW_NO_KERNELS=1`` forces the numpy code; a missing module (a
source install without a compiler) says so in one line on stderr, once per process.

Every kernel reads one contiguous block, releases the GIL and sums in a fixed order; the callers
cut tensors into a fixed grid of blocks and merge them in block order, so the figures are the
same bits for any thread count and chunk size. :func:`kind` maps a numpy dtype to the element
kind the kernels take (``None``: not supported, use numpy).
"""

from __future__ import annotations

import os
import sys
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

ENV = "ONEMODEL_VIEW_NO_KERNELS"
"""Set to a non-empty value other than ``0``: use the numpy code even where the kernels are built."""

F16, BF16, F32, F64 = 0, 1, 2, 3
_INTS = {("i", 1): 4, ("u", 1): 5, ("i", 2): 6, ("u", 2): 7, ("i", 4): 8, ("u", 4): 9, ("i", 8): 10, ("u", 8): 11}


def load() -> ModuleType | None:
    """The compiled module, or ``None`` (disabled by :data:`ENV`, or not built: one line on stderr)."""
    if os.environ.get(ENV, "") not in ("", "0"):
        return None
    try:
        from . import ckernels
    except ImportError as e:
        print(f"onemodel-view: compiled kernels not available ({e}); using the slower numpy code", file=sys.stderr)
        return None
    return ckernels


KERNELS = load()


def kind(dtype: "np.dtype") -> int | None:
    """The kernels' element kind of a numpy dtype (native byte order), or ``None``."""
    if not dtype.isnative:
        return None
    if dtype.kind == "f":
        return {2: F16, 4: F32, 8: F64}.get(dtype.itemsize)
    if dtype.kind in "iu":
        return _INTS.get((dtype.kind, dtype.itemsize))
    if dtype.name == "bfloat16":
        return BF16
    return None
