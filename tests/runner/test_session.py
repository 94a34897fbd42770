"""The real session wiring: which provider, model and sandbox backend a gate run gets."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from finevo.errors import ProviderNotConfigured, SandboxUnavailable
from finevo.paths import snapshot_dir
from runner.execution.session import SandboxPool, Session, SessionSpec, default_session

pytestmark = pytest.mark.timeout(300)

LLM_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "FINEVO_LLM_API_KEY", "FINEVO_LLM_BASE_URL",
           "FINEVO_LLM_PROVIDER", "FINEVO_LLM_MODEL", "FINEVO_LLM_RECORD", "FINEVO_SANDBOX_BACKEND",
           "FINEVO_AGENT_MODE", "FINEVO_REGISTRY_URL")


class FakeSandbox:
    def __init__(self, backend: str) -> None:
        self.backend = backend
        self.closed = False

    def layers(self) -> dict[str, bool]:
        return {"policy": True}

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """No LLM in the environment, and a stand-in sandbox that records the backends asked for."""
    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    asked: list[str] = []

    def create_sandbox(snapshot: Any = None, backend: str = "warm", policy: bool = True) -> FakeSandbox:
        asked.append(backend)
        return FakeSandbox(backend)

    monkeypatch.setattr("finevo.sandbox.create_sandbox", create_sandbox)
    return asked


def _open(tmp_path: Path, **changes: Any) -> Session:
    spec = dict(llm=None, registry_dir=tmp_path / "registry", data_dir=snapshot_dir())
    spec.update(changes)
    return default_session(SessionSpec(**spec))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- static agent
def test_static_agent_needs_no_llm_endpoint(tmp_path: Path, calls: list[str]) -> None:
    with pytest.raises(ProviderNotConfigured):
        _open(tmp_path / "evolving")  # the other modes do need one
    session = _open(tmp_path / "static", agent_mode="static")
    try:
        assert session.agent.provider is None  # type: ignore[attr-defined]
        assert session.info.provider == "none" and session.info.model is None
    finally:
        session.close()


def test_static_agent_ignores_a_configured_provider(tmp_path: Path, calls: list[str]) -> None:
    session = _open(tmp_path, agent_mode="static", llm="live")  # live without a key would refuse
    try:
        assert session.agent.provider is None  # type: ignore[attr-defined]
    finally:
        session.close()


# --------------------------------------------------------------------------- recorded model
def test_model_is_the_configured_one_only_for_a_live_model(tmp_path: Path, calls: list[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FINEVO_LLM_BASE_URL", "http://127.0.0.1:9/v1")  # never contacted
    live = _open(tmp_path / "live", llm="live", model="qwen-local")
    reference = _open(tmp_path / "ref", llm="reference", model="qwen-local")
    preds = tmp_path / "preds-run7.jsonl"
    preds.write_text(json.dumps({"task_id": "t1", "content": "x"}) + "\n", encoding="utf-8")
    predictions = _open(tmp_path / "pred", llm=f"predictions:{preds}")
    try:
        assert (live.info.provider, live.info.model) == ("live", "qwen-local")
        assert (reference.info.provider, reference.info.model) == ("reference", "reference")
        assert predictions.info.model == "predictions:preds-run7.jsonl"
    finally:
        for session in (live, reference, predictions):
            session.close()


def _cassette(path: Path, models: list[str]) -> Path:
    lines = [json.dumps({"key": f"{i:064x}", "request": {"model": m, "messages": [], "temperature": 0.0,
                                                         "tools": []},
                         "reply": {"content": "x", "model": f"{m}-2024"}}) for i, m in enumerate(models)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_replay_reports_the_model_the_cassette_was_recorded_with(tmp_path: Path, calls: list[str]) -> None:
    one = _cassette(tmp_path / "one.jsonl", ["gpt-4.1", "gpt-4.1"])
    mixed = _cassette(tmp_path / "mixed.jsonl", ["m-b", "m-a"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    sessions = [_open(tmp_path / "r1", llm=f"replay:{one}"),
                _open(tmp_path / "r2", llm=f"replay:{mixed}"),
                _open(tmp_path / "r3", llm=f"replay:{mixed}", model="m-b"),
                _open(tmp_path / "r4", llm=f"replay:{empty}")]
    try:
        assert [s.info.model for s in sessions] == ["gpt-4.1", "m-a, m-b", "m-b", "replay:empty.jsonl"]
    finally:
        for session in sessions:
            session.close()


# --------------------------------------------------------------------------- sandbox backend
def test_backend_comes_from_the_setting(tmp_path: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    default = _open(tmp_path / "a", llm="reference")
    monkeypatch.setenv("FINEVO_SANDBOX_BACKEND", "subprocess")
    configured = _open(tmp_path / "b", llm="reference")
    flagged = _open(tmp_path / "c", llm="reference", sandbox_backend="warm")
    try:
        assert calls == ["warm", "subprocess", "warm"]
        assert [s.info.sandbox_backend for s in (default, configured, flagged)] == calls
        assert all(s.info is not None and s.info.sandbox_fallback is None for s in (default, configured, flagged))
        assert capsys.readouterr().err == ""
    finally:
        for session in (default, configured, flagged):
            session.close()


def test_warm_failure_falls_back_to_subprocess_with_one_line_notice(
        tmp_path: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    def flaky(snapshot: Any = None, backend: str = "warm", policy: bool = True) -> FakeSandbox:
        calls.append(backend)
        if backend == "warm":
            raise SandboxUnavailable("the warm sandbox worker did not start: channel closed;\nTraceback ...")
        return FakeSandbox(backend)

    monkeypatch.setattr("finevo.sandbox.create_sandbox", flaky)
    session = _open(tmp_path, llm="reference")
    try:
        assert calls == ["warm", "subprocess"]
        assert session.sandbox.backend == "subprocess" and session.info.sandbox_backend == "subprocess"
        assert "did not start" in session.info.sandbox_fallback
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "subprocess backend" in err and "did not start" in err
    finally:
        session.close()
    assert session.sandbox.closed


def test_a_configured_subprocess_backend_does_not_fall_back(tmp_path: Path, calls: list[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(snapshot: Any = None, backend: str = "warm", policy: bool = True) -> FakeSandbox:
        calls.append(backend)
        raise SandboxUnavailable("no processes")

    monkeypatch.setattr("finevo.sandbox.create_sandbox", broken)
    monkeypatch.setenv("FINEVO_SANDBOX_BACKEND", "subprocess")
    with pytest.raises(SandboxUnavailable):
        _open(tmp_path, llm="reference")
    assert calls == ["subprocess"]


@pytest.mark.slow
def test_a_worker_that_cannot_start_really_falls_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The real warm backend, whose worker dies at start-up, and the real subprocess backend."""
    from finevo.sandbox import backends

    for name in LLM_ENV:
        monkeypatch.delenv(name, raising=False)
    real_command = backends._python_command

    def command(module: str) -> list[str]:
        if module == "finevo.sandbox.worker":
            return [sys.executable, "-c", "import sys; sys.exit(3)"]
        return real_command(module)

    monkeypatch.setattr(backends, "_python_command", command)
    session = _open(tmp_path, llm="reference")
    try:
        assert session.info.sandbox_backend == "subprocess"
        assert "warm sandbox worker did not start" in capsys.readouterr().err
        assert session.info.sandbox_layers["audit_hook"]  # the fallback is fully confined
        result = session.sandbox.run("def f() -> int:\n    return 41 + 1\n", "f", {})
        assert result.ok and result.value == 42 and result.details["backend"] == "subprocess"
    finally:
        session.close()


# --------------------------------------------------------------------------- a run's pool of sandboxes
def test_a_closed_session_hands_its_sandbox_to_the_next_one(tmp_path: Path, calls: list[str]) -> None:
    pool = SandboxPool()
    first = _open(tmp_path / "a", llm="reference", sandboxes=pool)
    sandbox = first.sandbox
    first.close()
    assert not sandbox.closed  # kept for the next session, not closed
    second = _open(tmp_path / "b", llm="reference", sandboxes=pool)
    other = _open(tmp_path / "c", llm="reference", sandboxes=pool, sandbox_backend="subprocess")
    try:
        assert second.sandbox is sandbox and calls == ["warm", "subprocess"]
        assert other.sandbox is not sandbox  # another backend is another sandbox
    finally:
        second.close()
        other.close()
        pool.close()
    assert sandbox.closed and other.sandbox.closed


def test_an_interrupted_sandbox_is_never_handed_on(tmp_path: Path, calls: list[str]) -> None:
    pool = SandboxPool()
    first = _open(tmp_path / "a", llm="reference", sandboxes=pool)
    first.interrupt()  # kills the worker: closed
    first.close()
    second = _open(tmp_path / "b", llm="reference", sandboxes=pool)
    try:
        assert second.sandbox is not first.sandbox and calls == ["warm", "warm"]
    finally:
        second.close()
        pool.close()


def test_sandboxes_started_ahead_are_taken_and_the_rest_closed_with_the_pool(tmp_path: Path,
                                                                            calls: list[str]) -> None:
    pool = SandboxPool()
    pool.prewarm(snapshot_dir(), "warm", 2)
    session = _open(tmp_path, llm="reference", sandboxes=pool)
    try:
        assert calls == ["warm", "warm"]  # the session took one of the two started ahead
        assert session.sandbox.backend == "warm"
    finally:
        session.close()
        pool.close()
    assert session.sandbox.closed
    after = _open(tmp_path / "after", llm="reference", sandboxes=pool)  # a closed pool keeps nothing
    after.close()
    assert after.sandbox.closed and len(calls) == 3


def test_a_sandbox_that_failed_to_start_ahead_is_started_again_for_the_session(
        tmp_path: Path, calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    failures = [SandboxUnavailable("no"), SandboxUnavailable("no")]

    def once_broken(snapshot: Any = None, backend: str = "warm", policy: bool = True) -> FakeSandbox:
        calls.append(backend)
        if failures:
            raise failures.pop()
        return FakeSandbox(backend)

    monkeypatch.setattr("finevo.sandbox.create_sandbox", once_broken)
    monkeypatch.setenv("FINEVO_SANDBOX_BACKEND", "subprocess")  # no fallback: the failure stands
    pool = SandboxPool()
    pool.prewarm(snapshot_dir(), "subprocess", 1)
    with pytest.raises(SandboxUnavailable):  # the next attempt (no fallback) fails too: raised as is
        _open(tmp_path / "a", llm="reference", sandboxes=pool)
    session = _open(tmp_path / "b", llm="reference", sandboxes=pool)
    try:
        assert session.sandbox.backend == "subprocess"
    finally:
        session.close()
        pool.close()
