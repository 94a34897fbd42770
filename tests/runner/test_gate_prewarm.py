"""The gate's sandbox workers start while the inputs are prepared (once the suite, the flags and the
snapshot are known good), and a bad input found after that leaves no worker behind."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

import runner.judging.oracle as oracle
from finevo.errors import InputError
from runner.execution.session import SandboxPool
from runner.gate import run_gate
from runner.inputs.prepare import prepare


def test_the_inputs_are_checked_before_the_oracles_values_are_computed(make_config, monkeypatch) -> None:
    order: list[str] = []
    real = oracle.caching

    def caching(provider):  # the oracle's values start here
        order.append("oracle")
        return real(provider)

    monkeypatch.setattr(oracle, "caching", caching)
    prepared = prepare(make_config(), inputs_checked=lambda suite: order.append(f"checked {len(suite.tasks)}"))
    assert order[0] == f"checked {len(prepared.suite.tasks)}" and "oracle" in order
    # a bad input is found before anything starts
    order.clear()
    with pytest.raises(InputError, match="--run-id"):
        prepare(make_config(run_id="../x"), inputs_checked=lambda suite: order.append("checked"))
    assert order == []


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
