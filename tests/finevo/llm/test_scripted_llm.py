"""The scripted server itself: if it lies, every LLM test lies."""

from __future__ import annotations

import contextlib
import http.client
import json
import time
from urllib.parse import urlparse

from tests.support.scripted_llm import Delay, Garbage, Reply, ScriptedLLMServer, Status


def _post(base_url: str, path: str, payload: dict, timeout: float = 5.0,
          key: str = "sk-test") -> tuple[int, dict[str, str], bytes]:
    url = urlparse(base_url)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=timeout)
    try:
        conn.request("POST", path, body=json.dumps(payload),
                     headers={"Content-Type": "application/json", "Authorization": f"Bearer {key}"})
        resp = conn.getresponse()
        return resp.status, dict(resp.getheaders()), resp.read()
    finally:
        conn.close()


REQ = {"model": "m1", "messages": [{"role": "user", "content": "hi"}], "temperature": 0}


def test_steps_are_consumed_in_order_and_requests_recorded() -> None:
    with ScriptedLLMServer([Reply("one", prompt_tokens=3, completion_tokens=4),
                            Status(429, retry_after=2), Garbage(b"<<nope")]) as srv:
        status, _, body = _post(srv.base_url, "/v1/chat/completions", REQ)
        data = json.loads(body)
        assert status == 200
        assert data["choices"][0]["message"]["content"] == "one"
        assert data["usage"] == {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        assert data["model"] == "m1"

        status, headers, body = _post(srv.base_url, "/chat/completions", REQ)
        assert status == 429 and headers["Retry-After"] == "2"
        assert json.loads(body)["error"]["message"]

        status, _, body = _post(srv.base_url, "/v1/chat/completions", REQ)
        assert status == 200 and body == b"<<nope"

        assert srv.remaining == 0
        assert [r.path for r in srv.requests] == ["/v1/chat/completions", "/chat/completions", "/v1/chat/completions"]
        assert srv.requests[0].json == REQ
        assert srv.requests[0].messages == REQ["messages"]


def test_authorization_is_not_kept_in_clear() -> None:
    with ScriptedLLMServer([Reply("x")]) as srv:
        _post(srv.base_url, "/v1/chat/completions", REQ, key="sk-secret-123")
        req = srv.requests[0]
        assert "sk-secret-123" not in repr(req.headers)
        assert req.authorized_with("sk-secret-123")
        assert not req.authorized_with("sk-other")


def test_exhausted_script_answers_500_and_counts_it() -> None:
    with ScriptedLLMServer([]) as srv:
        status, _, body = _post(srv.base_url, "/v1/chat/completions", REQ)
        assert status == 500 and b"script exhausted" in body
        assert srv.unexpected == 1


def test_handler_answers_after_the_list() -> None:
    seen: list[str] = []

    def handler(req):  # type: ignore[no-untyped-def]
        seen.append(req.messages[-1]["content"])
        return Reply(f"echo {req.messages[-1]['content']}")

    with ScriptedLLMServer([Reply("first")], handler=handler) as srv:
        _post(srv.base_url, "/v1/chat/completions", REQ)
        _, _, body = _post(srv.base_url, "/v1/chat/completions", REQ)
        assert json.loads(body)["choices"][0]["message"]["content"] == "echo hi"
        assert seen == ["hi"]


def test_unknown_path_is_404() -> None:
    with ScriptedLLMServer([Reply("unused")]) as srv:
        status, _, _ = _post(srv.base_url, "/v1/embeddings", REQ)
        assert status == 404
        assert srv.remaining == 1


def test_delay_does_not_block_shutdown() -> None:
    srv = ScriptedLLMServer([Delay(30, then=Reply("late"))]).start()
    with contextlib.suppress(TimeoutError, OSError):
        _post(srv.base_url, "/v1/chat/completions", REQ, timeout=0.3)
    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 5


def test_delay_then_answers() -> None:
    with ScriptedLLMServer([Delay(0.05, then=Reply("after"))]) as srv:
        _, _, body = _post(srv.base_url, "/v1/chat/completions", REQ)
        assert json.loads(body)["choices"][0]["message"]["content"] == "after"
