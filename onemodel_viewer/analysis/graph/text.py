"""Plain-text figures of outline rows, shared by the viewer's outline screen and the DOT writer.

Returns plain ``str`` holding strings from the file as they are: the caller makes them visible
(``textsafe.visible``, the viewer's ``safe_text``) or escapes them (:mod:`.dot`). No UI here.
"""

from __future__ import annotations

from .rows import Row

__all__ = ["count_text", "size_text", "ops_text", "figures_text", "fold_text", "common_member"]


def count_text(n: int) -> str:
    """``7.1 M``, ``12 k``, ``950``: a parameter count for people."""
    for unit, scale in (("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= scale:
            v = n / scale
            return f"{v:.1f} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return str(n)


def size_text(n: int) -> str:
    """Bytes as ``4.8 MiB``."""
    v = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if v < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{v:.1f} {unit}"
        v /= 1024
    return f"{n} B"  # pragma: no cover


def ops_text(ops: dict[str, int], top: int = 3) -> str:
    """The ``top`` most run ops: ``MatMul×8, Add×4 +3 more``."""
    items = sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))
    text = ", ".join(f"{op}×{n}" for op, n in items[:top])
    return text + (f" +{len(items) - top} more" if len(items) > top else "")


def figures_text(row: Row) -> str:
    """``12 nodes · 7.1 M params · 27.0 MiB`` (params left out when there are none)."""
    text = f"{row.count:,} node{'s' if row.count != 1 else ''}"
    if row.params or row.bytes:
        text += f" · {count_text(row.params)} params · {size_text(row.bytes)}"
    return text


def common_member(row: Row) -> Row:
    """A ``fold`` row's first member that does not differ (the block the others repeat)."""
    return next((m for k, m in enumerate(row.members) if k not in row.odd), row.members[0])


def fold_text(row: Row) -> str:
    """``24 × block (12 nodes, 7.1 M params each)`` for a ``fold`` row, ``· 1 differs`` when one does."""
    m = common_member(row)
    each = f"{m.count:,} node{'s' if m.count != 1 else ''}"
    if m.params:
        each += f", {count_text(m.params)} params"
    text = f"{len(row.members)} × block ({each} each)"
    if row.odd:
        text += f" · {len(row.odd)} differ{'s' if len(row.odd) == 1 else ''}"
    return text
