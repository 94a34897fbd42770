"""The reference self-check holds on market data other than the bundled snapshot.

Worlds: other seeds of the synthetic generator, the bundled seed truncated at earlier as-of
dates, and a snapshot written through the live recorder (``data refresh``'s code path). In each,
every reference tool must pass as the gate judges it (the task's value, its probes drawn from the
run's seed, every hidden world): a verdict tuned to one data set would fail here.

One world of each kind (another seed, the earliest as-of date, the recorded format cut at an as-of
date) runs the whole gate -- sandbox, reference run, self-check (reference 100 %, null 0 %),
verdict. The other worlds judge the same reference tools in the same hidden worlds in process
(``scripts/bench_worlds.py --data DIR --in-process`` in the test's process, about a fifth of a gate
run): what differs between worlds is the data, and the values are what a world can break; the
confinement and the null run do not depend on it. ``scripts/reference_worlds.py`` runs the whole gate in every world.
"""

from __future__ import annotations

import io
import json
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest

from finevo.market import synthetic
from finevo.market.snapshot import load_snapshot
from finevo.paths import benchmarks_dir
from runner.gate import GateConfig, run_gate
from runner.reports.console import Console
from tests.support.judge_scripts import run_script

SEEDS = list(range(1, 11))
AS_OF = [date(2024, 3, 28), date(2024, 6, 28), date(2024, 9, 30)]


def _world(tmp_path: Path, seed: int, as_of: date | None, recorded: bool) -> Path:
    data = tmp_path / "data"
    if recorded:
        synthetic.build_recorded(data, seed, as_of)
    else:
        synthetic.build(data, seed=seed, as_of=as_of)
    return data


#: the worlds whose whole gate runs: one of each kind
GATE_WORLDS = [(7, None, False), (synthetic.SEED, AS_OF[0], False), (synthetic.SEED, date(2024, 11, 15), True)]
#: every other world: the reference tools judged in process, in the same hidden worlds
JUDGED_WORLDS = [w for w in [
    *((s, None, False) for s in SEEDS),
    *((synthetic.SEED, d, False) for d in AS_OF),
    (11, None, True),
] if w not in GATE_WORLDS]
#: the hidden worlds pinned: the test is about the data world, and a drawn seed would make a
#: failure unreproducible
WORLDS_SEED = 20261123


@pytest.mark.slow
@pytest.mark.parametrize("seed, as_of, recorded", GATE_WORLDS, ids=lambda v: str(v))
def test_reference_self_check_passes_in_another_world(tmp_path: Path, seed: int, as_of: date | None,
                                                     recorded: bool) -> None:
    data = _world(tmp_path, seed, as_of, recorded)
    config = GateConfig(llm="reference", tasks_path=benchmarks_dir() / "tasks.jsonl", security_path=None,
                        payloads_path=None, baseline_path=None, data_dir=data, out_dir=tmp_path / "out",
                        run_id="world", run_payloads=False, task_timeout_s=120.0, worlds_seed=WORLDS_SEED)
    result = run_gate(config, console=Console(io.StringIO(), colour=False))
    check = result.doc["selfcheck"]
    assert check["ok"], (check["reason"], check["reference"].get("reasons"))
    assert result.exit_code == 0, result.doc["verdict"]["reasons"]
    assert {t["task_id"] for t in result.doc["tasks"] if t["state"] == "pass"} == {
        json.loads(line)["id"] for line in (benchmarks_dir() / "tasks.jsonl").read_text().splitlines()}


@pytest.mark.slow
@pytest.mark.parametrize("seed, as_of, recorded", JUDGED_WORLDS, ids=lambda v: str(v))
def test_every_reference_tool_passes_as_judged_in_another_world(tmp_path: Path, seed: int, as_of: date | None,
                                                                recorded: bool) -> None:
    data = _world(tmp_path, seed, as_of, recorded)
    # scripts/bench_worlds.py in this process (tests/support/judge_scripts.py): a fresh interpreter a
    # world only imported the judge again
    code, stdout = run_script("bench_worlds", ["--data", str(data), "--seeds", str(WORLDS_SEED), "--in-process"],
                              None)
    tasks = len((benchmarks_dir() / "tasks.jsonl").read_text().splitlines())
    failing = [line for line in stdout.splitlines() if line.startswith("  ")]
    assert code == 0, failing
    assert f"{tasks}/{tasks} reference tools pass" in stdout, stdout[-2000:]


def test_the_worlds_split_between_gate_and_judge_covers_every_world_once() -> None:
    assert len(GATE_WORLDS) + len(JUDGED_WORLDS) == len(SEEDS) + len(AS_OF) + 2
    assert len(set(GATE_WORLDS) | set(JUDGED_WORLDS)) == len(GATE_WORLDS) + len(JUDGED_WORLDS)
    assert {recorded for _, _, recorded in GATE_WORLDS} == {True, False}


@pytest.mark.slow
def test_an_earlier_as_of_world_is_the_same_world_cut_short(tmp_path: Path) -> None:
    cut = date(2024, 6, 28)
    synthetic.build(tmp_path / "full", seed=3)
    synthetic.build(tmp_path / "cut", seed=3, as_of=cut)
    full, early = load_snapshot(tmp_path / "full"), load_snapshot(tmp_path / "cut")
    assert early.as_of == cut and early.synthetic
    for symbol in early.symbols():
        bars, all_bars = early.history_unadjusted(symbol), full.history_unadjusted(symbol)
        assert bars.index[-1].date() <= cut
        prefix = all_bars.loc[all_bars.index <= bars.index[-1]]
        pd.testing.assert_series_equal(bars["Close"], prefix["Close"])
        # the dividends up to the cut, and the adjustment anticipates none after it
        pd.testing.assert_series_equal(bars["Dividends"], prefix["Dividends"])
        assert bars["Adj Close"].iloc[-1] == bars["Close"].iloc[-1]
        assert early.fast_info(symbol)["lastPrice"] == float(bars["Close"].iloc[-1])
    # a quarter is in the statements only once reported (45 days after it ends)
    columns = early.income_stmt("AAPL", "quarterly").columns
    assert max(columns).date() + timedelta(days=synthetic.REPORTING_LAG_DAYS) <= cut
    assert max(columns).date() == date(2024, 3, 31)


def test_as_of_outside_the_generated_span_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="as_of"):
        synthetic.build(tmp_path, seed=1, as_of=date(2025, 1, 31))
    with pytest.raises(SystemExit) as info:
        synthetic.main(["--out", str(tmp_path / "x"), "--as-of", "2021-12-31"])
    assert info.value.code == 2


def test_a_recorded_world_is_labelled_recorded_and_holds_the_generated_prices(tmp_path: Path) -> None:
    manifest = synthetic.build_recorded(tmp_path / "rec", seed=4)
    synthetic.build(tmp_path / "syn", seed=4)
    recorded, generated = load_snapshot(tmp_path / "rec"), load_snapshot(tmp_path / "syn")
    assert manifest["generator"] == "finevo.market.live" and not recorded.synthetic
    assert recorded.as_of == generated.as_of and recorded.symbols() == generated.symbols()
    for symbol in recorded.symbols():
        pd.testing.assert_frame_equal(recorded.history(symbol), generated.history(symbol))
