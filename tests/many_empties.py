"""Valid OneModel files with many zero-length tensors away from offset 0 (issue 11, points 5 and 6).

Built with the project's writer: :func:`writer.plan` places the one real tensor, the empty
ones are then moved to ``at`` (the writer itself always puts them at offset 0) and the manifest
is encoded with :func:`writer.encode_manifest` behind :func:`writer.header_bytes`. The reader
accepts such a file (an empty tensor may sit anywhere in ``[0, data_length]``); 100,000 empty
tensors make a ~7 MB file.

``python tests/many_empties.py OUT N [inside|end]`` writes one (for timing scripts).
"""

from __future__ import annotations

import os
import sys
from dataclasses import replace

from onemodel_viewer.format.onemodel import writer
from onemodel_viewer.format.schema import Graph, Model, OperatorSet, Tensor
from onemodel_viewer.format.storage import BytesStorage

WEIGHT = 128
"""Bytes of the one real tensor ``w`` (uint8, at data offset 0)."""
INSIDE = 64
"""Data offset of the empty tensors for ``at="inside"``: inside ``w``, 64-aligned."""


def empties_model(n: int, at: str = "inside") -> Model:
    """``w`` (128 bytes) and ``n`` float tensors of dims [0] at data offset 64 (inside ``w``) or 128 (the data end)."""
    data = bytes(range(WEIGHT))
    w = Tensor("w", 2, (WEIGHT,), file_offset=0, length=WEIGHT, storage=BytesStorage(data))
    empties = tuple(Tensor(f"e{i}", 1, (0,)) for i in range(n))
    m = Model(8, Graph(name="g", initializers=(w, *empties)), opsets=(OperatorSet("", 17),))
    planned = writer.plan(m)
    offset = {"inside": INSIDE, "end": WEIGHT}[at]
    g = planned.graph
    moved = (g.initializers[0], *(replace(t, offset=offset) for t in g.initializers[1:]))
    return replace(planned, graph=replace(g, initializers=moved))


def empties_bytes(n: int, at: str = "inside") -> bytes:
    """The file of :func:`empties_model` (header, manifest, zero padding, ``w``'s bytes)."""
    m = empties_model(n, at)
    manifest = writer.encode_manifest(m)
    head = writer.header_bytes(len(manifest), WEIGHT)
    pad = bytes(-(len(head) + len(manifest)) % 64)
    return head + manifest + pad + bytes(range(WEIGHT))


def write_empties(path, n: int, at: str = "inside") -> str:
    with open(path, "wb") as f:
        f.write(empties_bytes(n, at))
    return os.fspath(path)


if __name__ == "__main__":  # pragma: no cover - a helper for timing scripts
    write_empties(sys.argv[1], int(sys.argv[2]), sys.argv[3] if len(sys.argv) > 3 else "inside")
