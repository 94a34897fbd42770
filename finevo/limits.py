"""Bounds on a value's size, shared by the value normaliser, the sandbox and the records.

Standard library only, so a light caller (a record model, ``--help``) reads them without loading
numpy and pandas, which :mod:`finevo.normalize` needs.
"""

from __future__ import annotations

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_TEXT"]

#: Containers nested deeper than this are refused or cut (real results are 1-3 levels deep).
MAX_DEPTH = 64
#: Values (scalars and containers) in one tool result, at most.
MAX_ITEMS = 1_000_000
#: Characters of text (strings and keys) in one tool result, at most.
MAX_TEXT = 4 * 1024 * 1024
