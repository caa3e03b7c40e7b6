"""Who owns each byte of a file: OneModel data regions, ONNX weights files, .ort payloads."""
