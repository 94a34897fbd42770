"""``finevo-verify baseline update`` takes only runs that evaluated the agent and reached a verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.records import SelfCheck, TaskResult
from runner.reports import document
from tests.runner.reports_support import config, make_doc

TASKS = [TaskResult("fetch_001", "fetch", "q", "pass", "ok"), TaskResult("calc_004", "calculation", "q", "pass", "ok")]


def _results(tmp_path: Path, **kwargs: Any) -> Path:
    doc = make_doc(list(kwargs.pop("tasks", TASKS)), **kwargs)
    path = tmp_path / ("partial.json" if doc.partial else "results.json")
    path.write_text(document.dumps(doc))
    return path


def _baseline(tmp_path: Path) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps({"version": 1, "description": "test", "total_tasks": 20, "target_pass_rate": 0.5,
                                "passing_tasks": ["fetch_001"]}))
    return path


@pytest.mark.parametrize("kwargs, why", [
    ({"config": config(provider="reference", llm="reference")}, "reference run"),
    ({"partial_signal": 15, "tasks": [TASKS[0], TaskResult("calc_004", "calculation", "q", "skipped", "not run")]},
     "partial run"),
    ({"selfcheck": SelfCheck(enabled=True, ok=False, reason="null model passed fetch_001")}, "no verdict"),
])
def test_a_run_that_did_not_evaluate_the_agent_is_refused_unless_forced(tmp_path: Path, capsys, kwargs, why) -> None:
    results, baseline = _results(tmp_path, **kwargs), _baseline(tmp_path)
    before = baseline.read_text()
    assert main(["baseline", "update", str(results), "--baseline", str(baseline)]) == 2
    err = capsys.readouterr().err
    assert why in err and "--force" in err and err.count("\n") == 1
    assert baseline.read_text() == before
    assert main(["baseline", "update", str(results), "--baseline", str(baseline), "--force"]) == 0
    assert why in capsys.readouterr().err
    ran_and_passed = [t.task_id for t in document.load(results).tasks if t.state == "pass"]
    written = json.loads(baseline.read_text())["tasks"]
    assert [t for t, c in written.items() if c["passes"]] == ran_and_passed


def test_an_agent_run_with_a_verdict_updates_the_baseline(tmp_path: Path, capsys) -> None:
    results, baseline = _results(tmp_path), _baseline(tmp_path)
    assert main(["baseline", "update", str(results), "--baseline", str(baseline)]) == 0
    assert "added: calc_004; removed: none" in capsys.readouterr().out
    assert json.loads(baseline.read_text())["updated_from"]["run_id"] == "t"


def test_a_forged_results_file_is_refused_before_the_baseline_is_touched(tmp_path: Path, capsys) -> None:
    results, baseline = _results(tmp_path), _baseline(tmp_path)
    data = json.loads(results.read_text())
    data["summary"]["passed"] = 0
    results.write_text(json.dumps(data))
    before = baseline.read_text()
    assert main(["baseline", "update", str(results), "--baseline", str(baseline), "--force"]) == 2
    assert "summary.passed" in capsys.readouterr().err
    assert baseline.read_text() == before
