"""The viewer's ``O`` key: the scope outline screen (:mod:`.outline`, imported on first use)."""

from __future__ import annotations

from typing import Iterable

from textual.app import SystemCommand

__all__ = ["OutlineActions"]


class OutlineActions:
    """The app's ``O`` action and palette entry (a mixin of the viewer's app; the binding is in ``app.py``)."""

    def action_outline(self) -> None:
        """``O``: the scope outline; enter on a row selects its first node in the structure tree."""
        doc = getattr(self, "document", None)
        if doc is None or doc.model is None:
            self.notify("no model to outline", severity="warning")  # type: ignore[attr-defined]
            return
        from .outline import OutlineScreen

        def done(where: str | None) -> None:
            if where:
                self.reveal(where)  # type: ignore[attr-defined]

        self.push_screen(OutlineScreen(doc, getattr(self, "facts", None)), done)  # type: ignore[attr-defined]

    def outline_commands(self) -> Iterable[SystemCommand]:
        yield SystemCommand("Outline", "Scopes of the model, repeated blocks folded (O)", self.action_outline)
