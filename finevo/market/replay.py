"""The yfinance replay shim: what ``import yfinance as yf`` gives a tool inside the sandbox.

It serves the API surface tools use -- ``Ticker`` (``history``, ``dividends``, ``splits``,
``actions``, ``income_stmt``, ``quarterly_income_stmt``, ``financials``,
``quarterly_financials``, ``info``, ``fast_info``, ``get_*``), ``download`` and ``Tickers`` --
from a :class:`~finevo.market.provider.MarketProvider`, with yfinance 1.x frame shapes: daily
``DatetimeIndex`` named ``Date`` in America/New_York (``download``: tz-naive, columns
``MultiIndex (Price, Ticker)``), ``Volume`` int64, prices float64, Yahoo row labels.

"Today" is the provider's as-of date. ``period=`` counts back from it: ``1d``/``5d`` are the last
1/5 sessions (as Yahoo's ranges are), other ``Nd``/``Nwk``/``Nmo``/``Ny`` are calendar spans
(rows strictly after ``as_of - span``), ``ytd`` starts on January 1, ``max`` is everything
recorded. ``start`` is inclusive, ``end`` exclusive, as in yfinance. Periods reaching before the
first recorded day return what is recorded.

Anything not recorded raises :class:`ReplayDataError` naming it: an unknown symbol, an interval
other than ``1d``, a window with no recorded bar, an attribute such as ``.options`` or
``.balance_sheet``.

:func:`install` binds the shim to a provider, registers it as ``sys.modules["yfinance"]`` and
freezes the process clock at the as-of date, 16:00 New York (see :mod:`finevo.market.frozen_clock`),
08:00 when the data were recorded before that day's open (``before_open``), or the moment they
were recorded while its session was open (``during_session``: the last bar is the session so far).

Data recorded before the open on an ex-dividend date hold a *pending event row* (see
:mod:`finevo.market.snapshot`); ``history(actions=True)`` (the default) ends with it as yfinance 1.x
does (``utils.safe_merge_dfs``): prices NaN, ``Volume`` 0, the dividend, the price columns then in
the order of their names. ``actions=False`` (``download``'s default) drops it; ``dividends`` and
``actions`` list it.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import date, datetime
from datetime import time as dtime
from typing import TYPE_CHECKING, Any, Literal
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from finevo.market import frozen_clock
from finevo.market.provider import MarketProvider
from finevo.market.snapshot import PRICED_COLUMNS

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

__version__ = "1.7.0"  # the yfinance API version mirrored
EXCHANGE_TZ = "America/New_York"
MARKET_CLOSE = dtime(16, 0)
#: "Now" in data recorded before the open (the pre-market hours, before 09:30).
BEFORE_OPEN = dtime(8, 0)
VALID_PERIODS = ("1d", "5d", "1mo", "3mo", "6mo", "1y", "2y", "5y", "10y", "ytd", "max")
_PERIOD_RE = re.compile(r"^([1-9]\d*)(d|wk|mo|y)$")
_ACTION_COLUMNS = ("Dividends", "Stock Splits", "Capital Gains")


class ReplayDataError(Exception):
    """The replayed market data does not hold what was asked for."""


class ReplayUnsupported(ReplayDataError, AttributeError):
    """A yfinance attribute the replay does not record (``hasattr`` sees it as missing)."""


class _Binding:
    provider: MarketProvider | None = None


_BINDING = _Binding()


def bind(provider: MarketProvider | None) -> None:
    """Serve data from ``provider`` (without touching ``sys.modules`` or the clock)."""
    _BINDING.provider = provider


def _provider() -> MarketProvider:
    if _BINDING.provider is None:
        raise ReplayDataError("the yfinance replay is not bound to any market data (call install())")
    return _BINDING.provider


def as_of_moment(provider: MarketProvider) -> datetime:
    """The sandbox's "now", New York time: the as-of date at the close, before its open when the
    data were recorded then (a provider's ``before_open``), or the moment of its session they were
    recorded at (its ``during_session``)."""
    during = getattr(provider, "during_session", None)
    if during is not None:
        return datetime.combine(provider.as_of, during, ZoneInfo(EXCHANGE_TZ))
    if getattr(provider, "before_open", False):
        return datetime.combine(provider.as_of, BEFORE_OPEN, ZoneInfo(EXCHANGE_TZ))
    return as_of_moment_from_date(provider.as_of)


def as_of_moment_from_date(as_of: date) -> datetime:
    return datetime.combine(as_of, MARKET_CLOSE, ZoneInfo(EXCHANGE_TZ))


_DEFAULT = object()


@dataclass(frozen=True)
class _PriceQuery:
    """What a ``history`` / ``download`` call asks of the daily bars; its other arguments (threads,
    proxies, timeouts, repair, pre/post market) change nothing in replayed data.

    ``Ticker.history``, ``Tickers.history`` and ``download`` keep yfinance's own signatures, more
    than six parameters each: a tool written for yfinance passes any of them, by keyword or by
    position, and must run unchanged. Past the signature, the ones that matter travel as this.
    """

    period: Any = _DEFAULT
    interval: str = "1d"
    start: Any = None
    end: Any = None
    actions: bool = True
    auto_adjust: bool = True
    back_adjust: bool = False
    rounding: bool = False


#: Fields a snapshot's writer keeps for the gate (whether the data are generated) that Yahoo never
#: serves: a tool must not be able to tell generated data from recorded data through the shim.
WRITER_FIELDS = frozenset({"synthetic"})


def _as_served(fields: JSONObject) -> JSONObject:
    return {k: v for k, v in fields.items() if k not in WRITER_FIELDS}


# --------------------------------------------------------------------------- dates
def _to_exchange_ts(value: Any, what: str) -> pd.Timestamp:
    """yfinance's reading of a start/end: str/date/naive datetime are exchange-local."""
    real_ts = pd.Timestamp
    try:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            stamp = real_ts(int(value), unit="s", tz="UTC")
        elif isinstance(value, (str, datetime)):
            stamp = real_ts(value)
        elif isinstance(value, date):
            stamp = real_ts(value.year, value.month, value.day)
        else:
            raise TypeError(type(value).__name__)
    except (ValueError, TypeError) as exc:
        raise ReplayDataError(f"cannot read {what}={value!r} as a date ({exc})") from None
    if stamp is pd.NaT:
        raise ReplayDataError(f"cannot read {what}={value!r} as a date")
    return stamp.tz_localize(EXCHANGE_TZ) if stamp.tzinfo is None else stamp.tz_convert(EXCHANGE_TZ)


def _period_offset(period: str) -> pd.DateOffset:
    match = _PERIOD_RE.match(period)
    if match is None:
        raise ReplayDataError(f"invalid period {period!r}; valid periods: {', '.join(VALID_PERIODS)}")
    n, unit = int(match.group(1)), match.group(2)
    return {"d": pd.DateOffset(days=n), "wk": pd.DateOffset(weeks=n),
            "mo": pd.DateOffset(months=n), "y": pd.DateOffset(years=n)}[unit]


def _select(frame: pd.DataFrame, symbol: str, as_of: date, period: Any, start: Any, end: Any) -> pd.DataFrame:
    """Rows of ``frame`` for yfinance's (period, start, end) semantics, counted from ``as_of``.

    ``frame`` may be a provider's own (shared) frame: the rows are cut by position from its sorted
    index (:func:`_rows`), so nothing is copied here but what the caller copies of the rows kept."""
    if period is _DEFAULT:
        period = None if (start is not None or end is not None) else "1mo"
    if period is not None and not isinstance(period, str):
        raise ReplayDataError(f"period must be a string like '1mo', not {period!r}")
    if period is not None:
        period = period.lower()
    now = pd.Timestamp(as_of_moment_from_date(as_of))
    if start is not None and end is not None and period is not None and period != "max":
        raise ValueError("Setting period, start and end is nonsense. Set maximum 2 of them.")
    if start is None and end is None:
        if period == "max":
            rows = _rows(frame, None, False, now, True)
        elif period == "ytd":
            rows = _rows(frame, pd.Timestamp(as_of.year, 1, 1, tz=EXCHANGE_TZ), True, now, True)
        elif period in ("1d", "5d"):
            upto = _rows(frame, None, False, now, True)
            return _nonempty(upto.iloc[-int(period[0]):], symbol, f"period={period!r}")
        else:
            rows = _rows(frame, now.normalize() - _period_offset(period), False, now, True)
        return _nonempty(rows, symbol, f"period={period!r}")
    start_ts = _to_exchange_ts(start, "start") if start is not None else None
    end_ts = _to_exchange_ts(end, "end") if end is not None else None
    if period is not None and period != "max":
        offset = _period_offset(period)
        if start_ts is not None and end_ts is None:
            end_ts = start_ts + offset
        elif end_ts is not None and start_ts is None:
            start_ts = end_ts - offset
    if start_ts is None and end_ts is not None:
        start_ts = end_ts - pd.DateOffset(months=1)
    if end_ts is None:
        end_ts = now
    assert start_ts is not None
    if start_ts.tz_convert(EXCHANGE_TZ).date() > as_of:
        raise ReplayDataError(f"{symbol}: start={start!r} is after the data's as-of date {as_of} "
                              "(\"today\"); nothing is recorded then")
    return _nonempty(_rows(frame, start_ts, True, end_ts, False), symbol, f"start={start!r}, end={end!r}")


def _rows(frame: pd.DataFrame, low: pd.Timestamp | None, low_inclusive: bool,
          high: pd.Timestamp, high_inclusive: bool) -> pd.DataFrame:
    """The rows of ``frame`` whose index lies after ``low`` (None: from the first) and before
    ``high``, each bound inclusive or not. On a sorted index without a ``freq`` (every recorded or
    generated history) the rows are one positional slice found by binary search, the frame itself
    untouched; any other index is masked, as it always was. Either way the rows and their index are
    the same, ``freq`` included."""
    index = frame.index
    if isinstance(index, pd.DatetimeIndex) and index.freq is None and index.is_monotonic_increasing:
        first = 0 if low is None else int(index.searchsorted(low, side="left" if low_inclusive else "right"))
        last = int(index.searchsorted(high, side="right" if high_inclusive else "left"))
        return frame.iloc[first:max(first, last)]
    mask = (index <= high) if high_inclusive else (index < high)
    if low is not None:
        mask &= (index >= low) if low_inclusive else (index > low)
    return frame[mask]


def _nonempty(frame: pd.DataFrame, symbol: str, what: str) -> pd.DataFrame:
    if frame.empty:
        raise ReplayDataError(f"{symbol}: no daily bars recorded for {what}")
    return frame


def _with_events(frame: pd.DataFrame, pending: pd.DataFrame | None, query: _PriceQuery) -> pd.DataFrame:
    """``frame`` (the bars of ``query``) with the pending event rows it reaches, as yfinance 1.x merges
    an event dated after the last bar: the price columns then in the order of their names (its
    ``concat(sort=True)``), and with ``actions`` the frame ending with the event's row, prices NaN,
    ``Volume`` 0 (without, ``keepna=False`` drops that row again). An event reaches a query with no
    ``end`` (up to now) or one before ``end``, on or after ``start``."""
    if pending is None or pending.empty:
        return frame
    days = pd.DatetimeIndex(pending.index)
    keep = np.ones(len(pending), dtype=bool)
    if query.end is not None:
        keep &= days < _to_exchange_ts(query.end, "end")
    if query.start is not None:
        keep &= days >= _to_exchange_ts(query.start, "start").normalize()
    if not keep.any():
        return frame
    out = frame
    if query.actions:
        rows = pending[keep].reindex(columns=frame.columns)
        actions = [c for c in _ACTION_COLUMNS if c in rows.columns]
        rows[actions] = rows[actions].fillna(0.0)
        out = pd.concat([frame, rows])
        out["Volume"] = out["Volume"].fillna(0).astype("int64")
    prices = sorted(c for c in out.columns if c in PRICED_COLUMNS)
    return out[prices + [c for c in out.columns if c not in PRICED_COLUMNS]]


# --------------------------------------------------------------------------- fast_info
class FastInfo(Mapping[str, Any]):
    """Like yfinance's FastInfo: camelCase keys, attribute access, snake_case aliases."""

    def __init__(self, symbol: str, values: JSONObject) -> None:
        self._symbol = symbol
        self._values = dict(values)

    @staticmethod
    def _camel(key: str) -> str:
        head, *rest = key.split("_")
        return head + "".join(part[:1].upper() + part[1:] for part in rest)

    def __getitem__(self, key: str) -> Any:
        if not isinstance(key, str):
            raise KeyError(f"key must be a string not '{type(key)}'")
        camel = self._camel(key)
        if camel not in self._values:
            raise KeyError(f"'{key}' not valid key. Examine 'FastInfo.keys()'")
        return self._values[camel]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise ReplayUnsupported(f"fast_info of {self._symbol} has no field {name!r} "
                                    f"(recorded: {', '.join(sorted(self._values))})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._values))

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key in self._values

    def toJSON(self, indent: int = 4) -> str:  # yfinance's name
        import json

        return json.dumps(dict(self.items()), indent=indent)

    def __repr__(self) -> str:
        return "lazy-loading dict with keys = " + str(list(self))


# --------------------------------------------------------------------------- Ticker
class Ticker:
    """``yfinance.Ticker`` over the replayed data."""

    def __init__(self, ticker: str, session: Any = None) -> None:
        if not isinstance(ticker, str) or not ticker.strip():
            raise ReplayDataError(f"invalid ticker {ticker!r}")
        self.ticker = ticker.strip().upper()

    def __repr__(self) -> str:
        return f"yfinance.Ticker object <{self.ticker}>"

    # ----------------------------------------------------------------- plumbing
    def _provider(self) -> MarketProvider:
        provider = _provider()
        if self.ticker not in provider.symbols():
            raise ReplayDataError(f"symbol {self.ticker!r} is not in the recorded market data "
                                  f"(recorded: {', '.join(provider.symbols())})")
        return provider

    def _bars(self, auto_adjust: bool) -> pd.DataFrame:
        """The whole daily history, for reading only: a provider's own frame when it shares one
        (``history_view``), which the callers here cut before they copy; else its copy."""
        provider = self._provider()
        view = getattr(provider, "history_view", None)
        if view is not None:
            shared: pd.DataFrame | None = view(self.ticker, adjusted=auto_adjust)
            if shared is not None:
                return shared
        if auto_adjust:
            return provider.history(self.ticker)
        unadjusted = getattr(provider, "history_unadjusted", None)
        if unadjusted is None:
            raise ReplayDataError(f"{self.ticker}: unadjusted prices (auto_adjust=False) are not recorded")
        return unadjusted(self.ticker)

    # ----------------------------------------------------------------- prices
    def history(  # noqa: PLR0913 -- yfinance's own signature (see _PriceQuery)
            self, period: Any = _DEFAULT, interval: str = "1d", start: Any = None, end: Any = None,
            prepost: bool = False, actions: bool = True, auto_adjust: bool = True,
            back_adjust: bool = False, repair: bool = False, keepna: bool = False,
            rounding: bool = False, timeout: float | None = 10, raise_errors: bool = False,
            **_ignored: Any) -> pd.DataFrame:
        return self._prices(_PriceQuery(period=period, interval=interval, start=start, end=end, actions=actions,
                                        auto_adjust=auto_adjust, back_adjust=back_adjust, rounding=rounding))

    def _prices(self, query: _PriceQuery) -> pd.DataFrame:
        if query.interval != "1d":
            raise ReplayDataError(f"{self.ticker}: only interval='1d' is recorded, not {query.interval!r}")
        auto_adjust, back_adjust = query.auto_adjust, query.back_adjust
        provider = self._provider()
        frame = _select(self._bars(auto_adjust or back_adjust), self.ticker, provider.as_of,
                        query.period, query.start, query.end).copy()
        if back_adjust and not auto_adjust:
            raw = self._bars(False).loc[frame.index]
            ratio = raw["Adj Close"] / raw["Close"]
            frame = raw.copy()
            for column in ("Open", "High", "Low"):
                frame[column] = raw[column] * ratio
            frame = frame.drop(columns=["Adj Close"])
        if not query.actions:
            frame = frame.drop(columns=[c for c in _ACTION_COLUMNS if c in frame.columns])
        frame = _with_events(frame, self._pending(), query)
        if query.rounding:
            prices = [c for c in PRICED_COLUMNS if c in frame.columns]
            frame[prices] = frame[prices].round(2)
        return frame

    def _pending(self) -> pd.DataFrame | None:
        """The pending event rows after the last bar (None: the provider records none)."""
        pending = getattr(self._provider(), "pending", None)
        return None if pending is None else pending(self.ticker)

    def get_dividends(self, period: str = "max") -> pd.Series:
        series = self._provider().dividends(self.ticker)
        return self._within(series, period)

    def get_splits(self, period: str = "max") -> pd.Series:
        bars = self._within(self._bars(True), period)
        return bars.loc[bars["Stock Splits"] != 0, "Stock Splits"]

    def get_capital_gains(self, period: str = "max") -> pd.Series:
        bars = self._within(self._bars(True), period)
        if "Capital Gains" not in bars.columns:
            return pd.Series(dtype="float64", name="Capital Gains")
        return bars.loc[bars["Capital Gains"] != 0, "Capital Gains"]

    def get_actions(self, period: str = "max") -> pd.DataFrame:
        bars = self._bars(True)
        columns = [c for c in _ACTION_COLUMNS if c in bars.columns]
        pending = self._pending()
        acts = bars[columns] if pending is None or pending.empty else \
            pd.concat([bars[columns], pending.reindex(columns=columns).fillna(0.0)])
        acts = self._within(acts, period)
        return acts[(acts != 0).any(axis=1)]

    def _within(self, obj: Any, period: str) -> Any:
        if period == "max" or len(obj) == 0:
            return obj
        as_of = self._provider().as_of
        if period == "ytd":
            return obj[obj.index >= pd.Timestamp(as_of.year, 1, 1, tz=EXCHANGE_TZ)]
        cutoff = pd.Timestamp(as_of_moment_from_date(as_of)).normalize() - _period_offset(period)
        return obj[obj.index > cutoff]

    dividends = property(lambda self: self.get_dividends())
    splits = property(lambda self: self.get_splits())
    capital_gains = property(lambda self: self.get_capital_gains())
    actions = property(lambda self: self.get_actions())

    # ----------------------------------------------------------------- statements
    def get_income_stmt(self, as_dict: bool = False, pretty: bool = False,
                        freq: Literal["yearly", "quarterly"] = "yearly") -> Any:
        if freq not in ("yearly", "quarterly"):
            raise ReplayDataError(f"{self.ticker}: income statement freq={freq!r} is not recorded "
                                  "(recorded: 'yearly', 'quarterly')")
        frame = self._provider().income_stmt(self.ticker, freq)
        if not pretty:
            frame.index = [str(label).replace(" ", "") for label in frame.index]
        return frame.to_dict() if as_dict else frame

    def get_incomestmt(self, as_dict: bool = False, pretty: bool = False, freq: str = "yearly") -> Any:
        return self.get_income_stmt(as_dict, pretty, freq)  # type: ignore[arg-type]

    def get_financials(self, as_dict: bool = False, pretty: bool = False, freq: str = "yearly") -> Any:
        return self.get_income_stmt(as_dict, pretty, freq)  # type: ignore[arg-type]

    income_stmt = property(lambda self: self.get_income_stmt(pretty=True))
    incomestmt = income_stmt
    financials = income_stmt
    quarterly_income_stmt = property(lambda self: self.get_income_stmt(pretty=True, freq="quarterly"))
    quarterly_incomestmt = quarterly_income_stmt
    quarterly_financials = quarterly_income_stmt

    # ----------------------------------------------------------------- quotes
    def get_info(self) -> JSONObject:
        return _as_served(self._provider().info(self.ticker))

    def get_fast_info(self) -> FastInfo:
        return FastInfo(self.ticker, _as_served(self._provider().fast_info(self.ticker)))

    info = property(lambda self: self.get_info())
    fast_info = property(lambda self: self.get_fast_info())

    def get_history_metadata(self) -> JSONObject:
        provider = self._provider()
        info = provider.info(self.ticker)
        return {"currency": info.get("currency", "USD"), "symbol": self.ticker,
                "exchangeName": info.get("exchange"), "instrumentType": info.get("quoteType"),
                "exchangeTimezoneName": EXCHANGE_TZ, "timezone": "EST",
                "regularMarketPrice": info.get("regularMarketPrice"), "dataGranularity": "1d",
                "validRanges": list(VALID_PERIODS)}

    history_metadata = property(lambda self: self.get_history_metadata())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise ReplayUnsupported(f"yfinance.Ticker.{name} is not recorded in the replayed market data "
                                f"(ticker {self.ticker}); available: history, dividends, splits, actions, "
                                "income_stmt, quarterly_income_stmt, financials, quarterly_financials, "
                                "info, fast_info")


class Tickers:
    """``yfinance.Tickers``: several Ticker objects, ``.tickers[sym]`` and ``.history``/``.download``."""

    def __init__(self, tickers: str | Iterable[str], session: Any = None) -> None:
        symbols = _split_symbols(tickers)
        self.symbols = symbols
        self.tickers = {sym: Ticker(sym) for sym in symbols}

    def history(  # noqa: PLR0913 -- yfinance's own signature (see _PriceQuery)
            self, period: Any = _DEFAULT, interval: str = "1d", start: Any = None, end: Any = None,
            actions: bool = True, auto_adjust: bool = True, group_by: str = "column",
            **kwargs: Any) -> pd.DataFrame:
        return download(self.symbols, start=start, end=end, actions=actions, auto_adjust=auto_adjust,
                        period=period, interval=interval, group_by=group_by, **kwargs)

    def download(self, *args: Any, **kwargs: Any) -> pd.DataFrame:
        return self.history(*args, **kwargs)

    def __repr__(self) -> str:
        return f"yfinance.Tickers object <{','.join(self.symbols)}>"


def _split_symbols(tickers: str | Iterable[str]) -> list[str]:
    items = tickers.replace(",", " ").split() if isinstance(tickers, str) else [str(t) for t in tickers]
    symbols: list[str] = []
    for item in items:
        sym = item.strip().upper()
        if sym and sym not in symbols:
            symbols.append(sym)
    if not symbols:
        raise ReplayDataError("no tickers given")
    return symbols


def download(  # noqa: PLR0913 -- yfinance's own signature (see _PriceQuery)
        tickers: str | Iterable[str], start: Any = None, end: Any = None, actions: bool = False,
        threads: bool | int = True, ignore_tz: bool | None = None, group_by: str = "column",
        auto_adjust: bool = True, back_adjust: bool = False, repair: bool = False,
        keepna: bool = False, progress: bool = True, period: Any = _DEFAULT, interval: str = "1d",
        prepost: bool = False, rounding: bool = False, timeout: float | None = 10,
        session: Any = None, multi_level_index: bool = True, **_ignored: Any) -> pd.DataFrame:
    """``yfinance.download``: columns ``MultiIndex (Price, Ticker)`` (``(Ticker, Price)`` with
    ``group_by="ticker"``); daily index tz-naive unless ``ignore_tz=False``."""
    symbols = _split_symbols(tickers)
    if ignore_tz is None:
        ignore_tz = True
    query = _PriceQuery(period=period, interval=interval, start=start, end=end, actions=actions,
                        auto_adjust=auto_adjust, back_adjust=back_adjust, rounding=rounding)
    frames: dict[str, pd.DataFrame] = {}
    for sym in sorted(symbols):
        frame = Ticker(sym)._prices(query)
        if ignore_tz:
            frame.index = frame.index.tz_localize(None)
        frames[sym] = frame
    index = None
    for frame in frames.values():
        index = frame.index if index is None else index.union(frame.index)
    frames = {sym: frame.reindex(index) for sym, frame in frames.items()}
    data = pd.concat(list(frames.values()), axis=1, keys=list(frames.keys()), names=["Ticker", "Price"])
    if group_by == "column":
        data.columns = data.columns.swaplevel(0, 1)
        data = data.sort_index(level=0, axis=1)
    if not multi_level_index and len(symbols) == 1:
        data = data.droplevel(0 if group_by == "ticker" else 1, axis=1).rename_axis(None, axis=1)
    data.index.name = "Date"
    return data


# --------------------------------------------------------------------------- installation
#: Names the installed ``yfinance`` module exposes.
__all__ = ["FastInfo", "ReplayDataError", "ReplayUnsupported", "Ticker", "Tickers", "__version__", "download"]


def _module_getattr(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    raise ReplayUnsupported(f"yfinance.{name} is not available in the replayed market data "
                            f"(available: {', '.join(n for n in __all__ if not n.startswith('_'))})")


def build_module() -> types.ModuleType:
    """A fresh ``yfinance`` module object exposing the shim."""
    module = types.ModuleType("yfinance", "yfinance replay: recorded market data, not the network.")
    for name in __all__:
        setattr(module, name, globals()[name])
    module.__getattr__ = _module_getattr  # type: ignore[method-assign]
    module.__finevo_replay__ = True  # type: ignore[attr-defined]
    return module


def install(provider: MarketProvider) -> None:
    """Serve ``import yfinance`` from ``provider`` and freeze the clock at its as-of close.

    Idempotent and cheap: a second call re-binds the provider and re-anchors the clock.
    """
    bind(provider)
    current = sys.modules.get("yfinance")
    if current is None or not getattr(current, "__finevo_replay__", False):
        for name in [m for m in sys.modules if m == "yfinance" or m.startswith("yfinance.")]:
            del sys.modules[name]
        sys.modules["yfinance"] = build_module()
    frozen_clock.freeze(as_of_moment(provider))


def uninstall() -> None:
    """Undo :func:`install` (tests): drop the shim module, unbind, restore the real clock."""
    current = sys.modules.get("yfinance")
    if current is not None and getattr(current, "__finevo_replay__", False):
        del sys.modules["yfinance"]
    bind(None)
    frozen_clock.unfreeze()
