"""Tensor comparisons begun before the structure is matched, for a caller with nothing to show meanwhile.

``--diff --json`` / ``--summary`` print nothing until the end: the tensor bytes can be compared on the
worker threads (numpy, outside the GIL) while the structure is matched in Python. The pairs are guessed
before the matching: the top-level initializers of one name, dtype and dims in both models whose bytes
are all there (:func:`.diff_skip.bytes_problem`). :meth:`EarlyComparison.take` hands over the results
of the pairs the matching then asks for, by identity; anything else (a guess the matching did not
make, a failure, a file changed on disk) is left to the comparison proper, which reports it.
"""

from __future__ import annotations

import threading
from typing import Sequence

from ..format.dtypes import STRING
from ..format.schema import Model, Tensor
from .diff_skip import bytes_problem
from .diff_tensors import DataDelta, compare_tensors

__all__ = ["EarlyComparison"]


def _guessed_pairs(ma: Model, mb: Model) -> list[tuple[Tensor, Tensor]]:
    """Initializers of one name, dtype and dims in both graphs, with all their bytes; none when a name is
    empty or repeated (the matching then pairs initializers by position: the guesses would be wasted)."""
    ia = {t.name: t for t in ma.graph.initializers}
    ib = {t.name: t for t in mb.graph.initializers}
    if "" in ia or "" in ib or len(ia) < len(ma.graph.initializers) or len(ib) < len(mb.graph.initializers):
        return []
    out = []
    for name, a in ia.items():
        b = ib.get(name)
        if (b is not None and a.dtype == b.dtype and a.dtype != STRING and tuple(a.dims) == tuple(b.dims)
                and bytes_problem(a) is None and bytes_problem(b) is None):
            out.append((a, b))
    return out


class EarlyComparison:
    """The comparison of the guessed pairs, running on its own threads from construction on."""

    def __init__(self, ma: Model, mb: Model, threads: int) -> None:
        self._pairs = _guessed_pairs(ma, mb)
        self._index = {(id(a), id(b)): k for k, (a, b) in enumerate(self._pairs)}
        self._deltas: list[DataDelta | None] | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(threads,), name="omv-diff-early", daemon=True)
        self._thread.start()

    def _run(self, threads: int) -> None:
        try:
            self._deltas = compare_tensors(self._pairs, threads=threads, cancel=self._stop)
        except Exception:  # noqa: BLE001 - the comparison proper compares these pairs again and reports it
            self._deltas = None

    def take(self, pairs: Sequence[tuple[Tensor, Tensor]]) -> dict[int, DataDelta | None]:
        """Wait for the early comparison; the results of those of ``pairs`` it compared, by index."""
        self._thread.join()
        deltas = self._deltas
        if deltas is None:
            return {}
        out = {}
        for i, (a, b) in enumerate(pairs):
            k = self._index.get((id(a), id(b)))
            if k is not None:
                out[i] = deltas[k]
        return out

    def cancel(self) -> None:
        """Stop it (between chunks) and wait."""
        self._stop.set()
        self._thread.join()
