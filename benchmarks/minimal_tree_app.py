"""Baseline for the first-screen figure: the smallest Textual app with a lazy Tree.

Exits after its first complete screen, by the same mechanism as the viewer's
``ONEMODEL_VIEW_EXIT_AFTER_FIRST_SCREEN`` hook (two ``call_after_refresh`` hops).
With ``--stay`` it keeps running (the key-latency baseline, :mod:`benchmarks.key_latency`).
"""

from __future__ import annotations

import sys

from textual.app import App, ComposeResult
from textual.widgets import Footer, Tree


class MinimalTreeApp(App):
    def compose(self) -> ComposeResult:
        tree: Tree[None] = Tree("model")
        graph = tree.root.add("graph", expand=True)
        for label in ("inputs (2)", "outputs (1)", "initializers (2,450)", "nodes (8,700)"):
            graph.add(label, allow_expand=True)
        tree.root.expand()
        yield tree
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Tree).focus()
        if "--stay" in sys.argv[1:]:
            return
        self.call_after_refresh(lambda: self.call_after_refresh(self.exit, 0))


if __name__ == "__main__":
    MinimalTreeApp().run()
