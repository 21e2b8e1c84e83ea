"""pytop: a live, top-style view of where a running Python process spends its time."""

__version__ = "0.1.0"
