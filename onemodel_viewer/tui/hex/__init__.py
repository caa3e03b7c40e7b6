"""The hex pane: the virtual hex view, its byte map, the byte inspector and where a record's bytes are."""
