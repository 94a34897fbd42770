"""The four LLM providers and the one function that picks among them.

=====================  ======================================================================
spec                   what answers
=====================  ======================================================================
``live``               the chat-completions endpoint in the settings (``--record FILE`` also
                       appends every exchange to a cassette)
``replay:FILE``        only the cassette ``FILE``; a request it does not hold is a
                       :class:`~finevo.errors.CassetteMissError`. Never touches the network.
``predictions:FILE``   model outputs produced elsewhere (JSONL ``task_id``, ``attempt``, ``content``)
``reference``          the gold answers: ``benchmarks/reference/<task_id>.py`` for benchmark
                       tasks; for ``sec_*`` tasks, the hostile code the gate hands over
                       (``security_answers``: it never reads the security tasks itself)
=====================  ======================================================================

Decisions:

* ``live`` needs an endpoint it may talk to: an API key, or an explicit base URL (a local vLLM,
  Ollama or llama.cpp server needs no key, so a base URL alone is enough; the SDK then sends a
  placeholder key). Neither -> :class:`~finevo.errors.ProviderNotConfigured`.
* No spec at all: ``live`` when a key or base URL is configured, else ProviderNotConfigured.
  Nothing ever falls back to another provider.
* ``predictions``: a request for attempt N is answered by the line for attempt N or, when that
  is absent, by the highest attempt below N (a predictions file with one answer per task is the
  common case; its answer is then judged like a model repeating itself, so a wrong prediction is
  the agent's **fail**, not a missing-input **error**). The reply's ``details`` say
  ``fallback: true`` and which attempt answered. The agent records a reply that repeats an
  earlier attempt as *the same reply again*, counts no refinement for it and stops refining
  (this holds for every provider: a cassette reply or a model returning the same code too).
  No line for the task at all -> :class:`~finevo.errors.PredictionMissingError`. A line may
  carry ``repeat`` (1, 2, ...): with ``--repeats K`` the gate sets
  :attr:`PredictionsProvider.repeat`, and a task's lines for that repeat answer it, else its
  lines without ``repeat`` (so a file of one answer per task serves every repeat).
* ``replay`` reports the usage recorded with the exchange (tokens and the original latency), so
  a replayed run reports what the recorded run paid.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from finevo.errors import CassetteMissError, InputError, PredictionMissingError, ProviderNotConfigured
from finevo.inputs import iter_jsonl
from finevo.llm.base import ChatReply, ChatRequest, LLMProvider
from finevo.llm.cassette import Cassette, request_key
from finevo.outcome import LLMUsage
from finevo.paths import reference_dir as default_reference_dir
from finevo.settings import Settings
from finevo.vocabulary import ProviderKind

PROVIDER_SPECS = ProviderKind.specs()
#: What to type when no endpoint is configured: the offline gold run needs no key and no network.
if TYPE_CHECKING:
    from finevo.llm.client import RetryPolicy

OFFLINE_HINT = "to run offline without a key, add --llm reference (the benchmark's gold answers)"


# --------------------------------------------------------------------------- live (+ record)
class RecordingProvider:
    """Wraps a provider and appends each successful exchange to a cassette."""

    def __init__(self, inner: LLMProvider, cassette: Cassette) -> None:
        self.inner = inner
        self.cassette = cassette
        self.name = f"{inner.name}+record"

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply:
        reply = self.inner.complete(request, timeout=timeout)
        self.cassette.append(request, reply)
        return reply

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()


# --------------------------------------------------------------------------- replay
class ReplayProvider:
    def __init__(self, path: str | Path) -> None:
        self.cassette = Cassette(path, must_exist=True)
        self.name = f"{ProviderKind.REPLAY}:{path}"

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply:
        reply = self.cassette.get(request)
        if reply is None:
            who = f"task {request.task_id}" if request.task_id else "an LLM call"
            raise CassetteMissError(
                f"{who} (attempt {request.attempt}): request {request_key(request)[:12]} is not in cassette "
                f"{self.cassette.path}; re-record it with `--llm live --record {self.cassette.path}` "
                "(prompts, model or temperature changed since it was recorded)",
                task_id=request.task_id, attempt=request.attempt, key=request_key(request),
                cassette=str(self.cassette.path))
        return reply


# --------------------------------------------------------------------------- predictions
class PredictionsProvider:
    """Answers from a JSONL file of ``{"task_id", "attempt" (default 0), "repeat" (optional), "content"}``."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.name = f"{ProviderKind.PREDICTIONS}:{path}"
        #: (task id, repeat or None for every repeat) -> attempt -> content
        self._by_task: dict[tuple[str, int | None], dict[int, str]] = _load_predictions(self.path)
        #: The repeat being answered (set by the gate for ``--repeats``).
        self.repeat = 1

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply:
        started = time.monotonic()
        if not request.task_id:
            raise PredictionMissingError(f"{self.path}: a request without a task id cannot be answered from "
                                         "predictions")
        attempts = self._by_task.get((request.task_id, self.repeat)) or self._by_task.get((request.task_id, None))
        if not attempts and any(key[0] == request.task_id for key in self._by_task):
            raise PredictionMissingError(f"task {request.task_id}: no prediction for repeat {self.repeat} in "
                                         f"{self.path}", task_id=request.task_id, attempt=request.attempt,
                                         file=str(self.path))
        if not attempts:
            raise PredictionMissingError(f"task {request.task_id}: no prediction in {self.path}",
                                         task_id=request.task_id, attempt=request.attempt, file=str(self.path))
        usable = [a for a in attempts if a <= request.attempt]
        if not usable:
            raise PredictionMissingError(
                f"task {request.task_id}: no prediction for attempt {request.attempt} or earlier in {self.path} "
                f"(it has attempts {sorted(attempts)})",
                task_id=request.task_id, attempt=request.attempt, file=str(self.path))
        used = max(usable)
        return ChatReply(content=attempts[used], usage=LLMUsage(calls=1, latency_s=time.monotonic() - started),
                         model="predictions", finish_reason="stop",
                         details={"prediction_attempt": used, "fallback": used != request.attempt})


def _load_predictions(path: Path) -> dict[tuple[str, int | None], dict[int, str]]:
    out: dict[tuple[str, int | None], dict[int, str]] = {}
    for _lineno, where, row in iter_jsonl(path, "predictions file"):
        extra = sorted(set(row) - {"task_id", "attempt", "content", "repeat"})
        if extra:
            raise InputError(f"{where}: unknown field(s) {', '.join(extra)} "
                             "(expected task_id, attempt, repeat, content)")
        repeat = row.get("repeat")
        if repeat is not None and (isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1):
            raise InputError(f"{where}: 'repeat' must be a whole number >= 1")
        task_id, attempt, content = row.get("task_id"), row.get("attempt", 0), row.get("content")
        if not isinstance(task_id, str) or not task_id:
            raise InputError(f"{where}: 'task_id' must be a non-empty string")
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 0:
            raise InputError(f"{where}: 'attempt' must be a whole number >= 0")
        if not isinstance(content, str):
            raise InputError(f"{where}: 'content' must be a string")
        per_task = out.setdefault((task_id, repeat), {})
        if attempt in per_task:
            which = f" repeat {repeat}" if repeat is not None else ""
            raise InputError(f"{where}: duplicate prediction for task {task_id}{which} attempt {attempt}")
        per_task[attempt] = content
    if not out:
        raise InputError(f"{path}: no predictions")
    return out


# --------------------------------------------------------------------------- reference
class ReferenceProvider:
    """The gold run: each benchmark task's reference tool, each security task's hostile code."""

    name = ProviderKind.REFERENCE.value

    def __init__(self, reference_dir: str | Path | None = None,
                 security_answers: Mapping[str, str] | None = None) -> None:
        """``security_answers``: security task id -> the code a fully compliant model would write.

        The gate hands them over (``runner.inputs.tasks.security_answers``); the agent package never
        reads the security tasks itself. Without them the reference model answers benchmark tasks only.
        """
        self.reference_dir = Path(reference_dir) if reference_dir is not None else default_reference_dir()
        self._security = dict(security_answers or {})

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply:
        started = time.monotonic()
        task_id = request.task_id
        if not task_id:
            raise PredictionMissingError("the reference model answers benchmark tasks only; this request has no "
                                         "task id")
        if task_id.startswith("sec_"):
            answer = self._security.get(task_id)
            if answer is None:
                raise PredictionMissingError(f"task {task_id}: not among the security tasks the reference model "
                                             "knows", task_id=task_id)
            code, source = answer, "security_tasks.jsonl"
            prose = "Here is the code that does what was asked."
        else:
            path = self.reference_dir / f"{task_id}.py"
            if not path.is_file():
                raise PredictionMissingError(f"task {task_id}: no reference tool {path}", task_id=task_id,
                                             file=str(path))
            code, source = path.read_text(encoding="utf-8"), path.name
            prose = f"Here is a reusable tool for task {task_id}."
        content = f"{prose}\n\n```python\n{code.rstrip()}\n```\n"
        return ChatReply(content=content, usage=LLMUsage(calls=1, latency_s=time.monotonic() - started),
                         model="reference", finish_reason="stop", details={"source": source})


# --------------------------------------------------------------------------- factory
def make_provider(spec: str | None, settings: Settings, *, reference_dir: str | Path | None = None,
                  security_answers: Mapping[str, str] | None = None,
                  retry: RetryPolicy | None = None) -> LLMProvider:
    """The provider for ``spec`` (``None``: ``settings.llm``); ``retry`` is the live client's retry
    policy (default: ``settings.max_retries`` retries with the standard backoff)."""
    spec = spec if spec is not None else settings.llm
    if spec is None:
        if settings.api_key or settings.base_url:
            spec = ProviderKind.LIVE
        else:
            raise ProviderNotConfigured(
                "no LLM configured: set FINEVO_LLM_API_KEY / OPENAI_API_KEY (or FINEVO_LLM_BASE_URL for a local "
                f"server), or choose a provider with --llm ({PROVIDER_SPECS}); {OFFLINE_HINT}")
    spec = spec.strip()
    kind, _, arg = spec.partition(":")
    if settings.record is not None and kind != ProviderKind.LIVE:
        raise InputError(f"--record only works with --llm live (got --llm {spec})")
    if kind == ProviderKind.LIVE and not arg:
        if not settings.api_key and not settings.base_url:
            raise ProviderNotConfigured(
                "--llm live needs an endpoint: set FINEVO_LLM_API_KEY / OPENAI_API_KEY for a hosted API, or "
                f"FINEVO_LLM_BASE_URL / OPENAI_BASE_URL for a local OpenAI-compatible server; {OFFLINE_HINT}")
        # Imported here: only a live run needs the openai SDK (a reference, replay or predictions run
        # never pays for importing it, and the image ships it without bytecode: see Dockerfile).
        from finevo.llm.client import OpenAIChatClient, RetryPolicy

        client: LLMProvider = OpenAIChatClient(
            base_url=settings.base_url, api_key=settings.api_key, model=settings.model,
            temperature=settings.temperature, timeout=settings.timeout,
            retry=retry if retry is not None else RetryPolicy(max_retries=settings.max_retries))
        if settings.record is not None:
            return RecordingProvider(client, Cassette(settings.record))
        return client
    if kind == ProviderKind.REPLAY and arg.strip():
        return ReplayProvider(arg.strip())
    if kind == ProviderKind.PREDICTIONS and arg.strip():
        return PredictionsProvider(arg.strip())
    if kind == ProviderKind.REFERENCE and not arg:
        return ReferenceProvider(reference_dir, security_answers)
    raise InputError(f"unknown LLM provider '{spec}' (expected {PROVIDER_SPECS})")
