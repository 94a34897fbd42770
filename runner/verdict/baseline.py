"""Writing a version 2 baseline from a finished run: per task the passes in the trials measured.

A version 1 baseline (a list of passing ids) is read as each listed task passed in 1 of 1 trial.
Tasks that ran in the run replace their entry (passes and trials of this run); tasks that did not
run (another shard, ``--only``) keep theirs; the quarantine list is kept as it is; the usage the run
recorded (per trial) becomes the baseline's usage for ``--usage-regression``.
"""

from __future__ import annotations

from collections.abc import Sequence

from finevo.jsontypes import JSONObject
from runner.records import TaskResult, TaskState
from runner.verdict.trials import UsageFigures


def baseline_counts(baseline: JSONObject) -> dict[str, dict[str, int]]:
    """A baseline file's per-task counts (version 1: 1 of 1 for each listed id)."""
    if baseline.get("version") == 2:
        return {str(k): {"passes": int(v["passes"]), "trials": int(v["trials"])}
                for k, v in (baseline.get("tasks") or {}).items()}
    return {str(t): {"passes": 1, "trials": 1} for t in baseline.get("passing_tasks") or []}


def passing_of(baseline: JSONObject) -> set[str]:
    return {t for t, c in baseline_counts(baseline).items() if c["passes"] > 0}


def updated_baseline_v2(old: JSONObject, tasks_run: Sequence[TaskResult], *, updated_from: JSONObject,
                        usage: UsageFigures | None) -> JSONObject:
    """The new baseline file from the run's task records, where they came from and the usage they took."""
    counts = baseline_counts(old)
    measured: dict[str, dict[str, int]] = {}
    for t in tasks_run:
        if t.state == TaskState.SKIPPED:
            continue
        row = measured.setdefault(t.task_id, {"passes": 0, "trials": 0})
        row["trials"] += 1
        row["passes"] += int(t.state == TaskState.PASS)
    # A v1 file only listed passing tasks: a task measured now that never passes is kept as 0 of n
    # (measured, never passing), which gates nothing but lets a later pass show as an improvement.
    order = [t.task_id for t in tasks_run]
    tasks = {k: v for k, v in counts.items() if k not in measured}
    for tid in dict.fromkeys(order):
        if tid in measured:
            tasks[tid] = measured[tid]
    new: JSONObject = {
        "version": 2,
        "description": old.get("description", ""),
        "tasks": tasks,
        "quarantine": list(old.get("quarantine") or []),
        "total_tasks": max(int(old.get("total_tasks") or 0), len({t.task_id for t in tasks_run})),
        "target_pass_rate": old["target_pass_rate"],
        "updated_from": updated_from,
    }
    if usage is not None and usage.trials:
        new["usage"] = usage.model_dump(mode="json")
    return new
