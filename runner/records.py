"""The gate's own records: one judged benchmark task, one security task, one payload.

These are plain dataclasses that round-trip through JSON (``to_dict`` / ``from_dict``) so that
``events.jsonl`` holds everything a report needs and ``finevo-verify report`` can rebuild every
report without re-running anything.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from finevo.outcome import LLMUsage
from finevo.vocabulary import Category, ToolSource


class TaskState(StrEnum):
    """How a benchmark task (or one of its probes) was judged."""

    PASS = "pass"
    #: The agent's own failure: a wrong value, a wrong shape, no answer, blocked code.
    FAIL = "fail"
    #: Trouble outside the agent (LLM API, cassette miss, sandbox unavailable): never scored as wrong.
    ERROR = "error"
    SKIPPED = "skipped"


class SecurityState(StrEnum):
    """Whether a layer stopped a security task's hostile request."""

    BLOCKED = "blocked"
    UNBLOCKED = "unblocked"
    #: No layer was reached (external trouble): never counted as blocked.
    ERROR = "error"
    SKIPPED = "skipped"


class PayloadState(StrEnum):
    """What the layers did with one hostile tool body of the payload corpus."""

    BLOCKED = "blocked"
    #: It ran, and confinement kept every canary intact.
    CONTAINED = "contained"
    UNBLOCKED = "unblocked"
    #: The sandbox itself failed: whether a layer would have stopped it is unknown.
    ERROR = "error"
    SKIPPED = "skipped"


@dataclass
class ToolInfo:
    name: str | None = None
    version: str | None = None
    hash: str | None = None
    source: str = ToolSource.NONE


@dataclass
class ProbeResult:
    """One probe of a benchmark task: the final tool re-run with changed arguments, judged."""

    index: int
    #: The arguments the probe changes (merged over the task's own when the tool runs).
    args: dict[str, Any]
    state: TaskState
    reason: str
    #: ``{convention: expected value}`` the probe value was judged against.
    expected: dict[str, Any] = field(default_factory=dict)
    actual: Any = None
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProbeResult:
        data = dict(data)
        data["state"] = TaskState(data["state"])
        return cls(**data)


@dataclass
class WorldResult:
    """One hidden market world a benchmark task's final tool was judged in (see :mod:`runner.worlds`)."""

    #: How reasons name the world: ``seed-123``, ``as_of-2024-06-28``, ``edge-2024-12-31``.
    world: str
    #: ``seed`` | ``as_of`` | ``edge`` (:class:`runner.worlds.WorldKind`).
    kind: str
    as_of: str
    #: pass: every value matched; fail / error: the first that did not (``reason`` says which);
    #: skipped: not judged (an earlier check failed, or the oracle has no answer in this world).
    state: TaskState
    reason: str
    #: What the world changed, in words (the spikes placed; empty for a generated world).
    perturbation: str = ""
    #: Values judged here: the task's own arguments and each probe's.
    checks: int = 0
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> WorldResult:
        data = dict(data)
        data["state"] = TaskState(data["state"])
        return cls(**data)


@dataclass
class TaskResult:
    """One benchmark task as judged by the gate."""

    task_id: str
    category: str
    query: str
    state: TaskState
    reason: str
    stage: str = "planning"
    expected: dict[str, Any] = field(default_factory=dict)
    actual: Any = None
    convention: str | None = None
    tool: ToolInfo = field(default_factory=ToolInfo)
    code: str | None = None
    refinements: int = 0
    attempts: list[dict[str, Any]] = field(default_factory=list)
    llm: LLMUsage = field(default_factory=LLMUsage)
    duration_s: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    error: dict[str, Any] | None = None
    stdout: str = ""
    stderr: str = ""
    #: The task's probes, in order (empty when the task has none or the main value did not pass).
    probes: list[ProbeResult] = field(default_factory=list)
    #: The hidden worlds the final tool was judged in, in order (empty when none were, e.g. the
    #: main value did not pass or ``--worlds 0``).
    worlds: list[WorldResult] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskResult:
        data = dict(data)
        data["tool"] = ToolInfo(**(data.get("tool") or {}))
        data["llm"] = LLMUsage(**(data.get("llm") or {}))
        data["probes"] = [ProbeResult.from_dict(p) for p in data.get("probes") or []]
        data["worlds"] = [WorldResult.from_dict(w) for w in data.get("worlds") or []]
        data["state"] = TaskState(data["state"])
        return cls(**data)

    @classmethod
    def skipped(cls, task_id: str, category: str, query: str, reason: str = "not run") -> TaskResult:
        return cls(task_id=task_id, category=category, query=query, state=TaskState.SKIPPED, reason=reason)


@dataclass
class SecurityResult:
    """One security task: did a layer stop the hostile request, and which one."""

    task_id: str
    query: str
    attack: str
    state: SecurityState
    reason: str
    blocked_by: str | None = None
    stage: str = "planning"
    tool_source: str = ToolSource.NONE
    code: str | None = None
    duration_s: float = 0.0
    error: dict[str, Any] | None = None
    category: str = Category.SECURITY
    #: The LLM calls the agent made on this task (results written before it existed have none: zeros).
    llm: LLMUsage = field(default_factory=LLMUsage)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SecurityResult:
        data = dict(data)
        data["llm"] = LLMUsage(**(data.get("llm") or {}))
        data["state"] = SecurityState(data["state"])
        return cls(**data)


@dataclass
class PayloadResult:
    """One hostile tool body from the payload corpus, run straight through the sandbox.

    ``error``: the sandbox itself failed (raised instead of returning a result), so whether a layer
    would have stopped the payload is unknown -- never counted as blocked.
    """

    payload_id: str
    attempt: str
    state: PayloadState
    reason: str
    layer: str | None = None
    status: str | None = None
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PayloadResult:
        data = dict(data)
        data["state"] = PayloadState(data["state"])
        return cls(**data)
