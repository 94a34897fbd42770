"""Choosing how a hidden world differs for a task: which symbols and windows the task reads, the
spikes that make a near-miss reading (a session late, a window one short or long) move, and for a
yes/no task a reshaped tail that flips its answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from finevo.errors import InputError
from finevo.jsontypes import JSONValue
from finevo.market.provider import MarketProvider
from finevo.market.snapshot import FLOAT_FORMAT, SIGNIFICANT_DIGITS, SymbolData
from runner.inputs.tasks import Task
from runner.judging.compare import compare
from runner.judging.oracle import caching, compute, expected_values
from runner.judging.world_market import (
    Market,
    Spike,
    _events,
    pays_dividends,
    readjust,
    requote,
    restate,
    scaled,
    with_symbol,
)

_YEAR_LIKE = 1900


# --------------------------------------------------------------------------- the task's reading
def task_symbols(task: Task, extra_args: Iterable[Mapping[str, Any]], known: Iterable[str]) -> list[str]:
    """Every symbol of ``known`` named in the task's oracle parameters and the given argument sets."""
    recorded = set(known)
    found: list[str] = []
    for params in (task.oracle.params, task.intent.args, *extra_args):
        for value in params.values():
            for v in value if isinstance(value, list) else [value]:
                if isinstance(v, str) and v in recorded and v not in found:
                    found.append(v)
    return found


#: Parts of an argument's name that say it is a level or a date, not a count of sessions.
_NOT_A_SPAN = ("threshold", "std", "year", "quarter", "level", "limit")


def window_args(params: Mapping[str, Any]) -> dict[str, int]:
    """The integer arguments that count sessions or periods (windows, spans, horizons)."""
    return {k: int(v) for k, v in params.items()
            if isinstance(v, int) and not isinstance(v, bool) and 2 <= v < _YEAR_LIKE
            and not any(part in k.lower() for part in _NOT_A_SPAN)}


# --------------------------------------------------------------------------- choosing spikes
def _matches_any(task: Task, value: Any, expected: Mapping[str, Any]) -> bool:
    return any(compare(value, exp, task.tolerance) is None for exp in expected.values())


def _values(task: Task, market: MarketProvider, overrides: Mapping[str, Any]) -> dict[str, JSONValue] | None:
    try:
        return expected_values(task, market, dict(overrides))
    except InputError:
        return None


def _primary(task: Task, market: MarketProvider, overrides: Mapping[str, Any]) -> Any:
    """The oracle's value under the task's first (primary) convention, or None when it has none."""
    params = {**task.oracle.params, **task.conventions[0].params, **overrides}
    try:
        return compute(task.oracle.name, market, params)
    except (InputError, LookupError, ValueError, TypeError, KeyError):
        return None


#: A yes/no task's argument sets tried for near misses: its own and its first probes (listed first).
_BOOLEAN_ARGSETS = 5


def near_misses(task: Task, market: MarketProvider, stale: MarketProvider | None,
                argsets: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """How many near-miss readings of the task ``market`` tells from every accepted convention, of
    how many could be computed.

    For the task's own arguments: the answer a session late (``stale``) and each window argument
    one less and one more, each read the primary way. For a yes/no task, whose answer only moves
    when a condition flips, also the answer a session late for each probe's arguments.
    """
    caught = tried = 0
    argsets = argsets[:_BOOLEAN_ARGSETS] if task.output.type == "boolean" else argsets[:1]
    for index, overrides in enumerate(argsets):
        expected = _values(task, market, overrides)
        if not expected:
            continue
        misses: list[Any] = []
        if stale is not None:
            misses.append(_primary(task, stale, overrides))
        if index == 0:
            params = {**task.oracle.params, **overrides}
            for key, n in window_args(params).items():
                misses += [_primary(task, market, {**overrides, key: other}) for other in (n - 1, n + 1) if other >= 1]
        for miss in misses:
            if miss is not None:
                tried += 1
                caught += not _matches_any(task, miss, expected)
    return caught, tried


def choose(task: Task, variants: Sequence[Market], symbols: Sequence[str],
           argsets: Sequence[Mapping[str, Any]]) -> int:
    """The index of the variant (first on ties) that tells the most near misses of ``task`` apart."""
    if len(variants) < 2:
        return 0
    best, best_score = 0, -1
    for index, variant in enumerate(variants):
        market = Market([variant.data[s] for s in symbols if s in variant.data], variant.as_of)
        sessions = market.sessions()
        stale = variant.as_it_stood(market.data, sessions[-2]) if len(sessions) > 1 else None
        score, tried = near_misses(task, caching(market), caching(stale) if stale is not None else None,
                                   argsets)
        if score > best_score:
            best, best_score = index, score
        if score == tried:  # nothing better is possible
            break
    return best


def edge_spikes(windows: Sequence[int]) -> list[tuple[str, list[Spike]]]:
    """The ``edge`` variants: a spike on the latest session (with bigger ones just outside each
    window, so a window one session long moves too), or a small move of the latest session only
    (a yes/no signal that flips on the latest bar), most often the best first."""
    outside = sorted({n + 1 for n in windows})
    return [("up", [Spike(1, True, 0.04)] + [Spike(b, True, 0.08) for b in outside]),
            ("down", [Spike(1, False, 0.04)] + [Spike(b, True, 0.08) for b in outside]),
            ("up-small", [Spike(1, True, 0.015)]),
            ("down-small", [Spike(1, False, 0.015)])]


def first_spikes(windows: Sequence[int], calendar: Sequence[int] = ()) -> list[tuple[str, list[Spike]]]:
    """The ``as_of`` variants: a spike on the first session of every window and just outside it,
    the further back the bigger, so for any window the first session holds the window's extreme
    and the session before it a bigger one: a window one session short or long moves. ``calendar``:
    more sessions (counted back) to spike, the last one before each window read in calendar days
    from the as-of date, so a calendar window that starts a day or two early moves too."""
    backs = sorted({b for n in windows for b in (n, n + 1)} | set(calendar))
    if not backs:
        return [("up", [Spike(1, True, 0.04)])]
    step = 0.06 / len(backs)
    return [(name, [Spike(b, up, 0.03 + step * i) for i, b in enumerate(backs)])
            for name, up in (("up", True), ("down", False))]


@dataclass(frozen=True)
class Reshape:
    """The last ``60 + window`` closes of a symbol redrawn: ``60`` sessions moving by ``-lead`` a
    session (a fraction: 0.01 = 1 % down), then the last ``window`` sessions, of which the first
    ``dip_len`` sit ``dip`` below where the lead ended and the rest move by ``-drift`` a session;
    Volume over the last ``window`` sessions ramps to ``1 + volume`` times itself. Such a tail can
    hold a signal on the latest bar only (``MA5 > MA20`` and ``RSI < 30``: a dip that lifts the
    short average over the long one while a long decline keeps the RSI low)."""

    window: int
    lead: float
    dip: float
    dip_len: int
    drift: float
    volume: float

    #: Sessions of the lead-in before the window.
    LEAD = 60

    def label(self) -> str:
        dip = f"{-self.dip:+.0%} for {self.dip_len} sessions, then " if self.dip_len else ""
        volume = f"; volume {self.volume:+.0%} over the last {self.window}" if self.volume else ""
        return (f"last {self.LEAD + self.window} closes redrawn: {-self.lead:+.1%} a session, then over the last "
                f"{self.window} {dip}{-self.drift:+.1%} a session{volume}")

    def closes(self, start: float) -> np.ndarray:
        lead = start * (1.0 - self.lead) ** np.arange(1, self.LEAD + 1)
        window = lead[-1] * (1.0 - self.drift) ** np.arange(0, self.window)
        window[:self.dip_len] = lead[-1] * (1.0 - self.dip)
        return np.concatenate([lead, window])


def _ramped(volume: np.ndarray, ramp: np.ndarray) -> np.ndarray:
    """``volume`` times ``ramp``, whole shares, at least 1 where it traded (a halted session's 0 stays 0)."""
    return np.where(volume > 0, np.maximum(1, np.round(volume * ramp)), 0).astype("int64")


def _redrawn(raw: pd.DataFrame, span: int, closes: Callable[[float], np.ndarray], anchor: int,
             volume: float, window: int) -> pd.DataFrame:
    """A copy of the bars ``raw`` whose last ``span`` closes are ``closes(close at anchor)``, each whole
    bar scaled to its new close, the volume of the last ``window`` bars ramped by ``volume``."""
    raw = raw.copy()
    n = len(raw)
    close = raw["Close"].to_numpy(dtype=float)
    ratios = np.ones(n)
    ratios[n - span:] = closes(float(close[anchor])) / close[n - span:]
    for column in ("Open", "High", "Low", "Close"):
        raw[column] = raw[column].to_numpy(dtype=float) * ratios
    if volume and "Volume" in raw.columns:
        ramp = np.ones(n)
        ramp[n - window:] = 1.0 + volume * np.arange(1, window + 1) / window
        raw["Volume"] = _ramped(raw["Volume"].to_numpy(dtype=float), ramp)
    return raw


def reshape(market: Market, shape: Reshape, symbols: Iterable[str], *, quotes: bool = True) -> Market:
    """``market`` with the last bars of each of ``symbols`` redrawn by ``shape`` (bars stay
    consistent: each whole bar is scaled to its new close, and ``Adj Close`` is recomputed);
    ``quotes=False`` leaves ``info`` / ``fast_info`` as they were (a search that reads bars only)."""
    chosen = set(symbols)
    data = []
    for item in market.data.values():
        raw = item.history
        span = shape.LEAD + shape.window
        if item.symbol not in chosen or span >= len(raw):
            data.append(item)
            continue
        raw = _redrawn(raw, span, shape.closes, len(raw) - span - 1, shape.volume, shape.window)
        bent = SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly, item.info,
                          item.fast_info)
        data.append(requote(bent, market.as_of) if quotes else bent)
    return Market(data, market.as_of)


def reshapes(windows: Sequence[int]) -> Iterable[Reshape]:
    """The tails tried for a flip, in a fixed order: the task's longest window first, no dip first
    (then dips below where a lead-in ends), flat volume first."""
    for window in sorted({max(2, n) for n in windows} or {20}, reverse=True):
        for dip, dip_len in ((0.0, 0), (0.1, 3), (0.1, 5), (0.2, 3), (-0.1, 3)):
            for lead in (0.0, 0.01, -0.01, 0.02):
                for drift in (0.002, -0.002, 0.005, -0.005, 0.01):
                    for volume in (0.0, -0.6, 1.0):
                        yield Reshape(window, lead, dip, dip_len, drift, volume)


def flip_market(task: Task, market: Market, symbols: Sequence[str], answer: Any,
                budget: int = 400) -> tuple[Market, Reshape] | None:
    """A reshaping of ``market`` (of the task's ``symbols`` only) in which the oracle's answer for the
    task's own arguments is not ``answer``; None when none of the first ``budget`` shapes flips it."""
    own = Market([market.data[s] for s in symbols if s in market.data], market.as_of)
    windows = list(window_args({**task.oracle.params, **task.intent.args}).values())
    for tried, shape in enumerate(reshapes(windows)):
        if tried >= budget:
            break
        candidate = reshape(own, shape, symbols, quotes=False)  # the oracle reads bars only
        value = _primary(task, candidate, {})
        if value is not None and value != answer:
            return reshape(market, shape, symbols), shape
    return None


#: Ex-dividends :func:`dividend_flip_market` tries, as fractions of the close before: a special dividend
#: (a few percent of the price, as companies pay out of a windfall), larger than most tails' margins.
DIVIDEND_FLIP_FRACTIONS = (0.05,)


@dataclass(frozen=True)
class DividendFlip:
    """A :class:`Reshape` of a payer's last bars (its adjusted closes) with an ex-dividend of ``fraction``
    of the close before at the middle of the task's longest window (:func:`_ex_dividend`): the quoted
    closes before it stand higher by the dividend, so an answer read from quoted closes (a moving
    average, a momentum of ``auto_adjust=False`` prices) parts from the adjusted reading."""

    shape: Reshape
    fraction: float

    def label(self) -> str:
        return (f"{self.shape.label()}; an ex-dividend of {self.fraction:.0%} at the middle of the last "
                f"{self.shape.window} sessions, which the answer read from quoted closes does not survive")


def _quoted(market: Market) -> Market:
    """``market`` read as quoted: each symbol's dividends dropped, so its adjusted closes are its quoted
    ones -- what the oracle answers for a tool that takes ``auto_adjust=False`` closes for the prices."""
    data = []
    for item in market.data.values():
        raw = item.history
        if pays_dividends(raw):
            raw = raw.copy()
            raw["Dividends"] = 0.0
            item = SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly, item.info,
                              item.fast_info)
        data.append(item)
    return Market(data, market.as_of)


def _paying(market: Market, shape: DividendFlip, symbols: Iterable[str], *, quotes: bool = True) -> Market:
    """``market`` reshaped by ``shape.shape`` with its ex-dividend, on the payers among ``symbols``."""
    reshaped = reshape(market, shape.shape, symbols, quotes=False)
    chosen, span = set(symbols), shape.shape.LEAD + shape.shape.window
    data = []
    for item in reshaped.data.values():
        raw = item.history
        if item.symbol not in chosen or span >= len(raw):  # not reshaped either
            data.append(item)
            continue
        paid = SymbolData(item.symbol, readjust(_ex_dividend(raw, len(raw) - shape.shape.window, shape.fraction)),
                          item.income_yearly, item.income_quarterly, item.info, item.fast_info)
        data.append(requote(paid, market.as_of) if quotes else paid)
    return Market(data, market.as_of)


def dividend_flip_market(task: Task, market: Market, symbols: Sequence[str],
                         budget: int = 200) -> tuple[Market, DividendFlip] | None:
    """For a yes/no task on a dividend payer, a reshaping of its own payers' last bars (the tails
    :func:`flip_market` tries) with an ex-dividend at the middle of its longest window, in which the
    answer read from quoted closes is no accepted answer while the adjusted reading has one; None
    when the task's symbols pay nothing or none of the first ``budget`` tails parts the two."""
    own = Market([market.data[s] for s in symbols if s in market.data], market.as_of)
    payers = [s for s, item in own.data.items() if pays_dividends(item.history)]
    windows = list(window_args({**task.oracle.params, **task.intent.args}).values())
    if not payers or not windows:
        return None
    for tried, tail in enumerate(reshapes([max(windows)])):
        if tried >= budget:
            break
        for fraction in DIVIDEND_FLIP_FRACTIONS:
            shape = DividendFlip(tail, fraction)
            candidate = _paying(own, shape, payers, quotes=False)  # the oracle reads bars only
            accepted = _values(task, candidate, {})
            if not accepted:
                continue
            quoted = _primary(task, _quoted(candidate), {})
            if quoted is not None and not _matches_any(task, quoted, accepted):
                return _paying(market, shape, payers), shape
    return None


@dataclass(frozen=True)
class RoundTrip:
    """The last ``window`` closes of a symbol redrawn as a round trip: from the window's first close
    they move ``excursion`` away (a fraction, at the middle of the window) and come back to end
    ``end`` from where they started; the first session opens ``2 * end`` from its close, beyond where
    the window ends; Volume over the window ramps to ``1 + volume`` times itself. Readings that
    agree on most paths part here: the last close against the first close, against the window's mean
    or against the first open.

    A stock that pays goes ex-dividend at the middle of the window, ``dividend`` of the close before
    (a fraction, larger than ``end``): the quoted closes from the ex-date on fall by it, so the
    dividend-adjusted closes draw the path above exactly and the raw ones end ``dividend`` lower,
    the other side of the first close when the path ends above it. "The price rose" read from raw
    closes parts from the adjusted reading here (a small net move, a dividend above it).

    Its volume falls over the window by session while rising by calendar day
    (:func:`_falling_by_session`): "volume trends down" regressed on the dates parts from the slope
    over the sessions.

    A path that ends above its first close ends less than half a cent above it (:func:`_cent_above`):
    the last adjusted close rounds to the same cent as the first, so a tool that rounds the closes
    before the strict comparison sees no rise where the data hold one."""

    window: int
    excursion: float
    end: float
    volume: float = -0.6
    dividend: float = 0.015

    def label(self) -> str:
        ending = ("less than half a cent above the first close (the same cent)" if self.end > 0
                  else f"{self.end:+.1%} from the first close")
        return (f"last {self.window} closes redrawn as a round trip: {self.excursion:+.0%} at the middle, ending "
                f"{ending} (opened {2 * self.end:+.1%} from it), adjusted for an "
                f"ex-dividend of {self.dividend:.1%} at the middle (a payer's quoted closes "
                f"{self.end - self.dividend:+.1%}); volume falling by session, rising by calendar day")

    def closes(self, start: float) -> np.ndarray:
        steps = np.arange(self.window) / max(1, self.window - 1)
        return start * (1.0 + self.excursion * np.sin(np.pi * steps) + self.end * steps)


def round_trip(market: Market, shape: RoundTrip, symbols: Iterable[str]) -> Market:
    """``market`` with the last bars of each of ``symbols`` redrawn by ``shape`` (whole bars scaled to
    their new closes, the first one's open set, ``Adj Close`` and the quotes recomputed)."""
    chosen = set(symbols)
    data = []
    for item in market.data.values():
        raw = item.history
        n = len(raw)
        if item.symbol not in chosen or shape.window + 1 >= n:
            data.append(item)
            continue
        raw = raw.copy()
        close = raw["Close"].to_numpy(dtype=float)
        ratios = np.ones(n)
        ratios[n - shape.window:] = shape.closes(float(close[n - shape.window])) / close[n - shape.window:]
        for column in ("Open", "High", "Low", "Close"):
            raw[column] = raw[column].to_numpy(dtype=float) * ratios
        first = n - shape.window
        opened = float(raw["Close"].iloc[first]) * (1.0 + 2 * shape.end)
        raw.iloc[first, raw.columns.get_loc("Open")] = opened
        raw.iloc[first, raw.columns.get_loc("High")] = max(float(raw["High"].iloc[first]), opened)
        raw.iloc[first, raw.columns.get_loc("Low")] = min(float(raw["Low"].iloc[first]), opened)
        if shape.volume and "Volume" in raw.columns:
            raw["Volume"] = _falling_by_session(raw, first, shape.volume)
        raw = _ex_dividend(raw, first, shape.dividend)
        raw = _cent_above(readjust(raw), shape.window) if shape.end > 0 else raw
        data.append(requote(restate(SymbolData(item.symbol, readjust(raw), item.income_yearly,
                                               item.income_quarterly, item.info, item.fast_info), market.as_of),
                            market.as_of))
    return Market(data, market.as_of)


#: The weights tried for :func:`_falling_by_session`'s pattern, in order: ``(by_gap, fall)``, the share of the
#: window's level that a session's calendar gap moves its volume (in standard deviations of the gaps)
#: and the fall over the window by session.
_GAP_WEIGHTS = ((0.4, 0.05), (0.5, 0.04), (0.6, 0.03), (0.3, 0.03))
#: The least a parted slope must move the volume over the window, as a share of its level, for every way
#: of fitting it (a closed form, ``np.polyfit``, a float32 sum) to see the same sign.
_SLOPE_MARGIN = 0.005


def _falling_by_session(raw: pd.DataFrame, first: int, fall: float) -> np.ndarray:
    """``raw``'s Volume with the bars from ``first`` on redrawn so that its least-squares slope falls over
    the session count while it rises over calendar days: each session trades the window's median volume,
    more after a longer gap of days (a Monday, a day after a holiday: the days a session's calendar time
    runs ahead of its count), less after a short one, with a small fall by session. A reading of "volume
    trends down" that regresses on the dates instead of the sessions answers the other way here; where
    the window's calendar has no gaps to part the two (or no pattern does it), the volume ramps by
    ``fall`` over the window as before. A halted session's 0 stays 0."""
    volume = raw["Volume"].to_numpy(dtype=float)
    window = volume[first:]
    count = len(window)
    ramp = np.ones(len(volume))
    ramp[first:] = 1.0 + fall * np.arange(1, count + 1) / count
    plain = _ramped(volume, ramp)
    traded = window > 0
    if count < 5 or traded.sum() < 3:
        return plain
    sessions = np.arange(count, dtype=float)
    days = np.array([ts.date().toordinal() for ts in raw.index[first:]], dtype=float)
    days -= days[0]
    gaps = days - np.polyval(np.polyfit(sessions, days, 1), sessions)  # calendar time ahead of the count
    if gaps.std() == 0.0:
        return plain
    level = float(np.median(window[traded]))
    centred = (sessions - sessions.mean()) / (count - 1)
    for by_gap, by_session in _GAP_WEIGHTS:
        pattern = 1.0 + by_gap * gaps / gaps.std() - by_session * centred
        drawn = np.where(traded, np.maximum(1.0, np.round(level * pattern)), 0.0)
        per_session = np.polyfit(sessions, drawn, 1)[0] * (count - 1) / level
        per_day = np.polyfit(days, drawn, 1)[0] * days[-1] / level
        if pattern.min() > 0 and per_session < -_SLOPE_MARGIN and per_day > _SLOPE_MARGIN:
            out = plain.copy()
            out[first:] = drawn.astype("int64")
            return out
    return plain


def _ex_dividend(raw: pd.DataFrame, first: int, fraction: float) -> pd.DataFrame:
    """``raw`` (its closes from bar ``first`` on redrawn) with an ex-dividend of ``fraction`` of the close
    before it at the first bar of the window's second half free of another dividend or a split (none
    when there is none, the frame has no ``Dividends`` or the symbol never paid one: an index, a
    stock that pays nothing), the bars from it on lowered by the same fraction: the adjusted closes
    (:func:`readjust`) are then the redrawn ones times one factor, the quoted ones fall at the ex-date."""
    if not fraction or not pays_dividends(raw):
        return raw
    n = len(raw)
    events = _events(raw)
    free = [i for i in range(first + (n - first) // 2, n) if not events[i]]
    if not free:
        return raw
    at = free[0]
    raw = raw.copy()
    amount = float(raw["Close"].iloc[at - 1]) * fraction
    for column in ("Open", "High", "Low", "Close"):
        values = raw[column].to_numpy(dtype=float, copy=True)
        values[at:] = values[at:] * (1.0 - fraction)
        raw[column] = values
    raw.iloc[at, raw.columns.get_loc("Dividends")] = amount
    return raw


def round_trip_market(task: Task, market: Market, symbols: Sequence[str]) -> tuple[Market, RoundTrip] | None:
    """For a yes/no task, a round trip over its longest window (:class:`RoundTrip`) of its symbols
    that the oracle answers, a ``True`` answer first (a signal a path-average reading misses): None
    when the task has no window or the oracle answers none."""
    windows = sorted(window_args({**task.oracle.params, **task.intent.args}).values(), reverse=True)
    if not windows:
        return None
    own = Market([market.data[s] for s in symbols if s in market.data], market.as_of)
    found: list[tuple[Any, RoundTrip]] = []
    for end, excursion in ((0.005, -0.08), (-0.005, 0.08), (0.005, 0.08), (-0.005, -0.08)):
        shape = RoundTrip(max(2, windows[0]), excursion, end)
        value = _primary(task, round_trip(own, shape, symbols), {})
        if value is True:
            return round_trip(market, shape, symbols), shape
        if value is not None:
            found.append((value, shape))
    return (round_trip(market, found[0][1], symbols), found[0][1]) if found else None


@dataclass(frozen=True)
class Zigzag:
    """The last ``window + 1`` closes of a symbol redrawn as a zigzag: from where they start, the
    last ``2 * ((window - 1) // 2)`` daily returns alternate ``+(swing + edge)`` and ``-swing``
    (ending on a fall), the others are flat; Volume over the window ramps to ``1 + volume`` times
    itself. Each up-and-down pair compounds to ``(1 + swing + edge)(1 - swing) < 1`` while its returns
    sum to ``+edge``; the last fall is then made shallower so that the last close equals the first
    of the last ``window`` closes exactly (:func:`zigzag`: a tie, to the last bit of the adjusted
    close), and the summed daily returns stay positive. A reading of "the price rose" from the summed
    (or mean) return parts from the close's change, and so does one that counts a tie as a rise
    (``>=``): the close did not rise. Here and nowhere smoother."""

    window: int
    swing: float = 0.1
    edge: float = 0.005
    volume: float = -0.6

    def label(self) -> str:
        return (f"last {self.window + 1} closes redrawn as a zigzag: daily returns alternating "
                f"{self.swing + self.edge:+.1%} and {-self.swing:+.1%}, ending exactly at the close {self.window} "
                "sessions back (a tie) though they sum positive; "
                f"volume {self.volume:+.0%} over the window")

    def returns(self) -> np.ndarray:
        """The ``window`` daily returns of the redrawn closes, oldest first."""
        out = np.zeros(self.window)
        pairs = (self.window - 1) // 2
        for k in range(pairs):
            out[self.window - 2 - 2 * k] = self.swing + self.edge
            out[self.window - 1 - 2 * k] = -self.swing
        return out

    def closes(self, start: float) -> np.ndarray:
        return start * np.cumprod(np.concatenate([[1.0], 1.0 + self.returns()]))


def zigzag(market: Market, shape: Zigzag, symbols: Iterable[str]) -> Market:
    """``market`` with the last bars of each of ``symbols`` redrawn by ``shape`` (whole bars scaled to
    their new closes, ``Adj Close`` and the quotes recomputed)."""
    chosen = set(symbols)
    data = []
    for item in market.data.values():
        raw = item.history
        n = len(raw)
        span = shape.window + 1
        if item.symbol not in chosen or span + 1 >= n:
            data.append(item)
            continue
        raw = _tied(readjust(_redrawn(raw, span, shape.closes, n - span, shape.volume, shape.window)), shape.window)
        data.append(requote(SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly,
                                       item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of)


def _tied(raw: pd.DataFrame, window: int, above: float = 0.0) -> pd.DataFrame:
    """``raw`` (``Adj Close`` computed) with its last bar scaled whole so that its close equals, to the
    last bit, the adjusted close ``window`` bars back -- the first of the last ``window`` closes, in
    the adjusted closes every reading of "the price" reads (the last bar's own factor is 1: no
    dividend follows it, so its quoted close is its adjusted one); ``above``: that much above it."""
    if "Adj Close" not in raw.columns:
        return raw
    raw = raw.copy()
    target = float(raw["Adj Close"].iloc[len(raw) - window]) + above
    last = len(raw) - 1
    ratio = target / float(raw["Close"].iloc[last])
    for column in ("Open", "High", "Low"):
        raw.iloc[last, raw.columns.get_loc(column)] = float(raw[column].iloc[last]) * ratio
    raw.iloc[last, raw.columns.get_loc("Close")] = target
    raw.iloc[last, raw.columns.get_loc("High")] = max(float(raw["High"].iloc[last]), target)
    raw.iloc[last, raw.columns.get_loc("Low")] = min(float(raw["Low"].iloc[last]), target)
    return readjust(raw)


#: How far above the first close of the window the round trip's last close ends (:func:`_cent_above`),
#: and how far below its cent the first close is moved: both round to that cent, a tenth of a cent from
#: where rounding would part them.
CENT_ABOVE = 0.004
_BELOW_CENT = 0.003


def _cent_above(raw: pd.DataFrame, window: int) -> pd.DataFrame:
    """``raw`` (``Adj Close`` computed) with its last close :data:`CENT_ABOVE` above the adjusted close
    ``window`` bars back, both rounding to the same cent: every price first scaled by one factor (a few
    millionths: levels are arbitrary, the adjustment factors barely move) so that the first
    close lies :data:`_BELOW_CENT` under its cent, then the last bar scaled whole (:func:`_tied`). The
    close rises, by less than half a cent: rounded to cents it does not."""
    if "Adj Close" not in raw.columns:
        return raw
    first = float(raw["Adj Close"].iloc[len(raw) - window])
    factor = (round(first * 100) / 100 - _BELOW_CENT) / first
    raw = raw.copy()
    for column in ("Open", "High", "Low", "Close"):
        raw[column] = raw[column].to_numpy(dtype=float) * factor
    return _tied(readjust(raw), window, CENT_ABOVE)


#: The edges :func:`zigzag_market` tries, in order (each a rise's excess over the fall that follows it).
_ZIGZAG_EDGES = tuple(0.005 + 1e-5 * k for k in range(24))


def _compounds_above(market: Market, symbols: Iterable[str], window: int) -> bool:
    """Whether, for each of ``symbols``, the tied window's daily returns compounded the usual ways in
    floating point -- ``(1 + pct_change()).prod()`` and ``.cumprod()``'s last, on the adjusted closes as a
    snapshot file stores them (:data:`~finevo.market.snapshot.FLOAT_FORMAT`) -- come out above 1, though
    the last close equals the first to the last bit: a tool that reads "the price rose" from them
    answers a rise there."""
    for symbol in symbols:
        if symbol not in market.data:
            continue
        stored = [float(FLOAT_FORMAT % v) for v in market.history(symbol)["Close"].to_numpy(dtype=float)[-window:]]
        growth = 1 + pd.Series(stored).pct_change().dropna()
        if not (float(growth.prod()) > 1.0 and float(growth.cumprod().iloc[-1]) > 1.0):
            return False
    return True


def zigzag_market(task: Task, market: Market, symbols: Sequence[str]) -> tuple[Market, Zigzag] | None:
    """For a yes/no task, a zigzag over its longest window (:class:`Zigzag`) of its symbols, when the
    oracle answers it; None when the task has no window of at least 3 sessions or no answer there.
    Of :data:`_ZIGZAG_EDGES`, the first whose tie the task's own symbols compound above 1 in floating
    point (:func:`_compounds_above`), so that a rise read from compounded returns is caught in every
    run, not in the runs whose rounding happens to fall that way; else the first edge."""
    windows = sorted(window_args({**task.oracle.params, **task.intent.args}).values(), reverse=True)
    if not windows or windows[0] < 3:
        return None
    own = Market([market.data[s] for s in symbols if s in market.data], market.as_of)
    subjects = task_symbols(task, [], own.data)
    chosen: Zigzag | None = None
    for edge in _ZIGZAG_EDGES:
        shape = Zigzag(windows[0], edge=edge)
        drawn = zigzag(own, shape, symbols)
        if _primary(task, drawn, {}) is None:
            return None
        chosen = chosen or shape
        if _compounds_above(drawn, subjects, windows[0]):
            chosen = shape
            break
    assert chosen is not None
    return zigzag(market, chosen, symbols), chosen


#: The finest grid a halted price is put on (a multiple of 2**-6, coarser for a price of five digits
#: or more): a sum of a window's copies of it is exact, so every way of averaging a flat window -- a
#: tail mean, a rolling mean, a sum over a count -- gives the price itself, to the last bit, and two
#: windows inside the halt tie exactly. Its decimal digits (six at most) fit the significant digits a
#: snapshot file keeps (:data:`finevo.market.snapshot.SIGNIFICANT_DIGITS`), so it is read back as written.
HALT_GRID_BITS = 6


def _on_halt_grid(price: float, *, above_cent: bool = False) -> float:
    """``price`` rounded to the halt's grid (:data:`HALT_GRID_BITS` binary places, fewer where the
    whole part leaves fewer than that many of the file's significant digits); ``above_cent``: the first
    grid price at or below it that lies less than :data:`_ABOVE_CENT` above a whole cent."""
    whole_digits = len(str(int(abs(price))))
    step = 2.0 ** -max(0, min(HALT_GRID_BITS, SIGNIFICANT_DIGITS - whole_digits))
    grid = round(price / step) * step
    if above_cent:
        for _ in range(int(1 / step) + 1):
            if (grid * 100) % 1 < _ABOVE_CENT * 100:
                break
            grid -= step
    return grid


def _one_pass_variances(price: float, n: int) -> list[float]:
    """The one-pass variances (``E[x^2] - E[x]^2``) of ``n`` closes at ``price``, each mean taken as numpy
    (a pairwise sum) and as Python's ``sum`` (one after the other) does, in every pairing: exactly zero
    in exact arithmetic, rounding noise of either sign in floating point."""
    flat = np.full(n, price)
    means = [float(np.mean(flat)), sum([price] * n) / n]
    squares = [float(np.mean(flat * flat)), sum([price * price] * n) / n]
    return [square - mean * mean for square in squares for mean in means]


def _off_grid_cent(price: float, windows: Sequence[int]) -> float:
    """A whole cent within a dollar of ``price``, not a multiple of a quarter dollar (a price as quoted,
    whose binary digits run to the last bit, so its square and a window's sum of it round, unlike a
    price on :data:`HALT_GRID_BITS`' grid), the nearest at which the most one-pass variances of a flat
    window of each of ``windows`` (:func:`_one_pass_variances`) come out negative: the shape recorded
    halts have, at the price where that formula's rounding shows."""
    base = round(price * 100)
    candidates = [c for step in range(100) for c in dict.fromkeys((base - step, base + step))
                  if c > 0 and c % 25 != 0]

    def negatives(cents: int) -> int:
        return sum(v < 0 for n in windows for v in _one_pass_variances(cents / 100, n))

    return max(candidates, key=negatives) / 100  # the first (nearest) of the best on ties


#: How far above a whole cent a resumed halt's price lies at most (:func:`_on_halt_grid`), leaving room
#: under the next rounding boundary for the short average's rise.
_ABOVE_CENT = 0.003


@dataclass(frozen=True)
class Halt:
    """The last ``window`` sessions of a symbol halted at one price (flat bars, Volume 0, a trading
    suspension still in force on the as-of day), after ``fall_sessions`` sessions falling ``fall`` a
    day into it. Every average over windows inside the halt is the halted price exactly (a tie, see
    :data:`HALT_GRID_BITS`): "MA5 above MA20" is false there, and a tool that counts a tie as a cross
    (``>=``) answers true. The fall leaves the momentum low (Wilder's RSI keeps the ratio of its
    smoothed gains and losses over a run of zero changes), so a signal that also asks for a low RSI
    turns on the moving averages' comparison alone."""

    window: int
    fall_sessions: int = 14
    fall: float = 0.015
    #: The task's shortest window: on a probe's symbol (:func:`halted_market`'s ``resumed``) trading
    #: resumes on the last session, lifting the average over this window above the longest one's by
    #: less than half a cent.
    shortest: int = 2
    #: The symbols whose trading resumes on the last session.
    resumed: tuple[str, ...] = ()

    def label(self) -> str:
        again = (f"; {', '.join(self.resumed)} trading again on the last session, the {self.shortest}-session "
                 "average above the longer ones by less than half a cent") if self.resumed else ""
        return (f"a trading halt over the last {self.window} sessions (flat bars, Volume 0) after "
                f"{self.fall_sessions} sessions falling {self.fall:.1%} a day: averages over windows "
                f"inside it tie exactly{again}")


@dataclass(frozen=True)
class Flat(Halt):
    """A :class:`Halt` at a quoted cent price (:func:`flat_market`): what it shows is a spread of zero."""

    def label(self) -> str:
        return (f"a trading halt over the last {self.window} sessions (flat bars, Volume 0, at a quoted cent "
                f"price) after {self.fall_sessions} sessions falling {self.fall:.1%} a day: the closes inside "
                "it spread by nothing")


def _halted(raw: pd.DataFrame, shape: Halt, *, resumed: bool = False,
            one_pass_windows: Sequence[int] = ()) -> pd.DataFrame | None:
    """``raw`` redrawn by ``shape`` (``Adj Close`` recomputed; a dividend inside the halt is not paid,
    so its adjusted closes stay flat; a split keeps its event, the prices being split-adjusted
    already), or None when the history is too short for it. ``resumed``: the halted price a little above
    a whole cent, and the last session trading again, closing up by half the room left under the next
    rounding boundary times the shortest window (:func:`_resume`). ``one_pass_windows``: the halted price
    is a whole cent off the binary grid, chosen for those windows (:func:`_off_grid_cent`), instead of on it."""
    n = len(raw)
    first = n - shape.window  # the first halted session
    start = first - shape.fall_sessions  # the first falling session
    if start < 2:
        return None
    raw = raw.copy()
    close = raw["Close"].to_numpy(dtype=float)
    fallen = float(close[start - 1]) * (1.0 - shape.fall) ** np.arange(1, shape.fall_sessions + 1)
    # the halted price: the last traded close
    fallen[-1] = (_off_grid_cent(float(fallen[-1]), one_pass_windows) if one_pass_windows
                  else _on_halt_grid(float(fallen[-1]), above_cent=resumed))
    ratios = np.ones(n)
    ratios[start:first] = fallen / close[start:first]
    for column in ("Open", "High", "Low", "Close"):
        raw[column] = raw[column].to_numpy(dtype=float) * ratios
    price = float(fallen[-1])
    raw.iloc[first - 1, raw.columns.get_loc("Close")] = price
    for column in ("Open", "High", "Low", "Close"):
        raw.iloc[first:, raw.columns.get_loc(column)] = price
    if "Volume" in raw.columns:
        raw.iloc[first:, raw.columns.get_loc("Volume")] = 0
    if "Dividends" in raw.columns:
        raw.iloc[first + 1:, raw.columns.get_loc("Dividends")] = 0.0
    bar = raw.iloc[first - 1]
    raw.iloc[first - 1, raw.columns.get_loc("High")] = max(float(bar["High"]), price)
    raw.iloc[first - 1, raw.columns.get_loc("Low")] = min(float(bar["Low"]), price)
    return readjust(_resume(raw, price, shape.shortest, first) if resumed else raw)


def _resume(raw: pd.DataFrame, price: float, shortest: int, first: int) -> pd.DataFrame:
    """``raw`` (halted at ``price`` from bar ``first`` on) with trading resumed on the last session: it
    opens at the halted price and closes up by ``shortest`` times half the room between ``price`` and
    the next rounding boundary of cents, on the volume the stock traded before the halt. The average of
    the last ``shortest`` closes rises by half that room, a longer one's by less: the short average is
    above the long one by less than half a cent, and both round to the halted price's cent."""
    boundary = (np.floor(price * 100) + 0.5) / 100
    close = price + shortest * (boundary - price) / 2
    last = len(raw) - 1
    for column, value in (("Open", price), ("High", close), ("Low", price), ("Close", close)):
        raw.iloc[last, raw.columns.get_loc(column)] = value
    if "Volume" in raw.columns:
        traded = raw["Volume"].iloc[:first].to_numpy(dtype=float)
        raw.iloc[last, raw.columns.get_loc("Volume")] = int(np.median(traded[traded > 0])) if (traded > 0).any() else 1
    return raw


#: The oracles that measure the spread of price levels over a window (Bollinger's standard deviation
#: of closes): over a flat window it is exactly zero, where a one-pass variance
#: (``E[x^2] - E[x]^2``, the squares of levels near the price cancelling) comes out slightly negative
#: or positive -- a tool then raises on a negative root or answers bands apart by rounding noise.
LEVEL_SPREAD_ORACLES = frozenset({"bollinger_bands"})


#: How many times the task's own window a flat world's halt lasts at most (its probes' longer windows
#: inside it too, so each is a flat window of its own rounding).
FLAT_REACH = 3


def flat_market(task: Task, market: Market, symbols: Sequence[str],
                argsets: Sequence[Mapping[str, Any]] = ()) -> tuple[Market, Flat] | None:
    """For a task that measures the spread of price levels over a window (:data:`LEVEL_SPREAD_ORACLES`),
    ``symbols`` halted over its longest window -- of its own arguments and of its probes' ``argsets``,
    up to :data:`FLAT_REACH` times its own -- after a fall (:class:`Halt`) at a quoted cent price off
    the binary grid (:func:`_off_grid_cent`): the closes inside it are one price exactly, their spread
    zero, and a one-pass variance's cancellation leaves rounding noise of either sign; None for another
    task, a window under 3 sessions, histories too short for it, or no answer of the oracle for the
    task's own arguments there."""
    windows = _reached_windows(task, argsets) if task.oracle.name in LEVEL_SPREAD_ORACLES else []
    if not windows:
        return None
    shape = Flat(windows[-1])
    flat = _with_histories(task, market, lambda item: _halted(item.history, shape, one_pass_windows=windows)
                    if item.symbol in symbols else None)
    return None if flat is None else (flat, shape)


#: The oracles that read price levels over a window of sessions and stay defined over a halt (a
#: highest close, a moving average, a drawdown, a return): a halted stock's flat bars are sessions of
#: the window like any other. A tool that drops repeated bars (``drop_duplicates()`` on the frame, a
#: filter on unchanged closes) reads a window that reaches back before the halt, into the fall.
HALT_WINDOW_ORACLES = frozenset({"max_close", "moving_average", "max_drawdown", "portfolio_return"})


@dataclass(frozen=True)
class Halted(Halt):
    """A :class:`Halt` over the task's longest window (:func:`halted_window_market`): what it shows is
    that every flat bar counts as a session."""

    def label(self) -> str:
        return (f"a trading halt over the last {self.window} sessions (flat bars, Volume 0) after "
                f"{self.fall_sessions} sessions falling {self.fall:.1%} a day: each flat bar is a session "
                "of the window")


def halted_window_market(task: Task, market: Market, symbols: Sequence[str],
                         argsets: Sequence[Mapping[str, Any]] = ()) -> tuple[Market, Halted] | None:
    """For a task that reads price levels over a window (:data:`HALT_WINDOW_ORACLES`), ``symbols``
    halted over its own longest window after a fall (:class:`Halt`): the highest close, the averages,
    the drawdown and the return over that window are the halted price's (a return of zero), while a
    window that drops the repeated bars reaches the higher closes of the fall. None for another task,
    a window under 3 sessions, histories too short for it, or no answer of the oracle there.
    ``argsets`` is unused: the probes' windows read the fall and the history before it as they are."""
    del argsets
    windows = window_args({**task.oracle.params, **task.intent.args}).values()
    if task.oracle.name not in HALT_WINDOW_ORACLES or not windows or max(windows) < 3:
        return None
    shape = Halted(max(windows))
    halted = _with_histories(task, market, lambda item: _halted(item.history, shape)
                             if item.symbol in symbols else None)
    return None if halted is None else (halted, shape)


def _reached_windows(task: Task, argsets: Sequence[Mapping[str, Any]]) -> list[int]:
    """The windows of ``task``'s own arguments and of its probes' ``argsets``, up to :data:`FLAT_REACH`
    times its own longest, in order; none when its own are all under 3 sessions."""
    own = window_args({**task.oracle.params, **task.intent.args}).values()
    if not own or max(own) < 3:
        return []
    probed = [w for a in argsets for w in window_args({**task.oracle.params, **task.intent.args, **a}).values()]
    return sorted({w for w in [*own, *probed] if w <= FLAT_REACH * max(own)})


#: The oracles that report, or divide by, the dispersion of a window's returns (a volatility, a
#: correlation): a series that moves little -- a short-term bond fund's, whose daily returns spread by a
#: few hundredths of a percent -- still moves, and its measure is defined; a tool that takes a small
#: dispersion for none (a guard of 1e-3 on the standard deviation) refuses it.
QUIET_ORACLES = frozenset({"volatility", "correlation"})
#: The daily standard deviation of returns a quiet world gives its symbols over the window (a
#: short-term Treasury fund's: about 0.6 % a year).
QUIET_STD = 4e-4


@dataclass(frozen=True)
class Quiet:
    """The last ``window`` sessions of a symbol trading quietly: each session's move, and its bar's
    range about the close, scaled down so the daily returns spread by ``std`` (their signs and order
    kept), no dividend paid among them (:func:`quiet_market`)."""

    window: int
    std: float = QUIET_STD

    def label(self) -> str:
        return (f"quiet trading over the last {self.window} sessions: the daily returns spread by {self.std:.2%} "
                "(a short-term bond fund's), their signs and order kept")


def quiet_market(task: Task, market: Market, symbols: Sequence[str],
                 argsets: Sequence[Mapping[str, Any]] = ()) -> tuple[Market, Quiet] | None:
    """For a task that measures the dispersion of returns (:data:`QUIET_ORACLES`), ``symbols`` trading
    quietly (:class:`Quiet`) over its longest window and one session more (its first return), its
    probes' longer windows too (up to :data:`FLAT_REACH` times its own); None for another task, a window
    under 3 sessions, histories too short, or no answer of the oracle for its own arguments there."""
    windows = _reached_windows(task, argsets) if task.oracle.name in QUIET_ORACLES else []
    if not windows:
        return None
    shape = Quiet(windows[-1] + 1)
    quiet = _with_histories(task, market, lambda item: _quietened(item.history, shape)
                            if item.symbol in symbols else None)
    return None if quiet is None else (quiet, shape)


def _quietened(raw: pd.DataFrame, shape: Quiet) -> pd.DataFrame | None:
    """``raw`` with its last ``shape.window`` sessions trading as :class:`Quiet` says (``Adj Close``
    recomputed), or None when the history is too short or does not move there."""
    n = len(raw)
    first = n - shape.window
    if first < 2:
        return None
    raw = raw.copy()
    close = raw["Close"].to_numpy(dtype=float, copy=True)
    moves = close[first:] / close[first - 1:-1] - 1.0
    spread = float(np.std(moves))
    if not spread > 0.0:
        return None
    scale = shape.std / spread
    quiet = close[first - 1] * np.cumprod(1.0 + moves * scale)
    for column in ("Open", "High", "Low"):  # each bar's range about its close, scaled alike
        values = raw[column].to_numpy(dtype=float, copy=True)
        values[first:] = quiet * (1.0 + (values[first:] / close[first:] - 1.0) * scale)
        raw[column] = values
    close[first:] = quiet
    raw["Close"] = close
    if "Dividends" in raw.columns:
        raw.iloc[first:, raw.columns.get_loc("Dividends")] = 0.0
    return readjust(raw)


def _with_histories(task: Task, market: Market, redraw: Callable[[SymbolData], pd.DataFrame | None]) -> Market | None:
    """``market`` with each symbol's history replaced by ``redraw``'s (None: kept as it is), quotes
    re-derived; None when no symbol changed or the oracle has no answer for the task's own arguments there."""
    data, changed = [], False
    for item in market.data.values():
        history = redraw(item)
        changed |= history is not None
        data.append(item if history is None else
                    requote(SymbolData(item.symbol, history, item.income_yearly, item.income_quarterly, item.info,
                                       item.fast_info), market.as_of))
    redrawn = Market(data, market.as_of)
    if not changed or _primary(task, redrawn, {}) is None:
        return None
    return redrawn


def halted_market(task: Task, market: Market, symbols: Sequence[str],
                  resumed: Sequence[str] = ()) -> tuple[Market, Halt] | None:
    """For a yes/no task that reads two windows or more (a short and a long average), its own symbols
    halted over its longest window after a fall (:class:`Halt`), when the oracle answers its own
    arguments there; None when the task has fewer windows, none of at least 3 sessions, its symbols'
    histories are too short, or the oracle has no answer. A task of one window has nothing to tie
    there (a spread over one window is :func:`flat_market`'s).
    The ``resumed`` symbols (its probes' others) are halted too, trading again on the last session
    (:func:`_resume`): there the short average is above the long one by less than half a cent, so a
    tool that rounds the averages to cents before comparing them sees a tie where there is a cross."""
    windows = sorted(window_args({**task.oracle.params, **task.intent.args}).values(), reverse=True)
    if len(windows) < 2 or windows[0] < 3:
        return None
    chosen, again = set(symbols), set(resumed) - set(symbols)
    shape = Halt(windows[0], shortest=max(2, windows[-1]), resumed=tuple(s for s in resumed if s in again))
    halted = _with_histories(task, market, lambda item: _halted(item.history, shape, resumed=item.symbol in again)
                      if item.symbol in chosen | again else None)
    return None if halted is None else (halted, shape)


# --------------------------------------------------------------------------- a yes/no answer at a window's edge
#: The largest move of one close :func:`edge_flip_markets` makes (a fraction: an earnings day's).
EDGE_FLIP_MOVE = 0.15
#: Halvings of the bisection that finds the smallest move turning the answer.
_EDGE_BISECTIONS = 12
#: How far past the smallest turning move the world's move lies (a factor), so no rounding of the
#: stored prices takes the turn back.
_EDGE_MARGIN = 1.2


@dataclass(frozen=True)
class EdgeFlip:
    """The close of session ``window`` back (the oldest one the window ``key=window`` reads) moved by
    ``move`` (a fraction); with ``paired``, the close before it the other way by as much in price, so a
    sum over one more session is what it was. The yes/no answer for the argument set ``argset``
    (0: the task's own, ``i``: probe ``i``) turns there, and with the window one shorter or longer
    it does not."""

    key: str
    window: int
    move: float
    paired: bool
    argset: int

    def label(self) -> str:
        pair = ", the close before it the other way by as much" if self.paired else ""
        return (f"the close {self.window} sessions back moved {self.move:+.2%}{pair}: the answer turns at "
                f"the edge of {self.key}={self.window}")


def _edge_moved(market: Market, symbols: Iterable[str], shape: EdgeFlip, *, quotes: bool = True) -> Market:
    """``market`` with ``shape``'s moves made on each of ``symbols`` (each whole bar scaled)."""
    for symbol in symbols:
        item = market.data.get(symbol)
        if item is None or len(item.history) <= shape.window + 1:
            continue
        close = item.history["Close"].to_numpy(dtype=float)
        i = len(close) - shape.window
        ratios = np.ones(len(close))
        ratios[i] = 1 + shape.move
        if shape.paired:
            ratios[i - 1] = 1 - shape.move * close[i] / close[i - 1]
        market = with_symbol(market, scaled(item, ratios, market.as_of if quotes else None))
    return market


def edge_flip_markets(task: Task, market: Market, symbols: Sequence[str],
                      argsets: Sequence[Mapping[str, Any]]) -> list[tuple[Market, EdgeFlip]]:
    """For a yes/no task, one market per window of the task in which one close of its ``symbols`` is
    moved (:class:`EdgeFlip`) so that the answer for one of its argument sets turns at that
    window's edge: the oldest session the window reads moved just far enough (the smallest move,
    bisected, up to :data:`EDGE_FLIP_MOVE`) to turn the answer, while the same window one session
    shorter (which does not read it) or longer (which reads it and, paired, the close before it that
    takes the move back) still gives the answer before the move. A tool whose window is one session
    off -- the average of the last 19 closes for 20, a window that ends a session early -- answers the
    other way there, where on recorded data the answer seldom sits that close to an edge. A window no
    such move turns has none."""
    own = Market([market.data[s] for s in symbols if s in market.data], market.as_of)
    found: dict[str, tuple[Market, EdgeFlip]] = {}
    for index, argset in enumerate(argsets):
        before = _primary(task, own, argset)
        if before is None:
            continue
        windows = window_args({**task.oracle.params, **task.intent.args, **argset})
        for key, window in windows.items():
            if key in found:
                continue
            for sign in (1.0, -1.0):
                widest = EdgeFlip(key, window, sign * EDGE_FLIP_MOVE, True, index)
                if not _turns(task, own, symbols, argset, before, widest):
                    continue  # the window's own average moves alike unpaired: no turn either
                shape = _edge_turn(task, own, symbols, argset, before, widest) or \
                    _edge_turn(task, own, symbols, argset, before, dataclasses.replace(widest, paired=False))
                if shape is not None:
                    found[key] = (_edge_moved(market, symbols, shape), shape)
                    break
    return list(found.values())


def _edge_answer(task: Task, own: Market, symbols: Sequence[str], argset: Mapping[str, Any],
                 shape: EdgeFlip) -> Any:
    """The primary reading's answer for ``argset`` on ``own`` moved by ``shape``."""
    return _primary(task, _edge_moved(own, symbols, shape, quotes=False), argset)


def _turns(task: Task, own: Market, symbols: Sequence[str], argset: Mapping[str, Any], before: Any,
           shape: EdgeFlip) -> bool:
    """Whether ``shape`` turns the answer for ``argset`` away from ``before``."""
    found = _edge_answer(task, own, symbols, argset, shape)
    return found is not None and found != before


def _edge_turn(task: Task, own: Market, symbols: Sequence[str], argset: Mapping[str, Any], before: Any,
               widest: EdgeFlip) -> EdgeFlip | None:
    """``widest`` with the smallest move (times :data:`_EDGE_MARGIN`) that turns the answer for
    ``argset`` away from ``before`` while the window one session shorter and longer keep ``before``;
    None when the widest move does not turn it, or turns those too."""
    def turned(move: float) -> bool:
        return _turns(task, own, symbols, argset, before, dataclasses.replace(widest, move=move))

    if not turned(widest.move):
        return None
    low, high = 0.0, widest.move
    for _ in range(_EDGE_BISECTIONS):
        middle = (low + high) / 2
        if turned(middle):
            high = middle
        else:
            low = middle
    move = high * _EDGE_MARGIN if abs(high * _EDGE_MARGIN) <= abs(widest.move) else widest.move
    shape = dataclasses.replace(widest, move=round(move, 6))
    if not turned(shape.move):
        return None
    for other in (widest.window - 1, widest.window + 1):
        if _edge_answer(task, own, symbols, {**argset, widest.key: other}, shape) != before:
            return None
    return shape
