"""Generate the bundled SYNTHETIC market snapshot (not real prices).

    python -m finevo.market.synthetic --out benchmarks/data

Deterministic: a fixed seed and fixed formatting, so regenerating gives identical bytes.

Model, in short:

* Daily log returns of ``^GSPC`` are Student-t (5 d.o.f.) shocks with a volatility per year
  (2022 turbulent, 2023-2024 calm). Each stock's return is ``beta * market + idiosyncratic``;
  SPY tracks the index with a tiny tracking error. Every path is then tied, by a constant drift
  per calendar year, to realistic year-end levels, so levels look like the real 2022-2024 ones
  while the day-to-day path is invented.
* Opens gap from the previous close, highs/lows extend beyond open/close, all rounded to cents
  (``cents=False``: full float precision, for the gate's hidden worlds),
  so ``Low <= Open, Close <= High`` always holds. Volumes scale with the size of the move.
* Dividends on a realistic quarterly schedule (AAPL, MSFT, SPY; GOOGL from June 2024) and the
  real 2022 stock splits (AMZN, GOOGL 20:1, TSLA 3:1) as events; prices are split-adjusted, as
  Yahoo serves them, and ``Adj Close`` carries Yahoo's dividend adjustment.
* Income statements: quarterly figures from a revenue trend + seasonality + noise and margin
  assumptions, annual figures = sums of the four fiscal quarters (AAPL's fiscal year ends in
  September, MSFT's in June, the others' in December); columns are month-end period dates, as
  Yahoo reports them, newest first.
* ``info`` / ``fast_info`` are derived from the last bars and the latest statements.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from datetime import time as dtime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import numpy as np
import pandas as pd

from finevo.market.calendar import next_trading_day, trading_days
from finevo.market.snapshot import EXCHANGE_TZ, SnapshotOrigin, SymbolData, auto_adjust, write_snapshot

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

GENERATOR = "finevo.market.synthetic"
GENERATOR_VERSION = "1.0"
SEED = 20241231
LABEL = "SYNTHETIC market data - not real prices"
START = date(2022, 1, 3)
AS_OF = date(2024, 12, 31)
SYMBOLS: tuple[str, ...] = ("AAPL", "MSFT", "GOOGL", "AMZN", "TSLA", "SPY", "^GSPC")
MARKET = "^GSPC"

#: Annualised volatility of the market factor per calendar year.
MARKET_VOL = {2022: 0.235, 2023: 0.13, 2024: 0.125}


@dataclass(frozen=True)
class Security:
    symbol: str
    short_name: str
    long_name: str
    quote_type: str          # EQUITY | ETF | INDEX
    exchange: str            # Yahoo exchange code
    full_exchange: str
    beta: float
    idio_vol: float          # annualised idiosyncratic volatility
    #: close on the first day, then year-end anchors 2022, 2023, 2024
    levels: tuple[float, float, float, float]
    avg_volume: float
    shares: float = 0.0      # shares outstanding (equities)
    sector: str = ""
    industry: str = ""
    website: str = ""


SECURITIES: dict[str, Security] = {s.symbol: s for s in (
    Security("AAPL", "Apple Inc.", "Apple Inc.", "EQUITY", "NMS", "NasdaqGS", 1.22, 0.17,
             (182.0, 129.9, 192.5, 250.4), 62e6, 15.12e9, "Technology", "Consumer Electronics",
             "https://www.apple.com"),
    Security("MSFT", "Microsoft Corporation", "Microsoft Corporation", "EQUITY", "NMS", "NasdaqGS",
             1.15, 0.18, (334.8, 239.8, 376.0, 421.5), 24e6, 7.434e9, "Technology",
             "Software - Infrastructure", "https://www.microsoft.com"),
    Security("GOOGL", "Alphabet Inc.", "Alphabet Inc.", "EQUITY", "NMS", "NasdaqGS", 1.2, 0.22,
             (145.0, 88.2, 139.7, 189.3), 30e6, 12.21e9, "Communication Services",
             "Internet Content & Information", "https://abc.xyz"),
    Security("AMZN", "Amazon.com, Inc.", "Amazon.com, Inc.", "EQUITY", "NMS", "NasdaqGS", 1.35, 0.28,
             (170.4, 84.0, 151.9, 219.4), 55e6, 10.51e9, "Consumer Cyclical", "Internet Retail",
             "https://www.aboutamazon.com"),
    Security("TSLA", "Tesla, Inc.", "Tesla, Inc.", "EQUITY", "NMS", "NasdaqGS", 2.0, 0.45,
             (399.9, 123.2, 248.5, 403.8), 95e6, 3.21e9, "Consumer Cyclical", "Auto Manufacturers",
             "https://www.tesla.com"),
    Security("SPY", "SPDR S&P 500", "SPDR S&P 500 ETF Trust", "ETF", "PCX", "NYSEArca", 1.0, 0.004,
             (477.7, 382.4, 475.3, 586.1), 75e6),
    Security("^GSPC", "S&P 500", "S&P 500", "INDEX", "SNP", "SNP", 1.0, 0.0,
             (4796.6, 3839.5, 4769.8, 5881.6), 4.0e9),
)}

#: Ex-dividend dates (moved to the next trading day if needed) and cash amounts per share.
DIVIDENDS: dict[str, tuple[tuple[date, float], ...]] = {
    "AAPL": tuple(zip(
        (date(2022, 2, 4), date(2022, 5, 6), date(2022, 8, 5), date(2022, 11, 4),
         date(2023, 2, 10), date(2023, 5, 12), date(2023, 8, 11), date(2023, 11, 10),
         date(2024, 2, 9), date(2024, 5, 10), date(2024, 8, 12), date(2024, 11, 8)),
        (0.22, 0.23, 0.23, 0.23, 0.23, 0.24, 0.24, 0.24, 0.24, 0.25, 0.25, 0.25), strict=False)),
    "MSFT": tuple(zip(
        (date(2022, 2, 16), date(2022, 5, 18), date(2022, 8, 17), date(2022, 11, 16),
         date(2023, 2, 15), date(2023, 5, 17), date(2023, 8, 16), date(2023, 11, 15),
         date(2024, 2, 14), date(2024, 5, 15), date(2024, 8, 15), date(2024, 11, 21)),
        (0.62, 0.62, 0.62, 0.68, 0.68, 0.68, 0.68, 0.75, 0.75, 0.75, 0.75, 0.83), strict=False)),
    "GOOGL": tuple(zip((date(2024, 6, 10), date(2024, 9, 9), date(2024, 12, 9)), (0.20, 0.20, 0.20), strict=False)),
    "SPY": tuple(zip(
        (date(2022, 3, 18), date(2022, 6, 17), date(2022, 9, 16), date(2022, 12, 16),
         date(2023, 3, 17), date(2023, 6, 16), date(2023, 9, 15), date(2023, 12, 15),
         date(2024, 3, 15), date(2024, 6, 21), date(2024, 9, 20), date(2024, 12, 20)),
        (1.366, 1.577, 1.596, 1.781, 1.506, 1.638, 1.583, 1.906, 1.595, 1.759, 1.746, 1.966), strict=False)),
}

#: Stock splits in the span (prices are split-adjusted; the event is still reported).
SPLITS: dict[str, tuple[tuple[date, float], ...]] = {
    "AMZN": ((date(2022, 6, 6), 20.0),),
    "GOOGL": ((date(2022, 7, 18), 20.0),),
    "TSLA": ((date(2022, 8, 25), 3.0),),
}


@dataclass(frozen=True)
class Fundamentals:
    fiscal_year_end_month: int
    revenue_q0: float        # quarterly revenue in the quarter ending 2020-03-31 (USD)
    growth: float            # annual revenue growth (log)
    seasonality: tuple[float, float, float, float]  # multiplier by calendar quarter (Q1..Q4)
    gross_margin: float
    rnd: float               # R&D / revenue
    sga: float               # SG&A / revenue
    tax_rate: float
    dna: float               # depreciation & amortisation / revenue
    share_drift: float       # annual change in share count (log)


FUNDAMENTALS: dict[str, Fundamentals] = {
    "AAPL": Fundamentals(9, 76e9, 0.06, (0.97, 0.85, 0.92, 1.26), 0.44, 0.075, 0.065, 0.16, 0.03, -0.025),
    "MSFT": Fundamentals(6, 35e9, 0.13, (0.98, 1.04, 0.97, 1.01), 0.69, 0.13, 0.11, 0.18, 0.08, -0.005),
    "GOOGL": Fundamentals(12, 41e9, 0.15, (0.95, 0.98, 1.0, 1.08), 0.57, 0.15, 0.11, 0.16, 0.05, -0.025),
    "AMZN": Fundamentals(12, 75e9, 0.14, (0.93, 0.97, 0.98, 1.14), 0.46, 0.14, 0.255, 0.15, 0.08, 0.006),
    "TSLA": Fundamentals(12, 8.5e9, 0.32, (0.92, 0.98, 1.02, 1.07), 0.21, 0.05, 0.05, 0.10, 0.05, 0.012),
}
#: One-off non-operating items (USD) by quarter end: AMZN's 2022 equity-investment losses.
NON_OPERATING_ONE_OFFS: dict[tuple[str, date], float] = {
    ("AMZN", date(2022, 3, 31)): -8.6e9,
    ("AMZN", date(2022, 6, 30)): -6.7e9,
}
FIRST_MODEL_QUARTER = date(2020, 3, 31)
LAST_REPORTED_QUARTER = date(2024, 9, 30)   # the last quarter reported by the as-of date
FIRST_REPORTED_QUARTER = date(2021, 9, 30)  # quarterly columns reach back to here
ANNUAL_COLUMNS = 4


# --------------------------------------------------------------------------- prices
def _student_t(rng: np.random.Generator, n: int, dof: int = 5) -> np.ndarray:
    """Unit-variance Student-t draws (fat tails)."""
    draws: np.ndarray = rng.standard_t(dof, size=n) * np.sqrt((dof - 2) / dof)
    return draws


def _tie_to_levels(log_returns: np.ndarray, days: list[date], levels: tuple[float, ...]) -> np.ndarray:
    """Add a constant drift per calendar year so each year ends at its anchor level.

    ``log_returns[0]`` is unused (the first close is ``levels[0]``)."""
    out = log_returns.copy()
    out[0] = 0.0
    years = np.array([d.year for d in days])
    start_log = np.log(levels[0])
    for k, year in enumerate(sorted(set(years.tolist()))):
        mask = years == year
        if k == 0:
            mask[0] = False
        target = np.log(levels[k + 1]) - start_log
        out[mask] += (target - out[mask].sum()) / mask.sum()
        start_log = np.log(levels[k + 1])
    return out


def _price_paths(rng: np.random.Generator, days: list[date], cents: bool = True) -> dict[str, pd.DataFrame]:
    """Daily bars of every symbol; ``cents=False`` keeps the prices at full float precision (what an
    adjusted yfinance history, a sub-dollar stock or a yield shows) instead of rounding them to cents."""
    def quoted(values: np.ndarray) -> np.ndarray:
        return np.round(values, 2) if cents else values

    n = len(days)
    years = np.array([d.year for d in days])
    daily_vol = np.array([MARKET_VOL[y] for y in years]) / np.sqrt(252)
    market = _student_t(rng, n) * daily_vol
    raw: dict[str, pd.DataFrame] = {}
    for symbol in SYMBOLS:
        sec = SECURITIES[symbol]
        idio = _student_t(rng, n) * sec.idio_vol / np.sqrt(252)
        vol_i = np.sqrt((sec.beta * daily_vol) ** 2 + (sec.idio_vol / np.sqrt(252)) ** 2)
        log_r = _tie_to_levels(sec.beta * market + idio, days, sec.levels)
        close = sec.levels[0] * np.exp(np.cumsum(log_r))
        gap = rng.normal(0.0, 0.25, n) * vol_i
        open_ = np.empty(n)
        open_[0] = close[0] * np.exp(gap[0])
        open_[1:] = close[:-1] * np.exp(gap[1:])
        wick_up = np.abs(rng.normal(0.0, 0.45, n)) * vol_i
        wick_down = np.abs(rng.normal(0.0, 0.45, n)) * vol_i
        high = np.maximum(open_, close) * np.exp(wick_up)
        low = np.minimum(open_, close) * np.exp(-wick_down)
        surprise = np.abs(log_r - log_r.mean()) / vol_i
        volume = sec.avg_volume * np.exp(rng.normal(0.0, 0.22, n)) * (0.75 + 0.3 * surprise)
        raw[symbol] = pd.DataFrame({
            "Open": quoted(open_), "High": quoted(high), "Low": quoted(low),
            "Close": quoted(close), "Volume": np.round(volume).astype(np.int64),
        }, index=pd.DatetimeIndex(pd.to_datetime(days)).tz_localize(EXCHANGE_TZ).rename("Date"))
    return raw


def _add_actions(symbol: str, frame: pd.DataFrame) -> pd.DataFrame:
    """Dividends, splits and Yahoo's dividend-adjusted close on unadjusted bars (events after
    the frame's last bar are not known yet and are left out)."""
    out = frame.copy()
    dates = [ts.date() for ts in out.index]
    position = {d: i for i, d in enumerate(dates)}
    dividends = np.zeros(len(out))
    for ex_date, amount in DIVIDENDS.get(symbol, ()):
        if next_trading_day(ex_date) in position:
            dividends[position[next_trading_day(ex_date)]] += amount
    splits = np.zeros(len(out))
    for split_date, ratio in SPLITS.get(symbol, ()):
        if next_trading_day(split_date) in position:
            splits[position[next_trading_day(split_date)]] = ratio
    close = out["Close"].to_numpy()
    # Yahoo: every bar before an ex-date is scaled by (1 - dividend / previous close).
    factor = np.ones(len(out))
    for i in range(len(out) - 1, 0, -1):
        factor[i - 1] = factor[i] * ((1.0 - dividends[i] / close[i - 1]) if dividends[i] else 1.0)
    out.insert(4, "Adj Close", close * factor)
    out["Dividends"] = dividends
    out["Stock Splits"] = splits
    if SECURITIES[symbol].quote_type == "ETF":
        out["Capital Gains"] = 0.0
    return out


# --------------------------------------------------------------------------- statements
INCOME_ROWS: tuple[str, ...] = (
    "Tax Effect Of Unusual Items", "Tax Rate For Calcs", "Normalized EBITDA",
    "Net Income From Continuing Operation Net Minority Interest", "Reconciled Depreciation",
    "Reconciled Cost Of Revenue", "EBITDA", "EBIT", "Net Interest Income", "Interest Expense",
    "Interest Income", "Normalized Income", "Net Income From Continuing And Discontinued Operation",
    "Total Expenses", "Total Operating Income As Reported", "Diluted Average Shares",
    "Basic Average Shares", "Diluted EPS", "Basic EPS", "Diluted NI Availto Com Stockholders",
    "Net Income Common Stockholders", "Net Income", "Net Income Including Noncontrolling Interests",
    "Net Income Continuous Operations", "Tax Provision", "Pretax Income", "Other Income Expense",
    "Other Non Operating Income Expenses", "Net Non Operating Interest Income Expense",
    "Interest Expense Non Operating", "Interest Income Non Operating", "Operating Income",
    "Operating Expense", "Research And Development", "Selling General And Administration",
    "Gross Profit", "Cost Of Revenue", "Total Revenue", "Operating Revenue",
)
#: Flow items that add up over quarters (everything except rates, per-share and share counts).
_NON_ADDITIVE = {"Tax Rate For Calcs", "Diluted Average Shares", "Basic Average Shares",
                 "Diluted EPS", "Basic EPS"}


def _quarter_ends(first: date, last: date) -> list[date]:
    ends = []
    year, month = first.year, first.month
    while date(year, month, 1) <= last:
        ends.append((pd.Timestamp(year=year, month=month, day=1) + pd.offsets.MonthEnd(0)).date())
        month += 3
        if month > 12:
            month -= 12
            year += 1
    return ends


def _quarterly_statements(rng: np.random.Generator, symbol: str) -> pd.DataFrame:
    """Every modelled quarter (oldest first) as columns, yfinance row labels as rows."""
    f = FUNDAMENTALS[symbol]
    sec = SECURITIES[symbol]
    quarters = _quarter_ends(FIRST_MODEL_QUARTER, LAST_REPORTED_QUARTER)
    years_since = np.arange(len(quarters)) / 4.0
    season = np.array([f.seasonality[(q.month - 1) // 3] for q in quarters])
    noise = np.exp(rng.normal(0.0, 0.025, len(quarters)))
    revenue = f.revenue_q0 * np.exp(f.growth * years_since) * season * noise
    gross_margin = f.gross_margin + rng.normal(0.0, 0.008, len(quarters))
    rnd = revenue * (f.rnd + rng.normal(0.0, 0.003, len(quarters)))
    sga = revenue * (f.sga + rng.normal(0.0, 0.003, len(quarters)))
    dna = revenue * f.dna
    final_shares = sec.shares
    shares = final_shares * np.exp(-f.share_drift * (years_since[-1] - years_since))
    cols: dict[date, dict[str, float]] = {}
    for i, q in enumerate(quarters):
        rev = float(revenue[i])
        cost = rev * (1.0 - float(gross_margin[i]))
        gross = rev - cost
        opex = float(rnd[i] + sga[i])
        operating = gross - opex
        interest_income = rev * 0.006
        interest_expense = rev * 0.004
        net_interest = interest_income - interest_expense
        other = rev * float(rng.normal(0.0, 0.004)) + NON_OPERATING_ONE_OFFS.get((symbol, q), 0.0)
        pretax = operating + net_interest + other
        tax = max(pretax, 0.0) * (f.tax_rate + float(rng.normal(0.0, 0.01)))
        net = pretax - tax
        basic_shares = float(shares[i])
        diluted_shares = basic_shares * 1.006
        ebit = pretax + interest_expense
        ebitda = ebit + float(dna[i])
        values = {
            "Tax Effect Of Unusual Items": 0.0,
            "Tax Rate For Calcs": round(tax / pretax, 3) if pretax > 0 else 0.21,
            "Normalized EBITDA": ebitda,
            "Net Income From Continuing Operation Net Minority Interest": net,
            "Reconciled Depreciation": float(dna[i]),
            "Reconciled Cost Of Revenue": cost,
            "EBITDA": ebitda, "EBIT": ebit,
            "Net Interest Income": net_interest, "Interest Expense": interest_expense,
            "Interest Income": interest_income, "Normalized Income": net,
            "Net Income From Continuing And Discontinued Operation": net,
            "Total Expenses": cost + opex, "Total Operating Income As Reported": operating,
            "Diluted Average Shares": diluted_shares, "Basic Average Shares": basic_shares,
            "Diluted EPS": 0.0, "Basic EPS": 0.0,
            "Diluted NI Availto Com Stockholders": net, "Net Income Common Stockholders": net,
            "Net Income": net, "Net Income Including Noncontrolling Interests": net,
            "Net Income Continuous Operations": net, "Tax Provision": tax, "Pretax Income": pretax,
            "Other Income Expense": other, "Other Non Operating Income Expenses": other,
            "Net Non Operating Interest Income Expense": net_interest,
            "Interest Expense Non Operating": interest_expense,
            "Interest Income Non Operating": interest_income,
            "Operating Income": operating, "Operating Expense": opex,
            "Research And Development": float(rnd[i]), "Selling General And Administration": float(sga[i]),
            "Gross Profit": gross, "Cost Of Revenue": cost, "Total Revenue": rev, "Operating Revenue": rev,
        }
        cols[q] = _finish_statement(values)
    return pd.DataFrame(cols).reindex(list(INCOME_ROWS))


def _finish_statement(values: dict[str, float]) -> dict[str, float]:
    """Round money and share counts to whole thousands (as filed), derive per-share figures."""
    out = {key: value if key == "Tax Rate For Calcs" else float(round(value / 1e3) * 1e3)
           for key, value in values.items()}
    out["Basic EPS"] = round(out["Net Income"] / out["Basic Average Shares"], 2)
    out["Diluted EPS"] = round(out["Net Income"] / out["Diluted Average Shares"], 2)
    return out


def _fiscal_year_end(quarter_end: date, fy_end_month: int) -> date:
    year = quarter_end.year if quarter_end.month <= fy_end_month else quarter_end.year + 1
    end: date = (pd.Timestamp(year=year, month=fy_end_month, day=1) + pd.offsets.MonthEnd(0)).date()
    return end


def _annual_statements(quarterly: pd.DataFrame, fy_end_month: int) -> pd.DataFrame:
    """The fiscal years whose four quarters ``quarterly`` holds (the year ending in ``fy_end_month``)."""
    groups: dict[date, list[date]] = {}
    for q in quarterly.columns:
        groups.setdefault(_fiscal_year_end(q, fy_end_month), []).append(q)
    complete = sorted((fy for fy, qs in groups.items() if len(qs) == 4), reverse=True)[:ANNUAL_COLUMNS]
    cols: dict[date, dict[str, float]] = {}
    for fy in complete:
        part = quarterly[groups[fy]]
        values = {row: float(part.loc[row].sum()) for row in INCOME_ROWS if row not in _NON_ADDITIVE}
        values["Basic Average Shares"] = float(part.loc["Basic Average Shares"].mean())
        values["Diluted Average Shares"] = float(part.loc["Diluted Average Shares"].mean())
        pretax = values["Pretax Income"]
        values["Tax Rate For Calcs"] = round(values["Tax Provision"] / pretax, 3) if pretax > 0 else 0.21
        values["Basic EPS"] = values["Diluted EPS"] = 0.0
        cols[fy] = _finish_statement(values)
    return pd.DataFrame(cols).reindex(list(INCOME_ROWS))


def _newest_first(frame: pd.DataFrame, since: date | None = None) -> pd.DataFrame:
    columns = [c for c in frame.columns if since is None or c >= since]
    out = frame[sorted(columns, reverse=True)].copy()
    out.columns = pd.DatetimeIndex(pd.to_datetime(list(out.columns)))
    return out.astype("float64")


# --------------------------------------------------------------------------- quotes
def _epoch(day: date, hour: int = 16) -> int:
    return int(datetime.combine(day, dtime(hour, 0), ZoneInfo(EXCHANGE_TZ)).timestamp())


#: The book Yahoo quotes beside the last price (``info``'s ``bid``/``ask``, a listed stock's or fund's):
#: the spread around the last trade, wider on the ask side (cents; relative to the price), so the
#: book's midpoint is not the last price -- a tool that reads a "quote" as the midpoint answers
#: another number than the last traded price, as it would on recorded data.
BOOK_SPREAD = (0.0006, 0.0013)


def quote_book(price: float, volume: int, spread: tuple[float, float] = BOOK_SPREAD) -> JSONObject:
    """``bid``, ``ask`` and their sizes around ``price`` (the last trade): ``spread`` (below, above;
    :data:`BOOK_SPREAD` by default) either side, a cent at least, rounded to cents; sizes in round lots
    that follow the session's volume."""
    below, above = spread
    bid = round(min(price * (1 - below), price - 0.01), 2)
    ask = round(max(price * (1 + above), price + 0.01), 2)
    lots = max(1, int(volume) // 10_000_000 % 9 + 1)
    return {"bid": bid, "ask": ask, "bidSize": 100 * lots, "askSize": 100 * (10 - lots)}


def _quote(symbol: str, raw: pd.DataFrame, yearly: pd.DataFrame | None,
           quarterly: pd.DataFrame | None, market_change: float,
           as_of: date = AS_OF) -> tuple[JSONObject, JSONObject]:
    sec = SECURITIES[symbol]
    last, prev = raw.iloc[-1], raw.iloc[-2]
    adjusted = auto_adjust(raw)
    year_ago = raw.index[-1] - pd.DateOffset(years=1)
    last_year = raw[raw.index > year_ago]
    close = raw["Close"]
    price = float(last["Close"])
    change_1y = float(adjusted["Close"].iloc[-1] / adjusted.loc[adjusted.index <= year_ago, "Close"].iloc[-1] - 1)
    fifty = float(close.iloc[-50:].mean())
    two_hundred = float(close.iloc[-200:].mean())
    avg_3m = round(raw["Volume"].iloc[-63:].mean())
    avg_10d = round(raw["Volume"].iloc[-10:].mean())
    info: JSONObject = {
        "symbol": symbol, "shortName": sec.short_name, "longName": sec.long_name,
        "quoteType": sec.quote_type, "exchange": sec.exchange, "fullExchangeName": sec.full_exchange,
        "currency": "USD", "market": "us_market", "exchangeTimezoneName": EXCHANGE_TZ,
        "exchangeTimezoneShortName": "EST", "gmtOffSetMilliseconds": -18000000,
        "regularMarketPrice": price, "regularMarketPreviousClose": float(prev["Close"]),
        "previousClose": float(prev["Close"]), "open": float(last["Open"]),
        "regularMarketOpen": float(last["Open"]), "dayLow": float(last["Low"]),
        "dayHigh": float(last["High"]), "regularMarketDayLow": float(last["Low"]),
        "regularMarketDayHigh": float(last["High"]), "volume": int(last["Volume"]),
        "regularMarketVolume": int(last["Volume"]),
        "regularMarketChange": round(price - float(prev["Close"]), 4),
        "regularMarketChangePercent": round((price / float(prev["Close"]) - 1) * 100, 4),
        "regularMarketTime": _epoch(as_of), "averageVolume": avg_3m, "averageVolume10days": avg_10d,
        "averageDailyVolume10Day": avg_10d, "averageDailyVolume3Month": avg_3m,
        "fiftyTwoWeekHigh": float(last_year["High"].max()), "fiftyTwoWeekLow": float(last_year["Low"].min()),
        "fiftyTwoWeekChangePercent": round(change_1y * 100, 4), "52WeekChange": round(change_1y, 6),
        "SandP52WeekChange": round(market_change, 6),
        "fiftyDayAverage": round(fifty, 4), "twoHundredDayAverage": round(two_hundred, 4),
        "synthetic": True,
    }
    fast: JSONObject = {
        "currency": "USD", "exchange": sec.exchange, "quoteType": sec.quote_type,
        "timezone": EXCHANGE_TZ, "lastPrice": price, "previousClose": float(prev["Close"]),
        "regularMarketPreviousClose": float(prev["Close"]), "open": float(last["Open"]),
        "dayHigh": float(last["High"]), "dayLow": float(last["Low"]), "lastVolume": int(last["Volume"]),
        "yearHigh": float(last_year["High"].max()), "yearLow": float(last_year["Low"].min()),
        "yearChange": round(change_1y, 6), "fiftyDayAverage": round(fifty, 4),
        "twoHundredDayAverage": round(two_hundred, 4), "tenDayAverageVolume": avg_10d,
        "threeMonthAverageVolume": avg_3m, "shares": None, "marketCap": None,
    }
    divs = raw.loc[raw["Dividends"] != 0, "Dividends"]
    trailing_divs = divs[divs.index > year_ago]
    if sec.quote_type in ("EQUITY", "ETF"):
        info.update(quote_book(price, int(last["Volume"])))
    if sec.quote_type == "EQUITY":
        assert yearly is not None and quarterly is not None
        ttm = quarterly.iloc[:, :4]
        eps_ttm = float(ttm.loc["Diluted EPS"].sum())
        revenue_ttm = float(ttm.loc["Total Revenue"].sum())
        net_ttm = float(ttm.loc["Net Income"].sum())
        market_cap = round(price * sec.shares)
        rate = float(trailing_divs.iloc[-1] * 4) if len(trailing_divs) else None
        info.update({
            "currentPrice": price, "marketCap": market_cap, "sharesOutstanding": int(sec.shares),
            "floatShares": int(sec.shares * 0.995), "impliedSharesOutstanding": int(sec.shares),
            "financialCurrency": "USD", "sector": sec.sector, "industry": sec.industry,
            "country": "United States", "website": sec.website, "beta": sec.beta,
            "trailingEps": round(eps_ttm, 2), "trailingPE": round(price / eps_ttm, 4),
            "forwardEps": round(eps_ttm * 1.1, 2), "forwardPE": round(price / (eps_ttm * 1.1), 4),
            "totalRevenue": int(revenue_ttm), "netIncomeToCommon": int(net_ttm),
            "profitMargins": round(net_ttm / revenue_ttm, 5),
            "grossMargins": round(float(ttm.loc["Gross Profit"].sum()) / revenue_ttm, 5),
            "operatingMargins": round(float(quarterly.iloc[:, 0]["Operating Income"]
                                            / quarterly.iloc[:, 0]["Total Revenue"]), 5),
            "ebitda": int(float(ttm.loc["EBITDA"].sum())),
            "revenueGrowth": round(float(quarterly.iloc[:, 0]["Total Revenue"]
                                         / quarterly.iloc[:, 4]["Total Revenue"] - 1), 4),
            "lastFiscalYearEnd": _epoch(yearly.columns[0].date(), 0),
            "mostRecentQuarter": _epoch(quarterly.columns[0].date(), 0),
            "enterpriseValue": int(market_cap * 1.01),
            "dividendRate": rate,
            # Yahoo reports dividendYield in percent, trailingAnnualDividendYield as a fraction.
            "dividendYield": round(rate / price * 100, 2) if rate else None,
            "trailingAnnualDividendRate": round(float(trailing_divs.sum()), 4),
            "trailingAnnualDividendYield": round(float(trailing_divs.sum()) / price, 6),
            "exDividendDate": _epoch(divs.index[-1].date(), 0) if len(divs) else None,
            "payoutRatio": round(float(trailing_divs.sum()) / eps_ttm, 4),
        })
        fast["shares"] = int(sec.shares)
        fast["marketCap"] = float(market_cap)
    elif sec.quote_type == "ETF":
        total = float(trailing_divs.sum())
        info.update({
            "navPrice": round(price * 0.9998, 2), "totalAssets": 6.3e11, "category": "Large Blend",
            "fundFamily": "State Street Global Advisors", "legalType": "Exchange Traded Fund",
            "yield": round(total / price, 4), "trailingAnnualDividendRate": round(total, 4),
            "trailingAnnualDividendYield": round(total / price, 6),
            "dividendYield": round(total / price * 100, 2), "beta3Year": 1.0,
        })
    return info, fast


# --------------------------------------------------------------------------- assembly
#: Days between a quarter's end and its report (10-Q/10-K filings of large companies come within
#: about six weeks); a statement column appears in an earlier as-of world only once reported.
REPORTING_LAG_DAYS = 45


def _year_after_start() -> date:
    """The first as-of day with a year of bars behind its last one (the 52-week figures need them)."""
    first: date = next_trading_day((pd.Timestamp(START) + pd.DateOffset(years=1)).date())
    return first


def generate(seed: int = SEED, as_of: date | None = None, *, cents: bool = True,
             fiscal_year_ends: Mapping[str, int] | None = None) -> list[SymbolData]:
    """Build the whole synthetic data set in memory.

    ``as_of`` (default :data:`AS_OF`, the latest date it may be) truncates the same world: the
    same seed draws the same paths, then bars after ``as_of``, dividends and splits not yet
    ex, and statements not yet reported (:data:`REPORTING_LAG_DAYS` after the period end) are
    dropped, and the quotes are derived from the last bar on or before ``as_of``. ``cents=False``:
    prices at full float precision, not rounded to cents (the same paths otherwise; the hidden
    worlds of the gate draw them so). ``fiscal_year_ends``: ``{symbol: month}`` for companies whose
    fiscal years end in another month than :data:`FUNDAMENTALS` says (the same quarters, summed into
    other years; the draws are the same).
    """
    if as_of is not None and not START < as_of <= AS_OF:
        raise ValueError(f"as_of must lie in ({START}, {AS_OF}], got {as_of}")
    if as_of is not None and as_of < _year_after_start():
        # the quotes' 52-week change reads the close a year before the last bar
        raise ValueError(f"as_of must be on or after {_year_after_start()} (a year of bars after {START}), got {as_of}")
    cut = as_of or AS_OF
    rng = np.random.default_rng(seed)
    days = trading_days(START, AS_OF)
    paths = _price_paths(rng, days, cents)
    if as_of is not None:
        paths = {sym: frame.loc[[ts.date() <= cut for ts in frame.index]] for sym, frame in paths.items()}
    raw = {sym: _add_actions(sym, frame) for sym, frame in paths.items()}
    market_adj = auto_adjust(raw[MARKET])["Close"]
    year_ago = market_adj.index[-1] - pd.DateOffset(years=1)
    market_change = float(market_adj.iloc[-1] / market_adj[market_adj.index <= year_ago].iloc[-1] - 1)
    out: list[SymbolData] = []
    for symbol in SYMBOLS:
        yearly = quarterly = None
        if symbol in FUNDAMENTALS:
            all_quarters = _quarterly_statements(rng, symbol)
            if as_of is not None:
                reported = [q for q in all_quarters.columns if q + timedelta(days=REPORTING_LAG_DAYS) <= cut]
                all_quarters = all_quarters[reported]
            month = (fiscal_year_ends or {}).get(symbol, FUNDAMENTALS[symbol].fiscal_year_end_month)
            yearly = _newest_first(_annual_statements(all_quarters, month))
            quarterly = _newest_first(all_quarters, since=FIRST_REPORTED_QUARTER)
        info, fast = _quote(symbol, raw[symbol], yearly, quarterly, market_change, cut)
        out.append(SymbolData(symbol, raw[symbol], yearly, quarterly, info, fast))
    return out


def build(out_dir: str | Path, seed: int = SEED, as_of: date | None = None) -> JSONObject:
    """Generate and write the snapshot (truncated at ``as_of``, see :func:`generate`); returns
    its manifest."""
    origin = SnapshotOrigin(as_of=as_of or AS_OF, synthetic=True, label=LABEL, generator=GENERATOR,
                            generator_version=GENERATOR_VERSION, seed=seed)
    return write_snapshot(out_dir, generate(seed, as_of), origin,
                          extra={"start": START.isoformat(), "calendar": "NYSE"})


# --------------------------------------------------------------------------- the recorded format
def ticker_factory(seed: int = SEED) -> Callable[[str], Any]:
    """A ``yfinance.Ticker`` stand-in serving this generator's world of ``seed``, as Yahoo
    answers: tz-aware bars stamped at the 09:30 open, ``auto_adjust`` and the exclusive ``end``
    honoured, NaN fields in ``info``. For :func:`build_recorded` and tests of the live path."""
    world = {d.symbol: d for d in generate(seed)}

    class GeneratedTicker:
        def __init__(self, symbol: str) -> None:
            self.symbol = symbol
            self._data = world[symbol]

        def history(self, **kwargs: Any) -> pd.DataFrame:
            raw = self._data.history.copy()
            frame = auto_adjust(raw) if kwargs.get("auto_adjust", True) else raw
            end = kwargs.get("end")
            if end is not None:
                frame = frame[frame.index < pd.Timestamp(end, tz=EXCHANGE_TZ)]
            frame.index = frame.index + pd.Timedelta(hours=9, minutes=30)
            return frame

        @property
        def income_stmt(self) -> pd.DataFrame:
            frame = self._data.income_yearly
            return pd.DataFrame() if frame is None else frame.copy()

        @property
        def quarterly_income_stmt(self) -> pd.DataFrame:
            frame = self._data.income_quarterly
            return pd.DataFrame() if frame is None else frame.copy()

        @property
        def info(self) -> JSONObject:
            return {**self._data.info, "synthetic": None, "trailingPegRatio": float("nan")}

        @property
        def fast_info(self) -> JSONObject:
            return dict(self._data.fast_info)

    return GeneratedTicker


def build_recorded(out_dir: str | Path, seed: int = SEED, as_of: date | None = None) -> JSONObject:
    """Write the world of ``seed`` through the live recorder (:func:`finevo.market.live.record_snapshot`),
    exactly as ``finevo-verify data refresh`` writes a real one (``synthetic: false``); the
    prices are still invented. Returns the manifest."""
    from finevo.market.live import record_snapshot

    return record_snapshot(out_dir, SYMBOLS, START, as_of or AS_OF, ticker_factory=ticker_factory(seed))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m finevo.market.synthetic",
                                     description="Write the deterministic SYNTHETIC market snapshot.")
    parser.add_argument("--out", required=True, help="output directory (e.g. benchmarks/data)")
    parser.add_argument("--seed", type=int, default=SEED, help=f"random seed (default {SEED})")
    parser.add_argument("--as-of", type=date.fromisoformat, default=None, metavar="YYYY-MM-DD",
                        help=f"truncate the same world at this date (default {AS_OF})")
    args = parser.parse_args(argv)
    try:
        manifest = build(args.out, args.seed, args.as_of)
    except ValueError as exc:
        parser.error(str(exc))
    print(f"wrote {len(manifest['files'])} files for {', '.join(manifest['symbols'])} to {args.out} "
          f"(as of {manifest['as_of']}, {manifest['label']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
