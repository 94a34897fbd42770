"""The ``leap`` world's statements are derived when read, not at each step of building its market.

Its market is built on the histories alone (:func:`runner.judging.worlds._histories`) and its
statements and quotes derived on first read (:meth:`Worlds._leap_statements`). What a tool reads
must not tell: every symbol's files, ``info`` and statements are byte for byte those of the steps
run on the whole market, as the world was built before (``_eager_leap`` below is that code).
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd
import pytest

from finevo.market.snapshot import Snapshot, load_snapshot, symbol_files
from finevo.paths import benchmarks_dir
from runner.inputs.tasks import Task, load_tasks
from runner.judging.world_dividends import STOPPED_YEARS, stopped_payers
from runner.judging.world_market import Market, edge_dividends, lengthen, truncate
from runner.judging.worlds import _LEAP_EDGES, KIND_ORDER, Worlds, _LeapMarket, _years_before


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return load_snapshot()


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return list(load_tasks(benchmarks_dir() / "tasks.jsonl"))


def _eager_leap(worlds: Worlds) -> Market:
    """The ``leap`` world's market as :meth:`Worlds.leap_market` built it before: every step on the
    whole market, statements restated at each."""
    plan = worlds.leap_plan()
    assert plan is not None
    day, lag = plan
    rng = np.random.default_rng([worlds.seed, len(KIND_ORDER), 1])
    longer = lengthen(worlds._base_market().market, worlds._longer_start(), rng)
    longer, _ = stopped_payers(longer, _years_before(worlds._leap_earliest(), STOPPED_YEARS))
    past, _ = edge_dividends(truncate(longer, day, lag), _LEAP_EDGES)
    return past


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3, 7, 11, 42])
def test_the_leap_world_reads_byte_for_byte_as_when_every_step_restated_it(snapshot: Snapshot, tasks: list[Task],
                                                                          seed: int) -> None:
    worlds = Worlds(snapshot, 3, seed, tasks)
    built = worlds.leap_market()
    assert built is not None
    lazy = built[2]
    assert isinstance(lazy, _LeapMarket)
    # what choosing the day and the seeds' checks read is there before any statement is derived
    assert "data" not in vars(lazy)
    assert lazy.symbols() and lazy.sessions()
    dividends = {s: lazy.dividends(s) for s in lazy.symbols()}
    assert "data" not in vars(lazy)
    eager = _eager_leap(worlds)
    assert lazy.as_of == eager.as_of and lazy.symbols() == eager.symbols()
    for symbol in eager.symbols():
        pd.testing.assert_series_equal(dividends[symbol], eager.dividends(symbol), check_exact=True)
        assert symbol_files(lazy.data[symbol]) == symbol_files(eager.data[symbol]), (seed, symbol)
        assert lazy.info(symbol) == eager.info(symbol) and lazy.fast_info(symbol) == eager.fast_info(symbol)
        for freq in ("yearly", "quarterly"):
            pd.testing.assert_frame_equal(lazy.income_stmt(symbol, freq), eager.income_stmt(symbol, freq),  # type: ignore[arg-type]
                                          check_exact=True)
        pd.testing.assert_frame_equal(lazy.history(symbol), eager.history(symbol), check_exact=True)
    # the words that name the world are the same too: a stopped payer and the moved ex-dates
    assert "dividends stopped" in built[1] and "ex-dates beside whole-year edges" in built[1]


def test_a_leap_world_with_a_stopped_payer_restates_its_info_from_its_own_dividends(snapshot: Snapshot,
                                                                                     tasks: list[Task]) -> None:
    """The seed world's AMZN stopped paying four years before the leap day: its ``info`` names its last
    ex-date and no trailing dividend (derived from the written histories, as before)."""
    built = Worlds(snapshot, 3, 1, tasks).leap_market()
    assert built is not None
    market = built[2]
    info = market.info("AMZN")
    paid = pd.DatetimeIndex(market.dividends("AMZN").index)
    if "exDividendDate" in info:
        last = pd.Timestamp(info["exDividendDate"], unit="s", tz="America/New_York").date()
        assert last == paid[-1].date() < date(2020, 3, 1)
    if "trailingAnnualDividendRate" in info:
        assert info["trailingAnnualDividendRate"] == 0.0
