"""finevo: an evolving financial agent that writes, verifies, refines and reuses its own tools."""

__version__ = "0.1.0"
