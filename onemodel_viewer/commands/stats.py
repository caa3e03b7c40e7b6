"""``onemodel-view --stats [--json] FILE``: the statistics of every tensor, for scripts and people.

The figures are the viewer's (:func:`~onemodel_viewer.analysis.stats.compute.compute_stats`, exact
histograms), computed by :func:`~onemodel_viewer.analysis.stats.batch.compute_stats_many`: the
small tensors side by side on the worker threads, the large ones one at a time over every thread.

``--json`` prints one JSON object per tensor and line, in the writer's order::

    {"where", "name", "dtype", "dims", "count", "finite", "nan", "posinf", "neginf", "zeros",
     "min", "max", "mean", "std", "histogram", "hist_range", "first"}

string tensors: ``{"where", "name", "dtype", "dims", "count", "min_len", "max_len", "total_len"}``.
A figure that does not exist (no finite value) is ``null``; a mean or std that overflowed float64
is the string ``"nan"`` or ``"inf"`` (JSON has no such numbers). Output is ASCII JSON
(``ensure_ascii``), so control characters from the file stay escaped. Without ``--json``: one line
per tensor (file-derived text through :func:`onemodel_viewer.textsafe.visible`).

Exit status: 0 every tensor done, 1 the file cannot be read (or changed during the run); the
message goes to stderr, never a traceback.
"""

from __future__ import annotations

import json
import math
import sys

from ..textsafe import visible

PROG = "onemodel-view"


def _fail(message: str) -> int:
    print(f"{PROG}: --stats: {visible(message)}", file=sys.stderr)
    return 1


def _number(v):
    """A figure as JSON: ints and finite floats as they are, non-finite floats as strings."""
    if isinstance(v, float) and not math.isfinite(v):
        return "nan" if v != v else ("inf" if v > 0 else "-inf")
    return v


def record(t, s) -> dict:
    """The JSON object of tensor ``t`` and its statistics ``s``."""
    from ..format.dtypes import name_of

    out = {"where": t.where, "name": t.name, "dtype": name_of(t.dtype), "dims": list(t.dims), "count": s.count}
    if t.is_string:
        out.update(min_len=s.min_len, max_len=s.max_len, total_len=s.total_len)
        return out
    out.update(finite=s.finite, nan=s.nan, posinf=s.posinf, neginf=s.neginf, zeros=s.zeros,
               min=_number(s.min), max=_number(s.max), mean=_number(s.mean), std=_number(s.std),
               histogram=list(s.histogram), hist_range=None if s.hist_range is None else list(s.hist_range),
               first=list(s.first))
    return out


def _fig(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return str(v)
    return f"{v:.6g}"


def _line(t, s) -> str:
    head = f"{visible(t.where)}  {visible(t.name)}  {t.type_str()}"
    if t.is_string:
        return f"{head}  strings {s.count}, length {_fig(s.min_len)}..{_fig(s.max_len)}, total {_fig(s.total_len)}"
    return (f"{head}  min {_fig(s.min)}  max {_fig(s.max)}  mean {_fig(s.mean)}  std {_fig(s.std)}  "
            f"nan {s.nan}  +inf {s.posinf}  -inf {s.neginf}  zeros {s.zeros}")


def run_stats(src: str, as_json: bool = False) -> int:
    from .. import format as omf
    from ..analysis.stats.batch import compute_stats_many
    from ..format.errors import FormatError
    from ..format.schema import all_tensors

    try:
        doc = omf.open(src)
    except (FormatError, OSError) as e:
        return _fail(f"{src}: {e}")
    with doc:
        tensors = list(all_tensors(doc.model))
        try:
            results = compute_stats_many(tensors)
        except FormatError as e:
            return _fail(f"{src}: {e}")
        for t, s in zip(tensors, results):
            print(json.dumps(record(t, s), ensure_ascii=True) if as_json else _line(t, s))
        return 0
