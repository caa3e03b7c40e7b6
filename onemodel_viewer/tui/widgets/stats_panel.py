"""Tensor statistics, computed off the UI thread, cached per tensor.

:meth:`StatsPanel.show_tensor` shows cached results at once or starts a thread worker
(``group="stats"``, exclusive: a new request replaces the old one) that runs
:func:`onemodel_viewer.analysis.stats.compute.compute_stats` with a ``threading.Event`` for
cancellation and a progress callback. Results come back only through
``call_from_thread``. A :class:`FormatError` (file changed on disk...) is shown,
never raised: press ``r`` in the app to reload.

Large float32/64, complex and wide-integer tensors deliver their figures in two steps
(``on_summary``): first every figure with a histogram counted from a sample, drawn at once
and marked approximate (``≈ (sample of N values)`` right of the sparkline, border subtitle
``histogram ≈ sample 3.1% · exact pending``), then the exact histogram, which replaces it.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static

from ...format.dtypes import DataType
from ...format.errors import FormatError
from ...format.schema import Tensor
from .fitted_static import FittedStatic
from .safe import human_size, safe_text

if TYPE_CHECKING:
    from textual.widgets import Sparkline

AUTO_LIMIT = 256 << 20
"""Tensors up to this many bytes get statistics as soon as they are selected; bigger ones on ``s``."""

PROGRESS_MIN = 32 << 20
"""Show the progress bar for tensors of at least this many bytes."""

PROGRESS_INTERVAL = 0.1
"""Seconds between progress bar updates: each one repaints the screen (~5 ms of the UI thread, which
the statistics threads then wait for at the GIL), so 1 GiB of float32 no longer pays ~100 repaints."""


def fmt_num(v: float | None) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return str(v)
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}" if abs(v) >= 1000 else str(int(v))
    a = abs(v)
    if a != 0 and (a < 1e-3 or a >= 1e6):
        return f"{v:.4g}"
    return f"{v:.4f}".rstrip("0").rstrip(".") if "." in f"{v:.4f}" else f"{v:.4f}"


def stats_text(t: Tensor, s: Any) -> Text:
    """The summary lines for ``s`` (a ``TensorStats``)."""
    out = Text()
    out.append("stats ", style="bold")
    out.append_text(safe_text(t.name or "(unnamed)", limit=50))
    out.append(f"  {s.count:,} elements\n", style="dim")
    if t.is_string or getattr(s, "dtype", 0) == DataType.STRING:
        out.append("lengths ", style="bold")
        out.append(f"min {fmt_num(s.min_len)}  max {fmt_num(s.max_len)}  total {fmt_num(s.total_len)}\n")
        out.append("first ", style="bold")
        for p in s.previews[:4]:
            out.append('"')
            out.append_text(safe_text(p, limit=100))
            out.append('"  ')
        return out
    out.append("min ", style="bold")
    out.append(fmt_num(s.min))
    out.append("  max ", style="bold")
    out.append(fmt_num(s.max))
    out.append("  μ ", style="bold")
    out.append(fmt_num(s.mean))
    out.append("  σ ", style="bold")
    out.append(fmt_num(s.std))
    out.append("\n")
    for label, n, bad in (("NaN", s.nan, True), ("+Inf", s.posinf, True), ("-Inf", s.neginf, True),
                          ("zeros", s.zeros, False), ("finite", s.finite, False)):
        out.append(f"{label} ", style="bold")
        out.append(f"{n:,}", style="red" if bad and n else "")
        out.append("  ")
    if s.first:
        out.append("\n")
        out.append("first ", style="bold")
        out.append_text(safe_text(", ".join(s.first), limit=100))
    return out


class StatsPanel(Vertical):
    """Statistics of one tensor: summary, histogram (sparkline), progress while computing."""

    DEFAULT_CSS = """
    StatsPanel { height: auto; max-height: 8; }
    StatsPanel > #stats-summary { height: auto; text-wrap: nowrap; text-overflow: ellipsis; }
    StatsPanel > #stats-summary.message { text-wrap: wrap; }
    StatsPanel.message { max-height: 14; }
    StatsPanel > #stats-hist-row { height: 1; }
    #stats-hist-row > Sparkline { width: 1fr; height: 1; margin: 0 0; }
    #stats-hist-row > #stats-hist-note { width: auto; height: 1; color: $warning; }
    StatsPanel > ProgressBar { height: 1; }
    StatsPanel .hidden { display: none; }
    """

    class Progress(Message):
        """Progress of the run ``run`` (its cancel event): posted from the worker without waiting for the UI."""

        bubble = False

        def __init__(self, tensor: Tensor, pct: int, run: threading.Event) -> None:
            super().__init__()
            self.tensor = tensor
            self.pct = pct
            self.run = run

    class Finished(Message):
        """Statistics of ``tensor`` are ready (``stats``), cancelled, or failed (``error``)."""

        def __init__(self, tensor: Tensor, stats: Any = None, error: str | None = None, cancelled: bool = False) -> None:
            super().__init__()
            self.tensor = tensor
            self.stats = stats
            self.error = error
            self.cancelled = cancelled

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._cache: dict[int, tuple[Tensor, Any]] = {}
        self._tensor: Tensor | None = None
        self._cancel: threading.Event | None = None
        self.state = "idle"
        """``idle``, ``running``, ``done``, ``cancelled``, ``error``, ``unavailable``."""
        self._spark: Sparkline | None = None
        self._note: Static | None = None
        self._hist_row: Horizontal | None = None

    def compose(self) -> ComposeResult:
        # the histogram and the progress bar are mounted on first use (keeps the first screen light)
        yield FittedStatic(Text("select a tensor; s computes statistics", style="dim"), id="stats-summary")

    def _sparkline(self) -> Any:
        """The Sparkline child (in its row, with the sample note right of it), mounted the first time it is needed."""
        if self._spark is None:
            # imported here: textual's sparkline pulls in statistics (~1 ms of the first screen's imports)
            from textual.widgets import Sparkline

            # the sparkline and, right of it while the histogram is a sample, "≈ (sample of N values)"
            self._spark = Sparkline([], id="stats-hist", classes="hidden")
            self._note = Static("", id="stats-hist-note", classes="hidden")
            self._hist_row = Horizontal(self._spark, self._note, id="stats-hist-row", classes="hidden")
            self.mount(self._hist_row)
        return self._spark

    def _progress(self) -> Any:
        """The ProgressBar child, mounted the first time it is needed."""
        # imported here: the progress bar and its ETA (~0.4 ms) are not on the first screen
        from textual.widgets import ProgressBar

        found = self.query(ProgressBar)
        if found:
            return found.first()
        w = ProgressBar(total=100, show_eta=False, id="stats-progress", classes="hidden")
        self.mount(w)
        return w

    # ------------------------------------------------------------------ API
    def cached(self, t: Tensor) -> Any:
        hit = self._cache.get(id(t))
        return hit[1] if hit is not None and hit[0] is t else None

    def clear_cache(self) -> None:
        self._cache.clear()

    def show_tensor(self, t: Tensor | None, *, force: bool = False) -> None:
        """Show ``t``'s statistics: cached, computed now (small or ``force``), or a hint."""
        if self._tensor is t and t is not None and self.state == "running":
            return  # already computing this one
        if self._tensor is not t:
            self.cancel()
        self._tensor = t
        summary = self.query_one("#stats-summary", Static)
        summary.remove_class("message")
        self.remove_class("message")
        if t is None:
            self.state = "idle"
            summary.update(Text("select a tensor; s computes statistics", style="dim"))
            self._hide_histogram()
            return
        self._sparkline()
        hit = self.cached(t)
        if hit is not None:
            self._render_stats(t, hit)
            return
        size = 0 if t.is_string else t.length
        if not force and size > AUTO_LIMIT:
            self.state = "idle"
            summary.update(Text(f"{human_size(size)}: press s to compute statistics", style="dim"))
            self._hide_histogram()
            return
        self.start(t)

    def compute_now(self, t: Tensor) -> None:
        """``s``: show the panel with ``t``'s statistics, computed now whatever its size (cached: at once)."""
        self.remove_class("hidden")
        if self.cached(t) is None:
            self.show_tensor(t, force=True)

    def start(self, t: Tensor) -> None:
        """Start computing ``t``'s statistics in a worker."""
        self.cancel()
        ev = threading.Event()
        self._cancel = ev
        self.state = "running"
        self.query_one("#stats-summary", Static).update(
            Text.assemble(("computing statistics of ", "dim"), safe_text(t.name or "(unnamed)", limit=60), ("… (c cancels)", "dim"))
        )
        self._sparkline()
        self._hide_histogram()
        bar = self._progress()
        bar.update(total=100, progress=0)
        bar.set_class(t.is_string or t.length < PROGRESS_MIN, "hidden")
        self._compute(t, ev)

    def cancel(self) -> bool:
        """Ask the running computation to stop. True if one was running."""
        ev = self._cancel
        if ev is not None and not ev.is_set() and self.state == "running":
            ev.set()
            return True
        return False

    # ------------------------------------------------------------------ worker
    @work(thread=True, exclusive=True, group="stats", exit_on_error=False)
    def _compute(self, t: Tensor, ev: threading.Event) -> None:
        from ...analysis.stats.compute import Cancelled, compute_stats

        last = [-1, -math.inf]

        def progress(done: int, total: int) -> None:
            pct = int(done * 100 / total) if total else 100
            now = time.monotonic()
            if pct != last[0] and (now - last[1] >= PROGRESS_INTERVAL or pct >= 100):
                last[0], last[1] = pct, now
                # a message, not call_from_thread: the worker does not wait for the UI
                self.post_message(self.Progress(t, pct, ev))

        try:
            s = compute_stats(t, cancel=ev, progress=progress,
                              on_summary=lambda early: self._post(self._summary, t, early))
        except Cancelled:
            self._post(self._finish, t, None, None, True)
        except FormatError as e:
            self._post(self._finish, t, None, f"{e.kind}: {e.message}", False)
        except Exception as e:  # a bug in the core must not take the viewer down
            self._post(self._finish, t, None, f"{type(e).__name__}: {e}", False)
        else:
            self._post(self._finish, t, s, None, bool(getattr(s, "cancelled", False)))

    def _post(self, fn, *args) -> None:
        try:
            self.app.call_from_thread(fn, *args)
        except Exception:  # app shutting down
            pass

    def on_stats_panel_progress(self, m: "StatsPanel.Progress") -> None:
        # may arrive after the run ended (results come through call_from_thread): only the running one counts
        if m.tensor is self._tensor and m.run is self._cancel and self.state == "running":
            self._progress().update(progress=m.pct)

    def _summary(self, t: Tensor, s: Any) -> None:
        """Every figure (with a sampled histogram, or none), shown while the exact histogram pass runs."""
        if t is self._tensor and self.state == "running":
            self.query_one("#stats-summary", Static).update(stats_text(t, s))
            if s.histogram:
                self._draw_histogram(s)

    def _finish(self, t: Tensor, s: Any, error: str | None, cancelled: bool) -> None:
        if s is not None and not cancelled:
            self._cache[id(t)] = (t, s)
        self.post_message(self.Finished(t, s, error, cancelled))
        if t is not self._tensor:
            return
        self._progress().add_class("hidden")
        summary = self.query_one("#stats-summary", Static)
        if cancelled or error is not None:  # no sampled histogram left standing as if it were the answer
            self._hide_histogram()
        if cancelled:
            self.state = "cancelled"
            summary.update(Text("statistics cancelled (s: compute again)", style="yellow"))
        elif error is not None:
            self.state = "error"
            summary.add_class("message")  # a message is wrapped, never cut
            self.add_class("message")
            summary.update(Text.assemble(("statistics failed: ", "bold red"), safe_text(error, limit=300),
                                         ("  (if the file changed on disk, r reloads it)", "dim")))
        else:
            self._render_stats(t, s)

    def _render_stats(self, t: Tensor, s: Any) -> None:
        self.state = "done"
        self.query_one("#stats-summary", Static).update(stats_text(t, s))
        self._draw_histogram(s)

    def _draw_histogram(self, s: Any) -> None:
        """The sparkline and the subtitle: the range when exact, ``≈ sample …% · exact pending`` when sampled."""
        hist = self._sparkline()
        data = list(getattr(s, "histogram", ()) or ())
        rng = getattr(s, "hist_range", None)
        if not (rng and data and any(data)):
            self._hide_histogram()
            return
        hist.data = [float(x) for x in data]
        note = self._note
        assert note is not None and self._hist_row is not None
        if getattr(s, "hist_exact", True):
            note.add_class("hidden")
            self.border_subtitle = f"histogram {fmt_num(rng[0])} … {fmt_num(rng[1])}"
        else:
            n = s.hist_count or 0
            note.update(Text(f" ≈ (sample of {n:,} values)"))
            note.remove_class("hidden")
            pct = 100.0 * n / s.finite if s.finite else 0.0
            share = f"{pct:.1f}%" if pct >= 0.1 else f"{pct:.2g}%"
            self.border_subtitle = f"histogram ≈ sample {share} · exact pending"
        hist.remove_class("hidden")
        self._hist_row.remove_class("hidden")

    def _hide_histogram(self) -> None:
        for w in (self._hist_row, self._spark):
            if w is not None:
                w.add_class("hidden")
        self.border_subtitle = None

    def histogram_note(self) -> str | None:
        """The text right of the sparkline (``≈ (sample of N values)``), None when hidden (tests)."""
        if self._note is None or self._note.has_class("hidden") or self._hist_row.has_class("hidden"):
            return None
        r = self._note.render()
        return (r.plain if hasattr(r, "plain") else str(r)).strip()

    def summary_text(self) -> str:
        """Plain text of the summary (tests)."""
        r = self.query_one("#stats-summary", Static).render()
        return r.plain if hasattr(r, "plain") else str(r)
