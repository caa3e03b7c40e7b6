"""``onnx.checker`` for an ONNX model at a URL.

The checker needs the whole serialized model: a model of at most :data:`LIMIT` bytes (or any, with
``--check --deep``) is fetched whole (in parallel pieces) and checked from its bytes. A larger one,
or one with external data (the checker would need those files too), is not checked by ``onnx.checker``
remotely: the importer's own verdict stands, and a finding says so.
"""

from __future__ import annotations

from ..errors import Finding, FormatError, Kind, Problem

LIMIT = 64 << 20


def remote_checker(url: str, external: bool) -> tuple[list[Problem], list[Finding]]:
    """``(problems, findings)``: the checker's verdict, or a ``checker-skipped`` finding."""
    from .storage import OPTIONS, open_remote

    if external:
        return [], [Finding("checker-skipped", "onnx.checker", None,
                            "onnx.checker is not run on a remote model with external data")]
    try:
        storage = open_remote(url)
    except FormatError as e:
        return [e.problem], []
    try:
        if storage.size > LIMIT and not OPTIONS["deep"]:
            return [], [Finding("checker-skipped", "onnx.checker", None,
                                f"onnx.checker is not run on a remote model over {LIMIT >> 20} MiB (--check --deep runs it)")]
        data = storage.read(0, storage.size)
    except FormatError as e:
        return [e.problem], []
    finally:
        storage.close()
    try:
        import onnx
        import onnx.checker

        onnx.checker.check_model(data, full_check=True)
    except Exception as e:  # noqa: BLE001 - ValidationError, InferenceError, DecodeError, ...
        msg = str(e).strip() or type(e).__name__
        return [Problem(Kind.INVALID_MODEL, "onnx.checker", None, f"{type(e).__name__}: {msg}")], []
    return [], []
