"""The diff tree: one tree over both models, each entry marked equal/added/removed/changed.

Built lazily from the :class:`~..analysis.diff.DiffNode` tree: an entry's children are made
when it is expanded (or revealed). With ``only_differences`` set, equal entries are hidden (not
those that are or hold a tensor not compared, marked ``?``).
Labels are :class:`rich.text.Text` (names from the files go through ``safe_text``).
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from ...analysis.diff.compare import ADDED, CHANGED, EQUAL, REMOVED, DiffNode
from ...format.schema import (
    Attribute,
    Function,
    Graph,
    Node,
    NodeList,
    OperatorSet,
    SparseTensor,
    Tensor,
    ValueInfo,
)
from ..widgets.safe import safe_str, safe_text

MARKERS = {EQUAL: ("=", "dim"), ADDED: ("+", "green"), REMOVED: ("-", "red"), CHANGED: ("~", "yellow")}
"""Marker character and style per status."""

PENDING = ("…", "dim")
"""Marker of a tensor whose values are still being compared (or were not, after a cancel)."""

NOT_COMPARED = ("?", "magenta")
"""Marker of a tensor whose values cannot be compared (one file's bytes for it are unusable)."""


_LISTS = (tuple, list, NodeList)
"""What a group entry holds (a reader's graph nodes are a NodeList)."""


def describe(dn: DiffNode) -> str:
    """A short description of the record(s) behind an entry (from B when added, else A)."""
    rec = dn.b if dn.status == ADDED else dn.a
    if isinstance(rec, Node):
        return rec.op + (f" ({rec.domain})" if rec.domain else "")
    if isinstance(rec, Tensor):
        return rec.type_str()
    if isinstance(rec, SparseTensor):
        return "sparse " + rec.values.type_str()
    if isinstance(rec, ValueInfo):
        return str(rec.type) if rec.type is not None else ""
    if isinstance(rec, OperatorSet):
        return str(rec.version)
    if isinstance(rec, Attribute):
        return ""
    if isinstance(rec, (Graph, Function)):
        return _both(dn, lambda r: len(r.nodes) if isinstance(r, (Graph, Function)) else None, "{} nodes")
    if isinstance(rec, tuple) and len(rec) == 2 and all(isinstance(x, str) for x in rec):
        return rec[1]  # metadata entry
    if isinstance(rec, _LISTS):
        return _both(dn, lambda r: len(r) if isinstance(r, _LISTS) else None, "({})")
    return ""


def _both(dn: DiffNode, count, fmt: str) -> str:
    """A count on both sides: ``(15)`` when equal, ``(0 → 15)`` when not (``–`` for a missing side)."""
    a, b = count(dn.a), count(dn.b)
    if a == b:
        return fmt.format(f"{a:,}")
    return fmt.format(f"{'–' if a is None else f'{a:,}'} → {'–' if b is None else f'{b:,}'}")


def label_for(dn: DiffNode) -> Text:
    if dn.not_compared is not None and dn.status == EQUAL:
        mark, style = NOT_COMPARED
    elif dn.pending and dn.status == EQUAL:
        mark, style = PENDING
    else:
        mark, style = MARKERS.get(dn.status, ("?", ""))
    t = Text(mark + " ", style=style + " bold")
    t.append_text(safe_text(dn.label, style="" if dn.status == EQUAL else style))
    extra = describe(dn)
    if extra:
        t.append("  " + safe_str(extra, 60), style="dim")
    own = len(dn.differences)
    if own and dn.status == CHANGED:
        t.append(f"  {own} change" + ("s" if own > 1 else ""), style="yellow")
    return t


def _empty_group(dn: DiffNode) -> bool:
    """A group (``sparse_initializers``, ``attributes``...) that is empty on both sides."""
    return (not dn.children and not dn.differences and isinstance(dn.a, _LISTS) and isinstance(dn.b, _LISTS)
            and not dn.a and not dn.b)


class DiffTree(Tree[DiffNode]):
    """A :class:`Tree` of :class:`DiffNode` entries with on-demand children and a difference filter."""

    DEFAULT_CSS = """
    DiffTree { scrollbar-size-horizontal: 0; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(Text("diff"), id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self.only_differences = False
        self._root_entry: DiffNode | None = None
        self._node_of: dict[int, TreeNode[DiffNode]] = {}
        self._loaded: set[int] = set()
        self._up: dict[int, DiffNode] = {}
        self._holds_unknown: set[int] = set()
        """Entries that are, or hold, a tensor not compared: shown with only the differences too."""

    def set_root(self, root: DiffNode | None) -> None:
        """Show the children of ``root`` (the result of a diff)."""
        self._root_entry = root
        self._up.clear()
        self._holds_unknown.clear()
        if root is not None:
            for n in root.walk():
                for c in n.children:
                    self._up[id(c)] = n
                if n.not_compared is not None:
                    up: DiffNode | None = n
                    while up is not None and id(up) not in self._holds_unknown:
                        self._holds_unknown.add(id(up))
                        up = self._up.get(id(up))
        self._rebuild()

    def refresh_entries(self, entries) -> None:
        """Relabel ``entries`` and their ancestors (their status changed: a tensor's values were compared)."""
        seen: set[int] = set()
        for dn in entries:
            n = dn
            while n is not None and id(n) not in seen:
                seen.add(id(n))
                node = self._node_of.get(id(n))
                if node is not None:
                    node.set_label(label_for(n))
                n = self._up.get(id(n))

    def set_only_differences(self, on: bool) -> None:
        self.only_differences = on
        self._rebuild()

    def _visible_children(self, dn: DiffNode) -> list[DiffNode]:
        kids = [c for c in dn.children if not _empty_group(c)]
        if not self.only_differences:
            return kids
        return [c for c in kids if c.status != EQUAL or id(c) in self._holds_unknown]

    def _rebuild(self) -> None:
        self.clear()
        self._node_of.clear()
        self._loaded.clear()
        root = self._root_entry
        if root is None:
            return
        self._add_children(self.root, root)
        self.root.expand()
        # open the top level (model, graph, functions) so the first screen shows something
        for child in list(self.root.children):
            if child.data is not None and (child.data.status != EQUAL or id(child.data) in self._holds_unknown):
                self._populate(child)
                child.expand()

    def _add_children(self, node: TreeNode[DiffNode], dn: DiffNode) -> None:
        for c in self._visible_children(dn):
            expandable = bool(self._visible_children(c))
            self._node_of[id(c)] = node.add(label_for(c), c, allow_expand=expandable)
        self._loaded.add(id(dn))

    def _populate(self, node: TreeNode[DiffNode]) -> None:
        dn = node.data
        if dn is not None and id(dn) not in self._loaded:
            self._add_children(node, dn)

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[DiffNode]) -> None:
        if event.node.tree is self:
            self._populate(event.node)

    def reveal(self, dn: DiffNode) -> bool:
        """Expand down to ``dn`` and put the cursor on it (False when it is filtered out)."""
        chain = [dn]
        while id(chain[-1]) in self._up:
            chain.append(self._up[id(chain[-1])])
        chain.reverse()  # root entry first
        for anc in chain[1:-1]:
            node = self._node_of.get(id(anc))
            if node is None:
                return False
            self._populate(node)
            if not node.is_expanded:
                node.expand()
        target = self._node_of.get(id(dn))
        if target is None:
            return False
        _ = self.last_line  # rebuild the line table so the node's line is known
        self.move_cursor(target)
        self.scroll_to_node(target, animate=False)
        return True
