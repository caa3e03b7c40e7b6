"""Process-wide settings of remote reading (the command line sets them; tests patch them)."""

from __future__ import annotations

OPTIONS: dict = {"download": False, "deep": False, "progress": None}
"""Process-wide defaults the command line sets: ``download`` (fetch a file whose server ignores
``Range`` once, to a temporary file), ``deep`` (``--check --deep``: padding and unowned bytes fetched
and scanned), ``progress`` (a callable ``(done, total)`` told after each piece of a bulk read or download, and
``(total, total)`` when it ends, completed or not)."""
