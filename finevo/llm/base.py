"""The LLM provider interface.

Every provider (``live``, ``replay:FILE``, ``predictions:FILE``, ``reference``) answers a
:class:`ChatRequest` with a :class:`ChatReply` or raises a typed
:class:`~finevo.errors.ExternalError`. ``task_id`` and ``attempt`` travel with the request so
that providers that are not a model (predictions, reference) can answer per task and attempt;
they are *not* part of the cassette key (which is the canonical request: model, messages,
temperature, tools).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from finevo.outcome import LLMUsage

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject


@dataclass(frozen=True)
class ChatRequest:
    model: str
    messages: tuple[dict[str, str], ...]
    temperature: float = 0.0
    #: Tool (function) definitions as the chat API takes them: open JSON.
    tools: tuple[JSONObject, ...] = ()
    task_id: str | None = None
    attempt: int = 0


@dataclass
class ChatReply:
    content: str
    usage: LLMUsage = field(default_factory=LLMUsage)
    model: str | None = None
    finish_reason: str | None = None
    #: Provider facts worth keeping in the record: ``retries`` (live), ``cassette_key`` (replay),
    #: ``prediction_attempt`` / ``fallback`` (predictions), ``source`` (reference).
    details: JSONObject = field(default_factory=dict)


class LLMProvider(Protocol):
    name: str

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply: ...
