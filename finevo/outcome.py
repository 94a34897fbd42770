"""What the agent returns for one task (the contract between ``finevo`` and the gate)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from pydantic import ConfigDict, PositiveInt, TypeAdapter
from pydantic.dataclasses import dataclass as record

from finevo.errors import FinevoError, error_from_dict
from finevo.jsontypes import JSONObject
from finevo.vocabulary import ToolSource

#: Every record refuses keys it does not know (a typo or a forged field is an error, not ignored).
_STRICT = ConfigDict(extra="forbid")

#: Stages in the order a task goes through them; ``Outcome.stage`` is the last one reached.
STAGES: tuple[str, ...] = (
    "planning", "retrieval", "synthesis", "policy", "selftest", "contract", "metamorphic",
    "refinement", "registration", "execution", "done",
)


@dataclass
class LLMUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    def add(self, other: LLMUsage) -> None:
        self.calls += other.calls
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.latency_s += other.latency_s


@record(config=_STRICT)
class ErrorInfo:
    """A typed error as :meth:`finevo.errors.FinevoError.to_dict` writes it (the record of the
    exception: an attempt's and a task result's ``error``)."""

    kind: str
    code: str
    type: str
    message: str
    #: The error's own context (a rule, a line, a stage...): free-form JSON, normalised.
    details: JSONObject = field(default_factory=dict)

    @classmethod
    def of(cls, error: FinevoError | None) -> ErrorInfo | None:
        """The record of a typed error (None for none)."""
        return None if error is None else TypeAdapter(cls).validate_python(error.to_dict())

    def to_dict(self) -> JSONObject:
        return asdict(self)


@record(config=_STRICT)
class AttemptStage:
    """One verification stage an attempt went through."""

    name: str
    ok: bool
    #: What passed, or why it failed.
    note: str = ""


@record(config=_STRICT)
class Attempt:
    """One synthesis or refinement attempt, kept with its parent for the record (the results
    document records these very objects)."""

    number: PositiveInt
    stage: str
    ok: bool
    error: ErrorInfo | None = None
    code_hash: str | None = None
    parent_hash: str | None = None
    #: The LLM call that produced this attempt; None when no call was made.
    usage: LLMUsage | None = None
    #: The verification stages this attempt went through, in order; empty when no code came out
    #: of the reply.
    stages: list[AttemptStage] = field(default_factory=list)
    #: The earlier attempt whose reply this one repeats unchanged (a prediction or cassette reply
    #: reused, a model returning the same code): not verified again, not counted as a refinement,
    #: and refining stopped there.
    repeat_of: PositiveInt | None = None
    #: The code this attempt produced (None: the reply held none, or the results predate the
    #: field): the reports show the change between consecutive attempts.
    code: str | None = None


@dataclass
class Outcome:
    task_id: str
    value: Any = None
    tool_name: str | None = None
    tool_version: str | None = None
    tool_hash: str | None = None
    tool_source: ToolSource = ToolSource.NONE
    tool_code: str | None = None
    #: For a reused tool: the task it was first created for (None when unknown or not reused).
    tool_created_for: str | None = None
    attempts: list[Attempt] = field(default_factory=list)
    stage: str = "planning"
    timings: dict[str, float] = field(default_factory=dict)
    usage: LLMUsage = field(default_factory=LLMUsage)
    error: FinevoError | None = None
    #: For security tasks: the layer that stopped the attack (``policy:<rule>``, ``refused``,
    #: ``sandbox:<layer>``); None when nothing did.
    blocked_by: str | None = None
    stdout: str = ""
    stderr: str = ""

    @property
    def refinements(self) -> int:
        """Attempts after the first that brought a new reply (a repeat is not a refinement)."""
        return sum(1 for a in self.attempts[1:] if a.repeat_of is None)

    def to_dict(self) -> JSONObject:
        data = asdict(self)
        data["error"] = self.error.to_dict() if self.error is not None else None
        data["refinements"] = self.refinements
        return data

    @classmethod
    def from_dict(cls, data: JSONObject) -> Outcome:
        data = dict(data)
        data.pop("refinements", None)
        err = data.get("error")
        data["error"] = error_from_dict(err) if err else None
        data["usage"] = LLMUsage(**(data.get("usage") or {}))
        data["attempts"] = [Attempt(**a) for a in data.get("attempts") or []]
        data["tool_source"] = ToolSource(data.get("tool_source") or ToolSource.NONE)
        return cls(**data)
