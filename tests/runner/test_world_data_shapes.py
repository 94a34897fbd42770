"""The hidden worlds carry the shapes recorded market data have (runner.judging.world_market's
``recorded_shapes``), in every world: prices off the cent grid, a session missing from each stock,
a trading halt of flat bars, a recent split, dividends off the cent grid -- shaped as yfinance shows
them, with the oracle's answers right on them. Each shape is here because a tool right only without it
passed every world."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

from finevo.market import synthetic
from finevo.market.snapshot import Snapshot, SymbolData, load_snapshot
from runner.inputs.tasks import Task, load_tasks
from runner.judging.oracle import compute
from runner.judging.world_market import (
    GAP_BACK,
    HALT_SESSIONS,
    SPLIT_BACK,
    Market,
    fine_dividends,
    fine_prices,
    halts,
    missing_sessions,
    read_market,
    readjust,
    recent_splits,
    recorded_shapes,
)
from runner.judging.worlds import WorldKind, Worlds
from tests.runner.fakes import DATA, TASKS

STOCKS = ("AAPL", "MSFT", "GOOGL", "AMZN", "TSLA")
PRICES = ["Open", "High", "Low", "Close"]


@pytest.fixture(scope="module")
def snapshot() -> Snapshot:
    return load_snapshot(DATA)


@pytest.fixture(scope="module")
def tasks() -> list[Task]:
    return load_tasks(TASKS)


@pytest.fixture(scope="module", params=[1, 2])
def worlds(request: Any, snapshot: Snapshot, tasks: list[Task]) -> Iterator[Worlds]:
    with Worlds(snapshot, 3, request.param, tasks) as built:
        yield built


def _markets(worlds: Worlds) -> list[tuple[str, Market]]:
    """Every variant of every kind of world the run draws, and the base of its ``flip`` worlds."""
    out = [(name, base.market) for kind, round_ in worlds.kinds() for name, _, base in worlds.variants(kind, round_)]
    return [*out, ("flip base", worlds._shaped_base())]


def _off_cents(values: np.ndarray) -> bool:
    return bool(np.abs(values * 100.0 - np.round(values * 100.0)).max() > 1e-3)


def _flat_runs(raw: pd.DataFrame) -> int:
    """The longest run of bars with Open = High = Low = Close equal to the bar before and Volume 0."""
    flat = (raw["High"] == raw["Low"]) & (raw["Open"] == raw["Close"]) & (raw["High"] == raw["Close"])
    same = raw["Close"].diff() == 0
    halted = (flat & same & (raw["Volume"] == 0)).to_numpy()
    longest = current = 0
    for h in halted:
        current = current + 1 if h else 0
        longest = max(longest, current)
    return longest


# --------------------------------------------------------------------------- every world has every shape
@pytest.mark.slow
def test_every_world_carries_every_shape_for_every_stock(worlds: Worlds) -> None:
    for name, market in _markets(worlds):
        index_dates = set(pd.DatetimeIndex(market.data["^GSPC"].history.index).date)
        missing: list[Any] = []
        for symbol in STOCKS:
            raw = market.data[symbol].history
            dates = pd.DatetimeIndex(raw.index).date
            # (a) prices at full precision, not rounded to cents
            assert _off_cents(raw["Close"].to_numpy(dtype=float)), (name, symbol)
            # (c) one recent session the index has is missing from the stock
            recent = sorted(index_dates)[-GAP_BACK[1] - 2:]
            gone = [d for d in recent if d not in set(dates)]
            assert len(gone) == 1, (name, symbol, gone)
            missing += gone
            # (b) a halt as long as any stochastic window asked for: flat bars, Volume 0
            assert _flat_runs(raw) >= HALT_SESSIONS[0] - 1, (name, symbol)
            # (d) a split inside the recent windows, the event in Stock Splits
            splits = raw["Stock Splits"].to_numpy(dtype=float)
            assert (splits[-SPLIT_BACK[1]:] != 0).sum() == 1, (name, symbol)
        # each stock misses another day: no two symbols share their calendar
        assert len(set(missing)) == len(STOCKS), (name, missing)
        # the index and the ETF keep every session, are never halted nor split
        for symbol in ("^GSPC", "SPY"):
            raw = market.data[symbol].history
            assert _flat_runs(raw) == 0 and (raw["Stock Splits"].to_numpy(dtype=float)[-30:] == 0).all()


@pytest.mark.slow
def test_world_files_are_shaped_like_the_snapshot_yfinance_serves(worlds: Worlds, snapshot: Snapshot,
                                                                  tasks: list[Task]) -> None:
    task = next(t for t in tasks if t.id == "calc_006")
    for world in worlds.for_task(task, []):
        for symbol in snapshot.symbols():
            served, recorded = world.provider.history_unadjusted(symbol), snapshot.history_unadjusted(symbol)
            assert list(served.columns) == list(recorded.columns), (world.name, symbol)
            assert dict(served.dtypes) == dict(recorded.dtypes), (world.name, symbol)
            assert served.index.name == recorded.index.name and str(served.index.tz) == str(recorded.index.tz)
            assert served.index.is_monotonic_increasing and served.index.is_unique
            bars = served[PRICES].to_numpy(dtype=float)
            assert (bars[:, 1] >= bars[:, [0, 3]].max(axis=1) - 1e-9).all(), (world.name, symbol)
            assert (bars[:, 2] <= bars[:, [0, 3]].min(axis=1) + 1e-9).all(), (world.name, symbol)
            assert (served["Volume"] >= 0).all()
        # the quotes name the last bar the world holds
        for symbol in STOCKS:
            last = world.provider.history(symbol)["Close"].iloc[-1]
            assert world.provider.info(symbol)["regularMarketPrice"] == pytest.approx(float(last), rel=1e-9)


def test_the_halt_stays_clear_of_the_sessions_a_world_spikes(worlds: Worlds) -> None:
    """A spike on a halted session would end the flat run early; the halt is placed around them."""
    for kind in (WorldKind.AS_OF, WorldKind.EDGE):
        for name, _, base in worlds.variants(kind, 0):
            for symbol in STOCKS:
                assert _flat_runs(base.market.data[symbol].history) >= HALT_SESSIONS[0] - 1, (name, symbol)


# --------------------------------------------------------------------------- each shape alone
def test_fine_prices_leave_a_bar_consistent_and_a_priced_off_grid_market_alone(snapshot: Snapshot) -> None:
    market = read_market(snapshot)
    moved, words = fine_prices(market, np.random.default_rng(1))
    assert words.startswith("prices off the cent grid")
    for symbol in snapshot.symbols():
        before, after = market.data[symbol].history, moved.data[symbol].history
        assert not _off_cents(before["Close"].to_numpy(dtype=float))
        assert _off_cents(after["Close"].to_numpy(dtype=float))
        ratio = after[PRICES].to_numpy(dtype=float) / before[PRICES].to_numpy(dtype=float)
        assert np.allclose(ratio, ratio[:, :1], rtol=1e-12)  # one factor per bar
        assert np.abs(ratio - 1).max() < 1e-3
    again, words = fine_prices(moved, np.random.default_rng(2))
    assert words == "" and again.data["AAPL"].history.equals(moved.data["AAPL"].history)


def test_fine_dividends_move_every_payers_amounts_by_one_factor_and_leave_the_bars(snapshot: Snapshot) -> None:
    market = read_market(snapshot)
    moved, words = fine_dividends(market, np.random.default_rng(1))
    assert words.startswith("dividends off the cent grid") and "AAPL" in words
    before, after = market.data["AAPL"].history, moved.data["AAPL"].history
    paid = before["Dividends"] != 0
    assert paid.sum() >= 4 and (after["Dividends"] != 0).equals(paid)
    ratio = after.loc[paid, "Dividends"] / before.loc[paid, "Dividends"]
    assert np.allclose(ratio, ratio.iloc[0], rtol=1e-12) and ratio.iloc[0] != 1.0  # one factor per stock
    amounts = after.loc[paid, "Dividends"].to_numpy(dtype=float)
    assert (np.abs(amounts - np.round(amounts, 4)) > 1e-7).all()  # not four decimals, let alone cents
    assert after[PRICES].equals(before[PRICES])
    for symbol in snapshot.symbols():  # a symbol that never paid is left as it was
        if not (market.data[symbol].history.get("Dividends", pd.Series(dtype=float)) != 0).any():
            assert moved.data[symbol] is market.data[symbol]


def test_the_generator_draws_the_same_paths_at_full_precision() -> None:
    cents = {d.symbol: d.history for d in synthetic.generate(7)}
    full = {d.symbol: d.history for d in synthetic.generate(7, cents=False)}
    for symbol, frame in full.items():
        assert _off_cents(frame["Close"].to_numpy(dtype=float))
        assert np.abs(frame[PRICES].to_numpy() - cents[symbol][PRICES].to_numpy()).max() <= 0.005 + 1e-9


def test_a_split_adds_the_event_and_leaves_the_split_adjusted_bars_as_they_are(snapshot: Snapshot) -> None:
    market = read_market(snapshot)
    split, words = recent_splits(market, np.random.default_rng(3))
    assert words.startswith("a split: ")
    for symbol in STOCKS:
        before, after = market.data[symbol].history, split.data[symbol].history
        assert before.drop(columns="Stock Splits").equals(after.drop(columns="Stock Splits"))
        events = after["Stock Splits"].iloc[-SPLIT_BACK[1]:]
        assert (events != 0).sum() == 1 and float(events[events != 0].iloc[0]) > 1
        # the oracle's window over split-adjusted closes does not move
        for days in (5, 30):
            assert compute("max_close", split, {"symbol": symbol, "days": days}) == \
                compute("max_close", market, {"symbol": symbol, "days": days})


def _own_tail_correlation(market: Market, symbols: list[str], days: int) -> float:
    series = [market.history(s)["Close"].tail(days).pct_change().dropna().to_numpy() for s in symbols]
    return float(np.corrcoef(series[0], series[1])[0, 1])


def test_correlation_joins_on_dates_and_a_tail_per_symbol_is_wrong(snapshot: Snapshot) -> None:
    market = read_market(snapshot)
    gapped, words = missing_sessions(market, np.random.default_rng(4))
    assert words.startswith("a session missing: ")
    symbols = ["^GSPC", "AAPL"]
    value = compute("correlation", gapped, {"symbols": symbols, "days": 30})
    joined = pd.concat([gapped.history(s)["Close"] for s in symbols], axis=1, join="inner").tail(30)
    returns = joined.pct_change().dropna()
    assert value == pytest.approx(float(np.corrcoef(returns.iloc[:, 0], returns.iloc[:, 1])[0, 1]), rel=1e-12)
    # on aligned data the two agree; with a session missing they part
    assert _own_tail_correlation(market, symbols, 30) == pytest.approx(
        compute("correlation", market, {"symbols": symbols, "days": 30}), rel=1e-9)
    assert abs(_own_tail_correlation(gapped, symbols, 30) - value) > 1e-3


def test_kdj_reads_a_flat_range_as_rsv_50_and_a_division_by_it_is_not_finite(snapshot: Snapshot) -> None:
    market = read_market(snapshot)
    halted, words = halts(market, np.random.default_rng(5))
    assert words.startswith("a trading halt (flat bars): ")
    # Adj Close recomputed from the flat closes (as recorded_shapes does): the adjusted bars stay flat
    halted = Market([SymbolData(i.symbol, readjust(i.history), i.income_yearly, i.income_quarterly, i.info,
                                i.fast_info) for i in halted.data.values()], halted.as_of)
    for symbol in STOCKS:
        value = compute("kdj", halted, {"symbol": symbol, "n": 9, "k_period": 3, "d_period": 3})
        assert all(np.isfinite(v) for v in value.values())  # type: ignore[union-attr]
        h = halted.history(symbol)
        span = h["High"].rolling(9).max() - h["Low"].rolling(9).min()
        assert (span == 0).any(), symbol  # a window of 9 flat bars: High - Low of zero
        assert (span == 0).sum() >= HALT_SESSIONS[0] - 9 + 1


def test_recorded_shapes_are_reproducible_from_the_rng(snapshot: Snapshot) -> None:
    market = read_market(snapshot)
    a, words_a = recorded_shapes(market, np.random.default_rng(9), {70, 71})
    b, words_b = recorded_shapes(market, np.random.default_rng(9), {70, 71})
    assert words_a == words_b and all(a.data[s].history.equals(b.data[s].history) for s in a.data)
    for symbol in STOCKS:
        info = a.data[symbol].info
        assert info["regularMarketPrice"] == float(a.data[symbol].history["Close"].iloc[-1])


@pytest.mark.parametrize("task_id", ["comp_001", "comp_002"])
def test_a_zigzag_tie_compounds_above_one_in_floating_point_for_the_tasks_own_symbol(snapshot: Snapshot,
                                                                                    task_id: str) -> None:
    """The zigzag world's tie (the last close equal to the window's first to the last bit) is drawn
    with an edge whose daily returns, compounded in floating point on the closes as stored, come out
    above 1: a tool reading "the price rose" from ``(1 + pct_change()).prod()`` says so there in every
    run, not only where the data's rounding happens to fall that way."""
    from runner.judging.world_market import read_market
    from runner.judging.world_shapes import _compounds_above, task_symbols, window_args, zigzag_market

    task = next(t for t in load_tasks(TASKS) if t.id == task_id)
    market = read_market(snapshot)
    own = task_symbols(task, [], market.data)
    found = zigzag_market(task, market, own)
    assert found is not None
    drawn, _shape = found
    window = max(window_args({**task.oracle.params, **task.intent.args}).values())
    for symbol in own:
        closes = drawn.history(symbol)["Close"].to_numpy(dtype=float)[-window:]
        assert closes[-1] == closes[0], symbol
    assert _compounds_above(drawn, own, window)



@pytest.mark.slow
def test_a_worlds_files_are_its_own_data_though_unchanged_symbols_share_them(snapshot: Snapshot, tasks: list[Task],
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Worlds serialise a symbol's files once per symbol's data and reuse them in every world holding the
    same data: every world is written byte for byte as it is when each serialises its own files."""
    chosen = [t for t in tasks if t.id in ("comp_001", "fetch_008", "calc_003")]

    def written() -> dict[str, dict[str, bytes]]:
        with Worlds(snapshot, 3, 5, chosen) as built:
            worlds = [w for t in chosen for w in built.for_task(t, [])]
            return {w.name: {str(p.relative_to(w.path)): p.read_bytes() for p in sorted(w.path.rglob("*"))
                             if p.is_file()} for w in worlds}

    shared = written()
    monkeypatch.setattr(Worlds, "_symbol_blobs", lambda self, base, symbol: base.symbol_blobs(symbol))
    assert written() == shared
    assert len(shared) > 10
