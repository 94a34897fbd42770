"""From a free-text query to an :class:`~finevo.question.Intent` (indicator + arguments).

The parser is deterministic and deliberately small: it recognises the indicators of the
catalogue below with *word-boundary* patterns (so "max drawdown" never looks like a moving
average because it contains "ma", and "drawdown" never looks like the Dow index), the tickers
of the query (upper-case symbols, "S&P 500" -> ``^GSPC``, a few company and index names), and
the numbers that parametrise an indicator (``RSI-14``, ``Bollinger Bands(20,2)``, ``5-day``,
``last 30 days``, ``2023 Q1``).

Benchmark tasks carry their intent already; the parser serves ``finevo solve "free text"``.
Each indicator also declares its category and output contract, so an ad hoc query can be
verified exactly like a benchmark task. What the parser binds is an :class:`IntentArgs` record (the
argument names the benchmark's intents use); it becomes the intent's arguments, the tool's JSON keyword
arguments, only in :func:`parse_query`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypedDict

from finevo.errors import InputError
from finevo.question import Intent, OutputSpec, Question
from finevo.vocabulary import Category

# --------------------------------------------------------------------------- tickers
#: Names (matched case-insensitively, on word boundaries) that stand for a symbol. "S&P 500"
#: is always the index; the ETF is SPY. "Dow" must be a whole word: "drawdown" is not the Dow.
_NAMED_SYMBOLS: tuple[tuple[str, str], ...] = (
    (r"s\s*&\s*p\s*-?\s*500(?:\s+index)?", "^GSPC"),
    (r"sp\s*500", "^GSPC"),
    (r"dow\s+jones(?:\s+industrial\s+average)?", "^DJI"),
    (r"djia", "^DJI"),
    (r"the\s+dow", "^DJI"),
    (r"nasdaq(?:\s+composite)?", "^IXIC"),
    (r"apple", "AAPL"),
    (r"microsoft", "MSFT"),
    (r"alphabet", "GOOGL"),
    (r"google", "GOOGL"),
    (r"amazon", "AMZN"),
    (r"tesla", "TSLA"),
)
_NAMED_RE = [(re.compile(rf"(?<![\w^]){pat}(?!\w)", re.IGNORECASE), sym) for pat, sym in _NAMED_SYMBOLS]

#: Upper-case tokens that look like tickers but are not.
_NOT_TICKERS = frozenset({
    "A", "I", "IF", "OR", "AND", "THE", "OF", "IN", "ON", "TO", "BY", "FOR", "AT", "IS", "BE",
    "ETF", "ETFS", "INDEX", "RSI", "MACD", "KDJ", "MA", "SMA", "EMA", "WMA", "ATR", "OBV", "ROI",
    "EPS", "PE", "USD", "EUR", "CNY", "FY", "YTD", "TTM", "NAV", "API", "TRUE", "FALSE", "Q",
    "GET", "MAX", "MIN", "AVG", "STD", "VS", "N", "K", "D", "J", "BB", "ETA",
})
_TICKER_RE = re.compile(r"(?<![\w^&])(\^[A-Z]{2,6}|[A-Z]{1,5}(?:[.-][A-Z]{1,2})?)(?![\w&])")


def find_symbols(query: str) -> list[str]:
    """Every symbol the query names, in order of appearance, without duplicates."""
    found: list[tuple[int, str]] = []
    masked = query
    for pattern, symbol in _NAMED_RE:
        for m in pattern.finditer(masked):
            found.append((m.start(), symbol))
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    for m in _TICKER_RE.finditer(masked):
        token = m.group(1)
        if token.upper() in _NOT_TICKERS or re.fullmatch(r"Q[1-4]", token):
            continue
        found.append((m.start(), token))
    out: list[str] = []
    for _, symbol in sorted(found, key=lambda item: item[0]):
        if symbol not in out:
            out.append(symbol)
    return out


# --------------------------------------------------------------------------- numbers
def _num(text: str) -> int | float:
    value = float(text)
    return int(value) if value.is_integer() and "." not in text else value


_LAST_N_RE = re.compile(r"\b(?:last|past|previous|trailing)\s+(\d+)\s*(trading\s+)?(day|year|week|month)s?\b",
                        re.IGNORECASE)
_N_DAY_RE = re.compile(r"\b(\d+)\s*-?\s*(?:trading\s+)?days?\b(?!\s*(?:ago))", re.IGNORECASE)
_PAREN_RE = re.compile(r"\(\s*(\d+(?:\.\d+)?(?:\s*,\s*\d+(?:\.\d+)?)*)\s*\)")
_YEAR_RE = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")
_QUARTER_RE = re.compile(r"\bQ([1-4])\b|\b(first|second|third|fourth)\s+quarter\b", re.IGNORECASE)
_ORDINAL_QUARTER = {"first": 1, "second": 2, "third": 3, "fourth": 4}


def _last_period(query: str, unit: str) -> int | None:
    for m in _LAST_N_RE.finditer(query):
        if m.group(3).lower() == unit:
            return int(m.group(1))
    return None


def _n_day_spans(query: str) -> list[tuple[int, int]]:
    """``N-day`` / ``N day`` numbers that are not part of a "last N days" phrase."""
    taken = [m.span() for m in _LAST_N_RE.finditer(query)]
    out = []
    for m in _N_DAY_RE.finditer(query):
        if any(a <= m.start() < b for a, b in taken):
            continue
        out.append((m.start(), int(m.group(1))))
    return out


def _paren_numbers(query: str, after: re.Pattern[str] | None = None) -> list[int | float]:
    """Numbers in the first parenthesised list (``(20,2)``), optionally right after ``after``."""
    if after is not None:
        m = after.search(query)
        if not m:
            return []
        m2 = _PAREN_RE.match(query, m.end()) or _PAREN_RE.match(query, m.end() + 1)
        if not m2:
            return []
        return [_num(p.strip()) for p in m2.group(1).split(",")]
    m = _PAREN_RE.search(query)
    return [_num(p.strip()) for p in m.group(1).split(",")] if m else []


# --------------------------------------------------------------------------- arguments
class IntentArgs(TypedDict, total=False):
    """Every argument the parser can bind, by the name the benchmark's intents (and the oracle) use; an
    indicator binds the ones its catalogue entry lists (:attr:`IndicatorSpec.params`), in that order."""

    symbol: str
    #: The symbols of a multi-symbol indicator, in the order the query names them.
    symbols: list[str]
    #: "last N days" (or an "N-day" period): the lookback of the indicator.
    days: int
    years: int
    year: int
    quarter: int
    #: The window of an indicator; a parenthesised number may be a decimal (``Bollinger Bands(20.5, 2)``).
    window: int | float
    num_std: int | float
    fast: int | float
    slow: int | float
    signal: int | float
    n: int | float
    k_period: int | float
    d_period: int | float
    short_window: int
    long_window: int
    rsi_window: int
    rsi_threshold: int | float
    horizon: int


def _year_quarter(query: str) -> IntentArgs:
    out: IntentArgs = {}
    year = _YEAR_RE.search(query)
    if year:
        out["year"] = int(year.group(1))
    quarter = _QUARTER_RE.search(query)
    if quarter:
        out["quarter"] = int(quarter.group(1)) if quarter.group(1) else _ORDINAL_QUARTER[quarter.group(2).lower()]
    return out


# --------------------------------------------------------------------------- catalogue
#: ``(query, its symbols) -> the indicator's arguments``, or None when the query lacks one it needs.
Extractor = Callable[[str, list[str]], IntentArgs | None]


@dataclass(frozen=True)
class IndicatorSpec:
    """One indicator the agent knows how to ask for: how to spot it, its arguments, its contract."""

    name: str
    category: Category
    output: OutputSpec
    pattern: re.Pattern[str]
    extract: Extractor
    multi_symbol: bool = False
    #: A plausible range for numeric results (inclusive); None means any finite number.
    value_range: tuple[float | None, float | None] | None = None
    description: str = ""
    params: tuple[str, ...] = field(default_factory=tuple)


def _w(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"(?<!\w)(?:" + "|".join(alternatives) + r")(?!\w)", re.IGNORECASE)


def _one(symbols: list[str]) -> IntentArgs | None:
    return {"symbol": symbols[0]} if symbols else None


def _x_net_income(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    return None if base is None else {**base, **_year_quarter(q)}


def _x_total_revenue(q: str, s: list[str]) -> IntentArgs | None:
    return _x_net_income(q, s)  # the same arguments: the symbol, and the year (and quarter) it names


def _x_symbol_only(q: str, s: list[str]) -> IntentArgs | None:
    return _one(s)


def _x_dividends(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    if base is None:
        return None
    years = _last_period(q, "year")
    return {**base, "years": years} if years is not None else base


def _x_days(q: str, s: list[str]) -> IntentArgs | None:
    """``symbol`` + ``days`` from "last N days" or else "N-day"."""
    base = _one(s)
    if base is None:
        return None
    days = _last_period(q, "day")
    if days is None:
        spans = _n_day_spans(q)
        days = spans[0][1] if spans else None
    return {**base, "days": days} if days is not None else base


_RSI_WINDOW_RE = re.compile(r"\brsi\s*[-(]?\s*(\d+)\s*\)?(?!\s*[<>=])", re.IGNORECASE)


def _x_rsi(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    if base is None:
        return None
    m = _RSI_WINDOW_RE.search(q)
    out: IntentArgs = {**base, "window": int(m.group(1)) if m else 14}
    days = _last_period(q, "day")
    if days is not None:
        out["days"] = days
    return out


def _x_moving_average(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    if base is None:
        return None
    out: IntentArgs = {**base}
    m = re.search(r"\b(?:s?ma)\s*-?\s*(\d+)\b", q, re.IGNORECASE)
    spans = _n_day_spans(q)
    if spans:
        out["window"] = spans[0][1]
    elif m:
        out["window"] = int(m.group(1))
    days = _last_period(q, "day")
    if days is not None:
        out["days"] = days
    return out


def _positional(q: str, keyword: re.Pattern[str], defaults: tuple[int | float, ...]) -> list[int | float]:
    """The parenthesised numbers after ``keyword`` (else the first ones in the query), one per default;
    a number the query does not give is its default."""
    given = _paren_numbers(q, keyword) or _paren_numbers(q)
    return list(given[: len(defaults)]) + list(defaults[len(given):])


_BOLLINGER_RE = _w(r"bollinger(?:\s+bands?)?")
_MACD_RE = _w("macd")
_KDJ_RE = _w("kdj")


def _x_bollinger(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    if base is None:
        return None
    window, num_std = _positional(q, _BOLLINGER_RE, (20, 2))
    return {**base, "window": window, "num_std": num_std}


def _x_macd(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    if base is None:
        return None
    fast, slow, signal = _positional(q, _MACD_RE, (12, 26, 9))
    return {**base, "fast": fast, "slow": slow, "signal": signal}


def _x_kdj(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    if base is None:
        return None
    n, k_period, d_period = _positional(q, _KDJ_RE, (9, 3, 3))
    return {**base, "n": n, "k_period": k_period, "d_period": d_period}


def _x_volatility(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    if base is None:
        return None
    spans = _n_day_spans(q)
    window = spans[0][1] if spans else _last_period(q, "day")
    return {**base, "window": window} if window is not None else base


def _x_symbols_days(q: str, s: list[str]) -> IntentArgs | None:
    if len(s) < 2:
        return None
    out: IntentArgs = {"symbols": list(s)}
    days = _last_period(q, "day")
    if days is not None:
        out["days"] = days
    return out


_MA_CROSS_RE = re.compile(r"\bs?MA\s*(\d+)\s*([<>])\s*s?MA\s*(\d+)\b", re.IGNORECASE)
_RSI_CMP_RE = re.compile(r"\bRSI(?:\s*[-(]?\s*(\d+)\s*\)?)?\s*([<>])=?\s*(\d+(?:\.\d+)?)", re.IGNORECASE)


def _x_ma_cross_rsi(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    cross = _MA_CROSS_RE.search(q)
    rsi = _RSI_CMP_RE.search(q)
    if base is None or not cross or not rsi:
        return None
    a, b = int(cross.group(1)), int(cross.group(3))
    return {**base, "short_window": min(a, b), "long_window": max(a, b),
            "rsi_window": int(rsi.group(1)) if rsi.group(1) else 14, "rsi_threshold": _num(rsi.group(3))}


def _x_post_signal(q: str, s: list[str]) -> IntentArgs | None:
    base = _one(s)
    rsi = _RSI_CMP_RE.search(q)
    if base is None or not rsi:
        return None
    spans = _n_day_spans(q)
    out: IntentArgs = {**base, "rsi_window": int(rsi.group(1)) if rsi.group(1) else 14,
                       "rsi_threshold": _num(rsi.group(3))}
    if spans:
        out["horizon"] = spans[0][1]
    return out


def _x_divergence(q: str, s: list[str]) -> IntentArgs | None:
    return _x_days(q, s)


_NUM = OutputSpec(type="numeric")
_BOOL = OutputSpec(type="boolean")

#: Checked in this order: the specific composites before the indicators they are made of.
CATALOGUE: tuple[IndicatorSpec, ...] = (
    IndicatorSpec("ma_cross_rsi_signal", Category.COMPOSITE, _BOOL,
                  re.compile(r"\bs?MA\s*\d+\s*[<>]\s*s?MA\s*\d+\b.*\bRSI\b|\bRSI\b.*\bs?MA\s*\d+\s*[<>]\s*s?MA\s*\d+\b",
                             re.IGNORECASE),
                  _x_ma_cross_rsi, description="True when MA(short) > MA(long) and RSI < threshold",
                  params=("symbol", "short_window", "long_window", "rsi_window", "rsi_threshold")),
    IndicatorSpec("post_signal_return", Category.COMPOSITE, _NUM,
                  re.compile(r"\breturns?\b.*\bafter\b.*\bRSI\s*(?:[-(]?\s*\d+\s*\)?)?\s*[<>]", re.IGNORECASE),
                  _x_post_signal, value_range=(-1.0, 1.0),
                  description="average forward return over `horizon` days after each RSI > threshold signal",
                  params=("symbol", "rsi_window", "rsi_threshold", "horizon")),
    IndicatorSpec("volume_price_divergence", Category.COMPOSITE, _BOOL,
                  _w(r"volume\s*-?\s*price\s+divergence", r"price\s*-?\s*volume\s+divergence"),
                  _x_divergence, description="True when price rose but volume fell over the period",
                  params=("symbol", "days")),
    IndicatorSpec("portfolio_return", Category.COMPOSITE, _NUM, _w(r"portfolio\s+returns?"),
                  _x_symbols_days, multi_symbol=True, value_range=(-1.0, 10.0),
                  description="equal-weight portfolio return over the period, as a fraction",
                  params=("symbols", "days")),
    IndicatorSpec("max_drawdown", Category.CALCULATION, _NUM, _w(r"(?:max(?:imum)?\s+)?draw\s*-?\s*downs?"),
                  _x_days, value_range=(-1.0, 1.0),
                  description="maximum peak-to-trough decline of the close over the period",
                  params=("symbol", "days")),
    IndicatorSpec("correlation", Category.CALCULATION, _NUM, _w(r"correlations?", r"correlated?"),
                  _x_symbols_days, multi_symbol=True, value_range=(-1.0, 1.0),
                  description="correlation of daily returns between two symbols",
                  params=("symbols", "days")),
    IndicatorSpec("bollinger_bands", Category.CALCULATION,
                  OutputSpec(type="dict", keys=("upper", "middle", "lower")), _BOLLINGER_RE, _x_bollinger,
                  value_range=(0.0, None), description="latest upper/middle/lower Bollinger band",
                  params=("symbol", "window", "num_std")),
    IndicatorSpec("macd", Category.CALCULATION, OutputSpec(type="dict", keys=("macd", "signal", "histogram")),
                  _MACD_RE, _x_macd,
                  description="latest MACD line, signal line and histogram",
                  params=("symbol", "fast", "slow", "signal")),
    IndicatorSpec("kdj", Category.CALCULATION, OutputSpec(type="dict", keys=("k", "d", "j")),
                  _w("kdj", r"stochastic\s+oscillator"),
                  _x_kdj,
                  description="latest K, D and J values of the KDJ indicator",
                  params=("symbol", "n", "k_period", "d_period")),
    IndicatorSpec("rsi", Category.CALCULATION, _NUM, _w("rsi", r"relative\s+strength\s+index"), _x_rsi,
                  value_range=(0.0, 100.0), description="latest relative strength index",
                  params=("symbol", "window", "days")),
    IndicatorSpec("volatility", Category.CALCULATION, _NUM, _w("volatility"), _x_volatility,
                  value_range=(0.0, 10.0), description="volatility of daily returns over the window",
                  params=("symbol", "window")),
    IndicatorSpec("moving_average", Category.CALCULATION,
                  OutputSpec(type="list", item_type="numeric", min_items=1),
                  _w(r"moving\s+averages?", r"s?ma\s*-?\s*\d+", "sma"), _x_moving_average,
                  value_range=(0.0, None), description="simple moving average of the close, one value per day",
                  params=("symbol", "window", "days")),
    IndicatorSpec("dividend_history", Category.FETCH,
                  OutputSpec(type="list", item_type="dict", item_keys=("date", "amount")),
                  _w(r"dividends?(?:\s+history)?"), _x_dividends,
                  description="dividends paid over the period, as {date, amount} items",
                  params=("symbol", "years")),
    IndicatorSpec("max_close", Category.FETCH, _NUM,
                  _w(r"(?:highest|max(?:imum)?)\s+clos(?:e|ing)(?:\s+price)?"), _x_days,
                  value_range=(0.0, None), description="highest close over the period",
                  params=("symbol", "days")),
    IndicatorSpec("net_income", Category.FETCH, _NUM, _w(r"net\s+income", r"net\s+profit", "earnings"), _x_net_income,
                  description="net income for a fiscal period (latest quarter when none is given)",
                  params=("symbol", "year", "quarter")),
    IndicatorSpec("total_revenue", Category.FETCH, _NUM, _w(r"total\s+revenues?", "revenues?", "sales"),
                  _x_total_revenue, value_range=(0.0, None),
                  description="total revenue for a fiscal period", params=("symbol", "year", "quarter")),
    IndicatorSpec("latest_quote", Category.FETCH, _NUM, _w(r"(?:market\s+)?quote", r"current\s+price"),
                  _x_symbol_only, value_range=(0.0, None), description="latest market price",
                  params=("symbol",)),
    IndicatorSpec("latest_close", Category.FETCH, _NUM,
                  _w(r"(?:latest|last|recent|previous)\s+clos(?:e|ing)(?:\s+price)?", r"clos(?:e|ing)\s+price"),
                  _x_symbol_only, value_range=(0.0, None), description="latest daily close",
                  params=("symbol",)),
)

_BY_NAME = {spec.name: spec for spec in CATALOGUE}


def indicator_spec(name: str) -> IndicatorSpec | None:
    """The catalogue entry for ``name`` (None for an indicator the catalogue does not know)."""
    return _BY_NAME.get(name)


def parse_query(query: str) -> Intent | None:
    """The intent of ``query``, or None when no known indicator (or no symbol) is found."""
    symbols = find_symbols(query)
    for spec in CATALOGUE:
        if not spec.pattern.search(query):
            continue
        args = spec.extract(query, symbols)
        if args is None:
            continue
        return Intent(indicator=spec.name, args=dict(args))
    return None


def question_for_query(query: str, task_id: str = "query") -> Question:
    """The question a free-text query asks (the parser's intent and the catalogue's contract)."""
    intent = parse_query(query)
    if intent is None:
        raise InputError(f"cannot understand the query {query!r}: name a known indicator and a symbol, "
                         "e.g. \"Calculate AAPL RSI-14 over last 30 days\"")
    spec = indicator_spec(intent.indicator)
    assert spec is not None  # the parser only yields catalogue indicators
    return Question(task_id=task_id, category=spec.category, query=query, intent=intent,
                    output=spec.output)
