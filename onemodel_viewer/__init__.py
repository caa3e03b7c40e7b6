"""onemodel-view: inspect, check, diff and convert OneModel files."""

__version__ = "0.1.0"
