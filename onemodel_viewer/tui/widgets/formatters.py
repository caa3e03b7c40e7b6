"""Rich text for model records: attribute values, float bits, tensor summaries, tree labels.

Pure (no Textual). Shared by the structure tree's entries (:mod:`.entries`) and the detail
pane (:mod:`.describe`); everything from the file goes through :func:`safe_text`. The float32
text itself is :func:`onemodel_viewer.analysis.floatbits.float32_text` (also behind the diff's
JSON): :func:`float_bits_text` only styles it.
"""

from __future__ import annotations

from typing import Any, Iterable

from rich.text import Text

from ...analysis.floatbits import float32_text
from ...format.dtypes import AttrType
from ...format.schema import Attribute, Graph, Node, SparseTensor, Tensor, ValueInfo
from .safe import human_size, safe_text

__all__ = [
    "attr_type_name", "attribute_value_text", "count_label", "float_bits_text", "graph_label", "join_texts",
    "node_label", "tensor_label", "tensor_summary", "value_label",
]


def float_bits_text(bits: int) -> Text:
    """A FLOAT attribute: the value, and the bit pattern when it matters (NaN payload, -0.0, subnormal)."""
    value, note = float32_text(bits)
    special = note and not note.startswith("subnormal")
    t = Text(value, style="magenta" if special else "")
    if note:
        t.append(f" ({note})", style="dim")
    return t


def join_texts(items: Iterable[Text], limit: int) -> Text:
    """``[a, b, …]``, cut after about ``limit`` characters."""
    out = Text("[")
    for i, it in enumerate(items):
        if i:
            out.append(", ")
        out.append_text(it)
        if len(out) > limit:
            out.append(" …")
            break
    out.append("]")
    return out


def attr_type_name(code: int) -> str:
    """``FLOAT``, ``GRAPHS``... for an attribute type code (``type 99`` for an unknown one)."""
    try:
        return AttrType(code).name
    except ValueError:
        return f"type {code}"


def attribute_value_text(a: Attribute, limit: int = 200) -> Text:
    """One attribute's value, decoded, bounded to about ``limit`` characters."""
    if a.ref:
        t = Text("→ @", style="magenta")
        t.append_text(safe_text(a.ref, limit=60))
        t.append(f" ({attr_type_name(a.type)})", style="dim")
        return t
    v = a.value
    ty = a.type
    if ty == AttrType.FLOAT and isinstance(v, int):
        return float_bits_text(v)
    if ty == AttrType.INT:
        return Text(str(v))
    if ty == AttrType.STRING and isinstance(v, bytes):
        t = Text('"')
        t.append_text(safe_text(v, limit=limit))
        t.append('"')
        return t
    if ty == AttrType.FLOATS and isinstance(v, tuple):
        return join_texts((float_bits_text(b) for b in v), limit)
    if ty == AttrType.INTS and isinstance(v, tuple):
        return join_texts((Text(str(x)) for x in v), limit)
    if ty == AttrType.STRINGS and isinstance(v, tuple):
        return join_texts((Text('"') + safe_text(s, limit=60) + Text('"') for s in v), limit)
    if ty == AttrType.TENSOR and isinstance(v, Tensor):
        return tensor_summary(v)
    if ty == AttrType.TENSORS and isinstance(v, tuple):
        return Text(f"{len(v)} tensors")
    if ty == AttrType.GRAPH and isinstance(v, Graph):
        t = Text("graph ")
        t.append_text(safe_text(v.name or "(unnamed)", limit=60))
        t.append(f" ({len(v.nodes):,} nodes)", style="dim")
        return t
    if ty == AttrType.GRAPHS and isinstance(v, tuple):
        return Text(f"{len(v)} graphs")
    if ty == AttrType.SPARSE_TENSOR and isinstance(v, SparseTensor):
        return Text("sparse ") + tensor_summary(v.values)
    if ty == AttrType.SPARSE_TENSORS and isinstance(v, tuple):
        return Text(f"{len(v)} sparse tensors")
    if ty in (AttrType.TYPE_PROTO,):
        return Text(str(v), style="cyan")
    if ty == AttrType.TYPE_PROTOS and isinstance(v, tuple):
        return join_texts((Text(str(x), style="cyan") for x in v), limit)
    return Text(f"type {ty}: {v!r}"[:limit], style="dim")


def tensor_summary(t: Tensor) -> Text:
    """``float32[4,4] 64 B @0x1c0``: type, size and file offset."""
    out = Text(t.type_str(), style="cyan")
    if t.is_string:
        out.append(f" {len(t.strings or ())} strings", style="dim")
    else:
        out.append(f" {human_size(t.length)}", style="dim")
        if t.file_offset is not None:
            out.append(f" @0x{t.file_offset:x}", style="dim")
    return out


# ----------------------------------------------------------------------------- tree labels

def _dim(text: str) -> Text:
    return Text(text, style="dim")


def tensor_label(t: Tensor, prefix: str = "") -> Text:
    lab = Text()
    if prefix:
        lab.append(prefix, style="dim")
    lab.append_text(safe_text(t.name or "(unnamed)", style="bold", limit=60))
    lab.append(" ")
    lab.append(t.type_str(), style="cyan")
    if t.is_string:
        lab.append_text(_dim(f" {len(t.strings or ())} strings"))
    else:
        lab.append_text(_dim(f" {human_size(t.length)}"))
    return lab


def value_label(v: ValueInfo) -> Text:
    lab = safe_text(v.name or "(unnamed)", limit=60)
    lab.append(" ")
    lab.append(str(v.type) if v.type is not None else "?", style="cyan")
    return lab


def node_label(n: Node, types: dict[str, Any] | None = None) -> Text:
    lab = Text()
    lab.append_text(safe_text(n.op, style="bold", limit=40))
    if n.domain and n.domain != "ai.onnx":
        lab.append_text(_dim(" ("))
        lab.append_text(safe_text(n.domain, style="dim", limit=30))
        lab.append_text(_dim(")"))
    outs = [o for o in n.outputs if o]
    if n.name:
        lab.append(" ")
        lab.append_text(safe_text(n.name, limit=50))
    elif outs:  # an unnamed node is told apart by what it makes: ``Constant → conv2d_10.w_0``
        lab.append(" → ", style="dim")
        lab.append_text(safe_text(outs[0], limit=50))
    if outs and types is not None:
        t = types.get(outs[0])
        if t is not None:
            lab.append(" → " if n.name else " ", style="dim")
            lab.append(str(t), style="cyan")
    ng = sum(len(a.graphs()) for a in n.attributes)
    if ng:
        lab.append_text(_dim(f" ({ng} graph{'s' if ng != 1 else ''})"))
    return lab


def graph_label(g: Graph, prefix: str = "graph") -> Text:
    lab = Text()
    lab.append(prefix + " ", style="bold")
    lab.append_text(safe_text(g.name or "(unnamed)", limit=60))
    lab.append_text(_dim(f"  {len(g.nodes):,} nodes"))
    return lab


def count_label(name: str, n: int) -> Text:
    """``name (n)`` with the count dim."""
    lab = Text(name)
    lab.append(f" ({n:,})", style="dim")
    return lab
