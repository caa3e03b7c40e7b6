"""The model as a whole: a scope outline with repeated blocks folded (:mod:`.scopes`, :mod:`.folding`,
:mod:`.fallback`) and Graphviz DOT export (:mod:`.dot`). No UI here."""

from .rows import Outline, Row
from .scopes import build_outline

__all__ = ["Outline", "Row", "build_outline"]
