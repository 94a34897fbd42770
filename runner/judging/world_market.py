"""The market of a hidden world, in memory, and the transformations that make one world from another:
truncating it at an earlier as-of date (with what was known then: bars, reported statements,
quotes and statement fields re-derived), and moving closes (spikes on chosen sessions, reshaped
tails), every bar kept consistent and ``Adj Close`` recomputed the way Yahoo adjusts; and the shapes
recorded data have that every world carries (:func:`recorded_shapes`: prices beyond cents, a missing
session, a trading halt of flat bars, a recent split).
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import date, datetime, timedelta
from datetime import time as dtime
from typing import Literal

import numpy as np
import pandas as pd

from finevo.jsontypes import JSONObject, JSONValue
from finevo.market.snapshot import (
    EXCHANGE_TZ,
    PRICED_COLUMNS,
    SESSION_OPEN,
    Snapshot,
    SymbolData,
    SymbolNotRecorded,
    auto_adjust,
    event_amounts,
)
from finevo.market.synthetic import quote_book
from runner.judging.world_calendar import EARLIER_YEARS
from runner.judging.world_calendar import sessions as deep_sessions

#: A statement column counts as reported this many days after its period ends (the default; an
#: ``as_of`` world draws its own lag from :data:`REPORTING_LAGS`).
REPORTING_LAG_DAYS = 45
#: The reporting lags an ``as_of`` world draws from (days): the quickest of the large companies
#: report their quarter two to three weeks after it ends (the big banks in two), others up to the 10-Q's
#: forty days, so "the newest quarter" is never a fixed lag before today. The world falls within a
#: week of such a report, its newest quarter at most four weeks old: a tool that assumes any longer lag
#: (a month, the 10-Q's forty days) reads the quarter before in every run, not only when a long draw
#: happens to fall short of its assumption. A shorter lag assumed is right for the companies a reused
#: tool meets.
REPORTING_LAGS = (14, 21)


# --------------------------------------------------------------------------- in-memory market
class Market:
    """A :class:`~finevo.market.provider.MarketProvider` over symbols held in memory."""

    def __init__(self, data: Iterable[SymbolData], as_of: date, *, before_open: bool = False,
                 during_session: dtime | None = None) -> None:
        self.data: dict[str, SymbolData] = {item.symbol: item for item in data}
        self._as_of = as_of
        #: On the as-of date before the open (:func:`before_the_open`), or at this time of its session
        #: (:func:`during_the_session`); a change of the market made after that builds a market after
        #: the close again.
        self.before_open = before_open
        self.during_session = during_session
        self._adjusted: dict[str, pd.DataFrame] = {}
        self._cut: dict[tuple[str, date], SymbolData | None] = {}

    @property
    def as_of(self) -> date:
        return self._as_of

    def symbols(self) -> list[str]:
        return list(self.data)

    def _item(self, symbol: str) -> SymbolData:
        item = self.data.get(symbol)
        if item is None:
            raise SymbolNotRecorded(symbol, "this world")
        return item

    def history(self, symbol: str) -> pd.DataFrame:
        return self.history_view(symbol).copy()

    def history_unadjusted(self, symbol: str) -> pd.DataFrame:
        return self._item(symbol).history.copy()

    def history_view(self, symbol: str, *, adjusted: bool = True) -> pd.DataFrame:
        """:meth:`history` or :meth:`history_unadjusted` without the copy (the replay shim cuts
        first and copies what it keeps): the frame held here. Never modify it."""
        if not adjusted:
            return self._item(symbol).history
        if symbol not in self._adjusted:
            # consolidated (auto_adjust's frame is): the windows the shim copies out of it cost half as much
            self._adjusted[symbol] = auto_adjust(self._item(symbol).history)
        return self._adjusted[symbol]

    def dividends(self, symbol: str) -> pd.Series:
        item = self._item(symbol)
        return event_amounts(item.history, item.pending, "Dividends")

    def pending(self, symbol: str) -> pd.DataFrame:
        """The pending event rows after ``symbol``'s last bar (:meth:`Snapshot.pending`)."""
        item = self._item(symbol)
        return item.history.iloc[:0].copy() if item.pending is None else item.pending.copy()

    def income_stmt(self, symbol: str, freq: Literal["yearly", "quarterly"] = "yearly") -> pd.DataFrame:
        item = self._item(symbol)
        frame = item.income_yearly if freq == "yearly" else item.income_quarterly
        return pd.DataFrame() if frame is None else frame.copy()

    def info(self, symbol: str) -> JSONObject:
        return dict(self._item(symbol).info)

    def fast_info(self, symbol: str) -> JSONObject:
        return dict(self._item(symbol).fast_info)

    def sessions(self) -> list[date]:
        """Every session date any symbol has, oldest first."""
        days: set[date] = set()
        for item in self.data.values():
            days.update(pd.DatetimeIndex(item.history.index).date)
        return sorted(days)

    def as_it_stood(self, symbols: Iterable[str], as_of: date) -> Market:
        """:func:`truncate` of ``symbols`` (of those held), each symbol's cut made once however often
        it is asked for: choosing a world's variant asks for the same session-late market for every
        task that reads the same symbols. For reading only: the cut data are shared."""
        data = []
        for symbol in symbols:
            if symbol not in self.data:
                continue
            if (symbol, as_of) not in self._cut:
                self._cut[(symbol, as_of)] = _cut(self.data[symbol], as_of, REPORTING_LAG_DAYS)
            item = self._cut[(symbol, as_of)]
            if item is not None:
                data.append(item)
        return Market(data, as_of)


def read_market(snapshot: Snapshot) -> Market:
    """Everything a snapshot records, in memory."""
    data = []
    for symbol in snapshot.symbols():
        yearly = snapshot.income_stmt(symbol, "yearly")
        quarterly = snapshot.income_stmt(symbol, "quarterly")
        pending = snapshot.pending(symbol)
        data.append(SymbolData(symbol, snapshot.history_unadjusted(symbol),
                               None if yearly.empty else yearly, None if quarterly.empty else quarterly,
                               snapshot.info(symbol), snapshot.fast_info(symbol), None if pending.empty else pending))
    return Market(data, snapshot.as_of, before_open=snapshot.before_open, during_session=snapshot.during_session)


# --------------------------------------------------------------------------- transformations
def _epoch_close(day: date) -> int:
    return int(pd.Timestamp(day.isoformat() + " 16:00", tz=EXCHANGE_TZ).timestamp())


def _last_year_start(raw: pd.DataFrame) -> int:
    """The position of the first bar of ``raw`` within a year of its last (the 52-week figures' span)."""
    return int(pd.DatetimeIndex(raw.index).searchsorted(raw.index[-1] - pd.DateOffset(years=1), side="right"))


def requote(item: SymbolData, as_of: date) -> SymbolData:
    """``info`` / ``fast_info`` price fields re-derived from the last bars (only fields already there)."""
    raw = item.history
    if len(raw) < 2:
        return item
    close = raw["Close"].to_numpy(dtype=float)
    high, low = raw["High"].to_numpy(dtype=float), raw["Low"].to_numpy(dtype=float)
    start = _last_year_start(raw)
    price, previous = float(close[-1]), float(close[-2])
    opened, volume = float(raw["Open"].iloc[-1]), int(raw["Volume"].iloc[-1])
    derived: dict[str, JSONValue] = {
        "lastPrice": price, "regularMarketPrice": price, "currentPrice": price,
        "previousClose": previous, "regularMarketPreviousClose": previous,
        "open": opened, "regularMarketOpen": opened,
        "dayHigh": float(high[-1]), "regularMarketDayHigh": float(high[-1]),
        "dayLow": float(low[-1]), "regularMarketDayLow": float(low[-1]),
        "volume": volume, "regularMarketVolume": volume, "lastVolume": volume,
        "regularMarketChange": round(price - previous, 4),
        "regularMarketChangePercent": round((price / previous - 1) * 100, 4) if previous else None,
        "regularMarketTime": _epoch_close(pd.DatetimeIndex(raw.index)[-1].date()),
        "fiftyTwoWeekHigh": float(high[start:].max()), "yearHigh": float(high[start:].max()),
        "fiftyTwoWeekLow": float(low[start:].min()), "yearLow": float(low[start:].min()),
        "fiftyDayAverage": round(float(close[-50:].mean()), 4),
        "twoHundredDayAverage": round(float(close[-200:].mean()), 4),
        **quote_book(price, volume),
    }

    def update(fields: JSONObject, shares_key: str) -> JSONObject:
        out = dict(fields)
        for key, value in derived.items():
            if key in out:
                out[key] = value
        shares = out.get(shares_key)
        if out.get("marketCap") is not None and isinstance(shares, (int, float)) and shares:
            out["marketCap"] = type(out["marketCap"])(round(price * shares))
        return out

    return replace(item, info=update(item.info, "sharesOutstanding"), fast_info=update(item.fast_info, "shares"))


#: The fields Yahoo sends with every ``info`` that a generated quote lacks.
_YAHOO_INFO_DEFAULTS: JSONObject = {"maxAge": 86400, "priceHint": 2}
#: Yahoo's float fields that carry single-precision noise (``1.2299957``), not a rounded decimal.
_SINGLE_PRECISION = ("regularMarketChange", "regularMarketChangePercent", "52WeekChange", "SandP52WeekChange",
                     "fiftyTwoWeekChangePercent")
#: Yahoo's own averages of volume: over its own sessions, not exactly the served bars' mean.
_YAHOO_VOLUME_AVERAGES = ("averageVolume", "averageVolume10days", "averageDailyVolume10Day",
                          "averageDailyVolume3Month")


def recorded_quotes(item: SymbolData) -> SymbolData:
    """``item`` with the quote fields no answer reads shaped as a recording of Yahoo shows them, not
    as the generator's formulas give them (which the bundled snapshot keeps, so a tool could tell any
    world from a recording by them): ``maxAge``/``priceHint`` present, the book drawn (a spread of 2 to
    15 basis points a side, sizes in lots drawn apart), the float a drawn share of the outstanding
    shares, ``marketCap`` and the volume averages Yahoo's own (within a few percent of the served
    bars'), changes in single precision, the last trade a few seconds after the close, and
    ``fast_info``'s averages unrounded, as yfinance computes them from the bars. Prices, volumes and
    dates an answer reads stay as they are. The draws are seeded by the symbol's own bars, so a world
    gives the same quotes in every process."""
    raw = item.history
    if len(raw) < 2 or not item.info:
        return item
    digest = hashlib.blake2b(f"{item.symbol}|{len(raw)}|{raw['Close'].iloc[-1]!r}|{raw.index[-1]}".encode(),
                             digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "big"))
    info, fast = {**_YAHOO_INFO_DEFAULTS, **item.info}, dict(item.fast_info or {})
    price = info.get("regularMarketPrice")
    if isinstance(price, (int, float)) and "bid" in info:
        below, above = rng.uniform(2e-4, 15e-4, 2)
        info.update(quote_book(price, 0, spread=(float(below), float(above))))
        info["bidSize"], info["askSize"] = (int(n) * 100 for n in rng.integers(1, 41, 2))
    shares = info.get("sharesOutstanding")
    if isinstance(shares, (int, float)) and shares:
        if "floatShares" in info:
            info["floatShares"] = int(shares * rng.uniform(0.95, 0.999))
        if isinstance(info.get("marketCap"), (int, float)):
            info["marketCap"] = int(info["marketCap"] * rng.uniform(0.99, 1.01))
    for key in _YAHOO_VOLUME_AVERAGES:
        if isinstance(info.get(key), (int, float)):
            info[key] = int(info[key] * rng.uniform(0.97, 1.03))
    for key in _SINGLE_PRECISION:
        if isinstance(info.get(key), float):
            info[key] = float(np.float32(info[key]))
    if isinstance(info.get("regularMarketTime"), int):
        info["regularMarketTime"] += int(rng.integers(0, 5))
    close = raw["Close"].to_numpy(dtype=float)
    year = close[_last_year_start(raw):]
    for key, value in (("fiftyDayAverage", close[-50:].mean()), ("twoHundredDayAverage", close[-200:].mean()),
                       ("yearChange", close[-1] / year[0] - 1.0 if len(year) else None)):
        if key in fast and value is not None:
            fast[key] = float(value)
    return replace(item, info=info, fast_info=fast)


def _reported(frame: pd.DataFrame | None, as_of: date, lag: int = REPORTING_LAG_DAYS) -> pd.DataFrame | None:
    if frame is None:
        return None
    ends = pd.DatetimeIndex(frame.columns)
    if ends.tz is not None:
        ends = ends.tz_localize(None)
    keep = (ends.normalize() + pd.Timedelta(days=lag)) <= pd.Timestamp(as_of)
    if keep.all():
        return frame
    return frame.loc[:, keep].copy() if keep.any() else None


def readjust(raw: pd.DataFrame) -> pd.DataFrame:
    """``raw`` with ``Adj Close`` recomputed from its own ``Close`` and ``Dividends`` the way Yahoo does:
    every bar before an ex-date scaled by ``1 - dividend / previous close``, only for the dividends
    the frame holds. A world that moves closes or drops later bars calls this, so its adjusted
    closes are exactly what the oracle's raw reading undoes (:func:`runner.judging.oracle._unadjust`) and
    what the sandbox's shim serves with ``auto_adjust=False``."""
    frame = raw.copy()
    if "Adj Close" not in frame.columns:
        return frame
    close = frame["Close"].to_numpy(dtype=float)
    dividends = (frame["Dividends"].to_numpy(dtype=float) if "Dividends" in frame.columns
                 else np.zeros(len(frame)))
    step = np.ones(len(frame))  # step[i - 1]: the factor the dividend of bar i puts on the bars before it
    paid = dividends[1:] != 0
    step[:-1][paid] = 1.0 - dividends[1:][paid] / close[:-1][paid]
    factor = np.cumprod(step[::-1])[::-1]
    frame["Adj Close"] = close * factor
    return frame


def _epoch_midnight(day: date) -> int:
    return int(pd.Timestamp(day.isoformat(), tz=EXCHANGE_TZ).timestamp())


def _filed(frame: pd.DataFrame | None) -> pd.DataFrame | None:
    """``frame`` without its unreported columns: a period is filed when its Net Income is reported
    (the oracle's "latest reported quarter"); yfinance shows a period that has ended but whose
    statement is not filed yet with every figure missing, or with a few (its revenue) and no Net
    Income. A statement without a Net Income row: the columns holding any figure."""
    if frame is None:
        return None
    if "Net Income" in frame.index:
        return frame.loc[:, frame.loc["Net Income"].notna().to_numpy()]
    return frame.loc[:, frame.notna().any(axis=0)]


def _newest(frame: pd.DataFrame | None) -> date | None:
    frame = _filed(frame)
    if frame is None or frame.empty:
        return None
    newest: date = max(pd.Timestamp(c).date() for c in frame.columns)
    return newest


def restate(item: SymbolData, as_of: date) -> SymbolData:
    """``info``'s statement and dividend fields re-derived from what is known at ``as_of`` (only the
    fields already there): the newest reported quarter and fiscal year, the trailing twelve months
    of revenue, net income and EPS, the last ex-dividend date and the trailing year's dividends. A
    world must not name a quarter whose statement it does not hold. A trailing figure one of whose
    four quarters' cells the statement leaves empty (a filed quarter Yahoo serves with a blank cell,
    :func:`runner.judging.world_statements.statement_shapes`) is kept as it was: Yahoo's own sums
    the filed figures, which the statement no longer shows."""
    info = dict(item.info)
    quarterly = _filed(item.income_quarterly)
    derived: dict[str, JSONValue] = {}
    newest_quarter, newest_year = _newest(quarterly), _newest(item.income_yearly)
    derived["mostRecentQuarter"] = _epoch_midnight(newest_quarter) if newest_quarter else None
    derived["lastFiscalYearEnd"] = _epoch_midnight(newest_year) if newest_year else None
    if quarterly is not None and not quarterly.empty:
        ttm = quarterly.loc[:, sorted(quarterly.columns, reverse=True)[:4]]
        for key, row, kind in (("totalRevenue", "Total Revenue", int), ("netIncomeToCommon", "Net Income", int),
                               ("trailingEps", "Diluted EPS", float)):
            if row in ttm.index:
                if ttm.loc[row].isna().any() and key in info:
                    continue  # a cell the statement leaves empty still counts in Yahoo's trailing figure: kept
                total = float(ttm.loc[row].sum())
                derived[key] = int(total) if kind is int else round(total, 2)
    raw = item.history
    if "Dividends" in raw.columns:
        paid = raw.loc[raw["Dividends"] != 0, "Dividends"]
        dates = pd.DatetimeIndex(paid.index)
        derived["exDividendDate"] = _epoch_midnight(dates[-1].date()) if len(paid) else None
        year_ago = pd.Timestamp(as_of) - pd.DateOffset(years=1)
        recent = paid[(dates.tz_localize(None) if dates.tz is not None else dates) > year_ago]
        derived["trailingAnnualDividendRate"] = round(float(recent.sum()), 4)
    for key, value in derived.items():
        if key in info:
            info[key] = value
    return SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly, info, item.fast_info)


def truncate(market: Market, as_of: date, lag: int = REPORTING_LAG_DAYS) -> Market:
    """The market as it stood at the close of ``as_of``: later bars and statements not reported
    ``lag`` days after their period ended gone.

    ``Adj Close`` is Yahoo's dividend adjustment, which only knows the dividends paid by then: it is
    recomputed from the kept bars (:func:`readjust`).
    """
    return Market([item for item in (_cut(item, as_of, lag) for item in market.data.values()) if item is not None],
                  as_of)


def _cut(item: SymbolData, as_of: date, lag: int) -> SymbolData | None:
    """One symbol as :func:`truncate` leaves it (None: no bar on or before ``as_of``)."""
    raw = item.history
    dates = pd.DatetimeIndex(raw.index).date
    cut = int((dates <= as_of).sum())
    if cut == 0:
        return None
    kept = readjust(raw.iloc[:cut])
    return requote(restate(SymbolData(item.symbol, kept, _reported(item.income_yearly, as_of, lag),
                                      _reported(item.income_quarterly, as_of, lag), item.info, item.fast_info),
                           as_of), as_of)


def close_after(market: Market, last: date) -> Market:
    """``market`` with no session after ``last`` up to its as-of day: the exchange closed, as after
    2001-09-10 (the as-of day's statements and dividends kept; the adjusted closes and quotes re-derived
    from the sessions left). The caller keeps dividends and splits off the closed sessions."""
    data = []
    for item in market.data.values():
        raw = item.history
        kept = int((pd.DatetimeIndex(raw.index).date <= last).sum())
        if kept == len(raw) or kept == 0:
            data.append(item)
            continue
        data.append(requote(SymbolData(item.symbol, readjust(raw.iloc[:kept]), item.income_yearly,
                                       item.income_quarterly, item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of)


def before_the_open(market: Market, day: date) -> tuple[Market, str]:
    """``market`` (cut at the close of the session ``day``: :func:`truncate`) as recorded on ``day``
    before the open, an ex-dividend date: ``day``'s bars not made yet, the adjusted closes and quotes
    re-derived from the sessions before it, and each symbol's dividend of ``day`` a *pending event row*
    (:mod:`finevo.market.snapshot`), which yfinance appends to ``history()`` with NaN prices: a tool
    that reads the last row's close answers NaN there (see :attr:`~runner.judging.worlds.WorldKind.PREOPEN`).
    Every other payer went ex-dividend on the session before (one more dividend, of the size of its
    latest), so its last bar carries a dividend: a tool that drops the rows with a dividend to be rid
    of the pending one drops that session too, and answers the one before it."""
    data, words, last = [], [], []
    for item in market.data.values():
        raw = item.history
        index = pd.DatetimeIndex(raw.index)
        if len(raw) < 3 or index[-1].date() != day:
            data.append(item)
            continue
        dividend = float(raw["Dividends"].iloc[-1])
        bars = raw.iloc[:-1].copy()
        paid = bars["Dividends"].to_numpy(dtype=float)
        if not dividend and paid.any() and paid[-1] == 0:
            bars.iloc[-1, bars.columns.get_loc("Dividends")] = float(paid[paid != 0][-1])
            last.append(f"{item.symbol} {index[-2].date()}")
        kept = requote(restate(replace(item, history=readjust(bars)), day), day)
        if dividend:
            row = raw.iloc[-1:].copy()
            for column in row.columns:
                row[column] = 0 if column == "Volume" else (np.nan if column in PRICED_COLUMNS else 0.0)
            row["Dividends"] = dividend
            kept.pending = row
            words.append(f"{item.symbol} {dividend:g}")
        data.append(kept)
    return (Market(data, day, before_open=True),
            f"as of {day} before the open" + (", ex-dividend: " + ", ".join(words) if words else "")
            + (", ex-dividend on the last session: " + ", ".join(last) if last else ""))


#: The least a ``midsession`` world's last trade lies from the day's open, its close and the session
#: before's close, and the book's midpoint from the last trade (fractions of the price): a tool that
#: reads any of those instead answers apart from it.
SESSION_APART = 1e-3
#: Minutes of the regular session (09:30 to 16:00).
SESSION_MINUTES = 390


def during_the_session(market: Market, moment: dtime, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` (cut at the close of its as-of day, a session: :func:`truncate`) as recorded while
    that session was open, at ``moment`` (New York time): each symbol's bar of the day the session
    so far, as Yahoo serves it then -- the open the day's, the last trade (``Close``) between the open
    and the day's close, drawn :data:`SESSION_APART` or more from the open, the close and the session
    before's close; the high and low the extremes so far, the volume a share of the day's that grows
    with the time elapsed (front-loaded, as trading is) -- and the quotes (``info``, ``fast_info``:
    last price, day range, volume, book, the last trade's time) re-derived from it, the book's
    midpoint a cent or more from the last trade. A tool that reads a quote the moment does not make
    (the book's midpoint during the session, the session before's close, the day's close) answers
    apart from the last trade there (see :attr:`~runner.judging.worlds.WorldKind.MIDSESSION`)."""
    day = market.as_of
    open_minutes = 60 * SESSION_OPEN.hour + SESSION_OPEN.minute
    elapsed = (60 * moment.hour + moment.minute - open_minutes) / SESSION_MINUTES
    stamp = int(pd.Timestamp(datetime.combine(day, moment), tz=EXCHANGE_TZ).timestamp())
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        if len(raw) < 3 or pd.DatetimeIndex(raw.index)[-1].date() != day:
            data.append(item)
            continue
        bar = raw.iloc[-1]
        opened, high, low, close = (float(bar[c]) for c in ("Open", "High", "Low", "Close"))
        previous = float(raw["Close"].iloc[-2])
        cents = _on_cents(raw)
        shift = float(rng.uniform(2, 8)) * SESSION_APART * (1 if rng.random() < 0.5 else -1)
        price = opened + (close - opened) * float(rng.uniform(0.25, 0.75)) + opened * shift
        bars = raw.copy()
        for _ in range(50):
            price = round(price, 2) if cents else price
            top = max(opened, price) + (max(high, opened, price) - max(opened, price)) * float(rng.uniform(0.2, 0.9))
            bottom = min(opened, price) - (min(opened, price) - min(low, opened, price)) * float(rng.uniform(0.2, 0.9))
            share = min(0.95, elapsed ** 0.7 * float(rng.uniform(0.9, 1.05)))
            volume = int(float(bar["Volume"]) * share)
            if item.symbol.startswith("^"):
                volume = volume // INDEX_VOLUME_STEP * INDEX_VOLUME_STEP
            last = bars.index[-1]
            bars.loc[last, ["Open", "High", "Low", "Close"]] = [
                opened, round(top, 2) if cents else top, round(bottom, 2) if cents else bottom, price]
            bars.loc[last, "Volume"] = volume
            now = requote(replace(item, history=readjust(bars)), day)
            info = {**now.info, "regularMarketTime": stamp - int(rng.integers(1, 30))} \
                if "regularMarketTime" in now.info else now.info
            now = replace(now, info=info)
            book = recorded_quotes(now).info
            mid = (float(book["bid"]) + float(book["ask"])) / 2 if "bid" in book and "ask" in book else None
            if all(abs(price - x) >= SESSION_APART * price for x in (opened, close, previous)) \
                    and (mid is None or abs(mid - price) >= 0.01):
                break
            price *= 1 + 3 * SESSION_APART
        else:  # pragma: no cover - 50 steps of 0.3 % always leave every one of four points behind
            raise AssertionError(f"{item.symbol}: no last trade apart from the open, close and book")
        data.append(now)
        words.append(f"{item.symbol} {price:.2f}")
    return (Market(data, day, during_session=moment),
            f"as of {day} {moment:%H:%M} during the session, last trades: " + ", ".join(words))


#: How far a ``gap`` world moves each stock's last session from the close before (a fraction, drawn
#: per stock, up or down): an earnings day, a buyout, a failed trial. Recorded stocks move so far in a
#: session several times a year somewhere in any broad list; an index or a fund does not.
GAP_MOVES = (0.18, 0.30)
#: The gap session's volume, in multiples of the session's own (drawn): such a day trades several times
#: the usual.
GAP_VOLUMES = (2.5, 5.0)


def gapped(market: Market, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` with every stock's last session a gap (:data:`GAP_MOVES`) from the close before: the
    whole bar moved by one factor (its shape kept, on the cent grid where the bars are), its volume
    several times its own (:data:`GAP_VOLUMES`), the adjusted closes and quotes re-derived; indices and
    funds as they are. Every other stock (the first, the third... in symbol order) traded its gap
    session as a single print, Open, High, Low and Close the one price: a stock halted on news all day
    that reopens in the closing cross. A tool that refuses a latest price far from the close before as a
    bad tick, or a bar whose High equals its Low as a feed placeholder (or answers the close before
    instead), fails there (see :attr:`~runner.judging.worlds.WorldKind.GAP`)."""
    stocks = equities(market)
    single = set(sorted(stocks)[::2])
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        if item.symbol not in stocks or len(raw) < 3:
            data.append(item)
            continue
        move = float(rng.uniform(*GAP_MOVES)) * (1 if rng.random() < 0.5 else -1)
        close = raw["Close"].to_numpy(dtype=float)
        ratio = close[-2] * (1 + move) / close[-1]
        bars = raw.copy()
        last = bars.index[-1]
        prices = bars.loc[last, ["Open", "High", "Low", "Close"]].to_numpy(dtype=float) * ratio
        if item.symbol in single:
            prices = np.full(4, prices[3])
        bars.loc[last, ["Open", "High", "Low", "Close"]] = np.round(prices, 2) if _on_cents(raw) else prices
        bars.loc[last, "Volume"] = int(float(bars.loc[last, "Volume"]) * rng.uniform(*GAP_VOLUMES))
        data.append(requote(replace(item, history=readjust(bars)), market.as_of))
        words.append(f"{item.symbol} {move:+.1%}" + (" (a single print)" if item.symbol in single else ""))
    return Market(data, market.as_of), "a gap on the last session: " + ", ".join(words)


@dataclass(frozen=True)
class Spike:
    """Session ``back`` (1 = the latest) made a new high (``up``) or low of Close, ``strength`` beyond
    the extreme of the closes around it (a fraction: 0.04 = 4 % above the highest)."""

    back: int
    up: bool
    strength: float

    def label(self) -> str:
        where = "latest session" if self.back == 1 else f"session -{self.back}"
        return f"{where} {'high' if self.up else 'low'} {'+' if self.up else '-'}{self.strength:.1%}"


#: Closes on either side of a spike that its new extreme is measured against.
_SPIKE_REACH = 400


def perturb(market: Market, spikes: Sequence[Spike], symbols: Iterable[str]) -> Market:
    """``market`` with ``spikes`` placed on each of ``symbols`` (the others are left as they are)."""
    chosen = set(symbols)
    data = []
    for item in market.data.values():
        if item.symbol not in chosen or not spikes:
            data.append(item)
            continue
        close = item.history["Close"].to_numpy(dtype=float)
        n = len(close)
        ratios = np.ones(n)
        for spike in spikes:
            i = n - spike.back
            if i < 1:
                continue
            around = close[max(0, i - _SPIKE_REACH):n]
            target = around.max() * (1 + spike.strength) if spike.up else around.min() * (1 - spike.strength)
            ratios[i] = target / close[i]
        data.append(scaled(item, ratios, market.as_of))
    return Market(data, market.as_of)


def scaled(item: SymbolData, ratios: np.ndarray, as_of: date | None) -> SymbolData:
    """``item`` with each whole bar scaled by its ratio (Open, High, Low and Close alike, so a bar keeps
    its shape around its new close; the volumes stay), the adjusted closes recomputed, and with ``as_of``
    its quotes re-derived from the bars."""
    raw = item.history.copy()
    for column in ("Open", "High", "Low", "Close"):
        raw[column] = raw[column].to_numpy(dtype=float) * ratios
    moved = SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly, item.info,
                       item.fast_info)
    return requote(moved, as_of) if as_of is not None else moved


def with_symbol(market: Market, item: SymbolData) -> Market:
    """``market`` with ``item`` in place of its symbol's data (the others as they are)."""
    return Market([item if symbol == item.symbol else other for symbol, other in market.data.items()], market.as_of)


#: The stock whose closes the ``seed`` world raises session after session up to its as-of day
#: (:func:`rising_tail`): the RSI task's own subject (calc_001), so every run asks its RSI there.
RISING_SYMBOL = "AAPL"
#: Sessions at the end of the ``seed`` world's history whose closes all rise (:func:`rising_tail`): more
#: than any RSI window read from the last ``days`` closes the benchmark asks (30 sessions, 29 changes).
RISING_SESSIONS = 36
#: Sessions the rally ``listing`` world's stock has traded, every close above the one before (a fund
#: that has never closed lower in its nineteen months, an accumulating cash fund's NAV): more than any
#: common warm-up of the task's own RSI asks (ten times its window, a year of closes), so every reading
#: answers there and a tool that finds no answer where the average loss is zero fails.
RALLY_SESSIONS = 400
#: The daily gain of each of those sessions (a fraction, drawn uniformly): far above the moves that
#: take prices off the cent grid (:data:`FINE_SPREAD`), so every change stays a gain.
RISING_GAINS = (0.003, 0.012)


def rising_tail(market: Market, rng: np.random.Generator, symbol: str = RISING_SYMBOL,
                sessions: int = RISING_SESSIONS, *, down: bool = False, beyond: int = 0) -> tuple[Market, str]:
    """``market`` with the last ``sessions`` closes of ``symbol`` each above the one before (a run of
    up-closes up to the as-of day: a stock in a steady rally; with ``down``, each below it: a slide),
    every bar scaled whole to its new close, so High, Low and Open keep their places around it (a
    stochastic's RSV still moves) and the volumes stay. An RSI over a window of gains only is 100 (no
    loss to divide by): a tool that guards the zero average loss with ``rs = 0`` answers 0 there, and
    fails. ``beyond``: the moves made steeper where needed (every one by the same factor) for the
    latest close to lie :data:`RECORD_MARGIN` beyond every close of the ``beyond`` sessions before the
    run as well (:func:`record_tails`)."""
    item = market.data.get(symbol)
    if item is None or len(item.history) <= sessions + 1:
        return market, ""
    raw = item.history.copy()
    close = raw["Close"].to_numpy(dtype=float)
    n = len(close)
    sign = -1.0 if down else 1.0
    steps = np.log1p(sign * rng.uniform(RISING_GAINS[0], RISING_GAINS[1], sessions))
    start = close[n - sessions - 1]
    if beyond:
        before = close[max(0, n - sessions - 1 - beyond):n - sessions]
        extreme = before.min() * (1 - RECORD_MARGIN) if down else before.max() * (1 + RECORD_MARGIN)
        steps *= max(1.0, float(np.log(extreme / start) / steps.sum()))
    target = close.copy()
    target[n - sessions:] = start * np.exp(np.cumsum(steps))
    first = pd.Timestamp(raw.index[n - sessions]).date()
    return (with_symbol(market, scaled(item, target / close, market.as_of)),
            f"{symbol} closes {'falling' if down else 'rising'} every session from {first}")


def own_moves(market: Market, before: Market, symbol: str, sessions: int) -> Market:
    """``market`` with the last ``sessions`` closes of ``symbol`` moving as they do in ``before`` (the
    market it was reshaped from), each bar scaled whole to follow the close before them: a run
    (:func:`rising_tail`) that has turned, the stock's own moves after it."""
    item, was = market.data.get(symbol), before.data.get(symbol)
    if item is None or was is None or not 0 < sessions < len(item.history):
        return market
    close = item.history["Close"].to_numpy(dtype=float)
    own = was.history["Close"].to_numpy(dtype=float)
    n = len(close)
    target = close.copy()
    target[n - sessions:] = close[n - sessions - 1] * own[n - sessions:] / own[n - sessions - 1]
    return with_symbol(market, scaled(item, target / close, market.as_of))


#: The stocks whose last closes the ``seed`` world moves one way session after session until the
#: latest lies beyond every close of a year before it (:func:`record_tails`), each with ``down``: the
#: subjects of the benchmark's measures of an extreme over a window -- the highest close (fetch_008,
#: TSLA: a new high) and the max drawdown (calc_007, MSFT: a new low, the drawdown's trough) --, so
#: the latest session alone decides both answers. The ``seed`` world's as-of day is a session (the
#: ``as_of`` and ``edge`` worlds' are closed days): a tool that drops the bar dated that day
#: (yfinance's exclusive ``end=today``) answers another value there.
RECORD_TAILS: tuple[tuple[str, bool], ...] = (("TSLA", False), ("MSFT", True))
#: Sessions before a record tail that its latest close lies beyond (a year: every window the
#: benchmark's extreme measures and their probes read).
RECORD_REACH = 252
#: How far beyond them (a fraction of the extreme).
RECORD_MARGIN = 0.01


def record_tails(market: Market, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` with each of :data:`RECORD_TAILS` ending on a record close: the last
    :data:`RISING_SESSIONS` closes rising (or falling) to :data:`RECORD_MARGIN` beyond every close of the
    :data:`RECORD_REACH` sessions before them (:func:`rising_tail`)."""
    words = []
    for symbol, down in RECORD_TAILS:
        market, said = rising_tail(market, rng, symbol, down=down, beyond=RECORD_REACH)
        words.append(said)
    return market, "; ".join(w for w in words if w)


#: Sessions back from the latest among which a world's extra dividend is paid.
_EXTRA_DIVIDEND_REACH = (10, 250)
#: The special dividend of :func:`extra_dividend`, in multiples of the payer's latest one (drawn):
#: a heuristic that drops payments a few times the usual one as feed errors meets real ones (Costco's
#: specials have been more than ten times its quarterly dividend).
SPECIAL_DIVIDEND_SIZES = (4.0, 12.0)


def extra_dividend(market: Market, rng: np.random.Generator, avoid: Iterable[date] = ()) -> tuple[Market, str]:
    """``market`` with one more (special) dividend for every symbol that pays dividends, on a session
    drawn by ``rng`` within the last year that holds none and is not in ``avoid`` (the whole-year
    edges, where the accepted readings of "the last N years" disagree), a special one: its latest
    dividend times a factor drawn from :data:`SPECIAL_DIVIDEND_SIZES`, to the cent. The count of
    dividends a year is not a constant a tool may assume, nor their size: a tool that drops a payment
    far above the others as a feed error drops a real one. ``Adj Close`` and ``info``'s dividend
    fields follow."""
    shunned = set(avoid)
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        paid = raw["Dividends"].to_numpy(dtype=float) if "Dividends" in raw.columns else np.zeros(len(raw))
        low, high = _EXTRA_DIVIDEND_REACH
        days = pd.DatetimeIndex(raw.index).date
        free = [i for i in range(max(1, len(raw) - high), len(raw) - low) if paid[i] == 0 and days[i] not in shunned]
        if not paid.any() or not free:
            data.append(item)
            continue
        at = int(rng.choice(free))
        amount = round(float(paid[paid != 0][-1]) * float(rng.uniform(*SPECIAL_DIVIDEND_SIZES)), 2)
        raw = raw.copy()
        raw.iloc[at, raw.columns.get_loc("Dividends")] = amount
        words.append(f"{item.symbol} {pd.Timestamp(raw.index[at]).date()} ({amount:g})")
        data.append(restate(SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly,
                                       item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of), ("an extra dividend: " + ", ".join(words)) if words else ""


def _quarter_after(day: date) -> date:
    """The end of the quarter following the one that ends on (or near: a 52/53-week date) ``day``:
    the month end three months after the month end nearest ``day`` (a company's quarters need not
    end with the calendar's: one ending in October is followed by one ending in January)."""
    stamp = pd.Timestamp(day)
    after, before = stamp + pd.offsets.MonthEnd(0), stamp - pd.offsets.MonthEnd(1)
    nearest = after if (after - stamp) <= (stamp - before) else before
    later: date = (nearest + pd.offsets.MonthEnd(3)).date()
    return later


#: The rows an unfiled quarter's column already shows (the revenue announced first), and their growth
#: over the quarter before it.
UNFILED_ROWS = ("Total Revenue", "Operating Revenue")
UNFILED_REVENUE_GROWTH = 1.02


def unfiled_quarter(market: Market) -> tuple[Market, str]:
    """``market`` with, for every symbol with quarterly statements, a column for the quarter after
    its newest one when that quarter has ended by the as-of date, holding its revenue rows (:data:`UNFILED_ROWS`, the
    quarter before's, grown by :data:`UNFILED_REVENUE_GROWTH`) and every other figure missing, Net
    Income too: yfinance shows such a column between a quarter's end and its filing, empty or with
    the few figures announced first. "The latest quarter" is the newest *reported* one, the newest
    whose Net Income is reported (the oracle skips the column; :func:`runner.judging.oracle.net_income`),
    so a tool that takes the newest column unchecked answers NaN, and one that takes the newest
    column holding any figure raises. Nothing else moves (``info`` names the newest reported
    quarter, as before)."""
    data, words = [], []
    for item in market.data.values():
        frame = item.income_quarterly
        newest = _newest(frame)
        if frame is None or newest is None:
            data.append(item)
            continue
        after = _quarter_after(newest)
        if after > market.as_of or any(pd.Timestamp(c).date() >= after for c in frame.columns):
            data.append(item)
            continue
        figures = np.full(len(frame.index), np.nan)
        before = frame[max(_filed(frame).columns, key=pd.Timestamp)].to_numpy(dtype=float)  # type: ignore[union-attr]
        revenue = np.array([str(row) in UNFILED_ROWS for row in frame.index])
        figures[revenue] = before[revenue] * UNFILED_REVENUE_GROWTH
        blank = pd.DataFrame({pd.Timestamp(after): figures}, index=frame.index)
        grown = pd.concat([blank, frame], axis=1)  # newest first, as yfinance
        words.append(f"{item.symbol} {after}")
        data.append(SymbolData(item.symbol, item.history, item.income_yearly, grown, item.info, item.fast_info))
    return Market(data, market.as_of), ("an unreported newest quarter: " + ", ".join(words)) if words else ""


#: A window of this many whole years spans two Feb 29ths (from an as-of day in a leap year after
#: Feb 29): the shortest window where 365 days a year starts two days after the calendar's first
#: day, with a session strictly between the two (below 5 years they are at most one day apart, the
#: gap the accepted readings of the edge already span). The probes ask for it, the ``leap`` world
#: holds the data (:mod:`runner.judging.worlds`).
LEAP_YEARS = 5

#: Whole years back from the as-of date whose window edges :func:`edge_dividends` crowds.
EDGE_YEARS = (1, 2, 3)
#: How far (days) from an edge a dividend may be moved onto the sessions beside it (a quarter: a
#: quarterly payer always has one on each side).
_EDGE_REACH = 95


def edge_dividends(market: Market, years: Sequence[int] = EDGE_YEARS) -> tuple[Market, str]:
    """``market`` with, for every dividend-paying symbol and every window of ``years`` whole years
    back from the as-of date, the nearest ex-date before the window's first day moved onto the last
    session before it, and the nearest one after it onto the first session after it (each only when
    within :data:`_EDGE_REACH` days; never onto the first day itself, where the two accepted readings
    of "the last N years" disagree). Both accepted readings keep the one and drop the other, so a
    window that starts a day or two early or late -- 252 sessions a year, 365 days, a month rounded
    -- answers wrong. Ex-dates drift by days from year to year in recorded data too; the count of
    dividends stays the same. ``Adj Close`` and ``info``'s dividend fields follow."""
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        if not pays_dividends(raw):
            data.append(item)
            continue
        raw = raw.copy()
        days = pd.DatetimeIndex(raw.index).date
        column = raw.columns.get_loc("Dividends")
        moved = []
        for n in years:
            edge = (pd.Timestamp(market.as_of) - pd.DateOffset(years=n)).date()
            if days[0] >= edge:
                continue
            paid = raw["Dividends"].to_numpy(dtype=float) != 0
            before = [i for i in range(len(days)) if days[i] < edge]
            after = [i for i in range(len(days)) if days[i] > edge]
            for side, target in ((before, before[-1] if before else None), (after, after[0] if after else None)):
                if target is None or paid[target]:
                    continue
                near = [i for i in side if paid[i] and abs((days[i] - edge).days) <= _EDGE_REACH]
                if not near:
                    continue
                source = min(near, key=lambda i: abs((days[i] - edge).days))
                amount = float(raw.iloc[source, column])
                raw.iloc[source, column] = 0.0
                raw.iloc[target, column] = amount
                paid[source], paid[target] = False, True
                moved.append(f"{days[source]}->{days[target]}")
        if not moved:
            data.append(item)
            continue
        words.append(f"{item.symbol} " + ", ".join(moved))
        data.append(restate(SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly,
                                       item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of), ("ex-dates beside whole-year edges: " + "; ".join(words)) if words else ""


# --------------------------------------------------------------------------- shapes recorded data have
#: Sessions a trading halt lasts (flat bars: Open = High = Low = Close at the last traded price, Volume
#: 0, as Yahoo shows a halted stock): at least as long as any stochastic window a tool is asked for.
HALT_SESSIONS = (20, 28)
#: Sessions back from the latest (1 = the latest) where a halt may end: older than the windows read
#: from the latest session, inside the history any indicator with a warm-up reads.
HALT_BACK = (62, 150)
#: Sessions back from the latest among which a symbol's missing session lies.
GAP_BACK = (3, 25)
#: Sessions back from the latest among which a split lies (inside the windows a task reads).
SPLIT_BACK = (2, 12)
#: Split ratios drawn (new shares per old share).
SPLIT_RATIOS = (2.0, 3.0, 4.0, 5.0, 10.0, 20.0)
#: Spread (relative, one standard deviation) of the factor that moves a bar quoted in cents off the
#: cent grid: a few hundredths of a cent to a few cents, all four prices of a bar alike.
FINE_SPREAD = 1e-4


def equities(market: Market) -> list[str]:
    """The symbols quoted as stocks (halts, missing sessions and splits are theirs, not an index's)."""
    return [s for s, item in market.data.items() if item.info.get("quoteType") == "EQUITY"]


def pays_dividends(raw: pd.DataFrame) -> bool:
    """Whether the bars ``raw`` hold a dividend (an index, a stock that pays nothing: no)."""
    return "Dividends" in raw.columns and bool((raw["Dividends"].to_numpy(dtype=float) != 0).any())


def _events(raw: pd.DataFrame) -> np.ndarray:
    """Whether each bar carries a dividend or a split."""
    out = np.zeros(len(raw), dtype=bool)
    for column in ("Dividends", "Stock Splits"):
        if column in raw.columns:
            out |= raw[column].to_numpy(dtype=float) != 0
    return out


def _on_cents(raw: pd.DataFrame) -> bool:
    prices = raw[["Open", "High", "Low", "Close"]].to_numpy(dtype=float)
    return bool(np.allclose(prices * 100.0, np.round(prices * 100.0), rtol=0.0, atol=1e-6))


def fine_prices(market: Market, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` with every symbol quoted on the cent grid moved off it: each bar's four prices
    scaled by one factor near 1 (so ``Low <= Open, Close <= High`` and a flat bar stay as they are).
    yfinance's prices are floats with many digits (``189.97999572753906``; adjusted closes, yields,
    currencies and sub-dollar stocks carry more than cents): a value rounded to cents is not the close."""
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        if len(raw) == 0 or not _on_cents(raw):
            data.append(item)
            continue
        raw = raw.copy()
        factor = np.exp(rng.normal(0.0, FINE_SPREAD, len(raw)))
        for column in ("Open", "High", "Low", "Close"):
            raw[column] = raw[column].to_numpy(dtype=float) * factor
        words.append(item.symbol)
        data.append(SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly, item.info,
                               item.fast_info))
    return Market(data, market.as_of), ("prices off the cent grid: " + ", ".join(words)) if words else ""


#: How far a world moves each symbol's price levels (:func:`relevel`): the factor (or, drifting, each
#: end of it) drawn apart from 1 by this much at least and at most, in log: no world's bars lie near
#: the bundled snapshot's (or the generator's year-end anchors), which a tool could recognise.
LEVEL_MOVE = (0.05, 0.25)
#: The log-spread of the one factor a world scales each symbol's volumes by (:func:`relevel`).
VOLUME_MOVE = 0.3
#: Yahoo serves an index's volume in round ten thousands.
INDEX_VOLUME_STEP = 10_000


def relevel(market: Market, rng: np.random.Generator, *, cents: bool, drift: bool) -> Market:
    """``market`` with every symbol's levels moved: its bars scaled by a factor :data:`LEVEL_MOVE` up or
    down (an index and the funds quoted beside it share one: SPY stays a tenth of ^GSPC), its dividends
    by the factor's mean (equal amounts stay equal), its volumes by one factor of their own
    (:data:`VOLUME_MOVE`; an index's in steps of :data:`INDEX_VOLUME_STEP`); ``drift``: the factor
    drifting smoothly in log from one end of the history to the other, each end drawn so (a history
    generated around fixed year-end anchors then ends no year on one; a history a world lengthens
    back from its own moves keeps one factor, or the drift would compound over the decades drawn);
    ``cents``: prices and dividends rounded to cents, as recorded raw bars are. A world built from
    the bundled snapshot, or generated around its anchors, would otherwise hold bars a tool can
    recognise as the benchmark's own (a close on a known day within a cent), and take its "right"
    path only there."""
    low, high = LEVEL_MOVE
    shared: dict[str, tuple[float, float]] = {}
    data = []
    for item in market.data.values():
        raw = item.history
        if len(raw) < 2:
            data.append(item)
            continue
        kind = str((item.info or {}).get("quoteType") or "")
        group = "index" if kind in ("INDEX", "ETF") else item.symbol
        if group not in shared:
            ends = [float(rng.choice((-1.0, 1.0)) * rng.uniform(low, high)) for _ in range(2)]
            shared[group] = (ends[0], ends[1] if drift else ends[0])
        first, last = shared[group]
        logs = np.linspace(first, last, len(raw))
        factor = np.exp(logs)
        raw = raw.copy()
        for column in ("Open", "High", "Low", "Close"):
            moved = raw[column].to_numpy(dtype=float) * factor
            raw[column] = np.round(moved, 2) if cents else moved
        if "Dividends" in raw.columns:
            paid = raw["Dividends"].to_numpy(dtype=float) * float(np.exp(logs.mean()))
            raw["Dividends"] = np.round(paid, 2) if cents else paid
        volume = raw["Volume"].to_numpy(dtype=float) * float(np.exp(rng.normal(0.0, VOLUME_MOVE)))
        step = INDEX_VOLUME_STEP if kind == "INDEX" else 1
        raw["Volume"] = (np.round(volume / step) * step).astype(np.int64)
        data.append(requote(SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly,
                                       item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of)


#: The log-spread of the one factor :func:`fine_dividends` scales a payer's dividends by.
FINE_DIVIDEND_SPREAD = 0.02


def fine_dividends(market: Market, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` with every payer's dividends moved off the cent grid: each stock's amounts scaled by
    one factor near 1 (equal amounts stay equal). Yahoo serves dividends with many digits: split-adjusted
    ones (a 0.47 declared before a 7:1 and a 4:1 split is served as 0.0167857...), an ADR's converted from
    another currency: an amount rounded to cents, or to four decimals, is not the dividend."""
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        paid = raw["Dividends"].to_numpy(dtype=float) if "Dividends" in raw.columns else np.zeros(0)
        if not (paid != 0).any():
            data.append(item)
            continue
        raw = raw.copy()
        factor = float(np.exp(rng.normal(0.0, FINE_DIVIDEND_SPREAD)))
        raw["Dividends"] = paid * factor
        words.append(f"{item.symbol} x{factor:.6f}")
        data.append(SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly, item.info,
                               item.fast_info))
    return Market(data, market.as_of), ("dividends off the cent grid: " + ", ".join(words)) if words else ""


def _free_sessions(raw: pd.DataFrame, backs: range, avoid: set[int]) -> list[int]:
    """Bar positions ``backs`` sessions back (1 = the latest) holding no dividend or split, not in ``avoid``."""
    events = _events(raw)
    n = len(raw)
    return [n - b for b in backs if 1 <= b < n and not events[n - b] and b not in avoid]


def missing_sessions(market: Market, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` with one recent session missing from each stock, a different one for each (a stock
    halted for the day has no bar, a listing on another calendar trades other days): the symbols'
    dates are not aligned, so a measure of two symbols must join them on their dates."""
    data, words, taken = [], [], set()
    for item in market.data.values():
        raw = item.history
        if item.symbol not in equities(market):
            data.append(item)
            continue
        dates = pd.DatetimeIndex(raw.index).date
        choices = [i for i in _free_sessions(raw, range(GAP_BACK[0], GAP_BACK[1] + 1), set())
                   if dates[i] not in taken]
        if not choices:
            data.append(item)
            continue
        at = int(rng.choice(choices))
        taken.add(dates[at])
        words.append(f"{item.symbol} {dates[at]}")
        data.append(SymbolData(item.symbol, raw.drop(raw.index[at]), item.income_yearly, item.income_quarterly,
                               item.info, item.fast_info))
    return Market(data, market.as_of), ("a session missing: " + ", ".join(words)) if words else ""


def halts(market: Market, rng: np.random.Generator, avoid: Iterable[int] = ()) -> tuple[Market, str]:
    """``market`` with one trading halt in each stock: :data:`HALT_SESSIONS` flat bars (Open = High =
    Low = Close at the last traded close, Volume 0) ending :data:`HALT_BACK` sessions back, on no
    dividend, split or session in ``avoid`` (sessions back where a world places spikes). A range of
    High - Low of zero is real data (a halted stock, a thin fund quoted once a day); a stochastic
    oscillator must not divide by it."""
    skip = set(avoid)
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        length = int(rng.integers(HALT_SESSIONS[0], HALT_SESSIONS[1] + 1))
        n, events = len(raw), _events(raw)
        ends = [b for b in range(HALT_BACK[0], HALT_BACK[1] + 1)
                if b + length < n and not skip.intersection(range(b, b + length + 1))
                and not events[n - b - length:n - b + 1].any()]
        if item.symbol not in equities(market) or not ends:
            data.append(item)
            continue
        end = n - int(rng.choice(ends))  # position of the last halted bar
        first = end - length + 1
        raw = raw.copy()
        price = float(raw["Close"].iloc[first - 1])
        for column in ("Open", "High", "Low", "Close"):
            raw.iloc[first:end + 1, raw.columns.get_loc(column)] = price
        raw.iloc[first:end + 1, raw.columns.get_loc("Volume")] = 0
        dates = pd.DatetimeIndex(raw.index).date
        words.append(f"{item.symbol} {dates[first]}..{dates[end]}")
        data.append(SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly, item.info,
                               item.fast_info))
    return Market(data, market.as_of), ("a trading halt (flat bars): " + ", ".join(words)) if words else ""


#: The stocks the ``seed`` world halts up to its as-of day (:func:`recent_halts`): the subjects of the
#: tasks that read a recent range or the latest bar, KDJ's (calc_006) and Bollinger's (calc_003).
RECENT_HALT_SYMBOLS = ("AAPL", "GOOGL")
#: Sessions such a halt lasts (the last one the as-of day's): longer than KDJ's 9-session range, so
#: the latest RSVs read a range of zero; short of 14, so an RSI window of 14 changes still moves.
RECENT_HALT_SESSIONS = (10, 13)


def recent_halts(market: Market, rng: np.random.Generator,
                 symbols: Sequence[str] = RECENT_HALT_SYMBOLS) -> tuple[Market, str]:
    """``market`` with each of ``symbols`` halted over its last :data:`RECENT_HALT_SESSIONS` sessions,
    the latest included (a halt still in force on the as-of day): flat bars at the last traded close,
    Volume 0, as :func:`halts` draws them, none over a dividend or a split (the halt starts after the
    last one, shorter when it must). A KDJ reads a range of zero over its latest sessions (RSV 50,
    not the RSV before the halt carried forward), a latest bar of Volume 0 is still the latest
    session (a tool that drops such bars reads a stale window)."""
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        length = int(rng.integers(RECENT_HALT_SESSIONS[0], RECENT_HALT_SESSIONS[1] + 1))
        n = len(raw)
        if item.symbol not in symbols or n < length + 2:
            data.append(item)
            continue
        events = np.flatnonzero(_events(raw))
        length = min(length, n - 1 - int(events[-1])) if len(events) else length
        if length < 1:
            data.append(item)
            continue
        first = n - length
        raw = raw.copy()
        price = float(raw["Close"].iloc[first - 1])
        for column in ("Open", "High", "Low", "Close"):
            raw.iloc[first:, raw.columns.get_loc(column)] = price
        raw.iloc[first:, raw.columns.get_loc("Volume")] = 0
        dates = pd.DatetimeIndex(raw.index).date
        words.append(f"{item.symbol} {dates[first]}..{dates[-1]}")
        data.append(requote(SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly,
                                       item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of), ("a trading halt up to the as-of day: " + ", ".join(words)) if words else ""


#: The stock the ``seed`` world lists at a penny stock's price (:func:`penny_stock`): the one nearly every
#: task of the benchmark asks, its own symbol or a probe's.
PENNY_SYMBOL = "AAPL"
#: Its latest close there (dollars, drawn): below a few dollars, where a value rounded to four decimals
#: (up to 5e-5 off) is beyond a relative tolerance of 1e-5, as on any stock that trades under $5.
PENNY_LEVELS = (0.4, 2.5)


def penny_stock(market: Market, rng: np.random.Generator, symbol: str = PENNY_SYMBOL) -> tuple[Market, str]:
    """``market`` with ``symbol``'s whole history scaled to a latest close drawn in :data:`PENNY_LEVELS`:
    its bars and its dividends by one factor (its returns, yields and every ratio kept), its volumes
    and statements as they were, the adjusted closes and quotes re-derived. A stock far below the
    others' levels: a value rounded to a few decimals, harmless at $200, is off there."""
    item = market.data.get(symbol)
    if item is None or len(item.history) < 2:
        return market, ""
    raw = item.history.copy()
    level = float(rng.uniform(*PENNY_LEVELS))
    factor = level / float(raw["Close"].iloc[-1])
    for column in ("Open", "High", "Low", "Close"):
        raw[column] = raw[column].to_numpy(dtype=float) * factor
    if "Dividends" in raw.columns:
        raw["Dividends"] = raw["Dividends"].to_numpy(dtype=float) * factor
    moved = SymbolData(symbol, readjust(raw), item.income_yearly, item.income_quarterly, item.info, item.fast_info)
    return with_symbol(market, requote(moved, market.as_of)), f"{symbol} a penny stock, its latest close {level:.4f}"


#: The quote types whose latest sessions the ``seed`` world serves with Volume 0 (:func:`index_without_volume`).
NO_VOLUME_QUOTE_TYPES = ("INDEX",)
#: How many of an index's latest sessions carry Volume 0 there: fewer than the shortest window a volume
#: trend is asked over (5 sessions), so no such window is all zeros and every reading of a trend holds.
NO_VOLUME_SESSIONS = 3


def index_without_volume(market: Market, sessions: int = NO_VOLUME_SESSIONS) -> tuple[Market, str]:
    """``market`` with every index (:data:`NO_VOLUME_QUOTE_TYPES`) served with Volume 0 on its last
    ``sessions`` bars, the latest included, their closes moving as before: Yahoo serves indices'
    latest sessions before their volume is consolidated, and many indices (^VIX, most outside the
    US) on every bar, with Volume 0. A session of Volume 0 is still a session: a tool that drops such
    bars as "non-trading rows" answers a stale close, or joins a pair on fewer dates. ``info``'s
    volume fields follow."""
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        if item.info.get("quoteType") not in NO_VOLUME_QUOTE_TYPES or "Volume" not in raw.columns \
                or len(raw) <= sessions:
            data.append(item)
            continue
        raw = raw.copy()
        raw.iloc[-sessions:, raw.columns.get_loc("Volume")] = 0
        dates = pd.DatetimeIndex(raw.index).date
        words.append(f"{item.symbol} {dates[-sessions]}..{dates[-1]}")
        data.append(requote(SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly, item.info,
                                       item.fast_info), market.as_of))
    return Market(data, market.as_of), ("Volume 0 on an index's latest sessions: " + ", ".join(words)) if words else ""


def recent_splits(market: Market, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` with a stock split in each stock :data:`SPLIT_BACK` sessions back, as yfinance shows
    one: the history already split-adjusted (prices, volumes and dividends on today's share basis: the
    bars do not move) and the event in ``Stock Splits`` (so in ``splits`` and ``actions``). A tool that
    divides the closes before it by the ratio again answers wrong across it."""
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        choices = _free_sessions(raw, range(SPLIT_BACK[0], SPLIT_BACK[1] + 1), set())
        if item.symbol not in equities(market) or "Stock Splits" not in raw.columns or not choices:
            data.append(item)
            continue
        at = int(rng.choice(choices))
        ratio = float(rng.choice(SPLIT_RATIOS))
        raw = raw.copy()
        raw.iloc[at, raw.columns.get_loc("Stock Splits")] = ratio
        words.append(f"{item.symbol} {pd.Timestamp(raw.index[at]).date()} {ratio:g}:1")
        data.append(SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly, item.info,
                               item.fast_info))
    return Market(data, market.as_of), ("a split: " + ", ".join(words)) if words else ""


def recorded_shapes(market: Market, rng: np.random.Generator, avoid: Iterable[int] = ()) -> tuple[Market, str]:
    """``market`` with the shapes recorded data have and a generated world would otherwise lack, each in
    every world: prices off the cent grid (:func:`fine_prices`), one missing session per stock
    (:func:`missing_sessions`), a trading halt of flat bars (:func:`halts`, clear of the sessions back
    in ``avoid``), a recent split (:func:`recent_splits`) and dividends off the cent grid
    (:func:`fine_dividends`, drawn last: the other shapes' draws stay what they were); ``Adj Close``
    and the quotes follow."""
    words = []
    for step in (fine_prices, missing_sessions, lambda m, r: halts(m, r, avoid), recent_splits, fine_dividends):
        market, said = step(market, rng)
        if said:
            words.append(said)
    data = [requote(restate(SymbolData(item.symbol, readjust(item.history), item.income_yearly,
                                       item.income_quarterly, item.info, item.fast_info), market.as_of),
                    market.as_of) for item in market.data.values()]
    return Market(data, market.as_of), "; ".join(words)


def lengthen(market: Market, start: date, rng: np.random.Generator,
             calendar: Callable[[date, date], list[date]] | None = None, growth: float | None = None) -> Market:
    """``market`` with its history reaching back to ``start``: the NYSE sessions from ``start`` to the
    day before its first bar prepended to every symbol, each drawn (one draw of a past session for
    all symbols, so they keep moving together) from the market's own sessions -- the day's return,
    its open, high and low about its close, its volume --, chained back from the first close; every
    dividend of a symbol's first year paid again each whole year before, a cent or so less. A snapshot
    recorded with an earlier ``--start`` looks the same; statements and quotes are left as they are
    (:func:`truncate` re-derives the quotes). A dividend that would be a cent or less is not paid (the
    payer had not started then). ``calendar(start, end)``: the sessions between two days, both
    inclusive (the NYSE calendar's by default; :func:`runner.judging.world_calendar.sessions` reaches
    further back). ``growth``: the yearly growth the drawn walk is held to, its moves recentred (the
    draws' own drift, compounded over decades, would take a price to a fraction of a cent)."""
    from finevo.market.calendar import trading_days

    firsts = {s: pd.DatetimeIndex(item.history.index) for s, item in market.data.items()}
    first = min(index[0].date() for index in firsts.values())
    days = (calendar or trading_days)(start, first - pd.Timedelta(days=1)) if start < first else []
    if not days:
        return market
    shortest = min(len(index) for index in firsts.values())
    picks = rng.integers(1, shortest, size=len(days))
    data = []
    for symbol, item in market.data.items():
        raw = item.history
        close = raw["Close"].to_numpy(dtype=float)
        step = close[picks] / close[picks - 1]
        if growth is not None:
            logs = np.log(step)
            step = np.exp(logs - logs.mean() + np.log1p(growth) / 252)
        closes = np.empty(len(days))
        level = close[0]
        for j in range(len(days) - 1, -1, -1):  # walk back from the first recorded close
            level /= step[(j + 1) % len(days)]  # the move into session j + 1 (step[0]: into the first bar)
            closes[j] = level
        index = pd.DatetimeIndex(pd.to_datetime(days)).tz_localize(raw.index.tz).rename(raw.index.name)
        block = pd.DataFrame(index=index)
        for column in raw.columns:
            if column in PRICED_COLUMNS:
                ratio = raw[column if column != "Adj Close" else "Close"].to_numpy(dtype=float)[picks] / close[picks]
                block[column] = (closes * ratio).round(2)
            elif column == "Volume":
                block[column] = raw[column].to_numpy()[picks]
            else:
                block[column] = np.zeros(len(days), dtype=raw[column].dtype)
        block["High"] = block[["Open", "High", "Low", "Close"]].max(axis=1)
        block["Low"] = block[["Open", "High", "Low", "Close"]].min(axis=1)
        if "Dividends" in raw.columns:
            paid = raw.loc[raw["Dividends"] != 0, "Dividends"]
            opening = paid[pd.DatetimeIndex(paid.index) < pd.DatetimeIndex(raw.index)[0] + pd.DateOffset(years=1)]
            for stamp, amount in opening.items():
                for back in range(1, 1 + (first.year - start.year) + 1):
                    when = (pd.Timestamp(stamp).tz_localize(None) - pd.DateOffset(years=back)).date()
                    at = bisect.bisect_left(days, when)  # the next session on or after it
                    paid_then = round(float(amount) - 0.01 * back, 4)
                    if when < start or at == len(days) or paid_then <= 0:
                        continue
                    block.loc[pd.Timestamp(days[at]).tz_localize(raw.index.tz), "Dividends"] = paid_then
        longer = pd.concat([block.astype(raw.dtypes.to_dict()), raw])
        data.append(SymbolData(symbol, readjust(longer), item.income_yearly, item.income_quarterly,
                               item.info, item.fast_info))
    return Market(data, market.as_of)


#: Years of history the ``long`` world holds back from its as-of day (within the calendar's years):
#: enough for a task asked at a long scale (every count x5 or x10) with the warm-up every accepted
#: reading of a recursive indicator needs, and for a fixed period of a year or two read by a tool to
#: leave the seed of its EMAs visible there (:mod:`runner.judging.probes`, ``min_sessions``).
LONG_YEARS = 20


def long_start(as_of: date) -> date:
    """The first day of the ``long`` world's history: :data:`LONG_YEARS` before ``as_of``, not before
    the first year the calendar knows."""
    from finevo.market.calendar import COVERED_YEARS

    back: date = (pd.Timestamp(as_of) - pd.DateOffset(years=LONG_YEARS)).date() + timedelta(days=1)
    return max(back, date(COVERED_YEARS[0], 1, 1))


def long_sessions(first: date, as_of: date) -> int:
    """Sessions the ``long`` world prepends to a history whose first bar is on ``first`` (0 when it
    already reaches back that far, or when the calendar cannot place the sessions before it)."""
    from finevo.market.calendar import trading_days

    start = long_start(as_of)
    if start >= first:
        return 0
    try:
        return len(trading_days(start, first - timedelta(days=1)))
    except ValueError:  # a history that starts after the calendar's years
        return 0


def lengthened(market: Market, rng: np.random.Generator) -> Market:
    """``market`` lengthened back to :func:`long_start` of its as-of day (:func:`lengthen`); the market
    itself when the calendar cannot place the sessions before it. The ``long`` world goes on back to
    :data:`DEEP_START` (:func:`deepened`, with the same stream)."""
    first = min(pd.DatetimeIndex(item.history.index)[0].date() for item in market.data.values())
    if long_sessions(first, market.as_of) == 0:
        return market
    return lengthen(market, long_start(market.as_of), rng)


#: The first day of the ``long`` world's deep history: recorded data reach back decades (a stock listed
#: in 1980 trades since then, the index since 1927), so "all the history" lies before any fixed start a
#: tool may assume precedes the data (``start="2000-01-01"``, ``"1990-01-01"``); the calendar of
#: :mod:`runner.judging.world_calendar` places the sessions back to here.
DEEP_START = date(EARLIER_YEARS[0], 1, 1)
#: The yearly growth of the deep history's walk (a stock's decades before: a few times lower, never a
#: fraction of a cent).
DEEP_GROWTH = 0.06


def deepened(market: Market, rng: np.random.Generator) -> Market:
    """``market`` (the ``long`` world's twenty years) lengthened on back to :data:`DEEP_START`
    (:func:`lengthen` over the calendar of :func:`runner.judging.world_calendar.sessions`), the sessions it
    had left as they were (drawn after them, from a stream that has drawn those): a measure of all
    the history reads decades a tool that starts at a fixed date drops."""
    return lengthen(market, DEEP_START, rng, calendar=deep_sessions, growth=DEEP_GROWTH)


def _nearest_saturday(day: date) -> date:
    return day + timedelta(days=(5 - day.weekday() + 3) % 7 - 3)


def weekly_fiscal_calendar(market: Market) -> tuple[Market, str]:
    """``market`` with the statements of every symbol whose fiscal year does not end in December
    dated as a 52/53-week fiscal calendar dates them (Apple's: 2022-10-01, 2023-04-01, 2024-06-29):
    each period on the Saturday nearest its month's end, up to three days into the next month. The
    oracle matches a column within 15 days of a quarter's nominal end (benchmarks/README.md), so a
    tool that maps a column to its quarter by the column's month, or matches month ends exactly,
    answers another quarter or none. ``info``'s statement fields follow."""
    data, words = [], []
    for item in market.data.values():
        yearly = _filed(item.income_yearly)
        months = {pd.Timestamp(c).month for c in yearly.columns} if yearly is not None else set()
        if not months or months == {12}:
            data.append(item)
            continue

        def redate(frame: pd.DataFrame | None) -> pd.DataFrame | None:
            if frame is None:
                return None
            out = frame.copy()
            out.columns = pd.DatetimeIndex([pd.Timestamp(_nearest_saturday(pd.Timestamp(c).date()))
                                            for c in frame.columns])
            return out

        words.append(item.symbol)
        data.append(restate(SymbolData(item.symbol, item.history, redate(item.income_yearly),
                                       redate(item.income_quarterly), item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of), ("52/53-week fiscal dates: " + ", ".join(words)) if words else ""


#: Sessions a ``listing`` world's pinned listing trades its own moves after the pinned ones
#: (:func:`pinned_listing`): three months, few enough that an EMA seeded at zero instead of at the first
#: close is still far off at the slowest span the benchmark asks (26 sessions: (25/27)^120 of the price
#: left, about 1e-4), many enough that the listing is a stock and not a fund at its par.
PINNED_MOVES = 60


def pinned_listing(market: Market, symbol: str, pinned: int, moves: int = PINNED_MOVES) -> Market:
    """``market`` with ``symbol`` a listing of ``pinned + moves`` sessions ago (:func:`recent_listing`)
    whose first ``pinned`` sessions traded at one price (Open, High, Low and Close alike, the volumes
    kept: a SPAC at its trust value, an offering held at its price by the underwriters' support), then
    its own moves from that price on. On such a start every accepted seed of an EMA gives the same
    value: the first close, the mean of the first ``span`` closes and the weighted average of all the
    closes so far are all that price, as long as the longest span (and a signal line's warm-up after
    it) fits in the pinned sessions; a seed of zero is not, and the short history keeps it visible.
    ``market`` itself when the symbol has no more than that many sessions."""
    item = market.data[symbol]
    sessions = pinned + moves
    n = len(item.history)
    if n <= sessions or pinned <= 0:
        return market
    raw = item.history.copy()
    price = float(raw["Close"].iloc[n - moves - 1])
    for column in ("Open", "High", "Low", "Close"):
        raw.iloc[n - sessions:n - moves, raw.columns.get_loc(column)] = price
    held = SymbolData(symbol, raw, item.income_yearly, item.income_quarterly, item.info, item.fast_info)
    return recent_listing(with_symbol(market, held), symbol, sessions)


#: Sessions a ``listing`` world's recent listing has traded up to its as-of day, tried in this order
#: (a stock listed two or three weeks ago): fewer than the window of a task over several symbols,
#: so that no accepted reading answers it (a window in calendar days too: the first bar lies more
#: than a weekend after the window's first day).
LISTING_SESSIONS = (12, 9, 6, 4)
#: ``info`` / ``fast_info`` fields Yahoo leaves empty for a stock listed weeks ago (they need a year of
#: history, or dividends it has not paid yet).
_UNLISTED_FIELDS = ("52WeekChange", "fiftyTwoWeekChangePercent", "yearChange", "beta", "dividendRate",
                    "dividendYield", "payoutRatio", "fiveYearAvgDividendYield")
#: Average-volume fields, re-derived from the sessions a recent listing has.
_VOLUME_FIELDS = ("averageVolume", "averageVolume10days", "averageDailyVolume10Day", "averageDailyVolume3Month",
                  "tenDayAverageVolume", "threeMonthAverageVolume")


def recent_listing(market: Market, symbol: str, sessions: int) -> Market:
    """``market`` with ``symbol`` a recent listing: its bars from ``sessions`` sessions before the as-of
    day on (a stock that started trading then, as a listing of weeks ago looks in a snapshot recorded
    with an earlier ``--start``: nothing before its first bar), no dividend or split on the bars it
    keeps (a company listed weeks ago has paid none), ``Adj Close`` equal to ``Close``; its quotes
    re-derived from those bars, the fields that need a year of history or a dividend left empty, and
    its statements kept (a listed company files its past years). Every other symbol as it was."""
    item = market.data[symbol]
    raw = item.history.iloc[-sessions:].copy()
    for column in ("Dividends", "Stock Splits"):
        if column in raw.columns:
            raw[column] = np.zeros(len(raw), dtype=raw[column].dtype)
    listed = requote(restate(SymbolData(symbol, readjust(raw), item.income_yearly, item.income_quarterly,
                                        item.info, item.fast_info), market.as_of), market.as_of)
    traded = raw["Volume"].to_numpy(dtype=float)
    volumes = {"averageVolume10days": traded[-10:], "averageDailyVolume10Day": traded[-10:],
               "tenDayAverageVolume": traded[-10:]}

    def unlisted(fields: JSONObject) -> JSONObject:
        out = dict(fields)
        for key in _UNLISTED_FIELDS:
            if key in out:
                out[key] = None
        if "trailingAnnualDividendYield" in out:
            out["trailingAnnualDividendYield"] = 0.0
        for key in _VOLUME_FIELDS:
            if key in out and len(traded):
                out[key] = round(float(volumes.get(key, traded).mean()))
        return out

    data = [SymbolData(symbol, listed.history, listed.income_yearly, listed.income_quarterly,
                       unlisted(listed.info), unlisted(listed.fast_info)) if s == symbol else market.data[s]
            for s in market.data]
    return Market(data, market.as_of)
