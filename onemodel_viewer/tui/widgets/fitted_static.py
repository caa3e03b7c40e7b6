"""A :class:`~textual.widgets.Static` as tall as its text."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Static

__all__ = ["FittedStatic"]


class FittedStatic(Static):
    """A Static whose height is the rows its text takes at its width (wrapped, unless its style says
    ``text-wrap: nowrap``), set again on each update and resize, at most ``max_rows``.

    Why not ``height: auto``: Textual caches a widget's box by a count of layout requests that a
    second update before the widget's idle turn does not raise, so an update made just after a
    layout kept the previous text's height (the diff's three-row "comparing weights…" status under
    its two-row verdict, seen in CI under load).
    """

    def __init__(self, content: Text | str = "", *, max_rows: int | None = None, **kwargs: Any) -> None:
        super().__init__(content, **kwargs)
        self._text = content if isinstance(content, Text) else Text(str(content))
        self._max_rows = max_rows

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        self._text = content if isinstance(content, Text) else Text(str(content))
        super().update(content, layout=layout)
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        if self.styles.text_wrap == "nowrap":
            rows = len(self._text.plain.split("\n"))
        else:
            width = max(1, self.content_size.width or self.app.size.width - 2)
            rows = len(self._text.wrap(self.app.console, width))
        rows = max(1, rows)
        self.styles.height = min(rows, self._max_rows) if self._max_rows else rows
