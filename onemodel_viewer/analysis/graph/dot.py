"""The outline drawn as a Graphviz DOT graph, at a chosen scope depth.

At depth N every row N levels down (or a node or a folded run of blocks above that) is one box; at
``full`` depth every node of the main graph is a box and nothing is folded. Boxes carry the op, the
name and the output types (a node), or the scope's figures (a scope; ``24 ×`` for a folded run);
an edge joins two boxes when a value written in one is read in the other, labelled with its type.
Graph inputs and outputs are ellipses. Node ids are ours (``b12``, ``i0``, ``o0``); every string
from the file appears only inside a quoted label, made visible (control, bidi characters escaped,
``textsafe.visible``) and escaped for DOT (``\\`` and ``"``), so a name cannot close its string,
add a statement or reach Graphviz's escapes (``\\N``, ``\\l``); ``&`` is written ``&amp;`` (Graphviz reads entities
in labels), and Graphviz escapes ``<``, ``>`` in SVG text itself. No UI here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, TextIO

from ...format.schema import Node
from ...textsafe import visible
from .rows import Outline, Row, subtree_nodes
from .text import figures_text, fold_text, ops_text

__all__ = ["MAX_BOXES", "Box", "Drawing", "dot_string", "boxes_at", "count_boxes", "default_depth", "write_dot"]

MAX_BOXES = 200
"""The default depth is the deepest with at most this many boxes."""
LABEL_LIMIT = 60
"""Characters of a file string kept in a label."""
_SKIP = ("graph", "function", "unread")


def dot_string(lines: list[str], limit: int = LABEL_LIMIT) -> str:
    """A quoted DOT string of ``lines`` (each made visible and escaped), joined by DOT's ``\\n``."""
    parts = []
    for s in lines:
        v = visible(s, limit)
        parts.append(v.replace("&", "&amp;").replace("\\", "\\\\").replace('"', '\\"'))
    return '"' + "\\n".join(parts) + '"'


@dataclass(slots=True)
class Box:
    """One box: a node, a scope row or a folded run."""

    id: str
    row: Row | None = None
    node: int = -1
    """The node's index (a node box)."""
    nodes: list[int] = field(default_factory=list)
    """Main-graph nodes drawn in the box."""


@dataclass(slots=True)
class Drawing:
    boxes: list[Box]
    edges: dict[tuple[str, str], list[str]]
    depth: int | None


def _items(row: Row) -> list[tuple[int, int, Row | None]]:
    """(position, node index, None) of ``row``'s direct nodes and (first, -1, child) of its rows, in order."""
    items: list[tuple[int, int, Row | None]] = [(p, i, None) for p, i in zip(row.pos, row.nodes)]
    items.extend((c.first, -1, c) for c in row.children if c.kind not in _SKIP)
    items.sort(key=lambda t: (t[0], t[1]))
    return items


def _walk(outline: Outline, depth: int | None, on_row: Callable[[Row], None], on_node: Callable[[int], None]) -> None:
    """Call ``on_row``/``on_node`` for every box at ``depth``, in dependency order."""
    stack = [iter(_items(outline.root))]
    levels = [1]
    while stack:
        item = next(stack[-1], None)
        if item is None:
            stack.pop()
            levels.pop()
            continue
        _, i, c = item
        lv = levels[-1]
        if c is None:
            on_node(i)
        elif c.kind == "node":
            on_node(c.nodes[0])
        elif c.kind == "fold" and depth is None:
            stack.append(iter([(m.first, -1, m) for m in c.members]))
            levels.append(lv)
        elif depth is not None and (c.kind == "fold" or lv >= depth):
            on_row(c)
        else:
            if depth is not None:
                outline.ensure_folded(c)
            stack.append(iter(_items(c)))
            levels.append(lv + 1)


def count_boxes(outline: Outline, depth: int | None) -> int:
    """Boxes at ``depth`` (None: full), inputs and outputs aside."""
    n = [0]

    def one(_: object) -> None:
        n[0] += 1

    _walk(outline, depth, one, one)
    return n[0]


def max_depth(row: Row) -> int:
    """Levels of rows under ``row`` (a fold's members count as one level)."""
    deepest = 0
    stack = [(row, 0)]
    while stack:
        r, d = stack.pop()
        deepest = max(deepest, d)
        for c in r.children:
            if c.kind not in _SKIP:
                stack.extend((m, d + 1) for m in (c.members[:1] if c.kind == "fold" else (c,)))
    return deepest


def default_depth(outline: Outline, limit: int = MAX_BOXES) -> int:
    """The deepest depth with at most ``limit`` boxes (1 when even the top rows are more)."""
    best = 1
    for d in range(1, max_depth(outline.root) + 2):
        if count_boxes(outline, d) > limit:
            break
        best = d
    return best


def boxes_at(outline: Outline, depth: int | None) -> Drawing:
    """The boxes at ``depth`` (None: every node) and the edges between them."""
    g = outline.graph
    boxes: list[Box] = []
    owner = [""] * len(g.nodes)

    def on_row(r: Row) -> None:
        b = Box(f"b{len(boxes)}", r, nodes=[i for _, i in subtree_nodes(r)])
        for i in b.nodes:
            owner[i] = b.id
        boxes.append(b)

    def on_node(i: int) -> None:
        b = Box(f"b{len(boxes)}", node=i, nodes=[i])
        owner[i] = b.id
        boxes.append(b)

    _walk(outline, depth, on_row, on_node)
    gf = outline.facts
    edges: dict[tuple[str, str], list[str]] = {}
    inits = gf.initializer
    ins = {v.name: f"i{k}" for k, v in enumerate(g.inputs) if v.name not in inits}
    for x, readers in gf.consumers.items():
        p = gf.producer.get(x)
        a = owner[p] if p is not None else ins.get(x, "")
        if not a:
            continue
        for c in readers:
            b = owner[c]
            if b and b != a:
                seen = edges.setdefault((a, b), [])
                if not seen or seen[-1] != x:
                    seen.append(x)
    for k, v in enumerate(g.outputs):
        p = gf.producer.get(v.name)
        a = owner[p] if p is not None else ins.get(v.name, "")
        if a:
            edges.setdefault((a, f"o{k}"), []).append(v.name)
    return Drawing(boxes, edges, depth)


def _type_of(x: str, outline: Outline) -> object | None:
    """The declared type of value ``x``, or a Constant's output type (``shapes.constant_output_type``)."""
    gf = outline.facts
    t = gf.types.get(x)
    if t is None:
        p = gf.producer.get(x)
        if p is not None and outline.graph.nodes[p].op == "Constant":
            from ..shapes import constant_output_type  # here: its module's imports cost ~60 ms of a --graph

            t = constant_output_type(outline.graph.nodes[p])
    return t


def _types(node: Node, outline: Outline) -> list[str]:
    out = []
    for o in node.outputs[:3]:
        t = _type_of(o, outline) if o else None
        if t is not None:
            out.append(str(t))
    if len(node.outputs) > 3:
        out.append(f"+{len(node.outputs) - 3} more")
    return out


def _box_label(b: Box, outline: Outline) -> str:
    if b.row is None:
        n = outline.graph.nodes[b.node]
        op = n.op if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op}"
        return dot_string([op, n.name or "(unnamed)", *_types(n, outline)])
    r = b.row
    if r.kind == "fold":
        return dot_string([f"{len(r.members)} × {r.label}", fold_text(r).split(" × ", 1)[1]])
    return dot_string([r.label, figures_text(r), ops_text(r.ops)])


def _edge_label(values: list[str], outline: Outline) -> str:
    t = _type_of(values[0], outline)
    first = str(t) if t is not None else ""
    if len(values) > 1:
        first = (first + " " if first else "") + f"+{len(values) - 1} more"
    return dot_string([first]) if first else ""


def write_dot(outline: Outline, depth: int | None, out: TextIO) -> Drawing:
    """Write the drawing at ``depth`` (None: full) to ``out`` as DOT; the drawing is returned."""
    d = boxes_at(outline, depth)
    g, gf = outline.graph, outline.facts
    out.write("digraph model {\n  graph [rankdir=TB];\n  node [shape=box, fontname=\"Helvetica\", fontsize=10];\n"
              "  edge [fontname=\"Helvetica\", fontsize=8];\n")
    chunk: list[str] = []
    for k, v in enumerate(g.inputs):
        if v.name not in gf.initializer:
            chunk.append(f"  i{k} [shape=ellipse, label={dot_string(['input', v.name, str(v.type or '')])}];\n")
    for k, v in enumerate(g.outputs):
        chunk.append(f"  o{k} [shape=ellipse, label={dot_string(['output', v.name, str(v.type or '')])}];\n")
    for b in d.boxes:
        style = ", style=\"rounded,bold\", peripheries=2" if b.row is not None and b.row.kind == "fold" else \
            (", style=rounded" if b.row is not None else "")
        chunk.append(f"  {b.id} [label={_box_label(b, outline)}{style}];\n")
        if len(chunk) >= 4096:
            out.write("".join(chunk))
            chunk.clear()
    for (a, b2), values in d.edges.items():
        label = _edge_label(values, outline)
        chunk.append(f"  {a} -> {b2}" + (f" [label={label}]" if label else "") + ";\n")
        if len(chunk) >= 4096:
            out.write("".join(chunk))
            chunk.clear()
    chunk.append("}\n")
    out.write("".join(chunk))
    return d
