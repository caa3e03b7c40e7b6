"""The OneModel format: header, manifest, builders into the records, the canonical form, the edit image, the writer."""
