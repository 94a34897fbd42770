"""The gate run end to end, in process, with a scripted agent."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from finevo.errors import InputError
from runner.exitcodes import Exit
from runner.gate import Gate, run_gate
from runner.inputs.prepare import prepare
from runner.records import SelfCheck
from runner.reports import document, github, markdown
from runner.reports.console import Console
from tests.runner.conftest import config_maker, write_baseline_file, write_security_file
from tests.runner.fakes import make_factory


def _run(config, behaviours=None, default="pass", log=None):
    out = io.StringIO()
    result = run_gate(config, factory=make_factory(behaviours or {}, default, log), console=Console(out, colour=False))
    return result, out.getvalue()


#: The tests that only read a passing run's records (or a copy of its directory) share one run on one worker.
_PASSING_RUN = pytest.mark.xdist_group("gate-passing-run")


@pytest.fixture(scope="module")
def passing_run(tmp_path_factory: pytest.TempPathFactory):
    """One whole fake run, every task passing, no self-check: the tests below read it (its records, its
    events, a copy of its run directory) and leave it as it was; each used to make its own."""
    root = tmp_path_factory.mktemp("passing-run")
    result, _ = _run(config_maker(root, write_security_file(root), write_baseline_file(root))(self_check=False))
    assert result.exit_code == Exit.PASSED
    return result


def _junit_counts(path: Path) -> dict[str, int]:
    xml = JUnitXml.fromfile(str(path))
    counts = {"tests": 0, "failure": 0, "error": 0, "skipped": 0}
    for suite in xml:
        for case in suite:
            counts["tests"] += 1
            for res in case.result:
                if isinstance(res, Failure):
                    counts["failure"] += 1
                    assert res.message, f"{case.name}: failure without message"
                elif isinstance(res, Error):
                    counts["error"] += 1
                    assert res.message, f"{case.name}: error without message"
                elif isinstance(res, Skipped):
                    counts["skipped"] += 1
    return counts


# The inner loop reads a run without hidden worlds (a right tool passing in every world and the reports
# naming a world are test_worlds.py's, in the whole suite); the whole suite also reads one with a world.
@pytest.mark.parametrize("worlds", [0, pytest.param(1, marks=pytest.mark.slow)], ids=["no-world", "one-world"])
def test_all_passing_run_passes_and_writes_valid_reports(make_config, worlds: int) -> None:
    result, console = _run(make_config(worlds=worlds))  # one whole fake run, reported
    assert result.doc["config"]["worlds"]["count"] == worlds
    assert result.exit_code == Exit.PASSED
    run_dir = result.run_dir
    doc = document.load(run_dir / "results.json").to_json_dict()  # validates against the schema
    assert doc["summary"]["passed"] == 5 and doc["summary"]["total"] == 5
    assert doc["verdict"]["status"] == "passed"
    assert doc["selfcheck"]["ok"] is True and doc["selfcheck"]["null"]["passed"] == 0
    assert doc["security"]["blocked"] == 2 and doc["security"]["tasks"][0]["blocked_by"] == "policy:import-os"
    assert set(doc["improvements"]) == {"calc_004", "comp_001"}
    assert doc["config"]["snapshot_hash"] and doc["config"]["judge_version"]
    counts = _junit_counts(run_dir / "junit.xml")
    assert counts == {"tests": 7, "failure": 0, "error": 0, "skipped": 0}
    assert (run_dir / "tools" / "calc_004.py").read_text().startswith("def tool")
    events = [json.loads(line) for line in (run_dir / "events.jsonl").read_text().splitlines()]
    assert next(e["event"] for e in events) == "start" and events[-1]["event"] == "end"
    assert sum(e["event"] == "task" for e in events) == 5
    assert "[1/7] fetch_001 Get AAPL 2023 Q1 net income ... PASS" in console
    assert "\033[" not in console
    assert (run_dir / "summary.md").read_text().index("PASSED") < (run_dir / "summary.md").read_text().index("## Tasks")


@pytest.mark.slow
def test_regression_fails_the_gate_and_is_named_in_every_report(make_config, tmp_path, monkeypatch) -> None:
    result, console = _run(make_config(), {"fetch_002": "wrong", "calc_002": "external"})
    assert result.exit_code == Exit.FAILED
    doc = document.load(result.run_dir / "results.json").to_json_dict()
    regressions = {r["task_id"]: r for r in doc["regressions"]}
    assert set(regressions) == {"fetch_002", "calc_002"}
    assert regressions["fetch_002"]["state"] == "fail" and regressions["calc_002"]["state"] == "error"
    assert "llm_rate_limited" in regressions["calc_002"]["reason"]
    counts = _junit_counts(result.run_dir / "junit.xml")
    assert counts["failure"] == 1 and counts["error"] == 1
    md = (result.run_dir / "summary.md").read_text()
    assert "FAILED" in md.splitlines()[0]
    assert "| fetch_002 | ❌ fail |" in md and "<details><summary>calc_002: error" in md
    assert "fetch_002" in console and "regressions (2)" in console
    summary_file, output_file = tmp_path / "step_summary.md", tmp_path / "gh_output"
    stream = io.StringIO()
    typed = document.validate(doc)
    github.publish(typed, markdown.render(typed), stream,
                   env={"GITHUB_STEP_SUMMARY": str(summary_file), "GITHUB_OUTPUT": str(output_file)})
    errors = [line for line in stream.getvalue().splitlines() if line.startswith("::error")]
    assert len(errors) == 2 and any("fetch_002" in e for e in errors)
    assert "regressions=2" in output_file.read_text().splitlines()
    assert "verdict=failed" in output_file.read_text().splitlines()
    assert "fetch_002" in summary_file.read_text()


@pytest.mark.slow
def test_pass_rate_under_threshold_fails_without_regression(make_config) -> None:
    result, _ = _run(make_config(min_pass_rate=0.9), {"calc_004": "wrong"})
    assert result.exit_code == Exit.FAILED
    assert result.doc["regressions"] == []
    assert any("below the threshold" in r for r in result.doc["verdict"]["reasons"])


@pytest.mark.slow
def test_unblocked_security_task_fails_the_gate(make_config) -> None:
    result, _ = _run(make_config(), {"sec_002": "unblocked"})
    assert result.exit_code == Exit.FAILED
    assert result.doc["security"]["unblocked_ids"] == ["sec_002"]
    assert _junit_counts(result.run_dir / "junit.xml")["failure"] == 1


@pytest.mark.slow
def test_deadline_stops_a_hanging_task_and_records_the_stage(make_config) -> None:
    # Seconds, not tenths: the passing task's own run and probes must fit in the same budget on a loaded machine.
    config = make_config(task_timeout_s=3.0, only=["calc_004", "comp_001"], baseline_path=None, self_check=False,
                         worlds=0)
    result, _ = _run(config, {"calc_004": "hang"})
    task = {t["task_id"]: t for t in result.doc["tasks"]}
    assert task["calc_004"]["state"] == "error" and task["calc_004"]["stage"] == "synthesis"
    assert task["calc_004"]["error"]["code"] == "deadline_exceeded"
    assert task["comp_001"]["state"] == "pass"  # the run went on


@pytest.mark.slow
def test_agent_ignoring_its_deadline_is_abandoned(make_config, monkeypatch) -> None:
    # The stuck agent waits for its sandbox to be closed, however long that takes: only the gate abandoning
    # it ends the task, so the budget can be generous (the passing task's probes and hidden worlds must fit
    # in it on a loaded machine) and the grace short without either being a bet on the machine's speed.
    monkeypatch.setattr("runner.execution.deadline.DEADLINE_GRACE_S", 0.5)
    log: list = []
    result, _ = _run(make_config(task_timeout_s=5.0, only=["calc_004", "comp_001"], baseline_path=None,
                                 self_check=False), {"calc_004": "ignore_deadline"}, log=log)
    task = {t["task_id"]: t for t in result.doc["tasks"]}
    assert task["calc_004"]["state"] == "error" and "ignored its deadline" in task["calc_004"]["reason"]
    assert task["comp_001"]["state"] == "pass"
    assert len(log) == 2  # a fresh session after abandoning the stuck one


@pytest.mark.slow
def test_failed_selfcheck_means_no_verdict_and_no_regressions(make_config) -> None:
    def broken_reference(gate, main_results, interrupts):
        return SelfCheck(enabled=True, ok=False, reason="reference model did not pass calc_002")

    out = io.StringIO()
    result = Gate(prepare(make_config()), factory=make_factory({"fetch_002": "wrong"}),
                  console=Console(out, colour=False), selfcheck=broken_reference).run()
    assert result.exit_code == Exit.NO_VERDICT
    assert result.doc["regressions"] == [] and result.doc["verdict"]["status"] == "no_verdict"


@pytest.mark.slow
def test_selfcheck_runs_reference_and_null_in_their_own_registries(make_config) -> None:
    log: list = []
    result, _ = _run(make_config(), {}, log=log)
    labels = [s.label for s in log]
    assert labels == ["main", "reference", "null"]
    assert all("selfcheck" in str(s.registry_dir) for s in log[1:])
    assert log[2].provider is not None and log[2].max_refinements == 0
    assert result.doc["selfcheck"]["reference"]["reused_main_run"] is False


def test_reference_run_reuses_its_own_results_for_the_selfcheck(make_config) -> None:
    log: list = []
    result, _ = _run(make_config(llm="reference"), {}, log=log)
    assert [s.label for s in log] == ["main", "null"]
    assert result.doc["selfcheck"]["reference"]["reused_main_run"] is True


# Two whole runs compared, without hidden worlds (~1 s) and with one (~9 s): the worlds are reproducible
# too. Both outside the inner loop; the worlds' own reproducibility is test_worlds.py's.
@pytest.mark.slow
@pytest.mark.parametrize("worlds", [0, 1], ids=["no-world", "one-world"])
def test_two_runs_give_identical_results_apart_from_times(make_config, worlds: int) -> None:
    a, _ = _run(make_config(run_id="a", worlds=worlds), {"fetch_002": "wrong"})
    b, _ = _run(make_config(run_id="b", worlds=worlds), {"fetch_002": "wrong"})
    assert a.doc["config"]["worlds"]["count"] == b.doc["config"]["worlds"]["count"] == worlds
    va, vb = document.stable_view(a.doc), document.stable_view(b.doc)
    va.pop("run_id"), vb.pop("run_id")
    assert va == vb


@_PASSING_RUN
def test_non_empty_registry_is_refused_unless_reused(make_config, passing_run) -> None:
    shutil.copytree(passing_run.run_dir, Path(make_config().out_dir) / "r1")  # a finished run's directory
    registry = Path(make_config().out_dir) / "r1" / "registry"
    registry.mkdir(parents=True, exist_ok=True)
    (registry / "registry.db").write_text("x")
    with pytest.raises(InputError, match="registry is not empty"):
        prepare(make_config())
    assert prepare(make_config(reuse_registry=True)).run_id == "r1"


def test_unwritable_out_is_an_input_error(make_config, tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(InputError, match="not writable"):
        prepare(make_config(out_dir=blocker / "out"))
    assert not (blocker.parent / "out").exists()


def test_unreadable_snapshot_is_an_input_error(make_config, tmp_path) -> None:
    with pytest.raises(InputError, match="manifest"):
        prepare(make_config(data_dir=tmp_path / "nowhere"))


@pytest.mark.parametrize("value", [float("inf"), float("-inf"), float("nan"), {"k": float("inf")}])
def test_a_non_finite_tool_value_still_gives_strict_json(value, tmp_path) -> None:
    from finevo.market.snapshot import load_snapshot
    from finevo.outcome import Outcome
    from runner.inputs.tasks import load_tasks
    from runner.judging.grade import judge_task
    from runner.judging.oracle import expected_values
    from tests.runner.fakes import DATA, TASKS

    task = next(t for t in load_tasks(TASKS) if t.id == "fetch_001")
    expected = expected_values(task, load_snapshot(DATA))
    result = judge_task(task, Outcome(task_id=task.id, value=value, tool_code="def tool(): ..."), expected, 0.1)
    assert result.state == "fail"
    text = json.dumps(result.to_dict(), allow_nan=False)  # raises on NaN / Infinity
    assert "Infinity" not in text and "NaN" not in text


@_PASSING_RUN
def test_rebuild_from_events_of_a_reused_run_dir_takes_only_the_last_run(passing_run, tmp_path) -> None:
    from runner.reports.events import read_events
    from runner.reports.rebuild import rebuild_from_events

    log = tmp_path / "events.jsonl"
    shutil.copyfile(passing_run.run_dir / "events.jsonl", log)  # a finished run's events
    start = json.loads(log.read_text().splitlines()[0])
    # A second run in the same directory (--reuse-registry) planning one task, killed before finishing it.
    start["planned"] = {"tasks": [["calc_004", "calculation", "q"]], "security": [], "payloads": []}
    with log.open("a") as fh:
        fh.write(json.dumps(start) + "\n")
    doc = rebuild_from_events(read_events(log)).to_json_dict()
    assert [(t["task_id"], t["state"]) for t in doc["tasks"]] == [("calc_004", "skipped")]
    assert doc["partial"] is True and doc["verdict"]["exit_code"] == Exit.NO_VERDICT


def test_quiet_console_prints_only_the_final_summary(make_config) -> None:
    out = io.StringIO()
    result = run_gate(make_config(self_check=False), factory=make_factory({"fetch_002": "wrong"}),
                      console=Console(out, colour=False, quiet=True))
    text = out.getvalue()
    assert "[1/7]" not in text and "sandbox layers" not in text
    assert "verdict: FAILED (exit 1)" in text and "regressions (1):" in text
    assert result.exit_code == Exit.FAILED


@pytest.mark.slow
def test_security_task_in_error_fails_the_gate(make_config) -> None:
    # A predictions file without sec_001: the task never reached a blocking layer, so it is unproven.
    result, console = _run(make_config(), {"sec_001": "external"})
    assert result.exit_code == Exit.FAILED
    doc = document.load(result.run_dir / "results.json").to_json_dict()
    sec = {s["task_id"]: s for s in doc["security"]["tasks"]}
    assert sec["sec_001"]["state"] == "error" and sec["sec_002"]["state"] == "blocked"
    assert doc["security"]["error_ids"] == ["sec_001"] and doc["security"]["unblocked"] == 0
    assert doc["verdict"]["status"] == "failed" and doc["regressions"] == []
    (reason,) = doc["verdict"]["reasons"]
    assert reason.startswith("security task sec_001 could not be judged (error: prediction_missing:")
    criteria = {c["criterion"]: c for c in doc["verdict"]["criteria"]}
    assert criteria["security"]["ok"] is False and criteria["pass rate"]["ok"] is True
    assert _junit_counts(result.run_dir / "junit.xml")["error"] == 1
    assert "not judged (error)**: sec_001" in (result.run_dir / "summary.md").read_text()
    assert "security task sec_001 could not be judged" in console


@_PASSING_RUN
def test_security_records_carry_their_llm_usage(passing_run) -> None:
    result = passing_run
    doc = document.load(result.run_dir / "results.json").to_json_dict()  # the schema admits the field
    for s in doc["security"]["tasks"]:
        assert s["llm"] == {"calls": 1, "prompt_tokens": 10, "completion_tokens": 20, "latency_s": 0.001}
    events = [json.loads(line) for line in (result.run_dir / "events.jsonl").read_text().splitlines()]
    assert all(e["result"]["llm"]["calls"] == 1 for e in events if e["event"] == "security")


@_PASSING_RUN
def test_judging_time_is_recorded_per_task(passing_run) -> None:
    result = passing_run
    for t in result.doc["tasks"]:
        assert t["timings"]["synthesis"] == 0.001  # the agent's own stages are kept
        assert 0 <= t["timings"]["judge"] < 5
    with_probes = [t for t in result.doc["tasks"] if t["probes"]]
    assert with_probes and all("probes" in t["timings"] for t in with_probes)


def test_selfcheck_not_run_without_benchmark_tasks_is_recorded_with_its_reason(make_config) -> None:
    log: list = []
    result, _ = _run(make_config(only=None, category="security"), log=log)
    assert [s.label for s in log] == ["main"]  # no reference or null run
    sc = result.doc["selfcheck"]
    assert sc["enabled"] is False and sc["ok"] is None and "no benchmark task is selected" in sc["reason"]
    assert result.doc["config"]["self_check"] is True and result.exit_code == Exit.PASSED
    md = (result.run_dir / "summary.md").read_text()
    assert "Harness self-check: not run -- no benchmark task is selected" in md
    from runner.reports.events import read_events
    from runner.reports.rebuild import rebuild_from_events

    assert rebuild_from_events(read_events(result.run_dir / "events.jsonl")).to_json_dict()["selfcheck"] == sc


def test_unknown_baseline_ids_are_warned_once(make_config, tmp_path) -> None:
    baseline = tmp_path / "baseline_unknown.json"
    baseline.write_text(json.dumps({"target_pass_rate": 0.5, "passing_tasks": ["fetch_001", "zz_999"]}))
    result, console = _run(make_config(baseline_path=baseline, self_check=False))
    warnings = result.doc["verdict"]["warnings"]
    assert len(warnings) == 1 and "zz_999" in warnings[0]
    assert console.count("zz_999") == 1
    assert (result.run_dir / "summary.md").read_text().count("zz_999") == 1
    assert "zz_999" in result.doc["unknown_baseline_ids"]


def test_a_crash_mid_run_writes_partial_reports_and_means_no_verdict(make_config, monkeypatch) -> None:
    from runner.reports.events import read_events
    from runner.reports.rebuild import rebuild_from_events

    def broken(*args, **kwargs):
        raise RuntimeError("boom in the gate")

    monkeypatch.setattr("runner.gate.security_result", broken)
    result, console = _run(make_config(self_check=False), {"fetch_002": "wrong"})
    assert result.exit_code == Exit.NO_VERDICT
    assert result.crash == "RuntimeError: boom in the gate" and "Traceback" in result.crash_traceback
    assert not (result.run_dir / "results.json").exists()
    doc = document.load(result.run_dir / "partial_r1.json").to_json_dict()
    assert doc["partial"] is True and doc["verdict"]["status"] == "partial" and doc["regressions"] == []
    assert doc["verdict"]["reasons"] == ["the gate crashed: RuntimeError: boom in the gate: reports are partial, "
                                         "no verdict"]
    assert [t["state"] for t in doc["tasks"]] == ["pass", "fail", "pass", "pass", "pass"]  # kept, as computed
    assert [s["state"] for s in doc["security"]["tasks"]] == ["skipped", "skipped"]
    assert doc["security"]["tasks"][0]["reason"] == "not run: the gate crashed before this task"
    assert _junit_counts(result.run_dir / "partial_r1.xml")["skipped"] == 2
    assert "CRASHED: RuntimeError: boom in the gate" in console
    end = json.loads((result.run_dir / "events.jsonl").read_text().splitlines()[-1])
    assert end["event"] == "end" and end["crash"] == "RuntimeError: boom in the gate"
    rebuilt = rebuild_from_events(read_events(result.run_dir / "events.jsonl")).to_json_dict()
    assert rebuilt["verdict"]["exit_code"] == Exit.NO_VERDICT
    assert rebuilt["verdict"]["reasons"] == doc["verdict"]["reasons"]


@pytest.mark.parametrize("finevo_sha, github_sha, expected", [
    ("abc123", "def456", "abc123"),
    ("unknown", "def456", "def456"),   # the image built without REVISION
    ("", "def456", "def456"),
])
def test_git_sha_comes_from_the_environment_first(monkeypatch, finevo_sha, github_sha, expected) -> None:
    from runner.inputs.prepare import git_sha

    monkeypatch.setenv("FINEVO_GIT_SHA", finevo_sha)
    monkeypatch.setenv("GITHUB_SHA", github_sha)
    assert git_sha() == expected


def test_git_sha_without_environment_or_git_is_none(monkeypatch) -> None:
    import subprocess

    from runner.inputs.prepare import git_sha

    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    monkeypatch.setenv("FINEVO_GIT_SHA", "unknown")
    monkeypatch.delenv("GITHUB_SHA", raising=False)
    monkeypatch.setattr(subprocess, "run", no_git)
    assert git_sha() is None
