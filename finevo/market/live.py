"""Real market data through yfinance: :class:`LiveProvider` and :func:`record_snapshot`.

``record_snapshot`` writes the same format as the synthetic generator (see
:mod:`finevo.market.snapshot`) with ``"synthetic": false``, so a recorded snapshot can replace
the bundled one (``finevo-verify data refresh --out DIR``, then ``--data DIR`` /
``FINEVO_BENCHMARKS``). Every failure of the data source (network down, rate limit, unknown
symbol, empty answer) becomes a :class:`finevo.errors.NetworkError` naming the symbol and call.

``ticker_factory`` defaults to ``yfinance.Ticker``; tests pass a stub.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo

import pandas as pd

from finevo.errors import NetworkError
from finevo.market.snapshot import (
    CAPITAL_GAINS,
    EXCHANGE_TZ,
    INDEX_UNIT,
    RAW_HISTORY_COLUMNS,
    SESSION_CLOSE,
    SESSION_OPEN,
    SnapshotOrigin,
    SymbolData,
    SymbolNotRecorded,
    split_pending,
    write_snapshot,
)

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

TickerFactory = Callable[[str], Any]
GENERATOR = "finevo.market.live"


def _default_factory() -> TickerFactory:
    try:
        import yfinance
    except ImportError:
        from finevo.errors import InputError

        raise InputError("the live recorder needs yfinance, an extra: pip install 'finevo[live]'") from None

    factory: TickerFactory = yfinance.Ticker
    return factory


def _yfinance_version() -> str:
    try:
        import yfinance

        return str(getattr(yfinance, "__version__", "unknown"))
    except ImportError:  # the `live` extra is not installed
        return "unavailable"


def _call(symbol: str, what: str, fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except NetworkError:
        raise
    except Exception as exc:  # yfinance raises many unrelated types for one cause: no data
        raise NetworkError(f"{symbol}: {what} failed ({type(exc).__name__}: {exc})",
                           symbol=symbol, call=what) from exc


def _daily_index(frame: pd.DataFrame) -> pd.DataFrame:
    """Midnight, America/New_York, named Date, in the unit the snapshot reader uses."""
    out = frame.copy()
    index = pd.DatetimeIndex(out.index)
    index = index.tz_convert(EXCHANGE_TZ) if index.tz is not None else index.tz_localize(EXCHANGE_TZ)
    days = pd.to_datetime([ts.date() for ts in index])
    out.index = pd.DatetimeIndex(days).as_unit(INDEX_UNIT).tz_localize(EXCHANGE_TZ).rename("Date")
    return out[~out.index.duplicated(keep="first")]


class LiveProvider:
    """:class:`~finevo.market.provider.MarketProvider` over live yfinance (needs network)."""

    def __init__(self, symbols: Iterable[str], as_of: date | None = None,
                 ticker_factory: TickerFactory | None = None) -> None:
        self._symbols = [s.upper() for s in symbols]
        self._as_of = as_of or datetime.now(UTC).date()
        self._factory = ticker_factory or _default_factory()
        self._tickers: JSONObject = {}

    @property
    def as_of(self) -> date:
        return self._as_of

    def symbols(self) -> list[str]:
        return list(self._symbols)

    def _ticker(self, symbol: str) -> Any:
        if symbol not in self._symbols:
            raise SymbolNotRecorded(symbol, "this live provider's symbol list")
        if symbol not in self._tickers:
            self._tickers[symbol] = _call(symbol, "Ticker()", lambda: self._factory(symbol))
        return self._tickers[symbol]

    def _bars(self, symbol: str, auto_adjust: bool) -> pd.DataFrame:
        end = (self._as_of + timedelta(days=1)).isoformat()   # yfinance's end is exclusive
        ticker = self._ticker(symbol)
        frame = _call(symbol, "history", lambda: ticker.history(period="max", end=end, interval="1d",
                                                                   auto_adjust=auto_adjust, actions=True))
        if frame is None or len(frame) == 0:
            raise NetworkError(f"{symbol}: yfinance returned no daily prices up to {self._as_of}",
                               symbol=symbol, call="history")
        return _daily_index(frame)

    def history(self, symbol: str) -> pd.DataFrame:
        return self._bars(symbol, auto_adjust=True)

    def history_unadjusted(self, symbol: str) -> pd.DataFrame:
        return self._bars(symbol, auto_adjust=False)

    def dividends(self, symbol: str) -> pd.Series:
        bars = self.history(symbol)
        series = bars.loc[bars["Dividends"] != 0, "Dividends"]
        series.name = "Dividends"
        return series

    def income_stmt(self, symbol: str, freq: Literal["yearly", "quarterly"] = "yearly") -> pd.DataFrame:
        ticker = self._ticker(symbol)
        attr = "income_stmt" if freq == "yearly" else "quarterly_income_stmt"
        frame = _call(symbol, attr, lambda: getattr(ticker, attr))
        return pd.DataFrame() if frame is None else frame.copy()

    def info(self, symbol: str) -> JSONObject:
        ticker = self._ticker(symbol)
        return dict(_call(symbol, "info", lambda: ticker.info) or {})

    def fast_info(self, symbol: str) -> JSONObject:
        ticker = self._ticker(symbol)
        fast = _call(symbol, "fast_info", lambda: ticker.fast_info)
        out: JSONObject = {}
        for key in list(fast.keys()):
            try:
                out[key] = fast[key]
            except Exception:  # one lazily fetched field failing must not lose the rest
                out[key] = None
        return out


def _raw_for_snapshot(symbol: str, frame: pd.DataFrame, start: date, as_of: date) -> pd.DataFrame:
    missing = [c for c in RAW_HISTORY_COLUMNS if c not in frame.columns]
    if missing:
        raise NetworkError(f"{symbol}: yfinance history lacks columns {missing}", symbol=symbol, call="history")
    columns = list(RAW_HISTORY_COLUMNS) + ([CAPITAL_GAINS] if CAPITAL_GAINS in frame.columns else [])
    out = frame[columns]
    days = out.index.tz_localize(None)
    out = out[(days >= pd.Timestamp(start)) & (days <= pd.Timestamp(as_of))]
    if out.empty:
        raise NetworkError(f"{symbol}: no daily prices between {start} and {as_of}", symbol=symbol, call="history")
    return out


def wall_clock() -> datetime:
    """The time a recording is made (tests set it)."""
    return datetime.now(UTC)


def _during_session(now: datetime, as_of: date, last_bars: Iterable[date]) -> dtime | None:
    """The New York minute of ``now`` when it falls within the regular session of ``as_of`` and some
    symbol's bars end on that day (then the bar is the session so far); None otherwise."""
    local = now.astimezone(ZoneInfo(EXCHANGE_TZ))
    moment = local.time().replace(second=0, microsecond=0)
    if local.date() != as_of or not SESSION_OPEN <= moment < SESSION_CLOSE or as_of not in set(last_bars):
        return None
    return moment


def record_snapshot(out_dir: str | os.PathLike[str], symbols: Iterable[str], start: date, end: date,
                    as_of: date | None = None, ticker_factory: TickerFactory | None = None) -> JSONObject:
    """Record real data for ``symbols`` from ``start`` to ``end`` (inclusive) into ``out_dir``.

    Everything is fetched before anything is written, so a failure leaves ``out_dir`` untouched.
    Recorded on the as-of date while its session is open (by :func:`wall_clock`), each bar of
    that date is the session so far and the manifest says when (``during_session``). Returns the
    manifest written.
    """
    as_of = as_of or end
    if start > end or as_of < start:
        raise ValueError(f"empty date range: start {start}, end {end}, as-of {as_of}")
    provider = LiveProvider(symbols, as_of=min(end, as_of), ticker_factory=ticker_factory)
    data: list[SymbolData] = []
    before_open = False
    recorded = wall_clock()
    for symbol in provider.symbols():
        # recorded before the open on an ex-dividend date, yfinance ends the history with the day's
        # dividend in a row of NaN prices: a pending event row, kept apart from the bars
        raw, pending = split_pending(_raw_for_snapshot(symbol, provider.history_unadjusted(symbol), start,
                                                       provider.as_of))
        before_open = before_open or any(ts.date() == provider.as_of for ts in pd.DatetimeIndex(pending.index))
        yearly = provider.income_stmt(symbol, "yearly")
        quarterly = provider.income_stmt(symbol, "quarterly")
        data.append(SymbolData(
            symbol=symbol, history=raw,
            income_yearly=None if yearly.empty else yearly,
            income_quarterly=None if quarterly.empty else quarterly,
            info=provider.info(symbol), fast_info=provider.fast_info(symbol),
            pending=None if pending.empty else pending))
    version = _yfinance_version()
    during = None if before_open else _during_session(
        recorded, provider.as_of, (pd.DatetimeIndex(item.history.index)[-1].date() for item in data))
    origin = SnapshotOrigin(as_of=provider.as_of, synthetic=False,
                            label=f"Recorded from Yahoo Finance via yfinance {version}",
                            generator=GENERATOR, generator_version=version, before_open=before_open,
                            during_session=during)
    return write_snapshot(
        out_dir, data, origin,
        extra={"start": start.isoformat(), "end": end.isoformat(),
               "recorded_at": recorded.astimezone(UTC).replace(microsecond=0).isoformat()})
