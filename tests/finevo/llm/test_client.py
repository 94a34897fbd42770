"""The live client against the scripted server, over real HTTP."""

from __future__ import annotations

import time

import pytest

from finevo.errors import (
    ExternalError,
    LLMAPIError,
    LLMAuthError,
    LLMConnectionError,
    LLMRateLimitError,
    LLMTimeoutError,
)
from finevo.llm.base import ChatRequest
from finevo.llm.client import OpenAIChatClient, RetryPolicy
from tests.support.scripted_llm import Delay, Garbage, Reply, ScriptedLLMServer, Status

REQ = ChatRequest(model="test-model", messages=({"role": "system", "content": "be brief"},
                                                {"role": "user", "content": "write a tool"}),
                  temperature=0.0, task_id="calc_001", attempt=0)


def _client(base_url: str, *, api_key: str | None = "sk-test", temperature: float = 0.0, timeout: float = 5.0,
            max_retries: int = 3, retry_after_cap: float = 30.0) -> OpenAIChatClient:
    retry = RetryPolicy(max_retries=max_retries, backoff_base=0.001, backoff_max=0.01, retry_after_cap=retry_after_cap)
    return OpenAIChatClient(base_url, api_key=api_key, model="default-model", temperature=temperature,
                            timeout=timeout, retry=retry)


def test_reply_content_usage_and_request_shape() -> None:
    with ScriptedLLMServer([Reply("hello", prompt_tokens=42, completion_tokens=9)]) as srv:
        reply = _client(srv.base_url).complete(REQ)
        assert reply.content == "hello"
        assert reply.usage.calls == 1
        assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (42, 9)
        assert reply.usage.latency_s > 0
        assert reply.finish_reason == "stop"
        assert reply.model == "test-model"
        assert reply.details["retries"] == 0
        sent = srv.requests[0]
        assert sent.path == "/v1/chat/completions"
        assert sent.json["model"] == "test-model"
        assert sent.json["messages"] == list(REQ.messages)
        assert sent.json["temperature"] == 0.0
        assert sent.authorized_with("sk-test")


def test_chat_uses_client_defaults() -> None:
    with ScriptedLLMServer([Reply("x")]) as srv:
        _client(srv.base_url, temperature=0.3).chat([{"role": "user", "content": "q"}], task_id="fetch_001")
        assert srv.requests[0].json["model"] == "default-model"
        assert srv.requests[0].json["temperature"] == 0.3


@pytest.mark.parametrize("failure", [Status(429), Status(500), Status(503), Garbage(b"", status=502)])
def test_transient_failures_are_retried_then_succeed(failure) -> None:  # type: ignore[no-untyped-def]
    with ScriptedLLMServer([failure, failure, Reply("finally", prompt_tokens=5, completion_tokens=6)]) as srv:
        reply = _client(srv.base_url).complete(REQ)
        assert reply.content == "finally"
        assert reply.usage.calls == 1  # one logical call
        assert reply.usage.prompt_tokens == 5
        assert reply.details["retries"] == 2
        assert len(srv.requests) == 3


def test_retries_are_bounded_and_typed() -> None:
    with ScriptedLLMServer([Status(500)] * 10) as srv:
        with pytest.raises(LLMAPIError) as info:
            _client(srv.base_url, max_retries=2).complete(REQ)
        assert len(srv.requests) == 3
        err = info.value
        assert isinstance(err, ExternalError)
        assert "calc_001" in str(err) and "500" in str(err)
        assert err.details["attempts"] == 3 and err.details["retries"] == 2
        assert err.details["status"] == 500


def test_rate_limit_exhausted_is_rate_limit_error() -> None:
    with ScriptedLLMServer([Status(429, retry_after=0)] * 3) as srv:
        with pytest.raises(LLMRateLimitError, match="calc_001"):
            _client(srv.base_url, max_retries=2).complete(REQ)
        assert len(srv.requests) == 3


def test_retry_after_is_honoured_when_small() -> None:
    with ScriptedLLMServer([Status(429, retry_after=0.4), Reply("ok")]) as srv:
        _client(srv.base_url, retry_after_cap=5).complete(REQ)
        gap = srv.requests[1].received_at - srv.requests[0].received_at
        assert gap >= 0.35


def test_long_retry_after_ends_the_call_without_waiting() -> None:
    with ScriptedLLMServer([Status(429, retry_after=120), Reply("never")]) as srv:
        started = time.monotonic()
        with pytest.raises(LLMRateLimitError) as info:
            _client(srv.base_url, retry_after_cap=5).complete(REQ)
        assert time.monotonic() - started < 3
        assert len(srv.requests) == 1
        assert info.value.details["retry_after"] == 120


@pytest.mark.parametrize(("status", "error"), [(400, LLMAPIError), (401, LLMAuthError), (403, LLMAuthError),
                                               (404, LLMAPIError)])
def test_client_errors_are_not_retried(status: int, error: type) -> None:
    with ScriptedLLMServer([Status(status), Reply("unused")]) as srv:
        with pytest.raises(error) as info:
            _client(srv.base_url).complete(REQ)
        assert type(info.value) is error
        assert len(srv.requests) == 1
        assert str(status) in str(info.value)


@pytest.mark.slow
def test_timeout_is_retried_then_typed() -> None:
    with ScriptedLLMServer([Delay(60), Delay(60)]) as srv:
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError, match="calc_001"):
            _client(srv.base_url, timeout=1.0, max_retries=1).complete(REQ)
        assert len(srv.requests) == 2
        assert time.monotonic() - started < 45  # two timeouts, not two minute-long replies


@pytest.mark.slow
def test_timeout_then_success() -> None:
    with ScriptedLLMServer([Delay(60), Reply("second try")]) as srv:
        reply = _client(srv.base_url, timeout=3.0).complete(REQ)
        assert reply.content == "second try" and reply.details["retries"] == 1


@pytest.mark.slow
def test_call_budget_bounds_retries() -> None:
    with ScriptedLLMServer([Delay(120)] * 5) as srv:
        started = time.monotonic()
        with pytest.raises(LLMTimeoutError):
            _client(srv.base_url, timeout=60.0, max_retries=10).complete(REQ, timeout=1.0)
        # the call's budget (1 s), not the request timeout (60 s) times eleven tries, bounds it
        assert time.monotonic() - started < 45


def test_connection_refused_is_connection_error() -> None:
    with ScriptedLLMServer([]) as srv:
        url = srv.base_url
    with pytest.raises(LLMConnectionError, match="cannot reach"):
        _client(url, max_retries=1).complete(REQ)


def test_invalid_json_body_is_api_error_not_retried() -> None:
    with ScriptedLLMServer([Garbage(b"{nope"), Reply("unused")]) as srv:
        with pytest.raises(LLMAPIError, match="unreadable reply"):
            _client(srv.base_url).complete(REQ)
        assert len(srv.requests) == 1


def test_reply_without_choices_is_api_error() -> None:
    with ScriptedLLMServer([Garbage(b'{"id": "x", "object": "chat.completion", "choices": []}')]) as srv:
        with pytest.raises(LLMAPIError, match="no choices"):
            _client(srv.base_url).complete(REQ)


def test_keyless_local_server_and_key_never_in_repr() -> None:
    with ScriptedLLMServer([Reply("ok")]) as srv:
        client = _client(srv.base_url, api_key=None)
        assert client.complete(REQ).content == "ok"
    secret = _client("http://127.0.0.1:9/v1", api_key="sk-super-secret")
    assert "sk-super-secret" not in repr(secret)


def test_tools_are_sent_when_given() -> None:
    tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}
    req = ChatRequest(model="m", messages=({"role": "user", "content": "q"},), tools=(tool,))
    with ScriptedLLMServer([Reply("ok")]) as srv:
        _client(srv.base_url).complete(req)
        assert srv.requests[0].json["tools"] == [tool]
