"""Baseline version 2: per-task passes and trials, quarantine, usage; version 1 still read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finevo.errors import InputError
from runner.inputs.suite import load_baseline
from runner.verdict.trials import StatPolicy

ROOT = Path(__file__).resolve().parents[2]


def _write(tmp_path: Path, data: object) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(json.dumps(data))
    return path


def test_the_bundled_baseline_is_version_2_and_keeps_the_version_1_tasks() -> None:
    baseline, _ = load_baseline(ROOT / "benchmarks" / "baseline.json")
    assert baseline.version == "2" and baseline.tasks is not None
    assert all(c == {"passes": 1, "trials": 1} for c in baseline.tasks.values())
    assert len(baseline.passing_tasks) == 13 and baseline.target_pass_rate == 0.8


def test_version_2_is_read_with_quarantine_and_usage(tmp_path: Path) -> None:
    path = _write(tmp_path, {"version": 2, "target_pass_rate": 0.7, "tasks": {
        "calc_001": {"passes": 7, "trials": 10}, "calc_002": {"passes": 0, "trials": 5}},
        "quarantine": [{"task": "calc_001", "reason": "outage", "expiry": "2030-01-31"}],
        "usage": {"trials": 15, "tokens_in": 100, "tokens_out": 50, "llm_calls": 15}})
    baseline, warnings = load_baseline(path, ["calc_001", "calc_002"])
    assert warnings == [] and baseline.passing_tasks == ("calc_001",)
    assert baseline.quarantine == ({"task": "calc_001", "reason": "outage", "expires": "2030-01-31"},)
    policy = StatPolicy.from_config({"baseline": baseline.to_dict(), "repeats": 3})
    assert policy.baseline == {"calc_001": (7, 10), "calc_002": (0, 5)} and policy.quarantine[0].task == "calc_001"
    assert policy.baseline_usage is not None and policy.baseline_usage.tokens == 150
    listed = _write(tmp_path, {"version": 2, "target_pass_rate": 0.7,
                               "tasks": [{"task": "calc_001", "passes": 2, "trials": 3}]})
    assert load_baseline(listed)[0].tasks == {"calc_001": {"passes": 2, "trials": 3}}


def test_version_1_reads_as_one_pass_in_one_trial(tmp_path: Path) -> None:
    path = _write(tmp_path, {"passing_tasks": ["calc_001"], "target_pass_rate": 0.5})
    baseline, _ = load_baseline(path)
    assert baseline.tasks is None
    assert StatPolicy.from_config({"baseline": baseline.to_dict()}).baseline == {"calc_001": (1, 1)}


@pytest.mark.parametrize(("data", "message"), [
    ({"version": 2, "target_pass_rate": 0.5, "tasks": {"a": {"passes": 3, "trials": 2}}}, "passes 3 > trials 2"),
    ({"version": 2, "target_pass_rate": 0.5, "tasks": {"a": {"passes": 1, "trials": 0}}}, "baseline task 'a'"),
    ({"version": 2, "target_pass_rate": 0.5, "tasks": {}}, "non-empty object"),
    ({"version": 2, "tasks": {"a": {"passes": 1, "trials": 1}}}, "missing key(s): target_pass_rate"),
    ({"version": 2, "target_pass_rate": 0.5, "tasks": {"a": {"passes": 1, "trials": 1}},
      "quarantine": [{"task": "a", "reason": "r", "expires": "someday"}]}, "quarantine entry 1: expires"),
    ({"version": 2, "target_pass_rate": 0.5, "tasks": {"a": {"passes": 1, "trials": 1}},
      "quarantine": [{"task": "a", "reason": "r", "expires": "2030-01-01"}] * 2}, "quarantines task id(s) twice"),
    ({"version": 2, "target_pass_rate": 0.5, "tasks": {"a": {"passes": 1, "trials": 1}}, "extra": 1},
     "unknown key(s): extra"),
    ({"version": 3, "target_pass_rate": 0.5, "passing_tasks": ["a"]}, "version 3 is not one"),
])
def test_bad_version_2_files_are_one_line_errors(tmp_path: Path, data: dict[str, object], message: str) -> None:
    path = _write(tmp_path, data)
    with pytest.raises(InputError) as err:
        load_baseline(path)
    assert str(path) in err.value.message and message in err.value.message
    assert "\n" not in err.value.message


def test_unknown_ids_are_a_warning(tmp_path: Path) -> None:
    path = _write(tmp_path, {"version": 2, "target_pass_rate": 0.5, "tasks": {"zz_9": {"passes": 1, "trials": 1}},
                             "quarantine": [{"task": "zz_8", "reason": "r", "expires": "2030-01-01"}]})
    _, warnings = load_baseline(path, ["calc_001"])
    assert warnings == [f"{path}: baseline names unknown task id(s): zz_9, zz_8"]
