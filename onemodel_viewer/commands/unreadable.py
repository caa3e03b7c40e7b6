"""The one message of the commands that need a model and got a file of which none could be read."""

from __future__ import annotations


def no_model_message(src: str, doc) -> str:
    """``SRC: no model could be read`` with the document's first problem (kind, where, message), if any."""
    first = doc.problems[0] if doc.problems else None
    return f"{src}: no model could be read" + (f" ({first.kind} at {first.where}: {first.message})" if first else "")
