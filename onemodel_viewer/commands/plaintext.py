"""Stand-ins for ``rich.text.Text`` and ``rich.console.Group`` that build plain text (styles dropped).

``--check`` without ``--json`` writing to a pipe or a file prints no styles anyway: its report is made
with these, so the command does not import rich there (~30 ms of a ~100 ms check). ``str()`` of either
is what rich's Console prints for it on a non-terminal (soft wrap, no width limit), newline excluded.
"""

from __future__ import annotations


class Text:
    """``rich.text.Text``'s ``append`` (the style is ignored); ``str()`` is the text."""

    __slots__ = ("parts",)

    def __init__(self, text: str = "", style: str | None = None) -> None:
        self.parts = [text]

    def append(self, text: str, style: str | None = None) -> "Text":
        self.parts.append(text)
        return self

    def __str__(self) -> str:
        return "".join(self.parts)


class Group:
    """``rich.console.Group``: its parts one under the other."""

    __slots__ = ("parts",)

    def __init__(self, *parts) -> None:
        self.parts = parts

    def __str__(self) -> str:
        return "\n".join(map(str, self.parts))
