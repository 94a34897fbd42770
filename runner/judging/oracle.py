"""The trusted reference oracle: every benchmark task's expected value, computed outside the
sandbox from a :class:`~finevo.market.provider.MarketProvider`.

``expected_values(task, provider)`` returns ``{convention name: value}`` for every accepted
reading of the task, the primary (what the reference tool does) first. The accepted readings are
the task's own conventions (``tasks.jsonl``: a calendar or fiscal quarter, a drawdown's sign,
...) crossed with the **shared readings** that apply to its oracle (:data:`SHARED_READINGS`): the
same choice, such as calendar days for "last N days" or raw closes for a price level, is accepted
for every task it applies to, or for none. They are written once, with the reasons, in
``benchmarks/README.md`` ("Shared readings"), and a task that sets one of them itself is refused
(:func:`accepted_readings`). A combined reading is named ``<task convention>+<reading>``, e.g.
``negative_fraction+calendar_days``.

Each oracle is a function and the typed model of its parameters (:data:`ORACLES`; the models, the
shared readings and :func:`~runner.inputs.oracle_params.parse_params`, the one place a reading's JSON
parameters become the model, are in :mod:`runner.inputs.oracle_params`): a function reads only its model.

Plain-reading defaults (the primary):

* "last N days" is the last N trading sessions ending on the as-of date (N closing prices);
* returns are simple fractions (0.05, never 5 %);
* RSI uses Wilder's smoothing, i.e. ``ewm(alpha=1/n, adjust=False)`` of gains and losses, 0..100;
* prices are yfinance's default, closes adjusted for dividends and splits;
* every value is plain Python (see :data:`finevo.normalize.ANSWER`).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Generic, NamedTuple, TypedDict, TypeVar

import numpy as np
import pandas as pd

from finevo.errors import InputError
from finevo.jsontypes import JSONObject, JSONValue
from finevo.market.provider import MarketProvider
from finevo.normalize import ANSWER, normalize
from runner.inputs.oracle_params import (
    READINGS,
    SHARED_READINGS,
    BollingerBandsParams,
    CorrelationParams,
    DividendHistoryParams,
    KdjParams,
    LatestCloseParams,
    LatestQuoteParams,
    MacdParams,
    MaCrossRsiSignalParams,
    MaxCloseParams,
    MaxDrawdownParams,
    MovingAverageParams,
    NetIncomeParams,
    OracleParams,
    OracleParamsError,
    PortfolioReturnParams,
    PostSignalReturnParams,
    Reading,
    RsiParams,
    TotalRevenueParams,
    VolatilityParams,
    VolumePriceDivergenceParams,
    accepted_readings,
    parse_params,
)
from runner.inputs.tasks import Probe, Task

__all__ = [
    "DEFINED_ON_FLAT",
    "FLAT_RSI",
    "NOT_HELD",
    "ORACLES",
    "OR_RAISES",
    "RAISES",
    "READINGS",
    "SHARED_READINGS",
    "UNDEFINED_ON_FLAT",
    "OneOf",
    "Oracle",
    "Reading",
    "Undefined",
    "Unsettled",
    "accepted_readings",
    "before_the_data",
    "caching",
    "compute",
    "each_reading",
    "expected_values",
    "holds",
    "judged_values",
    "probe_expectation",
    "probe_expected_values",
    "refusable",
    "rsi_series",
    "undefined_here",
]

# --------------------------------------------------------------------------- series helpers
class Undefined(ValueError):
    """The measure is undefined on these data, whatever the reading: it divides by a dispersion of the
    window that is zero (a series that does not move over it: a halted stock, a stale series), or the
    figure asked is an empty cell of a filed statement. There is no number to give -- 0.0 ("no
    co-movement"), a sibling line's figure or any other placeholder is made up -- so the judge expects
    a right tool to raise, wherever such data come up (:func:`undefined_here`)."""


class Unsettled(ValueError):
    """The answer turns on a choice no accepted reading documents (an RSI over a window whose closes
    do not move, :data:`FLAT_RSI`): the reading has one value per choice, ``values`` (the distinct
    answers), and ``refuses`` when some choice gives none. :func:`each_reading` gives it as :class:`OneOf`."""

    def __init__(self, message: str, values: list[Any], refuses: bool) -> None:
        super().__init__(message)
        self.values, self.refuses = values, refuses


class OneOf(list[Any]):
    """The expected value of a reading :class:`Unsettled` on an argument set: a value matches it when
    it matches one of these (:func:`runner.judging.compare.compare`); where some choice gives no value
    (``refuses``), :func:`judged_values` accepts a clear error beside it (:data:`OR_RAISES`). Serialised,
    it is the list of the values."""

    def __init__(self, values: list[Any], refuses: bool = False, why: str = "") -> None:
        super().__init__(values)
        self.refuses, self.why = refuses, why


#: What libraries give as the RSI of a window holding no gain and no loss (0/0: closes that do not
#: move, a halted stock): 100 (a window without a loss: TradingView, this oracle's own), 50 (neutral),
#: 0 (TA-Lib) or no value at all (pandas' division gives NaN; the tool raises, or a signal is not
#: taken). None of them is a documented reading: an answer that turns on them is :class:`Unsettled`,
#: and any of the answers they give is accepted -- never another (a window of gains only is 100 under
#: every one of them).
FLAT_RSI: tuple[float | None, ...] = (100.0, 50.0, 0.0, None)


#: The oracles whose measure divides by a dispersion of its window (:class:`Undefined` over a flat
#: series): the derived probes ask each at its shortest window, which falls inside the ``seed``
#: world's halt to the as-of day (:mod:`runner.judging.probes`, ``flat_probes``). A range read by a
#: KDJ is not here: its documented reading gives RSV 50 for a range of zero.
UNDEFINED_ON_FLAT = frozenset({"correlation"})
#: The oracles whose measure of a window that does not move is a number all the same -- 0: no
#: volatility, no drawdown -- asked there by the same derived probes: a tool that refuses a zero
#: dispersion ("volatility undefined"), or finds no drawdown to report and raises, fails.
DEFINED_ON_FLAT = frozenset({"volatility", "max_drawdown"})


def undefined_here(exc: BaseException) -> bool:
    """Whether ``exc`` (an :class:`InputError` of :func:`each_reading` / :func:`judged_values`) says the
    measure is undefined on the data (:class:`Undefined`): from :func:`judged_values`, no reading
    answers and one finds a zero dispersion (the others too few data), so a right tool raises under
    any reading and the argument set is judged as one that must raise."""
    return isinstance(exc, InputError) and bool(exc.details.get("undefined"))


def _history(provider: MarketProvider, symbol: str, prices: str = "adjusted") -> pd.DataFrame:
    """Daily bars up to the as-of date; ``prices="raw"``: the closes as quoted that day."""
    if isinstance(provider, _CachingProvider):
        return provider.bars(symbol, prices)
    return _read_history(provider, symbol, prices)


K = TypeVar("K")


def _kept(provider: MarketProvider, key: tuple[Any, ...], compute: Callable[[], K]) -> K:
    """``compute()``, kept by a caching provider under ``key`` (:meth:`_CachingProvider.kept`):
    what several readings and argument sets of one task derive alike from the same bars (a
    symbol's closes, an RSI series, two symbols' aligned closes). ``key`` names everything the
    value depends on besides the provider; the value is never modified by its readers."""
    if isinstance(provider, _CachingProvider):
        return provider.kept(key, compute)
    return compute()


def _local_days(index: pd.Index) -> pd.Index:
    """The index as naive local wall times (a tz-aware index's own zone): ``t.date() >= d`` is then
    ``t >= Timestamp(d)``, compared on the whole array at once instead of a ``date`` per bar."""
    tz = getattr(index, "tz", None)
    return index.tz_localize(None) if tz is not None else index


def _read_history(provider: MarketProvider, symbol: str, prices: str) -> pd.DataFrame:
    # The provider's own frame where it shares one (no copy: the oracle never modifies its bars)
    view = getattr(provider, "history_view", None)
    frame = view(symbol) if view is not None else None
    if frame is None:
        frame = provider.history(symbol)
    if frame is None or frame.empty:
        raise ValueError(f"no price history for {symbol}")
    local, end = _local_days(frame.index), pd.Timestamp(provider.as_of + timedelta(days=1))
    if local.is_monotonic_increasing:  # the bars before the end are a leading slice, sorted already
        frame = frame.iloc[:local.searchsorted(end)]
    else:
        frame = frame.loc[local < end].sort_index()
    if prices == "raw":
        return _unadjust(frame)
    if prices != "adjusted":
        raise ValueError(f"unknown prices {prices!r} (adjusted | raw)")
    return frame


def _unadjust(frame: pd.DataFrame) -> pd.DataFrame:
    """The bars as quoted (``auto_adjust=False``) from yfinance's dividend-adjusted ones.

    Yahoo scales every bar before an ex-date by ``1 - dividend / previous raw close``; walking
    back from the last bar (whose factor is 1) undoes it exactly:
    ``raw[i-1] = adjusted[i-1] / factor[i] + dividend[i]`` and ``factor[i-1] = adjusted[i-1] / raw[i-1]``.
    """
    if "Dividends" not in frame.columns or not (frame["Dividends"] != 0).any():
        return frame
    adjusted = frame["Close"].to_numpy(dtype=float)
    dividends = frame["Dividends"].to_numpy(dtype=float)
    factor = np.ones(len(frame))
    raw = adjusted.copy()
    for i in range(len(frame) - 1, 0, -1):
        raw[i - 1] = adjusted[i - 1] / factor[i] + (dividends[i] if dividends[i] else 0.0)
        factor[i - 1] = adjusted[i - 1] / raw[i - 1]
    out = frame.copy()
    for column in ("Open", "High", "Low"):
        if column in out.columns:
            out[column] = out[column].to_numpy(dtype=float) / factor
    out["Close"] = raw
    return out


def _closes(provider: MarketProvider, symbol: str, prices: str = "adjusted") -> pd.Series:
    return _kept(provider, ("closes", symbol, prices),
                 lambda: _history(provider, symbol, prices)["Close"].astype(float))


def _aligned_closes(provider: MarketProvider, symbols: list[str]) -> pd.DataFrame:
    """The symbols' adjusted closes on their common sessions, one column each."""
    return _kept(provider, ("aligned", *symbols),
                 lambda: pd.concat([_closes(provider, s) for s in symbols], axis=1, keys=symbols, join="inner"))


#: A calendar window whose start lies more than this many days before the first bar reaches before
#: the data (a weekend and a holiday fit in it): the data cannot support it, like too few sessions.
CALENDAR_SLACK_DAYS = 5


def _last(frame: pd.DataFrame | pd.Series, provider: MarketProvider, days: int, unit: str = "sessions",
          what: str = "") -> Any:
    """The last ``days`` sessions (``unit="sessions"``), or the sessions dated on or after
    ``as_of - days`` (``"calendar"``, what ``history(start=today - N days)`` returns) or strictly
    after it (``"calendar_after"``, what ``history(period="Nd")`` returns: N calendar days ending today)."""
    days = int(days)
    if days <= 0:
        raise ValueError(f"days must be positive, got {days}")
    if unit == "sessions":
        if len(frame) < days:
            raise ValueError(f"{what}: need {days} sessions, have {len(frame)}")
        return frame.iloc[-days:]
    if unit in ("calendar", "calendar_after"):
        start = provider.as_of - timedelta(days=days)
        local = _local_days(frame.index)
        first = start if unit == "calendar" else start + timedelta(days=1)
        window = frame.loc[local >= pd.Timestamp(first)]
        if len(local) and local[0].date() > start + timedelta(days=CALENDAR_SLACK_DAYS):
            raise ValueError(f"{what}: the data starts {local[0].date()}, after the window's start {start}")
        if len(window) < 2:
            raise ValueError(f"{what}: fewer than 2 sessions since {start}")
        return window
    raise ValueError(f"unknown window_unit {unit!r} (sessions | calendar | calendar_after)")


def _returns(closes: pd.Series, kind: str = "simple") -> pd.Series:
    if kind == "simple":
        return closes.pct_change().dropna()
    if kind == "log":
        return np.log(closes / closes.shift(1)).dropna()
    raise ValueError(f"unknown returns kind {kind!r} (simple | log)")


def _sma_seeded(values: pd.Series, window: int) -> pd.Series:
    """Wilder's smoothing as he defined it (and TA-Lib computes it): the first average is the plain
    mean of the first ``window`` values, each later one ``(previous * (window - 1) + value) / window``."""
    data = values.to_numpy(dtype=float)
    out = np.full(len(data), np.nan)
    if len(data) >= window:
        # The recursion on Python floats: the same IEEE operations as on numpy scalars, 4x faster.
        average = float(data[:window].mean())
        out[window - 1] = average
        later = data[window:].tolist()
        for i, value in enumerate(later, window):
            average = (average * (window - 1) + value) / window
            out[i] = average
    return pd.Series(out, index=values.index)


def rsi_series(closes: pd.Series, window: int, method: str = "wilder", warmup: str = "skip",
               flat: float | None = 100.0) -> pd.Series:
    """RSI (0..100) of ``closes``; NaN until ``window`` changes are available (``warmup="skip"``).

    A session whose averages hold a gain and no loss is 100. One whose averages hold neither (a window
    of closes that do not move: 0/0) is ``flat``: no accepted reading settles it (see
    :data:`FLAT_RSI`); None leaves it NaN, as pandas' division does.

    ``wilder``: gains/losses smoothed by ``ewm(alpha=1/window, adjust=False)`` starting at the first
    price change; ``warmup="keep"`` gives a value from the first change on (a plain ``ewm`` without
    ``min_periods``). ``wilder_sma``: the same smoothing seeded with the plain mean of the first
    ``window`` changes (Wilder's own definition, TA-Lib). ``simple``: plain ``window``-period means
    of gains and losses (never before ``window`` changes).
    """
    return _flat_filled(*_rsi_parts(closes, window, method, warmup), flat)


def _rsi_parts(closes: pd.Series, window: int, method: str, warmup: str) -> tuple[pd.Series, pd.Series]:
    """:func:`rsi_series` with every session of no change left NaN, and where those sessions are
    (a boolean Series on the same index): computed once, filled by each convention of :data:`FLAT_RSI`."""
    window = int(window)
    if warmup not in ("skip", "keep"):
        raise ValueError(f"unknown RSI warm-up {warmup!r} (skip | keep)")
    if method not in ("wilder", "wilder_sma", "simple"):
        raise ValueError(f"unknown RSI method {method!r} (wilder | wilder_sma | simple)")
    # The judge computes this for every reading, argument set and world of the RSI tasks: the
    # elementwise steps run on arrays (the very operations pandas' would run, NaN kept where pandas
    # keeps it), gains and losses are smoothed together in one frame (column by column, as two
    # Series would be), so each value is the one the Series-by-Series version gave, bit for bit.
    values = closes.to_numpy(dtype=float)
    change = values[1:] - values[:-1]
    index = closes.index[1:]
    moves = pd.DataFrame({"gain": _at_least_zero(change), "loss": _at_least_zero(-change)}, index=index)
    if method == "wilder":
        first = window if warmup == "skip" else 1
        smooth = moves.ewm(alpha=1.0 / window, adjust=False, min_periods=first).mean()
        avg_gain, avg_loss = smooth["gain"].to_numpy(), smooth["loss"].to_numpy()
    elif method == "wilder_sma":
        avg_gain = _sma_seeded(moves["gain"], window).to_numpy()
        avg_loss = _sma_seeded(moves["loss"], window).to_numpy()
    else:
        smooth = moves.rolling(window).mean()
        avg_gain, avg_loss = smooth["gain"].to_numpy(), smooth["loss"].to_numpy()
    with np.errstate(divide="ignore", invalid="ignore"):
        rsi = 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
    known = ~np.isnan(avg_gain) & ~np.isnan(avg_loss)
    still = known & (avg_gain == 0) & (avg_loss == 0)
    rsi = np.where(avg_loss != 0, rsi, 100.0)
    rsi = np.where(known & ~still, rsi, np.nan)
    name = None if method == "wilder_sma" else closes.name  # as the Series arithmetic named it
    if len(values) and closes.index.is_unique:  # the first close has no change: NaN, as reindex put it
        return (pd.Series(np.concatenate(([np.nan], rsi)), index=closes.index, name=name),
                pd.Series(np.concatenate(([False], still)), index=closes.index))
    return (pd.Series(rsi, index=index, name=name).reindex(closes.index),  # raises on repeated dates
            pd.Series(still, index=index).reindex(closes.index, fill_value=False))


def _flat_filled(rsi: pd.Series, still: pd.Series, flat: float | None) -> pd.Series:
    """``rsi`` with its sessions of no change (``still``) given ``flat`` (None: left NaN)."""
    if flat is None or not still.any():
        return rsi
    return rsi.mask(still, flat)


def _at_least_zero(values: np.ndarray) -> np.ndarray:
    """``Series.clip(lower=0.0)``: values below 0 become 0.0; NaN (and -0.0) stay as they are."""
    return np.where(np.isnan(values) | (values >= 0.0), values, 0.0)


def _latest(series: pd.Series, what: str) -> float:
    clean = series.dropna()
    if clean.empty:
        raise ValueError(f"{what}: not enough data")
    return float(clean.iloc[-1])


# --------------------------------------------------------------------------- fundamentals
def _quarter_end(year: int, month: int) -> pd.Timestamp:
    return pd.Timestamp(year=year, month=month, day=1) + pd.offsets.MonthEnd(0)


def _statement_column(frame: pd.DataFrame, nominal_end: pd.Timestamp, what: str) -> Any:
    """The column whose period end lies within 15 days of ``nominal_end`` (fiscal weeks drift)."""
    best = None
    for column in frame.columns:
        gap = abs((pd.Timestamp(column).tz_localize(None).normalize() - nominal_end).days)
        if gap <= 15 and (best is None or gap < best[0]):
            best = (gap, column)
    if best is None:
        raise ValueError(f"{what}: no statement period ends near {nominal_end.date()}")
    return best[1]


def _line_item(provider: MarketProvider, symbol: str, freq: str, item: str) -> pd.Series:
    frame = provider.income_stmt(symbol, freq)  # type: ignore[arg-type]
    if frame is None or frame.empty or item not in frame.index:
        raise ValueError(f"{symbol}: {freq} income statement has no {item!r} row")
    return frame.loc[item]


def _fiscal_year_end_month(provider: MarketProvider, symbol: str) -> int | None:
    """The month the company's fiscal years end in, read from its annual statement columns (None when
    they disagree or are missing): a fiscal quarter is the company's own, whatever symbol is asked."""
    try:
        yearly = provider.income_stmt(symbol, "yearly")
    except (LookupError, ValueError):
        return None
    months = {_nominal_month_end(c).month for c in yearly.columns} if not yearly.empty else set()
    return months.pop() if len(months) == 1 else None


def _nominal_month_end(column: Any) -> pd.Timestamp:
    """The month end nearest a statement column's date: a 52/53-week fiscal year dated 2022-10-01
    ends in September."""
    stamp = pd.Timestamp(column).tz_localize(None).normalize() if pd.Timestamp(column).tzinfo else \
        pd.Timestamp(column).normalize()
    after, before = stamp + pd.offsets.MonthEnd(0), stamp - pd.offsets.MonthEnd(1)
    return after if (after - stamp) <= (stamp - before) else before


def net_income(provider: MarketProvider, p: NetIncomeParams) -> float:
    """Quarterly Net Income; year/quarter omitted = the latest reported quarter.

    ``basis="calendar"``: the quarter ending in calendar quarter ``quarter`` of ``year``.
    ``basis="fiscal"``: fiscal quarter of the fiscal year ending in ``year``, in the month the company's
    annual statements end (``fiscal_year_end_month`` when the statements do not say).
    """
    symbol = p.symbol
    row = _line_item(provider, symbol, "quarterly", "Net Income")
    year, quarter = p.year, p.quarter
    if year is None or quarter is None:  # the model holds both or neither
        return _latest(row.sort_index(), f"{symbol} Net Income")
    if p.basis == "calendar":
        end = _quarter_end(year, 3 * quarter)
    else:
        fy_end = _fiscal_year_end_month(provider, symbol) or p.fiscal_year_end_month
        months = (year - 1) * 12 + (fy_end - 1) + 3 * quarter
        end = _quarter_end(months // 12, months % 12 + 1)
    value = row[_statement_column(row.to_frame().T, end, f"{symbol} Net Income")]
    if not math.isfinite(float(value)):
        raise ValueError(f"{symbol} Net Income for the quarter ending {end.date()} is not reported")
    return float(value)


def total_revenue(provider: MarketProvider, p: TotalRevenueParams) -> float:
    """Annual Total Revenue of the fiscal year ending in ``year``."""
    symbol, year = p.symbol, p.year
    row = _line_item(provider, symbol, "yearly", "Total Revenue")
    matches = [c for c in row.index if pd.Timestamp(c).year == year and math.isfinite(float(row[c]))]
    if not matches and any(pd.Timestamp(c).year == year for c in row.index):
        # the year is filed (its column is there) but its Total Revenue cell is empty, as Yahoo leaves
        # single cells: no reading gives a number, another line's is not the one asked
        raise Undefined(f"{symbol}: the statement of the fiscal year ending in {year} leaves Total Revenue empty")
    if len(matches) != 1:
        raise ValueError(f"{symbol}: expected one fiscal year ending in {year}, found {len(matches)}")
    return float(row[matches[0]])


# --------------------------------------------------------------------------- prices
def latest_close(provider: MarketProvider, p: LatestCloseParams) -> float:
    return _last_close(provider, p.symbol)


def _last_close(provider: MarketProvider, symbol: str) -> float:
    return float(_closes(provider, symbol).iloc[-1])


def latest_quote(provider: MarketProvider, p: LatestQuoteParams) -> float:
    """The last traded price: ``fast_info['lastPrice']`` (``source="fast_info"``), ``info`` price, or last close."""
    symbol = p.symbol
    if p.source == "history":
        return _last_close(provider, symbol)
    if p.source == "fast_info":
        fields = provider.fast_info(symbol)
        for key in ("lastPrice", "last_price"):
            if fields.get(key) is not None:
                return float(fields[key])
        raise ValueError(f"{symbol}: fast_info has no lastPrice")
    fields = provider.info(symbol)
    for key in ("regularMarketPrice", "currentPrice"):
        if fields.get(key) is not None:
            return float(fields[key])
    raise ValueError(f"{symbol}: info has no regularMarketPrice/currentPrice")


class Dividend(TypedDict):
    """One dividend of :func:`dividend_history`'s answer."""

    date: str
    amount: float


def dividend_history(provider: MarketProvider, p: DividendHistoryParams) -> list[Dividend]:
    """Dividends with ex-date on or after ``as_of - years`` (calendar years; ``since="exclusive"``:
    strictly after it, what ``history(period="3y")`` returns), as date/amount records."""
    symbol, years = p.symbol, p.years
    divs = provider.dividends(symbol)
    start = pd.Timestamp(provider.as_of) - pd.DateOffset(years=years)
    dates = divs.index.tz_localize(None) if divs.index.tz is not None else divs.index
    after = dates.normalize() >= start if p.since == "inclusive" else dates.normalize() > start
    mask = after & (dates.date <= provider.as_of) & (divs.to_numpy() > 0)
    chosen = divs.loc[mask].sort_index()
    if chosen.empty:
        raise ValueError(f"{symbol}: no dividends since {start.date()}")
    return _ordered([Dividend(date=ts.strftime("%Y-%m-%d"), amount=float(v)) for ts, v in chosen.items()], p.order)


def max_close(provider: MarketProvider, p: MaxCloseParams) -> float:
    closes = _last(_closes(provider, p.symbol, p.prices), provider, p.days, p.window_unit, "max_close")
    return float(closes.max())


def moving_average(provider: MarketProvider, p: MovingAverageParams) -> list[float]:
    """The last ``days`` values of the ``window``-session simple moving average of Close, oldest
    first (``order="desc"``: newest first)."""
    closes = _closes(provider, p.symbol, p.prices)
    sma = closes.rolling(p.window).mean().dropna()
    values = [float(v) for v in _last(sma, provider, p.days, "sessions", "moving_average")]
    return _ordered(values, p.order)


T = TypeVar("T")


def _ordered(values: list[T], order: str) -> list[T]:
    if order not in ("asc", "desc"):
        raise ValueError(f"unknown order {order!r} (asc | desc)")
    return values if order == "asc" else values[::-1]


# --------------------------------------------------------------------------- indicators
def rsi(provider: MarketProvider, p: RsiParams) -> float:
    """Latest RSI; ``lookback="window"`` computes it from the last ``days`` closes only."""
    closes = _closes(provider, p.symbol, p.prices)
    if p.lookback == "window":
        assert p.days is not None  # the model requires days with a window lookback
        closes = _last(closes, provider, p.days, p.window_unit, "rsi")
    source, how = (p.symbol, p.prices), _Rsi(p.window, p.rsi_method)
    return _settled(lambda flat: _latest_rsi(provider, source, closes, how, flat),
                    _flat_rsi(provider, source, closes, how))


class _Rsi(NamedTuple):
    """Which RSI (:func:`rsi_series`'s arguments after the closes)."""

    window: int
    method: str
    warmup: str = "skip"


def _rsi_of(provider: MarketProvider, source: tuple[str, str], closes: pd.Series, rsi: _Rsi,
            flat: float | None = 100.0) -> pd.Series:
    """:func:`rsi_series` of ``closes``, the last ``len(closes)`` of ``source``'s (symbol, prices)
    closes: a window of sessions and the calendar days that hold the same sessions share one."""
    return _flat_filled(*_rsi_of_parts(provider, source, closes, rsi), flat)


def _rsi_of_parts(provider: MarketProvider, source: tuple[str, str], closes: pd.Series,
                  rsi: _Rsi) -> tuple[pd.Series, pd.Series]:
    """:func:`_rsi_parts` of ``closes``, kept as :func:`_rsi_of` says."""
    return _kept(provider, ("rsi", *source, len(closes), *rsi), lambda: _rsi_parts(closes, *rsi))


def _latest_rsi(provider: MarketProvider, source: tuple[str, str], closes: pd.Series, rsi: _Rsi,
                flat: float | None = 100.0) -> float:
    """The latest RSI of ``closes`` (as :func:`_rsi_of`); with ``flat=None``, a latest session whose
    window holds no price change has no RSI (ValueError), never the one before it."""
    def latest() -> float:
        series, still = _rsi_of_parts(provider, source, closes, rsi)
        if flat is None and len(still) and bool(still.iloc[-1]):
            raise ValueError("rsi: the latest window holds no price change")
        return _latest(_flat_filled(series, still, flat), "rsi")

    return _kept(provider, ("latest rsi", *source, len(closes), *rsi, flat), latest)


def _flat_rsi(provider: MarketProvider, source: tuple[str, str], closes: pd.Series, rsi: _Rsi) -> bool:
    """Whether some session's RSI of ``closes`` averages no gain and no loss (0/0, :data:`FLAT_RSI`)."""
    return bool(_rsi_of_parts(provider, source, closes, rsi)[1].any())


def _settled(value: Callable[[float | None], K], unsettled: bool) -> K:
    """``value(100.0)``, the RSI's own convention for a window of no change; where such a window is
    read (``unsettled``), that value only when every other convention of :data:`FLAT_RSI` gives it
    too (the windows do not matter to the answer), else :class:`Unsettled`."""
    if not unsettled:
        return value(100.0)
    outcomes: list[K | ValueError] = []
    for flat in FLAT_RSI:
        try:
            outcomes.append(value(flat))
        except ValueError as exc:
            outcomes.append(exc)
    answers = [o for o in outcomes if not isinstance(o, ValueError)]
    if not answers:
        raise outcomes[0]  # type: ignore[misc]  # every outcome is an error here
    distinct = [a for i, a in enumerate(answers) if a not in answers[:i]]
    refuses = len(answers) < len(outcomes)
    if len(distinct) == 1 and not refuses:
        return distinct[0]
    raise Unsettled("the answer turns on the RSI of a window whose closes do not move (no gain, no loss: "
                    "0/0), which no accepted reading settles (100, 50, 0 or no value)", distinct, refuses)


def bollinger_bands(provider: MarketProvider, p: BollingerBandsParams) -> dict[str, float]:
    closes = _closes(provider, p.symbol, p.prices)
    window = p.window
    if len(closes) < window:
        raise ValueError(f"bollinger_bands: need {window} closes, have {len(closes)}")
    tail = closes.iloc[-window:].to_numpy()
    middle = float(tail.mean())
    std = float(tail.std(ddof=p.ddof))
    k = p.num_std
    return {"upper": middle + k * std, "middle": middle, "lower": middle - k * std}


def macd(provider: MarketProvider, p: MacdParams) -> dict[str, float]:
    """MACD = EMA(fast) - EMA(slow) of Close, signal = EMA(signal) of MACD, all ``ewm(adjust=p.adjust)``."""
    closes = _closes(provider, p.symbol, p.prices)
    fast, slow, signal = p.fast, p.slow, p.signal
    if len(closes) < slow + signal:
        raise ValueError(f"macd: need {slow + signal} closes, have {len(closes)}")
    line = closes.ewm(span=fast, adjust=p.adjust).mean() - closes.ewm(span=slow, adjust=p.adjust).mean()
    sig = line.ewm(span=signal, adjust=p.adjust).mean()
    m, s = float(line.iloc[-1]), float(sig.iloc[-1])
    return {"macd": m, "signal": s, "histogram": m - s}


def volatility(provider: MarketProvider, p: VolatilityParams) -> float:
    """Std (``ddof``, default 1: sample) of the last ``window`` daily returns (``count="prices"``:
    of the returns of the last ``window`` closes), times sqrt(``periods_per_year``, default 252) when annualised."""
    closes = _closes(provider, p.symbol)
    window = p.window
    returns = _kept(provider, ("returns", p.symbol, p.returns), lambda: _returns(closes, p.returns))
    if p.count == "prices":
        window -= 1
    if window < 2 or len(returns) < window:
        raise ValueError(f"volatility: need {window} returns, have {len(returns)}")
    std = float(returns.iloc[-window:].std(ddof=p.ddof))
    if p.annualise:
        std *= math.sqrt(p.periods_per_year)
    return std


def kdj_frame(history: pd.DataFrame, n: int, k_period: int, d_period: int,
              smoothing: str = "recursive") -> pd.DataFrame:
    """K, D, J (0..100 scale) per session from High/Low/Close."""
    low = history["Low"].rolling(n).min()
    high = history["High"].rolling(n).max()
    span = high - low
    rsv = ((history["Close"] - low) / span.where(span != 0) * 100.0).fillna(50.0).iloc[n - 1:]
    if smoothing == "recursive":
        k_vals = np.empty(len(rsv))
        d_vals = np.empty(len(rsv))
        k_prev = d_prev = 50.0
        for i, r in enumerate(rsv.to_numpy()):
            k_prev = ((k_period - 1) * k_prev + r) / k_period
            d_prev = ((d_period - 1) * d_prev + k_prev) / d_period
            k_vals[i], d_vals[i] = k_prev, d_prev
        k = pd.Series(k_vals, index=rsv.index)
        d = pd.Series(d_vals, index=rsv.index)
    elif smoothing == "sma":
        k = rsv.rolling(k_period).mean()
        d = k.rolling(d_period).mean()
    else:
        raise ValueError(f"unknown KDJ smoothing {smoothing!r} (recursive | sma)")
    return pd.DataFrame({"k": k, "d": d, "j": 3 * k - 2 * d}).dropna()


def kdj(provider: MarketProvider, p: KdjParams) -> dict[str, float]:
    history = _history(provider, p.symbol, p.prices)
    n = p.n
    if len(history) < n + p.k_period + p.d_period:
        raise ValueError(f"kdj: not enough sessions ({len(history)})")
    k, d, j = _kept(provider, ("kdj", p.symbol, p.prices, n, p.k_period, p.d_period, p.smoothing),
                    lambda: tuple(float(v) for v in kdj_frame(history, n, p.k_period, p.d_period,
                                                              p.smoothing).iloc[-1][["k", "d", "j"]]))
    return {"k": k, "d": d, "j": j}


def max_drawdown(provider: MarketProvider, p: MaxDrawdownParams) -> float:
    """Largest peak-to-trough fall of Close within the window: a negative fraction (or its magnitude)."""
    closes = _last(_closes(provider, p.symbol), provider, p.days, p.window_unit, "max_drawdown")
    drawdown = float((closes / closes.cummax() - 1.0).min())
    return -drawdown if p.sign == "positive" else drawdown


def correlation(provider: MarketProvider, p: CorrelationParams) -> float:
    """Pearson correlation of the two symbols' daily returns over the window (dates aligned).

    ``count="prices"``: the window holds ``days`` closes (days-1 returns); ``"returns"``: ``days`` returns.
    """
    symbols = list(p.symbols)
    if len(symbols) != 2:
        raise ValueError(f"correlation needs exactly two symbols, got {symbols}")
    frame = _aligned_closes(provider, symbols)
    days = p.days + (1 if p.count == "returns" else 0)
    window = _last(frame, provider, days, p.window_unit, "correlation")
    a, b = _returns(window[symbols[0]], p.returns), _returns(window[symbols[1]], p.returns)
    if len(a) < 2:  # the window's common sessions give one return or none (a short window over a holiday)
        raise ValueError(f"correlation: need 2 returns of common sessions, have {len(a)}")
    flat = [s for s, r in zip(symbols, (a, b), strict=True) if float(r.std(ddof=0)) == 0.0]
    if flat:
        raise Undefined(f"correlation undefined: {', '.join(flat)} does not move over the window "
                        "(a constant series: no variance to correlate)")
    value = float(np.corrcoef(a.to_numpy(), b.to_numpy())[0, 1])
    if not math.isfinite(value):
        raise Undefined("correlation undefined (a constant series)")
    return value


# --------------------------------------------------------------------------- composites
def ma_cross_rsi_signal(provider: MarketProvider, p: MaCrossRsiSignalParams) -> bool:
    """True when SMA(short) > SMA(long) on the latest session and RSI(rsi_window) < threshold."""
    closes = _closes(provider, p.symbol)
    short, long_ = p.short_window, p.long_window
    if len(closes) < max(long_, p.rsi_window + 1):
        raise ValueError("ma_cross_rsi_signal: not enough closes")
    ma_short = float(closes.iloc[-short:].mean())
    ma_long = float(closes.iloc[-long_:].mean())
    source, how = (p.symbol, "adjusted"), _Rsi(p.rsi_window, p.rsi_method)

    def signal(flat: float | None) -> bool:
        rsi_value = _latest_rsi(provider, source, closes, how, flat)
        return bool(ma_short > ma_long and rsi_value < p.rsi_threshold)

    return _settled(signal, _flat_rsi(provider, source, closes, how))


def volume_price_divergence(provider: MarketProvider, p: VolumePriceDivergenceParams) -> bool:
    """True when Close rose over the window (last > first) while Volume trended down.

    ``volume_trend="slope"``: least-squares slope of Volume over the sessions is negative;
    ``"halves"``: mean Volume of the later half is below that of the earlier half.
    """
    window = _last(_history(provider, p.symbol), provider, p.days, p.window_unit, "volume_price_divergence")
    closes = window["Close"].to_numpy(dtype=float)
    volume = window["Volume"].to_numpy(dtype=float)
    if len(volume) < 2:  # no trend in one session
        raise ValueError(f"volume_price_divergence: need 2 sessions, have {len(volume)}")
    price_up = closes[-1] > closes[0]
    if p.volume_trend == "slope":
        volume_down = float(np.polyfit(np.arange(len(volume), dtype=float), volume, 1)[0]) < 0
    else:
        half = len(volume) // 2
        volume_down = float(volume[-half:].mean()) < float(volume[:half].mean())
    return bool(price_up and volume_down)


def portfolio_return(provider: MarketProvider, p: PortfolioReturnParams) -> float:
    """Equal-weight return over the window: buy-and-hold (``rebalance="none"``) or rebalanced daily.

    ``count="prices"``: the window holds ``days`` closes; ``"returns"``: ``days`` daily returns.
    """
    symbols = list(p.symbols)
    frame = _aligned_closes(provider, symbols)
    days = p.days + (1 if p.count == "returns" else 0)
    window = _last(frame, provider, days, p.window_unit, "portfolio_return")
    if p.rebalance == "daily":
        daily = window.pct_change().dropna().mean(axis=1)
        return float((1.0 + daily).prod() - 1.0)
    return float((window.iloc[-1] / window.iloc[0] - 1.0).mean())


def post_signal_return(provider: MarketProvider, p: PostSignalReturnParams) -> float:
    """Mean ``horizon``-session forward return after sessions whose RSI exceeds the threshold.

    ``signal="every_day"``: every session with RSI > threshold; ``"cross"``: only sessions where RSI
    moves above the threshold (the previous one was at or below). Signals without ``horizon``
    later sessions are skipped.
    """
    closes = _closes(provider, p.symbol)
    source, how = (p.symbol, "adjusted"), _Rsi(p.rsi_window, p.rsi_method, p.rsi_warmup)
    forward = closes.shift(-p.horizon) / closes - 1.0

    def mean_return(flat: float | None) -> float:
        rsi_values = _rsi_of(provider, source, closes, how, flat)
        above = rsi_values > p.rsi_threshold
        if p.signal == "cross":
            above = above & ~above.shift(1, fill_value=False) & rsi_values.shift(1).notna()
        chosen = forward[above & forward.notna()]
        if chosen.empty:
            raise ValueError("post_signal_return: no signal with a complete horizon")
        return float(chosen.mean())

    return _settled(mean_return, _flat_rsi(provider, source, closes, how))


P = TypeVar("P", bound=OracleParams)


@dataclass(frozen=True)
class Oracle(Generic[P]):
    """One trusted oracle: its function and the model of the parameters the function reads."""

    function: Callable[[MarketProvider, P], Any]
    params: type[P]

    def __call__(self, provider: MarketProvider, params: OracleParams) -> JSONValue:
        """The function's value on ``params`` (already parsed: :func:`parse_params`), as plain Python."""
        if not isinstance(params, self.params):
            raise TypeError(f"{self.function.__name__} takes {self.params.__name__}, not {type(params).__name__}")
        value: JSONValue = normalize(self.function(provider, params), ANSWER)
        return value


#: Oracle name -> its function and parameter model (the models are
#: :data:`runner.inputs.oracle_params.PARAMS`, which the task loader checks against).
ORACLES: dict[str, Oracle[Any]] = {
    "net_income": Oracle(net_income, NetIncomeParams),
    "total_revenue": Oracle(total_revenue, TotalRevenueParams),
    "latest_quote": Oracle(latest_quote, LatestQuoteParams),
    "latest_close": Oracle(latest_close, LatestCloseParams),
    "dividend_history": Oracle(dividend_history, DividendHistoryParams),
    "max_close": Oracle(max_close, MaxCloseParams),
    "rsi": Oracle(rsi, RsiParams),
    "moving_average": Oracle(moving_average, MovingAverageParams),
    "bollinger_bands": Oracle(bollinger_bands, BollingerBandsParams),
    "macd": Oracle(macd, MacdParams),
    "volatility": Oracle(volatility, VolatilityParams),
    "kdj": Oracle(kdj, KdjParams),
    "max_drawdown": Oracle(max_drawdown, MaxDrawdownParams),
    "correlation": Oracle(correlation, CorrelationParams),
    "ma_cross_rsi_signal": Oracle(ma_cross_rsi_signal, MaCrossRsiSignalParams),
    "volume_price_divergence": Oracle(volume_price_divergence, VolumePriceDivergenceParams),
    "portfolio_return": Oracle(portfolio_return, PortfolioReturnParams),
    "post_signal_return": Oracle(post_signal_return, PostSignalReturnParams),
}


def _oracle(name: str) -> Oracle[Any]:
    found = ORACLES.get(name)
    if found is None:
        raise InputError(f"unknown oracle {name!r} (known: {', '.join(sorted(ORACLES))})")
    return found


def compute(name: str, provider: MarketProvider, params: Mapping[str, JSONValue]) -> JSONValue:
    """Run one oracle function by name on JSON ``params`` and return its value as plain Python.

    :class:`InputError` for an unknown oracle, :class:`OracleParamsError` (an ``InputError``) for a
    parameter its model refuses; the function's own errors (data too short, an unknown symbol) pass through.
    """
    oracle = _oracle(name)
    return oracle(provider, parse_params(name, params))


def expected_values(task: Task, provider: MarketProvider, overrides: Mapping[str, JSONValue] | None = None,
                    where: str = "") -> dict[str, JSONValue]:
    """``{convention name: expected value}`` for every accepted reading of ``task``
    (:func:`accepted_readings`), primary first.

    ``overrides`` (a probe's ``oracle_params``) are merged last, over each reading's params. An
    unknown oracle name, a parameter the oracle's model refuses (missing, unknown, mistyped) or data
    too short for the task raise :class:`InputError` naming the task (and ``where``, e.g. ``probe 2``)
    and convention.
    """
    results: dict[str, JSONValue] = {}
    for name, value in each_reading(task, provider, overrides, where):
        if isinstance(value, InputError):
            raise value
        results[name] = value
    return results


def each_reading(task: Task, provider: MarketProvider, overrides: Mapping[str, JSONValue] | None = None,
                 where: str = "") -> Iterator[tuple[str, JSONValue | InputError]]:
    """``(convention name, its value)`` for every accepted reading of ``task``, primary first; for a
    reading that has no answer (a parameter its model refuses, data too short for it) the
    :class:`InputError` naming the task and the convention (the oracle's own words in its
    ``details["reason"]``), in place of the value."""
    if task.oracle.name not in ORACLES:
        raise InputError(f"task {task.id}: unknown oracle {task.oracle.name!r} "
                         f"(known: {', '.join(sorted(ORACLES))})")
    oracle = ORACLES[task.oracle.name]
    label = f"task {task.id}{' ' + where if where else ''}"
    cached = caching(provider)
    for name, reading in accepted_readings(task):
        merged: JSONObject = {**reading, **(overrides or {})}
        try:
            yield name, cached.value(task.oracle.name, oracle, parse_params(task.oracle.name, merged))
        except Unsettled as exc:
            yield name, OneOf(exc.values, exc.refuses, str(exc))
        except OracleParamsError as exc:
            yield name, InputError(f"{label}: oracle {task.oracle.name!r} convention {name!r}: {exc.detail}",
                                   reason=exc.detail)
        except (LookupError, ValueError, TypeError) as exc:  # e.g. a symbol the snapshot does not hold
            yield name, InputError(f"{label}: oracle {task.oracle.name!r} convention {name!r}: {exc}",
                                   reason=str(exc), undefined=isinstance(exc, Undefined))


def judged_values(task: Task, provider: MarketProvider, overrides: Mapping[str, JSONValue] | None = None,
                  where: str = "") -> dict[str, JSONValue]:
    """The expected values of an argument set the gate judges (a probe's, or any in a hidden world):
    :func:`expected_values` where every accepted reading answers; where some answer and others
    refuse, the answering readings' values and :data:`OR_RAISES`; :class:`InputError` (the first
    reading's reason) where none answers."""
    values: dict[str, JSONValue] = {}
    refused: list[tuple[str, InputError]] = []
    for name, value in each_reading(task, provider, overrides, where):
        if isinstance(value, InputError):
            refused.append((name, value))
        else:
            values[name] = value
    unsettled = [(name, v) for name, v in values.items() if isinstance(v, OneOf) and v.refuses]
    if unsettled and not refused:  # an unsettled reading one of whose choices gives no value accepts an error
        return {**values, OR_RAISES: f"{unsettled[0][0]}: {unsettled[0][1].why}"}
    if not refused:
        return values
    if not values:  # undefined (:func:`undefined_here`) when some reading finds it so and none answers
        raise next((exc for _, exc in refused if undefined_here(exc)), refused[0][1])
    names = [name for name, _ in refused]
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    first = refused[0][1]
    values[OR_RAISES] = (f"{shown} {'has' if len(names) == 1 else 'have'} no answer here: "
                         f"{first.details.get('reason', first.message)}")
    return values


def caching(provider: MarketProvider) -> _CachingProvider:
    """``provider`` with each symbol's bars read (and unadjusted) once, and each oracle value
    computed once, for as long as the returned object is kept (:class:`_CachingProvider`); a
    provider that caches already is returned as it is. Hold one for work that reads one provider
    many times (every argument set of a task in a world, every task on the run's snapshot): the
    values are the same, the frames are read once."""
    return provider if isinstance(provider, _CachingProvider) else _CachingProvider(provider)


class _CachingProvider:
    """The provider, each symbol's bars read (and unadjusted) once: every reading of a task, every
    argument set, reads them again. The oracle functions never modify the frames they are given.

    It also keeps each oracle value it was asked for (:meth:`value`): deriving a task's probes asks
    for the same argument sets as the task's own expected values and the chosen probes' (about one
    oracle call in seven on the run's snapshot was a repeat)."""

    def __init__(self, provider: MarketProvider) -> None:
        self._provider = provider
        self._bars: dict[tuple[str, str], pd.DataFrame] = {}
        self._values: dict[tuple[str, str], JSONValue | Exception] = {}
        self._kept: dict[tuple[Any, ...], Any] = {}

    def value(self, name: str, oracle: Oracle[Any], params: OracleParams) -> JSONValue:
        """``oracle(self, params)``, computed once: a later call gets a copy of the value (callers
        may change what they are given), or the same error raised again."""
        key = (name, params.model_dump_json())
        if key not in self._values:
            try:
                self._values[key] = oracle(self, params)
            except (LookupError, ValueError, TypeError) as exc:  # the oracle's "no answer here"
                self._values[key] = exc
        found = self._values[key]
        if isinstance(found, Exception):
            raise found.with_traceback(None)
        return copy.deepcopy(found) if isinstance(found, (list, dict)) else found

    def kept(self, key: tuple[Any, ...], compute: Callable[[], K]) -> K:
        """``compute()``, computed once per ``key`` (see :func:`_kept`); an error is not kept."""
        if key not in self._kept:
            self._kept[key] = compute()
        found: K = self._kept[key]
        return found

    @property
    def as_of(self) -> date:
        return self._provider.as_of

    def bars(self, symbol: str, prices: str) -> pd.DataFrame:
        if (symbol, prices) not in self._bars:
            self._bars[(symbol, prices)] = (_unadjust(self.bars(symbol, "adjusted")) if prices == "raw"
                                            else _read_history(self._provider, symbol, prices))
        return self._bars[(symbol, prices)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._provider, name)


#: The key of the expected values of a probe whose arguments the data cannot support: the tool must
#: raise (:func:`probe_expected_values`); its value is the oracle's reason.
RAISES = "<raises>"


#: The key of the expected values of a probe the data are too short to judge (its ``min_sessions``,
#: :func:`holds`): the probe is recorded as not judged there; its value says why.
NOT_HELD = "<not held>"


#: The key, beside the answering readings' values, of the expected values of an argument set some
#: accepted readings answer and others refuse (:func:`judged_values`): there a tool passes by matching
#: an answering reading -- the one its other values match -- or by raising a clear error, as a
#: refusing reading does; any other value fails. Its value says which readings refuse, and why.
OR_RAISES = "<or raises>"


def holds(task: Task, probe: Probe, provider: MarketProvider) -> str | None:
    """None when ``provider`` holds the history ``probe`` needs (its ``min_sessions`` of every symbol
    it reads), else why not, in words."""
    if probe.min_sessions is None:
        return None
    params = {**task.oracle.params, **probe.oracle_params}
    known = set(provider.symbols())
    symbols = sorted({v for value in params.values() for v in (value if isinstance(value, list) else [value])
                      if isinstance(v, str) and v in known})
    shortest = min((len(provider.history(s)) for s in symbols), default=0)
    if shortest >= probe.min_sessions:
        return None
    return f"not judged here: it needs {probe.min_sessions} sessions of history, the data hold {shortest}"


def probe_expectation(task: Task, provider: MarketProvider, probe: Probe, where: str = "") -> dict[str, JSONValue]:
    """``{convention: expected value}`` for ``probe`` (:func:`judged_values`: where some accepted
    readings refuse it, the others' values and :data:`OR_RAISES`); for a probe that expects an error,
    ``{RAISES: the oracle's reason}`` when no reading answers it (an :class:`InputError` when every
    reading does); for a probe the data are too short for (:func:`holds`), ``{NOT_HELD: why}``."""
    short = holds(task, probe, provider)
    if short is not None:
        return {NOT_HELD: short}
    try:
        values = judged_values(task, provider, probe.oracle_params, where)
    except InputError as exc:
        if probe.expect_error or undefined_here(exc):  # no number to give: the tool must raise
            return {RAISES: str(exc)}
        raise
    if not probe.expect_error:
        return refusable(task, provider, probe, values)
    if OR_RAISES in values:  # some reading answers it: raising is right, and so is that reading's value
        return values
    raise InputError(f"task {task.id} {where}: expects an error but the oracle answers it "
                     f"({', '.join(values)})")


def refusable(task: Task, provider: MarketProvider, probe: Probe | None,
              values: dict[str, JSONValue]) -> dict[str, JSONValue]:
    """``values`` (the oracle's for ``probe``'s arguments, the task's own for None) with
    :data:`OR_RAISES` beside them where a clear error is as right as the value: a probe that says so
    (:attr:`~runner.inputs.tasks.Probe.may_raise`), or a dividend window opening before the data
    (:func:`before_the_data`); as they are otherwise."""
    if OR_RAISES in values:
        return values
    if probe is not None and probe.may_raise:
        return {**values, OR_RAISES: f"{probe.label()}: a clear error is as right here as the value asked"}
    reason = before_the_data(task, provider, dict(probe.oracle_params) if probe is not None else {})
    return values if reason is None else {**values, OR_RAISES: reason}


def before_the_data(task: Task, provider: MarketProvider, overrides: Mapping[str, JSONValue]) -> str | None:
    """Why a dividend window may be refused: it opens more than :data:`CALENDAR_SLACK_DAYS` before the
    first bar, where what lies before is unknown, not absent (benchmarks/README.md: such a window is
    as unanswerable as too few sessions; the oracle lists the dividends held, as most tools do, since
    yfinance serves a whole dividend history). None for any other task or window."""
    if task.oracle.name != "dividend_history":
        return None
    params = {**task.oracle.params, **overrides}
    symbol, years = params.get("symbol"), params.get("years")
    if not isinstance(symbol, str) or not isinstance(years, int) or isinstance(years, bool) \
            or symbol not in provider.symbols():
        return None
    start = pd.Timestamp(provider.as_of) - pd.DateOffset(years=years)
    first = _local_days(_closes(provider, symbol).index[:1])
    if not len(first) or first[0] <= start + pd.Timedelta(days=CALENDAR_SLACK_DAYS):
        return None
    return f"{symbol}: the data start {first[0].date()}, after the window's start {start.date()}"


def probe_expected_values(task: Task, provider: MarketProvider) -> list[dict[str, JSONValue]]:
    """One ``{convention: expected value}`` per probe of ``task``, in the task's probe order."""
    provider = caching(provider)
    return [probe_expectation(task, provider, probe, f"probe {i} ({probe.label()})")
            for i, probe in enumerate(task.probes, start=1)]
