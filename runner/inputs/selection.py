"""The selection flags' values (``--shard K/N``, ``--only ID,...``), parsed without loading the suite.

A module of its own so that the command line can check them while it reads its arguments: a usage
error must not pay for the task models (pydantic) that :mod:`runner.inputs.suite` imports.
"""

from __future__ import annotations

import re

from finevo.errors import InputError

__all__ = ["parse_only", "parse_shard"]

_SHARD = re.compile(r"^([0-9]+)/([0-9]+)$")


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"K/N"`` (1 <= K <= N) -> ``(K, N)``; ``None`` -> ``None``."""
    if text is None:
        return None
    m = _SHARD.match(text.strip())
    if not m:
        raise InputError(f"--shard: expected K/N (e.g. 1/4), got {text!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise InputError(f"--shard: need 1 <= K <= N, got {text!r}")
    return k, n


def parse_only(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ids = [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise InputError("--only: no task ids given")
    return ids
