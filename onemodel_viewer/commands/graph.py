"""``--graph FILE OUT.(dot|svg) [--depth N|full]``: the model drawn at a scope depth, for Graphviz.

FILE (OneModel, ONNX or ``.ort``) is opened in diagnose mode: a file with problems is drawn as far
as it could be read (the problems are counted on stderr). The default depth is the deepest with at
most ~200 boxes (``analysis/graph/dot.py``); ``--depth full`` draws every node. ``.dot`` needs
nothing else; ``.svg`` runs Graphviz's ``dot`` program, and says to install it when it is missing.
OUT is written whole or not at all (a temporary file renamed); it may not be a file the model
reads. Exit 0 written, 1 error, 2 usage; never a traceback.
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import sys

from ..textsafe import visible
from .unreadable import no_model_message

PROG = "onemodel-view"
INSTALL = "install Graphviz (apt-get install graphviz, dnf install graphviz, brew install graphviz) or write OUT.dot"


def _fail(message: str, code: int = 1) -> int:
    print(f"{PROG}: --graph: {visible(message, 400)}", file=sys.stderr)
    return code


def parse_depth(text: str | None) -> int | None | str:
    """``None`` (default depth), ``"full"`` or a depth of 1 or more; raises ValueError otherwise."""
    if text is None:
        return None
    if text == "full":
        return "full"
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise ValueError(f"--depth takes a number of 1 or more or 'full', not {text!r}")
    return int(text)


def run_graph(src: str, out: str, depth_text: str | None = None) -> int:
    from .. import format as omf
    from ..analysis.graph.dot import default_depth, write_dot
    from ..analysis.graph.scopes import build_outline
    from ..format.errors import FormatError, Kind
    from ..format.output import atomic_output, refuse_sources
    from ..process import paused_gc

    kind = os.path.splitext(out)[1].lower()
    if kind not in (".dot", ".gv", ".svg"):
        return _fail(f"{out}: OUT must end in .dot or .svg", 2)
    try:
        depth = parse_depth(depth_text)
    except ValueError as e:
        return _fail(str(e), 2)
    dot_program = shutil.which("dot") if kind == ".svg" else None
    if kind == ".svg" and dot_program is None:
        return _fail(f"SVG needs Graphviz's `dot` program, which is not installed: {INSTALL}")
    try:
        doc = omf.open(src, mode="diagnose")
    except (FormatError, OSError) as e:
        return _fail(f"{src}: {e}")
    with doc:
        if doc.model is None:
            return _fail(no_model_message(src, doc))
        if doc.problems:
            print(f"{PROG}: --graph: {visible(src)} has {len(doc.problems)} problem{'s' if len(doc.problems) > 1 else ''}; "
                  "drawing what could be read", file=sys.stderr)
        try:
            refuse_sources(out, [doc.path, *doc.external_files])
            with paused_gc():  # the outline's records stay to the end: collections would only walk them again
                outline = build_outline(doc.model, fold=depth != "full")
                level = None if depth == "full" else (depth if isinstance(depth, int) else default_depth(outline))
                text = io.StringIO()
                drawing = write_dot(outline, level, text)
            data = text.getvalue().encode("utf-8")
            with atomic_output(out) as f:
                if dot_program is None:
                    f.write(data)
                else:
                    run = subprocess.run([dot_program, "-Tsvg"], input=data, stdout=f, stderr=subprocess.PIPE)
                    if run.returncode != 0:
                        raise FormatError(Kind.IO, "destination", None, "Graphviz's dot failed: "
                                          + run.stderr.decode("utf-8", "replace").strip()[:400])
        except FormatError as e:
            return _fail(f"{out}: {e}")
        except OSError as e:
            return _fail(f"{out}: {e.strerror or e}")
        shown = "full" if level is None else str(level)
        print(f"wrote {visible(out)}: {len(drawing.boxes):,} boxes, {len(drawing.edges):,} edges (depth {shown}"
              f"{'' if depth is not None else ', the deepest with at most 200 boxes'})")
        return 0
