"""The trusted reference oracle: every benchmark task's expected value, computed outside the
sandbox from a :class:`~finevo.market.provider.MarketProvider`.

``expected_values(task, provider)`` returns one value per accepted convention of the task (in
the task's order, the first being the primary reading); each convention's ``params`` are merged
over ``task.oracle.params`` and handed to the oracle function named by ``task.oracle.name``.

Shared readings (documented with their reasons in ``benchmarks/README.md``):

* "last N days" is the last N trading sessions ending on the as-of date (N closing prices);
  ``window_unit="calendar"`` instead takes the sessions dated on or after ``as_of - N days``.
* Returns are simple fractions (0.05, never 5 %); ``returns="log"`` selects log returns.
* RSI uses Wilder's smoothing, i.e. ``ewm(alpha=1/n, adjust=False)`` of gains and losses,
  on a scale of 0..100; ``method="simple"`` uses plain n-period means (Cutler's RSI).
* Every value is plain Python (see :func:`finevo.contract.normalise`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd

from finevo.contract import normalise
from finevo.errors import InputError
from finevo.market.provider import MarketProvider
from finevo.tasks import Task

__all__ = ["ORACLES", "OracleFunction", "compute", "expected_values", "probe_expected_values", "rsi_series"]

OracleFunction = Callable[[MarketProvider, dict[str, Any]], Any]

TRADING_DAYS_PER_YEAR = 252


# --------------------------------------------------------------------------- series helpers
def _history(provider: MarketProvider, symbol: str) -> pd.DataFrame:
    frame = provider.history(symbol)
    if frame is None or frame.empty:
        raise ValueError(f"no price history for {symbol}")
    as_of = provider.as_of
    dates = frame.index.date
    return frame.loc[dates <= as_of].sort_index()


def _closes(provider: MarketProvider, symbol: str) -> pd.Series:
    return _history(provider, symbol)["Close"].astype(float)


def _last(frame: pd.DataFrame | pd.Series, provider: MarketProvider, days: int, unit: str = "sessions",
          what: str = "") -> Any:
    """The last ``days`` sessions (``unit="sessions"``) or sessions since ``as_of - days`` (calendar)."""
    days = int(days)
    if days <= 0:
        raise ValueError(f"days must be positive, got {days}")
    if unit == "sessions":
        if len(frame) < days:
            raise ValueError(f"{what}: need {days} sessions, have {len(frame)}")
        return frame.iloc[-days:]
    if unit == "calendar":
        start = provider.as_of - timedelta(days=days)
        window = frame.loc[frame.index.date >= start]
        if len(window) < 2:
            raise ValueError(f"{what}: fewer than 2 sessions since {start}")
        return window
    raise ValueError(f"unknown window_unit {unit!r} (sessions | calendar)")


def _returns(closes: pd.Series, kind: str = "simple") -> pd.Series:
    if kind == "simple":
        return closes.pct_change().dropna()
    if kind == "log":
        return np.log(closes / closes.shift(1)).dropna()
    raise ValueError(f"unknown returns kind {kind!r} (simple | log)")


def rsi_series(closes: pd.Series, window: int, method: str = "wilder") -> pd.Series:
    """RSI (0..100) of ``closes``; NaN until ``window`` changes are available.

    ``wilder``: gains/losses smoothed by ``ewm(alpha=1/window, adjust=False)`` starting at the first
    price change. ``simple``: plain ``window``-period means of gains and losses.
    """
    window = int(window)
    change = closes.astype(float).diff().iloc[1:]
    gains = change.clip(lower=0.0)
    losses = (-change).clip(lower=0.0)
    if method == "wilder":
        avg_gain = gains.ewm(alpha=1.0 / window, adjust=False, min_periods=window).mean()
        avg_loss = losses.ewm(alpha=1.0 / window, adjust=False, min_periods=window).mean()
    elif method == "simple":
        avg_gain = gains.rolling(window).mean()
        avg_loss = losses.rolling(window).mean()
    else:
        raise ValueError(f"unknown RSI method {method!r} (wilder | simple)")
    with np.errstate(divide="ignore", invalid="ignore"):
        rsi = 100.0 - 100.0 / (1.0 + avg_gain / avg_loss)
    rsi = rsi.where(avg_loss != 0, 100.0).where(avg_gain.notna() & avg_loss.notna())
    return rsi.reindex(closes.index)


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
    months = {pd.Timestamp(c).month for c in yearly.columns} if not yearly.empty else set()
    return months.pop() if len(months) == 1 else None


def net_income(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Quarterly Net Income; year/quarter omitted = the latest reported quarter.

    ``basis="calendar"``: the quarter ending in calendar quarter ``quarter`` of ``year``.
    ``basis="fiscal"``: fiscal quarter of the fiscal year ending in ``year``, in the month the company's
    annual statements end (``fiscal_year_end_month`` when the statements do not say).
    """
    symbol = p["symbol"]
    row = _line_item(provider, symbol, "quarterly", "Net Income")
    year, quarter = p.get("year"), p.get("quarter")
    if year is None and quarter is None:
        return _latest(row.sort_index(), f"{symbol} Net Income")
    if year is None or quarter is None or not 1 <= int(quarter) <= 4:
        raise ValueError(f"net_income needs both year and quarter 1..4, got year={year} quarter={quarter}")
    if p.get("basis", "calendar") == "calendar":
        end = _quarter_end(int(year), 3 * int(quarter))
    else:
        fy_end = _fiscal_year_end_month(provider, symbol) or int(p.get("fiscal_year_end_month", 12))
        months = (int(year) - 1) * 12 + (fy_end - 1) + 3 * int(quarter)
        end = _quarter_end(months // 12, months % 12 + 1)
    value = row[_statement_column(row.to_frame().T, end, f"{symbol} Net Income")]
    if not math.isfinite(float(value)):
        raise ValueError(f"{symbol} Net Income for the quarter ending {end.date()} is not reported")
    return float(value)


def total_revenue(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Annual Total Revenue of the fiscal year ending in ``year``."""
    symbol, year = p["symbol"], int(p["year"])
    row = _line_item(provider, symbol, "yearly", "Total Revenue")
    matches = [c for c in row.index if pd.Timestamp(c).year == year and math.isfinite(float(row[c]))]
    if len(matches) != 1:
        raise ValueError(f"{symbol}: expected one fiscal year ending in {year}, found {len(matches)}")
    return float(row[matches[0]])


# --------------------------------------------------------------------------- prices
def latest_close(provider: MarketProvider, p: dict[str, Any]) -> float:
    return float(_closes(provider, p["symbol"]).iloc[-1])


def latest_quote(provider: MarketProvider, p: dict[str, Any]) -> float:
    """The last traded price: ``fast_info['lastPrice']`` (``source="fast_info"``), ``info`` price, or last close."""
    symbol, source = p["symbol"], p.get("source", "fast_info")
    if source == "history":
        return latest_close(provider, p)
    if source == "fast_info":
        fields = provider.fast_info(symbol)
        for key in ("lastPrice", "last_price"):
            if fields.get(key) is not None:
                return float(fields[key])
        raise ValueError(f"{symbol}: fast_info has no lastPrice")
    if source == "info":
        fields = provider.info(symbol)
        for key in ("regularMarketPrice", "currentPrice"):
            if fields.get(key) is not None:
                return float(fields[key])
        raise ValueError(f"{symbol}: info has no regularMarketPrice/currentPrice")
    raise ValueError(f"unknown quote source {source!r} (fast_info | info | history)")


def dividend_history(provider: MarketProvider, p: dict[str, Any]) -> list[dict[str, Any]]:
    """Dividends with ex-date on or after ``as_of - years`` (calendar years), as date/amount records."""
    symbol, years = p["symbol"], int(p["years"])
    divs = provider.dividends(symbol)
    start = pd.Timestamp(provider.as_of) - pd.DateOffset(years=years)
    dates = divs.index.tz_localize(None) if divs.index.tz is not None else divs.index
    mask = (dates.normalize() >= start) & (dates.date <= provider.as_of) & (divs.to_numpy() > 0)
    chosen = divs.loc[mask].sort_index(ascending=p.get("order", "asc") == "asc")
    if chosen.empty:
        raise ValueError(f"{symbol}: no dividends since {start.date()}")
    return [{"date": ts.strftime("%Y-%m-%d"), "amount": float(v)} for ts, v in chosen.items()]


def max_close(provider: MarketProvider, p: dict[str, Any]) -> float:
    closes = _last(_closes(provider, p["symbol"]), provider, p["days"], p.get("window_unit", "sessions"), "max_close")
    return float(closes.max())


def moving_average(provider: MarketProvider, p: dict[str, Any]) -> list[float]:
    """The last ``days`` values of the ``window``-session simple moving average of Close, oldest first."""
    closes = _closes(provider, p["symbol"])
    sma = closes.rolling(int(p["window"])).mean().dropna()
    values = _last(sma, provider, p["days"], "sessions", "moving_average")
    return [float(v) for v in values]


# --------------------------------------------------------------------------- indicators
def rsi(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Latest RSI; ``lookback="window"`` computes it from the last ``days`` closes only."""
    closes = _closes(provider, p["symbol"])
    if p.get("lookback", "window") == "window":
        closes = _last(closes, provider, p["days"], p.get("window_unit", "sessions"), "rsi")
    return _latest(rsi_series(closes, p["window"], p.get("method", "wilder")), "rsi")


def bollinger_bands(provider: MarketProvider, p: dict[str, Any]) -> dict[str, float]:
    closes = _closes(provider, p["symbol"])
    window = int(p["window"])
    if len(closes) < window:
        raise ValueError(f"bollinger_bands: need {window} closes, have {len(closes)}")
    tail = closes.iloc[-window:].to_numpy()
    middle = float(tail.mean())
    std = float(tail.std(ddof=int(p.get("ddof", 0))))
    k = float(p["num_std"])
    return {"upper": middle + k * std, "middle": middle, "lower": middle - k * std}


def macd(provider: MarketProvider, p: dict[str, Any]) -> dict[str, float]:
    """MACD = EMA(fast) - EMA(slow) of Close, signal = EMA(signal) of MACD, all ``adjust=False``."""
    closes = _closes(provider, p["symbol"])
    fast, slow, signal = int(p["fast"]), int(p["slow"]), int(p["signal"])
    if len(closes) < slow + signal:
        raise ValueError(f"macd: need {slow + signal} closes, have {len(closes)}")
    line = closes.ewm(span=fast, adjust=False).mean() - closes.ewm(span=slow, adjust=False).mean()
    sig = line.ewm(span=signal, adjust=False).mean()
    m, s = float(line.iloc[-1]), float(sig.iloc[-1])
    return {"macd": m, "signal": s, "histogram": m - s}


def volatility(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Sample std (ddof=1) of the last ``window`` daily returns, times sqrt(252) when annualised."""
    closes = _closes(provider, p["symbol"])
    window = int(p["window"])
    returns = _returns(closes, p.get("returns", "simple"))
    if len(returns) < window:
        raise ValueError(f"volatility: need {window} returns, have {len(returns)}")
    std = float(returns.iloc[-window:].std(ddof=1))
    if p.get("annualise", True):
        std *= math.sqrt(float(p.get("periods_per_year", TRADING_DAYS_PER_YEAR)))
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


def kdj(provider: MarketProvider, p: dict[str, Any]) -> dict[str, float]:
    history = _history(provider, p["symbol"])
    n = int(p["n"])
    if len(history) < n + int(p["k_period"]) + int(p["d_period"]):
        raise ValueError(f"kdj: not enough sessions ({len(history)})")
    frame = kdj_frame(history, n, int(p["k_period"]), int(p["d_period"]), p.get("smoothing", "recursive"))
    last = frame.iloc[-1]
    return {"k": float(last["k"]), "d": float(last["d"]), "j": float(last["j"])}


def max_drawdown(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Largest peak-to-trough fall of Close within the window: a negative fraction (or its magnitude)."""
    closes = _last(_closes(provider, p["symbol"]), provider, p["days"], p.get("window_unit", "sessions"),
                   "max_drawdown")
    drawdown = float((closes / closes.cummax() - 1.0).min())
    return -drawdown if p.get("sign", "negative") == "positive" else drawdown


def correlation(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Pearson correlation of the two symbols' daily returns over the window (dates aligned).

    ``count="prices"``: the window holds ``days`` closes (days-1 returns); ``"returns"``: ``days`` returns.
    """
    symbols = list(p["symbols"])
    if len(symbols) != 2:
        raise ValueError(f"correlation needs exactly two symbols, got {symbols}")
    frame = pd.concat([_closes(provider, s) for s in symbols], axis=1, keys=symbols, join="inner")
    days = int(p["days"]) + (1 if p.get("count", "prices") == "returns" else 0)
    window = _last(frame, provider, days, p.get("window_unit", "sessions"), "correlation")
    kind = p.get("returns", "simple")
    a, b = _returns(window[symbols[0]], kind), _returns(window[symbols[1]], kind)
    value = float(np.corrcoef(a.to_numpy(), b.to_numpy())[0, 1])
    if not math.isfinite(value):
        raise ValueError("correlation undefined (a constant series)")
    return value


# --------------------------------------------------------------------------- composites
def ma_cross_rsi_signal(provider: MarketProvider, p: dict[str, Any]) -> bool:
    """True when SMA(short) > SMA(long) on the latest session and RSI(rsi_window) < threshold."""
    closes = _closes(provider, p["symbol"])
    short, long_ = int(p["short_window"]), int(p["long_window"])
    if len(closes) < max(long_, int(p["rsi_window"]) + 1):
        raise ValueError("ma_cross_rsi_signal: not enough closes")
    ma_short = float(closes.iloc[-short:].mean())
    ma_long = float(closes.iloc[-long_:].mean())
    rsi_value = _latest(rsi_series(closes, p["rsi_window"], p.get("rsi_method", "wilder")), "rsi")
    return bool(ma_short > ma_long and rsi_value < float(p["rsi_threshold"]))


def volume_price_divergence(provider: MarketProvider, p: dict[str, Any]) -> bool:
    """True when Close rose over the window (last > first) while Volume trended down.

    ``volume_trend="slope"``: least-squares slope of Volume over the sessions is negative;
    ``"halves"``: mean Volume of the later half is below that of the earlier half.
    """
    window = _last(_history(provider, p["symbol"]), provider, p["days"], p.get("window_unit", "sessions"),
                   "volume_price_divergence")
    closes = window["Close"].to_numpy(dtype=float)
    volume = window["Volume"].to_numpy(dtype=float)
    price_up = closes[-1] > closes[0]
    trend = p.get("volume_trend", "slope")
    if trend == "slope":
        volume_down = float(np.polyfit(np.arange(len(volume), dtype=float), volume, 1)[0]) < 0
    elif trend == "halves":
        half = len(volume) // 2
        volume_down = float(volume[-half:].mean()) < float(volume[:half].mean())
    else:
        raise ValueError(f"unknown volume_trend {trend!r} (slope | halves)")
    return bool(price_up and volume_down)


def portfolio_return(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Equal-weight return over the window: buy-and-hold (``rebalance="none"``) or rebalanced daily."""
    symbols = list(p["symbols"])
    if not symbols:
        raise ValueError("portfolio_return needs at least one symbol")
    frame = pd.concat([_closes(provider, s) for s in symbols], axis=1, keys=symbols, join="inner")
    window = _last(frame, provider, p["days"], p.get("window_unit", "sessions"), "portfolio_return")
    if p.get("rebalance", "none") == "daily":
        daily = window.pct_change().dropna().mean(axis=1)
        return float((1.0 + daily).prod() - 1.0)
    return float((window.iloc[-1] / window.iloc[0] - 1.0).mean())


def post_signal_return(provider: MarketProvider, p: dict[str, Any]) -> float:
    """Mean ``horizon``-session forward return after sessions whose RSI exceeds the threshold.

    ``signal="every_day"``: every session with RSI > threshold; ``"cross"``: only sessions where RSI
    moves above the threshold (the previous one was at or below). Signals without ``horizon``
    later sessions are skipped.
    """
    closes = _closes(provider, p["symbol"])
    horizon = int(p["horizon"])
    rsi_values = rsi_series(closes, p["rsi_window"], p.get("rsi_method", "wilder"))
    above = rsi_values > float(p["rsi_threshold"])
    if p.get("signal", "every_day") == "cross":
        above = above & ~above.shift(1, fill_value=False) & rsi_values.shift(1).notna()
    forward = closes.shift(-horizon) / closes - 1.0
    chosen = forward[above & forward.notna()]
    if chosen.empty:
        raise ValueError("post_signal_return: no signal with a complete horizon")
    return float(chosen.mean())


ORACLES: dict[str, OracleFunction] = {
    "net_income": net_income,
    "total_revenue": total_revenue,
    "latest_quote": latest_quote,
    "latest_close": latest_close,
    "dividend_history": dividend_history,
    "max_close": max_close,
    "rsi": rsi,
    "moving_average": moving_average,
    "bollinger_bands": bollinger_bands,
    "macd": macd,
    "volatility": volatility,
    "kdj": kdj,
    "max_drawdown": max_drawdown,
    "correlation": correlation,
    "ma_cross_rsi_signal": ma_cross_rsi_signal,
    "volume_price_divergence": volume_price_divergence,
    "portfolio_return": portfolio_return,
    "post_signal_return": post_signal_return,
}


def compute(name: str, provider: MarketProvider, params: dict[str, Any]) -> Any:
    """Run one oracle function by name and return its value as plain Python."""
    function = ORACLES.get(name)
    if function is None:
        raise InputError(f"unknown oracle {name!r} (known: {', '.join(sorted(ORACLES))})")
    return normalise(function(provider, dict(params)))


def expected_values(task: Task, provider: MarketProvider, overrides: dict[str, Any] | None = None,
                    where: str = "") -> dict[str, Any]:
    """``{convention name: expected value}`` for every accepted convention of ``task``, primary first.

    ``overrides`` (a probe's ``oracle_params``) are merged last, over ``task.oracle.params`` and each
    convention's ``params``. An unknown oracle name, a missing parameter or data too short for the
    task raise :class:`InputError` naming the task (and ``where``, e.g. ``probe 2``) and convention.
    """
    if task.oracle.name not in ORACLES:
        raise InputError(f"task {task.id}: unknown oracle {task.oracle.name!r} "
                         f"(known: {', '.join(sorted(ORACLES))})")
    label = f"task {task.id}{' ' + where if where else ''}"
    results: dict[str, Any] = {}
    for convention in task.conventions:
        params = {**task.oracle.params, **convention.params, **(overrides or {})}
        try:
            results[convention.name] = compute(task.oracle.name, provider, params)
        except KeyError as exc:
            raise InputError(f"{label}: oracle {task.oracle.name!r} convention {convention.name!r} "
                             f"is missing parameter {exc.args[0]!r}") from None
        except (LookupError, ValueError, TypeError) as exc:  # e.g. a symbol the snapshot does not hold
            raise InputError(f"{label}: oracle {task.oracle.name!r} convention {convention.name!r}: {exc}") from None
    return results


def probe_expected_values(task: Task, provider: MarketProvider) -> list[dict[str, Any]]:
    """One ``{convention: expected value}`` per probe of ``task``, in the task's probe order."""
    return [expected_values(task, provider, probe.oracle_params, f"probe {i} ({probe.label()})")
            for i, probe in enumerate(task.probes, start=1)]
