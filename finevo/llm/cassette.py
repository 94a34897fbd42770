"""Cassettes: recorded LLM requests and replies, one JSON object per line.

The key of an entry is the SHA-256 of the *canonical request*: ``model``, ``messages``,
``temperature`` and ``tools`` serialised as JSON with sorted keys and no extra spaces. The task id
and attempt number are stored with the entry for people reading the file, but are not part of the
key: the same prompt gets the same answer whoever asks.

Each line::

    {"key": "<sha256>", "request": {...canonical..., "task_id": ..., "attempt": ...},
     "reply": {"content": ..., "model": ..., "finish_reason": ..., "usage": {...}},
     "session": "<id of the recording>", "recorded_at": ...}

Recording appends and flushes one line per reply, so a run that dies keeps what it recorded.

The same request can be sent more than once in one run (a refinement prompt repeats exactly when
the model returns the same code twice), and the model may answer it differently each time. So a
key holds the list of its replies in recording order, and a replay serves them in that order; once
they are used up, the last one is served again. Recording again into an existing cassette starts a
new ``session``: for every key it records, its replies replace those of earlier sessions (lines
without a ``session`` belong to one unnamed session).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from finevo.errors import InputError
from finevo.llm.base import ChatReply, ChatRequest
from finevo.outcome import LLMUsage

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

CASSETTE_VERSION = 1


class CanonicalRequest(TypedDict):
    """What a cassette key is the hash of: the request without who asked (task id, attempt)."""

    model: str
    messages: list[dict[str, str]]
    temperature: float
    tools: list[JSONObject]


def canonical_request(request: ChatRequest) -> CanonicalRequest:
    return {
        "model": request.model,
        "messages": [dict(m) for m in request.messages],
        "temperature": float(request.temperature),
        "tools": [dict(t) for t in request.tools],
    }


def request_key(request: ChatRequest) -> str:
    text = json.dumps(canonical_request(request), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class Cassette:
    """A cassette file: read it whole on open, append to it while recording."""

    def __init__(self, path: str | Path, *, must_exist: bool = False) -> None:
        self.path = Path(path)
        #: key -> its entries in recording order (all from the last session that recorded the key)
        self._entries: dict[str, list[JSONObject]] = {}
        #: key -> how many of its entries this cassette has served
        self._served: dict[str, int] = {}
        self._session = uuid.uuid4().hex[:16]
        self._lock = threading.Lock()
        if self.path.exists():
            self._load()
        elif must_exist:
            raise InputError(f"{self.path}: cassette not found")

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def keys(self) -> list[str]:
        return list(self._entries)

    # ------------------------------------------------------------------ read
    def _load(self) -> None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"{self.path}: cannot read cassette: {exc}") from None
        lines = text.splitlines()
        for lineno, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{self.path}:{lineno}"
            try:
                entry = json.loads(line)
            except json.JSONDecodeError as exc:
                hint = ""
                if lineno == len(lines) and not text.endswith("\n"):
                    hint = " (truncated last line: a recording was interrupted; delete that line)"
                raise InputError(f"{where}: malformed cassette line: {exc.msg} (column {exc.colno}){hint}") from None
            if not isinstance(entry, dict):
                raise InputError(f"{where}: expected a JSON object, got {type(entry).__name__}")
            key = entry.get("key")
            reply = entry.get("reply")
            if not isinstance(key, str) or len(key) != 64:
                raise InputError(f"{where}: cassette entry needs a 64-hex 'key'")
            if not isinstance(reply, dict) or not isinstance(reply.get("content"), str):
                raise InputError(f"{where}: cassette entry needs 'reply.content' (a string)")
            if not isinstance(entry.get("session", ""), str):
                raise InputError(f"{where}: cassette entry 'session' must be a string")
            usage = reply.get("usage", {})
            if not isinstance(usage, dict) or not all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                      for v in usage.values()):
                raise InputError(f"{where}: 'reply.usage' must map names to numbers")
            self._keep(key, entry)

    def _keep(self, key: str, entry: JSONObject) -> None:
        """Add ``entry`` to its key's replies, or start them over when it comes from a newer session."""
        replies = self._entries.get(key)
        if replies and replies[-1].get("session") == entry.get("session"):
            replies.append(entry)
        else:
            self._entries[key] = [entry]

    def models(self) -> set[str]:
        """The request models of the replies this cassette serves (what a replay is a replay of)."""
        return {model for entries in self._entries.values() for entry in entries
                if isinstance(entry.get("request"), dict)
                and isinstance(model := entry["request"].get("model"), str) and model}

    def replies(self, key: str) -> int:
        """How many replies the cassette holds for ``key``."""
        return len(self._entries.get(key, ()))

    def get(self, request: ChatRequest) -> ChatReply | None:
        """The next recorded reply to ``request`` (the last one again once all were served)."""
        key = request_key(request)
        with self._lock:
            replies = self._entries.get(key)
            if not replies:
                return None
            served = self._served.get(key, 0)
            entry = replies[min(served, len(replies) - 1)]
            self._served[key] = served + 1
        reply = entry["reply"]
        usage = reply.get("usage") or {}
        return ChatReply(
            content=reply["content"],
            usage=LLMUsage(calls=1, prompt_tokens=int(usage.get("prompt_tokens", 0)),
                           completion_tokens=int(usage.get("completion_tokens", 0)),
                           latency_s=float(usage.get("latency_s", 0.0))),
            model=reply.get("model"),
            finish_reason=reply.get("finish_reason"),
            details={"cassette_key": entry["key"]},
        )

    # ------------------------------------------------------------------ write
    def append(self, request: ChatRequest, reply: ChatReply) -> str:
        """Record one exchange (append + flush + fsync); returns its key."""
        key = request_key(request)
        entry = {
            "v": CASSETTE_VERSION,
            "key": key,
            "request": {**canonical_request(request), "task_id": request.task_id, "attempt": request.attempt},
            "reply": {
                "content": reply.content,
                "model": reply.model,
                "finish_reason": reply.finish_reason,
                "usage": {"prompt_tokens": reply.usage.prompt_tokens,
                          "completion_tokens": reply.usage.completion_tokens,
                          "latency_s": round(reply.usage.latency_s, 6)},
            },
            "session": self._session,
            "recorded_at": datetime.now(UTC).isoformat(timespec="seconds"),
        }
        line = json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
                fh.flush()
                os.fsync(fh.fileno())
            self._keep(key, entry)
        return key
