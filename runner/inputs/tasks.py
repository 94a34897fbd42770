"""The benchmark's task schema (the gate's side of a task) and its strict loaders.

A :class:`Task` holds what the agent is asked (its :class:`~finevo.question.Question`: query, intent,
output contract) and what only the gate knows: the oracle spec, the accepted conventions, the
tolerance and the probes. A :class:`SecurityTask` holds a request the agent must never carry out and
the hostile code a fully compliant model would write (:func:`security_answers` hands it to the
reference model).

A task file is JSON Lines: one object per line, blank lines and lines starting with ``#`` are
skipped. Every problem is reported as one :class:`~finevo.errors.InputError` line that names the
file and line (``tasks.jsonl:7: ...``); nothing is half-loaded. A task's oracle parameters are read
into the oracle's typed model under every accepted reading and every probe when the task is built
(:func:`runner.inputs.oracle_params.check_task`): a wrong one fails the load, naming the task and the parameter.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from finevo.errors import InputError
from finevo.inputs import iter_jsonl
from finevo.jsontypes import JSONObject
from finevo.question import Intent, OutputSpec, Question, SecurityQuestion
from finevo.vocabulary import TASK_CATEGORIES, Category
from runner.inputs.corpus import PLACEHOLDERS, fill, unknown_placeholders
from runner.inputs.oracle_params import check_task

__all__ = ["Convention", "OracleSpec", "Probe", "SecurityTask", "Task", "Tolerance", "load_security_tasks",
           "load_tasks", "read_jsonl", "security_answers"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OracleSpec(_Strict):
    """Which trusted oracle function computes the expected value, and with what parameters.

    ``params`` is JSON as the task file gives it; the oracle reads it into its typed model
    (:mod:`runner.inputs.oracle_params`), which the task checks when it is built.
    """

    name: str
    params: JSONObject = Field(default_factory=dict)


class Convention(_Strict):
    """One accepted reading of an ambiguous task; ``params`` are merged over the oracle's."""

    name: str
    params: JSONObject = Field(default_factory=dict)
    reason: str


class Tolerance(_Strict):
    """A value passes when ``|actual - expected| <= abs + rel * |expected|``."""

    rel: float = 1e-4
    abs: float = 1e-6


class Probe(_Strict):
    """A second question the task's final tool must also answer right.

    The gate re-runs the tool with ``intent.args`` updated by ``args`` and judges the value against
    the oracle computed with ``oracle.params`` updated by ``oracle_params`` (same conventions, same
    tolerance). Probes make a constant or hard-coded answer fail: e.g. a boolean task gets probes
    whose answer is the other boolean, a numeric task a probe on another symbol.
    """

    # Open JSON (values narrowed where read: the tool's call takes the arguments, the oracle reads
    # oracle_params through its model like any parameters).
    args: JSONObject = Field(min_length=1)
    oracle_params: JSONObject = Field(default_factory=dict)
    reason: str = Field(min_length=1)
    #: The data cannot support these arguments (the oracle has no answer under any accepted
    #: reading): the tool must raise a clear error, never return a value.
    expect_error: bool = False
    #: Judged only on data whose every symbol the probe reads holds at least this many sessions
    #: (elsewhere recorded as not judged): a probe asked at a long scale, where accepted readings
    #: of a recursive indicator agree only once warmed up over that much history.
    min_sessions: int | None = Field(default=None, ge=1)
    #: Parameters the probe passes that the task does not bind (an optional parameter of the measure,
    #: such as ``periods_per_year``): asked only of a tool whose function declares every one of them
    #: by name -- a tool that has no such parameter cannot be asked, one that has it must honour it.
    declared: tuple[str, ...] = ()
    #: Arguments unusual enough that a clear error is as right as the value asked (a pair of windows
    #: given the other way round: ``short_window=20, long_window=5``): the oracle's values stand, and a
    #: tool that raises passes too.
    may_raise: bool = False

    def label(self) -> str:
        """``symbol=GOOGL, rsi_threshold=70``: the probe's changed arguments, for reasons and reports."""
        return ", ".join(f"{k}={v}" for k, v in self.args.items())


class Task(_Strict):
    id: str = Field(pattern=r"^[a-z]+_[0-9]{3}$")
    category: Category
    query: str = Field(min_length=1)
    output: OutputSpec
    intent: Intent
    oracle: OracleSpec
    tolerance: Tolerance = Tolerance()
    conventions: tuple[Convention, ...] = Field(min_length=1)
    #: Extra argument sets the final tool is re-run and judged on (see :class:`Probe`).
    probes: tuple[Probe, ...] = ()

    def question(self) -> Question:
        """What the agent may see of this task (never the oracle, conventions, tolerance or probes)."""
        return Question(task_id=self.id, category=self.category, query=self.query, intent=self.intent,
                        output=self.output)

    @field_validator("category")
    @classmethod
    def _task_category(cls, v: Category) -> Category:
        if v not in TASK_CATEGORIES:
            raise ValueError(f"a benchmark task's category is one of {', '.join(TASK_CATEGORIES)}, not {v}")
        return v

    @field_validator("conventions")
    @classmethod
    def _unique_conventions(cls, v: tuple[Convention, ...]) -> tuple[Convention, ...]:
        names = [c.name for c in v]
        if len(set(names)) != len(names):
            raise ValueError(f"duplicate convention names: {names}")
        return v

    @model_validator(mode="after")
    def _oracle_params(self) -> Task:
        """Every accepted reading, alone and under each probe, is parameters the oracle takes."""
        try:
            check_task(self)
        except InputError as exc:
            raise ValueError(exc.message) from None
        return self


class SecurityTask(_Strict):
    """A request a financial agent must never carry out.

    ``malicious_code`` is what a fully compliant model would write; the reference model answers
    with it so the blocking layers (policy, sandbox) are exercised for real.
    """

    id: str = Field(pattern=r"^sec_[0-9]{3}$")
    category: Category = Category.SECURITY
    query: str = Field(min_length=1)
    attack: str = Field(min_length=1)
    malicious_code: str = Field(min_length=1)
    entry: str = "run"
    #: The layer expected to stop ``malicious_code``: the static ``policy``, or (for code that is
    #: policy-clean on purpose, e.g. a memory bomb) containment at ``runtime``.
    expect: Literal["policy", "runtime"] = "policy"

    @field_validator("category")
    @classmethod
    def _security_category(cls, v: Category) -> Category:
        if v is not Category.SECURITY:
            raise ValueError(f"a security task's category is {Category.SECURITY}, not {v}")
        return v

    @field_validator("query", "malicious_code")
    @classmethod
    def _known_placeholders(cls, v: str) -> str:
        unknown = unknown_placeholders(v)
        if unknown:
            raise ValueError(f"unknown placeholder(s) {', '.join(unknown)} (known: {', '.join(PLACEHOLDERS)})")
        return v

    def question(self) -> SecurityQuestion:
        """What the agent may see of this task: the request and the function to write, never the
        attack's label, the layer expected to stop it or the code a compliant model would write."""
        return SecurityQuestion(task_id=self.id, query=self.query, entry=self.entry)

    def filled(self, values: Mapping[str, str]) -> SecurityTask:
        """This task with its canary placeholders (``@@CANARY_FILE@@``...) filled from ``values``
        (:meth:`runner.execution.canaries.Canaries.values`): what the agent is asked and the reference
        model answers."""
        return self.model_copy(update={"query": fill(self.query, values),
                                       "malicious_code": fill(self.malicious_code, values)})


M = TypeVar("M", bound=BaseModel)


def read_jsonl(path: str | Path, model: type[M], *, id_field: str = "id") -> list[M]:
    """Load a JSON Lines file of ``model`` records; raise one-line :class:`InputError` on any flaw."""
    path = Path(path)
    records: list[M] = []
    seen: dict[str, int] = {}
    for lineno, where, data in iter_jsonl(path):
        try:
            record = model.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ()))
            if not field:  # a check of the whole record: its message names what is wrong
                raise InputError(f"{where}: {str(first.get('msg')).removeprefix('Value error, ')}") from None
            raise InputError(f"{where}: invalid {model.__name__} field '{field}': {first.get('msg')}") from None
        key = str(getattr(record, id_field))
        if key in seen:
            raise InputError(f"{where}: duplicate id '{key}' (first on line {seen[key]})")
        seen[key] = lineno
        records.append(record)
    if not records:
        raise InputError(f"{path}: no records")
    return records


def load_tasks(path: str | Path) -> list[Task]:
    return read_jsonl(path, Task)


def load_security_tasks(path: str | Path) -> list[SecurityTask]:
    return read_jsonl(path, SecurityTask)


def security_answers(path: str | Path | None, canaries: Mapping[str, str] | None = None) -> dict[str, str]:
    """Security task id -> the code a fully compliant model would write (what the reference model
    answers), its canary placeholders filled from ``canaries`` (the security tasks' own set)."""
    if path is None:
        return {}
    return {task.id: task.filled(canaries or {}).malicious_code for task in load_security_tasks(path)}
