"""The gate with the real agent, sandbox and reference model on the bundled snapshot."""

from __future__ import annotations

import io

import pytest

from finevo.paths import benchmarks_dir
from runner.gate import run_gate
from runner.inputs.prepare import GateConfig
from runner.reports import document
from runner.reports.console import Console
from tests.runner.fakes import DATA, TASKS

ONLY = ["fetch_002", "calc_002", "calc_007", "comp_001"]
#: Security tasks whose hostile code names the canaries (the listener's port, the secret's name):
#: filled afresh in every run, recorded the same.
SECURITY = ["sec_008", "sec_014"]


def _reference_run(tmp_path, run_id: str):
    config = GateConfig(llm="reference", tasks_path=TASKS, security_path=benchmarks_dir() / "security_tasks.jsonl",
                        payloads_path=None, baseline_path=None, data_dir=DATA, out_dir=tmp_path / "out",
                        run_id=run_id, only=ONLY + SECURITY,
                        task_timeout_s=60.0, run_payloads=False,
                        # the same hidden world in both runs: one, not the default three -- the runs are
                        # compared through a world all the same, and each world judges every task and its
                        # probes again (the worlds' own reproducibility is test_worlds.py's)
                        worlds=1, worlds_seed=17)
    return run_gate(config, console=Console(io.StringIO(), colour=False))


@pytest.mark.slow
def test_two_reference_runs_are_identical_apart_from_times(tmp_path) -> None:
    a = _reference_run(tmp_path, "a")
    b = _reference_run(tmp_path, "b")
    assert a.exit_code == 0, a.doc["verdict"]["reasons"]
    assert a.doc["config"]["worlds"]["count"] == b.doc["config"]["worlds"]["count"] == 1
    assert a.doc["selfcheck"]["ok"] is True and a.doc["selfcheck"]["null"]["total"] == len(ONLY)
    doc_a = document.load(a.run_dir / "results.json").to_json_dict()
    doc_b = document.load(b.run_dir / "results.json").to_json_dict()
    va, vb = document.stable_view(doc_a), document.stable_view(doc_b)
    va.pop("run_id"), vb.pop("run_id")
    assert va == vb
    assert all(t["tool"]["source"] in ("created", "reused") and t["code"] for t in doc_a["tasks"])
    assert [s["state"] for s in doc_a["security"]["tasks"]] == ["blocked", "blocked"]
    assert "@@CANARY_PORT@@" in doc_a["security"]["tasks"][0]["code"]
