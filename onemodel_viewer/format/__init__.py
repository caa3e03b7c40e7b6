"""The OneModel core: header, manifest, schema, dtypes, reader, writer, ONNX bridge.

Never imports textual or rich. ``open`` is the entry point::

    from onemodel_viewer import format as omf
    doc = omf.open("model.onemodel")              # strict: raises FormatError
    doc = omf.open("bad.onemodel", mode="diagnose")  # collects problems
"""

from .document import HEADER_FIELDS, HEADER_SIZE, Document, Header
from .dtypes import DTYPES, AttrType, DType, by_code
from .errors import Finding, FormatError, Kind, Problem
from .schema import (
    Attribute,
    Function,
    Graph,
    Model,
    Node,
    OperatorSet,
    SparseTensor,
    Tensor,
    Type,
    ValueInfo,
)

__all__ = [
    "HEADER_FIELDS", "HEADER_SIZE", "Document", "Header", "DTYPES", "DType", "by_code",
    "Finding", "FormatError", "Kind", "Problem", "Attribute", "AttrType", "Function", "Graph",
    "Model", "Node", "OperatorSet", "SparseTensor", "Tensor", "Type", "ValueInfo", "open",
]


def open(path, mode: str = "strict") -> Document:  # noqa: A001 - mirrors builtins.open on purpose
    """Open a OneModel or ONNX file (the first 8 bytes decide, spec section 5).

    ``mode="strict"`` raises the first problem as :class:`FormatError`;
    ``mode="diagnose"`` returns a :class:`Document` with every problem found.
    """
    from .reader import open_path

    return open_path(path, mode=mode)
