"""A scripted OpenAI-compatible chat-completions server for tests.

It is a real HTTP server on 127.0.0.1 (an ephemeral port), so the code under test drives the
real ``openai`` SDK over real sockets. Every request consumes the next scripted step:

* :class:`Reply` -- a normal ``chat.completion`` answer with token usage;
* :class:`Status` -- an HTTP error (429 / 500 / 503 / 401 ...) with an optional ``Retry-After``;
* :class:`Delay` -- wait, then answer (to exceed a client timeout); shutdown never waits for it;
* :class:`Garbage` -- a 200 whose body is not JSON.

When the list runs out, ``handler(request) -> step`` answers (if given); otherwise the server
answers 500 ``script exhausted`` and counts it in :attr:`ScriptedLLMServer.unexpected`.

Usage::

    with ScriptedLLMServer([Status(429, retry_after=0), Reply("```python\\n...```")]) as srv:
        client = OpenAIChatClient(base_url=srv.base_url, api_key="k", model="m", retry=RetryPolicy(...))
        ...
        assert len(srv.requests) == 2
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["Delay", "Garbage", "RecordedRequest", "Reply", "ScriptedLLMServer", "Status", "Step"]

CHAT_PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass(frozen=True)
class Reply:
    content: str
    prompt_tokens: int = 11
    completion_tokens: int = 7
    finish_reason: str = "stop"
    model: str | None = None  # None: echo the requested model


@dataclass(frozen=True)
class Status:
    code: int
    body: str | bytes | dict[str, Any] | None = None  # None: an OpenAI-style error object
    retry_after: float | int | None = None


@dataclass(frozen=True)
class Delay:
    seconds: float
    then: Reply | Status | Garbage = field(default_factory=lambda: Reply("late"))


@dataclass(frozen=True)
class Garbage:
    body: bytes = b"{this is not json"
    status: int = 200


Step = Reply | Status | Delay | Garbage


@dataclass
class RecordedRequest:
    """One request as the server saw it. The Authorization value is never kept in clear."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    json: Any
    authorization_sha256: str | None
    received_at: float

    def authorized_with(self, api_key: str) -> bool:
        """True when the request carried ``Authorization: Bearer <api_key>``."""
        expected = hashlib.sha256(f"Bearer {api_key}".encode()).hexdigest()
        return self.authorization_sha256 == expected

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list((self.json or {}).get("messages") or []) if isinstance(self.json, dict) else []

    @property
    def model(self) -> str | None:
        return self.json.get("model") if isinstance(self.json, dict) else None


class ScriptedLLMServer:
    def __init__(self, steps: Iterable[Step] = (),
                 handler: Callable[[RecordedRequest], Step] | None = None) -> None:
        self._steps: list[Step] = list(steps)
        self._handler = handler
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests: list[RecordedRequest] = []
        self.unexpected = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> ScriptedLLMServer:
        if self._httpd is not None:
            return self
        server = self

        class _Handler(_ChatHandler):
            owner = server

        httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False  # a Delay step must never hold up shutdown
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="scripted-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> ScriptedLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ info
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("ScriptedLLMServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def remaining(self) -> int:
        with self._lock:
            return len(self._steps)

    def add(self, *steps: Step) -> None:
        with self._lock:
            self._steps.extend(steps)

    # ------------------------------------------------------------------ internals
    def _next_step(self, request: RecordedRequest) -> Step | None:
        with self._lock:
            self.requests.append(request)
            if self._steps:
                return self._steps.pop(0)
        if self._handler is not None:
            return self._handler(request)
        with self._lock:
            self.unexpected += 1
        return None

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; False when the server is stopping."""
        return not self._stop.wait(seconds)


class _ChatHandler(BaseHTTPRequestHandler):
    owner: ScriptedLLMServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # stdlib signature
        return  # keep test output clean; requests are recorded instead

    def do_GET(self) -> None:  # stdlib naming
        self._read_body()
        self._send_json(404, _error_body("not found", "not_found"))

    def do_POST(self) -> None:  # stdlib naming
        body = self._read_body()
        path = self.path.split("?", 1)[0]
        if path not in CHAT_PATHS:
            self._send_json(404, _error_body(f"unknown path {path}", "not_found"))
            return
        try:
            parsed: Any = json.loads(body.decode("utf-8")) if body else None
        except (UnicodeDecodeError, json.JSONDecodeError):
            parsed = None
        auth = self.headers.get("Authorization")
        headers = {k: ("<redacted>" if k.lower() == "authorization" else v) for k, v in self.headers.items()}
        record = RecordedRequest(
            method="POST", path=path, headers=headers, body=body, json=parsed,
            authorization_sha256=hashlib.sha256(auth.encode()).hexdigest() if auth else None,
            received_at=time.monotonic(),
        )
        step = self.owner._next_step(record)
        self._answer(step, record)

    # ------------------------------------------------------------------ responses
    def _answer(self, step: Step | None, record: RecordedRequest) -> None:
        if step is None:
            self._send_json(500, _error_body("script exhausted: no step left for this request", "server_error"))
            return
        if isinstance(step, Delay):
            if not self.owner._wait(step.seconds):
                return  # shutting down: drop the connection
            self._answer(step.then, record)
            return
        if isinstance(step, Reply):
            model = step.model or record.model or "scripted-model"
            n = len(self.owner.requests)
            self._send_json(200, {
                "id": f"chatcmpl-scripted-{n}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": model,
                "choices": [{"index": 0, "finish_reason": step.finish_reason,
                             "message": {"role": "assistant", "content": step.content}}],
                "usage": {"prompt_tokens": step.prompt_tokens, "completion_tokens": step.completion_tokens,
                          "total_tokens": step.prompt_tokens + step.completion_tokens},
            })
            return
        if isinstance(step, Status):
            extra = {} if step.retry_after is None else {"Retry-After": _fmt_number(step.retry_after)}
            if step.body is None:
                self._send_json(step.code, _error_body(f"scripted status {step.code}", _error_type(step.code)), extra)
            elif isinstance(step.body, dict):
                self._send_json(step.code, step.body, extra)
            else:
                raw = step.body.encode() if isinstance(step.body, str) else step.body
                self._send_raw(step.code, raw, "application/json", extra)
            return
        if isinstance(step, Garbage):
            self._send_raw(step.status, step.body, "application/json")
            return
        raise TypeError(f"unknown scripted step {step!r}")

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _send_json(self, code: int, payload: Any, extra: dict[str, str] | None = None) -> None:
        self._send_raw(code, json.dumps(payload).encode(), "application/json", extra)

    def _send_raw(self, code: int, body: bytes, ctype: str, extra: dict[str, str] | None = None) -> None:
        try:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ValueError, OSError):
            pass  # the client gave up (e.g. its timeout fired during a Delay)


def _error_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": kind}}


def _error_type(code: int) -> str:
    return {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
            404: "not_found", 429: "rate_limit_exceeded"}.get(code, "server_error")


def _fmt_number(value: float | int) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


class ChanceModel:
    """A handler that answers each task correctly, or -- for the tasks in ``chances`` -- correctly
    with the given probability (a seeded :class:`random.Random`, so a run is reproducible).

    ``task_of(request)`` names the task a request is about (None: unknown); ``correct(task_id)`` is
    the right reply's content (None: no answer known). A wrong answer is a reply without code, which
    the agent cannot turn into a tool. :attr:`draws` keeps, per task, whether each answer was right.
    """

    WRONG = "I am not able to write that tool."

    def __init__(self, task_of: Callable[[RecordedRequest], str | None], correct: Callable[[str], str | None],
                 chances: dict[str, float] | None = None, seed: int = 0) -> None:
        import random

        for task, p in (chances or {}).items():
            if not 0.0 <= p <= 1.0:
                raise ValueError(f"chance of {task} must be in [0, 1], got {p}")
        self.task_of = task_of
        self.correct = correct
        self.chances = dict(chances or {})
        self.rng = random.Random(seed)
        self.lock = threading.Lock()
        self.draws: dict[str, list[bool]] = {}

    def __call__(self, request: RecordedRequest) -> Reply:
        task_id = self.task_of(request)
        content = self.correct(task_id) if task_id else None
        if task_id is None or content is None:
            return Reply(self.WRONG)
        with self.lock:
            right = self.rng.random() < self.chances.get(task_id, 1.0)
            self.draws.setdefault(task_id, []).append(right)
        if not right:
            return Reply(self.WRONG, prompt_tokens=50, completion_tokens=9)
        return Reply(content, prompt_tokens=100 + len(request.body) % 97, completion_tokens=len(content) // 4)

    @staticmethod
    def seed_for(p: float, draws: int, successes: int, start: int = 0, limit: int = 100_000) -> int:
        """The first seed from ``start`` whose ``draws`` draws at probability ``p`` give ``successes`` right."""
        import random

        for seed in range(start, start + limit):
            rng = random.Random(seed)
            if sum(rng.random() < p for _ in range(draws)) == successes:
                return seed
        raise ValueError(f"no seed in [{start}, {start + limit}) gives {successes} of {draws} at p={p}")
