"""Probes: a constant, hard-coded or symbol-blind tool cannot pass a benchmark task.

On the bundled snapshot both boolean tasks are False for their own arguments; their probes ask the
same tool questions whose answer is True (and False again for other reasons), and a few numeric
tasks ask about another symbol. These tests prove the gate's judge + sandbox path uses them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from finevo.errors import InputError, SandboxUnavailable, ToolCrashed
from finevo.outcome import Outcome
from finevo.sandbox import create_sandbox
from finevo.sandbox.api import ExecutionResult
from runner.cli import main
from runner.cli.oracle import check_reference_tools
from runner.execution.deadline import Interrupts, TaskRunner
from runner.execution.session import Session, SessionSpec
from runner.inputs.tasks import Probe, Task, load_tasks
from runner.judging.compare import Judgement, judge_probes, judge_value, probe_entry
from runner.judging.grade import Reruns, judge_task
from runner.judging.oracle import OR_RAISES, before_the_data, expected_values, probe_expected_values
from runner.reports import document
from tests.runner.fakes import BENCH, DATA, TASKS

ROOT = Path(__file__).resolve().parents[2]

REFERENCE = BENCH / "reference"


def _primary(values: dict[str, Any]) -> Any:
    return next(iter(values.values()))


# --------------------------------------------------------------------------- tools as a model might write them
def _tool_answering(task: Task, expression: str, returns: str, doc: str) -> str:
    """A tool with the task's exact signature whose answer is ``expression`` over its own arguments."""
    params = ", ".join(f"{name}: {type(v).__name__} = {v!r}" for name, v in task.intent.args.items())
    name = task.intent.indicator
    return (f'"""{name}, answered without looking at the data."""\n\n\n'
            f"def {name}({params}) -> {returns}:\n"
            f'    """{doc}"""\n    return {expression}\n\n\n'
            f'if __name__ == "__main__":\n    print({name}())\n')


def _constant(task: Task, value: Any) -> str:
    """A tool that returns ``value`` whatever it is asked."""
    return _tool_answering(task, repr(value), type(value).__name__, f"Always {value!r}.")


def _answers_from(task: Task, condition: str) -> str:
    """A tool whose answer is ``condition`` over its own arguments: it moves with its arguments, so
    it gets past the agent's metamorphic check, but it never looks at the data."""
    return _tool_answering(task, f"bool({condition})", "bool", f"Whether {condition}.")


def _symbol_blind(task_id: str) -> str:
    """The reference tool, except that it always reads AAPL's prices whatever ``symbol`` says."""
    code = (REFERENCE / f"{task_id}.py").read_text(encoding="utf-8")
    assert code.count("yf.Ticker(symbol)") == 1
    return code.replace("yf.Ticker(symbol)", 'yf.Ticker("AAPL")')


def _reference(task_id: str) -> str:
    return (REFERENCE / f"{task_id}.py").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- the suite's probes
def test_every_boolean_task_has_probes_answering_true_and_false(tasks, snapshot) -> None:
    booleans = [t for t in tasks.values() if t.output.type == "boolean"]
    assert {t.id for t in booleans} >= {"comp_001", "comp_002"}
    for task in booleans:
        answers = {_primary(v) for v in probe_expected_values(task, snapshot)}
        assert answers == {True, False}, f"{task.id}: probe answers {answers}"
        assert _primary(expected_values(task, snapshot)) in answers


def test_every_probe_changes_the_answer_of_its_numeric_task(tasks, snapshot) -> None:
    numeric = [t for t in tasks.values() if t.probes and t.output.type == "numeric"]
    assert {"calc_007", "fetch_003", "calc_001"} <= {t.id for t in numeric}
    for task in numeric:
        main_value = _primary(expected_values(task, snapshot))
        for index, values in enumerate(probe_expected_values(task, snapshot), start=1):
            probe_value = _primary(values)
            # the main answer must be judged wrong for the probe, or the probe proves nothing
            assert judge_value(task, main_value, {next(iter(values)): probe_value}).state == "fail", \
                f"{task.id} probe {index}: {probe_value} is the main answer {main_value}"


def test_probe_arguments_that_are_oracle_parameters_change_the_oracle_too(tasks) -> None:
    for task in tasks.values():
        for index, probe in enumerate(task.probes, start=1):
            for name, value in probe.args.items():
                assert name in task.intent.args, f"{task.id} probe {index}: {name} is not a task argument"
                if name in task.oracle.params:
                    assert probe.oracle_params.get(name) == value, \
                        f"{task.id} probe {index}: the tool gets {name}={value!r}, the oracle does not"


def test_a_malformed_probe_is_a_one_line_input_error_naming_the_line(tmp_path) -> None:
    lines = TASKS.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[0])
    record["probes"] = [{"args": {"symbol": "MSFT"}, "reason": "x", "oracle_param": {}}]
    bad = tmp_path / "tasks.jsonl"
    bad.write_text("\n".join([lines[1], json.dumps(record)]) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"tasks\.jsonl:2: invalid Task field 'probes\.0\.oracle_param'"):
        load_tasks(bad)
    record["probes"] = [{"args": {}, "reason": "changes nothing"}]
    bad.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"tasks\.jsonl:1: invalid Task field 'probes\.0\.args'"):
        load_tasks(bad)


def test_probe_oracle_errors_name_task_and_probe(tasks, snapshot) -> None:
    task = tasks["calc_007"].model_copy(update={"probes": (
        Probe(args={"symbol": "NOPE"}, oracle_params={"symbol": "NOPE"}, reason="unknown symbol"),)})
    with pytest.raises(InputError, match=r"task calc_007 probe 1 \(symbol=NOPE\): oracle 'max_drawdown'"):
        probe_expected_values(task, snapshot)


# --------------------------------------------------------------------------- judge_probes, scripted runs
def _passed_main(task: Task, snapshot: Any, value: Any = None) -> tuple[Outcome, Judgement, dict[str, Any]]:
    expected = expected_values(task, snapshot)
    value = _primary(expected) if value is None else value
    outcome = Outcome(task_id=task.id, value=value, tool_code=_reference(task.id), stage="done")
    main_judgement = judge_value(task, value, expected)
    assert main_judgement.passed
    return outcome, main_judgement, expected


def test_probes_do_not_run_when_the_main_value_fails(tasks, snapshot) -> None:
    task = tasks["comp_001"]
    expected = expected_values(task, snapshot)
    outcome = Outcome(task_id=task.id, value=True, tool_code=_reference(task.id), stage="done")
    failed = judge_value(task, True, expected)
    calls: list[Any] = []
    judgement, results = judge_probes(task, outcome, failed, expected, probe_expected_values(task, snapshot),
                                      lambda *a: calls.append(a))  # type: ignore[func-returns-value]
    assert judgement is failed and results == [] and calls == []


def test_probe_calls_the_tools_function_with_the_tasks_args_updated(tasks, snapshot) -> None:
    task = tasks["comp_001"]
    outcome, main_judgement, expected = _passed_main(task, snapshot)
    probes_expected = probe_expected_values(task, snapshot)
    calls: list[tuple[str, dict[str, Any]]] = []

    def right(code: str, entry: str, args: dict[str, Any]) -> ExecutionResult:
        calls.append((entry, args))
        return ExecutionResult(status="ok", value=_primary(probes_expected[len(calls) - 1]))

    judgement, results = judge_probes(task, outcome, main_judgement, expected, probes_expected, right)
    assert judgement.passed and judgement.convention == "wilder_rsi"
    assert [r.state for r in results] == ["pass"] * len(task.probes)
    assert calls[1] == ("ma_cross_rsi_signal", {**task.intent.args, "symbol": "GOOGL", "rsi_threshold": 70})
    assert all(entry == task.intent.indicator for entry, _ in calls)


def test_a_failing_probe_names_itself_and_later_probes_are_skipped(tasks, snapshot) -> None:
    task = tasks["comp_001"]
    outcome, main_judgement, expected = _passed_main(task, snapshot)
    probes_expected = probe_expected_values(task, snapshot)
    answers = [_primary(v) for v in probes_expected]
    answers[1] = not answers[1]
    calls: list[int] = []

    def second_wrong(code: str, entry: str, args: dict[str, Any]) -> ExecutionResult:
        calls.append(1)
        return ExecutionResult(status="ok", value=answers[len(calls) - 1])

    judgement, results = judge_probes(task, outcome, main_judgement, expected, probes_expected, second_wrong)
    assert judgement.state == "fail"
    assert judgement.reason == "probe 2 (symbol=GOOGL, rsi_threshold=70): expected True, got False"
    assert [r.state for r in results] == ["pass", "fail", "skipped", "skipped"] and len(calls) == 2
    assert results[1].actual is False and results[1].expected == {"wilder_rsi": True}


@pytest.mark.parametrize("outcome_of_run, state, words", [
    (ExecutionResult(status="exception", error_type="KeyError", error_message="'Close'"), "fail", "the tool raised"),
    (ExecutionResult(status="timeout", layer="timeout"), "fail", "the tool timed out"),
    (ExecutionResult(status="blocked", layer="audit-hook", rule="open"), "fail", "the tool was blocked"),
    (ToolCrashed("tool died"), "fail", "tool died"),
    (SandboxUnavailable("the warm sandbox is closed"), "error", "the warm sandbox is closed"),
])
def test_a_probe_run_that_breaks_fails_and_an_external_error_stays_error(tasks, snapshot, outcome_of_run, state,
                                                                        words) -> None:
    task = tasks["calc_007"]
    outcome, main_judgement, expected = _passed_main(task, snapshot)

    def run(code: str, entry: str, args: dict[str, Any]) -> ExecutionResult:
        if isinstance(outcome_of_run, Exception):
            raise outcome_of_run
        return outcome_of_run

    judgement, results = judge_probes(task, outcome, main_judgement, expected,
                                      probe_expected_values(task, snapshot), run)
    assert judgement.state == state and results[0].state == state
    assert judgement.reason.startswith("probe 1 (symbol=AAPL): ") and words in judgement.reason
    assert results[1].state == "skipped"


def test_a_probe_must_match_the_convention_the_main_value_matched(tasks, snapshot) -> None:
    task = tasks["calc_007"]  # negative_fraction (-0.27) or positive_fraction (0.27)
    outcome, main_judgement, expected = _passed_main(task, snapshot)
    assert main_judgement.convention == "negative_fraction"
    probes_expected = probe_expected_values(task, snapshot)

    def flips_sign(code: str, entry: str, args: dict[str, Any]) -> ExecutionResult:
        return ExecutionResult(status="ok", value=probes_expected[0]["positive_fraction"])

    judgement, results = judge_probes(task, outcome, main_judgement, expected, probes_expected, flips_sign)
    assert judgement.state == "fail" and "probe 1 (symbol=AAPL)" in judgement.reason
    assert set(results[0].expected) == {"negative_fraction"}


def test_probe_entry_is_the_called_function_or_the_single_public_one(tasks) -> None:
    task = tasks["comp_002"]
    assert probe_entry(_reference("comp_002"), task) == "volume_price_divergence"
    assert probe_entry("def _helper():\n    pass\n\ndef divergence(symbol, days):\n    return True\n", task) == \
        "divergence"
    assert probe_entry("def a():\n    pass\n\ndef b():\n    pass\n", task) is None
    two_public = "def helper(x):\n    return x\n\nasync def volume_price_divergence(symbol, days):\n    return True\n"
    assert probe_entry(two_public, task) == "volume_price_divergence"
    assert probe_entry("def helper():\n    def volume_price_divergence():\n        pass\n", task) == "helper"
    assert probe_entry("def broken(:\n", task) is None


def test_judge_task_without_a_sandbox_records_probes_skipped(tasks, snapshot) -> None:
    task = tasks["comp_002"]
    outcome, _, expected = _passed_main(task, snapshot)
    result = judge_task(task, outcome, expected, 0.1)
    assert result.state == "pass"
    assert [p.state for p in result.probes] == ["skipped"] * len(task.probes)


# --------------------------------------------------------------------------- the gate's judge + real sandbox
@pytest.fixture(scope="module")
def task_runner(tmp_path_factory):
    def factory(spec: SessionSpec) -> Session:
        sandbox = create_sandbox(DATA, backend="warm")
        return Session(agent=None, sandbox=sandbox, closers=[sandbox.close])  # type: ignore[arg-type]

    spec = SessionSpec(llm="reference", registry_dir=tmp_path_factory.mktemp("registry"), data_dir=DATA)
    runner = TaskRunner(factory, spec, Interrupts(), timeout_s=60.0)
    yield runner
    runner.close()


def _judge_in_sandbox(task: Task, code: str, runner: TaskRunner, snapshot: Any) -> Any:
    """What the gate does with a finished outcome: judge it, then its probes in the run's sandbox."""
    main_run = runner.run_tool(code, task.intent.indicator, dict(task.intent.args), 30.0)
    assert main_run.ok, main_run
    outcome = Outcome(task_id=task.id, value=main_run.value, tool_code=code, tool_source="created", stage="done")
    return judge_task(task, outcome, expected_values(task, snapshot), 0.0,
                      Reruns(runner.probe_runner(), probe_expected=probe_expected_values(task, snapshot)))


@pytest.mark.parametrize("task_id", ["comp_001", "comp_002"])
def test_a_constant_false_tool_fails_the_boolean_tasks_in_the_sandbox(tasks, snapshot, task_runner, task_id) -> None:
    task = tasks[task_id]
    result = _judge_in_sandbox(task, _constant(task, False), task_runner, snapshot)
    assert result.actual is False and result.expected == {task.conventions[0].name: False}  # main value right
    assert result.state == "fail"
    assert result.reason.startswith("probe 1 (") and result.reason.endswith("expected True, got False")
    assert result.probes[0].state == "fail" and result.probes[0].actual is False
    assert all(p.state == "skipped" for p in result.probes[1:])


@pytest.mark.parametrize("task_id", ["comp_001", "comp_002", "calc_001", "calc_007", "fetch_003"])
def test_the_reference_tool_passes_every_probe_in_the_sandbox(tasks, snapshot, task_runner, task_id) -> None:
    task = tasks[task_id]
    result = _judge_in_sandbox(task, _reference(task_id), task_runner, snapshot)
    assert result.state == "pass", result.reason
    assert len(result.probes) == len(task.probes) and all(p.state == "pass" for p in result.probes)
    assert result.reason.endswith(f"{len(task.probes)} probe(s) pass")


@pytest.mark.slow
def test_a_tool_that_ignores_its_symbol_fails_the_symbol_probe(tasks, snapshot, task_runner) -> None:
    task = tasks["calc_001"]  # AAPL RSI-14: the AAPL answer is right for the task itself
    result = _judge_in_sandbox(task, _symbol_blind("calc_001"), task_runner, snapshot)
    assert result.actual == pytest.approx(_primary(expected_values(task, snapshot)))
    assert result.state == "fail"
    assert result.reason.startswith("probe 1 (symbol=MSFT): expected ") and ", got " in result.reason
    assert math.isclose(result.probes[0].actual, result.actual)


def test_a_tool_that_only_works_for_the_tasks_symbol_fails(tasks, snapshot, task_runner) -> None:
    task = tasks["calc_007"]
    code = _reference("calc_007").replace("yf.Ticker(symbol)", '(yf.Ticker(symbol) if symbol == "MSFT" else None)')
    result = _judge_in_sandbox(task, code, task_runner, snapshot)
    assert result.state == "fail"
    assert result.reason.startswith("probe 1 (symbol=AAPL): the tool raised (AttributeError")


# --------------------------------------------------------------------------- end to end
def _predictions(tmp_path: Path, contents: dict[str, str]) -> Path:
    path = tmp_path / "predictions.jsonl"
    lines = [{"task_id": i, "attempt": 0, "content": f"```python\n{code}```\n"} for i, code in contents.items()]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _run_boolean_tasks(tmp_path: Path, contents: dict[str, str], run_id: str) -> tuple[int, dict[str, Any], Path]:
    predictions = _predictions(tmp_path, contents)
    out = tmp_path / "out"
    code = main(["run", "--llm", f"predictions:{predictions}", "--only", ",".join(contents), "--no-self-check",
                 "--no-payloads", "--data", str(DATA), "--out", str(out), "--run-id", run_id, "--quiet"])
    return code, document.load(out / run_id / "results.json").to_json_dict(), out / run_id


@pytest.mark.slow  # 7-15 s at load 8 (-n 2)
def test_a_constant_false_prediction_is_rejected_by_the_agent_itself(tmp_path, tasks, capsys) -> None:
    code, doc, _ = _run_boolean_tasks(tmp_path, {i: _constant(tasks[i], False) for i in ("comp_001", "comp_002")},
                                      "constant")
    assert code == 1
    for t in doc["tasks"]:
        # Both tasks' expected answer is False: only verification stands between a constant and a pass.
        assert set(t["expected"].values()) == {False}
        assert t["state"] == "fail" and t["actual"] is None and t["tool"]["source"] == "none"
        assert "last failure at metamorphic" in t["reason"], t["reason"]
    assert doc["summary"]["passed"] == 0


@pytest.mark.slow  # 7-15 s at load 8 (-n 2)
def test_a_tool_that_ignores_the_data_fails_both_boolean_tasks_through_the_probes(tmp_path, tasks, capsys) -> None:
    # Each answer moves with an argument the agent varies (so the tool is verified and registered)
    # and is right for the task's own arguments (False): only the probes can tell it is wrong.
    # (comp_001's answer also hangs on its threshold through the symbol and the RSI window, as
    # the agent checks at a threshold bracket)
    contents = {"comp_001": _answers_from(tasks["comp_001"],
                                          "long_window > 20 and rsi_threshold > 12 * len(symbol) + rsi_window"),
                "comp_002": _answers_from(tasks["comp_002"], "days > 40")}
    code, doc, run_dir = _run_boolean_tasks(tmp_path, contents, "blind")
    assert code == 1
    by_id = {t["task_id"]: t for t in doc["tasks"]}
    for task_id in ("comp_001", "comp_002"):
        t = by_id[task_id]
        assert t["state"] == "fail" and t["actual"] is False and t["tool"]["source"] == "created"
        assert t["reason"].startswith("probe 1 (") and t["reason"].endswith("expected True, got False")
        assert t["probes"][0]["state"] == "fail" and t["probes"][0]["actual"] is False
        assert t["probes"][0]["args"] == tasks[task_id].probes[0].args
    assert doc["summary"]["passed"] == 0
    summary = (run_dir / "summary.md").read_text(encoding="utf-8")
    assert "**Probes**" in summary and "| 1 | symbol=GOOGL | ❌ fail | " in summary
    cases = {c.get("name"): c for c in ElementTree.parse(run_dir / "junit.xml").iter("testcase")}
    assert cases["comp_002"].find("failure") is not None
    assert 'probe 1 {"symbol": "GOOGL"}: fail' in (cases["comp_002"].findtext("system-out") or "")


@pytest.mark.slow
def test_full_reference_run_with_probes_exits_0(tmp_path, tasks) -> None:
    """One whole reference run (every task is probed) asserted for every probed task: the listed
    probes first, then the ones the gate derives from the task's arguments, all passing, in every
    hidden world. (It once had a twin that ran the gate again on the probed tasks alone.)"""
    code = main(["run", "--llm", "reference", "--data", str(DATA), "--out", str(tmp_path / "out"),
                 "--run-id", "gold", "--quiet"])
    assert code == 0
    doc = document.load(tmp_path / "out" / "gold" / "results.json").to_json_dict()
    assert doc["summary"]["passed"] == doc["summary"]["total"] == 20
    probed = {t.id for t in tasks.values() if t.probes}
    assert probed and probed <= {t["task_id"] for t in doc["tasks"]}
    for t in doc["tasks"]:  # every task is probed: its listed probes and at least one derived one
        assert t["state"] == "pass", (t["task_id"], t["reason"])
        listed = tasks[t["task_id"]].probes
        assert [p["args"] for p in t["probes"][:len(listed)]] == [dict(p.args) for p in listed]
        assert len(t["probes"]) > len(listed) and "pass" in {p["state"] for p in t["probes"]}
        # every probe passes on the snapshot, but one asked at a scale only the long world holds: it is
        # skipped here (it needs more sessions than the snapshot has) and judged in that world
        assert all(p["state"] == "pass" or (p["state"] == "skipped" and "sessions of history" in p["reason"])
                   for p in t["probes"]), (t["task_id"], t["probes"])
        if any(p["state"] == "skipped" for p in t["probes"]):
            assert "long" in {w["kind"] for w in t["worlds"]}, t["task_id"]
        # every world passes, but one where the task's question has no answer: not judged, and said so
        # (fetch_003's fiscal 2023 is not filed yet in the edge world of New Year's Day 2024)
        assert all(w["state"] == "pass" or (w["state"] == "skipped" and "oracle has no answer" in w["reason"])
                   for w in t["worlds"]), (t["task_id"], t["worlds"])
        assert sum(w["state"] == "pass" for w in t["worlds"]) >= 2, (t["task_id"], t["worlds"])
    assert doc["config"]["worlds"]["count"] == 3
    document.validate(doc)


# --------------------------------------------------------------------------- finevo-verify oracle
@pytest.mark.slow
def test_oracle_verb_checks_the_reference_tools_probes(capsys) -> None:
    assert main(["oracle", "--only", "comp_001,calc_007"]) == 0
    out = capsys.readouterr().out
    assert "  probe 4  False" in out and "(short_window=10, long_window=50, rsi_threshold=100)" in out
    assert "2/2 reference tools match the oracle (with their 6 probe(s))" in out


@pytest.mark.slow
def test_oracle_check_fails_a_constant_reference_tool_on_its_probe(tmp_path, tasks, snapshot) -> None:
    task = tasks["comp_002"]
    (tmp_path / "comp_002.py").write_text(_constant(task, False), encoding="utf-8")
    sandbox = create_sandbox(DATA)
    try:
        [row] = check_reference_tools([task], snapshot, sandbox, tmp_path)
    finally:
        sandbox.close()
    assert row.result.value is False and row.judgement.state == "fail"
    assert row.judgement.reason == "probe 1 (symbol=GOOGL): expected True, got False"
    assert row.to_dict()["probes"][0]["state"] == "fail"


# --------------------------------------------------------------------------- the argument space
@pytest.mark.slow  # 7-15 s at load 8 (-n 2)
def test_probes_drawn_across_the_argument_space_reach_far_from_the_tasks_own_numbers(tasks, snapshot) -> None:
    from runner.judging.probes import LOOKBACKS, YEAR_LOOKBACKS, probes_for

    drawn: dict[str, list[Probe]] = {}
    for seed in range(4):
        for task in tasks.values():
            drawn.setdefault(task.id, []).extend(p for p in probes_for(task, snapshot, seed=seed)
                                                 if "argument space" in p.reason)
    days = tasks["calc_007"].intent.args["days"]
    far = {p.args["days"] for p in drawn["calc_007"]
           if "days" in p.args and not p.expect_error and "a year" not in p.reason}
    assert far and all(d in LOOKBACKS["days"] and not days / 2 <= d <= days * 2 for d in far)
    years = {p.args["days"] for p in drawn["calc_007"] if "a year back" in p.reason}
    assert years and years <= set(YEAR_LOOKBACKS["days"])  # asked even where a year is near the task's own
    sizes = {len(p.args["symbols"]) for p in drawn["comp_003"] if "symbols" in p.args}
    assert sizes and 3 not in sizes and sizes <= {2, 4, 5}
    # every drawn probe the oracle answers under every reading, except the ones that expect an error
    # (no reading answers them, or -- a days beyond the data that a whole-history reading ignores --
    # some do and the others refuse); a dividend window opening before the data accepts a clear error too
    for task_id, probes in drawn.items():
        judged = tasks[task_id].model_copy(update={"probes": tuple(probes)})
        for probe, expected in zip(probes, probe_expected_values(judged, snapshot), strict=True):
            early = before_the_data(judged, snapshot, dict(probe.oracle_params)) is not None
            assert ("<raises>" in expected or "<or raises>" in expected) is (probe.expect_error or early), \
                (task_id, probe.args)


def test_a_tool_that_answers_from_fewer_data_than_asked_fails_and_one_that_raises_passes(tasks, snapshot) -> None:
    from runner.judging.probes import probes_for

    task = tasks["calc_007"]
    judged = task.model_copy(update={"probes": tuple(p for p in probes_for(task, snapshot, seed=1) if p.expect_error)})
    assert judged.probes and judged.probes[0].args["days"] > len(snapshot.history("MSFT"))
    expected = expected_values(judged, snapshot)
    outcome = Outcome(task_id=task.id, value=_primary(expected), tool_code="def max_drawdown(**kw):\n    pass\n",
                      stage="done")

    def clamps(code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        return ExecutionResult(status="ok", value=_primary(expected))  # a lookback clamped to the data

    def raises(code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        if args["days"] > len(snapshot.history("MSFT")):
            return ExecutionResult(status="exception", error_type="ValueError", error_message="need more sessions")
        return ExecutionResult(status="ok", value=_primary(expected))

    probe_expected = probe_expected_values(judged, snapshot)
    failed = judge_task(judged, outcome, expected, 0.0, Reruns(clamps, probe_expected=probe_expected))
    assert failed.state == "fail" and "expected a clear error" in failed.reason
    passed = judge_task(judged, outcome, expected, 0.0, Reruns(raises, probe_expected=probe_expected))
    assert passed.state == "pass", passed.reason


def test_the_in_process_runner_reads_each_snapshots_moment_and_starts_every_run_there(in_process,
                                                                                     tmp_path: Path) -> None:
    """The judge's scripts run tools in their own process: a run on a snapshot recorded during the session
    reads that minute, not the close of another snapshot of the same date run before it, and each run
    starts there however long the clock has been frozen (as a sandbox child does)."""
    import shutil

    from finevo.market import frozen_clock
    from finevo.sandbox import Limits

    during = tmp_path / "during"
    shutil.copytree(DATA, during)
    manifest = json.loads((during / "manifest.json").read_text())
    (during / "manifest.json").write_text(json.dumps({**manifest, "during_session": "11:47"}))
    code = "import datetime\n\n\ndef now() -> str:\n    return datetime.datetime.now().isoformat()\n"
    readings = [in_process.run(code, "now", {}, Limits()).value]
    for _ in range(2):
        readings.append(in_process.run(code, "now", {}, Limits(), snapshot_dir=str(during)).value)
        frozen_clock._STATE.started -= 3 * 3600  # three hours spent judging on the same snapshot
    assert [r[11:16] for r in readings] == ["16:00", "11:47", "11:47"], readings
    assert {r[:10] for r in readings} == {manifest["as_of"]}


def test_a_value_the_sandbox_refuses_is_not_the_clear_error_a_probe_expects(tasks, snapshot, in_process) -> None:
    """A tool with no length check returns NaN placeholders where the data cannot answer; the sandbox
    refuses that value (``ResultNotFinite``, layer ``result``). That is the tool's value, not an
    exception of its own: the expect-error probe fails, saying so. The sandbox records it that way,
    and so does the in-process runner of the judge's scripts."""
    from finevo.sandbox import Limits
    from runner.judging.probes import probes_for

    task = tasks["calc_002"]
    judged = task.model_copy(update={"probes": tuple(p for p in probes_for(task, snapshot, seed=1) if p.expect_error)})
    assert judged.probes
    expected = expected_values(judged, snapshot)
    code = ("import yfinance as yf\n\n\ndef sma(symbol, window=5, days=20):\n"
            "    closes = yf.Ticker(symbol).history(period='max')['Close']\n"
            "    return [float('nan')] * days\n")
    refused = in_process.run(code, "sma", {"symbol": "AAPL", "days": 3}, Limits())
    assert refused.status == "crashed" and refused.layer == "result" and refused.error_type == "ResultNotFinite"
    outcome = Outcome(task_id=task.id, value=_primary(expected), tool_code=code, stage="done")
    probe_expected = probe_expected_values(judged, snapshot)
    as_recorded = {"sandbox": refused,  # as the supervisor records it
                   "claimed": ExecutionResult(status="exception", layer="result", error_type="ResultNotFinite",
                                              error_message="value[0] is NaN")}
    for name, placeholder in as_recorded.items():
        def run(code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None,
                placeholder: ExecutionResult = placeholder) -> ExecutionResult:
            if args == dict(task.intent.args):
                return ExecutionResult(status="ok", value=_primary(expected))
            return placeholder

        failed = judge_task(judged, outcome, expected, 0.0, Reruns(run, probe_expected=probe_expected))
        assert failed.state == "fail", (name, failed.reason)
        assert "refuses as an answer" in failed.reason and "not an error the tool raised" in failed.reason, \
            (name, failed.reason)


@pytest.mark.parametrize("died", [
    ExecutionResult(status="crashed", layer="result",  # os._exit in the tool: the supervisor's words
                    error_message="the tool process exited (code 3) with no result"),
    ExecutionResult(status="crashed", layer="result",  # a harness failure written after the tool started
                    error_message="the tool process reported a harness failure after the tool started: "
                                  "OSError: pipe closed"),
    ExecutionResult(status="crashed", layer="result", error_type="ResultUnreadable",
                    error_message="the tool process exited (code 0) with an unreadable result channel"),
], ids=["no-result", "harness-error", "unreadable"])
def test_a_tool_that_died_on_the_result_layer_is_a_crash_not_a_refused_value(died: ExecutionResult) -> None:
    """The supervisor records a tool that died without a result on layer ``result`` too; only a
    value the boundary refused carries one of its refusal types (:data:`finevo.normalize.REFUSALS`).
    A must-raise probe says which happened."""
    from runner.judging.compare import raise_judgement, raised_by_tool, refused_value, run_words

    refused = ExecutionResult(status="crashed", layer="result", error_type="ResultNotFinite",
                              error_message="value[0] is NaN")
    assert refused_value(refused) and not refused_value(died)
    assert not raised_by_tool(refused) and not raised_by_tool(died)
    assert run_words(died).startswith("the tool died without a result"), run_words(died)
    crashed = raise_judgement("probe 1", died, "window 3012 > 3011 sessions")
    assert crashed.state == "fail" and "died without a result" in crashed.reason, crashed.reason
    assert "refuses" not in crashed.reason and "placeholder" not in crashed.reason, crashed.reason
    placeholder = raise_judgement("probe 1", refused, "window 3012 > 3011 sessions")
    assert placeholder.state == "fail", placeholder.reason
    assert "returned a value the sandbox refuses as an answer (ResultNotFinite" in placeholder.reason
    assert "a placeholder is not an error the tool raised" in placeholder.reason, placeholder.reason


# --------------------------------------------------------------------------- counts at another scale, real numbers
def test_a_task_on_one_symbol_is_asked_about_the_index_and_the_etf_in_every_seed(tasks, snapshot) -> None:
    """Never one drawn in place of the other: a tool right on stocks and the ETF but wrong on the index
    (bars of Volume 0 dropped, shares read) would pass half the runs. A statement, which neither has, is
    asked of another stock instead."""
    from runner.judging.probes import BENCHMARK_SYMBOLS, probes_for

    for seed in (1, 2, 3):
        quote = {p.args["symbol"] for p in probes_for(tasks["fetch_002"], snapshot, seed=seed) if "symbol" in p.args}
        assert set(BENCHMARK_SYMBOLS) <= quote, (seed, quote)
        income = {p.args["symbol"] for p in probes_for(tasks["fetch_006"], snapshot, seed=seed)
                  if "symbol" in p.args and not p.expect_error}
        assert income and not income & set(BENCHMARK_SYMBOLS), (seed, income)


def test_parameters_are_classed_by_their_declared_type_not_their_name() -> None:
    from runner.inputs.oracle_params import param_kind

    assert param_kind("macd", "fast") == param_kind("kdj", "k_period") == param_kind("rsi", "days") == "count"
    assert param_kind("bollinger_bands", "num_std") == param_kind("post_signal_return", "rsi_threshold") == "number"
    assert param_kind("net_income", "year") is None  # a year is a date, not a count
    assert param_kind("volatility", "periods_per_year") is None  # a positive constant, not a free number
    assert param_kind("macd", "symbol") is None and param_kind("no_such_oracle", "window") is None


@pytest.mark.slow
def test_a_task_with_several_counts_is_probed_with_all_of_them_scaled_together(tasks, snapshot) -> None:
    from runner.judging.probes import SCALES, WARM_UP, _all_symbols, _counts, _Deriver, probes_for

    scaled_tasks = long_tasks = 0
    for task in tasks.values():
        counts = _counts(_Deriver(task, snapshot))
        every = [p for p in probes_for(task, snapshot, seed=1) if "every count" in p.reason]
        if len(counts) < 2:
            assert not every, task.id
            continue
        if not every:
            continue  # no scale the oracle answers (checked below for the tasks where one exists)
        sessions = min(len(snapshot.history(s)) for s in _all_symbols(task) if s in snapshot.symbols())
        scaled = [p for p in every if p.min_sessions is None]
        longer = [p for p in every if p.min_sessions is not None]
        assert len(scaled) <= 1 and len(longer) <= 1, (task.id, every)
        for probe in longer:
            # a scale only the long world holds: judged only where the data hold its warm-up
            long_tasks += 1
            assert probe.min_sessions == WARM_UP * sum(probe.args.values()) > sessions, (task.id, probe)
            assert not scaled or sum(probe.args.values()) > sum(scaled[0].args.values()), task.id
        for probe in every:
            factors = {probe.args[k] / v for k, v in counts.items()}
            assert len(factors) == 1 and factors <= set(SCALES), (task.id, probe.args)
        if not scaled:
            continue
        scaled_tasks += 1
        [probe] = scaled
        # within the history with the warm-up to spare, where accepted seeds of a recursive indicator agree
        assert WARM_UP * sum(probe.args.values()) <= sessions, (task.id, probe.args)
        # the relations between the counts hold at the new scale (fast < slow, window < days ...)
        for a in counts:
            for b in counts:
                assert (counts[a] < counts[b]) == (probe.args[a] < probe.args[b]), (task.id, a, b)
        judged = task.model_copy(update={"probes": (probe,)})
        [expected] = probe_expected_values(judged, snapshot)
        assert "<raises>" not in expected, (task.id, probe.args)
    assert scaled_tasks >= 3  # the moving average, KDJ, the RSI signal's horizon
    assert long_tasks >= 3  # MACD, KDJ, the RSI signal among them


@pytest.mark.slow
def test_a_tool_that_caps_a_smoothing_period_fails_when_every_count_is_scaled(tasks, snapshot, task_runner) -> None:
    from runner.judging.probes import probes_for

    task = tasks["calc_006"]  # KDJ(9, 3, 3): no probe moving one period alone reaches past 9
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=1)})
    capped = _reference("calc_006").replace(
        "    if n <= 0 or k_period <= 0", "    k_period, d_period = min(k_period, 9), min(d_period, 9)\n"
        "    if n <= 0 or k_period <= 0")
    assert "min(k_period, 9)" in capped
    single = [p for p in judged.probes if "every count" not in p.reason]
    assert all(p.args.get(k, 0) <= 9 for p in single for k in ("k_period", "d_period"))
    result = _judge_in_sandbox(judged, capped, task_runner, snapshot)
    assert result.state == "fail"
    failed = [p for p in result.probes if p.state == "fail"]
    assert failed and set(failed[0].args) == {"n", "k_period", "d_period"}, result.reason
    assert _judge_in_sandbox(judged, _reference("calc_006"), task_runner, snapshot).state == "pass"


def test_every_plain_count_is_drawn_far_and_asked_past_the_data_and_a_seeded_one_only_scaled(tasks, snapshot) -> None:
    """A count the probes would leave near its own value because of its name (a short or long moving
    average's window, KDJ's range, a horizon) is drawn far as a ``window`` is, and asked where the data
    run out (at the limit and one past it, or one past all the data); a count that seeds a recursive
    smoothing moves only with the others (scaled)."""
    from runner.inputs.oracle_params import param_kind, param_seeded
    from runner.judging.probes import LOOKBACKS, probes_for

    limits: set[tuple[str, str]] = set()
    far: set[tuple[str, str]] = set()
    outgrown: set[tuple[str, str]] = set()
    plain = seeded = 0
    for task in tasks.values():
        name = task.oracle.name
        counts = [k for k, v in task.oracle.params.items()
                  if param_kind(name, k) == "count" and isinstance(v, int) and k in task.intent.args]
        probes = probes_for(task, snapshot, seed=1)
        for key in counts:
            moved = [p for p in probes if set(p.args) == {key}]
            if param_seeded(name, key) and key not in LOOKBACKS:
                seeded += 1
                assert not [p for p in moved if "far from" in p.reason or "limit" in p.reason], (task.id, key)
                continue
            plain += 1
            if any("far from the task's own" in p.reason for p in moved):
                far.add((task.id, key))
            past = [p for p in moved if p.expect_error and "just past the limit" in p.reason]
            limit = [p for p in moved if not p.expect_error and p.reason.startswith("the limit")]
            if past:
                assert limit and past[0].args[key] == limit[0].args[key] + 1, (task.id, key, moved)
                limits.add((task.id, key))
            beyond = [p for p in moved if p.expect_error and p.reason.startswith("past the data")]
            if beyond:
                sessions = min(len(snapshot.history(s)) for s in task.intent.args.values()
                               if isinstance(s, str) and s in snapshot.symbols())
                assert not past and beyond[0].args[key] == sessions + 1, (task.id, key, moved)
                # a world with more history puts that value back where readings disagree: an error is right too
                assert beyond[0].may_raise, (task.id, key)
                outgrown.add((task.id, key))
    assert plain >= 12 and seeded >= 6
    # drawn far: the counts named other than a lookback too (not a short window already the smallest,
    # whose far values would all leave its pair out of order)
    assert {("comp_001", "long_window"), ("calc_006", "n"), ("comp_004", "horizon"), ("calc_007", "days"),
            ("calc_005", "window")} <= far
    assert ("comp_001", "short_window") not in far
    # asked at the limit and past it where the count alone outgrows the data (a moving average's window);
    # not where the oracle's limit hangs on the other counts too (KDJ's range, a forward horizon): those
    # are asked one session more than all the data, which no reading answers
    assert ("comp_001", "long_window") in limits
    assert not {("calc_006", "n"), ("comp_004", "horizon")} & limits
    assert {("calc_006", "n"), ("comp_004", "horizon")} <= outgrown


@pytest.mark.slow
@pytest.mark.parametrize("edit, why", [
    (("    if len(closes) < max(long_window, 10 * rsi_window):", "    if len(closes) < 10 * rsi_window:"),
     "a long average of the closes there are when the window outgrows them"),
    (('history(period="max")', 'history(period="1y")'),
     "a year of closes, refused for a long window the data hold"),
])
def test_a_signal_whose_long_window_outgrows_its_data_must_raise_past_the_limit(tasks, snapshot, task_runner,
                                                                                edit, why) -> None:
    task = tasks["comp_001"]  # MA5 > MA20 and RSI-14 < 30: only a far long window shows either slip
    from runner.judging.probes import probes_for

    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=1)})
    wrong = _reference("comp_001").replace(*edit)
    assert wrong != _reference("comp_001"), why
    result = _judge_in_sandbox(judged, wrong, task_runner, snapshot)
    assert result.state == "fail", why
    failed = [p for p in result.probes if p.state == "fail"]
    assert failed and set(failed[0].args) == {"long_window"}, result.reason
    assert _judge_in_sandbox(judged, _reference("comp_001"), task_runner, snapshot).state == "pass"


@pytest.mark.slow
def test_a_lookback_one_below_the_floor_another_count_sets_must_be_refused(tasks, snapshot, task_runner) -> None:
    """RSI-14 from the last N closes needs N >= 15: the probe asks N = 14 (the window itself, a query a
    reuse brings), where the literal reading must raise. A data check that lets ``days == window``
    through answers from 13 changes, a value no reading gives, and fails; the reference tool raises
    and passes. No such probe where the floor is only the least data a statistic needs at all."""
    from runner.judging.probes import probes_for

    floors = {t.id: [p for p in probes_for(t, snapshot, seed=1) if p.reason.startswith("below the floor")]
              for t in tasks.values()}
    assert [(p.args, p.expect_error) for p in floors["calc_001"]] == [({"days": 14}, False)]
    assert not floors["calc_005"] and not floors["calc_008"] and not floors["comp_002"]
    task = tasks["calc_001"]
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=1)})
    lenient = _reference("calc_001").replace("days <= window", "days < window")
    assert lenient != _reference("calc_001")
    result = _judge_in_sandbox(judged, lenient, task_runner, snapshot)
    assert result.state == "fail"
    assert [p.args for p in result.probes if p.state == "fail"] == [{"days": 14}], result.reason
    assert _judge_in_sandbox(judged, _reference("calc_001"), task_runner, snapshot).state == "pass"


def test_a_real_parameter_given_as_a_whole_number_is_probed_with_a_fraction(tasks, snapshot, task_runner) -> None:
    from runner.judging.probes import probes_for

    task = tasks["calc_003"]  # Bollinger bands, num_std=2
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=1)})
    fractions = [p.args["num_std"] for p in judged.probes if "num_std" in p.args and p.args["num_std"] % 1]
    assert fractions
    truncating = _reference("calc_003").replace("num_std", "int(num_std)").replace(
        "int(num_std): float", "num_std: float")
    assert "int(num_std)" in truncating
    result = _judge_in_sandbox(judged, truncating, task_runner, snapshot)
    assert result.state == "fail" and "num_std=" in result.reason, result.reason
    assert _judge_in_sandbox(judged, _reference("calc_003"), task_runner, snapshot).state == "pass"


# --------------------------------------------------------------------------- optional parameters
@pytest.mark.slow
def test_an_optional_parameter_of_the_measure_is_probed_only_in_a_tool_that_declares_it(tasks, snapshot,
                                                                                       task_runner) -> None:
    from runner.judging.probes import probes_for

    task = tasks["calc_005"]  # volatility; the task binds symbol and window, periods_per_year is the measure's
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=1)})
    [optional] = [p for p in judged.probes if p.declared]
    assert optional.declared == ("periods_per_year",) and optional.args["periods_per_year"] != 252
    # a real parameter is asked at a fraction first: 365.25 days a year truncated to 365 moves the answer
    assert optional.args["periods_per_year"] % 1
    truncating = _reference("calc_005").replace("math.sqrt(periods_per_year)", "math.sqrt(int(periods_per_year))")
    assert truncating != _reference("calc_005")
    result = _judge_in_sandbox(judged, truncating, task_runner, snapshot)
    assert result.state == "fail" and "periods_per_year=" in result.reason, result.reason
    # annualised by a constant whatever periods_per_year says (read, so the source alone does not tell:
    # runner/judging/unread_params.py): right for the task, wrong for the probe
    ignoring = _reference("calc_005").replace("math.sqrt(periods_per_year)",
                                              "math.sqrt(252 if periods_per_year > 0 else periods_per_year)")
    assert ignoring != _reference("calc_005")
    result = _judge_in_sandbox(judged, ignoring, task_runner, snapshot)
    assert result.state == "fail" and "periods_per_year=" in result.reason, result.reason
    assert _judge_in_sandbox(judged, _reference("calc_005"), task_runner, snapshot).state == "pass"
    # a tool without the parameter cannot be asked it: the probe is not run, the others are
    without = _reference("calc_005").replace("math.sqrt(periods_per_year)", "math.sqrt(252)").replace(
        ", periods_per_year: int = 252", "")
    assert "periods_per_year:" not in without
    result = _judge_in_sandbox(judged, without, task_runner, snapshot)
    assert result.state == "pass", result.reason
    assert len(result.probes) == len(judged.probes) - 1
    assert all("periods_per_year" not in p.args for p in result.probes)


@pytest.mark.slow
def test_an_rsi_a_tenth_of_a_point_off_or_rounded_to_cents_fails_the_threshold_probes(
        tasks, snapshot, task_runner) -> None:
    """comp_001's threshold probes sit just either side of the level where the answer turns. Wilder's
    RSI from the last ``long_window + 5 * rsi_window`` closes ("enough warm-up") still carries its seed,
    a tenth of a point at RSI-14: it passed both probes when they sat 0.5 % (a quarter of a point) from
    the level. The same RSI rounded to two decimals before the comparison answers "not below 30" for an
    RSI of 29.996: it passed while they sat 0.05 % from the level. The RSI over all the history (every
    accepted seed of Wilder's averages forgotten to 1e-15) stays on the right side of both."""
    from runner.judging.probes import BOUNDARY_MARGIN, probes_for

    task = tasks["comp_001"]
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=1)})
    boundary = [p for p in judged.probes if "the answer turns at" in p.reason]
    assert len(boundary) == 2 and BOUNDARY_MARGIN <= 0.0001, boundary
    whole = _reference("comp_001")
    recent = whole.replace('change = closes.diff().dropna()',
                           'change = closes.tail(long_window + 5 * rsi_window).diff().dropna()')
    rounded = whole.replace("return bool(short_ma > long_ma and rsi_value < rsi_threshold)",
                            "return bool(short_ma > long_ma and round(rsi_value, 2) < rsi_threshold)")
    assert recent != whole and rounded != whole
    for wrong in (recent, rounded):
        failed = _judge_in_sandbox(judged, wrong, task_runner, snapshot)
        assert failed.state == "fail", failed.reason
        assert any(p.state == "fail" and p.args in [b.args for b in boundary] for p in failed.probes), failed.reason
    passed = _judge_in_sandbox(judged, whole, task_runner, snapshot)
    assert passed.state == "pass", passed.reason


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_a_tool_taking_the_quotes_52_week_figure_for_a_years_lookback_fails(tasks, snapshot, task_runner,
                                                                           seed) -> None:
    """Yahoo's quote answers "a year" itself (``yearHigh``: the highest intraday High of 52 weeks). A
    highest-close tool that takes it for exactly a year's lookback, and computes every other, was
    right on every probe: the drawn probes ask a count of days a year back too (252 or 365)."""
    from runner.judging.probes import YEAR_LOOKBACKS, probes_for

    task = tasks["fetch_008"]
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=seed)})
    assert [p for p in judged.probes if p.args.get("days") in YEAR_LOOKBACKS["days"]], judged.probes
    shortcut = _reference("fetch_008").replace(
        '    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()',
        '    if days in (252, 365):\n        return float(yf.Ticker(symbol).fast_info["yearHigh"])\n'
        '    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()')
    assert "yearHigh" in shortcut
    failed = _judge_in_sandbox(judged, shortcut, task_runner, snapshot)
    assert failed.state == "fail" and "days=" in failed.reason, failed.reason
    assert _judge_in_sandbox(judged, _reference("fetch_008"), task_runner, snapshot).state == "pass"


# --------------------------------------------------------------------------- a pair given the other way round
@pytest.mark.slow
def test_a_pair_of_windows_given_the_other_way_round_is_asked_as_given(tasks, snapshot, task_runner) -> None:
    from runner.judging.probes import probes_for

    task = tasks["calc_004"]  # MACD(12, 26, 9)
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, seed=1)})
    [turned] = [p for p in judged.probes if p.may_raise]
    assert turned.args == {"fast": 26, "slow": 12}
    # the reference refuses a fast span that is not the shorter one: a clear error passes
    assert _judge_in_sandbox(judged, _reference("calc_004"), task_runner, snapshot).state == "pass"
    literal = _reference("calc_004").replace("if not 0 < fast < slow or signal <= 0:",
                                             "if min(fast, slow, signal) <= 0:")
    assert literal != _reference("calc_004")
    result = _judge_in_sandbox(judged, literal, task_runner, snapshot)  # computed as asked passes too
    assert result.state == "pass", result.reason
    # a tool that sorts the spans back answers MACD(12, 26) where MACD(26, 12) is asked
    sorting = literal.replace("    closes = yf.Ticker", "    fast, slow = sorted((fast, slow))\n    closes = yf.Ticker")
    result = _judge_in_sandbox(judged, sorting, task_runner, snapshot)
    assert result.state == "fail" and "fast=26, slow=12" in result.reason, result.reason


def test_the_ma_cross_gets_its_windows_the_other_way_round_and_no_task_without_a_pair_does(tasks, snapshot) -> None:
    from runner.judging.probes import derive_probes

    [turned] = [p for p in derive_probes(tasks["comp_001"], snapshot) if p.may_raise and "long_window" in p.args]
    assert turned.args == {"short_window": 20, "long_window": 5} and turned.oracle_params == turned.args
    [expected] = probe_expected_values(tasks["comp_001"].model_copy(update={"probes": (turned,)}), snapshot)
    assert "a clear error is as right" in str(expected[OR_RAISES])
    assert not [p for p in derive_probes(tasks["calc_006"], snapshot) if p.may_raise]


# --------------------------------------------------------------------------- a level of 1 or less
@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["comp_001", "comp_004"])
def test_a_tool_that_reads_a_level_of_one_or_less_as_a_fraction_fails(tasks, snapshot, task_runner,
                                                                      task_id: str) -> None:
    """An RSI level of 1 or less is a level of its own (RSI below 1: almost never), not a percentage
    written as a fraction. A derived probe asks one where the answer differs from the answer at a
    hundred times it, so a tool that "accepts either scale" (0.7 read as 70) fails; the reference,
    which reads the level as given, passes."""
    from runner.judging.probes import derive_probes

    task = tasks[task_id]
    [level] = [p for p in derive_probes(task, snapshot) if "a level of its own" in p.reason]
    assert 0 < level.args["rsi_threshold"] <= 1 and level.oracle_params == level.args
    judged = task.model_copy(update={"probes": (level,)})
    assert _judge_in_sandbox(judged, _reference(task_id), task_runner, snapshot).state == "pass"
    scaling = _reference(task_id).replace(
        "    closes = yf.Ticker", "    if rsi_threshold <= 1:\n        rsi_threshold *= 100\n    closes = yf.Ticker", 1)
    assert scaling != _reference(task_id)
    result = _judge_in_sandbox(judged, scaling, task_runner, snapshot)
    assert result.state == "fail" and "rsi_threshold=" in result.reason, result.reason


_QUARTER_END_ROLLED = (  # Q1 and Q4 land right (Mar 30 -> Mar 31, Dec 30 -> Dec 31); Q2 and Q3 roll a month on
    "import pandas as pd\nimport yfinance as yf\n\n\ndef get_net_income(symbol, year, quarter):\n"
    "    qend = pd.Timestamp(year, 3 * quarter, 30) + pd.offsets.MonthEnd(1)\n"
    "    stmt = yf.Ticker(symbol).quarterly_income_stmt\n"
    "    cols = [c for c in stmt.columns if abs((c - qend).days) <= 15]\n"
    "    if not cols:\n        raise ValueError(f'no quarterly statement for {symbol} {year} Q{quarter}')\n"
    "    return float(stmt.loc['Net Income', cols[0]])\n")

_KDJ_SEEDED_AT_THE_FIRST_RSV = (  # K and D as ewm(adjust=False): seeded at the first RSV, not at 50
    "import numpy as np\nimport yfinance as yf\n\n\n"
    "def kdj(symbol: str, n: int = 9, k_period: int = 3, d_period: int = 3) -> dict:\n"
    "    df = yf.Ticker(symbol).history(period='max')\n"
    "    if len(df) < n + k_period + d_period:\n        raise ValueError('not enough data')\n"
    "    low, high = df['Low'].rolling(n).min(), df['High'].rolling(n).max()\n"
    "    rsv = ((df['Close'] - low) / (high - low).replace(0, np.nan) * 100).where(high != low, 50.0).dropna()\n"
    "    k = rsv.ewm(com=k_period - 1, adjust=False).mean()\n"
    "    d = k.ewm(com=d_period - 1, adjust=False).mean()\n"
    "    return {'k': float(k.iloc[-1]), 'd': float(d.iloc[-1]), 'j': float(3 * k.iloc[-1] - 2 * d.iloc[-1])}\n")


def _judged_in_process(task: Task, snapshot: Any, in_process: Any, code: str, entry: str) -> Any:
    """``code`` judged on the snapshot as the gate judges a final tool (its value, then its probes),
    run in this process."""
    from finevo.sandbox import Limits

    expected = expected_values(task, snapshot)
    run = lambda code, entry, args, snapshot_dir=None: in_process.run(code, entry, args, Limits())  # noqa: E731
    own = run(code, entry, dict(task.intent.args))
    outcome = Outcome(task_id=task.id, value=own.value if own.ok else None, tool_code=code, stage="done")
    return judge_task(task, outcome, expected, 0.0, Reruns(run, probe_expected=probe_expected_values(task, snapshot)))


def test_a_quarter_is_asked_at_each_of_its_values_so_date_arithmetic_right_for_two_of_them_fails(
        tasks, snapshot, in_process) -> None:
    from runner.judging.probes import SMALL_DOMAIN, probes_for

    task = tasks["fetch_001"]
    judged = task.model_copy(update={"probes": tuple(probes_for(task, snapshot, seed=1))})
    asked = {p.args["quarter"] for p in judged.probes if set(p.args) == {"quarter"} and not p.expect_error}
    assert asked == {2, 3, 4} and SMALL_DOMAIN >= 4  # every quarter but the task's own Q1
    failed = _judged_in_process(judged, snapshot, in_process, _QUARTER_END_ROLLED, "get_net_income")
    assert failed.state == "fail" and ("quarter=2" in failed.reason or "quarter=3" in failed.reason), failed.reason
    passed = _judged_in_process(judged, snapshot, in_process, _reference("fetch_001"), "net_income")
    assert passed.state == "pass", passed.reason


def test_a_kdj_seeded_otherwise_than_at_50_fails_a_short_run_and_a_tool_refusing_it_passes(
        tasks, snapshot, in_process) -> None:
    """KDJ's K and D start at 50: after hundreds of sessions no seed shows, so the task's own call cannot
    tell a tool seeding them at the first RSV. The range that leaves the data a dozen sessions can; there
    a clear error is as right (the reference tool asks a warm-up long enough for any seed to fade)."""
    from runner.judging.probes import SHORT_RUN, probes_for

    task = tasks["calc_006"]
    judged = task.model_copy(update={"probes": tuple(probes_for(task, snapshot, seed=1))})
    short = [p for p in judged.probes if p.reason.startswith("a short run")]
    assert len(short) == 1 and short[0].may_raise and not short[0].expect_error
    assert short[0].args == {"n": len(snapshot.history("AAPL")) - SHORT_RUN}
    failed = _judged_in_process(judged, snapshot, in_process, _KDJ_SEEDED_AT_THE_FIRST_RSV, "kdj")
    assert failed.state == "fail" and f"n={short[0].args['n']}" in failed.reason, failed.reason
    passed = _judged_in_process(judged, snapshot, in_process, _reference("calc_006"), "kdj")
    assert passed.state == "pass", passed.reason
