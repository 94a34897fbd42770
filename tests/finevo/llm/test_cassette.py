from __future__ import annotations

import json
from pathlib import Path

import pytest

from finevo.errors import InputError
from finevo.llm.base import ChatReply, ChatRequest
from finevo.llm.cassette import Cassette, request_key
from finevo.outcome import LLMUsage


def _req(content: str = "write sma", **kw) -> ChatRequest:  # type: ignore[no-untyped-def]
    base = dict(model="m", messages=({"role": "user", "content": content},), temperature=0.0,
                task_id="calc_001", attempt=0)
    base.update(kw)
    return ChatRequest(**base)  # type: ignore[arg-type]


def test_key_covers_model_messages_temperature_tools_only() -> None:
    base = request_key(_req())
    assert request_key(_req(task_id="other_002", attempt=3)) == base
    assert request_key(_req("write ema")) != base
    assert request_key(_req(model="m2")) != base
    assert request_key(_req(temperature=0.5)) != base
    assert request_key(_req(tools=({"type": "function", "function": {"name": "f"}},))) != base
    assert len(base) == 64 and int(base, 16) >= 0


def test_key_ignores_dict_key_order() -> None:
    a = _req(messages=({"role": "user", "content": "x"},))
    b = _req(messages=({"content": "x", "role": "user"},))
    assert request_key(a) == request_key(b)


def test_append_then_reload_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "c.jsonl"
    cas = Cassette(path)
    reply = ChatReply("code here", LLMUsage(calls=1, prompt_tokens=3, completion_tokens=4, latency_s=0.25),
                      model="m", finish_reason="stop")
    key = cas.append(_req(), reply)
    assert path.read_text().count("\n") == 1

    again = Cassette(path, must_exist=True)
    got = again.get(_req(task_id="whatever"))
    assert got is not None
    assert got.content == "code here"
    assert (got.usage.calls, got.usage.prompt_tokens, got.usage.completion_tokens) == (1, 3, 4)
    assert got.usage.latency_s == pytest.approx(0.25)
    assert got.details["cassette_key"] == key
    assert again.get(_req("unknown")) is None
    line = json.loads(path.read_text())
    assert line["request"]["task_id"] == "calc_001"


def test_a_repeated_request_replays_its_replies_in_recording_order(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    cas = Cassette(path)
    for content in ("first", "second", "third"):
        cas.append(_req(), ChatReply(content))
    cas.append(_req("other"), ChatReply("other reply"))
    replay = Cassette(path)
    assert len(replay) == 2 and replay.replies(request_key(_req())) == 3
    got = [replay.get(_req()).content for _ in range(5)]  # type: ignore[union-attr]
    assert got == ["first", "second", "third", "third", "third"]  # the last is reused once used up
    assert replay.get(_req("other")).content == "other reply"  # type: ignore[union-attr]
    # the recording cassette itself serves the same sequence
    assert [cas.get(_req()).content for _ in range(3)] == ["first", "second", "third"]  # type: ignore[union-attr]


def test_recording_again_replaces_the_replies_of_an_earlier_recording(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    old = Cassette(path)
    old.append(_req(), ChatReply("old 1"))
    old.append(_req(), ChatReply("old 2"))
    old.append(_req("kept"), ChatReply("kept"))
    new = Cassette(path)  # a second recording appends to the same file
    new.append(_req(), ChatReply("new"))
    assert new.replies(request_key(_req())) == 1
    replay = Cassette(path)
    assert [replay.get(_req()).content for _ in range(2)] == ["new", "new"]  # type: ignore[union-attr]
    assert replay.get(_req("kept")).content == "kept"  # type: ignore[union-attr]
    assert path.read_text().count("\n") == 4  # nothing was rewritten


def test_lines_without_a_session_keep_every_reply_in_order(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    key = request_key(_req())
    path.write_text("".join(json.dumps({"key": key, "reply": {"content": c}}) + "\n" for c in ("a", "b")))
    replay = Cassette(path)
    assert [replay.get(_req()).content for _ in range(3)] == ["a", "b", "b"]  # type: ignore[union-attr]


def test_malformed_line_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    Cassette(path).append(_req(), ChatReply("ok"))
    with path.open("a") as fh:
        fh.write("\n{not json\n")
    with pytest.raises(InputError, match=r"c\.jsonl:3: malformed"):
        Cassette(path)


def test_truncated_last_line_is_explained(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    Cassette(path).append(_req(), ChatReply("ok"))
    with path.open("a") as fh:
        fh.write('{"key": "abc", "rep')
    with pytest.raises(InputError, match="truncated last line"):
        Cassette(path)


@pytest.mark.parametrize("line", ['[1, 2]', '{"key": "short", "reply": {"content": "x"}}',
                                  '{"key": "' + "a" * 64 + '", "reply": {}}',
                                  '{"key": "' + "a" * 64 + '", "reply": {"content": "x", "usage": {"p": "1"}}}',
                                  '{"key": "' + "a" * 64 + '", "reply": {"content": "x"}, "session": 7}'])
def test_invalid_entries_are_input_errors(tmp_path: Path, line: str) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(InputError, match=r"c\.jsonl:1:"):
        Cassette(path)


def test_missing_cassette(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        Cassette(tmp_path / "nope.jsonl", must_exist=True)
    assert len(Cassette(tmp_path / "nope.jsonl")) == 0
