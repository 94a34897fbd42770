"""The replay shim cuts a window or an as-of day out of the provider's own frame, then copies the
rows it keeps: every answer must be the one it gave when it copied the whole history first and
masked it (``_masked_select`` below is that code, kept as the reference), on the snapshot and on a
world's market cut at an earlier as-of day, for prices, events and statements alike; and the
provider's frames stay untouched whatever a tool does to what it was given.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import Any

import numpy as np
import pandas as pd
import pytest

from finevo.market import replay
from finevo.market.provider import MarketProvider
from finevo.market.snapshot import load_snapshot
from runner.judging.world_market import read_market, truncate


def _masked_select(frame: pd.DataFrame, symbol: str, as_of: date, period: Any, start: Any, end: Any) -> pd.DataFrame:
    """``replay._select`` as it was before it cut by position: masks over the whole history."""
    if period is replay._DEFAULT:
        period = None if (start is not None or end is not None) else "1mo"
    if period is not None:
        period = period.lower()
    now = pd.Timestamp(replay.as_of_moment_from_date(as_of))
    index = frame.index
    if start is None and end is None:
        if period == "max":
            mask = index <= now
        elif period == "ytd":
            mask = (index >= pd.Timestamp(as_of.year, 1, 1, tz=replay.EXCHANGE_TZ)) & (index <= now)
        elif period in ("1d", "5d"):
            upto = frame[index <= now]
            return replay._nonempty(upto.iloc[-int(period[0]):], symbol, f"period={period!r}")
        else:
            mask = (index > now.normalize() - replay._period_offset(period)) & (index <= now)
        return replay._nonempty(frame[mask], symbol, f"period={period!r}")
    start_ts = replay._to_exchange_ts(start, "start") if start is not None else None
    end_ts = replay._to_exchange_ts(end, "end") if end is not None else None
    if period is not None and period != "max":
        offset = replay._period_offset(period)
        if start_ts is not None and end_ts is None:
            end_ts = start_ts + offset
        elif end_ts is not None and start_ts is None:
            start_ts = end_ts - offset
    if start_ts is None and end_ts is not None:
        start_ts = end_ts - pd.DateOffset(months=1)
    if end_ts is None:
        end_ts = now
    assert start_ts is not None
    if start_ts.tz_convert(replay.EXCHANGE_TZ).date() > as_of:
        raise replay.ReplayDataError(f"{symbol}: start={start!r} is after the data's as-of date {as_of} "
                                     "(\"today\"); nothing is recorded then")
    mask = (index >= start_ts) & (index < end_ts)
    return replay._nonempty(frame[mask], symbol, f"start={start!r}, end={end!r}")


PERIODS = ["1d", "5d", "7d", "1wk", "1mo", "3mo", "6mo", "1y", "2y", "5y", "10y", "ytd", "max", "2Y"]
#: (period, start, end): starts and ends on sessions, weekends, holidays, before the first bar, at
#: and after the as-of day (an end past it is cut there), as strings, dates, datetimes and epochs.
RANGES: list[tuple[Any, Any, Any]] = [
    (replay._DEFAULT, "2024-01-02", "2024-02-01"),
    (replay._DEFAULT, "2023-12-30", "2024-01-01"),
    (replay._DEFAULT, "2024-07-04", None),
    (replay._DEFAULT, None, "2024-03-15"),
    (replay._DEFAULT, "2010-01-01", None),
    (replay._DEFAULT, date(2024, 11, 29), date(2024, 12, 31)),
    (replay._DEFAULT, pd.Timestamp("2024-06-03 09:30"), pd.Timestamp("2024-06-07 16:00", tz="UTC")),
    (replay._DEFAULT, 1717200000, 1719792000),
    (replay._DEFAULT, "2024-12-30", "2030-01-01"),
    ("1mo", "2024-03-01", None),
    ("3mo", None, "2024-09-30"),
    ("max", "2024-05-01", "2024-05-10"),
]


def _expected(provider: MarketProvider, symbol: str, adjusted: bool, period: Any, start: Any,
              end: Any) -> pd.DataFrame | str:
    whole = provider.history(symbol) if adjusted else provider.history_unadjusted(symbol)  # type: ignore[attr-defined]
    try:
        return _masked_select(whole, symbol, provider.as_of, period, start, end).copy()
    except replay.ReplayDataError as exc:
        return f"ReplayDataError: {exc}"


def _served(ticker: Any, adjusted: bool, period: Any, start: Any, end: Any) -> pd.DataFrame | str:
    try:
        return ticker.history(period=period, start=start, end=end, auto_adjust=adjusted)  # type: ignore[no-any-return]
    except replay.ReplayDataError as exc:
        return f"ReplayDataError: {exc}"


def _same(got: pd.DataFrame | str, want: pd.DataFrame | str) -> None:
    if isinstance(want, str) or isinstance(got, str):
        assert got == want
        return
    pd.testing.assert_frame_equal(got, want, check_exact=True, check_freq=True, check_flags=True)
    assert got.index.freq == want.index.freq and got.index.name == want.index.name
    assert list(got.dtypes) == list(want.dtypes)


@pytest.fixture(scope="module", params=["snapshot", "world-cut"])
def provider(request: pytest.FixtureRequest) -> Iterator[MarketProvider]:
    """The snapshot, and a world's market cut at an earlier as-of day (a holiday, statements
    re-derived as they stood then)."""
    snap = load_snapshot()
    market: MarketProvider = snap if request.param == "snapshot" else truncate(read_market(snap), date(2024, 7, 4), 40)
    replay.bind(market)
    yield market
    replay.bind(None)


def _frames_of(provider: MarketProvider, symbol: str) -> list[pd.DataFrame]:
    return [provider.history_view(symbol, adjusted=True), provider.history_view(symbol, adjusted=False)]  # type: ignore[attr-defined]


@pytest.mark.slow
def test_every_window_is_the_masked_copy_of_the_whole_history(provider: MarketProvider) -> None:
    for symbol in provider.symbols():
        ticker = replay.Ticker(symbol)
        before = [frame.copy() for frame in _frames_of(provider, symbol)]
        for adjusted in (True, False):
            for period in PERIODS:
                _same(_served(ticker, adjusted, period, None, None),
                      _expected(provider, symbol, adjusted, period, None, None))
            for period, start, end in RANGES:
                _same(_served(ticker, adjusted, period, start, end),
                      _expected(provider, symbol, adjusted, period, start, end))
        for kept, now in zip(before, _frames_of(provider, symbol), strict=True):
            pd.testing.assert_frame_equal(now, kept, check_exact=True)


def test_events_statements_and_adjustments_are_unchanged(provider: MarketProvider) -> None:
    for symbol in provider.symbols():
        ticker = replay.Ticker(symbol)
        whole = provider.history(symbol)
        for period in ("max", "1y", "ytd", "5y"):
            pd.testing.assert_series_equal(ticker.get_splits(period), ticker._within(whole, period).loc[
                lambda f: f["Stock Splits"] != 0, "Stock Splits"], check_exact=True)
            acts = ticker._within(whole, period)[[c for c in replay._ACTION_COLUMNS if c in whole.columns]]
            pd.testing.assert_frame_equal(ticker.get_actions(period), acts[(acts != 0).any(axis=1)], check_exact=True)
        for freq in ("yearly", "quarterly"):
            statement = provider.income_stmt(symbol, freq)  # type: ignore[arg-type]
            pd.testing.assert_frame_equal(ticker.get_income_stmt(pretty=True, freq=freq), statement, check_exact=True)
        # back-adjusted and rounded windows: the masked window of the unadjusted bars, scaled
        raw = _masked_select(provider.history_unadjusted(symbol), symbol, provider.as_of, "3mo", None, None)  # type: ignore[attr-defined]
        want = raw.copy()
        ratio = raw["Adj Close"] / raw["Close"]
        for column in ("Open", "High", "Low"):
            want[column] = raw[column] * ratio
        want = want.drop(columns=["Adj Close"])
        _same(ticker.history(period="3mo", auto_adjust=False, back_adjust=True), want)
        rounded = ticker.history(period="6mo", rounding=True, actions=False)
        plain = _expected(provider, symbol, True, "6mo", None, None)
        assert isinstance(plain, pd.DataFrame)
        plain = plain.drop(columns=[c for c in replay._ACTION_COLUMNS if c in plain.columns])
        prices = [c for c in ("Open", "High", "Low", "Close", "Adj Close") if c in plain.columns]
        plain[prices] = plain[prices].round(2)
        _same(rounded, plain)


def test_what_a_tool_is_given_is_its_own(provider: MarketProvider) -> None:
    symbol = provider.symbols()[0]
    shared = _frames_of(provider, symbol)
    kept = [frame.copy() for frame in shared]
    for frame in (replay.Ticker(symbol).history(period="max"), replay.Ticker(symbol).history(period="5d"),
                  replay.Ticker(symbol).history(period="1y", auto_adjust=False)):
        assert not any(np.shares_memory(frame["Close"].to_numpy(), s["Close"].to_numpy()) for s in shared)
        frame.iloc[:, :] = 0.0 if frame.shape[1] else None
        frame.index = frame.index.tz_localize(None)
    for now, before in zip(_frames_of(provider, symbol), kept, strict=True):
        pd.testing.assert_frame_equal(now, before, check_exact=True)


def test_an_index_that_is_not_a_plain_sorted_one_is_masked_as_before() -> None:
    """A frame with a ``freq``, or out of order, takes the mask: same rows, same ``freq`` as before."""
    index = pd.date_range("2024-01-01", periods=60, freq="D", tz=replay.EXCHANGE_TZ, name="Date")
    frame = pd.DataFrame({"Close": np.arange(60.0)}, index=index)
    low, high = pd.Timestamp("2024-01-10", tz=replay.EXCHANGE_TZ), pd.Timestamp("2024-02-01", tz=replay.EXCHANGE_TZ)
    for shuffled in (frame, frame.iloc[::-1], frame.iloc[np.r_[30:60, 0:30]]):
        got = replay._rows(shuffled, low, True, high, False)
        want = shuffled[(shuffled.index >= low) & (shuffled.index < high)]
        pd.testing.assert_frame_equal(got, want, check_freq=True)
        assert got.index.freq == want.index.freq
    plain = frame.set_axis(pd.DatetimeIndex(list(index), name="Date"))  # no freq: cut by position
    assert plain.index.freq is None
    pd.testing.assert_frame_equal(replay._rows(plain, low, False, high, True),
                                  plain[(plain.index > low) & (plain.index <= high)], check_freq=True)
