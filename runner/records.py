"""The gate's own records: one judged benchmark task, one security task, one payload.

They are pydantic dataclasses: built by keyword (or position) like plain dataclasses, validated when
built and when read back, and part of the one typed results model (:mod:`runner.reports.model`)
whose JSON Schema is generated from them. ``to_dict`` / ``from_dict`` round-trip through JSON so
that ``events.jsonl`` holds everything a report needs and ``finevo-verify report`` can rebuild every
report without re-running anything.

Each vocabulary is one enum here (states of a task, a security task, a payload; the verdict's
status); a ``StrEnum`` member compares equal to its value, so ``result.state == "pass"`` holds.

Extending: a new field gets a default (records written before it existed still load); a record
that later holds several trials of one task keeps these per-trial fields and adds a list of them.
"""

from __future__ import annotations

from dataclasses import asdict, field
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PositiveInt,
    TypeAdapter,
    WithJsonSchema,
    field_validator,
)
from pydantic.dataclasses import dataclass

from finevo.jsontypes import JSONObject
from finevo.limits import MAX_DEPTH as JSON_MAX_DEPTH
from finevo.outcome import Attempt, ErrorInfo, LLMUsage
from finevo.vocabulary import TASK_CATEGORIES, Category, ToolSource


def _task_category(value: Category) -> Category:
    if value not in TASK_CATEGORIES:
        raise ValueError(f"a benchmark task's category is one of {', '.join(TASK_CATEGORIES)}, not {value}")
    return value


#: A benchmark task's category: every :class:`Category` but ``security`` (the schema lists exactly these).
TaskCategory = Annotated[Category, AfterValidator(_task_category), WithJsonSchema(
    {"enum": [c.value for c in TASK_CATEGORIES], "title": "TaskCategory", "type": "string"})]
#: Every record refuses keys it does not know (a typo or a forged field is an error, not ignored).
_STRICT = ConfigDict(extra="forbid")
Seconds = Annotated[float, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]
#: Values a tool returned are kept this many levels deep (the one bound of :mod:`finevo.limits`, which
#: the sandbox enforces on results too); anything deeper is replaced by a note (a report, a JSON writer
#: or a validator must never recurse without bound on a tool's value).
MAX_VALUE_DEPTH = JSON_MAX_DEPTH


def bounded(value: Any, depth: int = MAX_VALUE_DEPTH) -> Any:
    """``value`` with containers nested deeper than ``depth`` replaced by a short note."""
    if isinstance(value, dict):
        if depth <= 0:
            return f"<a mapping nested deeper than {MAX_VALUE_DEPTH} levels, left out>"
        return {k: bounded(v, depth - 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        if depth <= 0:
            return f"<a list nested deeper than {MAX_VALUE_DEPTH} levels, left out>"
        return [bounded(v, depth - 1) for v in value]
    return value


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


class VerdictStatus(StrEnum):
    """The gate's verdict on a run: passed / failed are verdicts; no_verdict and partial are not
    (also importable from :mod:`runner.verdict.decide`)."""

    PASSED = "passed"
    FAILED = "failed"
    #: The harness could not judge (self-check failed).
    NO_VERDICT = "no_verdict"
    #: Interrupted or crashed: reports are partial.
    PARTIAL = "partial"


TASK_STATES: tuple[str, ...] = tuple(s.value for s in TaskState)


@dataclass(config=_STRICT)
class ToolInfo:
    name: str | None = None
    version: str | None = None
    hash: str | None = None
    source: ToolSource = ToolSource.NONE


@dataclass(config=_STRICT)
class ProbeResult:
    """One probe of a benchmark task: the final tool re-run with changed arguments, judged."""

    index: PositiveInt
    #: The arguments the probe changes (merged over the task's own when the tool runs).
    args: JSONObject
    state: TaskState
    reason: str
    #: ``{convention: expected value}`` the probe value was judged against.
    expected: JSONObject = field(default_factory=dict)
    actual: Any = None
    duration_s: Seconds = 0.0

    @field_validator("args", "expected", "actual", mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        return bounded(value)

    def to_dict(self) -> JSONObject:
        return _plain(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> ProbeResult:
        return TypeAdapter(cls).validate_python(data)


@dataclass(config=_STRICT)
class WorldResult:
    """One hidden market world a benchmark task's final tool was judged in."""

    #: How reasons name the world: ``seed-123``, ``as_of-2024-06-28``, ``edge-2024-12-31``.
    world: str
    #: ``seed`` | ``as_of`` | ``edge``.
    kind: str
    as_of: str
    #: pass: every value matched; fail / error: the first that did not (``reason`` says which);
    #: skipped: not judged (an earlier check failed, or the oracle has no answer in this world).
    state: TaskState
    reason: str
    #: What the world changed, in words (the spikes placed; empty for a generated world).
    perturbation: str = ""
    #: Values judged here: the task's own arguments and each probe's.
    checks: Count = 0
    duration_s: Seconds = 0.0

    def to_dict(self) -> JSONObject:
        return _plain(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> WorldResult:
        return TypeAdapter(cls).validate_python(data)


@dataclass(config=_STRICT)
class TaskResult:
    """One benchmark task as judged by the gate."""

    task_id: str
    category: TaskCategory
    query: str
    state: TaskState
    reason: str
    stage: str = "planning"
    expected: JSONObject = field(default_factory=dict)
    actual: Any = None
    convention: str | None = None
    tool: ToolInfo = field(default_factory=ToolInfo)
    code: str | None = None
    refinements: Count = 0
    attempts: list[Attempt] = field(default_factory=list)
    llm: LLMUsage = field(default_factory=LLMUsage)
    duration_s: Seconds = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    error: ErrorInfo | None = None
    stdout: str = ""
    stderr: str = ""
    #: The task's probes, in order (empty when the task has none or the main value did not pass).
    probes: list[ProbeResult] = field(default_factory=list)
    #: The hidden worlds the final tool was judged in, in order (empty when none were, e.g. the
    #: main value did not pass or the run judged in the recorded world only).
    worlds: list[WorldResult] = field(default_factory=list)
    #: Which repeat of the suite this trial belongs to (1..K with ``--repeats K``).
    repeat: PositiveInt = 1

    @field_validator("expected", "actual", "attempts", mode="before")
    @classmethod
    def _bounded(cls, value: Any) -> Any:
        return bounded(value)

    def to_dict(self) -> JSONObject:
        return _plain(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> TaskResult:
        return TypeAdapter(cls).validate_python(data)

    @classmethod
    def skipped(cls, task_id: str, category: str, query: str, reason: str = "not run", repeat: int = 1) -> TaskResult:
        return TypeAdapter(cls).validate_python(
            {"task_id": task_id, "category": category, "query": query, "state": "skipped", "reason": reason,
             "repeat": repeat})


@dataclass(config=_STRICT)
class SecurityResult:
    """One security task: did a layer stop the hostile request, and which one."""

    task_id: str
    query: str
    attack: str
    state: SecurityState
    reason: str
    blocked_by: str | None = None
    stage: str = "planning"
    tool_source: ToolSource = ToolSource.NONE
    code: str | None = None
    duration_s: Seconds = 0.0
    error: ErrorInfo | None = None
    category: Literal[Category.SECURITY] = Category.SECURITY
    #: The LLM calls the agent made on this task (results written before it existed have none: zeros).
    llm: LLMUsage = field(default_factory=LLMUsage)

    def to_dict(self) -> JSONObject:
        return _plain(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> SecurityResult:
        return TypeAdapter(cls).validate_python(data)


@dataclass(config=_STRICT)
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
    duration_s: Seconds = 0.0

    def to_dict(self) -> JSONObject:
        return _plain(self)

    @classmethod
    def from_dict(cls, data: JSONObject) -> PayloadResult:
        return TypeAdapter(cls).validate_python(data)


class _StrictModel(BaseModel):
    model_config = _STRICT


class SelfCheckReference(_StrictModel):
    passed: int = Field(ge=0)
    total: int = Field(ge=0)
    not_passing: list[str]
    reused_main_run: bool
    reasons: dict[str, str] = Field(default_factory=dict)


class SelfCheckNull(_StrictModel):
    passed: int = Field(ge=0)
    total: int = Field(ge=0)
    passing: list[str]


class SelfCheck(_StrictModel):
    """The harness self-check: the reference model must pass everything, the null model nothing."""

    enabled: bool
    ok: bool | None
    reason: str
    duration_s: float | None = Field(default=None, ge=0)
    reference: SelfCheckReference | None = None
    null: SelfCheckNull | None = None

    @classmethod
    def not_run(cls, reason: str) -> SelfCheck:
        """A self-check that did not run, and why."""
        return cls(enabled=False, ok=None, reason=reason)


class ContainmentProbe(_StrictModel):
    name: str
    contained: bool
    layer: str | None
    detail: str


class ContainmentSelftest(_StrictModel):
    """The sandbox proving its own layers (hostile probes with the policy off) before a verdict."""

    enabled: bool
    ok: bool | None
    duration_s: float = Field(ge=0)
    reason: str
    probes: list[ContainmentProbe] = Field(default_factory=list)


def _plain(record: Any) -> JSONObject:
    """The record as plain JSON values (enum members become their string values)."""
    return _values(asdict(record))  # type: ignore[no-any-return]


def _values(value: Any) -> Any:
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, dict):
        return {k: _values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_values(v) for v in value]
    return value
