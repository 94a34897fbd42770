"""``finevo`` CLI: solve, registry list/show/clear, and the exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finevo.cli import main
from tests.finevo.agent.doubles import MA_GOOD, fenced
from tests.support.scripted_llm import Reply, ScriptedLLMServer, Status

MACD = "Calculate AMZN MACD(12,26,9)"


@pytest.fixture
def reg_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "registry"
    monkeypatch.setenv("FINEVO_REGISTRY_DIR", str(path))
    return path


@pytest.mark.slow
def test_solve_with_the_reference_model_then_reuse_and_manage_the_registry(
        reg_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", MACD, "--llm", "reference", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["tool_source"] == "created" and out["error"] is None
    assert set(out["value"]) == {"macd", "signal", "histogram"}
    assert out["usage"]["calls"] == 1

    # static mode: no model at all, the registered tool answers another symbol
    assert main(["solve", "Calculate AAPL MACD(12,26,9)", "--agent", "static"]) == 0
    text = capsys.readouterr().out
    assert "macd v1.0.0" in text and "reused" in text and "0 call(s)" in text

    assert main(["registry", "list"]) == 0
    listing = capsys.readouterr().out
    assert "macd" in listing and "verified" in listing and "symbol,fast,slow,signal" in listing

    assert main(["registry", "show", "macd"]) == 0
    shown = capsys.readouterr().out
    assert "import yfinance as yf" in shown and "version:   1.0.0" in shown

    assert main(["registry", "show", "macd", "--version", "9.0.0"]) == 2
    assert "no tool macd v9.0.0" in capsys.readouterr().err

    assert main(["registry", "clear"]) == 2
    assert "without --yes" in capsys.readouterr().err
    assert main(["registry", "clear", "--yes"]) == 0
    assert "removed 1 tool(s)" in capsys.readouterr().out
    assert main(["registry", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.slow
def test_solve_free_text_through_a_live_endpoint(reg_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    with ScriptedLLMServer([Reply(fenced(MA_GOOD))]) as srv:
        monkeypatch.setenv("FINEVO_LLM_BASE_URL", srv.base_url)
        code = main(["solve", "Calculate TSLA 10-day moving average over last 15 days", "--llm", "live",
                     "--json"])
        assert len(srv.requests) == 1
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["task_id"] == "query" and len(out["value"]) == 15


@pytest.mark.slow
def test_external_error_exits_3(reg_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("FINEVO_LLM_MAX_RETRIES", "0")
    with ScriptedLLMServer(handler=lambda req: Status(500)) as srv:
        monkeypatch.setenv("FINEVO_LLM_BASE_URL", srv.base_url)
        assert main(["solve", MACD, "--llm", "live"]) == 3
    assert "no answer: llm_api_error" in capsys.readouterr().out


def test_no_provider_configured_is_a_usage_error_with_a_clear_message(
        reg_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    for name in ("FINEVO_LLM_PROVIDER", "FINEVO_LLM_API_KEY", "OPENAI_API_KEY", "FINEVO_LLM_BASE_URL",
                 "OPENAI_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    assert main(["solve", MACD]) == 2  # like finevo-verify: nothing ran, the set-up is incomplete
    err = capsys.readouterr().err
    assert "FINEVO_LLM_API_KEY" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_static_mode_with_nothing_registered_exits_1(reg_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", MACD, "--agent", "static"]) == 1
    assert "no_tool_available" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["solve", "Tell me a joke"], "cannot understand the query"),
    (["solve", MACD, "--max-refinements", "-1"], "--max-refinements"),
    (["solve", MACD, "--data", "/nonexistent/snapshot", "--agent", "static"], "snapshot directory not found"),
    (["solve", MACD, "--timeout", "0", "--agent", "static"], "--timeout"),
])
def test_usage_errors_exit_2(reg_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                             message: str) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_registry_show_with_a_malformed_version_is_one_line_exit_2(
        reg_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["registry", "show", "macd", "--version", "1.0"]) == 2
    err = capsys.readouterr().err
    assert "--version='1.0'" in err and len(err.strip().splitlines()) == 1


def test_registry_messages_never_show_a_database_password() -> None:
    from finevo.cli import registry_location
    from finevo.registry import Registry

    reg = Registry.__new__(Registry)  # only the URL matters here; no server is contacted
    reg.url = "postgresql://finevo:s3cret-pw@db.example:5432/tools"
    assert "s3cret-pw" not in registry_location(reg)
    assert registry_location(reg) == "postgresql://finevo:***@db.example:5432/tools"


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    with pytest.raises(SystemExit) as info:
        main(["solve", MACD, "--agent", "clever"])
    assert info.value.code == 2


@pytest.mark.parametrize("before_action", [False, True])
def test_registry_dir_is_accepted_before_or_after_the_action(
        reg_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], before_action: bool) -> None:
    from finevo.registry import Registry, ToolInterface

    other = tmp_path / "other-registry"
    with Registry(f"sqlite:///{other / 'registry.db'}", other / "tools") as reg:
        reg.register("moving_average", MA_GOOD, ToolInterface("moving_average", "list"), status="verified")

    def argv(action: list[str]) -> list[str]:
        flag = ["--registry-dir", str(other)]
        return ["registry", *flag, *action] if before_action else ["registry", *action, *flag]

    assert main(argv(["list", "--json"])) == 0
    assert [r["name"] for r in json.loads(capsys.readouterr().out)] == ["moving_average"]
    assert main(argv(["show", "moving_average"])) == 0
    assert "def moving_average(" in capsys.readouterr().out
    # the registry named by the environment was not the one read
    assert main(["registry", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert main(argv(["clear", "--yes"])) == 0
    assert "removed 1 tool(s)" in capsys.readouterr().out
    assert main(argv(["list", "--json"])) == 0
    assert json.loads(capsys.readouterr().out) == []


@pytest.mark.slow
def test_solve_runs_tools_in_the_sandbox_backend_asked_for(reg_dir: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    import finevo.sandbox

    real, used = finevo.sandbox.create_sandbox, []

    def recording(*args, **kwargs):
        sandbox = real(*args, **kwargs)
        used.append(type(sandbox).__name__)
        return sandbox

    monkeypatch.setattr(finevo.sandbox, "create_sandbox", recording)
    assert main(["solve", MACD, "--llm", "reference", "--sandbox-backend", "subprocess", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["error"] is None
    monkeypatch.setenv("FINEVO_SANDBOX_BACKEND", "subprocess")
    assert main(["solve", MACD, "--llm", "reference", "--sandbox-backend", "warm", "--json"]) == 0
    assert used == ["SubprocessSandbox", "WarmSandbox"]  # the flag wins over the environment


@pytest.mark.slow
def test_a_deprecated_tool_is_kept_on_record_but_never_reused(reg_dir: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", MACD, "--llm", "reference"]) == 0
    assert main(["solve", "Calculate AAPL MACD(12,26,9)", "--agent", "static"]) == 0  # reusable before
    capsys.readouterr()
    assert main(["registry", "deprecate", "macd", "--registry-dir", str(reg_dir)]) == 0
    assert capsys.readouterr().out.strip() == "macd v1.0.0: verified -> deprecated"
    # static mode has only the registry: with its one MACD tool retired there is nothing to run
    assert main(["solve", "Calculate AAPL MACD(12,26,9)", "--agent", "static"]) == 1
    assert main(["registry", "show", "macd"]) == 0
    assert "status:    deprecated" in capsys.readouterr().out
    assert main(["registry", "deprecate", "macd", "--version", "9.0.0"]) == 2
    assert "no tool macd v9.0.0" in capsys.readouterr().err
    assert main(["registry", "deprecate", "macd", "--version", "x.y"]) == 2


def _snapshot_symbols() -> list[str]:
    from finevo.market.snapshot import Snapshot
    from finevo.paths import snapshot_dir

    return Snapshot(snapshot_dir()).symbols()


def _benchmark_queries() -> list[str]:
    from finevo.paths import benchmarks_dir
    from runner.inputs.tasks import load_tasks

    return [t.query for t in load_tasks(benchmarks_dir() / "tasks.jsonl")]


def test_reference_model_on_a_query_outside_the_benchmark_says_what_it_answers(
        reg_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = "Calculate GOOGL RSI-14 over last 30 days"
    assert query not in _benchmark_queries() and "GOOGL" in _snapshot_symbols()
    assert main(["solve", query, "--llm", "reference"]) == 2  # nothing can run: a usage error
    captured = capsys.readouterr()
    err = captured.err.strip().splitlines()
    assert len(err) == 1 and "only answers the benchmark's own queries" in err[0], err
    assert "finevo-verify list" in err[0]
    assert captured.out == "" and not reg_dir.exists()  # no registry was opened


@pytest.mark.parametrize("query, missing", [
    ("Calculate NVDA RSI-14 over last 30 days", ["NVDA"]),
    ("Calculate correlation between NVDA and AAPL over last 30 days", ["NVDA"]),
    ("Calculate equal-weight portfolio return (AAPL,NFLX,ORCL) over last 30 days", ["NFLX", "ORCL"]),
])
@pytest.mark.parametrize("llm", ["reference", "live"])
def test_a_symbol_missing_from_the_snapshot_is_named_with_the_ones_available(
        reg_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], query: str,
        missing: list[str], llm: str) -> None:
    monkeypatch.setenv("FINEVO_LLM_BASE_URL", "http://127.0.0.1:9")  # never contacted
    available = _snapshot_symbols()
    assert not set(missing) & set(available)
    assert main(["solve", query, "--llm", llm]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    for symbol in missing:
        assert symbol in err[0]
    for symbol in available:
        assert symbol in err[0]
    assert not reg_dir.exists()


def test_a_flag_abbreviation_is_refused_with_the_full_flag(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["solve", MACD, "--llm", "reference", "--registry-d", "x"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "did you mean --registry-dir?" in err[0], err
