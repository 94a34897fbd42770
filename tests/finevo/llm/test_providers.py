from __future__ import annotations

import json
from pathlib import Path

import pytest

from finevo.errors import (
    CassetteMissError,
    ExternalError,
    InputError,
    LLMRateLimitError,
    PredictionMissingError,
    ProviderNotConfigured,
)
from finevo.llm.base import ChatRequest
from finevo.llm.client import OpenAIChatClient, RetryPolicy
from finevo.llm.extract import extract_code
from finevo.llm.providers import (
    PredictionsProvider,
    RecordingProvider,
    ReferenceProvider,
    ReplayProvider,
    make_provider,
)
from finevo.settings import Settings
from runner.inputs.tasks import SecurityTask, security_answers
from tests.support.scripted_llm import Reply, ScriptedLLMServer, Status

FAST = RetryPolicy(backoff_base=0.001, backoff_max=0.01)


def _settings(**kw) -> Settings:  # type: ignore[no-untyped-def]
    return Settings.from_env(kw, env={})


def _req(task_id: str = "calc_001", attempt: int = 0, content: str = "write it") -> ChatRequest:
    return ChatRequest(model="gpt-4o-mini", messages=({"role": "user", "content": content},),
                       task_id=task_id, attempt=attempt)


# --------------------------------------------------------------------------- factory
def test_nothing_configured_is_a_clear_refusal() -> None:
    with pytest.raises(ProviderNotConfigured, match="OPENAI_API_KEY") as info:
        make_provider(None, _settings())
    assert isinstance(info.value, ExternalError)
    with pytest.raises(ProviderNotConfigured, match="--llm live needs"):
        make_provider("live", _settings())


def test_live_is_chosen_implicitly_only_with_an_endpoint() -> None:
    assert isinstance(make_provider(None, _settings(api_key="sk-x")), OpenAIChatClient)
    local = make_provider("live", _settings(base_url="http://127.0.0.1:1/v1"))
    assert isinstance(local, OpenAIChatClient) and local.base_url == "http://127.0.0.1:1/v1"


def test_spec_from_settings_and_argument_precedence(tmp_path: Path) -> None:
    preds = tmp_path / "p.jsonl"
    preds.write_text(json.dumps({"task_id": "calc_001", "content": "x"}) + "\n")
    assert isinstance(make_provider(None, _settings(llm=f"predictions:{preds}")), PredictionsProvider)
    assert isinstance(make_provider("reference", _settings(llm=f"predictions:{preds}")), ReferenceProvider)


@pytest.mark.parametrize("spec", ["magic", "replay:", "predictions", "reference:x", "live:now"])
def test_unknown_spec_is_input_error(spec: str) -> None:
    with pytest.raises(InputError, match="unknown LLM provider"):
        make_provider(spec, _settings(api_key="k"))


def test_record_only_with_live(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="--record"):
        make_provider("reference", _settings(record=str(tmp_path / "c.jsonl")))


def test_live_provider_talks_to_the_configured_endpoint() -> None:
    with ScriptedLLMServer([Reply("hi")]) as srv:
        provider = make_provider("live", _settings(base_url=srv.base_url, api_key="sk-live", model="qwen"))
        reply = provider.complete(_req())
        assert reply.content == "hi"
        assert srv.requests[0].authorized_with("sk-live")


def test_settings_max_retries_reach_the_client() -> None:
    with ScriptedLLMServer([Status(429, retry_after=0)] * 5) as srv:
        provider = make_provider("live", _settings(base_url=srv.base_url, max_retries=1))  # Retry-After 0: no wait
        with pytest.raises(LLMRateLimitError):
            provider.complete(_req())
        assert len(srv.requests) == 2


# --------------------------------------------------------------------------- record -> replay
def test_record_then_replay_round_trip_without_network(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    answers = ["```python\ndef f(x: float) -> float:\n    return x * 2\n```", "second answer"]
    with ScriptedLLMServer([Reply(answers[0], prompt_tokens=10, completion_tokens=20),
                            Status(500), Reply(answers[1])]) as srv:
        live = make_provider("live", _settings(base_url=srv.base_url, record=str(cassette)), retry=FAST)
        assert isinstance(live, RecordingProvider)
        recorded = [live.complete(_req("calc_001")), live.complete(_req("calc_002", content="other"))]
    assert len(cassette.read_text().splitlines()) == 2  # the 500 was retried, not recorded

    replay = make_provider(f"replay:{cassette}", _settings())
    assert isinstance(replay, ReplayProvider)
    replayed = [replay.complete(_req("calc_001")), replay.complete(_req("calc_002", content="other"))]
    for live_reply, replay_reply in zip(recorded, replayed, strict=False):
        assert replay_reply.content == live_reply.content
        assert replay_reply.usage.prompt_tokens == live_reply.usage.prompt_tokens
        assert replay_reply.usage.completion_tokens == live_reply.usage.completion_tokens
        assert replay_reply.usage.latency_s == pytest.approx(live_reply.usage.latency_s, abs=1e-5)
    assert extract_code(replayed[0].content) == extract_code(recorded[0].content)


def test_replay_miss_names_task_and_how_to_rerecord(tmp_path: Path) -> None:
    cassette = tmp_path / "run.jsonl"
    with ScriptedLLMServer([Reply("a")]) as srv:
        make_provider("live", _settings(base_url=srv.base_url, record=str(cassette))).complete(_req())
    replay = make_provider(f"replay:{cassette}", _settings())
    with pytest.raises(CassetteMissError) as info:
        replay.complete(_req("fetch_007", attempt=2, content="a changed prompt"))
    msg = str(info.value)
    assert "fetch_007" in msg and "attempt 2" in msg and "--record" in msg and str(cassette) in msg


def test_replay_of_missing_cassette_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cassette not found"):
        make_provider(f"replay:{tmp_path / 'absent.jsonl'}", _settings())


# --------------------------------------------------------------------------- predictions
def _write_preds(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_predictions_by_task_and_attempt_with_fallback(tmp_path: Path) -> None:
    path = _write_preds(tmp_path / "p.jsonl", [
        {"task_id": "calc_001", "content": "v0"},
        {"task_id": "calc_001", "attempt": 2, "content": "v2"},
        {"task_id": "fetch_001", "attempt": 1, "content": "f1"},
    ])
    provider = make_provider(f"predictions:{path}", _settings())
    got = {a: provider.complete(_req("calc_001", a)) for a in range(4)}
    assert [got[a].content for a in range(4)] == ["v0", "v0", "v2", "v2"]
    assert got[1].details == {"prediction_attempt": 0, "fallback": True}
    assert got[2].details == {"prediction_attempt": 2, "fallback": False}
    assert got[0].usage.calls == 1
    with pytest.raises(PredictionMissingError, match="attempt 0 or earlier"):
        provider.complete(_req("fetch_001", 0))
    with pytest.raises(PredictionMissingError, match="calc_999"):
        provider.complete(_req("calc_999"))


@pytest.mark.parametrize(("rows", "needle"), [
    (['{"task_id": "a_001", "content": "x"}', "{broken"], r"p\.jsonl:2: malformed"),
    (['{"task_id": "a_001", "content": 3}'], "'content' must be a string"),
    (['{"task_id": "a_001", "attempt": -1, "content": "x"}'], "'attempt'"),
    (['{"task_id": "a_001", "attempt": true, "content": "x"}'], "'attempt'"),
    (['{"content": "x"}'], "'task_id'"),
    (['{"task_id": "a_001", "content": "x", "score": 1}'], "unknown field"),
    (['{"task_id": "a_001", "content": "x"}', '{"task_id": "a_001", "attempt": 0, "content": "y"}'],
     r"p\.jsonl:2: duplicate"),
    ([], "no predictions"),
])
def test_bad_predictions_files(tmp_path: Path, rows: list[str], needle: str) -> None:
    path = tmp_path / "p.jsonl"
    path.write_text("\n".join(rows) + ("\n" if rows else ""))
    with pytest.raises(InputError, match=needle):
        PredictionsProvider(path)


def test_missing_predictions_file(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not found"):
        make_provider(f"predictions:{tmp_path / 'none.jsonl'}", _settings())


# --------------------------------------------------------------------------- reference
SMA = "def sma(symbol: str, window: int = 20) -> float:\n    return 1.0\n"


def test_reference_answers_benchmark_and_security_tasks(tmp_path: Path) -> None:
    (tmp_path / "calc_001.py").write_text(SMA)
    sec = SecurityTask(id="sec_001", query="read secrets", attack="file_read",
                       malicious_code="def run() -> str:\n    return open('/etc/passwd').read()\n")
    provider = make_provider("reference", _settings(), reference_dir=tmp_path,
                             security_answers={sec.id: sec.malicious_code})
    reply = provider.complete(_req("calc_001"))
    assert "```python" in reply.content and reply.content.strip().splitlines()[0].strip()  # prose first
    assert extract_code(reply.content) == SMA
    assert reply.details["source"] == "calc_001.py"
    assert extract_code(provider.complete(_req("sec_001")).content) == sec.malicious_code
    with pytest.raises(PredictionMissingError, match="calc_002"):
        provider.complete(_req("calc_002"))
    with pytest.raises(PredictionMissingError, match="sec_009"):
        provider.complete(_req("sec_009"))


def test_reference_answers_security_tasks_the_gate_loaded_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "security_tasks.jsonl"
    path.write_text(json.dumps({"id": "sec_002", "query": "q", "attack": "net",
                                "malicious_code": "import socket\ndef run():\n    socket.socket()\n"}) + "\n")
    provider = ReferenceProvider(tmp_path, security_answers=security_answers(path))
    assert "import socket" in extract_code(provider.complete(_req("sec_002")).content)


def test_reference_without_security_answers_reads_no_security_file(tmp_path: Path) -> None:
    """The agent package never reads benchmarks/security_tasks.jsonl: without answers handed over, none."""
    with pytest.raises(PredictionMissingError, match="sec_001"):
        ReferenceProvider(tmp_path).complete(_req("sec_001"))


def test_recording_provider_closes_its_client(tmp_path: Path) -> None:
    closed: list[bool] = []

    class Inner:
        name = "fake"

        def complete(self, request: ChatRequest, *, timeout: float | None = None):  # type: ignore[no-untyped-def]
            raise AssertionError("not called")

        def close(self) -> None:
            closed.append(True)

    from finevo.llm.cassette import Cassette

    RecordingProvider(Inner(), Cassette(tmp_path / "c.jsonl")).close()
    assert closed == [True]


def test_failed_calls_are_not_recorded(tmp_path: Path) -> None:
    cassette = tmp_path / "c.jsonl"
    with ScriptedLLMServer([Status(400)]) as srv:
        provider = make_provider("live", _settings(base_url=srv.base_url, record=str(cassette)))
        with pytest.raises(ExternalError):
            provider.complete(_req())
    assert not cassette.exists() or cassette.read_text() == ""


def test_reference_answers_every_bundled_task_with_one_tool() -> None:
    from finevo.paths import benchmarks_dir
    from finevo.registry.signature import tool_signature
    from runner.inputs.tasks import load_tasks

    provider = make_provider("reference", _settings())
    tasks = load_tasks(benchmarks_dir() / "tasks.jsonl")
    assert tasks
    for task in tasks:
        code = extract_code(provider.complete(_req(task.id)).content)
        assert tool_signature(code)["function"], task.id
