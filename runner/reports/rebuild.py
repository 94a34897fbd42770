"""Completing a run's records: tasks that did not run are filled in ``skipped`` in plan order,
and a run's results document is rebuilt from its ``events.jsonl`` (a killed run: partial)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from finevo.jsontypes import JSONObject
from runner.records import PayloadResult, PayloadState, SecurityResult, SecurityState, SelfCheck, TaskResult
from runner.reports import document
from runner.reports.model import ResultsDocument


def fill_skipped(planned: Sequence[Sequence[str]], done: Sequence[TaskResult], reason: str,
                 repeats: int = 1) -> list[TaskResult]:
    """Every planned task in every repeat (repeat by repeat, plan order inside one), unrun ones skipped."""
    by_key = {(r.task_id, r.repeat): r for r in done}
    return [by_key.get((tid, rep)) or TaskResult.skipped(tid, cat, query, reason, repeat=rep)
            for rep in range(1, repeats + 1) for tid, cat, query in planned]


def fill_skipped_security(planned: Sequence[Sequence[str]], done: Sequence[SecurityResult],
                          reason: str) -> list[SecurityResult]:
    by_id = {r.task_id: r for r in done}
    return [by_id.get(tid) or SecurityResult(task_id=tid, query=q, attack=a, state=SecurityState.SKIPPED, reason=reason)
            for tid, q, a in planned]


def fill_skipped_payloads(planned: Sequence[Sequence[str]], done: Sequence[PayloadResult],
                          reason: str) -> list[PayloadResult]:
    by_id = {r.payload_id: r for r in done}
    return [by_id.get(pid) or PayloadResult(payload_id=pid, attempt=att, state=PayloadState.SKIPPED, reason=reason)
            for pid, att in planned]


def rebuild_from_events(events: Sequence[JSONObject]) -> ResultsDocument:
    """The results document of a run from its event log (a killed run: partial, unrun tasks skipped).

    A run directory reused with ``--reuse-registry`` holds the events of every run in it: only
    those from the last ``start`` on belong to the run being rebuilt.
    """
    events = events[max(i for i, e in enumerate(events) if e["event"] == "start"):]
    start = events[0]
    planned = start.get("planned", {})
    tasks = [TaskResult.from_dict(e["result"]) for e in events if e["event"] == "task"]
    sec = [SecurityResult.from_dict(e["result"]) for e in events if e["event"] == "security"]
    pay = [PayloadResult.from_dict(e["result"]) for e in events if e["event"] == "payload"]
    selfchecks = [SelfCheck.model_validate(e["selfcheck"]) for e in events if e["event"] == "selfcheck"]
    ends = [e for e in events if e["event"] == "end"]
    end = ends[-1] if ends else None
    signum = end.get("signal") if end else -1   # no end event: killed or crashed
    selfcheck: SelfCheck | None
    if signum is None and not start["config"].get("self_check", True):
        selfcheck = SelfCheck.not_run("skipped (--no-self-check)")
    else:
        selfcheck = selfchecks[-1] if selfchecks else None
    crash = end.get("crash") if end else None
    if end is None:
        reason = "not run: the run was killed before this task"
    elif crash:
        reason = "not run: the gate crashed before this task"
    else:
        reason = "not run: interrupted"
    finished_at = cast(str, (end or events[-1]).get("finished_at", start["started_at"]))
    return document.assemble(
        run_id=start["run_id"], config=start["config"],
        records=document.RunRecords(
            fill_skipped(planned.get("tasks", []), tasks, reason, repeats=int(start.get("repeats") or 1)),
            fill_skipped_security(planned.get("security", []), sec, reason),
            fill_skipped_payloads(planned.get("payloads", []), pay, reason),
            selfcheck=selfcheck),
        span=document.RunSpan(start["started_at"], finished_at,
                              sum(float(r.duration_s) for group in (tasks, sec, pay) for r in group),
                              partial_signal=signum, crash=crash),
        warnings=start.get("warnings", []))

