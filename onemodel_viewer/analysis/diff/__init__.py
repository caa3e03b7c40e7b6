"""Comparing two models: structure, tensor values, the equivalences of ONNX Runtime's converter, byte diffs."""
