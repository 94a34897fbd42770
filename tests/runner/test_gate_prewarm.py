"""The gate's sandbox workers start while the inputs are prepared (once the suite, the flags and the
snapshot are known good), and a bad input found after that leaves no worker behind."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

import runner.judging.oracle as oracle
from finevo.errors import InputError
from runner.execution.session import SandboxPool
from runner.gate import run_gate
from runner.inputs.prepare import prepare
from tests.runner.fakes import TASKS


def test_the_inputs_are_checked_before_the_oracles_values_are_computed(make_config, monkeypatch) -> None:
    order: list[str] = []
    real = oracle.caching

    def caching(provider):  # the oracle's values start here
        order.append("oracle")
        return real(provider)

    monkeypatch.setattr(oracle, "caching", caching)
    prepared = prepare(make_config(), inputs_checked=lambda suite: order.append(f"checked {len(suite.tasks)}"))
    assert order[0] == f"checked {len(prepared.suite.tasks)}" and "oracle" in order
    assert prepared.judged  # the probes' derivation, beside the run's start, is over
    # a bad input is found before anything starts
    order.clear()
    with pytest.raises(InputError, match="--run-id"):
        prepare(make_config(run_id="../x"), inputs_checked=lambda suite: order.append("checked"))
    assert order == []


@pytest.mark.slow
def test_the_probes_are_derived_beside_the_start_of_the_run(make_config, monkeypatch) -> None:
    """Deriving the probes is needed only once a task is judged: prepare() returns while it still
    runs, and the judged tasks are there, whole, when asked for."""
    import runner.judging.probes as probes

    release, started = threading.Event(), threading.Event()
    real = probes.probes_for

    def held(task, provider, seed=None):
        started.set()
        assert release.wait(60)
        return real(task, provider, seed=seed)

    monkeypatch.setattr(probes, "probes_for", held)
    prepared = prepare(make_config())
    assert started.wait(60)
    assert prepared.probes is not None and not prepared.probes.done()
    release.set()
    monkeypatch.setattr(probes, "probes_for", real)
    again = prepare(make_config(run_id="r2"))  # the same seed: the same probes and values
    assert prepared.judged == again.judged and prepared.probe_expected == again.probe_expected
    listed = {t.id: len(t.probes) for t in prepared.suite.tasks}
    derived = [t for t in prepared.judged.values() if len(t.probes) > listed[t.id]]
    assert derived and set(prepared.probe_expected) == {t.id for t in prepared.judged.values() if t.probes}


def test_a_derivation_that_failed_fails_where_its_result_is_asked_for(make_config, monkeypatch) -> None:
    import runner.judging.probes as probes

    def broken(task, provider, seed=None):
        raise RuntimeError(f"no probes for {task.id}")

    monkeypatch.setattr(probes, "probes_for", broken)
    prepared = prepare(make_config())
    with pytest.raises(RuntimeError, match="no probes for"):
        prepared.judged  # noqa: B018 - the property is what is tested
    with pytest.raises(RuntimeError, match="no probes for"):
        prepared.probe_expected  # noqa: B018


def test_a_listed_probe_the_oracle_cannot_judge_stops_the_run_before_anything_is_written(
        make_config, monkeypatch, tmp_path) -> None:
    source = [json.loads(line) for line in TASKS.read_text(encoding="utf-8").splitlines() if line.strip()]
    for task in source:
        if task["id"] == "calc_002":
            task["probes"] = [{"args": {"symbol": "MSFT", "window": 5, "days": 1_000_000},
                               "oracle_params": {"symbol": "MSFT", "window": 5, "days": 1_000_000},
                               "reason": "longer than any history"}]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(t) + "\n" for t in source), encoding="utf-8")
    derived: list[str] = []
    import runner.judging.probes as probes

    monkeypatch.setattr(probes, "probes_for", lambda task, provider, seed=None: derived.append(task.id) or [])
    with pytest.raises(InputError, match=r"calc_002 probe 1"):
        prepare(make_config(tasks_path=tasks, out_dir=tmp_path / "never"))
    assert not (tmp_path / "never").exists() and derived == []


def _workers() -> list[int]:
    """This process's sandbox workers (children running ``finevo.sandbox.worker``)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        if parent == os.getpid() and b"finevo.sandbox.worker" in cmdline:
            found.append(int(entry))
    return found


@pytest.mark.slow
def test_a_bad_input_found_after_the_workers_started_closes_them(make_config, monkeypatch) -> None:
    started: list[int] = []
    real = SandboxPool.prewarm

    def prewarm(pool, data_dir, backend, count):
        started.append(count)
        real(pool, data_dir, backend, count)
        deadline = time.monotonic() + 60.0
        while len(_workers()) < count and time.monotonic() < deadline:  # they are running
            time.sleep(0.05)

    monkeypatch.setattr(SandboxPool, "prewarm", prewarm)
    config = make_config(llm="reference", jobs=2, only=["fetch_001"], security_path=None)
    registry = Path(config.out_dir) / config.run_id / "registry"  # found only after the oracle's values
    registry.mkdir(parents=True)
    (registry / "registry.db").write_text("a registry of an earlier run")
    assert _workers() == []
    with pytest.raises(InputError, match="registry is not empty"):
        run_gate(config)
    assert started == [3]  # the main session's, and the judging lane's two (--jobs 2, no payloads)
    deadline = time.monotonic() + 30.0
    while _workers() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _workers() == []
