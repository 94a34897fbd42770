"""The judge: a tool's structured return value against the oracle's expected values.

Strict by construction; each rule closes a false pass of the system this project re-implements:

* Only the structured return value is judged, never stdout: text that contains a number is not
  a number.
* Numbers must be finite ``int``/``float`` (never ``bool``) within ``abs + rel * |expected|`` of
  an accepted convention's value.
* Booleans must be real ``bool`` equal to the expected one (``1.0`` is not ``True``).
* Dicts need every required key with a right value (``None`` is never right).
* Lists are compared element-wise and must have the expected length; record fields that hold
  dates are compared as dates, numbers within tolerance, anything else exactly.
* A value passes when it matches *one* accepted convention entirely (no mixing conventions
  across keys or items).

``judge_outcome`` adds the error rule: an :class:`~finevo.errors.ExternalError` is judged
``error`` (it says nothing about the agent); any other error or missing value is ``fail``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Literal

import pandas as pd

from finevo.contract import check_shape, describe, is_number, normalise
from finevo.errors import ExternalError
from finevo.outcome import Outcome
from finevo.tasks import Task, Tolerance

__all__ = ["JUDGE_VERSION", "Judgement", "judge_value", "judge_outcome", "compare"]

#: Recorded in every report; bump it whenever a rule changes what passes.
JUDGE_VERSION = "2.0"

JudgedState = Literal["pass", "fail", "error"]


@dataclass(frozen=True)
class Judgement:
    state: JudgedState
    reason: str
    #: The accepted convention the value matched (pass only).
    convention: str | None = None

    @property
    def passed(self) -> bool:
        return self.state == "pass"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _close(actual: float, expected: float, tol: Tolerance) -> bool:
    return abs(actual - expected) <= tol.abs + tol.rel * abs(expected)


def _as_date(value: Any) -> str | None:
    """``YYYY-MM-DD`` of an ISO date/datetime string, else None."""
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    if stamp is pd.NaT:
        return None
    # The calendar date as written (a tz-aware ex-date stays on its own day).
    return stamp.strftime("%Y-%m-%d")


def compare(actual: Any, expected: Any, tol: Tolerance, where: str = "value") -> str | None:
    """None when ``actual`` equals ``expected`` under the judge's rules, else the first mismatch."""
    if isinstance(expected, bool):
        if not isinstance(actual, bool):
            return f"{where}: expected bool {expected}, got {describe(actual)}"
        return None if actual is expected else f"{where}: expected {expected}, got {actual}"
    if isinstance(expected, (int, float)):
        if not is_number(actual):
            return f"{where}: expected a finite number near {expected:.10g}, got {describe(actual)}"
        if _close(float(actual), float(expected), tol):
            return None
        return f"{where}: {float(actual):.10g} differs from expected {float(expected):.10g} beyond tolerance"
    if isinstance(expected, Mapping):
        if not isinstance(actual, Mapping):
            return f"{where}: expected a dict, got {describe(actual)}"
        for key, exp in expected.items():
            if key not in actual:
                return f"{where}: missing key {key!r}"
            problem = compare(actual[key], exp, tol, f"{where}[{key!r}]")
            if problem:
                return problem
        return None
    if isinstance(expected, list):
        if not isinstance(actual, list):
            return f"{where}: expected a list of {len(expected)} items, got {describe(actual)}"
        if len(actual) != len(expected):
            return f"{where}: expected {len(expected)} items, got {len(actual)}"
        for index, (act, exp) in enumerate(zip(actual, expected)):
            problem = compare(act, exp, tol, f"{where}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(expected, str):
        expected_date = _as_date(expected)
        if expected_date is not None:
            if _as_date(actual) == expected_date:
                return None
            return f"{where}: expected date {expected_date}, got {describe(actual)}"
        return None if actual == expected else f"{where}: expected {expected!r}, got {describe(actual)}"
    if expected is None:  # the oracle never produces None; refuse rather than pass by accident
        return f"{where}: no expected value"
    return None if actual == expected else f"{where}: expected {expected!r}, got {describe(actual)}"


def judge_value(task: Task, value: Any, expected: Mapping[str, Any]) -> Judgement:
    """Judge one structured return value against ``{convention: expected}`` (primary first)."""
    if not expected:
        return Judgement("error", f"task {task.id}: the oracle produced no expected value")
    unknown = [name for name in expected if name not in {c.name for c in task.conventions}]
    if unknown:
        return Judgement("error", f"task {task.id}: expected values for unknown conventions {unknown}")
    value = normalise(value)
    problems = check_shape(value, task.output)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return Judgement("fail", f"wrong shape: {problems[0]}{more}")
    mismatches: list[str] = []
    for name, exp in expected.items():
        problem = compare(value, exp, task.tolerance)
        if problem is None:
            return Judgement("pass", f"matches convention {name!r}", convention=name)
        mismatches.append(f"{name}: {problem}")
    if len(mismatches) == 1:
        return Judgement("fail", f"wrong value ({mismatches[0]})")
    return Judgement("fail", f"matches no accepted convention ({'; '.join(mismatches)})")


def judge_outcome(task: Task, outcome: Outcome, expected: Mapping[str, Any]) -> Judgement:
    """Judge what the agent returned for ``task``: pass, fail (its own fault) or error (external)."""
    error = outcome.error
    if isinstance(error, ExternalError):
        return Judgement("error", f"{error.code}: {error.message}")
    if error is not None:
        return Judgement("fail", f"{error.code}: {error.message}")
    if outcome.tool_source in ("blocked", "refused"):
        return Judgement("fail", f"no answer: the tool was {outcome.tool_source} on a benchmark task")
    if outcome.value is None:
        return Judgement("fail", f"no value returned (stage reached: {outcome.stage})")
    return judge_value(task, outcome.value, expected)
