"""``--price-table FILE``: model name -> ``{"input": $ per million tokens, "output": $ per million tokens}``.

Checked strictly (one line per flaw, exit 2); the table is recorded in the run's configuration so a
merged or re-rendered report estimates the same cost.
"""

from __future__ import annotations

import math
from pathlib import Path

from finevo.errors import InputError
from finevo.inputs import read_json


def load_price_table(path: str | Path) -> dict[str, dict[str, float]]:
    path = Path(path)
    data = read_json(path, "price table")
    if not isinstance(data, dict) or not data:
        raise InputError(f"{path}: price table must be a non-empty JSON object of model name -> prices")
    out: dict[str, dict[str, float]] = {}
    for model, row in data.items():
        if not isinstance(row, dict) or set(row) != {"input", "output"}:
            raise InputError(f"{path}: model {model!r}: need exactly {{\"input\": $/Mtok, \"output\": $/Mtok}}")
        prices: dict[str, float] = {}
        for side in ("input", "output"):
            value = row[side]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InputError(f"{path}: model {model!r}: {side!r} must be a non-negative number, got {value!r}")
            prices[side] = float(value)
        out[str(model)] = prices
    return out
