"""Load and validate everything a gate run reads, then select the tasks to run.

Every flaw is one :class:`~finevo.errors.InputError` line naming the file (and line when there is
one); the CLI turns it into exit code 2 before anything is written.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finevo.corpus import Payload, load_payloads
from finevo.errors import InputError
from finevo.inputs import read_json
from finevo.tasks import SecurityTask, Task, load_security_tasks, load_tasks
from finevo.vocabulary import Category, choices, words

_BASELINE_KEYS = ("passing_tasks", "target_pass_rate")


@dataclass(frozen=True)
class Baseline:
    """``benchmarks/baseline.json``: the tasks that passed when the baseline was taken."""

    path: str
    passing_tasks: tuple[str, ...]
    target_pass_rate: float
    version: str = ""
    description: str = ""
    total_tasks: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "version": self.version, "description": self.description,
                "passing_tasks": list(self.passing_tasks), "total_tasks": self.total_tasks,
                "target_pass_rate": self.target_pass_rate}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Baseline:
        return cls(path=str(data.get("path", "")), passing_tasks=tuple(data.get("passing_tasks") or ()),
                   target_pass_rate=float(data.get("target_pass_rate", 0.0)),
                   version=str(data.get("version", "")), description=str(data.get("description", "")),
                   total_tasks=data.get("total_tasks"))


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


def load_payload_corpus(path: str | Path) -> list[Payload]:
    """Load the adversarial payload corpus (:mod:`finevo.corpus`, strict: one line per flaw)."""
    return load_payloads(path)


_SHARD = re.compile(r"^([0-9]+)/([0-9]+)$")


def parse_shard(text: str | None) -> tuple[int, int] | None:
    """``"K/N"`` (1 <= K <= N) -> ``(K, N)``; ``None`` -> ``None``."""
    if text is None:
        return None
    m = _SHARD.match(text.strip())
    if not m:
        raise InputError(f"--shard: expected K/N (e.g. 1/4), got {text!r}")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise InputError(f"--shard: need 1 <= K <= N, got {text!r}")
    return k, n


def parse_only(text: str | None) -> list[str] | None:
    if text is None:
        return None
    ids = [t.strip() for t in text.split(",") if t.strip()]
    if not ids:
        raise InputError("--only: no task ids given")
    return ids


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
    """Load every input file; ``None`` paths are simply not used."""
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
