"""The structure tree's ``ONNX Runtime`` group of an ``.ort`` file: what ORT adds to the model.

Pure (no Textual). One group (:func:`ort_entry`) under the model: the format version (and which
releases read it), the kernel type-string table (one entry per op id, children made when opened),
the saved runtime optimizations, and the byte map's totals (objects, tables visited, unowned bytes).
Entries (made with ``entry_type``, :class:`.entries.Entry`, passed in as :func:`.ort_regions.ort_regions`
is given its region type: no import cycle) are of kind ``ort``; ``obj`` is ``(what, record)`` with ``what`` one of ``summary``,
``version``, ``kernel``, ``optimization``, ``bytes`` (:mod:`.ort_detail` describes them). Labels go
through :func:`.safe.safe_text` (op ids and optimizer names come from the file).
"""

from __future__ import annotations

from rich.text import Text

from ...format.document import Document
from ..widgets.formatters import count_label
from ..widgets.safe import safe_text

ROOT = "InferenceSession"
KERNELS = ROOT + ".kernel_type_str_resolver.op_kernel_type_str_args"


def arg_text(args) -> str:
    """``in 0, in 1, out 0`` for a kernel type string's ``((arg type, index), ...)`` (0 input, 1 output)."""
    return ", ".join(("in" if t == 0 else "out" if t == 1 else f"type {t}") + f" {i}" for t, i in args)


def summary_label(facts) -> Text:
    lab = Text("ONNX Runtime", style="bold")
    lab.append("  format ", style="dim")
    lab.append_text(safe_text(facts.version or "?", style="cyan", limit=12))
    lab.append(f" · {len(facts.kernel_type_strs):,} kernel ops · {len(facts.runtime_optimizations):,} optimizations",
               style="dim")
    return lab


def ort_entry(doc: Document, entry_type):
    """The ``ONNX Runtime`` group of an ``.ort`` document (None for other sources)."""
    facts = doc.extra
    if doc.source != "ort" or facts is None or not hasattr(facts, "kernel_type_strs"):
        return None

    def kids() -> list:
        out = []
        t = Text("format version ", style="dim")
        t.append_text(safe_text(facts.version or "(missing)", style="cyan", limit=20))
        out.append(entry_type("ort", t, obj=("version", facts), where=ROOT + ".ort_version"))
        ks = facts.kernel_type_strs
        out.append(entry_type("group", count_label("kernel type strings", len(ks)), where=KERNELS,
                         children=(lambda: [kernel_entry(entry_type, i, k) for i, k in enumerate(ks)]) if ks else None))  # one per op id: hundreds
        ro = facts.runtime_optimizations
        out.append(entry_type("group", count_label("runtime optimizations", len(ro)), where="",
                         children=(lambda: [optimization_entry(entry_type, i, r) for i, r in enumerate(ro)]) if ro else None))
        b = Text("byte map ", style="dim")
        b.append(f"{len(facts.spans):,} objects · {sum(n for _s, n in facts.unowned):,} unowned bytes", style="dim")
        out.append(entry_type("ort", b, obj=("bytes", facts), where=""))
        return out

    return entry_type("ort", summary_label(facts), obj=("summary", facts), where=ROOT, children=kids)


def kernel_entry(entry_type, i: int, k):
    lab = safe_text(k.op_id or "(no op id)", style="bold", limit=80)
    for name, args in k.args[:4]:
        lab.append("  ")
        lab.append_text(safe_text(name, style="cyan", limit=20))
        lab.append(f": {arg_text(args)}", style="dim")
    if len(k.args) > 4:
        lab.append(f"  +{len(k.args) - 4}", style="dim")
    return entry_type("ort", lab, obj=("kernel", k), where=f"{KERNELS}[{i}]")


def optimization_entry(entry_type, i: int, r):
    lab = safe_text(r.optimizer or "(no optimizer)", style="bold", limit=60)
    lab.append(" ")
    lab.append_text(safe_text(r.action_id, limit=60))
    lab.append(f"  {len(r.node_indices):,} nodes", style="dim")
    return entry_type("ort", lab, obj=("optimization", r), where="")
