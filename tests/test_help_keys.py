"""The ``?`` help screen's key list (``tui/screens/help.py`` ``KEYS``, written by hand because it explains
more than a binding's description) against the viewer's ``BINDINGS``: a key the app binds and the help
does not name is drift (the outline's ``O`` was nearly such a key)."""

from __future__ import annotations

from textual.binding import Binding

from onemodel_viewer.tui.app import OneModelApp
from onemodel_viewer.tui.screens.help import KEYS

# Textual's names for the keys the help writes as characters
CHARACTERS = {"slash": "/", "less_than_sign": "<", "greater_than_sign": ">", "question_mark": "?"}
QUIT_ALIASES = {"ctrl+c", "ctrl+q"}  # quit keys every terminal app has; the help names ``q``


def bound_keys() -> set[str]:
    keys: set[str] = set()
    for cls in OneModelApp.__mro__:
        for b in vars(cls).get("BINDINGS", ()):
            b = b if isinstance(b, Binding) else Binding(*b)
            for key in b.key.split(","):
                keys.add(CHARACTERS.get(key.strip(), key.strip()))
    return keys - QUIT_ALIASES


def help_keys(table=KEYS) -> set[str]:
    named: set[str] = set()
    for column, _meaning in table:
        named.update(part for part in column.replace("/", " ").split() if part)
        named.update(part.strip() for part in column.split(" / "))
    return named


def test_every_key_the_viewer_binds_is_in_the_help_screen():
    missing = sorted(bound_keys() - help_keys())
    assert not missing, f"keys bound in the viewer but not listed by ? (tui/screens/help.py KEYS): {missing}"


def test_the_check_sees_a_key_missing_from_the_help():
    """The comparison is not vacuous: the help without its outline row misses exactly ``O``."""
    without_outline = tuple(row for row in KEYS if row[0] != "O")
    assert bound_keys() - help_keys(without_outline) == {"O"}
