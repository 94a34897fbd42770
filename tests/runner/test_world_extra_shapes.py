"""Hidden-world shapes of recorded data that every symbol of the other worlds lacks, each with a wrong tool
the judge passed without it and the reference that must keep passing:

* the ``listing`` world: one stock of a task over several symbols is a recent listing, traded fewer
  sessions than the task's window, while the others trade decades. The data of that argument cannot
  support the window, no accepted reading answers, and a right tool raises; a tool that leaves the
  short symbol out of the average (or checks the first symbol's history only) answers and fails;
* the ``long`` world's history reaching back to 1980: "all available history" read from a fixed
  start assumed to precede the data (``start="2000-01-01"``) drops decades of signals and fails;
* the round-trip ``flip`` world ending less than half a cent above its first close: a tool that
  rounds the closes to cents before the strict "last > first" sees no rise, and fails;
* the same world's volume, falling by session while rising by calendar day: a tool that regresses the
  volume on the dates instead of the sessions sees no fall, and fails;
* the pinned ``listing`` world: the MACD task's stock listed months ago, its first sessions at one
  price. An EMA seeded at zero instead of at the first close, forgotten after years of history, is
  still far off there; every seed a right tool uses (the first close, the mean of the first closes,
  pandas' weighted average) is that price, so they all pass.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

from finevo.market.snapshot import load_snapshot
from finevo.outcome import Outcome
from finevo.paths import reference_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.api import ExecutionResult
from runner.inputs.tasks import load_tasks
from runner.judging.grade import Reruns, judge_task, world_answers
from runner.judging.oracle import RAISES, expected_values, probe_expected_values
from runner.judging.probes import probes_for
from runner.judging.world_market import LISTING_SESSIONS, PINNED_MOVES
from runner.judging.worlds import PINNED_MOST, PINNED_ORACLES, World, WorldKind, Worlds
from runner.records import TaskResult
from tests.runner.fakes import DATA, TASKS

SEED = 20260101

pytestmark = pytest.mark.slow

#: Leaves out of the basket every symbol with fewer closes than the window and averages the others.
SKIPS_SHORT = '''import pandas as pd
import yfinance as yf


def portfolio_return(symbols: list, days: int = 30) -> float:
    kept = {}
    for symbol in symbols:
        closes = yf.Ticker(symbol).history(period="max")["Close"]
        if len(closes) >= days:  # too young for the window: not part of the average
            kept[symbol] = closes
    if not kept:
        raise ValueError("no symbol has enough history")
    frame = pd.DataFrame(kept).dropna().tail(days)
    return float((frame.iloc[-1] / frame.iloc[0] - 1).mean())
'''

#: Checks the history of the first symbol only, then correlates the aligned closes' tail: fewer than the
#: window when the second symbol is younger (a probe past the data's limit, where both are short, raises).
FIRST_CHECKED = '''import pandas as pd
import yfinance as yf


def correlation(symbols: list, days: int = 30) -> float:
    first = yf.Ticker(symbols[0]).history(period="max")["Close"]
    if len(first) < days:
        raise ValueError(f"{symbols[0]}: fewer than {days} closes")
    second = yf.Ticker(symbols[1]).history(period="max")["Close"]
    frame = pd.concat({"a": first, "b": second}, axis=1, join="inner").dropna().tail(days)
    returns = frame.pct_change().dropna()
    value = float(returns["a"].corr(returns["b"]))
    if value != value:
        raise ValueError("a constant series: the correlation is undefined")
    return value
'''


class Env:
    def __init__(self) -> None:
        self.snapshot = load_snapshot(DATA)
        tasks = load_tasks(TASKS)
        self.tasks = {t.id: t.model_copy(update={"probes": probes_for(t, self.snapshot)}) for t in tasks}
        self.sandbox = create_sandbox(DATA)
        self.worlds = Worlds(self.snapshot, 3, SEED, list(self.tasks.values()))

    def run(self, code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        if snapshot_dir is None:
            return self.sandbox.run(code, entry, args, Limits(timeout_s=30.0))
        return self.sandbox.run(code, entry, args, Limits(timeout_s=30.0), snapshot_dir=snapshot_dir)

    def listing(self, task_id: str) -> World:
        task = self.tasks[task_id]
        worlds = self.worlds.for_task(task, [dict(p.oracle_params) for p in task.probes])
        return next(w for w in worlds if w.kind is WorldKind.LISTING)

    def judge(self, task_id: str, code: str) -> TaskResult:
        task = self.tasks[task_id]
        result = self.run(code, task.intent.indicator, dict(task.intent.args))
        assert result.ok, (result.error_type, result.error_message)
        outcome = Outcome(task_id=task_id, value=result.value, tool_code=code, stage="done")
        return judge_task(task, outcome, expected_values(task, self.snapshot), 0.0,
                          Reruns(self.run, probe_expected=probe_expected_values(task, self.snapshot),
                                 worlds=self.worlds))


@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    built = Env()
    try:
        yield built
    finally:
        built.worlds.close()
        built.sandbox.close()


def reference(task_id: str) -> str:
    return (reference_dir() / f"{task_id}.py").read_text(encoding="utf-8")


@pytest.mark.parametrize("task_id", ["comp_003", "calc_008"])
def test_a_task_over_several_symbols_gets_a_world_where_one_stock_listed_weeks_ago(env: Env, task_id: str) -> None:
    task = env.tasks[task_id]
    world = env.listing(task_id)
    symbols = task.intent.args["symbols"]
    lengths = {s: len(world.provider.history(s)) for s in symbols}
    short = [s for s, n in lengths.items() if n < task.intent.args["days"]]
    assert len(short) == 1 and lengths[short[0]] in LISTING_SESSIONS, lengths
    assert world.provider.info(short[0])["quoteType"] == "EQUITY"
    assert all(n > 500 for s, n in lengths.items() if s not in short)
    # a listing looks recorded: a consistent first bar, no dividend or split, quotes from its own bars
    bars = world.provider.history_unadjusted(short[0])
    first = bars.iloc[0]
    assert first["Low"] <= min(first["Open"], first["Close"]) <= max(first["Open"], first["Close"]) <= first["High"]
    assert (bars["Dividends"] == 0).all() and (bars["Stock Splits"] == 0).all()
    info = world.provider.info(short[0])
    assert info.get("52WeekChange") is None and info["fiftyTwoWeekLow"] == pytest.approx(float(bars["Low"].min()))
    # the oracle answers in the run's snapshot; here no reading does: the tool must raise
    assert expected_values(task, env.snapshot)
    answers = world_answers(task, world)
    assert 0 in world.must_raise and answers[0] == (0, {RAISES: answers[0][1][RAISES]})  # type: ignore[index]
    listed = pd.DatetimeIndex(bars.index)[0].date()
    assert f"{short[0]} a recent listing" in world.perturbation and str(listed) in world.perturbation


def test_a_basket_that_leaves_out_a_recent_listing_fails_and_the_reference_passes(env: Env) -> None:
    world = env.listing("comp_003")
    own = dict(env.tasks["comp_003"].intent.args)
    skipped = env.run(SKIPS_SHORT, "portfolio_return", own, str(world.path))
    assert skipped.ok and isinstance(skipped.value, float), "answers from the other symbols alone"
    assert not env.run(reference("comp_003"), "portfolio_return", own, str(world.path)).ok
    wrong = env.judge("comp_003", SKIPS_SHORT)
    assert wrong.state.value == "fail" and "listing" in wrong.reason, wrong.reason
    right = env.judge("comp_003", reference("comp_003"))
    assert right.state.value == "pass", right.reason
    assert [w.state.value for w in right.worlds if w.kind == WorldKind.LISTING.value] == ["pass"]


def test_a_correlation_over_the_shorter_history_fails_and_the_reference_passes(env: Env) -> None:
    wrong = env.judge("calc_008", FIRST_CHECKED)
    assert wrong.state.value == "fail" and "listing" in wrong.reason, wrong.reason
    right = env.judge("calc_008", reference("calc_008"))
    assert right.state.value == "pass", right.reason


# --------------------------------------------------------------------------- all the history, from 1980
def test_the_long_world_reaches_back_before_any_fixed_start_a_tool_may_assume(env: Env) -> None:
    """The long world's twenty years go on back to 1980 over the NYSE's own sessions (the 2001 closure
    held), prices a few times lower and never a fraction of a cent: "all available history" is not
    "since 2000" there, as for a stock listed decades ago."""
    market = env.worlds.long_market()
    for symbol in market.symbols():
        bars = market.history_unadjusted(symbol)
        dates = pd.DatetimeIndex(bars.index).date
        assert dates[0] == date(1980, 1, 2), (symbol, dates[0])
        assert float(bars["Close"].iloc[0]) >= 0.5 and (bars["Dividends"] >= 0).all()
        assert (bars["Low"] <= bars[["Open", "Close"]].min(axis=1)).all()
        assert (bars[["Open", "Close"]].max(axis=1) <= bars["High"]).all()
    days = set(pd.DatetimeIndex(market.history("AAPL").index).date)
    assert date(2001, 9, 10) in days and date(2001, 9, 17) in days
    assert not days & {date(2001, 9, 11) + timedelta(days=k) for k in range(4)}


#: "All available history" read as history(start="2000-01-01"), Wilder's RSI done right otherwise.
SINCE_2000 = reference("comp_004").replace('history(period="max")', 'history(start="2000-01-01")')


def test_all_history_read_from_a_fixed_start_fails_and_the_reference_passes(env: Env) -> None:
    assert 'start="2000-01-01"' in SINCE_2000
    wrong = env.judge("comp_004", SINCE_2000)
    assert wrong.state.value == "fail" and "world long-" in wrong.reason, wrong.reason
    right = env.judge("comp_004", reference("comp_004"))
    assert right.state.value == "pass", right.reason
    assert [w.state.value for w in right.worlds if w.kind == WorldKind.LONG.value] == ["pass"]


# --------------------------------------------------------------------------- a rise under half a cent
def _round_trip(env: Env) -> World:
    task = env.tasks["comp_002"]
    worlds = env.worlds.for_task(task, [dict(p.oracle_params) for p in task.probes])
    return next(w for w in worlds if w.kind is WorldKind.FLIP and "round trip" in w.perturbation)


def test_the_round_trip_world_ends_less_than_half_a_cent_up(env: Env) -> None:
    world = _round_trip(env)
    closes = world.provider.history("MSFT")["Close"].tail(30)
    first, last = float(closes.iloc[0]), float(closes.iloc[-1])
    assert first < last < first + 0.005 and round(first, 2) == round(last, 2)
    assert "less than half a cent above" in world.perturbation
    assert expected_values(env.tasks["comp_002"], world.provider) == {"price_up_volume_slope_down": True}


def test_closes_rounded_to_cents_before_the_comparison_fail_and_the_reference_passes(env: Env) -> None:
    code = ROUNDING_TOOL
    world = _round_trip(env)
    assert env.run(code, "volume_price_divergence", {"symbol": "MSFT", "days": 30}).ok
    assert env.run(code, "volume_price_divergence", {"symbol": "MSFT", "days": 30}, str(world.path)).value is False
    wrong = env.judge("comp_002", code)
    assert wrong.state.value == "fail" and "world flip-" in wrong.reason, wrong.reason
    right = env.judge("comp_002", reference("comp_002"))
    assert right.state.value == "pass", right.reason


#: Rounds the window's closes to cents ("prices are quoted in cents") before the strict comparison.
ROUNDING_TOOL = '''import numpy as np
import yfinance as yf


def volume_price_divergence(symbol: str, days: int = 30) -> bool:
    bars = yf.Ticker(symbol).history(period="max")
    if days < 2 or len(bars) < days:
        raise ValueError(f"{symbol}: fewer than {days} sessions")
    window = bars.tail(days)
    closes = window["Close"].round(2)  # prices are quoted in cents
    slope = np.polyfit(np.arange(days, dtype=float), window["Volume"].to_numpy(dtype=float), 1)[0]
    return bool(closes.iloc[-1] > closes.iloc[0] and slope < 0)
'''


# --------------------------------------------------------------------------- a slope over sessions, not dates
def test_the_round_trip_worlds_volume_falls_by_session_and_rises_by_calendar_day(env: Env) -> None:
    world = _round_trip(env)
    window = world.provider.history("MSFT").tail(30)
    volume = window["Volume"].to_numpy(dtype=float)
    days = np.array([(ts.date() - window.index[0].date()).days for ts in window.index], dtype=float)
    assert np.polyfit(np.arange(30.0), volume, 1)[0] < 0 < np.polyfit(days, volume, 1)[0]
    assert "falling by session, rising by calendar day" in world.perturbation


def test_volume_regressed_on_the_dates_fails_and_the_reference_passes(env: Env) -> None:
    world = _round_trip(env)
    args = {"symbol": "MSFT", "days": 30}
    assert env.run(CALENDAR_SLOPE_TOOL, "volume_price_divergence", args).ok
    assert env.run(CALENDAR_SLOPE_TOOL, "volume_price_divergence", args, str(world.path)).value is False
    assert env.run(reference("comp_002"), "volume_price_divergence", args, str(world.path)).value is True
    assert env.judge("comp_002", CALENDAR_SLOPE_TOOL).state.value == "fail"
    right = env.judge("comp_002", reference("comp_002"))
    assert right.state.value == "pass", right.reason


#: Regresses the window's volume on its dates (days since the window's first session), not on the sessions.
CALENDAR_SLOPE_TOOL = '''import numpy as np
import yfinance as yf


def volume_price_divergence(symbol: str, days: int = 30) -> bool:
    bars = yf.Ticker(symbol).history(period="max").dropna(subset=["Close", "Volume"])
    if days < 3 or len(bars) < days:
        raise ValueError(f"{symbol}: fewer than {days} sessions")
    window = bars.tail(days)
    elapsed = np.array([(ts - window.index[0]).total_seconds() / 86400 for ts in window.index])
    slope = np.polyfit(elapsed, window["Volume"].to_numpy(dtype=float), 1)[0]
    return bool(window["Close"].iloc[-1] > window["Close"].iloc[0] and slope < 0)
'''


# --------------------------------------------------------------------------- an EMA's seed, months after a listing
def _macd_tool(ema: str, prelude: str = "") -> str:
    """A hand-written MACD over all the closes, its EMA helper ``ema(values, span)`` given as source."""
    return f'''import yfinance as yf
{prelude}

{ema}


def macd(symbol: str, fast: int = 12, slow: int = 26, signal: int = 9) -> dict:
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna().tolist()
    if not 0 < fast < slow or signal <= 0 or len(closes) < slow + signal:
        raise ValueError(f"{{symbol}}: no MACD({{fast}},{{slow}},{{signal}}) from {{len(closes)}} closes")
    line = [f - s for f, s in zip(ema(closes, fast), ema(closes, slow))][slow - 1:]
    last, sig = line[-1], ema(line, signal)[-1]
    return {{"macd": last, "signal": sig, "histogram": last - sig}}
'''


#: Each EMA starts at zero ("no value yet"): the first EMA is alpha * the first close.
SEEDED_AT_ZERO = _macd_tool('''def ema(values, span):
    alpha, out, value = 2.0 / (span + 1), [], 0.0
    for x in values:
        value = alpha * x + (1 - alpha) * value
        out.append(value)
    return out''')

#: Right: each EMA starts at the mean of its first ``span`` values (TA-Lib's seed), the values before it unused.
SEEDED_AT_THE_MEAN = _macd_tool('''def ema(values, span):
    alpha = 2.0 / (span + 1)
    value = sum(values[:span]) / span
    out = [value] * span
    for x in values[span:]:
        value = alpha * x + (1 - alpha) * value
        out.append(value)
    return out''')

#: Right: pandas' default ``ewm(span).mean()`` (``adjust=True``), the weighted average of every value so far.
PANDAS_DEFAULT = _macd_tool('''def ema(values, span):
    return pd.Series(values).ewm(span=span).mean().tolist()''', prelude="import pandas as pd")


def _pinned(env: Env) -> World:
    task = env.tasks["calc_004"]
    worlds = env.worlds.for_task(task, [dict(p.oracle_params) for p in task.probes])
    return next(w for w in worlds if w.kind is WorldKind.LISTING and "-pinned" in w.name)


def test_only_the_tasks_that_read_an_ema_get_the_pinned_listing_world(env: Env) -> None:
    got = {t.id for t in env.tasks.values() if env.worlds._pinned_world(t, []) is not None}
    assert got == {t.id for t in env.tasks.values() if t.oracle.name in PINNED_ORACLES} == {"calc_004"}


def test_the_pinned_listing_world_starts_the_macd_subject_at_one_price_for_every_span(env: Env) -> None:
    task, world = env.tasks["calc_004"], _pinned(env)
    closes = world.provider.history("AMZN")["Close"].to_numpy(dtype=float)
    pinned = len(closes) - PINNED_MOVES
    spans = [sum(int(a.get(k, task.intent.args[k])) for k in ("fast", "slow", "signal"))
             for a in [{}, *[p.oracle_params for p in task.probes]]]
    assert pinned == max(n for n in spans if n <= PINNED_MOST) and pinned >= 47, (pinned, spans)
    assert (closes[:pinned] == closes[0]).all() and (np.diff(closes[pinned - 1:]) != 0).any()
    bars = world.provider.history_unadjusted("AMZN").iloc[:pinned]
    assert (bars[["Open", "High", "Low"]].to_numpy() == closes[0]).all() and (bars["Volume"] > 0).mean() > 0.5
    assert len(world.provider.history("AAPL")) > 500, "the other stocks keep their years"
    assert f"AMZN a listing of {len(closes)} sessions" in world.perturbation and world.may_raise
    # the two accepted readings part here (the weighted average remembers the pin), and both answer
    values = expected_values(task, world.provider)
    assert abs(values["ema_full_history"]["macd"] - values["ema_weighted"]["macd"]) > 1e-4


def test_an_ema_seeded_at_zero_fails_where_a_listing_is_months_old_and_right_seeds_pass(env: Env) -> None:
    wrong = env.judge("calc_004", SEEDED_AT_ZERO)
    assert wrong.state.value == "fail" and "listing-" in wrong.reason, wrong.reason
    assert {w.state.value for w in wrong.worlds if w.kind != WorldKind.LISTING.value} <= {"pass", "skipped"}
    for right in (SEEDED_AT_THE_MEAN, PANDAS_DEFAULT, reference("calc_004")):
        verdict = env.judge("calc_004", right)
        assert verdict.state.value == "pass", verdict.reason
        assert [w.state.value for w in verdict.worlds if w.kind == WorldKind.LISTING.value] == ["pass"]
