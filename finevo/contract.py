"""A tool's return value against a task's output contract.

Shared by the agent's contract stage and the gate's judge so both read a value the same way (values
are made plain first by :func:`finevo.normalize.normalize` under the ``ANSWER`` policy):

* :func:`check_shape` lists every way a (normalised) value misses an :class:`OutputSpec`;
  an empty list means it fits. Shape only: whether the numbers are *right* is the judge's job.
"""

from __future__ import annotations

import math
from typing import Any

from finevo.question import OutputSpec

__all__ = ["check_shape", "describe", "is_number"]

_MAX_REPR = 60


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

    ``value`` should already be normalised (``normalize(value, ANSWER)``); a numpy scalar is not a number here.
    """
    if spec.type in ("numeric", "boolean"):
        problem = (_number_problem if spec.type == "numeric" else _bool_problem)(value, "value")
        return [problem] if problem else []
    if spec.type == "dict":
        return _dict_problems(value, spec)
    return _list_problems(value, spec)


def _dict_problems(value: Any, spec: OutputSpec) -> list[str]:
    if not isinstance(value, dict):
        return [f"value: expected a dict with keys {list(spec.keys)}, got {describe(value)}"]
    check = _number_problem if spec.value_type == "numeric" else _bool_problem
    problems: list[str] = []
    for key in spec.keys:
        problem = check(value[key], f"value[{key!r}]") if key in value else f"value: missing key {key!r}"
        if problem:
            problems.append(problem)
    return problems


def _item_problems(item: Any, where: str, spec: OutputSpec) -> list[str]:
    """What is wrong with one list item (a number, or a record with ``spec.item_keys``)."""
    if spec.item_type == "numeric":
        problem = _number_problem(item, where)
        return [problem] if problem else []
    if spec.item_type != "dict":
        return []
    if not isinstance(item, dict):
        return [f"{where}: expected a dict with keys {list(spec.item_keys)}, got {describe(item)}"]
    problems: list[str] = []
    for key in spec.item_keys:
        problem = _scalar_problem(item[key], f"{where}[{key!r}]") if key in item else f"{where}: missing key {key!r}"
        if problem:
            problems.append(problem)
    return problems


def _list_problems(value: Any, spec: OutputSpec) -> list[str]:
    if not isinstance(value, list):
        return [f"value: expected a list, got {describe(value)}"]
    problems: list[str] = []
    if len(value) < spec.min_items:
        problems.append(f"value: expected at least {spec.min_items} items, got {len(value)}")
    for index, item in enumerate(value):
        problems.extend(_item_problems(item, f"value[{index}]", spec))
        if len(problems) >= 20:
            problems.append("value: further problems not listed")
            break
    return problems
