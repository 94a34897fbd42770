"""The gold run: every reference tool, executed through the sandbox (static policy, confined
process, yfinance replay shim), agrees with the oracle's primary convention and passes the judge;
each one is written the way the suite asks of a generated tool."""

from __future__ import annotations

import ast
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

import runner.cli.oracle as oracle_cli
from finevo.errors import SandboxUnavailable
from finevo.market.snapshot import Snapshot, load_snapshot
from finevo.paths import benchmarks_dir, reference_dir, snapshot_dir
from finevo.sandbox import create_sandbox
from finevo.sandbox.api import Sandbox
from runner.cli import main as cli_main
from runner.cli.oracle import check_reference_tools, reference_code
from runner.inputs.tasks import Task, load_tasks
from runner.judging.compare import judge_value
from runner.judging.oracle import expected_values

TASKS = load_tasks(benchmarks_dir() / "tasks.jsonl")
ALLOWED_IMPORTS = {"pandas", "numpy", "math", "statistics", "datetime", "json", "decimal", "collections",
                   "itertools", "functools", "re", "typing", "dataclasses", "yfinance", "warnings", "__future__"}
FORBIDDEN_CALLS = {"getattr", "setattr", "delattr", "eval", "exec", "compile", "open", "__import__",
                   "globals", "locals", "vars", "input", "breakpoint"}


@pytest.fixture(scope="module")
def runner() -> Iterator[Sandbox]:
    sandbox = create_sandbox(snapshot_dir())
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return load_snapshot()


def test_one_reference_tool_per_task() -> None:
    files = {p.stem for p in reference_dir().glob("*.py")}
    assert files == {t.id for t in TASKS}


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_reference_tool_matches_primary_convention(task: Task, runner: Sandbox, snapshot: Snapshot) -> None:
    result = runner.run(reference_code(task), task.intent.indicator, dict(task.intent.args))
    assert result.status == "ok", f"{task.id}: {result.error_type}: {result.error_message}\n{result.traceback}"
    expected = expected_values(task, snapshot)
    judgement = judge_value(task, result.value, expected)
    assert judgement.passed, f"{task.id}: {judgement.reason}"
    assert judgement.convention == task.conventions[0].name
    json.dumps(result.value, allow_nan=False)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_reference_tool_self_test_runs(task: Task, runner: Sandbox) -> None:
    result = runner.run(reference_code(task), None)
    assert result.status == "ok", f"{task.id} self-test: {result.error_type}: {result.error_message}"


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_reference_tool_is_written_like_a_good_generated_tool(task: Task) -> None:
    path = reference_dir() / f"{task.id}.py"
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    public = [n for n in tree.body if isinstance(n, ast.FunctionDef) and not n.name.startswith("_")]
    assert [f.name for f in public] == [task.intent.indicator]
    function = public[0]
    params = [a.arg for a in function.args.args]
    assert set(task.intent.args) <= set(params), f"{path.name}: parameters {params}"
    optional = params[len(params) - len(function.args.defaults):]
    assert set(params) - set(task.intent.args) <= set(optional), "extra parameters need defaults"
    assert all(a.annotation is not None for a in function.args.args) and function.returns is not None
    assert ast.get_docstring(function) and "ValueError" in ast.get_docstring(function)
    assert any(isinstance(n, ast.If) and "__main__" in ast.unparse(n.test) for n in tree.body)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert {a.name.split(".")[0] for a in node.names} <= ALLOWED_IMPORTS, ast.unparse(node)
        elif isinstance(node, ast.ImportFrom):
            assert (node.module or "").split(".")[0] in ALLOWED_IMPORTS, ast.unparse(node)
        elif isinstance(node, ast.Attribute):
            assert not node.attr.startswith("__"), f"{path.name}:{node.lineno}: dunder attribute {node.attr}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id not in FORBIDDEN_CALLS, f"{path.name}:{node.lineno}: {node.func.id}()"


def test_a_wrong_tool_is_caught_by_the_gold_run(runner: Sandbox, snapshot: Snapshot,
                                                tmp_path: Path) -> None:
    """A drawdown tool that returns the MSFT quote instead (the old false pass) fails."""
    task = next(t for t in TASKS if t.id == "calc_007")
    (tmp_path / "calc_007.py").write_text(
        "import yfinance as yf\n\n\ndef max_drawdown(symbol: str, days: int = 250) -> float:\n"
        "    return float(yf.Ticker('MSFT').fast_info['lastPrice'])\n")
    [row] = check_reference_tools([task], snapshot, runner, directory=tmp_path)
    assert row.result.status == "ok" and row.judgement.state == "fail"


@pytest.mark.slow
def test_oracle_verb_prints_every_row_and_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli_main(["oracle", "--only", "fetch_002,calc_007,comp_001"])
    out = capsys.readouterr().out
    assert code == 0, out
    rows = [line for line in out.splitlines() if line.split(" ")[0] in ("fetch_002", "calc_007", "comp_001")]
    assert len(rows) == 3 and all(line.rstrip().endswith("pass") for line in rows)
    assert "3/3 reference tools match the oracle" in out


@pytest.mark.slow
def test_oracle_verb_exits_one_on_a_mismatch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Accept only the positive-magnitude reading: the reference tool's negative fraction no longer matches.
    line = next(json.loads(x) for x in (benchmarks_dir() / "tasks.jsonl").read_text().splitlines()
                if json.loads(x)["id"] == "calc_007")
    line["conventions"] = [c for c in line["conventions"] if c["name"] == "positive_fraction"]
    tasks_file = tmp_path / "tasks.jsonl"
    tasks_file.write_text(json.dumps(line) + "\n")
    assert cli_main(["oracle", "--tasks", str(tasks_file)]) == 1
    assert "fail" in capsys.readouterr().out


def test_oracle_verb_rejects_unknown_ids(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["oracle", "--only", "fetch_999"]) == 2
    assert "fetch_999" in capsys.readouterr().err


@pytest.mark.slow
def test_every_reference_tool_passes_with_its_probes(runner: Sandbox, snapshot: Snapshot) -> None:
    """The whole gold run as ``finevo-verify oracle`` does it: main values and every probe."""
    rows = check_reference_tools(TASKS, snapshot, runner)
    failed = [f"{r.task.id}: {r.judgement.reason}" for r in rows if not r.judgement.passed]
    assert not failed, failed
    assert sum(len(r.probes) for r in rows) == sum(len(t.probes) for t in TASKS)


def test_oracle_verb_without_a_sandbox_is_no_verdict(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    def unavailable(data_dir: object) -> Sandbox:
        raise SandboxUnavailable("the warm sandbox worker did not start: test")

    monkeypatch.setattr(oracle_cli, "create_sandbox", unavailable)
    assert cli_main(["oracle", "--only", "fetch_002"]) == 3
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "sandbox_unavailable" in err and "did not start" in err
