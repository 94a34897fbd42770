"""Judging glue: an agent's outcome for one task becomes a :class:`~runner.records.TaskResult`
(or :class:`~runner.records.SecurityResult`) for the reports.

A task whose main value passes is then judged further, by the gate alone (never by the agent's
own verification stages), re-running the final tool through the session's sandbox (all re-runs of
a task share one budget of ``--task-timeout``):

1. on its probes -- the task's listed ones and those derived from its arguments
   (:mod:`runner.judging.probes`) -- see :func:`runner.judging.compare.judge_probes`;
2. in each hidden world (:mod:`runner.judging.worlds`), with the task's own arguments and every probe's,
   each value against the oracle's in that world (:func:`judge_worlds`).

A tool passes only when every value matches, and matches the *same* accepted convention
throughout: a tool that reads Wilder's RSI in one world and Cutler's in another fails. The
comparison rules themselves live in :mod:`runner.judging.compare`.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from finevo.contract import check_shape, normalise
from finevo.errors import AgentFailure, DeadlineExceeded, ExternalError, InputError
from finevo.jsonsafe import json_safe
from finevo.outcome import LLMUsage, Outcome
from finevo.sandbox.api import ExecutionResult
from finevo.tasks import Probe, SecurityTask, Task
from finevo.vocabulary import ToolSource
from runner.execution.deadline import Aborted
from runner.judging.compare import (
    Judgement,
    compare,
    judge_outcome,
    judge_probes,
    matched_conventions,
    mismatch_words,
    probe_entry,
    run_words,
)
from runner.judging.oracle import expected_values
from runner.judging.worlds import World, display_name
from runner.records import (
    ErrorInfo,
    ProbeResult,
    SecurityResult,
    SecurityState,
    TaskResult,
    TaskState,
    ToolInfo,
    WorldResult,
)


class WorldsLike(Protocol):
    """The hidden worlds of a run, as the judge needs them (:class:`runner.judging.worlds.Worlds`)."""

    def for_task(self, task: Task, argsets: Sequence[dict[str, Any]]) -> list[World]: ...


class WorldToolRun(Protocol):
    """Runs tool code in the sandbox, on the market data at ``snapshot_dir`` when given."""

    def __call__(self, code: str, entry: str, args: dict[str, Any],
                 snapshot_dir: str | None = None) -> ExecutionResult: ...


def _stage_of(outcome: Outcome) -> str:
    if isinstance(outcome.error, DeadlineExceeded) and outcome.error.details.get("stage"):
        return str(outcome.error.details["stage"])
    return outcome.stage


def judge_task(task: Task, outcome: Outcome, expected: dict[str, Any], elapsed: float, *,
               probe_expected: Sequence[dict[str, Any]] | None = None,
               run_tool: Callable[..., ExecutionResult] | None = None,
               worlds: WorldsLike | None = None) -> TaskResult:
    """Judge one task's outcome; with ``run_tool`` and ``probe_expected``, its probes too, and with
    ``worlds`` (and ``run_tool``) in every hidden world.

    ``task`` is the task as the gate judges it (its probes may include derived ones the agent
    never saw). Without ``run_tool`` a task's probes are recorded ``skipped`` (the main value alone
    decides): only callers that have no sandbox at hand do that.
    """
    probes: list[ProbeResult] = []
    world_results: list[WorldResult] = []
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
                judgement, probes = judge_probes(task, outcome, judgement, expected, probe_expected,
                                                 _prefetched(task, outcome, run_tool))
                judgement = _one_reading(task, outcome, judgement, expected, probes, probe_expected)
                gate_timings["probes"] = time.monotonic() - elapsed_probes
                elapsed += gate_timings["probes"]
            else:
                probes = [ProbeResult(index=i, args=dict(p.args), state=TaskState.SKIPPED,
                                      reason="not run: no sandbox given")
                          for i, p in enumerate(task.probes, start=1)]
        if judgement.passed and worlds is not None and run_tool is not None:
            started_worlds = time.monotonic()
            judgement, world_results = judge_worlds(task, outcome, judgement, expected, probes,
                                                    probe_expected or [], worlds, run_tool)
            gate_timings["worlds"] = time.monotonic() - started_worlds
            elapsed += gate_timings["worlds"]
        state, reason, convention = judgement.state, judgement.reason, judgement.convention
        reused = reuse_words(outcome)
        if reused and state is not TaskState.PASS:
            reason = f"{reason} ({reused})"
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
                            duration_s=r.duration_s) for r in probes],
        worlds=world_results)


# --------------------------------------------------------------------------- hidden worlds
def _consistent(task: Task, value: Any, expected: dict[str, Any], allowed: Sequence[str]) -> list[str]:
    """The conventions of ``allowed`` whose expected value ``value`` matches."""
    return [c for c in allowed if c in expected and compare(value, expected[c], task.tolerance) is None]


def _judge_one(task: Task, where: str, value: Any, expected: dict[str, Any],
               allowed: list[str]) -> tuple[Judgement, list[str]]:
    """One value in one world: pass narrows ``allowed`` to the conventions it matches."""
    value = normalise(value)
    problems = check_shape(value, task.output)
    if problems:
        return Judgement(TaskState.FAIL, f"{where}: wrong shape: {problems[0]}"), allowed
    matched = _consistent(task, value, expected, allowed)
    if matched:
        return Judgement(TaskState.PASS, f"{where}: matches {', '.join(matched)}", convention=matched[0]), matched
    elsewhere = [c for c in expected if c not in allowed and compare(value, expected[c], task.tolerance) is None]
    if elsewhere:
        return Judgement(TaskState.FAIL, f"{where}: matches convention {elsewhere[0]!r} here but "
                                 f"{' / '.join(repr(c) for c in allowed)} elsewhere: one reading must hold "
                                 "throughout"), allowed
    return Judgement(TaskState.FAIL, f"{where}: {mismatch_words(task, value, expected, allowed)}"), allowed


def reuse_words(outcome: Outcome) -> str:
    """``reused tool net_income v1 created for fetch_001`` for a tool taken from the registry, else ''."""
    if outcome.tool_source is not ToolSource.REUSED:
        return ""
    version = f" v{outcome.tool_version}" if outcome.tool_version else ""
    origin = f" created for {outcome.tool_created_for}" if outcome.tool_created_for else ""
    return f"reused tool {outcome.tool_name or '?'}{version}{origin}"


_BATCH = """


def {name}(calls: list) -> list:
    \"\"\"The gate's re-runs of {entry} in one process, one result per call.\"\"\"
    results = []
    for call in calls:
        try:
            results.append({{"ok": True, "value": {entry}(**call)}})
        except Exception as exc:
            results.append({{"ok": False, "error": repr(exc)}})
    return results
"""


def _batch(code: str, entry: str, calls: Sequence[dict[str, Any]], snapshot_dir: str | None,
           run_tool: Callable[..., ExecutionResult]) -> list[ExecutionResult] | None:
    """Every call in one sandbox run on one world (the fixed cost of a run paid once), or None when
    that run did not give one plain result per call (then each call runs on its own)."""
    name = f"_gate_batch_{secrets.token_hex(4)}"
    batched, args = code + _BATCH.format(name=name, entry=entry), {"calls": [dict(c) for c in calls]}
    result = run_tool(batched, name, args) if snapshot_dir is None else run_tool(batched, name, args, snapshot_dir)
    if not result.ok or not isinstance(result.value, list) or len(result.value) != len(calls):
        return None
    out: list[ExecutionResult] = []
    for item in result.value:
        if not isinstance(item, dict) or not isinstance(item.get("ok"), bool):
            return None
        if item["ok"]:
            out.append(ExecutionResult(status="ok", value=item.get("value")))
        else:
            out.append(ExecutionResult(status="exception", error_message=str(item.get("error"))[:500]))
    return out


def _one_reading(task: Task, outcome: Outcome, judgement: Judgement, expected: dict[str, Any],
                 probes: Sequence[ProbeResult], probe_expected: Sequence[dict[str, Any]]) -> Judgement:
    """``judgement`` unless the main value and the probes that passed only agree on no convention
    (each matched some accepted reading, but not the same one)."""
    if not judgement.passed:
        return judgement
    allowed = matched_conventions(task, outcome.value, expected)
    for record, expected_all in zip(probes, probe_expected, strict=False):
        if record.state is TaskState.PASS:
            narrowed = _consistent(task, normalise(record.actual), expected_all, allowed)
            if not narrowed:
                here = _consistent(task, normalise(record.actual), expected_all, list(expected_all))
                return Judgement(TaskState.FAIL, f"probe {record.index} ({_label(record.args)}): matches "
                                                 f"{' / '.join(repr(c) for c in here)} but the other values "
                                                 f"{' / '.join(repr(c) for c in allowed)}: one reading must "
                                                 "hold throughout")
            allowed = narrowed
    return judgement


def _label(args: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in args.items())


def _prefetched(task: Task, outcome: Outcome,
                run_tool: Callable[..., ExecutionResult]) -> Callable[..., ExecutionResult]:
    """``run_tool`` for the probes on the run's own snapshot, their calls run in one batch first (see
    :func:`_batch`); a call the batch did not answer runs on its own."""
    code = outcome.tool_code
    entry = probe_entry(code, task) if code else None
    calls = [{**task.intent.args, **p.args} for p in task.probes]
    served: dict[str, ExecutionResult] = {}
    if code is not None and entry is not None and len(calls) > 1:
        try:
            batch = _batch(code, entry, calls, None, run_tool)
        except AgentFailure:
            batch = None
        for call, result in zip(calls, batch or [], strict=False):
            served[json.dumps(call, sort_keys=True, default=str)] = result

    def run(code_: str, entry_: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        cached = served.pop(json.dumps(args, sort_keys=True, default=str), None)
        if cached is not None and code_ == code and entry_ == entry and snapshot_dir is None:
            return cached
        return run_tool(code_, entry_, args) if snapshot_dir is None else run_tool(code_, entry_, args, snapshot_dir)

    return run


def judge_worlds(task: Task, outcome: Outcome, main: Judgement, main_expected: dict[str, Any],
                 probe_results: Sequence[ProbeResult], probe_expected: Sequence[dict[str, Any]],
                 worlds: WorldsLike, run_tool: Callable[..., ExecutionResult]) -> tuple[Judgement, list[WorldResult]]:
    """Re-run the final tool in every hidden world, with the task's arguments and each probe's.

    Every value is judged against the oracle's in that world, restricted to the conventions every
    earlier value matched (the main value and the probes on the run's own snapshot first). The
    first value that does not pass decides (the later worlds are recorded ``skipped``); a world in
    which the oracle has no answer for the task's own arguments is ``skipped`` with the oracle's
    reason. The calls of one world run in one sandbox run when they can (each in a fresh call of
    the tool's function; a run that fails as a whole is repeated call by call, so a failure is
    always the call's own). Exceptions other than :class:`~finevo.errors.FinevoError` propagate.
    """
    code = outcome.tool_code
    entry = probe_entry(code, task) if code else None
    allowed = matched_conventions(task, outcome.value, main_expected)
    for probe_result, expected_all in zip(probe_results, probe_expected, strict=False):
        if probe_result.state is TaskState.PASS:
            allowed = _consistent(task, normalise(probe_result.actual), expected_all, allowed) or allowed
    argsets: list[tuple[str, Probe | None]] = [("", None)] + [(f"probe {i} ({p.label()})", p)
                                                            for i, p in enumerate(task.probes, start=1)]
    plan = worlds.for_task(task, [p.oracle_params for p in task.probes])
    results: list[WorldResult] = []
    verdict: Judgement | None = None
    for world in plan:
        name = display_name(world)
        record = WorldResult(world=name, kind=world.kind.value, as_of=world.as_of.isoformat(), state=TaskState.SKIPPED,
                             reason="", perturbation=world.perturbation)
        results.append(record)
        if verdict is not None:
            record.reason = "not run: an earlier check did not pass"
            continue
        started = time.monotonic()
        world_verdict: Judgement | None = None
        oracle_gap: str | None = None
        not_judged: list[str] = []
        calls = [{**task.intent.args, **(probe.args if probe else {})} for _, probe in argsets]

        def oracle(world: World = world, name: str = name) -> list[tuple[int, str, dict[str, Any]] | str]:
            """Per argument set ``(index, where, expected)``, or the oracle's reason it has no answer."""
            out: list[tuple[int, str, dict[str, Any]] | str] = []
            for index, (label, probe) in enumerate(argsets):
                try:
                    expected = expected_values(task, world.provider, dict(probe.oracle_params) if probe else None)
                except InputError as exc:
                    out.append(f"{label}: {exc}" if probe is not None else str(exc))
                    if probe is None:
                        break
                    continue
                out.append((index, f"world {name}" + (f" {label}" if label else ""), expected))
            return out

        # The oracle's values are computed while the sandbox runs the calls (another process).
        batch: list[ExecutionResult] | None = None
        with ThreadPoolExecutor(max_workers=1) as pool:
            pending = pool.submit(oracle)
            if code is not None and entry is not None and len(calls) > 1:
                try:
                    batch = _batch(code, entry, calls, str(world.path), run_tool)
                except AgentFailure:
                    batch = None
            answers = pending.result()
        checks: list[tuple[str, dict[str, Any], dict[str, Any], ExecutionResult | None]] = []
        if answers and isinstance(answers[0], str):  # no answer for the task's own arguments here
            oracle_gap = f"not judged: the oracle has no answer in this world ({answers[0]})"
        for answer in answers if oracle_gap is None else []:
            if isinstance(answer, str):
                not_judged.append(answer)
                continue
            index, where, expected = answer
            checks.append((where, calls[index], expected, batch[index] if batch is not None else None))
        for where, args, expected, prefetched in checks if oracle_gap is None else []:
            if code is None or entry is None:
                missing = ("no tool code to re-run" if code is None
                           else f"the tool defines no function {task.intent.indicator!r}")
                judgement = Judgement(TaskState.FAIL, f"{where}: {missing}")
            else:
                try:
                    result = prefetched if prefetched is not None else run_tool(code, entry, args, str(world.path))
                except ExternalError as exc:
                    judgement = Judgement(TaskState.ERROR, f"{where}: {exc.code}: {exc.message}")
                except AgentFailure as exc:
                    judgement = Judgement(TaskState.FAIL, f"{where}: {exc.code}: {exc.message}")
                else:
                    if result.ok:
                        judgement, allowed = _judge_one(task, where, result.value, expected, allowed)
                    else:
                        judgement = Judgement(TaskState.FAIL, f"{where}: {run_words(result)}")
            record.checks += 1
            if not judgement.passed:
                world_verdict = judgement
                break
        record.duration_s = round(time.monotonic() - started, 6)
        if oracle_gap is not None:
            record.reason = oracle_gap
        elif world_verdict is None:
            record.state = TaskState.PASS
            record.reason = f"{record.checks} value(s) match" + (f"; not judged: {'; '.join(not_judged)}"
                                                                  if not_judged else "")
        else:
            record.state, record.reason = world_verdict.state, world_verdict.reason
            verdict = world_verdict
    if verdict is not None:
        return Judgement(verdict.state, verdict.reason, convention=None), results
    judged = [r for r in results if r.state is TaskState.PASS]
    reason = f"{main.reason}; {len(judged)} hidden world(s) pass" if plan else main.reason
    convention = main.convention if main.convention in allowed else allowed[0]
    return Judgement(TaskState.PASS, reason, convention=convention), results


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
