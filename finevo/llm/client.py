"""Chat completions against any OpenAI-compatible endpoint, over real HTTP.

The ``openai`` SDK does the wire work with its own retries switched off; retries are ours (one
policy, visible, testable): exponential backoff with full jitter on 429, 408, 5xx, timeouts and
connection errors, at most ``max_retries`` extra attempts. A 429 carrying ``Retry-After`` waits
that long when it is at most ``retry_after_cap`` seconds; a longer one ends the call at once (the
server has said a quick retry is pointless). 400 / 401 / 403 / 404 / 422 and unreadable replies
are never retried. The numbers are a :class:`RetryPolicy`.

Every SDK or transport exception leaves this module as a typed
:class:`~finevo.errors.LLMAPIError` subclass whose message names the task.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import openai
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt

from finevo.errors import (
    LLMAPIError,
    LLMAuthError,
    LLMConnectionError,
    LLMRateLimitError,
    LLMTimeoutError,
)
from finevo.llm.base import ChatReply, ChatRequest
from finevo.outcome import LLMUsage
from finevo.vocabulary import ProviderKind

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

OPENAI_DEFAULT_BASE_URL = "https://api.openai.com/v1"
#: Sent when the endpoint needs no key (a local vLLM / Ollama / llama.cpp server); the SDK wants one.
KEYLESS_PLACEHOLDER = "no-key-required"
_RETRY_STATUS = frozenset({408, 409, 429})


class _Retryable(Exception):
    """Internal wrapper: a typed error that the retry loop may try again."""

    def __init__(self, error: LLMAPIError, retry_after: float | None = None) -> None:
        super().__init__(error.message)
        self.error = error
        self.retry_after = retry_after


@dataclass(frozen=True)
class RetryPolicy:
    """When the client tries a call again and how long it waits first: at most ``max_retries``
    extra attempts; exponential backoff with full jitter from ``backoff_base`` seconds, capped at
    ``backoff_max``; a server's ``Retry-After`` honoured up to ``retry_after_cap`` seconds; waits
    spent by ``sleep`` (tests pass a fake)."""

    max_retries: int = 3
    backoff_base: float = 1.0
    backoff_max: float = 30.0
    retry_after_cap: float = 30.0
    sleep: Callable[[float], None] = time.sleep

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")


class OpenAIChatClient:
    """A provider answering :class:`ChatRequest` through the chat-completions endpoint."""

    name = ProviderKind.LIVE.value

    def __init__(self, base_url: str | None, api_key: str | None, model: str, temperature: float = 0.0,
                 timeout: float = 60.0, *, retry: RetryPolicy | None = None) -> None:
        """``timeout`` bounds one HTTP request; ``retry`` (default: :class:`RetryPolicy`'s defaults)
        says when a failed one is tried again."""
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.base_url = (base_url or OPENAI_DEFAULT_BASE_URL).rstrip("/")
        self.model = model
        self.temperature = temperature
        self.timeout = timeout
        self.retry = retry if retry is not None else RetryPolicy()
        self._sdk = openai.OpenAI(base_url=self.base_url, api_key=api_key or KEYLESS_PLACEHOLDER,
                                  timeout=timeout, max_retries=0)

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatClient(base_url={self.base_url!r}, model={self.model!r})"

    def close(self) -> None:
        self._sdk.close()

    # ------------------------------------------------------------------ public
    def chat(self, messages: list[dict[str, str]], *, task_id: str | None = None, attempt: int = 0,
             timeout: float | None = None) -> ChatReply:
        """Convenience: one call with this client's model and temperature."""
        request = ChatRequest(model=self.model, messages=tuple(messages), temperature=self.temperature,
                              task_id=task_id, attempt=attempt)
        return self.complete(request, timeout=timeout)

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply:
        """Answer ``request``; ``timeout`` bounds the whole logical call (retries and waits included)."""
        started = time.monotonic()
        deadline = started + timeout if timeout is not None else None
        tries = 0

        def one_attempt() -> Any:
            nonlocal tries
            tries += 1
            per_try = self.timeout
            if deadline is not None:
                per_try = min(per_try, deadline - time.monotonic())
                if per_try <= 0:
                    raise _Retryable(self._error(LLMTimeoutError, request, "call deadline passed before the request"
                                                 " could be sent", tries))
            return self._send(request, per_try, tries)

        retrying = Retrying(
            stop=self._stop(deadline),
            wait=self._wait,
            retry=retry_if_exception(lambda exc: isinstance(exc, _Retryable)),
            sleep=self.retry.sleep,
            reraise=True,
        )
        try:
            completion = retrying(one_attempt)
        except _Retryable as final:
            final.error.details["attempts"] = tries
            final.error.details["retries"] = tries - 1
            if tries > 1:
                final.error.message = f"{final.error.message} (gave up after {tries} attempts)"
                final.error.args = (final.error.message,)
            raise final.error from None
        latency = time.monotonic() - started
        return self._reply(completion, request, latency, tries)

    # ------------------------------------------------------------------ retry policy
    def _stop(self, deadline: float | None) -> Callable[[RetryCallState], bool]:
        by_count = stop_after_attempt(self.retry.max_retries + 1)

        def stop(state: RetryCallState) -> bool:
            if by_count(state):
                return True
            exc = state.outcome.exception() if state.outcome else None
            cap = self.retry.retry_after_cap
            if isinstance(exc, _Retryable) and exc.retry_after is not None and exc.retry_after > cap:
                return True
            if deadline is not None:  # tenacity computes the wait before asking us
                return time.monotonic() + state.upcoming_sleep >= deadline
            return False

        return stop

    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, _Retryable) and exc.retry_after is not None:
            return min(exc.retry_after, self.retry.retry_after_cap)
        # full jitter: uniform in [0, min(max, base * 2**n)], n = retries so far
        ceiling = min(self.retry.backoff_max, self.retry.backoff_base * (2 ** max(0, state.attempt_number - 1)))
        return random.uniform(0.0, ceiling)

    # ------------------------------------------------------------------ one HTTP request
    def _send(self, request: ChatRequest, timeout: float, tries: int) -> Any:
        kwargs: JSONObject = {  # the request body: open JSON for the SDK
            "model": request.model or self.model,
            "messages": [dict(m) for m in request.messages],
            "temperature": request.temperature,
            "timeout": timeout,
        }
        if request.tools:
            kwargs["tools"] = [dict(t) for t in request.tools]
        try:
            return self._sdk.chat.completions.create(**kwargs)
        except openai.APITimeoutError:
            raise _Retryable(self._error(LLMTimeoutError, request, f"no reply within {timeout:.1f}s", tries)) from None
        except openai.APIConnectionError as exc:
            raise _Retryable(self._error(LLMConnectionError, request,
                                         f"cannot reach {self.base_url}: {_cause(exc)}", tries)) from None
        except openai.APIStatusError as exc:
            raise self._status_error(exc, request, tries) from None
        except (json.JSONDecodeError, UnicodeDecodeError, openai.APIResponseValidationError) as exc:
            raise self._error(LLMAPIError, request, f"unreadable reply from {self.base_url}: "
                              f"{type(exc).__name__}: {_short(str(exc))}", tries) from None
        except openai.OpenAIError as exc:
            raise self._error(LLMAPIError, request, f"{type(exc).__name__}: {_short(str(exc))}", tries) from None

    def _status_error(self, exc: openai.APIStatusError, request: ChatRequest, tries: int) -> Exception:
        status = exc.status_code
        detail = f"HTTP {status} from {self.base_url}: {_short(_api_message(exc))}"
        if status == 429:
            retry_after = _retry_after(exc)
            err = self._error(LLMRateLimitError, request, f"rate limited: {detail}", tries,
                              status=status, retry_after=retry_after)
            return _Retryable(err, retry_after)
        if status in (401, 403):
            return self._error(LLMAuthError, request, f"authentication refused: {detail} "
                               "(check FINEVO_LLM_API_KEY / OPENAI_API_KEY)", tries, status=status)
        err = self._error(LLMAPIError, request, detail, tries, status=status)
        if status >= 500 or status in _RETRY_STATUS:
            return _Retryable(err, _retry_after(exc))
        return err

    def _error(self, cls: type[LLMAPIError], request: ChatRequest, text: str, tries: int,
               **details: Any) -> LLMAPIError:
        who = f"task {request.task_id}" if request.task_id else "LLM call"
        return cls(f"{who}: {text}", task_id=request.task_id, attempt=request.attempt,
                   model=request.model or self.model, **details)

    # ------------------------------------------------------------------ reply
    def _reply(self, completion: Any, request: ChatRequest, latency: float, tries: int) -> ChatReply:
        choices = getattr(completion, "choices", None)
        if not choices:
            raise self._error(LLMAPIError, request, f"reply from {self.base_url} has no choices", tries)
        choice = choices[0]
        message = getattr(choice, "message", None)
        content = getattr(message, "content", None) or ""
        usage = getattr(completion, "usage", None)
        return ChatReply(
            content=content,
            usage=LLMUsage(calls=1,
                           prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                           completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                           latency_s=latency),
            model=getattr(completion, "model", None) or request.model or self.model,
            finish_reason=getattr(choice, "finish_reason", None),
            details={"retries": tries - 1},
        )


def _retry_after(exc: openai.APIStatusError) -> float | None:
    """Seconds from ``retry-after-ms`` / ``Retry-After`` (seconds form only), else None."""
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            value = float(raw) * scale
        except ValueError:
            continue
        if value >= 0:
            return value
    return None


def _api_message(exc: openai.APIStatusError) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(exc, "message", "") or exc)


def _cause(exc: BaseException) -> str:
    cause = exc.__cause__ or exc.__context__
    return f"{type(cause).__name__}: {_short(str(cause))}" if cause else _short(str(exc))


def _short(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
