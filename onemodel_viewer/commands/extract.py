"""``--extract FILE NAME OUT.npy``: one tensor's values to a ``.npy`` file (for scripts).

FILE (OneModel or ONNX) is opened in diagnose mode, so a sound tensor of a broken file can still
be taken out. NAME is a tensor's name (the first in the writer's order when several share it;
the others are listed on stderr) or its ``where`` path (``manifest.graph.initializers[3]``).
Types numpy has no ``.npy`` type for are written as their raw bits or widened integers
(``analysis/npyexport.py``); the note saying so goes to stderr. Exit 0 written, 1 error; never a
traceback.
"""

from __future__ import annotations

import sys

from ..textsafe import visible
from .unreadable import no_model_message

PROG = "onemodel-view"


def _fail(message: str) -> int:
    print(f"{PROG}: --extract: {visible(message)}", file=sys.stderr)
    return 1


def run_extract(src: str, name: str, out: str) -> int:
    from .. import format as omf
    from ..analysis.npyexport import ExportError, export_npy
    from ..format.errors import FormatError
    from ..format.schema import all_tensors

    try:
        doc = omf.open(src, mode="diagnose")
    except (FormatError, OSError) as e:
        return _fail(f"{src}: {e}")
    with doc:
        if doc.model is None:
            return _fail(no_model_message(src, doc))
        tensors = all_tensors(doc.model)
        hits = [t for t in tensors if t.where == name] or [t for t in tensors if t.name == name]
        if not hits:
            return _fail(f"no tensor named {name!r} in {src}")
        t = hits[0]
        if len(hits) > 1:
            print(f"{PROG}: --extract: {len(hits)} tensors are named {visible(repr(name))}; writing {visible(t.where)} "
                  f"(the others: {', '.join(visible(h.where) for h in hits[1:6])}{' ...' if len(hits) > 6 else ''})",
                  file=sys.stderr)
        try:
            note = export_npy(t, out, source=None if "://" in doc.path else doc.path)  # a URL is never a local dest
        except (ExportError, OSError, ValueError) as e:
            return _fail(f"{t.where}: {e}")
        if note:
            print(f"{PROG}: --extract: {note}", file=sys.stderr)
        print(f"wrote {visible(out)}: {visible(t.name)} {t.type_str()}")
        return 0
