"""The structure tree: model, graphs, nodes, tensors, functions, problems — built lazily.

Children of an item are made only when it is expanded (or when :meth:`StructureTree.reveal`
walks through it), so opening a model with 100,000 nodes costs the same as a tiny one.
Labels are :class:`rich.text.Text` made by :mod:`.entries` (never markup).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, ClassVar, Iterator

from rich.style import Style
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from .entries import Entry, path_to, row_keys
from .safe import fit_text


class StructureTree(Tree[Entry]):
    """A :class:`Tree` of :class:`Entry` items with on-demand children.

    Labels are fitted to the pane's width (:func:`.safe.fit_text`: names cut with ``…``, counts
    never), so the tree never scrolls sideways.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("right", "expand_or_child", "Expand", show=False),
        Binding("left", "collapse_or_parent", "Collapse", show=False),
    ]
    """
    | Key(s) | Description |
    | :- | :- |
    | right | Expand the item; on an expanded item, go to its first child. |
    | left | Collapse the item; on a collapsed item or a leaf, go to its parent. |
    """

    DEFAULT_CSS = """
    StructureTree { scrollbar-size-horizontal: 0; overflow-x: hidden; }
    """

    _adding = False
    """True while rows are added or removed in a batch (the tree is invalidated once, after)."""
    _asked = False
    """An invalidation was asked for during the batch."""
    _room: int | None = None
    """The pane's label width while the line table is built (one look-up, not one a line)."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(Text("model"), id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self._loaded: set[int] = set()
        self._node_of: dict[int, TreeNode[Entry]] = {}
        self._children_of: dict[int, list[Entry]] = {}
        self._roots: list[Entry] = []

    def _label_room(self, node: TreeNode[Entry]) -> int:
        """The cells left for ``node``'s label after its guides."""
        depth = 0
        p = node.parent
        while p is not None and p is not self.root:
            depth += 1
            p = p.parent
        room = self._room if self._room is not None else self.scrollable_content_region.width
        return room - depth * self.guide_depth

    def _invalidate(self) -> None:
        """Textual's: the line table and the line cache dropped, a layout asked for; once per
        :meth:`populate`, not once a child (a group of 1,000 nodes: 1,000 layout requests, ~10 ms
        of the UI thread when an edit's re-read revealed the selection again)."""
        if self._adding:
            self._asked = True
        else:
            super()._invalidate()

    @contextmanager
    def _batch(self) -> Iterator[None]:
        """Rows added and removed in the block invalidate the tree once, at its end."""
        if self._adding:
            yield
            return
        self._adding, self._asked = True, False
        try:
            yield
        finally:
            self._adding = False
            if self._asked:
                self._invalidate()

    def _build(self) -> None:
        """Textual's line table, the pane's width looked up once (it asked :meth:`get_label_width` of
        every line, each looking up the pane's region: ~5 ms over 1,000 lines)."""
        self._room = self.scrollable_content_region.width
        try:
            super()._build()
        finally:
            self._room = None

    def render_label(self, node: TreeNode[Entry], base_style: Style, style: Style) -> Text:
        text = super().render_label(node, base_style, style)
        width = self._label_room(node)
        return fit_text(text, width) if width > 0 and text.cell_len > width else text

    def get_label_width(self, node: TreeNode[Entry]) -> int:
        """The room for the label, not its rendered width: every label is fitted to it (the tree never
        scrolls sideways), and rendering each of a re-expanded group's 1,000 labels to measure it held
        the UI thread ~100 ms after an edit's re-read (benchmarks/edit_recheck.py --select)."""
        return max(0, self._label_room(node))

    def watch_show_vertical_scrollbar(self) -> None:
        """The scrollbar takes two cells from every label's room: render every line again (Textual's
        line cache is keyed by the widget's width, which the scrollbar does not change, so lines
        fitted before it appeared came back cut by it: "embed.to… 256.0 K")."""
        for top in self.root.children:  # every cached line's key holds its top-level row's update count
            top.refresh()

    def process_label(self, label) -> Text:
        """A one-line :class:`Text` label as it is (Textual's default splits every label into lines:
        a tenth of the cost of adding a node)."""
        if isinstance(label, Text) and "\n" not in label.plain:
            return label
        return super().process_label(label)

    def action_expand_or_child(self) -> None:
        """→: expand; already expanded: the first child."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            self.populate(node)
            node.expand()
        elif node.is_expanded and node.children:
            self.move_cursor(node.children[0])

    def action_collapse_or_parent(self) -> None:
        """←: collapse; collapsed or a leaf: the parent."""
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and node.is_expanded:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def set_entries(self, roots: list[Entry], later: Callable[[Entry], bool] | None = None) -> None:
        """Replace the tree's contents with ``roots`` (collapsed); ``later`` not None: keep the rows
        (:meth:`swap_entries`, ``later`` its argument)."""
        if later is not None:
            self.swap_entries(roots, later)
            return
        self.clear()
        self._loaded.clear()
        self._node_of.clear()
        self._children_of.clear()
        self._roots = roots
        for e in roots:
            self._node_of[id(e)] = self.root.add(e.label, e, allow_expand=e.expandable)
        self.root.expand()

    @property
    def roots(self) -> list[Entry]:
        return self._roots

    def node_for(self, entry: Entry) -> TreeNode[Entry] | None:
        return self._node_of.get(id(entry))

    def populate(self, node: TreeNode[Entry]) -> list[Entry]:
        """Make ``node``'s children if not made yet; return its entries."""
        e = node.data
        if e is None:
            return []
        key = id(e)
        if key in self._children_of:
            return self._children_of[key]
        kids = e.children() if e.children is not None else []
        self._children_of[key] = kids
        with self._batch():
            for k in kids:
                self._node_of[id(k)] = node.add(k.label, k, allow_expand=k.expandable)
        return kids

    def refresh_entry(self, entry: Entry) -> None:
        """``entry``'s label or children changed: redraw its label; its rows when open (rows of the same
        records keep their nodes: :meth:`swap_entries`), else its children rebuilt when next needed."""
        node = self._node_of.get(id(entry))
        if node is None:
            return
        node.set_label(entry.label)
        node.allow_expand = entry.expandable
        kids = self._children_of.pop(id(entry), None)
        if kids is None:
            return
        if node.is_expanded:
            new = self._children_of[id(entry)] = entry.children() if entry.children is not None else []
            with self._batch():
                self._swap_rows(node, new, lambda e: False)
            return
        for child in node.children:
            self._forget(child)
        node.remove_children()

    def swap_entries(self, roots: list[Entry], later: Callable[[Entry], bool] = lambda e: False) -> None:
        """Show ``roots`` (another read of the same file) in place of the entries shown, keeping the tree's
        rows: a row of the same record (:func:`.entries.row_keys`) keeps its node, open or not, and takes
        the new entry (its label redrawn only when it changed; its children, if made, swapped the same way);
        rows only in ``roots`` are added, the others removed. ``later(new entry)`` true: a row whose
        children are made is left as it is (old entry, label and rows) for a later call.

        An edit changes a few rows: the line table, the line cache and the rows on screen stay (rebuilding
        the tree and opening the selection's group of 1,000 rows again drew every row twice)."""
        self._roots = roots
        with self._batch():
            self._swap_rows(self.root, roots, later)

    def _swap_rows(self, parent: TreeNode[Entry], entries: list[Entry], later: Callable[[Entry], bool]) -> None:
        nodes = list(parent.children)
        old = dict(zip(row_keys([n.data for n in nodes]), nodes))
        new_keys = row_keys(entries)
        place = {id(n): i for i, n in enumerate(nodes)}
        order = [place[id(old[k])] for k in new_keys if k in old]
        if order != sorted(order):  # rows reordered: all anew
            old = {}
        kept = {id(old[k]) for k in new_keys if k in old}
        for n in nodes:
            if id(n) not in kept:
                self._forget(n)
                n.remove()
        for i, (k, e) in enumerate(zip(new_keys, entries)):
            node = old.get(k)
            if node is None:
                self._node_of[id(e)] = parent.add(e.label, e, before=i, allow_expand=e.expandable)
            else:
                self._swap_row(node, e, later)

    def _swap_row(self, node: TreeNode[Entry], entry: Entry, later: Callable[[Entry], bool]) -> None:
        was = node.data
        kids = self._children_of.get(id(was))
        if kids is not None and later(entry):
            return
        self._node_of.pop(id(was), None)
        self._node_of[id(entry)] = node
        node.data = entry
        if node.label != entry.label:
            node.set_label(entry.label)
        if node.allow_expand != entry.expandable:
            node.allow_expand = entry.expandable
        if kids is not None:
            del self._children_of[id(was)]
            new = self._children_of[id(entry)] = entry.children() if entry.children is not None else []
            self._swap_rows(node, new, later)

    def _forget(self, node: TreeNode[Entry]) -> None:
        """``node`` and the rows below it are to go: their entries no longer map to them."""
        for child in node.children:
            self._forget(child)
        if node.data is not None:
            self._node_of.pop(id(node.data), None)
            self._children_of.pop(id(node.data), None)

    def loaded_rows(self) -> set[tuple]:
        """The rows whose children are made, each as the :func:`.entries.row_keys` of the rows down to it."""
        out: set[tuple] = set()

        def walk(node: TreeNode[Entry], path: tuple) -> None:
            if not any(id(c.data) in self._children_of for c in node.children):
                return  # (a group of 1,000 rows, none open: no keys made)
            for child, key in zip(node.children, row_keys([c.data for c in node.children])):
                if id(child.data) in self._children_of:
                    out.add(path + (key,))
                    walk(child, path + (key,))

        walk(self.root, ())
        return out

    def _on_tree_node_expanded(self, event: Tree.NodeExpanded[Entry]) -> None:
        if event.node.tree is self:
            self.populate(event.node)

    def _entry_children(self, entry: Entry) -> list[Entry]:
        node = self._node_of.get(id(entry))
        return self.populate(node) if node is not None else []

    def path_to(self, where: str) -> list[Entry]:
        return path_to(self._roots, where, expand=self._entry_children)

    def reveal_entry(self, entry: Entry, chain: list[Entry] | None = None) -> bool:
        """Expand the ancestors of ``entry`` (a known entry), move the cursor to it."""
        node = self._node_of.get(id(entry))
        if node is None:
            return False
        p = node.parent
        while p is not None and p is not self.root:
            if not p.is_expanded:
                p.expand()
            p = p.parent
        _ = self.last_line  # rebuild the line table so the node's line is known
        self.move_cursor(node)
        self.scroll_with_context(node)
        return True

    def scroll_with_context(self, node: TreeNode[Entry]) -> None:
        """Scroll so ``node`` has rows around it (a third of the pane above it), never on the edge."""
        line = node.line
        if line < 0:
            return
        h = self.scrollable_content_region.height or self.size.height
        top = int(self.scroll_offset.y)
        margin = max(1, h // 4)
        if h and not top + margin <= line < top + h - margin:
            self.scroll_to(y=max(0, line - h // 3), animate=False, immediate=True)
            if int(self.scroll_offset.y) != max(0, line - h // 3):
                # the tree just grew (ancestors expanded): its new height is known after a refresh
                self.call_after_refresh(self.scroll_to, y=max(0, line - h // 3), animate=False, immediate=True)

    def reveal(self, where: str) -> Entry | None:
        """Expand down to the record at ``where`` (or its nearest ancestor) and put the cursor on it."""
        chain = self.path_to(where)
        if not chain:
            return None
        self.reveal_entry(chain[-1])
        return chain[-1]
