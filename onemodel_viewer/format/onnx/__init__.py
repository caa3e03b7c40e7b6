"""ONNX files: the protobuf wire scanner, import into the records, export (with external data layouts), the checker."""
