"""Tensor statistics: a chunked pass over zero-copy views (:mod:`.compute`), 16-bit pattern counts, many small tensors at once."""
