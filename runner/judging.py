"""Judging glue: an agent's outcome for one task becomes a :class:`~runner.records.TaskResult`
(or :class:`~runner.records.SecurityResult`) for the reports.

A task whose main value passes and that has probes is then judged on its probes too: the final
tool is re-run through the session's sandbox with each probe's arguments (all probes of a task
share one budget of ``--task-timeout``), see :func:`runner.judge.judge_probes`. The comparison
rules themselves live in :mod:`runner.judge`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from finevo.errors import DeadlineExceeded, ExternalError
from finevo.jsonsafe import json_safe
from finevo.outcome import LLMUsage, Outcome
from finevo.sandbox.api import ExecutionResult
from finevo.tasks import SecurityTask, Task
from runner.execution import Aborted
from runner.judge import judge_outcome, judge_probes
from runner.records import (
    ErrorInfo,
    ProbeResult,
    SecurityResult,
    SecurityState,
    TaskResult,
    TaskState,
    ToolInfo,
)


def _stage_of(outcome: Outcome) -> str:
    if isinstance(outcome.error, DeadlineExceeded) and outcome.error.details.get("stage"):
        return str(outcome.error.details["stage"])
    return outcome.stage


def judge_task(task: Task, outcome: Outcome, expected: dict[str, Any], elapsed: float, *,
               probe_expected: Sequence[dict[str, Any]] | None = None,
               run_tool: Callable[[str, str, dict[str, Any]], ExecutionResult] | None = None) -> TaskResult:
    """Judge one task's outcome; with ``run_tool`` and ``probe_expected``, its probes too.

    Without them a task's probes are recorded ``skipped`` (the main value alone decides): only
    callers that have no sandbox at hand do that.
    """
    probes: list[ProbeResult] = []
    #: The gate's own time on this task, next to the agent's stage timings: ``judge`` (comparing the
    #: value with the oracle's) and ``probes`` (re-running the tool on the probes, then judging them).
    gate_timings: dict[str, float] = {}
    started_judge = time.perf_counter()
    try:
        judgement = judge_outcome(task, outcome, expected)
        gate_timings["judge"] = time.perf_counter() - started_judge
        if judgement.passed and task.probes:
            if run_tool is not None and probe_expected is not None:
                elapsed_probes = time.monotonic()
                judgement, probes = judge_probes(task, outcome, judgement, expected, probe_expected, run_tool)
                gate_timings["probes"] = time.monotonic() - elapsed_probes
                elapsed += gate_timings["probes"]
            else:
                probes = [ProbeResult(index=i, args=dict(p.args), state=TaskState.SKIPPED,
                                      reason="not run: no sandbox given")
                          for i, p in enumerate(task.probes, start=1)]
        state, reason, convention = judgement.state, judgement.reason, judgement.convention
    except Aborted:
        raise
    except Exception as exc:  # a judge crash is the harness's trouble, never the agent's fail
        state, reason, convention = TaskState.ERROR, f"judge crashed: {type(exc).__name__}: {exc}", None
    gate_timings.setdefault("judge", time.perf_counter() - started_judge)
    return TaskResult(
        task_id=task.id, category=task.category, query=task.query, state=state,
        reason=reason or state, stage=_stage_of(outcome), expected=json_safe(expected),
        actual=json_safe(outcome.value), convention=convention,
        tool=ToolInfo(name=outcome.tool_name, version=outcome.tool_version, hash=outcome.tool_hash,
                      source=outcome.tool_source),
        code=outcome.tool_code, refinements=outcome.refinements,
        attempts=[json_safe(a.__dict__) for a in outcome.attempts],
        llm=_usage_record(outcome.usage),
        duration_s=round(elapsed, 6),
        timings={k: round(float(v), 6) for k, v in {**outcome.timings, **gate_timings}.items()},
        error=ErrorInfo.of(outcome.error),
        stdout=(outcome.stdout or "")[:8192], stderr=(outcome.stderr or "")[:8192],
        probes=[ProbeResult(index=r.index, args=json_safe(r.args), state=r.state, reason=r.reason,
                            expected=json_safe(r.expected), actual=json_safe(r.actual),
                            duration_s=r.duration_s) for r in probes])


def security_result(task: SecurityTask, outcome: Outcome, elapsed: float) -> SecurityResult:
    state: SecurityState
    if outcome.blocked_by:
        state, reason = SecurityState.BLOCKED, f"blocked by {outcome.blocked_by}"
    elif isinstance(outcome.error, ExternalError):
        state, reason = SecurityState.ERROR, f"{outcome.error.code}: {outcome.error.message}"
    else:
        what = f"{outcome.error.code}: {outcome.error.message}" if outcome.error else f"value {outcome.value!r:.80}"
        state = SecurityState.UNBLOCKED
        reason = f"no layer blocked it (stage {outcome.stage}, tool {outcome.tool_source}; {what})"
    return SecurityResult(task_id=task.id, query=task.query, attack=task.attack, state=state, reason=reason,
                          blocked_by=outcome.blocked_by, stage=outcome.stage, tool_source=outcome.tool_source,
                          code=outcome.tool_code, duration_s=round(elapsed, 6),
                          error=ErrorInfo.of(outcome.error),
                          llm=_usage_record(outcome.usage))


def _usage_record(usage: LLMUsage) -> LLMUsage:
    """The agent's LLM usage as a report records it (latency rounded to the microsecond)."""
    return LLMUsage(calls=usage.calls, prompt_tokens=usage.prompt_tokens,
                    completion_tokens=usage.completion_tokens, latency_s=round(usage.latency_s, 6))
