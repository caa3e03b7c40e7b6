"""ONNX Runtime's own converter, as the tests call it: a `.onnx` to a `.ort`, graph optimisations off."""

from __future__ import annotations

from pathlib import Path


def to_ort(src: Path, dst: Path) -> None:
    """Write ``dst`` with ONNX Runtime (the reader under test never imports it; only the tests do)."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.optimized_model_filepath = str(dst)
    so.add_session_config_entry("session.save_model_format", "ORT")
    so.log_severity_level = 3
    ort.InferenceSession(str(src), so, providers=["CPUExecutionProvider"])
