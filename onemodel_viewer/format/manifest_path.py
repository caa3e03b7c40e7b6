"""Manifest paths (``manifest.graph.nodes[3].inputs[1]``, ``manifest.x["a key"]``): writing one
step (:func:`join`) and reading a path back into steps (:func:`split_path`)."""

from __future__ import annotations

import json

from .onemodel.json_scan import LazyRe

__all__ = ["join", "split_path"]

_IDENT = LazyRe(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def join(where: str, key: str) -> str:
    """``where.key``, or ``where["k.e y"]`` when the key is not an identifier."""
    if _IDENT.match(key):
        return f"{where}.{key}"
    return f"{where}[{json.dumps(key, ensure_ascii=True)}]"


_STEP = LazyRe(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("[^"\\]*(?:\\.[^"\\]*)*")\]')


def split_path(where: str) -> list[str | int] | None:
    """``manifest.graph.nodes[3]`` -> ``["graph", "nodes", 3]``; None if not a manifest path."""
    if where != "manifest" and not where.startswith(("manifest.", "manifest[")):
        return None
    steps: list[str | int] = []
    pos = len("manifest")
    while pos < len(where):
        m = _STEP.match(where, pos)
        if m is None:
            return None
        if m.group(1) is not None:
            steps.append(m.group(1))
        elif m.group(2) is not None:
            steps.append(int(m.group(2)))
        else:
            try:
                steps.append(json.loads(m.group(3)))
            except ValueError:
                return None
        pos = m.end()
    return steps

