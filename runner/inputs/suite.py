"""Load and validate everything a gate run reads, then select the tasks to run.

Every flaw is one :class:`~finevo.errors.InputError` line naming the file (and line when there is
one); the CLI turns it into exit code 2 before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from finevo.errors import InputError
from finevo.inputs import read_json
from finevo.vocabulary import Category, choices, words
from runner.inputs.corpus import Payload, load_payloads

# The selection flags' parsers live in a light module of their own (the command line checks them); kept here too.
from runner.inputs.selection import parse_only as parse_only
from runner.inputs.selection import parse_shard as parse_shard
from runner.inputs.tasks import SecurityTask, Task, load_security_tasks, load_tasks

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

_BASELINE_KEYS = ("passing_tasks", "target_pass_rate")


class BaselineDict(TypedDict):
    """:meth:`Baseline.to_dict`: the baseline as a run's results record it (the last three: version 2)."""

    path: str
    version: str
    description: str
    passing_tasks: list[str]
    total_tasks: int | None
    target_pass_rate: float
    tasks: NotRequired[dict[str, dict[str, int]]]
    quarantine: NotRequired[list[dict[str, str]]]
    usage: NotRequired[JSONObject | None]


@dataclass(frozen=True)
class Baseline:
    """``benchmarks/baseline.json``: the tasks that passed when the baseline was taken.

    Version 1 lists the passing task ids; version 2 gives each task's ``{passes, trials}`` as
    measured, an optional quarantine list (``task``, ``reason``, ``expires``) and optionally the
    usage the measurement recorded. ``passing_tasks`` is, for version 2, every task that passed at
    least once.
    """

    path: str
    passing_tasks: tuple[str, ...]
    target_pass_rate: float
    version: str = ""
    description: str = ""
    total_tasks: int | None = None
    #: Version 2: task id -> {"passes": int, "trials": int}.
    tasks: dict[str, dict[str, int]] | None = None
    quarantine: tuple[dict[str, str], ...] = ()
    #: Version 2: the usage figures, as ``UsageFigures`` read them, dumped to JSON.
    usage: JSONObject | None = None

    def to_dict(self) -> BaselineDict:
        out: BaselineDict = {"path": self.path, "version": self.version, "description": self.description,
                             "passing_tasks": list(self.passing_tasks), "total_tasks": self.total_tasks,
                             "target_pass_rate": self.target_pass_rate}
        if self.tasks is not None:
            out["tasks"] = {k: dict(v) for k, v in self.tasks.items()}
            out["quarantine"] = [dict(q) for q in self.quarantine]
            out["usage"] = self.usage
        return out


@dataclass
class Suite:
    tasks: list[Task]
    security: list[SecurityTask]
    payloads: list[Payload]
    baseline: Baseline | None
    warnings: list[str] = field(default_factory=list)


def load_baseline(path: str | Path, known_ids: Sequence[str] | None = None) -> tuple[Baseline, list[str]]:
    """Read and check a baseline file; returns it with warnings (baseline ids not in the suite)."""
    path = Path(path)
    data = read_json(path, "baseline")
    if not isinstance(data, dict):
        raise InputError(f"{path}: baseline must be a JSON object, got {type(data).__name__}")
    if data.get("version") == 2:
        return _load_baseline_v2(path, data, known_ids)
    if data.get("version") not in (None, 1, "1"):
        raise InputError(f"{path}: baseline version {data.get('version')!r} is not one this gate reads (1, 2)")
    missing = [k for k in _BASELINE_KEYS if k not in data]
    if missing:
        raise InputError(f"{path}: baseline is missing key(s): {', '.join(missing)}")
    passing = data["passing_tasks"]
    if not isinstance(passing, list) or not all(isinstance(t, str) for t in passing):
        raise InputError(f"{path}: baseline 'passing_tasks' must be a list of task ids")
    if not passing:
        raise InputError(f"{path}: baseline names no tasks ('passing_tasks' is empty)")
    dupes = sorted({t for t in passing if passing.count(t) > 1})
    if dupes:
        raise InputError(f"{path}: baseline lists task id(s) twice: {', '.join(dupes)}")
    target = data["target_pass_rate"]
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0.0 <= float(target) <= 1.0:
        raise InputError(f"{path}: baseline 'target_pass_rate' must be a number in [0, 1], got {target!r}")
    total = data.get("total_tasks")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise InputError(f"{path}: baseline 'total_tasks' must be a non-negative integer, got {total!r}")
    baseline = Baseline(path=str(path), passing_tasks=tuple(passing), target_pass_rate=float(target),
                        version=str(data.get("version", "")), description=str(data.get("description", "")),
                        total_tasks=total)
    warnings: list[str] = []
    if known_ids is not None:
        unknown = [t for t in passing if t not in set(known_ids)]
        if unknown:
            warnings.append(f"{path}: baseline names unknown task id(s): {', '.join(unknown)}")
    return baseline, warnings


def _target(path: Path, data: JSONObject) -> float:
    target = data.get("target_pass_rate")
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0.0 <= float(target) <= 1.0:
        raise InputError(f"{path}: baseline 'target_pass_rate' must be a number in [0, 1], got {target!r}")
    return float(target)


_V2_KEYS = frozenset({"version", "description", "tasks", "quarantine", "usage", "total_tasks", "target_pass_rate",
                      "updated_from", "passing_tasks"})


def _load_baseline_v2(path: Path, data: JSONObject,
                      known_ids: Sequence[str] | None) -> tuple[Baseline, list[str]]:
    extra = sorted(set(data) - _V2_KEYS)
    if extra:
        raise InputError(f"{path}: baseline version 2 has unknown key(s): {', '.join(extra)}")
    for key in ("tasks", "target_pass_rate"):
        if key not in data:
            raise InputError(f"{path}: baseline is missing key(s): {key}")
    tasks = _v2_counts(path, _v2_rows(path, data["tasks"]))
    quarantine = _v2_quarantine(path, data.get("quarantine") or [])
    qids = [q["task"] for q in quarantine]
    usage = _v2_usage(path, data.get("usage"))
    total = data.get("total_tasks")
    if total is not None and (isinstance(total, bool) or not isinstance(total, int) or total < 0):
        raise InputError(f"{path}: baseline 'total_tasks' must be a non-negative integer, got {total!r}")
    baseline = Baseline(path=str(path), passing_tasks=tuple(t for t, c in tasks.items() if c["passes"] > 0),
                        target_pass_rate=_target(path, data), version="2",
                        description=str(data.get("description", "")), total_tasks=total, tasks=tasks,
                        quarantine=tuple(quarantine), usage=usage)
    warnings: list[str] = []
    if known_ids is not None:
        known = set(known_ids)
        unknown = [t for t in [*tasks, *qids] if t not in known]
        if unknown:
            warnings.append(f"{path}: baseline names unknown task id(s): {', '.join(dict.fromkeys(unknown))}")
    return baseline, warnings


def _v2_rows(path: Path, rows: Any) -> JSONObject:
    """The 'tasks' object (task id -> counts); a list of {"task": id, "passes": n, "trials": m} is accepted too."""
    if isinstance(rows, list):
        by_id: JSONObject = {}
        for i, row in enumerate(rows):
            tid = row.get("task", row.get("task_id")) if isinstance(row, dict) else None
            if not isinstance(tid, str) or not tid:
                raise InputError(f"{path}: baseline tasks entry {i + 1}: needs a 'task' id")
            if tid in by_id:
                raise InputError(f"{path}: baseline lists task id(s) twice: {tid}")
            by_id[tid] = {k: v for k, v in row.items() if k not in ("task", "task_id")}
        rows = by_id
    if not isinstance(rows, dict) or not rows:
        raise InputError(f"{path}: baseline 'tasks' must be a non-empty object of task id -> {{passes, trials}}")
    return rows


def _v2_counts(path: Path, rows: JSONObject) -> dict[str, dict[str, int]]:
    from pydantic import ValidationError

    from runner.verdict.trials import BaselineCount

    tasks: dict[str, dict[str, int]] = {}
    for tid, row in rows.items():
        try:
            count = BaselineCount.model_validate(row)
        except ValidationError as exc:
            raise InputError(f"{path}: baseline task {tid!r}: {exc.errors(include_url=False)[0]['msg']} "
                             "(need {\"passes\": n >= 0, \"trials\": m >= 1})") from None
        if count.passes > count.trials:
            raise InputError(f"{path}: baseline task {tid!r}: passes {count.passes} > trials {count.trials}")
        tasks[str(tid)] = {"passes": count.passes, "trials": count.trials}
    return tasks


def _v2_quarantine(path: Path, raw_q: Any) -> list[dict[str, str]]:
    from pydantic import ValidationError

    from runner.verdict.trials import Quarantine

    if not isinstance(raw_q, list):
        raise InputError(f"{path}: baseline 'quarantine' must be a list of {{task, reason, expires}}")
    quarantine: list[dict[str, str]] = []
    for i, q in enumerate(raw_q):
        if isinstance(q, dict) and "expiry" in q and "expires" not in q:  # "expiry" is read as "expires"
            q = {**{k: v for k, v in q.items() if k != "expiry"}, "expires": q["expiry"]}
        try:
            entry = Quarantine.model_validate(q)
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            where = "/".join(str(x) for x in err["loc"])
            raise InputError(f"{path}: baseline quarantine entry {i + 1}: {where}: {err['msg']} "
                             "(need task, reason, expires as YYYY-MM-DD)") from None
        quarantine.append({"task": entry.task, "reason": entry.reason, "expires": entry.expires.isoformat()})
    qids = [q["task"] for q in quarantine]
    twice = sorted({q for q in qids if qids.count(q) > 1})
    if twice:
        raise InputError(f"{path}: baseline quarantines task id(s) twice: {', '.join(twice)}")
    return quarantine


def _v2_usage(path: Path, usage: Any) -> JSONObject | None:
    from pydantic import ValidationError

    from runner.verdict.trials import UsageFigures

    if usage is None:
        return None
    try:
        return UsageFigures.model_validate(usage).model_dump(mode="json")
    except ValidationError as exc:
        raise InputError(f"{path}: baseline 'usage': {exc.errors(include_url=False)[0]['msg']}") from None


def load_payload_corpus(path: str | Path) -> list[Payload]:
    """Load the adversarial payload corpus (:mod:`runner.inputs.corpus`, strict: one line per flaw)."""
    return load_payloads(path)


def select(suite: Suite, *, only: Sequence[str] | None = None, category: str | None = None,
           shard: tuple[int, int] | None = None) -> Suite:
    """Keep the tasks asked for, in suite order. Unknown ids / categories are input errors."""
    tasks, security = list(suite.tasks), list(suite.security)
    payloads = list(suite.payloads)
    if category is not None:
        if category not in choices(Category):
            raise InputError(f"--category: unknown category {category!r} (one of {words(Category)})")
        tasks = [t for t in tasks if t.category == category]
        if category != Category.SECURITY:
            security, payloads = [], []
    if only is not None:
        known = {t.id for t in suite.tasks} | {s.id for s in suite.security}
        unknown = [i for i in only if i not in known]
        if unknown:
            raise InputError(f"--only: unknown task id(s): {', '.join(unknown)}")
        wanted = set(only)
        tasks = [t for t in tasks if t.id in wanted]
        security = [s for s in security if s.id in wanted]
        payloads = []  # an explicit id list runs exactly those tasks
    if shard is not None:
        k, n = shard
        # Round-robin keeps categories spread over shards; order inside a shard is suite order.
        tasks = [t for i, t in enumerate(tasks) if i % n == k - 1]
        security = [s for i, s in enumerate(security) if i % n == k - 1]
        payloads = [p for i, p in enumerate(payloads) if i % n == k - 1]
    if not tasks and not security and not payloads:
        raise InputError("selection is empty: no task matches --only/--category/--shard")
    return Suite(tasks=tasks, security=security, payloads=payloads, baseline=suite.baseline,
                 warnings=list(suite.warnings))


def load_suite(tasks_path: str | Path, security_path: str | Path | None, payloads_path: str | Path | None,
               baseline_path: str | Path | None) -> Suite:
    """Load every input file; ``None`` paths are simply not used.

    Every task's oracle parameters are checked, under each accepted reading and each probe, as the task
    file is read (:func:`runner.inputs.oracle_params.check_task`): before :func:`select`, so a wrong
    parameter stops every run of that file, whatever ``--only`` picks.
    """
    tasks = load_tasks(tasks_path)
    security = load_security_tasks(security_path) if security_path is not None else []
    clash = sorted({t.id for t in tasks} & {s.id for s in security})
    if clash:
        raise InputError(f"{security_path}: task id(s) also in {tasks_path}: {', '.join(clash)}")
    payloads = load_payload_corpus(payloads_path) if payloads_path is not None else []
    seen: set[str] = set()
    for p in payloads:
        if p.id in seen:
            raise InputError(f"{payloads_path}: duplicate payload id {p.id!r}")
        seen.add(p.id)
    baseline: Baseline | None = None
    warnings: list[str] = []
    if baseline_path is not None:
        baseline, warnings = load_baseline(baseline_path, [t.id for t in tasks])
    return Suite(tasks=tasks, security=security, payloads=payloads, baseline=baseline, warnings=warnings)
