"""What the agent returns for one task (the contract between ``finevo`` and the gate)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from finevo.errors import FinevoError, error_from_dict
from finevo.vocabulary import ToolSource

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


@dataclass
class Attempt:
    """One synthesis or refinement attempt, kept with its parent for the record."""

    number: int
    stage: str
    ok: bool
    error: dict[str, Any] | None = None
    code_hash: str | None = None
    parent_hash: str | None = None
    #: The LLM call that produced this attempt (``LLMUsage`` fields as a plain dict); None when
    #: no call was made.
    usage: dict[str, Any] | None = None
    #: The verification stages this attempt went through, in order, each
    #: ``{"name", "ok", "note"}`` (the note says what passed or why it failed); empty
    #: when no code came out of the reply.
    stages: list[dict[str, Any]] = field(default_factory=list)
    #: The earlier attempt whose reply this one repeats unchanged (a prediction or cassette reply
    #: reused, a model returning the same code): not verified again and not a refinement.
    repeat_of: int | None = None
    #: The code this attempt produced (None when the reply held none): the reports show the
    #: change between consecutive attempts.
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

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["error"] = self.error.to_dict() if self.error is not None else None
        data["refinements"] = self.refinements
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Outcome:
        data = dict(data)
        data.pop("refinements", None)
        err = data.get("error")
        data["error"] = error_from_dict(err) if err else None
        data["usage"] = LLMUsage(**(data.get("usage") or {}))
        data["attempts"] = [Attempt(**a) for a in data.get("attempts") or []]
        data["tool_source"] = ToolSource(data.get("tool_source") or ToolSource.NONE)
        return cls(**data)
