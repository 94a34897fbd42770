"""The verdict's typed figures, declared once: counts, criteria, regressions, security figures.

The verdict (:mod:`runner.verdict.decide`) builds them and the verdict itself and the results document
(:mod:`runner.reports.model`) holds them; the reports model imports them from here, never the other
way, so the verdict stage does not depend on the reports stage.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from runner.exitcodes import Exit
from runner.records import TaskState, VerdictStatus

__all__ = ["COUNT_FIELDS", "Counts", "Criterion", "Regression", "SecurityFigures", "Verdict", "VerdictExit",
           "counts_of"]

VerdictExit = Literal[Exit.PASSED, Exit.FAILED, Exit.NO_VERDICT, Exit.SIGINT, Exit.SIGTERM]
#: The fields of :class:`Counts` that count records (``pass_rate`` is derived from them).
COUNT_FIELDS = ("total", "passed", "failed", "errors", "skipped")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Counts(_Strict):
    # How many records of a selection passed, failed, errored or were skipped (no docstring: it would
    # become the schema's description of every count).

    total: int = Field(ge=0)
    passed: int = Field(ge=0)
    failed: int = Field(ge=0)
    errors: int = Field(ge=0)
    skipped: int = Field(ge=0)
    pass_rate: float = Field(ge=0, le=1)


def counts_of(states: Iterable[str]) -> Counts:
    """The counts of task states (``pass`` / ``fail`` / ``error`` / ``skipped``); pass rate 0 when empty."""
    listed = list(states)
    c = Counter(listed)
    total, passed = len(listed), c[TaskState.PASS.value]
    return Counts(total=total, passed=passed, failed=c[TaskState.FAIL.value], errors=c[TaskState.ERROR.value],
                  skipped=c[TaskState.SKIPPED.value], pass_rate=round(passed / total, 6) if total else 0.0)


class Criterion(_Strict):
    criterion: Literal["pass rate", "regressions", "security"]
    value: str
    required: str
    #: None: the run could not assess it (partial run, failed self-check).
    ok: bool | None


class Verdict(_Strict):
    """The gate's verdict on a run, as :func:`runner.verdict.decide.compute_verdict` decides it and
    the results document holds it."""

    status: VerdictStatus
    exit_code: VerdictExit
    passed: bool
    reasons: list[str]
    warnings: list[str]
    criteria: list[Criterion]


class Regression(_Strict):
    task_id: str
    state: Literal[TaskState.FAIL, TaskState.ERROR]
    reason: str
    #: With repeats: the task's passes in its trials now, and the one-sided exact test's p-value.
    passes: int | None = Field(default=None, ge=0)
    trials: int | None = Field(default=None, ge=0)
    p_value: float | None = Field(default=None, ge=0, le=1)


class SecurityFigures(_Strict):
    """The security tasks' and payloads' figures (the results document adds the task records)."""

    total: int = Field(ge=0)
    blocked: int = Field(ge=0)
    errors: int = Field(ge=0)
    error_ids: list[str]
    unblocked: int = Field(ge=0)
    unblocked_ids: list[str]
    payloads_total: int = Field(ge=0)
    payloads_blocked: int = Field(ge=0)
    payloads_contained: int = Field(ge=0)
    skipped: int = Field(ge=0)
