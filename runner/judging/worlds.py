"""Hidden market worlds: other market data, generated at run time, in which the gate judges every
final tool again (the tool never sees which worlds, nor the seed that chose them).

A verdict earned on one data set can be luck: a constant that happens to equal the answer, a
window one session short whose missing session does not hold the maximum, a tool that reads the
previous session where the data happens not to move. So besides the run's own snapshot, each
benchmark task is judged in ``count`` further worlds, of three kinds, in this order (and again,
with new sub-seeds, when ``count`` is above 3):

* ``seed``: the synthetic generator (:mod:`finevo.market.synthetic`) with another seed -- other
  prices, other statements, other dividends' adjustments; shared by every task of the run.
* ``as_of``: the run's snapshot truncated at an earlier session (history, dividends, statements
  reported by then, quotes re-derived from the last bars), with spikes on the *first* session of
  each of the task's windows and just outside it: a window one session short or long moves.
* ``edge``: the run's snapshot with a spike on the *latest* session (and just outside each
  window): a tool that drops the last session (yfinance's exclusive ``end``) or reads the
  previous one moves.

Spikes are new highs or lows of Close (the whole bar scaled, so ``Low <= Open, Close <= High``
holds) on every symbol, at the windows of every task of the run. Each of the two spiked kinds
comes in a few variants (spikes up or down, big or small); each task is judged in the variant
the oracle says tells its "near misses" apart best: the previous session instead of the latest,
each window argument one less and one more, giving an answer no accepted convention gives.
Every world is written once in the snapshot format, so the tool reads it through the sandbox's
own replay shim, and the oracle reads the very same files.

Worlds live in one temporary directory per run (``finevo-worlds-<pid>-*``), removed by
:meth:`Worlds.close`; the directory of a run killed before it could clean up is removed by the
next run that builds worlds.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd

from finevo.errors import InputError
from finevo.market import synthetic
from finevo.market.provider import MarketProvider
from finevo.market.snapshot import (
    EXCHANGE_TZ,
    Snapshot,
    SymbolData,
    SymbolNotRecorded,
    auto_adjust,
    load_snapshot,
    symbol_files,
    write_snapshot_files,
)
from finevo.tasks import Task
from runner.judging.compare import compare
from runner.judging.oracle import compute, expected_values

#: The default number of hidden worlds per task (``--worlds`` / ``FINEVO_WORLDS``).
DEFAULT_WORLDS = 3
#: A statement column counts as reported this many days after its period ends.
REPORTING_LAG_DAYS = 45
#: The earlier as-of date lies this many sessions before the run's (a range, picked by the seed).
AS_OF_BACK_SESSIONS = (21, 180)
#: Sessions an earlier as-of date keeps at the least: two years, what a tool may fairly fetch.
MIN_SESSIONS_KEPT = 504
GENERATOR = "runner.judging.worlds"
GENERATOR_VERSION = "1"
LABEL = "SYNTHETIC hidden world of the gate - not real prices"
_YEAR_LIKE = 1900


class WorldKind(StrEnum):
    SEED = "seed"
    AS_OF = "as_of"
    EDGE = "edge"
    #: A yes/no task's extra world, built only when the others all give its own arguments the same
    #: answer: the last bars reshaped until the answer flips (:func:`flip_market`).
    FLIP = "flip"


KIND_ORDER: tuple[WorldKind, ...] = (WorldKind.SEED, WorldKind.AS_OF, WorldKind.EDGE)


# --------------------------------------------------------------------------- in-memory market
class Market:
    """A :class:`~finevo.market.provider.MarketProvider` over symbols held in memory."""

    def __init__(self, data: Iterable[SymbolData], as_of: date) -> None:
        self.data: dict[str, SymbolData] = {item.symbol: item for item in data}
        self._as_of = as_of
        self._adjusted: dict[str, pd.DataFrame] = {}

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
        if symbol not in self._adjusted:
            self._adjusted[symbol] = auto_adjust(self._item(symbol).history)
        return self._adjusted[symbol].copy()

    def history_unadjusted(self, symbol: str) -> pd.DataFrame:
        return self._item(symbol).history.copy()

    def dividends(self, symbol: str) -> pd.Series:
        raw = self._item(symbol).history
        series = raw.loc[raw["Dividends"] != 0, "Dividends"].copy()
        series.name = "Dividends"
        return series

    def income_stmt(self, symbol: str, freq: Literal["yearly", "quarterly"] = "yearly") -> pd.DataFrame:
        item = self._item(symbol)
        frame = item.income_yearly if freq == "yearly" else item.income_quarterly
        return pd.DataFrame() if frame is None else frame.copy()

    def info(self, symbol: str) -> dict[str, Any]:
        return dict(self._item(symbol).info)

    def fast_info(self, symbol: str) -> dict[str, Any]:
        return dict(self._item(symbol).fast_info)

    def sessions(self) -> list[date]:
        """Every session date any symbol has, oldest first."""
        days: set[date] = set()
        for item in self.data.values():
            days.update(pd.DatetimeIndex(item.history.index).date)
        return sorted(days)


def read_market(snapshot: Snapshot) -> Market:
    """Everything a snapshot records, in memory."""
    data = []
    for symbol in snapshot.symbols():
        yearly = snapshot.income_stmt(symbol, "yearly")
        quarterly = snapshot.income_stmt(symbol, "quarterly")
        data.append(SymbolData(symbol, snapshot.history_unadjusted(symbol),
                               None if yearly.empty else yearly, None if quarterly.empty else quarterly,
                               snapshot.info(symbol), snapshot.fast_info(symbol)))
    return Market(data, snapshot.as_of)


# --------------------------------------------------------------------------- transformations
def _epoch_close(day: date) -> int:
    return int(pd.Timestamp(day.isoformat() + " 16:00", tz=EXCHANGE_TZ).timestamp())


def requote(item: SymbolData, as_of: date) -> SymbolData:
    """``info`` / ``fast_info`` price fields re-derived from the last bars (only fields already there)."""
    raw = item.history
    if len(raw) < 2:
        return item
    close = raw["Close"].to_numpy(dtype=float)
    high, low = raw["High"].to_numpy(dtype=float), raw["Low"].to_numpy(dtype=float)
    start = int(pd.DatetimeIndex(raw.index).searchsorted(raw.index[-1] - pd.DateOffset(years=1), side="right"))
    price, previous = float(close[-1]), float(close[-2])
    opened, volume = float(raw["Open"].iloc[-1]), int(raw["Volume"].iloc[-1])
    derived: dict[str, Any] = {
        "lastPrice": price, "regularMarketPrice": price, "currentPrice": price,
        "previousClose": previous, "regularMarketPreviousClose": previous,
        "open": opened, "regularMarketOpen": opened,
        "dayHigh": float(high[-1]), "regularMarketDayHigh": float(high[-1]),
        "dayLow": float(low[-1]), "regularMarketDayLow": float(low[-1]),
        "volume": volume, "regularMarketVolume": volume, "lastVolume": volume,
        "regularMarketChange": round(price - previous, 4),
        "regularMarketChangePercent": round((price / previous - 1) * 100, 4) if previous else None,
        "regularMarketTime": _epoch_close(as_of),
        "fiftyTwoWeekHigh": float(high[start:].max()), "yearHigh": float(high[start:].max()),
        "fiftyTwoWeekLow": float(low[start:].min()), "yearLow": float(low[start:].min()),
        "fiftyDayAverage": round(float(close[-50:].mean()), 4),
        "twoHundredDayAverage": round(float(close[-200:].mean()), 4),
    }

    def update(fields: dict[str, Any], shares_key: str) -> dict[str, Any]:
        out = dict(fields)
        for key, value in derived.items():
            if key in out:
                out[key] = value
        shares = out.get(shares_key)
        if out.get("marketCap") is not None and isinstance(shares, (int, float)) and shares:
            out["marketCap"] = type(out["marketCap"])(round(price * shares))
        return out

    return SymbolData(item.symbol, raw, item.income_yearly, item.income_quarterly,
                      update(item.info, "sharesOutstanding"), update(item.fast_info, "shares"))


def _reported(frame: pd.DataFrame | None, as_of: date) -> pd.DataFrame | None:
    if frame is None:
        return None
    ends = pd.DatetimeIndex(frame.columns)
    if ends.tz is not None:
        ends = ends.tz_localize(None)
    keep = (ends.normalize() + pd.Timedelta(days=REPORTING_LAG_DAYS)) <= pd.Timestamp(as_of)
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


def truncate(market: Market, as_of: date) -> Market:
    """The market as it stood at the close of ``as_of``: later bars and unreported statements gone.

    ``Adj Close`` is Yahoo's dividend adjustment, which only knows the dividends paid by then: it is
    recomputed from the kept bars (:func:`readjust`).
    """
    data = []
    for item in market.data.values():
        raw = item.history
        dates = pd.DatetimeIndex(raw.index).date
        cut = int((dates <= as_of).sum())
        if cut == 0:
            continue
        kept = readjust(raw.iloc[:cut])
        data.append(requote(SymbolData(item.symbol, kept, _reported(item.income_yearly, as_of),
                                       _reported(item.income_quarterly, as_of), item.info, item.fast_info),
                            as_of))
    return Market(data, as_of)


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
        raw = item.history.copy()
        close = raw["Close"].to_numpy(dtype=float)
        n = len(close)
        ratios = np.ones(n)
        for spike in spikes:
            i = n - spike.back
            if i < 1:
                continue
            around = close[max(0, i - _SPIKE_REACH):n]
            target = around.max() * (1 + spike.strength) if spike.up else around.min() * (1 - spike.strength)
            ratios[i] = round(target, 2) / close[i]
        for column in ("Open", "High", "Low", "Close"):
            raw[column] = (raw[column].to_numpy(dtype=float) * ratios).round(2)
        data.append(requote(SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly,
                                       item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of)


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


def _values(task: Task, market: Market, overrides: Mapping[str, Any]) -> dict[str, Any] | None:
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


def near_misses(task: Task, market: Market, stale: Market | None,
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
        stale = truncate(market, sessions[-2]) if len(sessions) > 1 else None
        score, tried = near_misses(task, market, stale, argsets)
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


#: How many variants of each kind a task of this output type chooses among (the small moves of
#: the latest session only matter to yes/no answers).
def _choices(task: Task, kind: WorldKind) -> int:
    return 4 if task.output.type == "boolean" else 2


def first_spikes(windows: Sequence[int]) -> list[tuple[str, list[Spike]]]:
    """The ``as_of`` variants: a spike on the first session of every window and just outside it,
    the further back the bigger, so for any window the first session holds the window's extreme
    and the session before it a bigger one: a window one session short or long moves."""
    backs = sorted({b for n in windows for b in (n, n + 1)})
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
        raw = raw.copy()
        n = len(raw)
        close = raw["Close"].to_numpy(dtype=float)
        ratios = np.ones(n)
        ratios[n - span:] = shape.closes(float(close[n - span - 1])) / close[n - span:]
        for column in ("Open", "High", "Low", "Close"):
            raw[column] = (raw[column].to_numpy(dtype=float) * ratios).round(2)
        if shape.volume and "Volume" in raw.columns:
            ramp = np.ones(n)
            ramp[n - shape.window:] = 1.0 + shape.volume * np.arange(1, shape.window + 1) / shape.window
            raw["Volume"] = np.maximum(1, np.round(raw["Volume"].to_numpy(dtype=float) * ramp)).astype("int64")
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


# --------------------------------------------------------------------------- worlds on disk
@dataclass
class World:
    """One hidden world as the judge uses it: where its snapshot is and what it is."""

    name: str
    kind: WorldKind
    path: Path
    provider: Snapshot
    #: What was changed, in words (spikes placed; empty for a generated world).
    perturbation: str = ""
    #: Which repetition of its kind (0 for the first three worlds, 1 for the next three, ...).
    round: int = 0

    @property
    def as_of(self) -> date:
        return self.provider.as_of


@dataclass
class _Base:
    """A market and the serialised files of each of its symbols (written once, reused by worlds)."""

    market: Market
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)

    def symbol_blobs(self, symbol: str) -> dict[str, bytes]:
        if symbol not in self.files:
            self.files[symbol] = symbol_files(self.market.data[symbol])
        return self.files[symbol]


_ROOT_PREFIX = "finevo-worlds-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def default_root_parent() -> str:
    """Where world snapshots are written: ``FINEVO_WORLDS_DIR``, else ``/var/tmp``, else the
    temporary directory. Not ``/tmp`` by preference: the warm sandbox worker may live in its own
    mount namespace with a private ``/tmp`` (mounted when it starts), and it must read the worlds
    this run writes after that; ``/var/tmp`` is the host's in every namespace."""
    configured = os.environ.get("FINEVO_WORLDS_DIR")
    if configured:
        return configured
    if os.path.isdir("/var/tmp") and os.access("/var/tmp", os.W_OK | os.X_OK):
        return "/var/tmp"
    return tempfile.gettempdir()


def sweep_orphans(parent: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the world directories of runs whose process is gone (killed before it could clean up:
    ``finevo-worlds-<pid>-*``); returns what was removed."""
    removed = []
    for path in Path(parent or default_root_parent()).glob(f"{_ROOT_PREFIX}*-*"):
        pid = path.name[len(_ROOT_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class Worlds:
    """The hidden worlds of one run, built lazily from ``seed`` and cached in a temporary directory.

    ``tasks`` are the tasks the run judges: the spikes of the ``as_of`` and ``edge`` worlds sit at
    the windows of all of them, so a handful of worlds serves the whole run; each task is judged
    in the variant of each kind that tells its near misses apart best (:func:`choose`).
    """

    def __init__(self, snapshot: Snapshot, count: int, seed: int, tasks: Sequence[Task] = (), *,
                 root: str | os.PathLike[str] | None = None) -> None:
        if count < 0:
            raise ValueError(f"worlds: count must be >= 0, got {count}")
        self.snapshot = snapshot
        self.count = count
        self.seed = seed
        self.windows = sorted({n for t in tasks for n in window_args({**t.oracle.params, **t.intent.args}).values()})
        self._root_parent = root if root is not None else default_root_parent()
        self._root: Path | None = None
        self._base: _Base | None = None
        self._markets: dict[tuple[WorldKind, int], list[tuple[str, str, _Base]]] = {}
        self._written: dict[str, World] = {}
        self._per_task: dict[str, list[World]] = {}
        #: Seconds spent on worlds (reported by the benchmark scripts): in all, and generating (markets
        #: in memory), writing (snapshot files) and choosing (each task's variants).
        self.build_s = 0.0
        self.timings: dict[str, float] = {"generate": 0.0, "write": 0.0, "choose": 0.0}

    # -- lifecycle ---------------------------------------------------------------------------
    @property
    def root(self) -> Path:
        if self._root is None:
            sweep_orphans(self._root_parent)
            self._root = Path(tempfile.mkdtemp(prefix=f"{_ROOT_PREFIX}{os.getpid()}-", dir=self._root_parent))
        return self._root

    def close(self) -> None:
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None
        self._written.clear()
        self._per_task.clear()

    def __enter__(self) -> Worlds:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the plan ----------------------------------------------------------------------------
    def kinds(self) -> list[tuple[WorldKind, int]]:
        """``(kind, round)`` of each world, in judging order."""
        return [(KIND_ORDER[i % len(KIND_ORDER)], i // len(KIND_ORDER)) for i in range(self.count)]

    def _sub_seed(self, kind: WorldKind, round_: int) -> int:
        mixed = np.random.default_rng([self.seed, KIND_ORDER.index(kind), round_])
        return int(mixed.integers(1, 2**31 - 1))

    def _base_market(self) -> _Base:
        if self._base is None:
            self._base = _Base(read_market(self.snapshot))
        return self._base

    def as_of_date(self, round_: int) -> date:
        """The ``as_of`` world's date: ``AS_OF_BACK_SESSIONS`` before the snapshot's, keeping at least
        ``MIN_SESSIONS_KEPT`` sessions (a tool may fairly want two years of history)."""
        sessions = self._base_market().market.sessions()
        low, high = AS_OF_BACK_SESSIONS
        high = max(1, min(high, len(sessions) - 1 - MIN_SESSIONS_KEPT))
        low = min(low, high)
        back = int(np.random.default_rng(self._sub_seed(WorldKind.AS_OF, round_)).integers(low, high + 1))
        return sessions[-1 - back]

    def variants(self, kind: WorldKind, round_: int) -> list[tuple[str, str, _Base]]:
        """``(name, perturbation in words, market)`` of each variant of a world, built once."""
        key = (kind, round_)
        if key not in self._markets:
            started = time.perf_counter()
            if kind is WorldKind.SEED:
                seed = self._sub_seed(kind, round_)
                self._markets[key] = [(f"seed-{seed}", "", _Base(Market(synthetic.generate(seed), synthetic.AS_OF)))]
            else:
                base = self._base_market()
                if kind is WorldKind.AS_OF:
                    base = _Base(truncate(base.market, self.as_of_date(round_)))
                plans = first_spikes(self.windows) if kind is WorldKind.AS_OF else edge_spikes(self.windows)
                everything = list(base.market.data)
                out = []
                for label, spikes in plans:
                    market = perturb(base.market, spikes, everything)
                    words = "; ".join(spike.label() for spike in spikes)
                    name = f"{kind.value}-{market.as_of.isoformat()}-r{round_}-{label}"
                    out.append((name, words, _Base(market)))
                self._markets[key] = out
            self.timings["generate"] += time.perf_counter() - started
        return self._markets[key]

    def _flip_world(self, task: Task, worlds: Sequence[World], symbols: Sequence[str]) -> World | None:
        """For a yes/no task whose worlds all give its own arguments one answer (a constant served for
        exactly those arguments would pass), a world of the run's snapshot whose last bars are
        reshaped so that the answer is the other one; None when the answers already differ or no
        shape flips it."""
        answers = _answers(task, worlds)
        if len(answers) != 1:
            return None
        started = time.perf_counter()
        base = self._base_market().market
        found = flip_market(task, base, [s for s in symbols if s in base.data], next(iter(answers)))
        self.timings["generate"] += time.perf_counter() - started
        if found is None:
            return None
        market, shape = found
        name = f"{WorldKind.FLIP.value}-{market.as_of.isoformat()}-{task.id}"
        return self._write(name, WorldKind.FLIP, 0, _Base(market), shape.label())

    # -- building ----------------------------------------------------------------------------
    def _write(self, name: str, kind: WorldKind, round_: int, base: _Base, perturbation: str) -> World:
        cached = self._written.get(name)
        if cached is not None:
            return cached
        started = time.perf_counter()
        blobs: dict[str, bytes] = {}
        for symbol in base.market.data:
            blobs.update(base.symbol_blobs(symbol))
        path = self.root / name
        seed = self._sub_seed(kind, round_) if kind is WorldKind.SEED else None
        write_snapshot_files(path, blobs, symbols=list(base.market.data), as_of=base.market.as_of, synthetic=True,
                             label=LABEL, generator=GENERATOR, generator_version=GENERATOR_VERSION, seed=seed,
                             extra={"world": kind.value, "perturbation": perturbation}, durable=False)
        world = World(name=name, kind=kind, path=path, provider=load_snapshot(path), perturbation=perturbation,
                      round=round_)
        self._written[name] = world
        self.timings["write"] += time.perf_counter() - started
        return world

    def for_task(self, task: Task, argsets: Sequence[Mapping[str, Any]]) -> list[World]:
        """The task's worlds, in judging order; ``argsets`` are its probes' oracle overrides
        (after ``{}`` for the task's own arguments), used to pick each kind's variant."""
        if task.id in self._per_task:
            return self._per_task[task.id]
        started = time.perf_counter()
        worlds: list[World] = []
        argsets = [{}, *[dict(a) for a in argsets]]
        symbols = task_symbols(task, argsets, self._base_market().market.symbols())
        for kind, round_ in self.kinds():
            variants = self.variants(kind, round_)[:_choices(task, kind)]
            chosen = time.perf_counter()
            index = choose(task, [b.market for _, _, b in variants], symbols, argsets)
            self.timings["choose"] += time.perf_counter() - chosen
            name, words, base = variants[index]
            worlds.append(self._write(name, kind, round_, base, words))
        if task.output.type == "boolean" and worlds:
            flip = self._flip_world(task, worlds, symbols)
            if flip is not None:
                worlds.append(flip)
        self._per_task[task.id] = worlds
        self.build_s += time.perf_counter() - started
        return worlds


def _answers(task: Task, worlds: Sequence[World]) -> set[Any]:
    """The oracle's answers (primary reading) for the task's own arguments in ``worlds``."""
    return {_primary(task, world.provider, {}) for world in worlds} - {None}


def display_name(world: World) -> str:
    """``seed-123``, ``as_of-2024-06-28``, ``edge-2024-12-31``: how reasons name a world."""
    if world.kind is WorldKind.SEED:
        return world.name
    return f"{world.kind.value}-{world.as_of.isoformat()}" + (f"#{world.round + 1}" if world.round else "")
