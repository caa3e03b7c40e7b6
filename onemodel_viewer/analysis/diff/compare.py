"""Compare two opened models: what was added, removed or changed (issues #5, #17).

``diff(doc_a, doc_b)`` runs in two stages, which a viewer can show one after the other
(:class:`StagedDiff`):

1. :func:`~.diff_structure.match_models`: the whole side-by-side tree, every structural
   difference, string tensors; tensor pairs of one dtype and shape are left pending;
2. :func:`~.diff_tensors.compare_tensors`: their values, on a few threads; each changed
   tensor gets a ``.data`` difference whose ``detail`` says how many elements differ, the
   first one (index, byte, file offset) and how much the values moved (``rel_l2``,
   ``cosine``, ``mean_abs``, ``max_abs``, ``max_rel``, ``nonfinite``: see
   :mod:`.diff_tensors`).

Documents opened in diagnose mode are compared on their sound parts: a tensor pair whose bytes
one side cannot give is listed in :attr:`DiffResult.not_compared` with each side's reason (the
file's problem about it: kind, ``where``, offset), never read (:mod:`.diff_skip`).

Differences come out in the order of the walk, whatever order the tensors finish in.
:attr:`DiffResult.totals` sums the float tensors: how many changed, and ``rel_l2`` over
every float weight of the model (‖b − a‖₂ / ‖a‖₂ with all of them as one vector).

This module never imports a UI toolkit. Cancellation is a plain ``threading.Event``.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Callable

from ...format.document import Document
from ...format.errors import Finding, FormatError, Problem
from ...format.dtypes import DTYPES
from ...format.schema import Model, Tensor
from .result import (
    ADDED,
    CHANGED,
    EQUAL,
    REMOVED,
    DiffCancelled,
    Difference,
    DiffNode,
    DiffResult,
    NotCompared,
    json_number,
)
from .structure import Structure, match_models, unravel
from .tensors import CHUNK, THREADS, DataDelta, compare_tensors, tensor_norms
from ..floatbits import format_f32

__all__ = ["ADDED", "REMOVED", "CHANGED", "EQUAL", "CHUNK", "Difference", "DiffNode", "DiffResult",
           "DiffCancelled", "NotCompared", "StagedDiff", "diff", "diff_models", "format_f32"]


def _equivalences_of(doc_a: Document, doc_b: Document, compared_bytes: int) -> list[str]:
    """Equivalences that come from the files' formats rather than from their models."""
    extra: list[str] = []
    sources = {doc_a.source, doc_b.source}
    if "onnx" in sources and compared_bytes:
        extra.append("ONNX tensor payloads (typed fields or raw_data) are compared as raw bytes")
    if doc_a.external_files or doc_b.external_files:
        extra.append("ONNX external data is compared in place, as the bytes a data region would hold")
    return extra


class StagedDiff:
    """A diff in two stages: :meth:`structure` at once, then :meth:`compare_data` fills in tensor values.

    Between the two, tensor entries waiting for their values have ``pending`` set. While
    :meth:`compare_data` runs, each finished tensor's entry (and its ancestors) gets its final
    status and ``.data`` difference *before* ``on_tensor(node)`` is called, in the calling
    thread.
    """

    def __init__(self, ma: Model, mb: Model, *, cancel: threading.Event | None = None,
                 paths: tuple[str | None, str | None] = (None, None), extra: Callable[[int], list[str]] | None = None,
                 problems: tuple[list[Problem], list[Problem]] = ([], []),
                 findings: tuple[list[Finding], list[Finding]] = ([], []), whole_tree: bool = True):
        self.paths = paths
        self._extra = extra
        self._s: Structure = match_models(ma, mb, cancel=cancel, problems=problems, findings=findings,
                                          whole_tree=whole_tree)
        self.total_bytes = sum(min(j.a.length, j.b.length) for j in self._s.jobs)
        """Tensor bytes the second stage compares (per side)."""
        self._data: dict[int, Difference] = {}  # job index -> its data difference
        self._deltas: list[DataDelta | None] = []
        self._result: DiffResult | None = None

    @property
    def pairs(self) -> list[tuple[Tensor, Tensor]]:
        """The tensor pairs (A, B) the second stage compares, in walk order."""
        return [(j.a, j.b) for j in self._s.jobs]

    @property
    def pending(self) -> int:
        """Tensor pairs whose values are not compared yet."""
        return sum(1 for j in self._s.jobs if j.node.pending)

    def structure(self) -> DiffResult:
        """The result so far: every structural difference; tensor values not compared yet."""
        s = self._s
        equiv = s.equivalences + (self._extra(0) if self._extra else [])
        return DiffResult(not s.differences and not s.jobs, list(s.differences), equiv, s.root, 0,
                          not_compared=list(s.not_compared))

    def compare_data(self, *, cancel: threading.Event | None = None, progress: Callable[[int, int], None] | None = None,
                     on_tensor: Callable[[DiffNode], None] | None = None, threads: int = THREADS) -> DiffResult:
        """Compare every pending tensor pair; the final result."""
        if self._result is not None:
            return self._result
        jobs = self._s.jobs

        def done(i: int, delta: DataDelta | None) -> None:
            job = jobs[i]
            job.node.pending = False
            if delta is not None:
                d = self._difference(job.node, job.a, job.b, delta)
                self._data[i] = d
                job.node.differences.append(d)
                n: DiffNode | None = job.node
                while n is not None and n.status == EQUAL:
                    n.status = CHANGED
                    n = n.parent
            if on_tensor is not None:
                on_tensor(job.node)

        self._deltas = compare_tensors(self.pairs, threads=threads, cancel=cancel, progress=progress,
                                       on_done=done)
        differences = self._merged()
        totals = self._totals(cancel, threads)
        if progress is not None:
            progress(self.total_bytes, self.total_bytes)
        equiv = self._s.equivalences + (self._extra(self.total_bytes) if self._extra else [])
        self._result = DiffResult(not differences, differences, equiv, self._s.root, self.total_bytes, totals,
                                  list(self._s.not_compared))
        return self._result

    def _merged(self) -> list[Difference]:
        """Structural and data differences in walk order."""
        out: list[Difference] = []
        structural = self._s.differences
        k = 0
        for i, job in enumerate(self._s.jobs):
            if i in self._data:
                out.extend(structural[k : job.position])
                k = max(k, job.position)
                out.append(self._data[i])
        out.extend(structural[k:])
        return out

    def _totals(self, cancel: threading.Event | None, threads: int) -> dict[str, Any] | None:
        """Whole-model figures over the float tensors (``None`` when none of them changed)."""
        floats = [(j, d) for j, d in zip(self._s.jobs, self._deltas) if _is_float(j.a)]
        if not floats:
            return None
        changed = [(j, d) for j, d in floats if d is not None]
        if not changed:
            return None
        aa = sum(d.sum_aa for _, d in changed)
        dd = sum(d.sum_dd for _, d in changed)
        aa += sum(  # the unchanged weights count in ‖a‖ too
            tensor_norms([j.a for j, d in floats if d is None], threads=threads, cancel=cancel))
        rel = math.sqrt(dd) / math.sqrt(aa) if aa > 0 else (0.0 if dd == 0 else math.inf)
        return {"float_tensors": len(floats), "changed_tensors": len(changed),
                "changed_elements": sum(d.differing for _, d in changed),
                "elements": sum(j.a.count for j, _ in floats), "rel_l2": json_number(rel)}

    def _difference(self, node: DiffNode, a: Tensor, b: Tensor, delta: DataDelta) -> Difference:
        info = DTYPES[a.dtype]
        index = unravel(delta.first, a.dims) if a.dims else []
        byte = delta.first * info.bits // 8
        detail: dict[str, Any] = {"differing": delta.differing, "count": delta.count, "first_index": index,
                                  "first_byte": byte}
        detail.update((k, v) for k, v in delta.metrics().items() if k not in detail)
        for side, t, own in (("a", a, self.paths[0]), ("b", b, self.paths[1])):
            # a file offset only where the bytes are a file's (not ONNX raw_data held in memory)
            path = getattr(t.storage, "path", None)
            if t.file_offset is not None and path is not None:
                detail[side + "_offset"] = t.file_offset + byte
                if own is None or os.path.abspath(path) != os.path.abspath(own):
                    detail[side + "_file"] = path
        return Difference(node.where + ".data", CHANGED, delta.a_first, delta.b_first, detail, a, b)


def _is_float(t: Tensor) -> bool:
    info = DTYPES.get(t.dtype)
    return info is not None and info.is_float


def diff_models(
    ma: Model,
    mb: Model,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    paths: tuple[str | None, str | None] = (None, None),
    threads: int = THREADS,
) -> DiffResult:
    """Compare two models (see the module docstring).

    ``paths`` (the files the models came from) only decide whether a data
    difference's file offset needs the name of the file it is in (``a_file``:
    ONNX external data).
    """
    return StagedDiff(ma, mb, cancel=cancel, paths=paths).compare_data(cancel=cancel, progress=progress, threads=threads)


def staged(doc_a: Document, doc_b: Document, *, cancel: threading.Event | None = None,
           whole_tree: bool = True) -> StagedDiff:
    """The two-stage diff of two opened documents (OneModel or ONNX, in any combination).

    Documents opened in diagnose mode are compared on what they could read (their problems say why a
    tensor's bytes are not compared); a document without any model raises its first problem.
    ``whole_tree=False``: nodes identical in both are left out of the tree (a caller without a viewer).
    """
    for doc in (doc_a, doc_b):
        if doc.model is None:
            if doc.problems:
                raise FormatError.from_problem(doc.problems[0])
            raise ValueError(f"{doc.path}: the document has no model")
    ma, mb, ort = doc_a.model, doc_b.model, []
    if "ort" in (doc_a.source, doc_b.source):  # what ONNX Runtime's converter changes without changing the model
        from .ort_equiv import normalize

        ma, mb, ort = normalize(doc_a, doc_b)
    return StagedDiff(ma, mb, cancel=cancel, paths=(doc_a.path, doc_b.path),
                      extra=lambda compared: list(ort) + _equivalences_of(doc_a, doc_b, compared),
                      problems=(doc_a.problems, doc_b.problems), findings=(doc_a.findings, doc_b.findings),
                      whole_tree=whole_tree)


def diff(
    doc_a: Document,
    doc_b: Document,
    *,
    cancel: threading.Event | None = None,
    progress: Callable[[int, int], None] | None = None,
    threads: int = THREADS,
) -> DiffResult:
    """Compare two opened documents (OneModel or ONNX, in any combination)."""
    return staged(doc_a, doc_b, cancel=cancel).compare_data(cancel=cancel, progress=progress, threads=threads)
