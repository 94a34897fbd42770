"""SIGINT / SIGTERM / SIGKILL sent to a real gate process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from junitparser import JUnitXml, Skipped

from runner.cli import main as cli_main
from runner.reports import document
from tests.runner.fakes import TASKS

ROOT = Path(__file__).resolve().parents[2]
ONLY = "fetch_001,fetch_002,calc_004,comp_001"


def _start(tmp_path: Path, security_file: Path, baseline_file: Path) -> subprocess.Popen:
    behaviours = {"calc_004": "hang"}
    cmd = [sys.executable, "-m", "tests.runner.fakes", json.dumps(behaviours), "run", "--llm", "replay:x.jsonl",
           "--tasks", str(TASKS), "--security-tasks", str(security_file), "--baseline", str(baseline_file),
           "--no-payloads", "--out", str(tmp_path / "out"), "--run-id", "sig", "--only", ONLY,
           "--task-timeout", "60"]
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_tasks(events: Path, count: int, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"gate exited early ({proc.returncode}): {proc.stderr.read()}")
        if events.exists():
            done = sum('"event": "task"' in line for line in events.read_text().splitlines())
            if done >= count:
                return
        time.sleep(0.05)
    pytest.fail("the gate never reached the hanging task")


@pytest.mark.slow
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_signal_aborts_task_in_flight_and_writes_partial_reports(tmp_path, security_file, baseline_file,
                                                                  sig, code) -> None:
    proc = _start(tmp_path, security_file, baseline_file)
    run_dir = tmp_path / "out" / "sig"
    _wait_for_tasks(run_dir / "events.jsonl", 2, proc)  # fetch_001, fetch_002 done; calc_004 hangs
    proc.send_signal(sig)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the gate did not stop after the signal")
    assert proc.returncode == code, err
    doc = document.load(run_dir / "partial_sig.json").to_json_dict()
    assert doc["partial"] is True and doc["interrupted_by"] == sig.value
    states = {t["task_id"]: t["state"] for t in doc["tasks"]}
    assert states == {"fetch_001": "pass", "fetch_002": "pass", "calc_004": "skipped", "comp_001": "skipped"}
    assert doc["regressions"] == [] and doc["verdict"]["status"] == "partial"
    xml = JUnitXml.fromfile(str(run_dir / "partial_sig.xml"))
    skipped = sum(1 for suite in xml for case in suite if any(isinstance(r, Skipped) for r in case.result))
    assert skipped == 2  # the aborted task and the one never started
    assert "PARTIAL" in (run_dir / "partial_sig.md").read_text()
    assert not (run_dir / "results.json").exists()


@pytest.mark.slow
def test_sigkill_then_report_rebuilds_from_events(tmp_path, security_file, baseline_file, capsys) -> None:
    proc = _start(tmp_path, security_file, baseline_file)
    run_dir = tmp_path / "out" / "sig"
    _wait_for_tasks(run_dir / "events.jsonl", 2, proc)
    proc.kill()
    proc.communicate(timeout=30)
    assert not list(run_dir.glob("*.json"))
    assert cli_main(["report", str(run_dir / "events.jsonl")]) == 3  # a killed run: no verdict
    doc = document.load(run_dir / "partial_sig.json").to_json_dict()
    states = {t["task_id"]: t["state"] for t in doc["tasks"]}
    assert states["fetch_001"] == "pass" and states["fetch_002"] == "pass"
    assert states["calc_004"] == "skipped" and states["comp_001"] == "skipped"
    assert doc["partial"] is True and doc["verdict"]["exit_code"] == 3
    assert (run_dir / "partial_sig.xml").exists() and (run_dir / "partial_sig.md").exists()
