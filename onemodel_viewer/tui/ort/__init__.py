"""What the viewer adds for an ONNX Runtime ``.ort`` file: its tree group, detail lines and hex regions."""
