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

Some tasks get one more world of a kind of its own (``flip``, ``leap``, ``long``, ``closure``,
``listing``: see :class:`WorldKind`); the ``closure`` world stands right after the longest market
closure the long world's calendar holds, for every task the oracle answers there; the ``listing``
world makes one stock of a task over several symbols a listing of weeks ago.

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

import calendar
import functools
import itertools
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from finevo.errors import InputError
from finevo.market import synthetic
from finevo.market.calendar import COVERED_YEARS, is_trading_day
from finevo.market.provider import MarketProvider
from finevo.market.snapshot import (
    SESSION_OPEN,
    ParsedFiles,
    Snapshot,
    SnapshotOrigin,
    SymbolData,
    load_snapshot,
    symbol_files,
    write_snapshot_files,
)
from runner.inputs.oracle_params import SHARED_READINGS
from runner.inputs.tasks import Task
from runner.judging.compare import compare
from runner.judging.oracle import caching, judged_values
from runner.judging.world_dirs import _ROOT_PREFIX, default_root_parent, sweep_orphans
from runner.judging.world_dividends import STOPPED_YEARS, stopped_payers
from runner.judging.world_market import (
    DEEP_START,
    LEAP_YEARS,
    LISTING_SESSIONS,
    LONG_YEARS,
    PINNED_MOVES,
    RALLY_SESSIONS,
    REPORTING_LAG_DAYS,
    REPORTING_LAGS,
    SESSION_MINUTES,
    Market,
    Spike,
    _events,
    before_the_open,
    close_after,
    deepened,
    during_the_session,
    edge_dividends,
    equities,
    extra_dividend,
    gapped,
    index_without_volume,
    lengthen,
    lengthened,
    own_moves,
    penny_stock,
    perturb,
    pinned_listing,
    read_market,
    readjust,
    recent_halts,
    recent_listing,
    record_tails,
    recorded_quotes,
    recorded_shapes,
    relevel,
    requote,
    restate,
    rising_tail,
    truncate,
    unfiled_quarter,
    weekly_fiscal_calendar,
)
from runner.judging.world_shapes import (
    HALT_WINDOW_ORACLES,
    LEVEL_SPREAD_ORACLES,
    QUIET_ORACLES,
    Reshape,
    _matches_any,
    _primary,
    choose,
    dividend_flip_market,
    edge_flip_markets,
    edge_spikes,
    first_spikes,
    flat_market,
    flip_market,
    halted_market,
    halted_window_market,
    near_misses,
    quiet_market,
    reshape,
    round_trip_market,
    task_symbols,
    window_args,
    zigzag_market,
)
from runner.judging.world_statements import (
    JANUARY_YEAR_SYMBOL,
    moved_fiscal_years,
    off_cycle_quarters,
    revenue_gaps,
    sibling_rows,
    statement_shapes,
)

__all__ = ["AS_OF_BACK_SESSIONS", "DEFAULT_WORLDS", "MIN_SESSIONS_KEPT", "REPORTING_LAG_DAYS", "Market", "Reshape",
           "Spike", "World", "WorldKind", "Worlds", "choose", "default_root_parent", "display_name", "edge_dividends",
           "edge_spikes", "extra_dividend", "first_spikes", "flip_market", "near_misses", "perturb", "read_market",
           "readjust", "requote", "reshape", "restate", "sweep_orphans", "task_symbols", "truncate", "unfiled_quarter",
           "window_args"]

#: The default number of hidden worlds per task (``--worlds`` / ``FINEVO_WORLDS``).
DEFAULT_WORLDS = 3
#: The earlier as-of date lies this many sessions before the run's (a range, picked by the seed).
AS_OF_BACK_SESSIONS = (21, 180)
#: Sessions an earlier as-of date keeps at the least: two years, what a tool may fairly fetch.
MIN_SESSIONS_KEPT = 504
GENERATOR = "runner.judging.worlds"
GENERATOR_VERSION = "1"
LABEL = "SYNTHETIC hidden world of the gate - not real prices"


#: Draws of an as-of day before one is kept that has no event on a window's edge.
_AS_OF_DRAWS = 50
#: Years back from an as-of day where a window of whole years starts (``years`` of 1 to 5).
_EDGE_YEARS = range(1, 6)
#: The whole-year edges the ``leap`` world crowds with ex-dates (:func:`edge_dividends`).
_LEAP_EDGES = tuple(range(1, LEAP_YEARS + 2))


def _newest_quarter(market: Market, symbol: str) -> date | None:
    """The end of the newest quarter ``symbol``'s statement reports (None without one)."""
    frame = market.income_stmt(symbol, "quarterly")
    frame = frame.loc[:, frame.notna().any(axis=0)] if not frame.empty else frame
    return max(pd.Timestamp(c).date() for c in frame.columns) if not frame.empty else None


def _calendar_backs(market: Market, windows: Sequence[int]) -> list[int]:
    """For each window read in calendar days (``as_of - n days``), how many sessions back from the
    latest the last session before its first day lies (on a closed as-of day, the day a window
    counted from the last bar instead of from today still holds)."""
    sessions = market.sessions()
    backs = []
    for n in windows:
        before = int(np.searchsorted(np.array(sessions, dtype="datetime64[D]"),
                                     np.datetime64(market.as_of - timedelta(days=n)), side="left"))
        if 1 <= before < len(sessions):
            backs.append(len(sessions) - before + 1)
    return backs


def calendar_windows(tasks: Sequence[Task]) -> list[int]:
    """The ``days`` of every task whose oracle accepts a window read in calendar days (the windows a
    closed as-of day can tell from a window counted from the last bar)."""
    return sorted({int(n) for t in tasks for k, n in {**t.oracle.params, **t.intent.args}.items()
                   if k == "days" and isinstance(n, int) and not isinstance(n, bool)
                   and "window" in SHARED_READINGS.get(t.oracle.name, {})})


def _anchor_moves(day: date, sessions: Sequence[date] | np.ndarray, windows: Sequence[int]) -> int:
    """How many of the calendar ``windows`` hold a session strictly between their first day counted
    back from the last session before ``day`` and their first day counted back from ``day`` itself:
    on such an as-of day a window anchored at the last bar instead of at today holds one session
    more, on either accepted reading of its first day (on or after, strictly after)."""
    marks = sessions if isinstance(sessions, np.ndarray) else np.array(sessions, dtype="datetime64[D]")
    at = int(np.searchsorted(marks, np.datetime64(day), side="left"))
    if at == 0:
        return 0
    last = marks[at - 1].astype(date)
    count = 0
    for n in windows:
        low, high = np.datetime64(last - timedelta(days=n)), np.datetime64(day - timedelta(days=n))
        inside = int(np.searchsorted(marks, high, side="left")) - int(np.searchsorted(marks, low, side="right"))
        count += inside > 0
    return count


def _fixed_count_gaps(day: date) -> int | None:
    """For an as-of ``day``: None unless a session lies strictly between the first day of a window of
    :data:`LEAP_YEARS` calendar years and that of :data:`LEAP_YEARS` * 365 days; else how many of
    the windows of 1 to :data:`LEAP_YEARS` years hold a session strictly between their calendar
    start and their start at 52 weeks a year (a fixed count of days that the ``leap`` world tells)."""
    def gap(years: int, per_year: int) -> bool:
        edge = _years_before(day, years)
        fixed = day - timedelta(days=per_year * years)
        try:
            return any(is_trading_day(edge + timedelta(days=k)) for k in range(1, (fixed - edge).days))
        except ValueError:  # a day the calendar does not know
            return False

    if not gap(LEAP_YEARS, 365):
        return None
    return sum(gap(n, 364) for n in range(1, LEAP_YEARS + 1))


def _years_before(day: date, years: int) -> date:
    """``day`` ``years`` calendar years earlier (Feb 29 to Feb 28), as ``pd.DateOffset(years=...)``."""
    try:
        return day.replace(year=day.year - years)
    except ValueError:  # Feb 29 in a year without one
        return day.replace(year=day.year - years, day=28)


#: A holiday cluster: this many weekday closures within :data:`CLUSTER_DAYS` days up to a day.
CLUSTER_HOLIDAYS = 2
CLUSTER_DAYS = 10


def _holidays_before(day: date, open_days: set[date]) -> int:
    """Weekday closures (holidays) in the :data:`CLUSTER_DAYS` days up to and including ``day``."""
    return sum(1 for k in range(CLUSTER_DAYS) if (d := day - timedelta(days=k)).weekday() < 5 and d not in open_days)


def _on_an_edge(day: date, events: set[date]) -> bool:
    """Whether an event (an ex-dividend date) lies exactly a whole number of years before ``day``:
    there the accepted readings of "the last N years" (on or after, strictly after) disagree, and
    a tool matching either passes by the coincidence; such an as-of day is drawn again."""
    return any(_years_before(day, n) in events for n in _EDGE_YEARS)


class WorldKind(StrEnum):
    SEED = "seed"
    AS_OF = "as_of"
    EDGE = "edge"
    #: A yes/no task's extra world, built only when the others all give its own arguments the same
    #: answer: the last bars reshaped until the answer flips (:func:`flip_market`).
    FLIP = "flip"
    #: A task with a lookback in years gets one more: the run's snapshot lengthened back to
    #: :data:`LEAP_YEARS` + 1 years before an as-of day on which such a window spans two Feb 29ths
    #: (:meth:`Worlds.leap_plan`).
    LEAP = "leap"
    #: A task with a probe asked at a scale the run's snapshot is too short for (its ``min_sessions``)
    #: gets one more: the run's snapshot, same as-of day, lengthened back :data:`LONG_YEARS` years
    #: (:func:`lengthened`). There a tool that reads a fixed period (a year, two) where the task's
    #: reading uses the whole history answers the long probe from unconverged EMAs, and fails.
    LONG = "long"
    #: Every task whose oracle answers there gets one more: the ``long`` world cut at the last closed
    #: day of a closure of its calendar (Hurricane Sandy's 2012-10-30, the national day of mourning of
    #: 2007-01-02 after New Year's Day), the closure lengthened back to 2001-09-11's: the as-of day
    #: :data:`CLOSURE_DAYS` or more calendar days after the last session. No regular weekend or
    #: holiday leaves a gap of more than three days, Sandy one of four: a tool that looks back a few
    #: calendar days for "the latest close" finds nothing there (:meth:`Worlds.closure_day`).
    CLOSURE = "closure"
    #: A task over several symbols (a basket, a pair) gets one more: the run's snapshot (with the shapes
    #: recorded data have) in which one of its stocks is a recent listing, traded a few sessions fewer
    #: than the task's window (:func:`~runner.judging.world_market.recent_listing`): the data of that
    #: argument cannot support the window while the others' can, so no accepted reading answers and a
    #: right tool raises; one that leaves the short symbol out, or reads each symbol's own last bars,
    #: answers and fails (:meth:`Worlds._listing_world`). One world per such task, its own. A task that
    #: reads an RSI gets one too, its own stocks listed in a rally (:meth:`Worlds._rally_world`), and a
    #: task that reads an EMA one with its own stocks listed months ago at a pinned price
    #: (:meth:`Worlds._pinned_world`).
    LISTING = "listing"
    #: Every task whose oracle reads the bars gets one more: the run's snapshot as recorded before the
    #: open on the latest ex-dividend date of its own stocks, or of its probes' where its own pay none
    #: (:meth:`Worlds.preopen_day`, :func:`~runner.judging.world_market.before_the_open`): the clock on a
    #: trading day at 08:00, the last bar the session before, and the day's dividend a pending event
    #: row, which real yfinance ends ``history()`` with (NaN prices, Volume 0). A tool that reads the
    #: last row's close, or counts the last N rows as sessions, answers NaN or one session short there,
    #: as it does on real data that morning (:meth:`Worlds._preopen_world`).
    PREOPEN = "preopen"
    #: A task asking for "the latest" quote (:data:`MIDSESSION_ORACLES`) gets one more: the run's snapshot
    #: as recorded while the last session was open, at a minute drawn from the seed
    #: (:func:`~runner.judging.world_market.during_the_session`): each bar of that day the session so
    #: far, the quotes the last trade's, the clock that minute. Every other world's clock reads the
    #: close or before the open, where the last trade is the close: a tool that reads the book's
    #: midpoint, the session before's close or any figure but the last trade while the market is open
    #: answers right there and wrong on a reuse during trading hours (:meth:`Worlds._midsession_world`).
    MIDSESSION = "midsession"
    #: A task asking for the latest price (:data:`GAP_ORACLES`) gets one more: the run's snapshot with
    #: every stock's last session a gap of 18 to 30 % from the close before, up or down (drawn from the
    #: seed; :func:`~runner.judging.world_market.gapped`). Elsewhere the last session moves as sessions
    #: mostly do: a tool that refuses a latest price far from the close before as a bad tick, or
    #: answers the close before instead, is right there and wrong on an earnings day
    #: (:meth:`Worlds._gap_world`).
    GAP = "gap"


#: Oracles that get no ``preopen`` world: the dividend history reads the dividends themselves, and on an
#: ex-date before the open its accepted readings part on whether that day's dividend is already in "the
#: last N years"; the statements' figures read no bar, so the world has nothing to tell there.
NO_PREOPEN_ORACLES = frozenset({"dividend_history", "net_income", "total_revenue"})
#: Oracles of an extreme over a window (the highest close, the max drawdown) whose ``preopen`` world puts
#: the window's peak on its oldest session (:meth:`Worlds._preopen_peak`): a window that counts the pending
#: row among its sessions holds one session fewer, and only there does that change the extreme.
PREOPEN_PEAK_ORACLES = frozenset({"max_close", "max_drawdown"})
#: How far above the highest close of the sessions around it the peak lies (fractions), tried in order.
PREOPEN_PEAKS = (0.02, 0.05)


#: Oracles of "the latest" price whose task gets a ``midsession`` world: there every accepted reading is
#: the last trade (``fast_info``'s last price, the last bar's close: the session so far). Not the latest
#: *close* (``latest_close``): during a session its readings part (the session before's close, or the
#: last trade as the running bar's close), so the world would tell nothing the judge can hold a tool to.
MIDSESSION_ORACLES = frozenset({"latest_quote"})
#: Oracles of the latest price whose task gets a ``gap`` world.
GAP_ORACLES = frozenset({"latest_close", "latest_quote"})


KIND_ORDER: tuple[WorldKind, ...] = (WorldKind.SEED, WorldKind.AS_OF, WorldKind.EDGE)
#: A closure of the ``long`` world's calendar is one whose last closed day lies this many calendar
#: days or more after the session before it (Sandy's four: Friday 2012-10-26 to Tuesday 10-30).
CLOSURE_FOUND_DAYS = 4
#: The ``closure`` world's as-of day lies this many calendar days or more after the last session: the
#: exchange closed after 2001-09-10 until 09-17, so on Sunday 09-16 the last session was six days back.
#: A found closure is lengthened to this by closing the sessions just before it
#: (:func:`~runner.judging.world_market.close_after`): "the last five calendar days" holds no bar.
CLOSURE_DAYS = 6


#: The oracles that read an RSI: a task of theirs gets the rally listing world (:meth:`Worlds._rally_world`).
RALLY_ORACLES = frozenset({"rsi", "ma_cross_rsi_signal", "post_signal_return"})
#: The oracles among them that read the RSI of every session, not only the latest: their rally world's
#: rally turns :data:`RALLY_TURN` sessions before the as-of day (the stock's own moves follow it).
RALLY_TURN_ORACLES = frozenset({"post_signal_return"})
#: Sessions of the stock's own moves after the rally, for :data:`RALLY_TURN_ORACLES` (three months).
RALLY_TURN = 60

#: The oracles of EMAs seeded on their first values (MACD): a task of theirs gets the pinned listing
#: world (:meth:`Worlds._pinned_world`).
PINNED_ORACLES = frozenset({"macd"})
#: The pinned listing world's pinned sessions are the most any of the task's argument sets reads with
#: all its windows end to end (a MACD's fast, slow and signal spans), up to this many; an argument set
#: whose windows ask more is judged there only where the oracle answers (for a MACD: its slow span and
#: signal within the listing's sessions) and may be refused.
PINNED_MOST = 120


#: How many variants of each kind a task of this output type chooses among (the small moves of
#: the latest session only matter to yes/no answers).
def _choices(task: Task, kind: WorldKind) -> int:
    return 4 if task.output.type == "boolean" else 2


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
    #: The argument sets (0: the task's own, ``i``: its probe ``i``) the oracle answers in the run's
    #: snapshot and no accepted reading answers here because the world took their data away (a
    #: ``listing`` world's recent listing): a right tool raises there, so they are judged as must-raise
    #: instead of left unjudged (:func:`runner.judging.grade.world_answers`).
    must_raise: frozenset[int] = frozenset()
    #: Why a clear error is as right as the value here (None: only where the oracle says so): a
    #: ``listing`` world's rally, whose months of history a tool may find too short for a recursive
    #: indicator's warm-up at a long window while every reading answers.
    may_raise: str | None = None
    #: The argument sets ``may_raise`` is for (None: every one).
    may_raise_for: frozenset[int] | None = None

    @property
    def as_of(self) -> date:
        return self.provider.as_of

    @functools.cached_property
    def oracle_view(self) -> MarketProvider:
        """The world as the oracle reads it, for the whole run: each symbol's bars read once and each
        value computed once, whichever task's argument sets ask (:func:`~runner.judging.oracle.caching`)."""
        return caching(self.provider)


@dataclass
class _Base:
    """A market and the serialised files of each of its symbols (written once, reused by worlds)."""

    market: Market
    files: dict[str, dict[str, bytes]] = field(default_factory=dict)

    def symbol_blobs(self, symbol: str) -> dict[str, bytes]:
        if symbol not in self.files:
            self.files[symbol] = symbol_files(recorded_quotes(self.market.data[symbol]))
        return self.files[symbol]


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
        self.calendar_windows = calendar_windows(tasks)
        self._root_parent = root if root is not None else default_root_parent()
        self._root: Path | None = None
        self._base: _Base | None = None
        self._shaped: Market | None = None
        self._markets: dict[tuple[WorldKind, int], list[tuple[str, str, _Base]]] = {}
        self._written: dict[str, World] = {}
        #: Each symbol's serialised files by the identity of its data (:meth:`_symbol_blobs`), the data
        #: held too, so that an id is never reused while its entry stands.
        self._blobs: dict[int, tuple[SymbolData, dict[str, bytes]]] = {}
        self._per_task: dict[str, list[World]] = {}
        #: Held while a task's worlds are built: the gate builds a task's worlds ahead (its judging
        #: lane asks for them later) and the caches above are not for two builders at once.
        self._building = threading.Lock()
        #: The worlds' files as the oracle reads them, each parsed once: most worlds hold the files
        #: of the symbols they do not reshape as other worlds do.
        self._parsed = ParsedFiles()
        self._leap: dict[str, tuple[str, str, _Base] | None] = {}
        #: The run's snapshot lengthened back for the ``leap`` world (built once, :meth:`_longer_market`).
        self._longer: Market | None = None
        #: The stopped dividend payers of :meth:`_longer_market`, in words (for the ``leap`` world's).
        self._longer_stopped = ""
        #: The ``long`` world's market (built once, :meth:`long_market`).
        self._long: _Base | None = None
        #: The ``long`` world's market before its deep history (:meth:`twenty_market`).
        self._twenty: Market | None = None
        #: The ``closure`` world's market (built once, :meth:`_closure_world`): None until built.
        self._closure: tuple[date, int, _Base] | None = None
        self._closure_built = False
        #: The markets of the worlds built once a run (``midsession``, ``gap``: :meth:`_run_world`), and
        #: their changes in words.
        self._run_markets: dict[WorldKind, tuple[_Base, str]] = {}
        #: The ``preopen`` worlds' markets by day (built once each, :meth:`_preopen_world`).
        self._preopen: dict[date, tuple[_Base, str]] = {}
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

    def written(self, path: str | Path) -> World | None:
        """The world written at ``path`` (None: no world of this run is there). Its ``provider`` is the
        snapshot loaded from that directory, the one the oracle reads: an in-process runner of trusted
        tools (``scripts/bench_worlds.py --in-process``) serves it instead of parsing the files again."""
        where = Path(path)
        return next((w for w in self._written.values() if w.path == where), None)

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
            rng = np.random.default_rng([self.seed, len(KIND_ORDER), 3])  # a stream of its own
            market = sibling_rows(read_market(self.snapshot), rng)
            self._base = _Base(relevel(market, np.random.default_rng([self.seed, len(KIND_ORDER), 4]),
                                       cents=True, drift=False))
        return self._base

    def as_of_date(self, round_: int) -> date:
        """The ``as_of`` world's date (see :meth:`as_of_plan`)."""
        return self.as_of_plan(round_)[0]

    def as_of_plan(self, round_: int) -> tuple[date, int]:
        """The ``as_of`` world's date and reporting lag (days from a quarter's end to its statement).

        The date lies ``AS_OF_BACK_SESSIONS`` before the snapshot's, keeping at least
        ``MIN_SESSIONS_KEPT`` sessions (a tool may fairly want two years of history), and is always a
        day the market was closed (a weekend or a holiday after the last session kept): users ask
        on those days too, and "latest" must then read the session before, not a bar dated today.
        It falls in the first week after a quarter's statement was reported, the lag drawn from
        ``REPORTING_LAGS``: the newest quarter is then only weeks old, so a tool that finds "the
        latest quarter" from the clock and an assumed lag, instead of from the statement, reads
        the quarter before. Of those days (and lags) it keeps the ones on which the most calendar
        windows of the run's tasks (:func:`calendar_windows`) counted back from the last session hold
        a session the same window counted back from the as-of day does not (:func:`_anchor_moves`: a
        Sunday rather than the Saturday before it), so a window anchored at the last bar instead of at
        today moves in every run, not only when the draw happens to fall on a Sunday."""
        sessions = self._base_market().market.sessions()
        low, high = AS_OF_BACK_SESSIONS
        high = max(1, min(high, len(sessions) - 1 - MIN_SESSIONS_KEPT))
        low = min(low, high)
        rng = np.random.default_rng(self._sub_seed(WorldKind.AS_OF, round_))
        lag = int(rng.integers(REPORTING_LAGS[0], REPORTING_LAGS[1] + 1))
        events = self._event_days()
        first, last = sessions[len(sessions) - 1 - high], sessions[len(sessions) - 1 - low]
        open_days = set(sessions)
        # quarters before the snapshot's newest reported one: "the latest quarter" must differ from the run's
        market = self._base_market().market
        newest = max((q for q in (_newest_quarter(market, s) for s in market.symbols()) if q), default=last)
        lags = range(REPORTING_LAGS[0], REPORTING_LAGS[1] + 1)
        ends = [d.date() for d in pd.date_range(first - timedelta(days=max(lags)), last, freq="QE")
                if d.date() < newest - timedelta(days=20)]
        # (day, lag): a closed day in the first week after a quarter's statement was reported
        candidates = sorted({(end + timedelta(days=n + k), n) for end in ends for n in lags for k in range(8)})
        candidates = [(d, n) for d, n in candidates
                      if first < d <= last and d not in open_days and not _on_an_edge(d, events)]
        if candidates:
            # the days on which a window counted from the last bar parts from one counted from today for
            # the most calendar windows (a Sunday reaches further than a Saturday, a holiday further still)
            marks = np.array(sessions, dtype="datetime64[D]")
            scores = {d: _anchor_moves(d, marks, self.calendar_windows) for d, _ in candidates}
            days = sorted(d for d, score in scores.items() if score == max(scores.values()))
            day = days[int(rng.integers(len(days)))]
            fits = [n for d, n in candidates if d == day]
            return day, fits[int(rng.integers(len(fits)))]
        day = sessions[-1]
        for _ in range(_AS_OF_DRAWS):
            index = len(sessions) - 1 - int(rng.integers(low, high + 1))
            while index > 0 and (sessions[index + 1] - sessions[index]).days == 1:
                index -= 1  # back to a session the market's next one does not follow the next day
            gap = (sessions[index + 1] - sessions[index]).days
            day = sessions[index] + timedelta(days=int(rng.integers(1, gap))) if gap > 1 else sessions[index]
            if not _on_an_edge(day, events):
                break
        return day, lag

    def _leap_range(self) -> tuple[date, date]:
        """The days a ``leap`` world's as-of may fall on: the ``as_of`` range of the snapshot."""
        sessions = self._base_market().market.sessions()
        reach = min(AS_OF_BACK_SESSIONS[1], len(sessions) - 1)
        return sessions[len(sessions) - 1 - reach], sessions[-1]

    def _longer_market(self) -> Market:
        """The run's snapshot lengthened back :data:`LEAP_YEARS` + 1 years before the ``leap`` range."""
        if self._longer is None:
            rng = np.random.default_rng([self.seed, len(KIND_ORDER), 1])
            longer = lengthen(self._base_market().market, self._longer_start(), rng)
            self._longer, self._longer_stopped = stopped_payers(
                longer, _years_before(self._leap_earliest(), STOPPED_YEARS))
        return self._longer

    def _longer_start(self) -> date:
        """The first day of the lengthened history: :data:`LEAP_YEARS` + 1 years before the ``leap`` range
        (or before its Feb 29, :meth:`_leap_day`, when that is earlier)."""
        return _years_before(self._leap_earliest(), LEAP_YEARS + 1)

    def _leap_day(self) -> date | None:
        """The latest Feb 29 after the snapshot's first session and on or before its last: an as-of day
        users ask on too, where a year back is Feb 28 (``date.replace(year=...)`` raises there)."""
        sessions = self._base_market().market.sessions()
        for year in range(sessions[-1].year, sessions[0].year - 1, -1):
            if calendar.isleap(year) and sessions[0] < date(year, 2, 29) <= sessions[-1]:
                return date(year, 2, 29)
        return None

    def _leap_earliest(self) -> date:
        """The earliest day the ``leap`` world's as-of may fall on."""
        first = self._leap_range()[0]
        day = self._leap_day()
        return min(first, day) if day is not None else first

    def leap_plan(self) -> tuple[date, int] | None:
        """The ``leap`` world's as-of day and reporting lag, drawn from the seed: a day within the
        ``as_of`` range of the snapshot on which a window of :data:`LEAP_YEARS` whole years spans two
        Feb 29ths and the day after its first day is a session (a window of 365 days a year starts
        after it, the calendar's before it) and no ex-date lies on a whole-year edge, preferring days
        on which a window of 1 to :data:`LEAP_YEARS` years at 52 weeks (364 days a year) parts from the
        calendar's too; the latest Feb 29 the snapshot holds (:meth:`_leap_day`) is one more candidate,
        taken whenever it is among the best (a year back from it is Feb 28, where ``date.replace`` raises).
        None when no such day exists (a snapshot whose last months follow no leap day)."""
        first, last = self._leap_range()
        if self._longer_start().year < COVERED_YEARS[0]:
            return None  # a snapshot recorded from further back: the calendar cannot place the sessions before it
        longer = self._longer_market()
        events = {d for s in longer.symbols() for d in pd.DatetimeIndex(longer.dividends(s).index).date}
        scored: list[tuple[int, date]] = []
        leap_day = self._leap_day()
        days = [leap_day] if leap_day is not None and leap_day < first else []
        day = first
        while day <= last:
            days.append(day)
            day += timedelta(days=1)
        for day in days:
            score = _fixed_count_gaps(day)
            if score is not None and not any(_years_before(day, n) in events for n in _LEAP_EDGES):
                scored.append((score, day))
        if not scored:
            return None
        rng = np.random.default_rng([self.seed, len(KIND_ORDER), 0])
        best = [d for score, d in scored if score == max(s for s, _ in scored)]
        chosen = best[int(rng.integers(len(best)))]
        # Feb 29 itself when it is among the best: a year back from it is Feb 28
        chosen = leap_day if leap_day in best else chosen
        return chosen, int(rng.integers(REPORTING_LAGS[0], REPORTING_LAGS[1] + 1))

    def leap_market(self) -> tuple[str, str, Market] | None:
        """``(name, perturbation in words, market)`` of the ``leap`` world (built once; None when
        :meth:`leap_plan` finds no day): the run's snapshot lengthened back before an as-of day of
        :meth:`leap_plan` (:func:`lengthen`), with ex-dates beside every whole-year edge of 1 to
        :data:`LEAP_YEARS` + 1 years and none on one: a window of 365 days a year (or 52 weeks)
        drops a dividend the calendar's window holds on either accepted reading of its first day."""
        if "leap" not in self._leap:
            started = time.perf_counter()
            plan = self.leap_plan()
            found: tuple[str, str, _Base] | None = None
            if plan is not None:
                day, lag = plan
                longer = self._longer_market()
                past, moved = edge_dividends(truncate(longer, day, lag), _LEAP_EDGES)
                words = "; ".join(w for w in (f"history from {longer.sessions()[0]}", self._longer_stopped, moved)
                                  if w)
                found = (f"{WorldKind.LEAP.value}-{day.isoformat()}", words, _Base(past))
            self._leap["leap"] = found
            self.timings["generate"] += time.perf_counter() - started
        built = self._leap["leap"]
        return None if built is None else (built[0], built[1], built[2].market)

    def _leap_world(self, task: Task) -> World | None:
        """For a task with a lookback in years, the ``leap`` world (:meth:`leap_market`)."""
        if "years" not in task.intent.args or self.leap_market() is None:
            return None
        built = self._leap["leap"]
        assert built is not None
        name, words, base = built
        return self._write(name, WorldKind.LEAP, 0, base, words)

    def long_market(self) -> Market:
        """The ``long`` world's market (built once): the run's snapshot lengthened back
        :data:`LONG_YEARS` years before its own as-of day (:func:`lengthened`)."""
        if self._long is None:
            started = time.perf_counter()
            rng = np.random.default_rng([self.seed, len(KIND_ORDER), 2])
            base = self._base_market().market
            self._twenty = lengthened(base, rng)
            self._long = _Base(deepened(self._twenty, rng) if self._twenty is not base else base)
            self.timings["generate"] += time.perf_counter() - started
        return self._long.market

    def twenty_market(self) -> Market:
        """The ``long`` world's market before its deep history (:func:`deepened`): its last
        :data:`LONG_YEARS` years, what the ``closure`` world is cut from (a closure's as-of needs no
        decades before it; every task is judged there, so its history is kept short)."""
        self.long_market()
        assert self._twenty is not None
        return self._twenty

    def _long_world(self, task: Task) -> World | None:
        """For a task with a probe that needs more history than the run's snapshot holds (its
        ``min_sessions``), or whose own answer there differs from the snapshot's (a measure of all
        the history, such as every signal's forward return: a tool that reads a fixed period of ten
        years fails there), the ``long`` world (:meth:`long_market`); None otherwise."""
        market = self.long_market()
        assert self._long is not None
        if market is self._base_market().market:
            return None  # the calendar cannot place sessions before the snapshot's: nothing longer to judge in
        if not any(p.min_sessions for p in task.probes) and not self._reads_all_history(task, market):
            return None
        assert self._twenty is not None
        first = min(pd.DatetimeIndex(item.history.index)[0].date() for item in market.data.values())
        twenty = min(pd.DatetimeIndex(item.history.index)[0].date() for item in self._twenty.data.values())
        return self._write(f"{WorldKind.LONG.value}-{market.as_of.isoformat()}", WorldKind.LONG, 0, self._long,
                           f"history from {first} ({LONG_YEARS} years from {twenty}, then back to {DEEP_START})")

    def closure_day(self) -> tuple[date, date] | None:
        """The ``closure`` world's as-of day and the last session before it: of the closed days of the
        ``long`` world's calendar at least :data:`CLOSURE_FOUND_DAYS` calendar days after the session
        before them, with two calendar years of history before them and no ex-date on a whole-year
        edge, the latest (the last closed day before the market reopens); its last session the latest
        one at least :data:`CLOSURE_DAYS` calendar days before it, when no dividend or split falls on
        the sessions closed between. None when the calendar holds no such closure."""
        market = self.twenty_market()
        sessions = market.sessions()
        if not sessions:
            return None
        events: set[date] = set()
        moves: set[date] = set()  # a dividend or a split: never on a session the closure takes
        for symbol in market.symbols():
            events.update(pd.DatetimeIndex(market.dividends(symbol).index).date)
            raw = market.history_unadjusted(symbol)
            moves.update(pd.DatetimeIndex(raw.index)[_events(raw)].date)
        earliest = _years_before(sessions[0], -2)
        found = None
        for at, (before, after) in enumerate(itertools.pairwise(sessions)):
            day = after - timedelta(days=1)
            if (day - before).days < CLOSURE_FOUND_DAYS or day < earliest or _on_an_edge(day, events):
                continue
            last = at
            while last >= 0 and (day - sessions[last]).days < CLOSURE_DAYS:
                last -= 1
            if last >= 0 and not moves.intersection(sessions[last + 1:at + 1]):
                found = (day, sessions[last])
        return found

    def _closure_world(self, task: Task) -> World | None:
        """The ``closure`` world (:meth:`closure_day`: the long world cut there) for a task whose
        oracle answers there under its first reading (a statement task has nothing filed that far
        back); None otherwise."""
        if not self._closure_built:
            self._closure_built = True
            started = time.perf_counter()
            found = self.closure_day()
            if found is not None:
                day, last = found
                self._closure = (day, (day - last).days, _Base(close_after(truncate(self.twenty_market(), day), last)))
            self.timings["generate"] += time.perf_counter() - started
        if self._closure is None:
            return None
        day, gap, base = self._closure
        started = time.perf_counter()
        answers = _primary(task, base.market, {}) is not None
        self.timings["choose"] += time.perf_counter() - started
        if not answers:
            return None
        return self._write(f"{WorldKind.CLOSURE.value}-{day.isoformat()}", WorldKind.CLOSURE, 0, base,
                           f"as of {day}, a market closure: {gap} calendar days after the last session")

    def preopen_day(self, task: Task, argsets: Sequence[Mapping[str, Any]] = ()) -> date | None:
        """The ``preopen`` world's day for ``task``: the latest ex-dividend date of its own stocks within
        ``AS_OF_BACK_SESSIONS`` of the snapshot's as-of date, or where none of them pays (an index, a
        stock without dividends), of the symbols its probes' argument sets ``argsets`` name (the ETF
        every task on one symbol is asked about): a tool verified on the index is reused for the ETF
        (None: no such symbol pays there). For a yes/no task, the latest ex-date with
        ``MIN_SESSIONS_KEPT`` sessions before it on which its own answer is yes, when one is: a
        comparison with the NaN close of the pending row is always false, so a tool that reads that
        row answers no there, right by the coincidence where the answer is no."""
        market = self._base_market().market
        sessions = market.sessions()
        first = sessions[max(0, len(sessions) - 1 - AS_OF_BACK_SESSIONS[1])]
        own = task_symbols(task, [], market.data)

        def ex_dates(symbols: Sequence[str]) -> list[date]:
            return sorted({d for s in symbols for d in pd.DatetimeIndex(market.dividends(s).index).date
                           if d <= sessions[-1]}, reverse=True)

        every = ex_dates(own) or ex_dates(task_symbols(task, argsets, market.data))
        if task.output.type == "boolean" and len(sessions) > MIN_SESSIONS_KEPT:
            for day in (d for d in every if d > sessions[MIN_SESSIONS_KEPT]):
                if _primary(task, before_the_open(market.as_it_stood(own, day), day)[0], {}) is True:
                    return day
        return next((d for d in every if d > first), None)

    def _preopen_world(self, task: Task, argsets: Sequence[Mapping[str, Any]]) -> World | None:
        """The ``preopen`` world (:attr:`WorldKind.PREOPEN`, :meth:`preopen_day`) for a task whose oracle
        answers there and reads the bars, not the dividends (:data:`NO_PREOPEN_ORACLES`); None otherwise."""
        if task.oracle.name in NO_PREOPEN_ORACLES:
            return None
        day = self.preopen_day(task, argsets)
        if day is None:
            return None
        started = time.perf_counter()
        if day not in self._preopen:
            market, words = before_the_open(truncate(self._base_market().market, day), day)
            self._preopen[day] = (_Base(market), words)
        base, words = self._preopen[day]
        name = f"{WorldKind.PREOPEN.value}-{day.isoformat()}"
        peaked = self._preopen_peak(task, argsets, day, base.market) if task.oracle.name in PREOPEN_PEAK_ORACLES \
            else None
        if peaked is not None:
            market, peak = peaked
            base, words, name = _Base(market), f"{words}; {peak}", f"{name}-{task.id}-peak"
        answers = _primary(task, base.market, {}) is not None
        self.timings["generate"] += time.perf_counter() - started
        if not answers:
            return None
        return self._write(name, WorldKind.PREOPEN, 0, base, words)

    def _run_world(self, task: Task, kind: WorldKind, oracles: frozenset[str],
                   make: Callable[[], tuple[Market, str]]) -> World | None:
        """A world of ``kind`` with one market for the whole run (``make()``: it and its changes in words,
        built on first use) for a task of ``oracles`` whose oracle answers there; None otherwise."""
        if task.oracle.name not in oracles:
            return None
        started = time.perf_counter()
        if kind not in self._run_markets:
            market, words = make()
            self._run_markets[kind] = (_Base(market), words)
        base, words = self._run_markets[kind]
        answers = _primary(task, base.market, {}) is not None
        self.timings["generate"] += time.perf_counter() - started
        if not answers:
            return None
        return self._write(f"{kind.value}-{base.market.as_of.isoformat()}", kind, 0, base, words)

    def _midsession_world(self, task: Task) -> World | None:
        """The ``midsession`` world (:attr:`WorldKind.MIDSESSION`) for a task of :data:`MIDSESSION_ORACLES`:
        the run's snapshot cut at its last session, recorded at a minute of it drawn from the seed (a
        stream of its own)."""
        def make() -> tuple[Market, str]:
            market = self._base_market().market
            day = market.sessions()[-1]
            rng = np.random.default_rng([self.seed, len(KIND_ORDER), 9])
            minute = int(rng.integers(1, SESSION_MINUTES))
            opened = datetime.combine(day, SESSION_OPEN) + timedelta(minutes=minute)
            cut = market if day == market.as_of else truncate(market, day)
            return during_the_session(cut, opened.time(), rng)

        return self._run_world(task, WorldKind.MIDSESSION, MIDSESSION_ORACLES, make)

    def _gap_world(self, task: Task) -> World | None:
        """The ``gap`` world (:attr:`WorldKind.GAP`) for a task of :data:`GAP_ORACLES`, its moves drawn
        from a stream of its own."""
        return self._run_world(task, WorldKind.GAP, GAP_ORACLES, lambda: gapped(
            self._base_market().market, np.random.default_rng([self.seed, len(KIND_ORDER), 10])))

    def _preopen_peak(self, task: Task, argsets: Sequence[Mapping[str, Any]], day: date,
                      preopen: Market) -> tuple[Market, str] | None:
        """For an extreme over a window (:data:`PREOPEN_PEAK_ORACLES`), the ``preopen`` market of ``day``
        with a peak (:data:`PREOPEN_PEAKS`) on the oldest session of the window of the first argument set
        (the task's own, then its probes') that reads a stock with a pending row: there the highest
        close is that session's, and the drawdown falls from it. A tool that takes the last N rows of
        ``history()`` with the pending row among them reads N - 1 sessions and misses the peak; on other
        days the oldest session of a window is seldom its extreme, so such a tool passed. The first peak
        under which the answer N - 1 sessions give is not the primary reading's (the one such a tool
        follows; the judge narrows a tool to the readings it matched on the snapshot); None when none is."""
        pending = {s for s, item in preopen.data.items() if item.pending is not None}
        cut = truncate(self._base_market().market, day)
        for args in argsets:
            params = {**task.oracle.params, **task.intent.args, **args}
            symbol = params.get("symbol")
            if symbol not in pending:
                continue
            for key, window in window_args(params).items():
                if window < 3:
                    continue
                for strength in PREOPEN_PEAKS:
                    spike = Spike(window + 1, True, strength)  # the pending row's day is the last bar here
                    market, _ = before_the_open(perturb(cut, [spike], [symbol]), day)
                    asked = _primary(task, market, args)
                    shorter = _primary(task, market, {**args, key: window - 1})
                    if asked is not None and shorter is not None and not _matches_any(task, shorter, {"": asked}):
                        return market, f"{symbol}'s close {window} sessions before the pending row a peak " \
                                       f"{strength:.0%} above the closes around it"
        return None

    def _listing_world(self, task: Task, argsets: Sequence[Mapping[str, Any]]) -> World | None:
        """For a task with a list of symbols, the ``listing`` world (:attr:`WorldKind.LISTING`): the run's
        snapshot with the shapes recorded data have, one stock of the list (drawn from the seed) a
        recent listing of the first of :data:`LISTING_SESSIONS` sessions with which no accepted reading
        answers the task's own arguments while every one answers them in the snapshot (the listing,
        nothing else, takes the answer away). The argument sets so refused are judged as must-raise
        (:attr:`World.must_raise`): the own ones, and each probe's that the oracle answers in the
        snapshot and no reading answers here. None for a task without a list, or without a stock in it
        such a listing refuses."""
        lists = [v for v in task.intent.args.values() if isinstance(v, list) and len(v) >= 2]
        base = self._shaped_base() if lists else None
        if base is None:
            return None
        stocks = equities(base)
        held = [s for s in lists[0] if isinstance(s, str) and s in stocks]
        if not held:
            return None
        started = time.perf_counter()
        rng = np.random.default_rng([self.seed, len(KIND_ORDER), 7, sum(map(ord, task.id))])  # a stream of its own
        symbol = held[int(rng.integers(len(held)))]
        found: tuple[Market, int, frozenset[int]] | None = None
        for sessions in LISTING_SESSIONS:
            listed = recent_listing(base, symbol, sessions)
            # the two markets differ in the listed symbol's bars only: what this one refuses, the listing took
            refused = frozenset(i for i, args in enumerate(argsets)
                                if _answered(task, base, args) and not _answered(task, listed, args))
            if 0 in refused:
                found = (listed, sessions, refused)
                break
        self.timings["generate"] += time.perf_counter() - started
        if found is None:
            return None
        listed, sessions, refused = found
        first = pd.DatetimeIndex(listed.data[symbol].history.index)[0].date()
        return self._write(f"{WorldKind.LISTING.value}-{listed.as_of.isoformat()}-{task.id}", WorldKind.LISTING, 0,
                           _Base(listed), f"{symbol} a recent listing: {sessions} sessions, from {first}",
                           must_raise=refused)

    def _own_stocks(self, task: Task, oracles: frozenset[str]) -> tuple[Market, list[str]] | None:
        """For a task of ``oracles``, the run's snapshot with the shapes recorded data have and the
        stocks among the task's own symbols, which a ``listing`` world of its own relists; None for
        another task, or one of no stock."""
        if task.oracle.name not in oracles:
            return None
        base = self._shaped_base()
        stocks = equities(base)
        own = [s for s in task_symbols(task, [], base.data) if s in stocks]
        return (base, own) if own else None

    def _rally_world(self, task: Task) -> World | None:
        """For a task that reads an RSI (:data:`RALLY_ORACLES`), a ``listing`` world of the run's snapshot
        (with the shapes recorded data have) in which each of the task's own stocks is a recent listing
        whose every close lies above the one before: the last :data:`RALLY_SESSIONS` sessions made a
        rally (:func:`~runner.judging.world_market.rising_tail`), nothing before them
        (:func:`~runner.judging.world_market.recent_listing`). No loss in the whole history: the RSI is
        100 under every reading, Wilder's smoothed from the first bar too. The ``seed`` world's rally comes
        after years of history, in which Wilder's average loss decays but never reaches zero, so a tool
        that reads all the history and guards a zero average loss with ``rs = 0`` (RSI 0, a real stock's
        first months after a hot listing), or refuses it ("RSI undefined"), fails only here. An
        argument set whose windows ask more warm-up than the history holds (:func:`_rally_may_raise`: ten
        times the longest, plus every window) may also be refused, so a clear error is as right as the
        value for it (:attr:`World.may_raise_for`); for the task's own, only the value is. None when the
        task's own arguments have no answer there.

        For a measure over the RSI of every session (:data:`RALLY_TURN_ORACLES`: the signals of
        comp_004) the rally turns: the last :data:`RALLY_TURN` sessions are the stock's own moves. There
        the RSI is 100 on every day of the rally (a signal under every reading of "RSI above 70") and
        defined again after the first loss, so a tool that makes a zero average loss NaN ("avoid a
        division by zero") counts the signals after the turn alone: an answer no reading gives. In a rally
        that never turns it finds no signal and raises, as the reading that counts only a crossing from
        below (none: the RSI is above the threshold from its first value) rightly does."""
        found = self._own_stocks(task, RALLY_ORACLES)
        if found is None:
            return None
        base, own = found
        started = time.perf_counter()
        rng = np.random.default_rng([self.seed, len(KIND_ORDER), 8, sum(map(ord, task.id))])  # a stream of its own
        market = base
        turn = RALLY_TURN if task.oracle.name in RALLY_TURN_ORACLES else 0
        for symbol in own:
            rallied, _ = rising_tail(market, rng, symbol, RALLY_SESSIONS + turn)
            market = recent_listing(own_moves(rallied, market, symbol, turn), symbol, RALLY_SESSIONS + turn)
        answered = _answered(task, market, {})
        self.timings["generate"] += time.perf_counter() - started
        if not answered:
            return None
        first = pd.DatetimeIndex(market.data[own[0]].history.index)[0].date()
        words = f"{', '.join(own)} a recent listing, every close above the one before: {RALLY_SESSIONS} sessions"
        if turn:
            words += f", then {turn} sessions of its own moves"
        world = self._write(f"{WorldKind.LISTING.value}-{market.as_of.isoformat()}-{task.id}-rally", WorldKind.LISTING,
                            0, _Base(market), f"{words}, from {first}")
        world.may_raise = f"{words}: a warm-up longer than that history is a clear error here"
        world.may_raise_for = _rally_may_raise(task)
        return world

    def _pinned_world(self, task: Task, argsets: Sequence[Mapping[str, Any]]) -> World | None:
        """For a task that reads EMAs seeded on their first values (:data:`PINNED_ORACLES`), a ``listing``
        world of the run's snapshot (with the shapes recorded data have) in which each of the task's own
        stocks is a listing of months ago that first traded pinned at one price
        (:func:`~runner.judging.world_market.pinned_listing`): :func:`_pinned_sessions` sessions at it, then
        :data:`~runner.judging.world_market.PINNED_MOVES` sessions of its own moves.

        With years of history the seed of an EMA is forgotten, so a hand-written EMA seeded at zero
        passes everywhere else; on a listing of months ago a real stock's EMA still remembers it. Every
        seed a right tool uses (the first close, the mean of the first ``span`` closes, pandas' weighted
        average of all closes so far) is the pinned price here, so they agree where the pinned
        sessions cover the spans, and the accepted readings of the task name the weighted average
        where it parts from the recursive EMA after the pin. A history of months may be found too short
        for a MACD's warm-up: a clear error is as right as the value (:attr:`World.may_raise`). None when
        the task's own arguments have no answer there."""
        found = self._own_stocks(task, PINNED_ORACLES)
        if found is None:
            return None
        base, own = found
        started = time.perf_counter()
        pinned = _pinned_sessions(task, argsets)
        market = base
        for symbol in own:
            market = pinned_listing(market, symbol, pinned)
        answered = _answered(task, market, {})
        self.timings["generate"] += time.perf_counter() - started
        if not answered or market is base:
            return None
        first = pd.DatetimeIndex(market.data[own[0]].history.index)[0].date()
        words = (f"{', '.join(own)} a listing of {pinned + PINNED_MOVES} sessions from {first}, "
                 f"the first {pinned} at one price")
        world = self._write(f"{WorldKind.LISTING.value}-{market.as_of.isoformat()}-{task.id}-pinned{pinned}",
                            WorldKind.LISTING, 0, _Base(market), words)
        world.may_raise = f"{words}: a warm-up longer than that history is a clear error here"
        return world

    def _reads_all_history(self, task: Task, market: Market) -> bool:
        """Whether the oracle's answer for the task's own arguments in ``market`` (the ``long`` one,
        whose last sessions are the snapshot's) differs from the snapshot's: only a measure that
        reads the history before the snapshot's first session moves there."""
        started = time.perf_counter()
        here, there = _primary(task, self._base_market().market, {}), _primary(task, market, {})
        self.timings["choose"] += time.perf_counter() - started
        return here is not None and there is not None and compare(here, there, task.tolerance) is not None

    def edge_day(self, round_: int) -> date | None:
        """The ``edge`` world's as-of day: an exchange holiday on a weekday, or a weekend day after a
        Friday holiday, within ``AS_OF_BACK_SESSIONS`` of the snapshot's as-of date and with no
        ex-date on a whole-year edge (None when the snapshot holds no such day: the world keeps the
        snapshot's date). "Latest" is then the session before the holiday: a tool that takes today's
        bar, or rolls weekends back to Friday only, finds none. The first round's day follows a cluster
        of holidays whenever the snapshot holds one with two years of history before it
        (:meth:`_cluster_days`), however far back."""
        sessions = self._base_market().market.sessions()
        first = sessions[len(sessions) - 1 - min(AS_OF_BACK_SESSIONS[1], len(sessions) - 1)]
        open_days, events = set(sessions), self._event_days()
        days = []
        day = first + timedelta(days=1)
        while day < sessions[-1]:
            friday = day - timedelta(days=(day.weekday() - 4) % 7)  # the Friday on or before a weekend day
            closed_weekday = day.weekday() < 5 and day not in open_days
            after_friday_holiday = day.weekday() >= 5 and friday not in open_days and friday > first
            if (closed_weekday or after_friday_holiday) and not _on_an_edge(day, events):
                days.append(day)
            day += timedelta(days=1)
        if round_ == 0:
            # the first edge world falls on the days right after the most holidays: a window of calendar
            # days counted back from there holds the fewest sessions (Christmas and New Year's Day within
            # a week); later rounds draw among every closed day for variety
            days += self._cluster_days(sessions, open_days, events, first)
            if days:
                most = max(_holidays_before(d, open_days) for d in days)
                days = sorted({d for d in days if _holidays_before(d, open_days) == most})
        if not days:
            return None
        rng = np.random.default_rng([self._sub_seed(WorldKind.EDGE, round_), 2])
        return days[int(rng.integers(len(days)))]

    def _cluster_days(self, sessions: Sequence[date], open_days: set[date], events: set[date],
                      first: date) -> list[date]:
        """Closed days before ``first`` that follow a cluster of holidays (:data:`CLUSTER_HOLIDAYS` in
        the :data:`CLUSTER_DAYS` days up to them) with two calendar years of history before them, what
        a tool may fairly fetch: the edge world falls there when the snapshot holds one, so a tool that
        fetches a fixed count of calendar days for a count of sessions finds too few and must not."""
        out = []
        start = max(sessions[0], _years_before(sessions[0], -2) - timedelta(days=7))
        day = start
        while day < first:
            if day not in open_days and _holidays_before(day, open_days) >= CLUSTER_HOLIDAYS \
                    and not _on_an_edge(day, events):
                out.append(day)
            day += timedelta(days=1)
        return out

    def _event_days(self) -> set[date]:
        """Every ex-dividend date of the run's snapshot."""
        days: set[date] = set()
        for symbol in self._base_market().market.symbols():
            days.update(pd.DatetimeIndex(self._base_market().market.dividends(symbol).index).date)
        return days

    def as_of_market(self, round_: int) -> tuple[Market, str]:
        """The ``as_of`` world's market before its spikes, and its changes in words: the snapshot cut
        at :meth:`as_of_plan`'s day, ex-dates beside its whole-year edges, one extra dividend."""
        day, lag = self.as_of_plan(round_)
        past, moved = edge_dividends(truncate(self._base_market().market, day, lag))
        edges = {(pd.Timestamp(day) - pd.DateOffset(years=n)).date() for n in _EDGE_YEARS}
        rng = np.random.default_rng([self._sub_seed(WorldKind.AS_OF, round_), 1])
        past, extra = extra_dividend(past, rng, edges)
        return past, "; ".join(w for w in (moved, extra) if w)

    def variants(self, kind: WorldKind, round_: int) -> list[tuple[str, str, _Base]]:
        """``(name, perturbation in words, market)`` of each variant of a world, built once."""
        key = (kind, round_)
        if key not in self._markets:
            started = time.perf_counter()
            if kind is WorldKind.SEED:
                seed = self._sub_seed(kind, round_)
                years, fiscal = moved_fiscal_years(np.random.default_rng([self.seed, 0, round_, 7]))  # its own
                generated = sibling_rows(Market(synthetic.generate(seed, cents=False, fiscal_year_ends=years),
                                                synthetic.AS_OF),
                                         np.random.default_rng([self.seed, 0, round_, 4]))  # a stream of its own
                generated = relevel(generated, np.random.default_rng([self.seed, 0, round_, 9]),  # its own
                                    cents=False, drift=True)
                market, off_cycle = off_cycle_quarters(generated)
                market, january = off_cycle_quarters(market, JANUARY_YEAR_SYMBOL)
                market, weekly = weekly_fiscal_calendar(market)
                market, unfiled = unfiled_quarter(market)
                market, stated = statement_shapes(market, np.random.default_rng([self.seed, 0, round_, 3]))
                market, gaps = revenue_gaps(market)
                market, moved = edge_dividends(market)
                market, rising = rising_tail(market, np.random.default_rng([self.seed, 0, round_, 5]))  # its own
                market, records = record_tails(market, np.random.default_rng([self.seed, 0, round_, 8]))  # its own
                market, halted = recent_halts(market, np.random.default_rng([self.seed, 0, round_, 6]))  # its own
                market, unvolumed = index_without_volume(market)
                market, penny = penny_stock(market, np.random.default_rng([self.seed, 0, round_, 11]))  # its own
                market, shapes = self._recorded(market, kind, round_)
                words = "; ".join(w for w in (fiscal, off_cycle, january, weekly, unfiled, stated, gaps, moved, rising,
                                              records, halted, unvolumed, penny, shapes) if w)
                self._markets[key] = [(f"seed-{seed}", words, _Base(market))]
            else:
                base = self._base_market()
                extra = ""
                if kind is WorldKind.EDGE:
                    holiday = self.edge_day(round_)
                    if holiday is not None:
                        base = _Base(truncate(base.market, holiday))
                if kind is WorldKind.AS_OF:
                    past, extra = self.as_of_market(round_)
                    base = _Base(past)
                shaped, shapes = self._recorded(base.market, kind, round_)
                base = _Base(shaped)
                extra = "; ".join(w for w in (extra, shapes) if w)
                plans = (first_spikes(self.windows, _calendar_backs(base.market, self.windows))
                         if kind is WorldKind.AS_OF else edge_spikes(self.windows))
                everything = list(base.market.data)
                out = []
                for label, spikes in plans:
                    market = perturb(base.market, spikes, everything)
                    words = "; ".join([spike.label() for spike in spikes] + ([extra] if extra else []))
                    name = f"{kind.value}-{market.as_of.isoformat()}-r{round_}-{label}"
                    out.append((name, words, _Base(market)))
                self._markets[key] = out
            self.timings["generate"] += time.perf_counter() - started
        return self._markets[key]

    def _recorded(self, market: Market, kind: WorldKind, round_: int) -> tuple[Market, str]:
        """``market`` with the shapes recorded data have (:func:`recorded_shapes`: prices off the cent
        grid, a missing session, a trading halt, a recent split), the halt clear of the sessions this
        kind of world spikes (and the ones beside them)."""
        rng = np.random.default_rng([self.seed, list(WorldKind).index(kind), round_, 2])
        avoid: set[int] = set()
        if kind is not WorldKind.SEED:
            plans = (first_spikes(self.windows, _calendar_backs(market, self.windows))
                     if kind is WorldKind.AS_OF else edge_spikes(self.windows))
            avoid = {b + d for _, spikes in plans for spike in spikes for b in (spike.back,) for d in (-1, 0, 1)}
        return recorded_shapes(market, rng, avoid)

    def _shaped_base(self) -> Market:
        """The run's snapshot with the shapes recorded data have, for the ``flip`` worlds (built once)."""
        if self._shaped is None:
            self._shaped = self._recorded(self._base_market().market, WorldKind.FLIP, 0)[0]
        return self._shaped

    def _flip_world(self, task: Task, worlds: Sequence[World], symbols: Sequence[str]) -> World | None:
        """For a yes/no task whose worlds all give its own arguments one answer (a constant served for
        exactly those arguments would pass), a world of the run's snapshot whose last bars are
        reshaped so that the answer is the other one; None when the answers already differ or no
        shape flips it."""
        answers = _answers(task, worlds)
        if len(answers) != 1:
            return None
        base = self._shaped_base()
        return self._shaped_world(task, lambda: flip_market(task, base, [s for s in symbols if s in base.data],
                                                            next(iter(answers))), "")

    def _round_trip_world(self, task: Task, symbols: Sequence[str]) -> World | None:
        """For a yes/no task, a world of the run's snapshot whose last bars make a round trip over the
        task's longest window (:func:`round_trip_market`): the last close just past the first, the path
        and the first open on the other side, volume falling. There an answer read from the window's
        endpoints parts from one read from its mean or its first open."""
        base = self._shaped_base()
        return self._shaped_world(task, lambda: round_trip_market(task, base, [s for s in symbols if s in base.data]),
                                  "-round-trip")

    def _zigzag_world(self, task: Task, symbols: Sequence[str]) -> World | None:
        """For a yes/no task, a world of the run's snapshot whose last bars zigzag over the task's
        longest window (:func:`zigzag_market`): daily returns that sum positive while the close ends
        lower, volume falling. There "the price rose" read from summed returns parts from the close's
        change, in every run (a smooth path never shows it)."""
        base = self._shaped_base()
        return self._shaped_world(task, lambda: zigzag_market(task, base, [s for s in symbols if s in base.data]),
                                  "-zigzag")

    def _halt_world(self, task: Task, symbols: Sequence[str]) -> World | None:
        """For a yes/no task of two windows or more, a world of the run's snapshot whose own symbols (those
        of the task's own arguments) are halted over its longest window after a fall (:func:`halted_market`): averages
        over windows inside the halt tie exactly, so a tie counted as a cross (``>=`` for ``>``)
        answers otherwise than the question, in every run; the other symbols its probes read are halted
        and resume trading on the last session, the short average above the long one by under half a
        cent (a tool rounding the averages to cents before comparing them sees a tie)."""
        base = self._shaped_base()
        own = task_symbols(task, [], base.data)
        others = [s for s in symbols if s in base.data and s not in own]
        return self._shaped_world(task, lambda: halted_market(task, base, own, others), "-halt")

    def _dividend_world(self, task: Task) -> World | None:
        """For a yes/no task on a dividend payer, a world of the run's snapshot whose own payers' last bars
        are reshaped with a special ex-dividend at the middle of the task's longest window
        (:func:`dividend_flip_market`): the answer read from quoted closes (``auto_adjust=False``, or
        ``Close`` taken from ``actions=True`` bars unadjusted) is no accepted one there, in every run,
        where a small dividend on the snapshot's data decides nothing."""
        base = self._shaped_base()
        own = task_symbols(task, [], base.data)
        return self._shaped_world(task, lambda: dividend_flip_market(task, base, own), "-dividend")

    def _edge_flip_worlds(self, task: Task, symbols: Sequence[str],
                          argsets: Sequence[Mapping[str, Any]]) -> list[World | None]:
        """For a yes/no task, a world per window of the run's snapshot (with the shapes recorded data
        have) whose answer turns at that window's edge (:func:`edge_flip_markets`): there a tool whose
        window is one session off answers the other way."""
        base = self._shaped_base()
        started = time.perf_counter()
        found = edge_flip_markets(task, base, [s for s in symbols if s in base.data], argsets)
        self.timings["generate"] += time.perf_counter() - started
        return [self._write_flip(task, market, shape, f"-edge-{shape.key}") for market, shape in found]

    def _window_worlds(self, task: Task, symbols: Sequence[str],
                       argsets: Sequence[Mapping[str, Any]]) -> list[World | None]:
        """For a task measuring a window of sessions, worlds of the run's snapshot whose symbols the task
        reads are reshaped over its longest window: halted, for the spread of price levels (Bollinger's
        bands: :func:`flat_market`, where a one-pass variance misses the zero spread by its rounding --
        a negative variance, whose root raises or is NaN, or a positive one); trading quietly, for the
        dispersion of returns (a volatility, a correlation: :func:`quiet_market`, a small dispersion,
        still a defined measure, which a tool that takes it for none refuses); halted after a fall, for
        the levels a window reads (a highest close, an average, a drawdown, a return:
        :func:`halted_window_market`, where a tool that drops the repeated bars reads into the fall)."""
        def reshaped(make: Callable[..., tuple[Market, Any] | None]) -> Callable[[], tuple[Market, Any] | None]:
            return lambda: make(task, self._shaped_base(), symbols, argsets)

        shapes = ((LEVEL_SPREAD_ORACLES, flat_market, "-flat"), (QUIET_ORACLES, quiet_market, "-quiet"),
                  (HALT_WINDOW_ORACLES, halted_window_market, "-halted"))
        return [self._shaped_world(task, reshaped(make), suffix) for oracles, make, suffix in shapes
                if task.oracle.name in oracles]  # no other task builds the shaped snapshot for them

    def _shaped_world(self, task: Task, make: Callable[[], tuple[Market, Any] | None], suffix: str) -> World | None:
        """A ``flip`` world of ``task``: ``make()`` reshapes the run's snapshot (None: no shape does what
        is asked), timed as generating; the world is written under the task's name and ``suffix``."""
        started = time.perf_counter()
        found = make()
        self.timings["generate"] += time.perf_counter() - started
        return None if found is None else self._write_flip(task, *found, suffix)

    def _write_flip(self, task: Task, market: Market, shape: Any, suffix: str) -> World:
        """``market``, reshaped by ``shape`` for ``task``, written as a ``flip`` world under the task's name
        and ``suffix``, the shape's label its perturbation."""
        name = f"{WorldKind.FLIP.value}-{market.as_of.isoformat()}-{task.id}{suffix}"
        return self._write(name, WorldKind.FLIP, 0, _Base(market), shape.label())

    # -- building ----------------------------------------------------------------------------
    def _write(self, name: str, kind: WorldKind, round_: int, base: _Base, perturbation: str,
               must_raise: frozenset[int] = frozenset()) -> World:
        cached = self._written.get(name)
        if cached is not None:
            return cached
        started = time.perf_counter()
        blobs: dict[str, bytes] = {}
        for symbol in base.market.data:
            blobs.update(self._symbol_blobs(base, symbol))
        path = self.root / secrets.token_hex(8)  # a name that says nothing about the world
        seed = self._sub_seed(kind, round_) if kind is WorldKind.SEED else None
        origin = SnapshotOrigin(as_of=base.market.as_of, synthetic=True, label=LABEL, generator=GENERATOR,
                                generator_version=GENERATOR_VERSION, seed=seed, before_open=base.market.before_open,
                                during_session=base.market.during_session)
        write_snapshot_files(path, blobs, origin, symbols=list(base.market.data),
                             extra={"world": kind.value, "perturbation": perturbation}, durable=False)
        world = World(name=name, kind=kind, path=path, provider=load_snapshot(path, self._parsed),
                      perturbation=perturbation, round=round_, must_raise=must_raise)
        self._written[name] = world
        self.timings["write"] += time.perf_counter() - started
        return world

    def _symbol_blobs(self, base: _Base, symbol: str) -> dict[str, bytes]:
        """``base``'s files of ``symbol``, serialised once per symbol's data however many worlds hold it:
        a world reshapes a few symbols and hands the others on as the very objects of the market it was
        built from (every change is made on a copy), so their files are those already written."""
        item = base.market.data[symbol]
        kept = self._blobs.get(id(item))
        if kept is None or kept[0] is not item:
            kept = self._blobs[id(item)] = (item, base.symbol_blobs(symbol))
        return kept[1]

    def for_task(self, task: Task, argsets: Sequence[Mapping[str, Any]]) -> list[World]:
        """The task's worlds, in judging order; ``argsets`` are its probes' oracle overrides
        (after ``{}`` for the task's own arguments), used to pick each kind's variant.

        Built once per task, by one thread at a time (another thread asking waits for the build);
        every stream of randomness a world draws from is the run's seed mixed with its own
        constants (and the task's id), so the worlds are the same whichever tasks were built
        before, and in whichever thread."""
        found = self._per_task.get(task.id)
        if found is not None:
            return found
        with self._building:
            found = self._per_task.get(task.id)  # built while this thread waited
            return found if found is not None else self._build_for(task, argsets)

    def _build_for(self, task: Task, argsets: Sequence[Mapping[str, Any]]) -> list[World]:
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
            shaped = (self._flip_world(task, worlds, symbols),  # of the worlds above only
                      self._round_trip_world(task, symbols), self._zigzag_world(task, symbols),
                      self._halt_world(task, symbols), self._dividend_world(task),
                      *self._edge_flip_worlds(task, symbols, argsets))
            worlds += [world for world in shaped if world is not None]
        if worlds:
            listing = self._listing_world(task, argsets)
            for extra in (*self._window_worlds(task, symbols, argsets), self._leap_world(task),
                          self._long_world(task), self._closure_world(task), listing, self._rally_world(task),
                          self._pinned_world(task, argsets),
                          self._preopen_world(task, argsets), self._midsession_world(task), self._gap_world(task)):
                if extra is not None:
                    worlds.append(extra)
        self._per_task[task.id] = worlds
        self.build_s += time.perf_counter() - started
        return worlds


#: The warm-up a recursive indicator may ask, in multiples of its longest window (:func:`_rally_may_raise`).
RALLY_WARMUP = 10


def _rally_may_raise(task: Task) -> frozenset[int]:
    """The argument sets of ``task`` (0: its own, ``i``: probe ``i``) whose windows ask more history than
    the rally world holds: :data:`RALLY_WARMUP` times the longest, plus every window (the span the
    answer reads after the warm-up)."""
    out = set()
    for index, params in enumerate([{}, *[p.oracle_params for p in task.probes]]):
        windows = list(window_args({**task.oracle.params, **task.intent.args, **params}).values())
        if windows and RALLY_WARMUP * max(windows) + sum(windows) > RALLY_SESSIONS:
            out.add(index)
    return frozenset(out)


def _pinned_sessions(task: Task, argsets: Sequence[Mapping[str, Any]]) -> int:
    """The pinned listing's pinned sessions for ``task`` (:meth:`Worlds._pinned_world`): the most that one of
    its argument sets (``{}`` its own) reads with all its windows end to end, among those that read no
    more than :data:`PINNED_MOST`."""
    reads = [sum(window_args({**task.oracle.params, **task.intent.args, **params}).values())
             for params in [{}, *argsets]]
    return max([n for n in reads if n <= PINNED_MOST] or [PINNED_MOST])


def _answers(task: Task, worlds: Sequence[World]) -> set[Any]:
    """The oracle's answers (primary reading) for the task's own arguments in ``worlds``."""
    return {_primary(task, world.provider, {}) for world in worlds} - {None}


def _answered(task: Task, market: Market, args: Mapping[str, Any]) -> bool:
    """Whether some accepted reading of ``task`` answers the argument set ``args`` in ``market``."""
    try:
        judged_values(task, market, dict(args) or None)
    except (InputError, LookupError, ValueError, TypeError, KeyError):
        return False
    return True


def display_name(world: World) -> str:
    """``seed-123``, ``as_of-2024-06-28``, ``edge-2024-12-31``: how reasons name a world."""
    if world.kind is WorldKind.SEED:
        return world.name
    return f"{world.kind.value}-{world.as_of.isoformat()}" + (f"#{world.round + 1}" if world.round else "")
