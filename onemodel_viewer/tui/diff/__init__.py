"""The viewer in diff mode: ``onemodel-view --diff A B``."""
