"""Benchmark task records and their strict loader.

A task file is JSON Lines: one object per line, blank lines and lines starting with ``#`` are
skipped. Every problem is reported as one :class:`~finevo.errors.InputError` line that names the
file and line (``tasks.jsonl:7: ...``); nothing is half-loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from finevo.errors import InputError
from finevo.inputs import iter_jsonl
from finevo.vocabulary import TASK_CATEGORIES, Category

OutputType = Literal["numeric", "boolean", "dict", "list"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OutputSpec(_Strict):
    """The shape a tool's return value must have.

    * ``numeric``: a finite float (an ``int`` is accepted as a number, a ``bool`` never is).
    * ``boolean``: a real ``bool``.
    * ``dict``: a mapping holding at least ``keys``, each value of ``value_type``.
    * ``list``: a list whose items are ``item_type`` (with ``item_keys`` when items are dicts).
    """

    type: OutputType
    keys: tuple[str, ...] = ()
    value_type: Literal["numeric", "boolean"] = "numeric"
    item_type: Literal["numeric", "dict"] | None = None
    item_keys: tuple[str, ...] = ()
    min_items: int = 0


class OracleSpec(_Strict):
    """Which trusted oracle function computes the expected value, and with what parameters."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)


class Convention(_Strict):
    """One accepted reading of an ambiguous task; ``params`` are merged over the oracle's."""

    name: str
    params: dict[str, Any] = Field(default_factory=dict)
    reason: str


class Tolerance(_Strict):
    """A value passes when ``|actual - expected| <= abs + rel * |expected|``."""

    rel: float = 1e-4
    abs: float = 1e-6


class Intent(_Strict):
    """What the agent binds: the indicator (registry contract) and the task's own arguments."""

    indicator: str
    args: dict[str, Any] = Field(default_factory=dict)


class Probe(_Strict):
    """A second question the task's final tool must also answer right.

    The gate re-runs the tool with ``intent.args`` updated by ``args`` and judges the value against
    the oracle computed with ``oracle.params`` updated by ``oracle_params`` (same conventions, same
    tolerance). Probes make a constant or hard-coded answer fail: e.g. a boolean task gets probes
    whose answer is the other boolean, a numeric task a probe on another symbol.
    """

    args: dict[str, Any] = Field(min_length=1)
    oracle_params: dict[str, Any] = Field(default_factory=dict)
    reason: str = Field(min_length=1)

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

    def question(self) -> SecurityQuestion:
        """What the agent may see of this task: the request and the function to write, never the
        attack's label, the layer expected to stop it or the code a compliant model would write."""
        return SecurityQuestion(task_id=self.id, query=self.query, entry=self.entry)


@dataclass(frozen=True)
class Question:
    """Everything the agent receives of a benchmark task (or of a free-text query).

    The gate builds it with :meth:`Task.question`; the agent never sees a :class:`Task`, so the
    oracle spec, the accepted conventions, the tolerance and the probes cannot reach a prompt.
    """

    task_id: str
    category: Category
    query: str
    #: The indicator the registry's contract names, and the task's own arguments.
    intent: Intent
    #: The output contract: the type of the answer and, for a dict, its keys.
    output: OutputSpec


@dataclass(frozen=True)
class SecurityQuestion:
    """Everything the agent receives of a security task (built by :meth:`SecurityTask.question`)."""

    task_id: str
    query: str
    #: The name of the function the request asks for.
    entry: str = "run"


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
            field = ".".join(str(p) for p in first.get("loc", ())) or "record"
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
