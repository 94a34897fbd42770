"""A tool's return value against a task's output contract.

Two functions, shared by the agent's contract stage and the gate's judge so both read a value
the same way:

* :func:`normalise` turns numpy / pandas values into plain Python (``np.float64`` -> ``float``,
  ``np.bool_`` -> ``bool``, arrays and Series -> lists, timestamps -> ISO strings). It never
  turns a non-number into a number: a string stays a string, ``None`` stays ``None``.
* :func:`check_shape` lists every way a (normalised) value misses an :class:`OutputSpec`;
  an empty list means it fits. Shape only: whether the numbers are *right* is the judge's job.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from finevo.tasks import OutputSpec

__all__ = ["check_shape", "describe", "is_number", "normalise"]

_MAX_REPR = 60


def normalise(value: Any) -> Any:
    """Return ``value`` as plain, JSON-shaped Python (numbers stay numbers, nothing else becomes one)."""
    if value is None or type(value) in (bool, str):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    # numpy scalars first: np.float64 is a float subclass and np.str_ a str subclass.
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    if isinstance(value, np.str_):
        return str(value)
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, Decimal):
        return float(value)
    if value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, (pd.Timestamp, datetime, date, time)):
        return value.isoformat()
    if isinstance(value, np.datetime64):
        return None if np.isnat(value) else pd.Timestamp(value).isoformat()
    if isinstance(value, np.ndarray):
        return [normalise(v) for v in value.tolist()] if value.ndim else normalise(value.item())
    if isinstance(value, pd.Series):
        if len(value.index) and all(isinstance(k, str) for k in value.index):
            return {k: normalise(v) for k, v in value.items()}
        return [normalise(v) for v in value.tolist()]
    if isinstance(value, pd.Index):
        return [normalise(v) for v in value.tolist()]
    if isinstance(value, Mapping):
        return {(str(k) if isinstance(k, np.str_) else k): normalise(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [normalise(v) for v in value]
    return value


def is_number(value: Any) -> bool:
    """A finite ``int`` or ``float`` that is not a ``bool``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float range (e.g. 10**400) is no usable number
        return False


def describe(value: Any) -> str:
    """Short ``type value`` text for one-line error messages."""
    text = repr(value)
    if len(text) > _MAX_REPR:
        text = text[: _MAX_REPR - 3] + "..."
    return f"{type(value).__name__} {text}"


def _number_problem(value: Any, where: str) -> str | None:
    if is_number(value):
        return None
    if isinstance(value, float):
        return f"{where}: expected a finite number, got {value!r}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{where}: expected a finite number, got {describe(value)} (beyond float range)"
    return f"{where}: expected a number, got {describe(value)}"


def _bool_problem(value: Any, where: str) -> str | None:
    if isinstance(value, bool):
        return None
    return f"{where}: expected a bool, got {describe(value)}"


def _scalar_problem(value: Any, where: str) -> str | None:
    """Fields of list items whose type the spec does not fix: a finite number or a non-empty string."""
    if isinstance(value, str):
        return None if value.strip() else f"{where}: empty string"
    if isinstance(value, bool):
        return None
    return _number_problem(value, where)


def check_shape(value: Any, spec: OutputSpec) -> list[str]:
    """Every way ``value`` misses ``spec`` (one line each); empty when it fits.

    ``value`` should already be :func:`normalise`-d; a numpy scalar is not a number here.
    """
    problems: list[str] = []
    if spec.type == "numeric":
        problem = _number_problem(value, "value")
        return [problem] if problem else []
    if spec.type == "boolean":
        problem = _bool_problem(value, "value")
        return [problem] if problem else []
    if spec.type == "dict":
        if not isinstance(value, dict):
            return [f"value: expected a dict with keys {list(spec.keys)}, got {describe(value)}"]
        check = _number_problem if spec.value_type == "numeric" else _bool_problem
        for key in spec.keys:
            if key not in value:
                problems.append(f"value: missing key {key!r}")
                continue
            problem = check(value[key], f"value[{key!r}]")
            if problem:
                problems.append(problem)
        return problems
    # list
    if not isinstance(value, list):
        return [f"value: expected a list, got {describe(value)}"]
    if len(value) < spec.min_items:
        problems.append(f"value: expected at least {spec.min_items} items, got {len(value)}")
    for index, item in enumerate(value):
        where = f"value[{index}]"
        if spec.item_type == "numeric":
            problem = _number_problem(item, where)
            if problem:
                problems.append(problem)
        elif spec.item_type == "dict":
            if not isinstance(item, dict):
                problems.append(f"{where}: expected a dict with keys {list(spec.item_keys)}, got {describe(item)}")
                continue
            for key in spec.item_keys:
                if key not in item:
                    problems.append(f"{where}: missing key {key!r}")
                    continue
                problem = _scalar_problem(item[key], f"{where}[{key!r}]")
                if problem:
                    problems.append(problem)
        if len(problems) >= 20:
            problems.append("value: further problems not listed")
            break
    return problems
