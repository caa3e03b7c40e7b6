"""The diff viewer's "most changed" view: changed float tensors sorted by ``rel_l2``, a bar each.

A modal screen over the diff. Choosing a row dismisses it with that tensor's
:class:`~..analysis.diff.DiffNode` (the app reveals it in the tree); ``escape`` or ``m``
closes it. Rows are built from the differences the diff has produced so far, so it can be
opened while weights are still being compared (it says how many are still pending).
"""

from __future__ import annotations

import math
from typing import Sequence

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import OptionList, Static
from textual.widgets.option_list import Option

from ...analysis.diff.compare import DiffNode
from ..widgets.safe import safe_text

BAR = 24
"""Width of the longest bar (cells)."""

_EIGHTHS = " ▏▎▍▌▋▊▉"


def bar(fraction: float, width: int = BAR) -> str:
    """A horizontal bar of ``fraction`` (0..1) of ``width`` cells, in eighths of a cell."""
    f = 0.0 if not fraction == fraction else max(0.0, min(1.0, fraction))
    eighths = round(f * width * 8)
    full, part = divmod(eighths, 8)
    return ("█" * full + (_EIGHTHS[part] if part else "")).ljust(width)


def ranked(nodes: Sequence[DiffNode]) -> list[tuple[DiffNode, float]]:
    """(entry, rel_l2) of the changed float tensors among ``nodes``, most changed first (``inf`` first)."""
    out = []
    for dn in nodes:
        for d in dn.differences:
            det = d.detail or {}
            if d.is_data and "rel_l2" in det:
                r = det["rel_l2"]
                r = float(r) if isinstance(r, str) else r
                out.append((dn, r if r == r else -1.0))
    out.sort(key=lambda x: -x[1])
    return out


def row_text(dn: DiffNode, rel: float, top: float) -> Text:
    """One row: bar (scaled to the largest finite rel_l2), rel_l2, cosine, name."""
    det = next(d.detail for d in dn.differences if d.is_data)
    frac = 1.0 if math.isinf(rel) else (rel / top if top > 0 else 0.0)
    t = Text(bar(frac), style="yellow")
    t.append(f" {rel:10.3e}" if rel >= 0 else "        nan", style="bold")
    cos = det.get("cosine")
    t.append(f"  cos {cos:.6f}" if isinstance(cos, float) else "  cos      —", style="dim")
    pct = 100.0 * det["differing"] / det["count"] if det.get("count") else 0.0
    t.append(f"  {pct:5.1f}%  ", style="dim")
    rec = dn.a
    t.append_text(safe_text(getattr(rec, "name", "") or dn.where, limit=80))
    return t


class MostChanged(ModalScreen[DiffNode | None]):
    """Changed float tensors by ``rel_l2``; enter jumps to one."""

    BINDINGS = [
        Binding("escape", "dismiss_none", "Close"),
        Binding("m", "dismiss_none", "Close", show=False),
    ]
    """
    | Key | Description |
    | :- | :- |
    | enter | Show the tensor in the diff tree. |
    | escape, m | Close. |
    """

    DEFAULT_CSS = """
    MostChanged { align: center middle; }
    MostChanged > Vertical { width: 90%; height: 80%; border: round $primary; background: $surface; }
    MostChanged #mc-head { height: auto; padding: 0 1; }
    MostChanged OptionList { height: 1fr; }
    """

    def __init__(self, nodes: Sequence[DiffNode], pending: int = 0) -> None:
        super().__init__()
        self._rows = ranked(nodes)
        self._pending = pending

    def compose(self) -> ComposeResult:
        finite = [r for _, r in self._rows if not math.isinf(r) and r >= 0]
        top = max(finite) if finite else 0.0
        head = Text(f"most changed tensors by rel_l2 (‖b − a‖ / ‖a‖): {len(self._rows):,}", style="bold")
        if self._pending:
            head.append(f"   ({self._pending:,} still being compared)", style="dim")
        with Vertical():
            yield Static(head, id="mc-head")
            yield OptionList(*(Option(row_text(dn, r, top), id=str(i)) for i, (dn, r) in enumerate(self._rows)),
                             id="mc-list")

    def on_mount(self) -> None:
        self.query_one(Vertical).border_title = "Most changed"
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self._rows[int(event.option.id or 0)][0])

    def action_dismiss_none(self) -> None:
        self.dismiss(None)
