"""The diff viewer's detail lines: what each side holds for an entry, and each difference.

Pure functions of the diff result (rich Text, names made visible); the app shows them in its
:class:`~.detail_pane.DetailPane`.
"""

from __future__ import annotations

from typing import Any, Callable

from rich.text import Text

from ...analysis.diff.compare import EQUAL, DiffNode, Difference
from ...format.schema import Node, SparseTensor, Tensor, ValueInfo
from .tree import MARKERS, describe
from ..widgets.safe import human_size, safe_text


def value_text(v: Any) -> str:
    import json

    if v is None:
        return "—"
    if isinstance(v, str):
        return v
    return json.dumps(v, ensure_ascii=False)


def record_lines(side: str, rec: Any) -> list[Text]:
    """What one side holds for the selected entry."""
    head = Text(f"{side}  ", style="bold")
    if rec is None:
        return [head + Text("(absent)", style="dim")]
    if isinstance(rec, Node):
        t = head + safe_text(rec.op) + Text("  ") + safe_text(rec.name or "(unnamed)", style="dim")
        lines = [t]
        lines.append(Text("    in   ") + safe_text(", ".join(rec.inputs) or "—"))
        lines.append(Text("    out  ") + safe_text(", ".join(rec.outputs) or "—"))
        return lines
    if isinstance(rec, Tensor):
        t = head + safe_text(rec.name or "(unnamed)") + Text("  " + rec.type_str())
        if rec.file_offset is not None and not rec.is_string:
            t.append(f"  {human_size(rec.length)} @0x{rec.file_offset:x}", style="dim")
        return [t]
    if isinstance(rec, SparseTensor):
        return [head + safe_text(rec.name or "(unnamed)") + Text("  sparse " + rec.values.type_str())]
    if isinstance(rec, ValueInfo):
        return [head + safe_text(rec.name) + Text("  " + (str(rec.type) if rec.type is not None else "?"))]
    return [head + safe_text(describe(DiffNode("", "", EQUAL, rec, rec)) or type(rec).__name__)]


def not_compared_lines(dn: DiffNode) -> list[Text]:
    """Why the selected tensor's values were not compared: each side's problem (kind, where, offset)."""
    nc = dn.not_compared
    if nc is None:
        return []
    out = [Text("values not compared: the bytes of this tensor cannot be read", style="magenta")]
    for side, why in (("A", nc.a), ("B", nc.b)):
        if why is None:
            continue
        at = f" (offset {why.offset})" if why.offset is not None else ""
        out.append(Text(f"    {side}  ", style="bold") + safe_text(f"{why.kind.value} at {why.where}{at}: {why.message}",
                                                              limit=300))
    return out


def difference_lines(dn: DiffNode, d: Difference, histogram: Callable[[DiffNode], list[tuple[Text, Any]]]
                     ) -> list[tuple[Text, Any]]:
    """The lines of one difference of ``dn``: both values, and for tensor data the counts, metrics and
    ``histogram(dn)`` (the b − a line)."""
    suffix = d.where[len(dn.where):] if d.where.startswith(dn.where) else d.where
    mark, style = MARKERS.get(d.change, ("?", ""))
    head = Text(f"{mark} ", style=style + " bold") + safe_text(suffix or "(value)", limit=120)
    head.append(f"  {d.change}", style=style)
    out: list[tuple[Text, Any]] = [(head, None)]
    out.append((Text("    A  ", style="bold") + safe_text(value_text(d.a), limit=200), None))
    out.append((Text("    B  ", style="bold") + safe_text(value_text(d.b), limit=200), None))
    det = d.detail or {}
    if "differing" in det:
        t = Text(f"    {det['differing']:,}" + (f" of {det['count']:,}" if "count" in det else "") + " elements differ")
        if "first_index" in det:
            t.append("; first at [" + ",".join(map(str, det["first_index"])) + "]")
        for k in ("max_abs", "max_rel"):
            if k in det:
                v = det[k]
                t.append(f"; {k.replace('_', ' ')} " + (f"{v:.6g}" if isinstance(v, float) else str(v)))
        out.append((t, None))
        if "rel_l2" in det:
            m = Text("    rel_l2 ", style="bold") + Text(num(det["rel_l2"]))
            for k, label in (("cosine", "cosine"), ("mean_abs", "mean |b−a|")):
                m.append(f"   {label} ", style="bold")
                m.append(num(det[k], ".9g" if k == "cosine" else ".6g"))
            if det.get("nonfinite"):
                m.append(f"   {det['nonfinite']:,} non-finite pairs (left out)", style="magenta")
            out.append((m, None))
            out.extend(histogram(dn))
    elif det.get("order"):
        out.append((Text("    same entries, different order"), None))
    return out


def histogram_lines(dn: DiffNode, h: Any) -> list[tuple[Text, Any]]:
    """b − a as a one-line histogram: ``h`` is ``"pending"``, None (none to draw) or (counts, lo, hi, pairs)."""
    if isinstance(h, str):
        return [(Text("    b − a  counting…", style="dim"), None)]
    if h is None:
        return []
    counts, lo, hi, n = h
    top = max(int(counts.max()), 1)
    blocks = " ▁▂▃▄▅▆▇█"
    spark = "".join(blocks[0 if c == 0 else max(1, round(8 * c / top))] for c in counts)
    t = Text("    b − a  ", style="bold") + Text(f"{lo:.3g} ", style="dim") + Text(spark, style="cyan")
    t.append(f" {hi:.3g}", style="dim")
    t.append(f"   ({n:,} pairs{'' if n >= dn.a.count else ', evenly spaced sample'})", style="dim")
    return [(t, None)]


def num(v: Any, fmt: str = ".6g") -> str:
    if v is None:
        return "—"
    return format(v, fmt) if isinstance(v, (int, float)) else str(v)
