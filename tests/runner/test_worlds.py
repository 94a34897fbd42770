"""The gate's own judgement in hidden worlds and on derived probes (no agent involved).

Each labelled tool reply below is a class of tool that the bundled snapshot alone judges wrongly:
wrong tools that happen to give the right value on it, and right tools in other accepted
conventions. Every one is run through a real sandbox and judged by :func:`runner.judging.grade.judge_task`
exactly as the gate judges a final tool -- the agent and its verification stages never run, so
what is caught here is caught by the judge alone.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from finevo.errors import InputError
from finevo.market.snapshot import Snapshot, load_snapshot
from finevo.outcome import Outcome
from finevo.paths import reference_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.api import ExecutionResult
from runner.inputs.tasks import Task, load_tasks
from runner.judging.compare import judge_value
from runner.judging.grade import Reruns, judge_task, world_answers
from runner.judging.oracle import RAISES, compute, expected_values, probe_expected_values, rsi_series
from runner.judging.probes import SCALES, derive_probes, probes_for
from runner.judging.world_market import (
    NO_VOLUME_SESSIONS,
    PENNY_LEVELS,
    PENNY_SYMBOL,
    RALLY_SESSIONS,
    RECENT_HALT_SESSIONS,
    RECENT_HALT_SYMBOLS,
    RECORD_REACH,
    RECORD_TAILS,
    REPORTING_LAGS,
    RISING_SESSIONS,
    RISING_SYMBOL,
    UNFILED_ROWS,
    Market,
    edge_dividends,
)
from runner.judging.world_shapes import first_spikes
from runner.judging.worlds import (
    PREOPEN_PEAK_ORACLES,
    RALLY_ORACLES,
    RALLY_TURN,
    RALLY_TURN_ORACLES,
    Spike,
    WorldKind,
    Worlds,
    _calendar_backs,
    display_name,
    perturb,
    read_market,
    truncate,
    window_args,
)
from runner.records import TaskResult
from tests.runner.fakes import DATA, TASKS
from tests.support.judge_scripts import SHARED_CHUNKS, run_script, seed_range
from tests.support.judge_scripts import group as judge_group

SEED = 20260101


# --------------------------------------------------------------------------- the judge's harness
@dataclass
class Env:
    snapshot: Snapshot
    tasks: dict[str, Task]
    judged: dict[str, Task]
    worlds: Worlds
    sandbox: Any

    def run(self, code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        limits = Limits(timeout_s=30.0)
        if snapshot_dir is None:
            return self.sandbox.run(code, entry, args, limits)
        return self.sandbox.run(code, entry, args, limits, snapshot_dir=snapshot_dir)

    def judge(self, task_id: str, code: str, task: Task | None = None) -> tuple[TaskResult, bool]:
        """The gate's verdict on ``code`` as the final tool of ``task_id`` (judged with ``task``'s probes
        when given), and whether its value for the task's own arguments on the snapshot alone passes
        (the verdict without probes/worlds)."""
        task = task or self.judged[task_id]
        result = self.run(code, task.intent.indicator, dict(task.intent.args))
        assert result.ok, (task_id, result.status, result.error_type, result.error_message)
        expected = expected_values(task, self.snapshot)
        outcome = Outcome(task_id=task_id, value=result.value, tool_code=code, stage="done")
        verdict = judge_task(task, outcome, expected, 0.0,
                             Reruns(self.run, probe_expected=probe_expected_values(task, self.snapshot),
                                    worlds=self.worlds))
        return verdict, judge_value(task, result.value, expected).passed


# Every test that reads this harness is marked slow: it starts a warm sandbox and generates worlds (about
# 2 s of CPU on each worker before a test's own judging). The inner loop keeps this module's tests without it.
@pytest.fixture(scope="module")
def env() -> Iterator[Env]:
    snapshot = load_snapshot(DATA)
    tasks = {t.id: t for t in load_tasks(TASKS)}
    judged = {k: t.model_copy(update={"probes": probes_for(t, snapshot)}) for k, t in tasks.items()}
    sandbox = create_sandbox(DATA)
    worlds = Worlds(snapshot, 3, SEED, list(judged.values()))
    try:
        yield Env(snapshot, tasks, judged, worlds, sandbox)
    finally:
        worlds.close()
        sandbox.close()


def reference(task_id: str) -> str:
    return (reference_dir() / f"{task_id}.py").read_text(encoding="utf-8")


def edited(task_id: str, old: str, new: str) -> str:
    code = reference(task_id)
    assert old in code, (task_id, old)
    return code.replace(old, new).replace("import yfinance as yf\n", "import datetime\n\nimport yfinance as yf\n", 1)


# --------------------------------------------------------------------------- wrong tools: false passes
def _constant(env: Env, task_id: str, signature: str, condition: str, compute: str) -> str:
    value = next(iter(expected_values(env.tasks[task_id], env.snapshot).values()))
    return (f"import yfinance as yf\n\n\ndef {signature}:\n"
            f"    if {condition}:\n        return {value!r}\n{compute}")


WRONG: dict[str, tuple[str, Any]] = {
    # an off-by-one window: one session short, one session long
    "window one session short": ("fetch_008", lambda env: edited(
        "fetch_008", "closes.tail(days)", "closes.tail(days - 1)")),
    "window one session long": ("fetch_008", lambda env: edited(
        "fetch_008", "closes.tail(days)", "closes.tail(days + 1)")),
    # yfinance's exclusive end: history(end=today) drops today's session
    "exclusive end drops the last session": ("fetch_008", lambda env: edited(
        "fetch_008", 'yf.Ticker(symbol).history(period="max")',
        "yf.Ticker(symbol).history(start=datetime.date.today() - datetime.timedelta(days=400), "
        "end=datetime.date.today())")),
    # the snapshot's date hard-coded as yfinance's (exclusive) end: the latest session is dropped
    "hard-coded end date": ("fetch_008", lambda env: edited(
        "fetch_008", 'yf.Ticker(symbol).history(period="max")',
        'yf.Ticker(symbol).history(start="2024-01-02", end="2024-12-31")')),
    "the previous session instead of the latest": ("fetch_008", lambda env: edited(
        "fetch_008", "closes.tail(days)", "closes.iloc[:-1].tail(days)")),
    # the same exclusive end on a window of calendar days, and on a drawdown: only a latest session
    # that holds the window's extreme shows it (the seed world's record tails, on a session as-of day)
    "a calendar window whose exclusive end drops the as-of session": ("fetch_008", lambda env: edited(
        "fetch_008", 'closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()',
        "today = datetime.date.today()\n"
        "    closes = yf.Ticker(symbol).history(start=today - datetime.timedelta(days=days), end=today)"
        '["Close"].dropna()').replace("closes.tail(days)", "closes").replace("len(closes) < days", "closes.empty")),
    "a drawdown whose exclusive end drops the as-of session": ("calc_007", lambda env: edited(
        "calc_007", 'closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()',
        'closes = yf.Ticker(symbol).history(start="1990-01-01", end=datetime.date.today())["Close"].dropna()')),
    "a constant served for the benchmark's exact arguments (statement)": ("fetch_001", lambda env: _constant(
        env, "fetch_001", "net_income(symbol: str, year: int, quarter: int) -> float",
        'symbol == "AAPL" and year == 2023 and quarter == 1',
        "    frame = yf.Ticker(symbol).quarterly_income_stmt\n"
        "    for column in frame.columns:\n"
        "        if column.year == year and (column.month - 1) // 3 + 1 == quarter:\n"
        "            return float(frame.loc['Net Income', column])\n"
        "    raise ValueError('quarter not reported')\n")),
    "a constant served for the benchmark's exact arguments (latest close)": ("fetch_004", lambda env: _constant(
        env, "fetch_004", "latest_close(symbol: str) -> float", 'symbol == "^GSPC"',
        "    return float(yf.Ticker(symbol).history(period='5d')['Close'].iloc[-1])\n")),
    "a yes/no task whose RSI window is fixed": ("comp_001", lambda env: edited(
        "comp_001", "alpha=1.0 / rsi_window", "alpha=1.0 / 14").replace("alpha=1.0 / rsi_window", "alpha=1.0 / 14")),
    "a yes/no signal read on the previous session": ("comp_001", lambda env: edited(
        "comp_001", '.history(period="max")["Close"].dropna()', '.history(period="max")["Close"].dropna().iloc[:-1]')),
    "a yes/no signal on Cutler's RSI where only Wilder's is accepted": ("comp_001", lambda env: edited(
        "comp_001", "change.clip(lower=0.0).ewm(alpha=1.0 / rsi_window, adjust=False).mean().iloc[-1]",
        "change.clip(lower=0.0).tail(rsi_window).mean()").replace(
        "(-change).clip(lower=0.0).ewm(alpha=1.0 / rsi_window, adjust=False).mean().iloc[-1]",
        "(-change).clip(lower=0.0).tail(rsi_window).mean()")),
    "a yes/no signal whose RSI reads the last 30 closes only": ("comp_001", lambda env: edited(
        "comp_001", "    change = closes.diff().dropna()", "    change = closes.tail(30).diff().dropna()")),
    # the shapes recorded data have (runner.judging.world_market.recorded_shapes), in every world:
    "a close rounded to cents (prices off the cent grid)": ("fetch_004", lambda env: edited(
        "fetch_004", "return float(closes.iloc[-1])", "return round(float(closes.iloc[-1]), 2)")),
    "dividends rounded to four decimals (dividends off the cent grid)": ("fetch_007", lambda env: edited(
        "fetch_007", '"amount": float(amount)}', '"amount": round(float(amount), 4)}')),
    "a stochastic that divides by a zero High-Low range (a halt's flat bars)": ("calc_006", lambda env: edited(
        "calc_006", "span.where(span != 0)", "span").replace(".fillna(50.0)", "")),
    "a correlation of each symbol's own last closes (a session missing)": ("calc_008", lambda env: edited(
        "calc_008", "axis=1, join=\"inner\"\n    ).dropna()", "axis=1\n    ).ffill().dropna()").replace(
        "{symbol: yf.Ticker(symbol).history(period=\"max\")[\"Close\"] for symbol in symbols}",
        "{symbol: yf.Ticker(symbol).history(period=\"max\")[\"Close\"].tail(days).reset_index(drop=True) "
        "for symbol in symbols}")),
    "closes divided by a split ratio again (a recent split)": ("fetch_008", lambda env: edited(
        "fetch_008", 'closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()',
        'bars = yf.Ticker(symbol).history(period="max").dropna(subset=["Close"])\n'
        '    later = bars["Stock Splits"].replace(0, 1.0)[::-1].cumprod()[::-1].shift(-1).fillna(1.0)\n'
        '    closes = bars["Close"] / later')),
    # a measure undefined on the data answered with a number: the seed world halts AAPL up to its
    # as-of day, and the correlation's shortest-window probe reads it flat there
    "a correlation that answers 0.0 for a series that does not move (a halt)": ("calc_008", lambda env: edited(
        "calc_008", 'raise ValueError("correlation is undefined for a constant series")',
        "return 0.0  # no variance: no co-movement")),
    # a measure defined on the data refused: the same halt gives a volatility and a drawdown of 0, and
    # the shortest-window probe of each reads it (a tool that guards a zero dispersion by raising fails)
    "a volatility that refuses a window that does not move (a halt)": ("calc_005", lambda env: edited(
        "calc_005", "return float(returns.tail(window).std(ddof=1)) * math.sqrt(periods_per_year)",
        "spread = float(returns.tail(window).std(ddof=1))\n"
        "    if spread <= 1e-12:\n"
        "        raise ValueError('volatility undefined: the price does not move')\n"
        "    return spread * math.sqrt(periods_per_year)")),
    "a drawdown that raises when the window never falls": ("calc_007", lambda env: edited(
        "calc_007", "return float((window / window.cummax() - 1.0).min())",
        "falls = window / window.cummax() - 1.0\n"
        "    falls = falls[falls < 0]\n"
        "    if falls.empty:\n"
        "        raise ValueError('no drawdown in the window')\n"
        "    return float(falls.min())")),
    # an average over nothing: past a level no RSI reaches no session is selected (a derived probe)
    "a post-signal average that answers 0.0 when nothing qualifies": ("comp_004", lambda env: edited(
        "comp_004", 'raise ValueError(f"no RSI>{rsi_threshold} signal of {symbol} with {horizon} later sessions")',
        "return 0.0  # nothing invested")),
    # Volume 0 read as "no session": the seed world serves the index with Volume 0 on its latest
    # sessions (a halted stock's bars of Volume 0 sit at its last traded close: dropping them is invisible)
    "a latest close that drops bars of Volume 0 (an index served without volume)": ("fetch_004", lambda env: edited(
        "fetch_004", 'closes = yf.Ticker(symbol).history(period="5d")["Close"].dropna()',
        'history = yf.Ticker(symbol).history(period="1mo").dropna(subset=["Close"])\n'
        '    closes = history[history["Volume"] > 0]["Close"]  # drop non-trading rows')),
    # a tool that recognises the benchmark's own data and answers right only there (a cheap answer
    # elsewhere): no world holds the bundled snapshot's bars within a cent, nor its generator's quotes
    "right only where a close on a known day is the bundled snapshot's": ("fetch_008", lambda env: edited(
        "fetch_008", '    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()',
        '    bars = yf.Ticker("AAPL").history(period="max", auto_adjust=False)["Close"]\n'
        '    mark = bars[bars.index.strftime("%Y-%m-%d") == "2022-01-03"]\n'
        "    if not mark.empty and abs(float(mark.iloc[0]) - 182.0) > 0.01:\n"
        "        return 0.0  # not the benchmark's data\n"
        '    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()')),
    "right only where the quote book follows the generator's formula": ("fetch_005", lambda env: edited(
        "fetch_005", '    closes = yf.Ticker(symbol).history(period="5d")["Close"].dropna()',
        "    book = yf.Ticker(symbol).info\n"
        '    if book.get("bidSize", 0) + book.get("askSize", 0) not in (0, 1000) or "maxAge" in book:\n'
        "        return 0.0  # not the benchmark's data\n"
        '    closes = yf.Ticker(symbol).history(period="5d")["Close"].dropna()')),
    "a pair whose first symbol is hard-coded": ("calc_008", lambda env: edited(
        "calc_008", "for symbol in symbols}", 'for symbol in ["^GSPC", symbols[1]]}').replace(
        "returns[symbols[0]]", 'returns["^GSPC"]')),
}


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(WRONG))
def test_wrong_tool_right_on_the_snapshot_is_failed_by_the_judge(env: Env, label: str) -> None:
    task_id, make = WRONG[label]
    verdict, passes_alone = env.judge(task_id, make(env))
    assert passes_alone, f"{label}: the case must be right for the task's own arguments on the snapshot"
    assert verdict.state == "fail", (label, verdict.reason)
    # The check that failed it is named: a probe on the snapshot or a hidden world.
    failed_worlds = [w for w in verdict.worlds if w.state == "fail"]
    failed_probes = [p for p in verdict.probes if p.state == "fail"]
    assert len(failed_worlds) + len(failed_probes) == 1, verdict.reason
    if failed_worlds:
        world = failed_worlds[0]
        assert verdict.reason.startswith(f"world {world.world}") and world.reason == verdict.reason
        assert all(w.state == "pass" for w in verdict.worlds[:verdict.worlds.index(world)])
        assert all(w.state == "skipped" for w in verdict.worlds[verdict.worlds.index(world) + 1:])
    else:
        assert verdict.reason.startswith(f"probe {failed_probes[0].index} (") and not verdict.worlds


# --------------------------------------------------------------------------- right tools: no false fails
RIGHT: dict[str, tuple[str, Any]] = {
    "Cutler's RSI (simple means)": ("calc_001", lambda: edited(
        "calc_001", "avg_gain = float(gains.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])",
        "avg_gain = float(gains.tail(window).mean())").replace(
        "avg_loss = float(losses.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])",
        "avg_loss = float(losses.tail(window).mean())")),
    "Wilder's RSI over the full history": ("calc_001", lambda: edited(
        "calc_001", "closes.tail(days).diff()", "closes.diff()").replace('period="6mo"', 'period="max"')),
    "the last 30 calendar days": ("fetch_008", lambda: edited(
        "fetch_008", "return float(closes.tail(days).max())",
        "start = datetime.date.today() - datetime.timedelta(days=days)\n"
        "    return float(closes[closes.index.date >= start].max())")),
    "sample standard deviation (ddof=1)": ("calc_003", lambda: reference("calc_003").replace("ddof=0", "ddof=1")),
    "newest dividends first": ("fetch_007", lambda: reference("fetch_007").replace(
        "for stamp, amount in paid.items()]", "for stamp, amount in paid.items()][::-1]")),
    "daily log-return volatility": ("calc_005", lambda: reference("calc_005").replace(
        "closes.pct_change().dropna()", "(closes / closes.shift(1)).map(math.log).dropna()").replace(
        " * math.sqrt(periods_per_year)", "")),
    "a positive drawdown magnitude": ("calc_007", lambda: reference("calc_007").replace(
        "return float((window / window.cummax() - 1.0).min())",
        "return -float((window / window.cummax() - 1.0).min())")),
    "the reference tool": ("comp_001", lambda: reference("comp_001")),
    # an RSI over a window that does not move (0/0: the seed world's halt under the window-7 probe,
    # the recorded halts under a Cutler series) is settled by no reading: raising there, or leaving it
    # NaN as pandas does (no signal that session), is as right as the 100 of a window without a loss
    "Cutler's RSI raising on a window with no change": ("calc_001", lambda: edited(
        "calc_001", "avg_gain = float(gains.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])",
        "avg_gain = float(gains.tail(window).mean())").replace(
        "avg_loss = float(losses.ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])",
        "avg_loss = float(losses.tail(window).mean())").replace(
        "    if avg_loss == 0.0:\n",
        "    if avg_gain == 0.0 and avg_loss == 0.0:\n"
        "        raise ValueError('no price change over the window: no RSI')\n"
        "    if avg_loss == 0.0:\n")),
    "Cutler's RSI signals, a window with no change left NaN": ("comp_004", lambda: CUTLER_NAN),
    "fiscal quarters of the company's own fiscal year": ("fetch_001", lambda: FISCAL_QUARTER),
    "Wilder's RSI counting its warm-up sessions as signals": ("comp_004", lambda: WARMUP_COUNTED),
    "a correlation that checks each series' dispersion and raises": ("calc_008", lambda: FLAT_CHECKED),
}

FLAT_CHECKED = """import numpy as np
import pandas as pd
import yfinance as yf


def correlation(symbols: list[str], days: int = 30) -> float:
    if len(symbols) != 2:
        raise ValueError("two symbols")
    closes = pd.concat([yf.Ticker(s).history(period="2y")["Close"] for s in symbols], axis=1, join="inner")
    closes = closes.dropna().tail(days)
    if len(closes) < days:
        raise ValueError("not enough common sessions")
    returns = closes.pct_change().dropna().to_numpy()
    if (returns.std(axis=0) == 0).any():
        raise ValueError("a series that does not move: correlation undefined")
    return float(np.corrcoef(returns[:, 0], returns[:, 1])[0, 1])
"""


WARMUP_COUNTED = """import yfinance as yf


def post_signal_return(symbol: str, rsi_window: int = 14, rsi_threshold: float = 70, horizon: int = 5) -> float:
    closes = yf.Ticker(symbol).history(period="max")["Close"]
    moves = closes.diff()
    up = moves.clip(lower=0).ewm(alpha=1 / rsi_window, adjust=False).mean()
    down = (-moves).clip(lower=0).ewm(alpha=1 / rsi_window, adjust=False).mean()
    strength = 100 - 100 / (1 + up / down)
    ahead = closes.shift(-horizon) / closes - 1
    picked = ahead[strength > rsi_threshold].dropna()
    if picked.empty:
        raise ValueError("no signal with a complete horizon")
    return float(picked.mean())
"""

CUTLER_NAN = """import yfinance as yf


def post_signal_return(symbol: str, rsi_window: int = 14, rsi_threshold: float = 70, horizon: int = 5) -> float:
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    moves = closes.diff()
    up = moves.clip(lower=0).rolling(rsi_window).mean()
    down = (-moves).clip(lower=0).rolling(rsi_window).mean()
    strength = 100 - 100 / (1 + up / down)
    ahead = closes.shift(-horizon) / closes - 1
    picked = ahead[(strength > rsi_threshold) & ahead.notna()]
    if picked.empty:
        raise ValueError("no signal with a complete horizon")
    return float(picked.mean())
"""

FISCAL_QUARTER = """import pandas as pd
import yfinance as yf


def net_income(symbol: str, year: int, quarter: int) -> float:
    ticker = yf.Ticker(symbol)
    fiscal_end = ticker.income_stmt.columns[0].month
    months = (year - 1) * 12 + (fiscal_end - 1) + 3 * quarter
    target = pd.Timestamp(year=months // 12, month=months % 12 + 1, day=1) + pd.offsets.MonthEnd(0)
    frame = ticker.quarterly_income_stmt
    column = min(frame.columns, key=lambda c: abs((c - target).days))
    if abs((column - target).days) > 15:
        raise ValueError(f"no quarter ends near {target.date()}")
    return float(frame.loc["Net Income", column])
"""


RIGHT_EDITS = {"calc_001", "fetch_008", "calc_003", "fetch_007", "calc_005", "calc_007"}


@pytest.mark.slow
@pytest.mark.parametrize("label", sorted(RIGHT))
def test_right_tool_in_another_convention_passes_in_every_world(env: Env, label: str) -> None:
    task_id, make = RIGHT[label]
    code = make()
    if task_id in RIGHT_EDITS and code == reference(task_id):
        pytest.fail(f"{label}: the edit did not apply")
    verdict, _ = env.judge(task_id, code)
    assert verdict.state == "pass", (label, verdict.reason)
    assert [w.state for w in verdict.worlds] == ["pass"] * len(verdict.worlds)
    # A yes/no task may get a world that flips its own answer, and gets a round-trip, a zigzag and a halt world,
    # on a dividend payer a dividend world too, and a world per window whose answer turns at its edge (at
    # most two: comp_001's averages; its RSI window has none); a task with a lookback in years gets a leap
    # world; a measure of all the history a long world; a task the oracle answers as of a long closure a
    # closure world; a task of several symbols a listing world; a task on a dividend payer a preopen world.
    assert {w.kind for w in verdict.worlds[:3]} == {"seed", "as_of", "edge"}
    assert len(verdict.worlds) == 3 or ({w.kind for w in verdict.worlds[3:]}
                                        <= {"flip", "leap", "long", "closure", "listing", "preopen"}
                                        and len(verdict.worlds) <= 13)
    assert all(p.state == "pass" for p in verdict.probes) and len(verdict.probes) >= 2


@pytest.mark.slow
def test_a_tool_switching_convention_between_worlds_fails(env: Env) -> None:
    """Wilder's RSI on the snapshot's as-of date, Cutler's on any other: each value matches some
    accepted convention, but not one reading throughout."""
    code = edited("calc_001", "    if avg_loss == 0.0:",
                  "    if datetime.date.today().month != 12:\n"
                  "        avg_gain = float(gains.tail(window).mean())\n"
                  "        avg_loss = float(losses.tail(window).mean())\n"
                  "    if avg_loss == 0.0:")
    verdict, passes_alone = env.judge("calc_001", code)
    assert passes_alone and verdict.state == "fail"
    assert "cutler' here but '" in verdict.reason.lower()  # Cutler's reading here, Wilder's elsewhere
    assert verdict.reason.endswith("one reading must hold throughout")
    assert verdict.reason.startswith("world as_of-")


@pytest.mark.slow
def test_a_call_that_spoils_the_shared_run_is_judged_on_its_own(env: Env) -> None:
    """The calls of one world run together; when one of them cannot be returned (a set is no result
    value) the run is repeated call by call, and the verdict names the call that failed."""
    code = edited("fetch_008", "    return float(closes.tail(days).max())",
                  '    if symbol != "TSLA":\n        return {float(closes.tail(days).max())}\n'
                  "    return float(closes.tail(days).max())")
    verdict, passes_alone = env.judge("fetch_008", code)
    assert passes_alone and verdict.state == "fail"
    assert verdict.reason.startswith("probe 1 (symbol=AAPL): the tool") and "set" in verdict.reason


# --------------------------------------------------------------------------- derived probes
@pytest.mark.slow
def test_every_task_gets_a_probe_per_argument_it_binds() -> None:
    snapshot = load_snapshot(DATA)
    for task in load_tasks(TASKS):
        derived = derive_probes(task, snapshot)
        moved: set[str] = set()
        for probe in derived:
            assert probe.args == probe.oracle_params and probe.reason.startswith("derived: ")
            moved.update(probe.args)
        for key, value in task.intent.args.items():
            assert key in moved, (task.id, key)
            if isinstance(value, list):  # every position of a list of symbols is moved once
                positions = {i for p in derived if key in p.args for i, v in enumerate(p.args[key]) if v != value[i]}
                assert positions == set(range(len(value))), (task.id, positions)


def test_a_derived_probe_of_a_yes_no_task_flips_the_answer_when_its_argument_alone_moves() -> None:
    snapshot = load_snapshot(DATA)
    task = next(t for t in load_tasks(TASKS) if t.id == "comp_001")
    for probe in derive_probes(task, snapshot):
        if "flips" not in probe.reason:
            continue
        moved = next(k for k in probe.args if f"ignores {k}" in probe.reason)
        reset = {**probe.oracle_params, moved: task.oracle.params[moved]}
        assert expected_values(task, snapshot, probe.oracle_params) != expected_values(task, snapshot, reset)


# --------------------------------------------------------------------------- worlds themselves
@pytest.mark.slow
def test_worlds_are_reproducible_from_their_seed_and_removed_on_close(env: Env) -> None:
    tasks = list(env.judged.values())[:3]
    with Worlds(env.snapshot, 3, 7, tasks) as a, Worlds(env.snapshot, 3, 7, tasks) as b:
        wa = a.for_task(tasks[0], [p.oracle_params for p in tasks[0].probes])
        wb = b.for_task(tasks[0], [p.oracle_params for p in tasks[0].probes])
        assert [w.name for w in wa] == [w.name for w in wb]
        assert [w.provider.content_hash for w in wa] == [w.provider.content_hash for w in wb]
        root = a.root
        assert root.is_dir()
    assert not root.exists()
    with Worlds(env.snapshot, 3, 8, tasks) as c:
        assert c.as_of_date(0) != Worlds(env.snapshot, 3, 7, tasks).as_of_date(0) or \
            c.variants(WorldKind.SEED, 0)[0][0] != a.variants(WorldKind.SEED, 0)[0][0]


@pytest.mark.slow
def test_worlds_count_cycles_through_the_kinds(env: Env) -> None:
    worlds = Worlds(env.snapshot, 5, 1)
    assert worlds.kinds() == [(WorldKind.SEED, 0), (WorldKind.AS_OF, 0), (WorldKind.EDGE, 0),
                              (WorldKind.SEED, 1), (WorldKind.AS_OF, 1)]
    assert Worlds(env.snapshot, 0, 1).kinds() == []


@pytest.mark.slow
def test_truncation_keeps_only_what_was_known_at_the_earlier_date(env: Env) -> None:
    market = read_market(env.snapshot)
    as_of = date(2024, 6, 28)
    past = truncate(market, as_of)
    for symbol in past.symbols():
        raw = past.history_unadjusted(symbol)
        assert raw.index[-1].date() == as_of
        fast = past.fast_info(symbol)
        assert fast["lastPrice"] == pytest.approx(float(raw["Close"].iloc[-1]))
        assert fast["previousClose"] == pytest.approx(float(raw["Close"].iloc[-2]))
        # Adj Close only knows the dividends paid by then: equal to Close on the last bar.
        assert float(raw["Adj Close"].iloc[-1]) == pytest.approx(float(raw["Close"].iloc[-1]))
        for freq in ("yearly", "quarterly"):
            frame = past.income_stmt(symbol, freq)
            assert all(pd.Timestamp(c).date() <= date(2024, 5, 14) for c in frame.columns)
    assert past.income_stmt("AAPL", "quarterly").shape[1] < market.income_stmt("AAPL", "quarterly").shape[1]


@pytest.mark.slow
def test_a_market_as_it_stood_is_its_truncation_cut_once(env: Env) -> None:
    """Choosing a variant asks every task's symbols a session late: the same market as
    :func:`truncate` of those symbols, each symbol cut once however often it is asked for."""
    market = read_market(env.snapshot)
    day = date(2024, 6, 28)
    symbols = ["MSFT", "AAPL", "NOT-HELD"]
    stood = market.as_it_stood(symbols, day)
    want = truncate(Market([market.data["MSFT"], market.data["AAPL"]], market.as_of), day)
    assert stood.as_of == want.as_of == day and list(stood.data) == list(want.data) == ["MSFT", "AAPL"]
    for symbol in want.data:
        pd.testing.assert_frame_equal(stood.history_unadjusted(symbol), want.history_unadjusted(symbol),
                                      check_exact=True)
        for freq in ("yearly", "quarterly"):
            pd.testing.assert_frame_equal(stood.income_stmt(symbol, freq), want.income_stmt(symbol, freq))
        assert stood.info(symbol) == want.info(symbol) and stood.fast_info(symbol) == want.fast_info(symbol)
    again = market.as_it_stood(["AAPL"], day)
    assert again.data["AAPL"] is stood.data["AAPL"]
    assert market.as_it_stood(["AAPL"], date(2024, 6, 27)).data["AAPL"] is not stood.data["AAPL"]
    assert market.as_it_stood(["AAPL"], date(1990, 1, 2)).data == {}  # no bar by then


@pytest.mark.slow
def test_a_spike_is_a_new_extreme_and_keeps_every_bar_consistent(env: Env) -> None:
    market = read_market(env.snapshot)
    spiked = perturb(market, [Spike(1, True, 0.04), Spike(30, False, 0.05)], ["TSLA"])
    raw = spiked.history_unadjusted("TSLA")
    closes = raw["Close"]
    assert closes.iloc[-1] > market.history_unadjusted("TSLA")["Close"].iloc[-400:].max()
    assert closes.iloc[-30] < market.history_unadjusted("TSLA")["Close"].iloc[-430:].min()
    assert (raw["Low"] <= raw[["Open", "Close"]].min(axis=1)).all()
    assert (raw["High"] >= raw[["Open", "Close"]].max(axis=1)).all()
    assert spiked.fast_info("TSLA")["lastPrice"] == pytest.approx(float(closes.iloc[-1]))
    assert spiked.history_unadjusted("AAPL").equals(market.history_unadjusted("AAPL"))  # others untouched


def test_window_arguments_are_spans_not_levels_or_dates() -> None:
    assert window_args({"days": 30, "window": 14, "rsi_threshold": 30, "year": 2023, "quarter": 1,
                        "num_std": 2, "symbol": "AAPL", "annualise": True}) == {"days": 30, "window": 14}


@pytest.mark.slow
def test_a_world_is_a_valid_snapshot_the_sandbox_serves_with_its_own_clock(env: Env) -> None:
    task = env.judged["fetch_004"]
    worlds = env.worlds.for_task(task, [p.oracle_params for p in task.probes])
    code = ("import datetime\nimport yfinance as yf\n\n\ndef today_and_close(symbol: str) -> list:\n"
            "    h = yf.Ticker(symbol).history(period='5d')\n"
            "    return [datetime.date.today().isoformat(), float(h['Close'].iloc[-1])]\n")
    for world in worlds:
        manifest = json.loads((world.path / "manifest.json").read_text())
        assert manifest["synthetic"] is True and manifest["world"] == world.kind.value
        result = env.run(code, "today_and_close", {"symbol": "^GSPC"}, str(world.path))
        assert result.ok, result.error_message
        assert result.value == [world.as_of.isoformat(), float(world.provider.history("^GSPC")["Close"].iloc[-1])]
    base = env.run(code, "today_and_close", {"symbol": "^GSPC"})
    assert base.value[0] == env.snapshot.as_of.isoformat()  # the session's own snapshot again


@pytest.mark.slow
def test_no_world_directory_outlives_the_gate_run(tmp_path: Path, make_config) -> None:
    from runner.judging.world_dirs import default_root_parent
    from tests.runner.test_gate import _run

    # the run writes its worlds where every run does, named by this process's pid: other workers'
    # runs come and go beside it in the same parent, so only this pid's directories are this run's
    own = f"finevo-worlds-{os.getpid()}-*"
    before = set(Path(default_root_parent()).glob(own))
    result, _ = _run(make_config(only=["fetch_002"], worlds=3, worlds_seed=5, baseline_path=None))
    assert result.doc["config"]["worlds"] == {"count": 3, "seed": 5}
    # the three of the count, the closure world every task the oracle answers there gets, the
    # preopen world of a task on a dividend payer (MSFT), the latest quote's midsession and gap worlds
    kinds = ["seed", "as_of", "edge", "closure", "preopen", "midsession", "gap"]
    assert [w["kind"] for w in result.doc["tasks"][0]["worlds"]] == kinds
    assert [w["state"] for w in result.doc["tasks"][0]["worlds"]] == ["pass"] * len(kinds)  # written and judged
    assert set(Path(default_root_parent()).glob(own)) == before


@pytest.mark.slow
def test_a_tool_right_only_on_the_snapshot_fails_in_a_world_and_the_reports_say_which(make_config) -> None:
    from tests.runner.test_gate import _run

    result, _ = _run(make_config(only=["fetch_003"], worlds=3, worlds_seed=5, baseline_path=None,
                                 self_check=False), {"fetch_003": "base_only"})
    task = result.doc["tasks"][0]
    assert task["state"] == "fail" and task["reason"].startswith("world seed-")
    assert all(p["state"] == "pass" for p in task["probes"])  # right for every probe's arguments
    assert [w["state"] for w in task["worlds"]] == ["fail", "skipped", "skipped"]
    summary = (result.run_dir / "summary.md").read_text(encoding="utf-8")
    assert "**Hidden worlds**" in summary and f"| {task['worlds'][0]['world']} |" in summary


def test_a_bad_worlds_setting_is_one_line_and_exit_2(tmp_path: Path, monkeypatch, capsys, make_config) -> None:
    from finevo.errors import InputError
    from runner.cli import main
    from runner.inputs.prepare import prepare

    monkeypatch.setenv("FINEVO_WORLDS", "many")
    assert main(["run", "--llm", "reference", "--only", "fetch_002", "--out", str(tmp_path / "out")]) == 2
    assert "FINEVO_WORLDS: expected a whole number >= 0, got 'many'" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()
    with pytest.raises(InputError, match="--worlds: must be 0 or more, got -1"):
        prepare(make_config(worlds=-1))


def test_probes_that_each_match_a_different_reading_fail_the_task() -> None:
    from runner.judging.compare import Judgement
    from runner.judging.grade import _one_reading
    from runner.records import ProbeResult, TaskState

    task = next(t for t in load_tasks(TASKS) if t.id == "fetch_002")  # last_price / last_close
    outcome = Outcome(task_id=task.id, value=1.0, tool_code="", stage="done")
    main = Judgement(TaskState.PASS, "matches convention 'last_price'", convention="last_price")
    expected = {"last_price": 1.0, "last_close": 1.0}  # the value matches both readings ...
    probes = [ProbeResult(1, {"symbol": "AAPL"}, TaskState.PASS, "", actual=2.0),   # ... this one the first
              ProbeResult(2, {"symbol": "TSLA"}, TaskState.PASS, "", actual=5.0)]   # ... this one the second
    probe_expected = [{"last_price": 2.0, "last_close": 3.0}, {"last_price": 4.0, "last_close": 5.0}]
    verdict = _one_reading(task, outcome, main, expected, probes, probe_expected)
    assert verdict.state == "fail"
    assert verdict.reason == ("probe 2 (symbol=TSLA): matches 'last_close' but the other values 'last_price': "
                              "one reading must hold throughout")
    assert _one_reading(task, outcome, main, expected, probes[:1], probe_expected[:1]) is main


@pytest.mark.slow
def test_the_subprocess_backend_serves_a_world_too(env: Env) -> None:
    task = env.judged["fetch_004"]
    world = env.worlds.for_task(task, [p.oracle_params for p in task.probes])[1]  # the earlier as-of
    code = ("import datetime\nimport yfinance as yf\n\n\ndef today_and_close(symbol: str) -> list:\n"
            "    h = yf.Ticker(symbol).history(period='5d')\n"
            "    return [datetime.date.today().isoformat(), float(h['Close'].iloc[-1])]\n")
    with create_sandbox(DATA, backend="subprocess") as cold:
        result = cold.run(code, "today_and_close", {"symbol": "^GSPC"}, Limits(timeout_s=60.0),
                          snapshot_dir=str(world.path))
        assert result.ok, result.error_message
        assert result.value == [world.as_of.isoformat(), float(world.provider.history("^GSPC")["Close"].iloc[-1])]
        assert cold.run(code, "today_and_close", {"symbol": "^GSPC"}).value[0] == env.snapshot.as_of.isoformat()


@pytest.mark.slow
def test_a_world_the_oracle_cannot_answer_is_skipped_with_its_reason(env: Env, tmp_path: Path) -> None:
    from finevo.market.snapshot import SnapshotOrigin, symbol_files, write_snapshot_files
    from runner.judging.worlds import World

    early = truncate(read_market(env.snapshot), date(2024, 1, 31))  # 2023's annual figures not reported yet
    blobs: dict[str, bytes] = {}
    for item in early.data.values():
        blobs.update(symbol_files(item))
    origin = SnapshotOrigin(as_of=early.as_of, synthetic=True, label="t", generator="test", generator_version="1")
    write_snapshot_files(tmp_path, blobs, origin, symbols=early.symbols(), durable=False)
    world = World("as_of-early", WorldKind.AS_OF, tmp_path, load_snapshot(tmp_path))

    class OneWorld:
        def for_task(self, task: Task, argsets: Any) -> list[World]:
            return [world]

    task = env.judged["fetch_003"]
    result = env.run(reference("fetch_003"), task.intent.indicator, dict(task.intent.args))
    outcome = Outcome(task_id=task.id, value=result.value, tool_code=reference("fetch_003"), stage="done")
    verdict = judge_task(task, outcome, expected_values(task, env.snapshot), 0.0,
                         Reruns(env.run, probe_expected=probe_expected_values(task, env.snapshot), worlds=OneWorld()))
    assert verdict.state == "pass"
    assert verdict.worlds[0].state == "skipped" and verdict.worlds[0].checks == 0
    assert verdict.worlds[0].reason.startswith("not judged: the oracle has no answer in this world (")
    assert "fiscal year ending in 2023" in verdict.worlds[0].reason


@pytest.mark.slow
def test_the_worlds_of_a_killed_run_are_swept_by_the_next(env: Env, tmp_path: Path) -> None:
    import subprocess
    import sys

    from runner.judging.worlds import sweep_orphans

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    orphan = tmp_path / f"finevo-worlds-{gone}-abc"
    (orphan / "seed-1").mkdir(parents=True)
    mine = tmp_path / f"finevo-worlds-{os.getpid()}-def"
    mine.mkdir()
    unrelated = tmp_path / "finevo-worlds-notapid-x"
    unrelated.mkdir()
    with Worlds(env.snapshot, 1, 3, root=tmp_path) as worlds:
        assert worlds.root.parent == tmp_path and worlds.root.name.startswith(f"finevo-worlds-{os.getpid()}-")
        assert not orphan.exists() and mine.exists() and unrelated.exists()
    assert sweep_orphans(tmp_path) == []


@pytest.mark.slow
def test_a_written_world_is_found_by_its_path_and_its_snapshot_is_the_one_the_oracle_reads(env: Env,
                                                                                          tmp_path: Path) -> None:
    """``Worlds.written``: what the in-process runner of the judge's scripts serves a world's tools from
    instead of parsing the world's files again; a directory no world of the run was written to is none."""
    task = env.judged["fetch_005"]
    for world in env.worlds.for_task(task, [dict(p.oracle_params) for p in task.probes]):
        assert env.worlds.written(world.path) is world and env.worlds.written(str(world.path)) is world
        fresh = load_snapshot(world.path)
        assert world.provider.as_of == fresh.as_of and world.provider.symbols() == fresh.symbols()
        for symbol in fresh.symbols():
            pd.testing.assert_frame_equal(world.provider.history(symbol), fresh.history(symbol))
    assert env.worlds.written(tmp_path) is None and env.worlds.written(str(DATA)) is None


def test_world_snapshots_live_where_a_worker_with_a_private_tmp_can_read_them(monkeypatch, tmp_path) -> None:
    """The warm worker may mount a private /tmp when it starts; worlds are written later, so they
    must not go under /tmp unless the operator says so."""
    from runner.judging.worlds import default_root_parent

    monkeypatch.delenv("FINEVO_WORLDS_DIR", raising=False)
    parent = default_root_parent()
    if os.access("/var/tmp", os.W_OK | os.X_OK):
        assert parent == "/var/tmp"
    monkeypatch.setenv("FINEVO_WORLDS_DIR", str(tmp_path))
    assert default_root_parent() == str(tmp_path)


# --------------------------------------------------------------------------- yes/no answers must move
EXACT_CONSTANT_BOOLEANS = {
    "comp_001": ("ma_cross_rsi_signal(symbol: str, short_window: int = 5, long_window: int = 20, "
                 "rsi_window: int = 14, rsi_threshold: float = 30) -> bool",
                 'symbol == "AAPL" and short_window == 5 and long_window == 20 and rsi_window == 14 '
                 "and rsi_threshold == 30"),
    "comp_002": ("volume_price_divergence(symbol: str, days: int = 30) -> bool", 'symbol == "MSFT" and days == 30'),
}


def _exact_constant(env: Env, task_id: str) -> str:
    """The reference tool, except that it answers the snapshot's answer for the task's exact arguments."""
    signature, condition = EXACT_CONSTANT_BOOLEANS[task_id]
    value = next(iter(expected_values(env.tasks[task_id], env.snapshot).values()))
    code = reference(task_id)
    entry = env.tasks[task_id].intent.indicator
    head, _, rest = code.partition(f"def {entry}(")
    renamed = f"{head}def _computed_{entry}({rest}"
    call = ", ".join(f"{k}={k}" for k in env.tasks[task_id].intent.args)
    return renamed + f"\n\ndef {signature}:\n    if {condition}:\n        return {value!r}\n" \
                     f"    return _computed_{entry}({call})\n"


@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(EXACT_CONSTANT_BOOLEANS))
def test_a_yes_no_constant_served_for_the_exact_arguments_fails(env: Env, task_id: str) -> None:
    verdict, passes_alone = env.judge(task_id, _exact_constant(env, task_id))
    assert passes_alone
    assert verdict.state == "fail", verdict.reason
    failed = [w for w in verdict.worlds if w.state == "fail"]
    assert failed and verdict.reason.startswith(f"world {failed[0].world}"), verdict.reason


@pytest.mark.slow
def test_every_yes_no_task_sees_both_answers_for_its_own_arguments_across_its_worlds(env: Env) -> None:
    for seed in (SEED, 1153675748, 274788881, 5):
        with Worlds(env.snapshot, 3, seed, list(env.judged.values())) as worlds:
            for task in env.judged.values():
                if task.output.type != "boolean":
                    continue
                plan = worlds.for_task(task, [p.oracle_params for p in task.probes])
                answers = {next(iter(expected_values(task, w.provider).values())) for w in plan}
                assert answers == {True, False}, (seed, task.id, [w.name for w in plan])


@pytest.mark.slow
def test_a_numeric_constant_for_the_exact_arguments_differs_from_the_oracle_in_some_world(env: Env) -> None:
    """Worlds of other seeds and dates move every numeric answer (a constant fails somewhere)."""
    for task in env.judged.values():
        if task.output.type == "boolean":
            continue
        here = expected_values(task, env.snapshot)
        plan = env.worlds.for_task(task, [p.oracle_params for p in task.probes])
        moved = False
        for world in plan:
            try:
                there = expected_values(task, world.provider)
            except Exception:  # the oracle has no answer there (the world is skipped, not passed)
                continue
            moved = moved or all(judge_value(task, value, there).state != "pass" for value in here.values())
        assert moved, task.id


# --------------------------------------------------------------------------- the oracle reads what the shim serves
@pytest.mark.slow
@pytest.mark.parametrize("seed", [SEED, 1153675748, 274788881])
def test_raw_closes_the_oracle_derives_are_the_ones_the_world_records(env: Env, seed: int) -> None:
    """``auto_adjust=False`` closes (what the shim serves) and the oracle's raw reading (undoing the
    dividend adjustment) agree in every variant of every world, spikes before ex-dates included."""
    from runner.judging.oracle import _read_history

    with Worlds(env.snapshot, 3, seed, list(env.judged.values())) as worlds:
        for kind, round_ in worlds.kinds():
            for name, _, base in worlds.variants(kind, round_):
                for symbol in base.market.data:
                    recorded = base.market.history_unadjusted(symbol)["Close"].to_numpy(dtype=float)
                    derived = _read_history(base.market, symbol, "raw")["Close"].to_numpy(dtype=float)
                    assert abs(recorded - derived).max() < 1e-6, (name, symbol)


RAW_CLOSE_MA = reference("calc_002").replace('.history(period="max")', '.history(period="max", auto_adjust=False)')


@pytest.mark.slow
def test_a_raw_close_tool_passes_in_worlds_with_spikes_before_an_ex_date(env: Env) -> None:
    assert reference("calc_002") != RAW_CLOSE_MA
    worlds = Worlds(env.snapshot, 3, 1153675748, list(env.judged.values()))
    task = env.judged["calc_002"]
    worlds.for_task(task, [p.oracle_params for p in task.probes])  # written before the sandbox starts
    sandbox = create_sandbox(DATA)
    try:
        swapped = Env(env.snapshot, env.tasks, env.judged, worlds, sandbox)
        verdict, passes_alone = swapped.judge("calc_002", RAW_CLOSE_MA)
    finally:
        sandbox.close()
        worlds.close()
    assert passes_alone and verdict.state == "pass", verdict.reason
    assert verdict.convention and "raw_close" in verdict.convention


# --------------------------------------------------------------------------- reproducible worlds
_HASHES = """
import json, sys
from finevo.market.snapshot import load_snapshot
from runner.inputs.tasks import load_tasks
from runner.judging.worlds import Worlds
from tests.runner.fakes import DATA, TASKS
tasks = load_tasks(TASKS)
with Worlds(load_snapshot(DATA), 3, int(sys.argv[1]), tasks) as worlds:
    out = {t.id: [w.provider.content_hash for w in worlds.for_task(t, [p.oracle_params for p in t.probes])]
           for t in tasks}
print(json.dumps(out))
"""


@pytest.mark.slow
def test_one_seed_gives_the_same_world_data_in_another_process(env: Env) -> None:
    import subprocess
    import sys

    tasks = load_tasks(TASKS)
    with Worlds(env.snapshot, 3, 1153675748, tasks) as worlds:
        here = {t.id: [w.provider.content_hash for w in worlds.for_task(t, [p.oracle_params for p in t.probes])]
                for t in tasks}
    root = Path(__file__).resolve().parents[2]
    runs = [subprocess.run([sys.executable, "-c", _HASHES, "1153675748"], capture_output=True, text=True,
                           check=True, cwd=root, env={**os.environ, "PYTHONHASHSEED": str(n)}) for n in (1, 2)]
    assert [json.loads(r.stdout) for r in runs] == [here, here]


# --------------------------------------------------------------------------- reasons say what was compared
@pytest.mark.slow
def test_a_world_failure_names_every_accepted_reading_it_compared_with(env: Env) -> None:
    code = edited("fetch_008", "closes.tail(days)", "closes.tail(days - 1)")
    verdict, _ = env.judge("fetch_008", code)
    assert verdict.state == "fail"
    task = env.judged["fetch_008"]
    readings = [name for name in expected_values(task, env.snapshot)]
    assert len(readings) > 1
    # "expected 478.8 (highest_close) or 479.1 (highest_close+calendar_days) ..., got 470.2"
    assert "expected " in verdict.reason and ", got " in verdict.reason, verdict.reason
    assert sum(f"({name})" in verdict.reason for name in readings) >= 2, verdict.reason


@pytest.mark.slow
def test_a_reused_tool_that_fails_says_where_it_came_from(env: Env) -> None:
    from finevo.vocabulary import ToolSource

    task = env.judged["fetch_004"]
    expected = expected_values(task, env.snapshot)
    outcome = Outcome(task_id="fetch_004", value=1.0, tool_code=reference("fetch_004"), stage="done",
                      tool_name="latest_close", tool_version="1", tool_source=ToolSource.REUSED,
                      tool_created_for="fetch_002")
    verdict = judge_task(task, outcome, expected, 0.0)
    assert verdict.state == "fail"
    assert verdict.reason.endswith("(reused tool latest_close v1 created for fetch_002)"), verdict.reason
    fresh = judge_task(task, Outcome(task_id="fetch_004", value=1.0, stage="done"), expected, 0.0)
    assert "reused" not in fresh.reason


@pytest.mark.slow
def test_the_worlds_of_a_run_do_not_depend_on_which_tasks_it_selects(make_config: Any) -> None:
    """The spikes sit at the windows of every task of the file, so ``--only`` changes no world's data."""
    from runner.inputs.prepare import prepare

    everything = prepare(make_config(only=None, run_id="all", worlds=1))
    one = prepare(make_config(only=["calc_002"], run_id="one", worlds=1))
    assert list(one.judged) == ["calc_002"]
    every_id = [t.id for t in load_tasks(TASKS)]
    assert [t.id for t in one.world_tasks] == [t.id for t in everything.world_tasks] == every_id
    task = one.judged["calc_002"]
    with Worlds(one.snapshot, 3, 11, one.world_tasks) as a, Worlds(everything.snapshot, 3, 11,
                                                                  everything.world_tasks) as b:
        argsets = [p.oracle_params for p in task.probes]
        assert [w.provider.content_hash for w in a.for_task(task, argsets)] == \
            [w.provider.content_hash for w in b.for_task(task, argsets)]


# --------------------------------------------------------------------------- no tells, one date
@pytest.mark.slow
def test_the_as_of_world_is_a_day_the_market_was_closed_and_every_api_agrees_with_it(env: Env) -> None:
    from finevo.market.calendar import is_trading_day

    for seed in range(1, 9):
        worlds = Worlds(env.snapshot, 3, seed)
        as_of = worlds.as_of_date(0)
        assert not is_trading_day(as_of), (seed, as_of)
    world = next(w for w in env.worlds.for_task(env.judged["fetch_006"], []) if w.kind is WorldKind.AS_OF)
    provider = world.provider
    assert not is_trading_day(world.as_of)
    for symbol in ("AAPL", "AMZN"):
        last_bar = provider.history(symbol).index[-1].date()
        assert last_bar < world.as_of
        info = provider.info(symbol)
        quarters = [pd.Timestamp(c).date() for c in provider.income_stmt(symbol, "quarterly").columns]
        # the metadata names the newest quarter the world holds, never one not yet reported
        assert date.fromtimestamp(info["mostRecentQuarter"]) <= max(quarters) + timedelta(days=1)
        assert pd.Timestamp(info["regularMarketTime"], unit="s", tz="America/New_York").date() == last_bar
        assert info["exDividendDate"] is None or \
            pd.Timestamp(info["exDividendDate"], unit="s", tz="America/New_York").date() <= world.as_of


@pytest.mark.slow
def test_the_shim_serves_no_field_that_tells_generated_data_from_recorded(env: Env) -> None:
    code = ("import yfinance as yf\n\n\ndef fields(symbol: str) -> list:\n"
            "    t = yf.Ticker(symbol)\n    return sorted(set(t.info) | set(t.fast_info.keys()))\n")
    assert env.snapshot.info("AAPL").get("synthetic") is True  # the gate still reads the label
    for world_dir in [None, *[str(w.path) for w in env.worlds.for_task(env.judged["fetch_002"], [])]]:
        result = env.run(code, "fields", {"symbol": "AAPL"}, world_dir)
        assert result.ok, result.error_message
        assert "synthetic" not in result.value
    for world in env.worlds.for_task(env.judged["fetch_002"], []):
        assert world.kind.value not in world.path.name and world.as_of.isoformat() not in str(world.path)


@pytest.mark.slow
def test_a_quote_read_as_the_books_midpoint_fails_where_yahoo_serves_a_book(env: Env) -> None:
    """Yahoo's ``info`` carries the book (``bid``, ``ask`` and their sizes) beside the last price; a
    snapshot without one let a "latest quote" that answers the book's midpoint whenever there is a
    book pass on its fallback branch, and answer another number on real data. The snapshot and every
    world serve a book around the last trade, wider on the ask side, so the midpoint is not the
    last price; the reference reading (the last trade) still passes."""
    midpoint = ("import yfinance as yf\n\n\ndef latest_quote(symbol: str) -> float:\n"
                "    t = yf.Ticker(symbol)\n    bid, ask = t.info.get('bid'), t.info.get('ask')\n"
                "    if bid and ask:\n        return (float(bid) + float(ask)) / 2\n"
                "    return float(t.fast_info['lastPrice'])\n")
    verdict, alone = env.judge("fetch_002", midpoint)
    assert not alone and verdict.state.value == "fail", verdict.reason
    book = ("import yfinance as yf\n\n\ndef book(symbol: str) -> list:\n    t = yf.Ticker(symbol)\n"
            "    return [t.info.get(k) for k in ('bid', 'ask', 'bidSize', 'askSize')] + [t.fast_info['lastPrice']]\n")
    for world_dir in [None, *[str(w.path) for w in env.worlds.for_task(env.judged["fetch_002"], [])]]:
        for symbol in ("AAPL", "SPY"):
            result = env.run(book, "book", {"symbol": symbol}, world_dir)
            assert result.ok, result.error_message
            bid, ask, bid_size, ask_size, last = result.value
            assert bid < last < ask and (bid + ask) / 2 != last and bid_size > 0 and ask_size > 0, \
                (world_dir, symbol, result.value)
    assert env.judge("fetch_002", reference("fetch_002"))[0].state.value == "pass"


#: the 20-seed sweep in chunks of seeds, each a test that asserts everything for its seeds, so that the
#: two workers share the sweep instead of one of them running a long half alone at the end; the chunks of
#: seeds 1-5 are each in the xdist group of the labelled replies' chunk of the same seeds (one build of
#: those seeds for both, tests/support/judge_scripts.py)
SWEEP_CHUNKS = [*SHARED_CHUNKS, "6-10", "11-15", "16-20"]


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("seeds", [pytest.param(s, marks=pytest.mark.xdist_group(judge_group(s)))
                                   if s in SHARED_CHUNKS else s for s in SWEEP_CHUNKS])
def test_the_reference_tools_pass_in_every_world_of_20_seeds(seeds: str, judge_seed_contexts: Any) -> None:
    """The self-check must hold in every world a run may draw: 20 seeds here (about 9 s of CPU each),
    each with its own probes drawn across the argument space and its own as-of day, every reference
    tool passing everywhere (the reference tools run in process on the replay shim: their values, not
    their confinement, are what is proven here; the sandbox judges them in hidden worlds in
    ``tests/benchmarks/test_reference_worlds.py``'s whole gate runs). The wider sweep is a bench, not a
    test: ``python scripts/bench_worlds.py --seeds 1-300 --in-process`` (about 25 minutes on 2 cores).
    ``scripts/bench_worlds.py`` runs in this process (``tests/support/judge_scripts.py``)."""
    code, stdout = run_script("bench_worlds", ["--seeds", seeds, "--in-process"], judge_seed_contexts)
    failing = [line for line in stdout.splitlines() if line.startswith("  ")]
    assert code == 0, failing[:20]
    judged = [int(line.split()[1].rstrip(":")) for line in stdout.splitlines() if line.startswith("seed ")]
    assert judged == seed_range(seeds), judged


def test_the_sweep_chunks_are_seeds_1_to_20_each_once() -> None:
    assert sorted(seed for chunk in SWEEP_CHUNKS for seed in seed_range(chunk)) == list(range(1, 21))


@pytest.mark.slow
def test_no_as_of_world_holds_an_ex_date_a_whole_number_of_years_before_it(env: Env) -> None:
    """There the accepted readings of "the last N years" disagree, and a tool matching either one by
    the coincidence (the last 4*N dividends, say) would pass: such a day is drawn again."""
    dividends = {d for s in env.snapshot.symbols() for d in pd.DatetimeIndex(env.snapshot.dividends(s).index).date}
    for seed in range(1, 41):
        as_of = Worlds(env.snapshot, 3, seed).as_of_date(0)
        edges = {(pd.Timestamp(as_of) - pd.DateOffset(years=n)).date() for n in range(1, 6)}
        assert not edges & dividends, (seed, as_of, sorted(edges & dividends))


# --------------------------------------------------------------------------- statements as yfinance shows them
@pytest.mark.slow
def test_the_as_of_world_falls_within_a_week_of_a_statements_report(env: Env) -> None:
    """The newest quarter of an ``as_of`` world was reported days before its as-of date, after a drawn
    lag of two to three weeks: it is less than 30 days old, so "latest" read from the clock (or the
    last session) minus an assumed month-long lag is the quarter before in every run, and a tool that
    does so fails there while one that reads the statement passes."""
    for seed in range(1, 13):
        worlds = Worlds(env.snapshot, 3, seed)
        day, lag = worlds.as_of_plan(0)
        assert REPORTING_LAGS[0] <= lag <= REPORTING_LAGS[1]
        past = truncate(read_market(env.snapshot), day, lag)
        newest = max(pd.Timestamp(c).date() for c in past.income_stmt("AMZN", "quarterly").columns)
        assert newest + timedelta(days=lag) <= day <= newest + timedelta(days=lag + 7), (seed, day, lag, newest)
        assert day - timedelta(days=30) < newest, (seed, day)  # a 30-day lag reads the quarter before
        run_newest = max(pd.Timestamp(c).date() for c in env.snapshot.income_stmt("AMZN", "quarterly").columns)
        assert newest < run_newest, (seed, day)  # "the latest quarter" differs from the run's
    world = next(w for w in env.worlds.for_task(env.judged["fetch_006"], []) if w.kind is WorldKind.AS_OF)
    expected = expected_values(env.tasks["fetch_006"], world.provider)
    month_lag = ("import pandas as pd\nimport yfinance as yf\n\n\n"
                 "def net_income(symbol: str) -> float:\n"
                 "    t = yf.Ticker(symbol)\n"
                 "    row = t.quarterly_income_stmt.loc['Net Income']\n"
                 "    row.index = pd.to_datetime(row.index)\n"
                 "    last = t.history(period='5d').index[-1].tz_localize(None).normalize()\n"
                 "    return float(row[row.index <= last - pd.Timedelta(days=30)].sort_index().iloc[-1])\n")
    wrong = env.run(month_lag, "net_income", {"symbol": "AMZN"}, str(world.path))
    assert wrong.ok and wrong.value not in expected.values(), wrong  # an answer, of the quarter before
    right = env.run(reference("fetch_006"), "net_income", {"symbol": "AMZN"}, str(world.path))
    assert right.ok and right.value in expected.values(), right


@pytest.mark.slow
def test_the_seed_world_shows_an_unreported_newest_quarter_that_the_oracle_skips(env: Env) -> None:
    world = next(w for w in env.worlds.for_task(env.judged["fetch_006"], []) if w.kind is WorldKind.SEED)
    frame = world.provider.income_stmt("AMZN", "quarterly")
    newest = max(frame.columns)
    assert pd.isna(frame.at["Net Income", newest]) and newest.date() <= world.as_of  # ended, not yet filed
    assert frame[newest].notna().sum() == len(UNFILED_ROWS)  # its revenue shown before the rest is filed
    reported = frame.loc[:, frame.loc["Net Income"].notna()]
    assert list(frame.columns) == sorted(frame.columns, reverse=True)  # newest first, as yfinance
    expected = expected_values(env.tasks["fetch_006"], world.provider)
    assert expected == {"latest_reported_quarter": float(reported.loc["Net Income", max(reported.columns)])}
    info = world.provider.info("AMZN")
    assert date.fromtimestamp(info["mostRecentQuarter"]) < newest.date()  # info names the reported one
    unchecked = ("import yfinance as yf\n\n\ndef net_income(symbol: str) -> float:\n"
                 "    return float(yf.Ticker(symbol).quarterly_income_stmt.loc['Net Income'].iloc[0])\n")
    assert not env.run(unchecked, "net_income", {"symbol": "AMZN"}, str(world.path)).ok  # NaN is no answer
    result = env.run(reference("fetch_006"), "net_income", {"symbol": "AMZN"}, str(world.path))
    assert result.ok and result.value == expected["latest_reported_quarter"], result


@pytest.mark.slow
def test_ex_dates_sit_beside_whole_year_edges_never_on_them(env: Env) -> None:
    """Each world moves the ex-dates nearest to "N years before the as-of date" onto the sessions just
    before and just after it: both accepted readings keep the one after and drop the one before, so
    a window a day or two off (252 sessions a year, anchored at the last bar) answers wrong, and the
    readings still agree."""
    market = read_market(env.snapshot)
    moved, words = edge_dividends(market)
    assert "AAPL" in words
    sessions = market.sessions()
    for years in (1, 2):
        edge = (pd.Timestamp(market.as_of) - pd.DateOffset(years=years)).date()
        days = set(pd.DatetimeIndex(moved.dividends("AAPL").index).date)
        assert edge not in days
        assert max(s for s in sessions if s < edge) in days and min(s for s in sessions if s > edge) in days
    assert len(moved.dividends("AAPL")) == len(market.dividends("AAPL"))  # moved, none added
    world = next(w for w in env.worlds.for_task(env.judged["fetch_007"], []) if w.kind is WorldKind.SEED)
    wrong = ("import yfinance as yf\n\n\ndef dividend_history(symbol: str, years: int = 3) -> list:\n"
             "    h = yf.Ticker(symbol).history(period='max').tail(252 * years)\n"
             "    d = h.loc[h['Dividends'] > 0, 'Dividends']\n"
             "    return [{'date': t.strftime('%Y-%m-%d'), 'amount': float(a)} for t, a in d.items()]\n")
    expected = [expected_values(env.tasks["fetch_007"], world.provider, {"years": n}) for n in (1, 2)]
    got = [env.run(wrong, "dividend_history", {"symbol": "AAPL", "years": n}, str(world.path)) for n in (1, 2)]
    assert any(r.ok and r.value not in e.values() for r, e in zip(got, expected, strict=True))


@pytest.mark.slow
def test_a_yes_no_task_is_judged_in_a_round_trip_world(env: Env) -> None:
    """comp_002 (price up, volume down over 30 sessions) gets a world whose window ends just above its
    first close after a dip, opening above where it ends: the oracle says True, a reading of "price up"
    from the window's mean or its first open says False."""
    world = next(w for w in env.worlds.for_task(env.judged["comp_002"], [])
                 if w.kind is WorldKind.FLIP and "round trip" in w.perturbation)
    assert expected_values(env.tasks["comp_002"], world.provider) == {"price_up_volume_slope_down": True}
    bars = world.provider.history("MSFT").tail(30)
    first, last = float(bars["Close"].iloc[0]), float(bars["Close"].iloc[-1])
    assert last > first and float(bars["Close"].mean()) < first and float(bars["Open"].iloc[0]) > last


@pytest.mark.slow
def test_the_round_trip_world_pays_a_dividend_above_the_net_move_and_raw_closes_fail(env: Env) -> None:
    """A payer's round trip goes ex-dividend in its window for more than the window's net move: the
    adjusted closes end above the first (price up, the oracle's reading), the quoted ones below it.
    A tool that reads "price up" from raw closes says False there; right wherever a window's move
    exceeds its dividends (every other world), it fails."""
    world = next(w for w in env.worlds.for_task(env.judged["comp_002"], [])
                 if w.kind is WorldKind.FLIP and "round trip" in w.perturbation)
    raw = world.provider.history_unadjusted("MSFT").tail(30)
    assert (raw["Dividends"] != 0).any() and float(raw["Close"].iloc[-1]) < float(raw["Close"].iloc[0])
    code = edited("comp_002", 'history(period="max")', 'history(period="max", auto_adjust=False)')
    assert not env.run(code, "volume_price_divergence", {"symbol": "MSFT", "days": 30}, str(world.path)).value
    verdict, alone = env.judge("comp_002", code)
    assert alone, "right for the task's own arguments on the snapshot"
    assert verdict.state == "fail", verdict.reason


@pytest.mark.slow
def test_the_as_of_world_spikes_the_session_before_each_calendar_window(env: Env) -> None:
    """On a closed as-of day a calendar window counted from the last bar starts a session or two
    early; the ``as_of`` world spikes the last session before ``as_of - n days`` so such a window moves."""
    past = truncate(read_market(env.snapshot), date(2024, 5, 11))
    sessions = past.sessions()
    backs = _calendar_backs(past, [30, 250])
    assert [sessions[len(sessions) - b] for b in backs] == [date(2024, 4, 10), date(2023, 9, 1)]
    assert set(backs) <= {s.back for _, spikes in first_spikes([5], backs) for s in spikes}


@pytest.mark.slow
def test_the_as_of_day_parts_a_window_counted_from_the_last_bar_from_one_counted_from_today(env: Env) -> None:
    """On the as-of day of every seed, each calendar window of the benchmark (30 and 250 days) counted
    back from the last session holds a session that the same window counted back from the as-of date
    does not hold on either accepted reading of its first day: a tool that anchors at the last bar
    answers wrong in every run, not only when the drawn day happens to be a Sunday."""
    sessions = read_market(env.snapshot).sessions()
    for seed in range(1, 21):
        worlds = Worlds(env.snapshot, 3, seed, list(env.tasks.values()))
        assert worlds.calendar_windows == [30, 250]
        as_of = worlds.as_of_date(0)
        last = max(s for s in sessions if s <= as_of)
        assert last < as_of, (seed, as_of)
        for n in worlds.calendar_windows:
            from_today = {s for s in sessions if as_of - timedelta(days=n) <= s <= as_of}
            from_last_bar = {s for s in sessions if last - timedelta(days=n) < s <= last}
            assert from_last_bar - from_today, (seed, as_of, n)


@pytest.mark.slow
def test_a_task_with_years_is_judged_in_a_leap_world_where_365_days_a_year_parts_from_the_calendar(env: Env) -> None:
    """Below five years a window of 365 days a year starts at most one day after the calendar's first
    day, which the accepted readings of the edge (on or after, strictly after) already span. The
    ``leap`` world reaches back far enough for a window of five years over two Feb 29ths, with an
    ex-date on the session between the two starts, and never one on a whole-year edge: the years=5
    probe tells 365 days a year (and 52 weeks) from the calendar's years."""
    from finevo.market.calendar import is_trading_day

    task = env.tasks["fetch_007"].model_copy(update={"probes": probes_for(env.tasks["fetch_007"], env.snapshot, SEED)})
    assert {"years": 5} in [dict(p.args) for p in task.probes]  # drawn with the run's seed
    leap = [w for w in env.worlds.for_task(task, [dict(p.oracle_params) for p in task.probes])
            if w.kind is WorldKind.LEAP]
    assert len(leap) == 1
    world = leap[0].provider
    as_of = world.as_of
    history = world.history("AAPL")
    assert history.index[0].date() < (pd.Timestamp(as_of) - pd.DateOffset(years=6)).date() + timedelta(days=10)
    bars = world.history_unadjusted("AAPL")
    assert (bars["High"] >= bars[["Open", "Close"]].max(axis=1)).all()
    assert (bars["Low"] <= bars[["Open", "Close"]].min(axis=1)).all()
    assert all(is_trading_day(d) for d in pd.DatetimeIndex(bars.index).date)
    paid = set(pd.DatetimeIndex(world.dividends("AAPL").index).date)
    edges = {(pd.Timestamp(as_of) - pd.DateOffset(years=n)).date() for n in range(1, 7)}
    assert not paid & edges
    edge = (pd.Timestamp(as_of) - pd.DateOffset(years=5)).date()
    fixed = as_of - timedelta(days=365 * 5)
    assert fixed - edge == timedelta(days=2) and (edge + timedelta(days=1)) in paid
    expected = expected_values(env.tasks["fetch_007"], world, {"years": 5})
    everything = [d.isoformat() for d in sorted(paid) if d >= edge]
    assert [item["date"] for item in expected["ex_date_within_3_years"]] == everything
    fixed_count = ("import datetime\nimport pandas as pd\nimport yfinance as yf\n\n\n"
                   "def dividend_history(symbol: str, years: int = 3) -> list:\n"
                   "    d = yf.Ticker(symbol).dividends\n"
                   "    today = pd.Timestamp(datetime.date.today()).tz_localize(d.index.tz)\n"
                   "    d = d[d.index >= today - pd.Timedelta(days=365 * years)]\n"
                   "    return [{'date': t.strftime('%Y-%m-%d'), 'amount': float(a)} for t, a in d.items()]\n")
    got = env.run(fixed_count, "dividend_history", {"symbol": "AAPL", "years": 5}, str(leap[0].path))
    assert got.ok and got.value not in expected.values()
    right = env.run(reference("fetch_007"), "dividend_history", {"symbol": "AAPL", "years": 5}, str(leap[0].path))
    assert right.ok and right.value in expected.values()


#: the 300 seeds in chunks, each a test asserting everything for its seeds: the two workers share them
WELL_POSED_CHUNKS = [(1, 101), (101, 201), (201, 301)]


def test_the_well_posed_chunks_are_seeds_1_to_300_each_once() -> None:
    assert [seed for low, high in WELL_POSED_CHUNKS for seed in range(low, high)] == list(range(1, 301))


@pytest.mark.slow
@pytest.mark.timeout(1800)  # about 0.3 s of CPU a seed, far longer on a loaded machine
@pytest.mark.parametrize("low, high", WELL_POSED_CHUNKS, ids=lambda v: str(v))
def test_every_world_of_300_seeds_is_well_posed_for_the_edges_it_is_built_to_test(env: Env, low: int,
                                                                                  high: int) -> None:
    """The cheap half of the many-seed self-check (the whole of it, every reference tool judged in
    every world, is ``python scripts/bench_worlds.py --seeds 1-300 --in-process``): in the worlds of
    300 seeds, built in memory, no ex-date lies exactly on a whole-year edge of the world's as-of
    day (there the accepted readings of "the last N years" disagree), the ``as_of`` day is one the
    market was closed, and on it every calendar window counted from the last bar parts from the
    same window counted from today; the ``leap`` world's five-year window spans two Feb 29ths with
    a session between its two starts."""
    tasks = list(env.tasks.values())
    base = Worlds(env.snapshot, 3, 1, tasks)
    sessions = read_market(env.snapshot).sessions()

    def on_edges(market: Any, years: range) -> list[tuple[str, date]]:
        edges = {(pd.Timestamp(market.as_of) - pd.DateOffset(years=n)).date() for n in years}
        return [(s, d) for s in market.symbols() for d in pd.DatetimeIndex(market.dividends(s).index).date
                if d in edges]

    assert not on_edges(base.variants(WorldKind.SEED, 0)[0][2].market, range(1, 7))
    for seed in range(low, high):
        worlds = Worlds(env.snapshot, 3, seed, tasks)
        worlds._base = base._base_market()  # one read of the snapshot for every seed
        as_of = worlds.as_of_market(0)[0]  # spikes move closes, never dividends
        assert not on_edges(as_of, range(1, 6)), (seed, as_of.as_of)
        last = max(s for s in sessions if s <= as_of.as_of)
        assert last < as_of.as_of, seed
        for n in worlds.calendar_windows:
            assert {s for s in sessions if last - timedelta(days=n) < s <= last} - \
                {s for s in sessions if as_of.as_of - timedelta(days=n) <= s}, (seed, n)
        leap = worlds.leap_market()
        assert leap is not None, seed
        market = leap[2]
        assert not on_edges(market, range(1, 7)), (seed, market.as_of)
        edge = (pd.Timestamp(market.as_of) - pd.DateOffset(years=5)).date()
        assert market.as_of - timedelta(days=365 * 5) - edge == timedelta(days=2), seed


@pytest.mark.slow
def test_the_edge_world_falls_on_an_exchange_holiday(env: Env) -> None:
    """Users ask on holidays too: the ``edge`` world's as-of day is a weekday the exchange was closed
    (or a weekend after a Friday holiday), its latest session the one before; a tool that rolls
    weekends back to Friday, or takes a bar dated today, finds none there."""
    from finevo.market.calendar import is_trading_day

    for seed in range(1, 9):
        day = Worlds(env.snapshot, 3, seed).edge_day(0)
        assert day is not None and not is_trading_day(day), (seed, day)
        friday = day - timedelta(days=(day.weekday() - 4) % 7)
        assert day.weekday() < 5 or not is_trading_day(friday), (seed, day)
    world = next(w for w in env.worlds.for_task(env.judged["fetch_005"], []) if w.kind is WorldKind.EDGE)
    assert world.as_of == env.worlds.edge_day(0) and world.provider.history("SPY").index[-1].date() < world.as_of
    rolls_weekends = ("import datetime as dt\nimport yfinance as yf\n\n\ndef latest_close(symbol: str) -> float:\n"
                      "    day = dt.date.today()\n"
                      "    day -= dt.timedelta(days=max(0, day.weekday() - 4))\n"
                      "    h = yf.Ticker(symbol).history(start=day, end=day + dt.timedelta(days=1))\n"
                      "    return float(h['Close'].iloc[-1])\n")
    assert not env.run(rolls_weekends, "latest_close", {"symbol": "SPY"}, str(world.path)).ok
    result = env.run(reference("fetch_005"), "latest_close", {"symbol": "SPY"}, str(world.path))
    assert result.ok and result.value in expected_values(env.tasks["fetch_005"], world.provider).values()


@pytest.mark.slow
def test_the_seed_world_dates_statements_as_a_52_53_week_fiscal_calendar_does(env: Env) -> None:
    """Apple's statements are dated on Saturdays (2023-04-01 ends its quarter of January-March): the
    ``seed`` world dates every non-December fiscal year's columns so, the oracle still finds the
    quarter (within 15 days of its nominal end) and the reference tool too, a tool that maps a
    column to its quarter by the column's month does not."""
    world = next(w for w in env.worlds.for_task(env.judged["fetch_001"], []) if w.kind is WorldKind.SEED)
    columns = [pd.Timestamp(c).date() for c in world.provider.income_stmt("AAPL", "quarterly").columns]
    assert date(2023, 4, 1) in columns and all(d.weekday() == 5 for d in columns if d != world.as_of)
    yearly = [pd.Timestamp(c).date() for c in world.provider.income_stmt("AAPL", "yearly").columns]
    assert yearly and all(d.weekday() == 5 for d in yearly)  # its fiscal years too (ending in a drawn month)
    expected = expected_values(env.tasks["fetch_001"], world.provider)
    by_month = ("import pandas as pd\nimport yfinance as yf\n\n\n"
                "def net_income(symbol: str, year: int | None = None, quarter: int | None = None) -> float:\n"
                "    row = yf.Ticker(symbol).quarterly_income_stmt.loc['Net Income']\n"
                "    for c in row.index:\n"
                "        if pd.Timestamp(c).year == year and (pd.Timestamp(c).month - 1) // 3 + 1 == quarter:\n"
                "            return float(row[c])\n"
                "    raise ValueError('no such quarter')\n")
    args = {"symbol": "AAPL", "year": 2023, "quarter": 1}
    wrong = env.run(by_month, "net_income", args, str(world.path))
    assert not (wrong.ok and wrong.value in expected.values())
    right = env.run(reference("fetch_001"), "net_income", args, str(world.path))
    assert right.ok and right.value in expected.values()


@pytest.mark.slow
def test_no_leap_world_when_the_calendar_cannot_place_the_lengthened_history(env: Env, monkeypatch) -> None:
    """A snapshot recorded from further back than the NYSE calendar the gate knows: the ``leap``
    world is left out (no judge crash, exit 3), the other worlds stand."""
    import runner.judging.worlds as worlds_module

    with Worlds(env.snapshot, 3, 7, list(env.judged.values())) as worlds:
        assert worlds.leap_plan() is not None  # the bundled snapshot: a leap world exists
    monkeypatch.setattr(worlds_module, "COVERED_YEARS", (2030, 2035))
    with Worlds(env.snapshot, 3, 7, list(env.judged.values())) as worlds:
        assert worlds.leap_plan() is None


ONE_YEAR_MACD = '''import yfinance as yf


def macd(symbol: str, fast: int = 12, slow: int = 26, signal: int = 9) -> dict[str, float]:
    closes = yf.Ticker(symbol).history(period="1y")["Close"].dropna()
    if len(closes) < slow + signal:
        raise ValueError("too few closes")
    line = closes.ewm(span=fast, adjust=False).mean() - closes.ewm(span=slow, adjust=False).mean()
    sig = line.ewm(span=signal, adjust=False).mean()
    return {"macd": float(line.iloc[-1]), "signal": float(sig.iloc[-1]),
            "histogram": float(line.iloc[-1] - sig.iloc[-1])}
'''


@pytest.mark.slow
def test_a_tool_reading_a_fixed_period_fails_in_the_long_world_where_the_long_scale_probe_is_judged(
        env: Env, request: pytest.FixtureRequest) -> None:
    """MACD(12,26,9) from one year of closes is right within the tolerance at the task's spans and at
    the scales the 3-year snapshot holds with the warm-up every accepted reading needs. The probe
    asking every count x5 needs ten times their sum in sessions: skipped on the snapshot, it is
    judged in the ``long`` world (twenty years), where the reference passes and the one-year tool's
    EMAs still carry their seed."""
    task = env.tasks["calc_004"].model_copy(update={"probes": probes_for(env.tasks["calc_004"], env.snapshot, SEED)})
    long_probes = [p for p in task.probes if p.min_sessions]
    assert len(long_probes) == 1
    probe = long_probes[0]
    factor = probe.args["fast"] // 12  # every count scaled alike, the largest scale the long world holds
    assert factor in SCALES and dict(probe.args) == {"fast": 12 * factor, "slow": 26 * factor, "signal": 9 * factor}
    assert probe.min_sessions is not None and probe.min_sessions > len(env.snapshot.history("AMZN"))
    # worlds of its own: the module's cache each task's worlds by id, chosen for its probes without a seed
    hidden = Worlds(env.snapshot, 3, SEED, list(env.judged.values()))
    request.addfinalizer(hidden.close)
    worlds = hidden.for_task(task, [dict(p.oracle_params) for p in task.probes])
    long_world = [w for w in worlds if w.kind is WorldKind.LONG]
    assert len(long_world) == 1 and len(long_world[0].provider.history("AMZN")) >= probe.min_sessions

    ran: list[tuple[dict[str, Any], str | None]] = []

    def run(code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        ran.append((dict(args), snapshot_dir))
        return env.run(code, entry, args, snapshot_dir)

    def verdict(code: str) -> TaskResult:
        result = env.run(code, "macd", dict(task.intent.args))
        assert result.ok, result.error_message
        outcome = Outcome(task_id=task.id, value=result.value, tool_code=code, stage="done")
        return judge_task(task, outcome, expected_values(task, env.snapshot), 0.0,
                          Reruns(run, probe_expected=probe_expected_values(task, env.snapshot), worlds=hidden))

    right = verdict(reference("calc_004"))
    # the long-scale probe runs only where it is judged: in the worlds that hold its sessions, the long
    # world and the closure world cut from it (history back to 1980)
    long_args = {**task.intent.args, **probe.args}
    holding = [str(w.path) for w in worlds if w.kind in (WorldKind.LONG, WorldKind.CLOSURE)
               and len(w.provider.history("AMZN")) >= probe.min_sessions]
    assert str(long_world[0].path) in holding
    assert [where for args, where in ran if args == long_args] == holding
    assert right.state.value == "pass", right.reason
    skipped = [p for p in right.probes if p.args == dict(probe.args)]
    assert skipped[0].state.value == "skipped" and "sessions of history" in skipped[0].reason
    assert [w.state.value for w in right.worlds if w.kind == WorldKind.LONG.value] == ["pass"]
    wrong = verdict(ONE_YEAR_MACD)
    assert wrong.state.value == "fail"
    assert "world long-" in wrong.reason and f"slow={26 * factor}" in wrong.reason, wrong.reason


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("seed", [3])
def test_the_oracle_emits_no_runtime_warning_over_the_probes_and_worlds_of_a_run(seed: int) -> None:
    """The worlds hold flat halts and missing sessions: where the data cannot support an argument (a
    correlation of one common return, of a constant series) the oracle raises its clear error, and
    elsewhere it computes without numpy's RuntimeWarnings ("Degrees of freedom <= 0", "divide by
    zero", "invalid value"). Seed 3's seed world once showed all three."""
    import warnings

    from runner.judging.grade import world_answers

    snapshot = load_snapshot(DATA)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        judged = [t.model_copy(update={"probes": probes_for(t, snapshot, seed)}) for t in load_tasks(TASKS)]
        with Worlds(snapshot, 3, seed, judged) as worlds:
            for task in judged:
                probe_expected_values(task, snapshot)
                for world in worlds.for_task(task, [dict(p.oracle_params) for p in task.probes]):
                    world_answers(task, world)


@pytest.mark.slow
def test_a_yes_no_task_is_judged_in_a_zigzag_world_where_summed_returns_part_from_the_close(env: Env) -> None:
    """comp_002 gets a world whose last closes zigzag: daily returns that sum positive while the last
    close ends exactly where the window's first close is (a tie, to the last bit of the adjusted
    close; one close further back it is level too), volume falling. The oracle says False (the close
    did not rise); a tool that reads "price up" from the mean daily return says True there and fails,
    and so does one that counts a tie as a rise (``>=``) or compounds the daily returns (rounding above
    1), in every run (the world does not depend on the seed's draw)."""
    task = env.judged["comp_002"]
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.kind is WorldKind.FLIP and "zigzag" in w.perturbation)
    assert expected_values(env.tasks["comp_002"], world.provider) == {"price_up_volume_slope_down": False}
    for span in (30, 31):
        closes = world.provider.history("MSFT")["Close"].tail(span)
        assert float(closes.pct_change().sum()) > 0 >= float(closes.iloc[-1] / closes.iloc[0] - 1)
    closes = world.provider.history("MSFT")["Close"].tail(30)
    assert float(closes.iloc[-1]) == float(closes.iloc[0])
    # compounded in floating point, the tied window's returns come out above 1 (the world picks an edge
    # whose rounding falls that way), so a rise read from them is caught in every run too
    growth = 1 + closes.pct_change().dropna()
    assert float(growth.prod()) > 1.0 and float(growth.cumprod().iloc[-1]) > 1.0
    for wrong in ("price_up = float(np.mean(np.diff(closes) / closes[:-1])) > 0", "price_up = closes[-1] >= closes[0]",
                  'price_up = float((1 + window["Close"].pct_change().dropna()).prod()) > 1'):
        verdict, base = env.judge("comp_002", edited("comp_002", "price_up = closes[-1] > closes[0]", wrong))
        assert base and verdict.state == "fail", (wrong, verdict.reason)
        failed = [w for w in verdict.worlds if w.state == "fail"]
        assert [w.perturbation for w in failed if "zigzag" in w.perturbation], (wrong, verdict.reason)
    assert env.judge("comp_002", reference("comp_002"))[0].state == "pass"



@pytest.mark.slow
@pytest.mark.parametrize("key", ["short_window", "long_window"])
def test_a_yes_no_task_gets_a_world_per_window_whose_answer_turns_at_its_edge(env: Env, key: str) -> None:
    """A yes/no answer seldom sits near a window's edge on recorded data, so an average over one session
    fewer or more than asked mostly gives the same answer. comp_001 gets a world per window in which the
    oldest close the window reads is moved just far enough to turn the answer for one of its argument
    sets (and the close before it the other way, so the window one longer keeps its sum): there the
    window one session shorter or longer answers the other way, and the reference still passes."""
    task = env.judged["comp_001"]
    argsets = [{}, *[dict(p.oracle_params) for p in task.probes]]
    [world] = [w for w in env.worlds.for_task(task, argsets[1:]) if w.name.endswith(f"-edge-{key}")]
    assert f"the edge of {key}=" in world.perturbation

    def answer(args: dict[str, Any]) -> Any:
        try:
            return expected_values(env.tasks["comp_001"], world.provider, args)["wilder_rsi"]
        except InputError:  # no reading answers these arguments in this world
            return None

    turned = []
    for args in argsets:
        window = int({**task.intent.args, **args}[key])
        here = answer(args)
        if here is not None and answer({**args, key: window - 1}) == answer({**args, key: window + 1}) == (not here):
            turned.append(args)
    assert turned, "no argument set whose answer turns at the window's edge"
    verdict, _ = env.judge("comp_001", reference("comp_001"))
    assert verdict.state == "pass" and all(w.state == "pass" for w in verdict.worlds if "-edge-" in w.world or
                                           "the edge of" in w.perturbation), verdict.reason


@pytest.mark.slow
def test_a_yes_no_task_is_judged_in_a_halt_world_where_two_averages_tie_exactly(env: Env) -> None:
    """comp_001 gets a world whose own symbol is halted over its long window after a fall: every way of
    averaging the flat window gives the halted price to the last bit (a tail mean, a rolling mean, a
    sum over a count), so MA5 ties MA20, while the RSI stays low. The oracle says False (MA5 is not
    above MA20); a tool that counts a tie as a cross (``>=``) says True and fails there, in every run."""
    task = env.judged["comp_001"]
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.kind is WorldKind.FLIP and "halt" in w.perturbation)
    assert expected_values(env.tasks["comp_001"], world.provider) == {"wilder_rsi": False}
    bars = world.provider.history("AAPL")
    closes = bars["Close"].astype(float)
    price = float(closes.iloc[-1])
    assert (bars["Volume"].tail(20) == 0).all() and (bars[["Open", "High", "Low"]].tail(20) == price).all().all()
    averages = {float(closes.rolling(5).mean().iloc[-1]), float(closes.rolling(20).mean().iloc[-1]),
                float(closes.tail(5).mean()), float(closes.tail(20).mean()), sum(closes.tail(20).tolist()) / 20}
    assert averages == {price}
    assert float(rsi_series(closes, 14).iloc[-1]) < 27
    wrong = edited("comp_001", "short_ma > long_ma", "short_ma >= long_ma")
    verdict, base = env.judge("comp_001", wrong)
    assert base and verdict.state == "fail", verdict.reason
    assert [w.perturbation for w in verdict.worlds if w.state == "fail" and "halt" in w.perturbation], verdict.reason
    assert env.judge("comp_001", reference("comp_001"))[0].state == "pass"

@pytest.mark.slow
def test_a_probe_symbol_in_the_halt_world_resumes_with_averages_apart_by_less_than_half_a_cent(env: Env) -> None:
    """The halt world's other symbols (those its probes read) resume trading on the last session: the
    5-session average is above the 20-session one by less than half a cent, both in the same cent. The
    oracle says True where the RSI is low; a tool that rounds the averages to cents says False and fails."""
    task = env.judged["comp_001"]
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.kind is WorldKind.FLIP and "halt" in w.perturbation)
    assert "trading again on the last session" in world.perturbation
    # a probe of another symbol at the task's own windows (its threshold moved: GOOGL at 70)
    probe = next(p for p in task.probes if "symbol" in p.args and not {"short_window", "long_window"} & set(p.args))
    other = probe.args["symbol"]
    assert other in world.perturbation
    closes = world.provider.history(other)["Close"].astype(float)
    short, long_ = float(closes.tail(5).mean()), float(closes.tail(20).mean())
    assert 0 < short - long_ < 0.005 and round(short, 2) == round(long_, 2)
    assert float(rsi_series(closes, 14).iloc[-1]) < 30
    args = {**task.intent.args, **probe.args}
    assert compute("ma_cross_rsi_signal", world.provider, {**task.oracle.params, **probe.oracle_params}) is True
    rounding = edited("comp_001", "short_ma > long_ma", "round(short_ma, 2) > round(long_ma, 2)")
    assert env.run(rounding, "ma_cross_rsi_signal", args, str(world.path)).value is False
    assert env.run(reference("comp_001"), "ma_cross_rsi_signal", args, str(world.path)).value is True
    verdict, base = env.judge("comp_001", rounding)
    assert base and verdict.state == "fail", verdict.reason


@pytest.mark.slow
def test_a_yes_no_task_on_a_payer_is_judged_in_a_world_where_a_dividend_decides_the_quoted_reading(env: Env) -> None:
    """comp_001 gets a world whose own payer's last bars are reshaped with a special ex-dividend at the
    middle of its long window: on adjusted closes the signal is on; the quoted closes before the ex-date
    stand higher by the dividend, lifting the long average over the short one. A tool that averages
    ``auto_adjust=False`` closes (its RSI on adjusted ones) answers otherwise there and fails in every
    run, right wherever no dividend decides it; the reference passes."""
    task = env.judged["comp_001"]
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.name.endswith("comp_001-dividend"))
    symbol, long_window = task.intent.args["symbol"], task.intent.args["long_window"]
    dividends = world.provider.history_unadjusted(symbol)["Dividends"].astype(float).iloc[-long_window:]
    paid = dividends[dividends != 0]
    assert len(paid) == 1 and long_window // 2 <= len(dividends) - dividends.index.get_loc(paid.index[0]) <= long_window
    assert expected_values(env.tasks["comp_001"], world.provider) == {"wilder_rsi": True}
    quoted = edited("comp_001", "    short_ma = float(closes.tail(short_window).mean())\n"
                                "    long_ma = float(closes.tail(long_window).mean())",
                    '    as_quoted = yf.Ticker(symbol).history(period="max", auto_adjust=False)["Close"].dropna()\n'
                    "    short_ma = float(as_quoted.tail(short_window).mean())\n"
                    "    long_ma = float(as_quoted.tail(long_window).mean())")
    args = dict(task.intent.args)
    assert env.run(quoted, "ma_cross_rsi_signal", args, str(world.path)).value is False
    verdict, alone = env.judge("comp_001", quoted)
    assert alone, "right for the task's own arguments on the snapshot"
    assert verdict.state == "fail", verdict.reason
    assert display_name(world) in [w.world for w in verdict.worlds if w.state == "fail"], verdict.reason
    assert env.judge("comp_001", reference("comp_001"))[0].state == "pass"


ONE_PASS_SPREAD = """    values = [float(v) for v in recent]
    mean_of_squares = sum(v * v for v in values) / len(values)
    spread = float(num_std) * math.sqrt(mean_of_squares - middle * middle)"""


@pytest.mark.slow
def test_a_level_spread_is_judged_in_a_flat_world_where_a_one_pass_variance_rounds(env: Env) -> None:
    """calc_003 (Bollinger) gets a world whose symbols are halted over its probes' windows at a quoted cent
    price off the binary grid: the spread of the closes is zero there and the bands collapse onto the
    price. A one-pass variance (``E[x^2] - mean^2``) cancels to rounding noise of either sign there --
    a negative one raises in ``math.sqrt`` -- and fails; the reference's two-pass std passes."""
    task = env.judged["calc_003"]
    argsets = [p.oracle_params for p in task.probes]
    world = next(w for w in env.worlds.for_task(task, argsets) if w.name.endswith("calc_003-flat"))
    window = task.intent.args["window"]
    read = sorted({task.intent.args["symbol"], *(a["symbol"] for a in argsets if "symbol" in a)})
    noise, prices = [], {}
    for symbol in read:
        closes = world.provider.history(symbol)["Close"].astype(float).to_numpy()
        flat = closes[-window:]
        price = prices[symbol] = float(flat[-1])
        assert (flat == price).all(), symbol
        assert price == round(price, 2) and (price * 4) % 1 != 0, price  # a whole cent, off the binary grid
        noise.append(float(np.mean(flat * flat) - np.mean(flat) ** 2))
    assert any(n != 0.0 for n in noise), noise  # the world shows the cancellation somewhere
    own = prices[task.intent.args["symbol"]]
    for bands in expected_values(task, world.provider).values():
        assert bands == pytest.approx({"upper": own, "middle": own, "lower": own}, rel=1e-12), bands
    one_pass = edited("calc_003", "    spread = float(num_std) * float(recent.std(ddof=0))", ONE_PASS_SPREAD)
    verdict, alone = env.judge("calc_003", one_pass)
    assert alone, "right on the snapshot, where the closes move"
    assert verdict.state == "fail", verdict.reason
    assert [w.world for w in verdict.worlds if w.state == "fail"] == [display_name(world)], verdict.reason
    assert env.judge("calc_003", reference("calc_003"))[0].state == "pass"


@pytest.mark.slow
def test_a_window_of_levels_is_judged_in_a_halted_world_where_every_flat_bar_is_a_session(env: Env) -> None:
    """fetch_008 (the highest close over N sessions) gets a world whose symbols are halted over its
    window after a fall: the highest close is the halted price. A tool that drops repeated bars
    (``drop_duplicates()``) keeps one flat bar and reads N - 1 sessions of the fall before it, higher
    closes, and fails there in every run; the reference passes."""
    task = env.judged["fetch_008"]
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.name.endswith("fetch_008-halted"))
    days, symbol = task.intent.args["days"], task.intent.args["symbol"]
    bars = world.provider.history(symbol)
    window, before = bars.iloc[-days:], bars["Close"].astype(float).iloc[-days - 14:-days - 1]
    price = float(window["Close"].iloc[-1])
    assert (window["Volume"] == 0).all() and (window[["Open", "High", "Low", "Close"]] == price).all().all()
    assert (before > price).all()  # the fall the halt came after (its last close the halted price)
    assert set(expected_values(env.tasks["fetch_008"], world.provider).values()) == {price}
    deduplicated = edited("fetch_008", '["Close"].dropna()', '.drop_duplicates()["Close"].dropna()')
    verdict, alone = env.judge("fetch_008", deduplicated)
    assert alone, "right on the snapshot, where no two bars repeat"
    assert verdict.state == "fail", verdict.reason
    assert display_name(world) in [w.world for w in verdict.worlds if w.state == "fail"], verdict.reason
    assert env.judge("fetch_008", reference("fetch_008"))[0].state == "pass"


@pytest.mark.slow
@pytest.mark.parametrize("task_id", ["calc_002", "calc_007", "comp_003"])
def test_every_task_reading_levels_over_a_window_gets_a_halted_world(env: Env, task_id: str) -> None:
    """The moving average, the drawdown and the portfolio return read a window of levels too: each gets
    the halted world, its own symbols flat over its longest window, with an answer there."""
    task = env.judged[task_id]
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.name.endswith(f"{task_id}-halted"))
    longest = max(window_args({**task.oracle.params, **task.intent.args}).values())
    args = task.intent.args
    for symbol in args.get("symbols") or [args["symbol"]]:
        flat = world.provider.history(symbol).iloc[-longest:]
        assert (flat["Volume"] == 0).all() and flat["Close"].nunique() == 1, symbol
    assert expected_values(env.tasks[task_id], world.provider)


@pytest.mark.slow
def test_a_dispersion_of_returns_is_judged_in_a_quiet_world_where_a_small_one_is_still_defined(env: Env) -> None:
    """calc_008 (a correlation of daily returns) gets a world whose symbols trade quietly over its probes'
    windows: their daily returns spread by QUIET_STD (a short-term bond fund's), signs kept, every bar
    still a bar. The correlation is defined there; a tool that takes a standard deviation under 1e-3 for
    none ("a constant series") refuses it and fails; the reference passes."""
    from runner.judging.world_shapes import QUIET_STD

    task = env.judged["calc_008"]
    argsets = [p.oracle_params for p in task.probes]
    world = next(w for w in env.worlds.for_task(task, argsets) if w.name.endswith("calc_008-quiet"))
    days = task.intent.args["days"]
    for symbol in task.intent.args["symbols"]:
        bars = world.provider.history(symbol).iloc[-days:]
        returns = bars["Close"].astype(float).pct_change().dropna().to_numpy()
        assert np.std(returns) == pytest.approx(QUIET_STD, rel=0.25) and (returns != 0).all(), symbol
        assert (bars["High"] >= bars[["Open", "Close"]].max(axis=1)).all()
        assert (bars["Low"] <= bars[["Open", "Close"]].min(axis=1)).all()
    assert all(np.isfinite(v) for v in expected_values(task, world.provider).values())
    guarded = edited("calc_008", "    if not math.isfinite(value):",
                     "    if (returns.std() < 1e-3).any() or not math.isfinite(value):")
    verdict, alone = env.judge("calc_008", guarded)
    assert alone, "right on the snapshot, where the closes move as stocks do"
    assert verdict.state == "fail", verdict.reason
    assert [w.world for w in verdict.worlds if w.state == "fail"] == [display_name(world)], verdict.reason
    assert env.judge("calc_008", reference("calc_008"))[0].state == "pass"


def _long_verdict(env: Env, hidden: Worlds, task: Task, code: str) -> TaskResult:
    result = env.run(code, task.intent.indicator, dict(task.intent.args))
    assert result.ok, result.error_message
    outcome = Outcome(task_id=task.id, value=result.value, tool_code=code, stage="done")
    return judge_task(task, outcome, expected_values(task, env.snapshot), 0.0,
                      Reruns(env.run, probe_expected=probe_expected_values(task, env.snapshot), worlds=hidden))


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2])
def test_a_signal_of_several_windows_is_asked_at_a_golden_cross_scale_in_the_long_world(
        env: Env, request: pytest.FixtureRequest, seed: int) -> None:
    """comp_001 (MA5 > MA20 and RSI-14 < 30) is asked with every count x10 (MA50 > MA200, RSI-140),
    judged in the ``long`` world of more than ten years that holds its warm-up: a tool that reads
    half a year of closes whatever its windows averages 125 closes as MA200 there and fails, in
    every seed; the reference passes. (Its RSI from half a year is off by more than the threshold
    probes' 0.002 % either side of the level, a thousandth of a point, so they catch it on the snapshot
    already: they are left out here, so the verdict is the long world's.)"""
    probes = [p for p in probes_for(env.tasks["comp_001"], env.snapshot, seed) if "the answer turns at" not in p.reason]
    task = env.tasks["comp_001"].model_copy(update={"probes": tuple(probes)})
    [probe] = [p for p in task.probes if p.min_sessions]
    assert probe.args["long_window"] >= 200 and probe.args["short_window"] >= 50
    hidden = Worlds(env.snapshot, 3, seed, list(env.judged.values()))
    request.addfinalizer(hidden.close)
    half_year = edited("comp_001", 'history(period="max")', 'history(period="6mo")').replace(
        "max(long_window, 10 * rsi_window)", "rsi_window + 1")
    assert 'period="6mo"' in half_year
    wrong = _long_verdict(env, hidden, task, half_year)
    assert wrong.state.value == "fail" and "long_window=" in wrong.reason, wrong.reason
    assert _long_verdict(env, hidden, task, reference("comp_001")).state.value == "pass"


@pytest.mark.slow
def test_a_measure_of_all_the_history_is_judged_in_a_long_world_of_more_than_ten_years(
        env: Env, request: pytest.FixtureRequest) -> None:
    """comp_004 (the mean 5-session return after every RSI > 70 over all the history) has no probe
    that needs a long history, but its own answer in the ``long`` world (from 2005) differs from the
    snapshot's: it is judged there, and a tool that reads ten years as "all available history" fails."""
    task = env.judged["comp_004"]
    hidden = Worlds(env.snapshot, 3, SEED, list(env.judged.values()))
    request.addfinalizer(hidden.close)
    worlds = hidden.for_task(task, [p.oracle_params for p in task.probes])
    [long_world] = [w for w in worlds if w.kind is WorldKind.LONG]
    first = long_world.provider.history("AAPL").index[0]
    assert long_world.as_of.year - first.year > 10
    ten_years = edited("comp_004", 'history(period="max")', 'history(period="10y")')
    wrong = _long_verdict(env, hidden, task, ten_years)
    assert wrong.state.value == "fail" and "world long-" in wrong.reason, wrong.reason
    assert _long_verdict(env, hidden, task, reference("comp_004")).state.value == "pass"



@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_first_edge_world_falls_right_after_a_holiday_cluster_where_calendar_day_fetches_fall_short(
        env: Env, request: pytest.FixtureRequest, seed: int) -> None:
    """Whatever the seed, the first edge world's as-of is New Year's Day 2024 (Christmas and New Year's
    Day within ten days; the snapshot holds two years before it): a Bollinger tool that turns its
    window of sessions into calendar days (one and a half times it, plus three) finds too few closes there
    and raises where the oracle answers; the reference passes."""
    hidden = Worlds(env.snapshot, 3, seed, list(env.judged.values()))
    request.addfinalizer(hidden.close)
    assert hidden.edge_day(0) == date(2024, 1, 1)
    task = env.tasks["calc_003"].model_copy(update={"probes": probes_for(env.tasks["calc_003"], env.snapshot, seed)})
    weekdays = edited("calc_003", 'history(period="max")',
                      'history(period=f"{window * 3 // 2 + 3}d")')
    wrong = _long_verdict(env, hidden, task, weekdays)
    assert wrong.state.value == "fail" and "world edge-2024-01-01" in wrong.reason, wrong.reason
    assert _long_verdict(env, hidden, task, reference("calc_003")).state.value == "pass"


@pytest.mark.slow
@pytest.mark.parametrize("days", [3, 5])
def test_a_latest_close_looking_back_a_few_calendar_days_fails_in_the_closure_world(env: Env, days: int) -> None:
    """No regular weekend or holiday leaves more than three calendar days since the last session, and
    the long world's calendar no closure of more than four (Hurricane Sandy: Friday 2012-10-26 to
    Tuesday 2012-10-30), so a "latest close" that looks back three, or five, calendar days passed
    everywhere. The ``closure`` world stands on the last closed day of that closure lengthened back to
    2001-09-11's (the as-of day six calendar days after the last session, the sessions closed between
    holding no dividend or split); there the tool finds no bar and fails, while the reference reading
    (the last session the data hold) answers."""
    from finevo.market.calendar import is_trading_day
    from runner.judging.worlds import CLOSURE_DAYS

    code = edited("fetch_004", 'closes = yf.Ticker(symbol).history(period="5d")["Close"].dropna()',
                  "closes = yf.Ticker(symbol).history(\n"
                  f"        start=(datetime.date.today() - datetime.timedelta(days={days})).isoformat())"
                  '["Close"].dropna()')
    verdict, alone = env.judge("fetch_004", code)
    assert alone, "right on the snapshot and in every world with no longer closure"
    found = env.worlds.closure_day()
    assert found is not None
    day, last = found
    long_sessions = env.worlds.long_market().sessions()
    assert (day - last).days >= CLOSURE_DAYS > days and last in long_sessions
    assert not is_trading_day(day) and is_trading_day(day + timedelta(days=1))
    [world] = [w for w in env.worlds.for_task(env.judged["fetch_004"], []) if w.kind is WorldKind.CLOSURE]
    assert world.as_of == day
    closed = load_snapshot(world.path)
    for symbol in closed.symbols():  # every symbol's last bar is the last session; nothing after it
        assert closed.history(symbol).index[-1].date() == last, symbol
    assert verdict.state == "fail" and f"closure-{day.isoformat()}" in verdict.reason, verdict.reason
    reference_verdict, _ = env.judge("fetch_004", reference("fetch_004"))
    assert reference_verdict.state == "pass", reference_verdict.reason
    assert any(w.world.startswith("closure-") and w.state == "pass" for w in reference_verdict.worlds)


@pytest.mark.slow
def test_a_latest_close_from_the_last_row_fails_before_the_open_on_an_ex_dividend_date(env: Env) -> None:
    """Before the open on an ex-dividend date real yfinance ends ``history()`` with the dividend's row,
    prices NaN. The ``preopen`` world stands there, on the latest ex-date of the task's own stock: the
    clock at 08:00 on a trading day, every symbol's last bar the session before, the dividend a pending
    row. A "latest close" from the last row answers NaN there and fails; the reference, which drops
    rows without a close, answers the session before and passes."""
    from finevo.market.calendar import is_trading_day

    task = env.judged["fetch_005"]
    [world] = [w for w in env.worlds.for_task(task, []) if w.kind is WorldKind.PREOPEN]
    day = env.worlds.preopen_day(task)
    assert world.as_of == day and is_trading_day(day) and world.provider.before_open
    spy = env.snapshot.history_unadjusted("SPY")
    assert spy.loc[spy.index.date == day, "Dividends"].iloc[0] > 0  # the snapshot's own ex-date of SPY
    hidden = load_snapshot(world.path)
    for symbol in hidden.symbols():
        assert hidden.history(symbol).index[-1].date() < day, symbol
    pending = hidden.pending("SPY")
    assert [ts.date() for ts in pending.index] == [day] and pending["Close"].isna().all()
    result = env.run("import yfinance as yf\nimport datetime\n\n\ndef now(symbol: str) -> list:\n"
                     '    h = yf.Ticker(symbol).history(period="5d")\n'
                     "    return [datetime.datetime.now().strftime('%Y-%m-%d %H:%M'), str(h.index[-1].date()),\n"
                     '            bool(h["Close"].isna().iloc[-1]), list(h.columns)[:4]]\n',
                     "now", {"symbol": "SPY"}, str(world.path))
    assert result.ok, result.error_message
    assert result.value == [f"{day} 08:00", str(day), True, ["Close", "High", "Low", "Open"]]
    last_row = edited("fetch_005", 'closes = yf.Ticker(symbol).history(period="5d")["Close"].dropna()',
                      'closes = yf.Ticker(symbol).history(period="5d")["Close"]')
    verdict, alone = env.judge("fetch_005", last_row)
    assert alone, "right on the snapshot"
    assert verdict.state == "fail" and f"preopen-{day.isoformat()}" in verdict.reason, verdict.reason
    assert "ResultNotFinite" in verdict.reason, verdict.reason
    reference_verdict, _ = env.judge("fetch_005", reference("fetch_005"))
    assert reference_verdict.state == "pass", reference_verdict.reason
    assert any(w.world.startswith("preopen-") and w.state == "pass" for w in reference_verdict.worlds)


#: The benchmark's tasks of an extreme over a window (each gets a peak in its preopen world).
PREOPEN_PEAK_ORACLE_TASKS = {t.id for t in load_tasks(TASKS) if t.oracle.name in PREOPEN_PEAK_ORACLES}


@pytest.mark.slow
@pytest.mark.parametrize("task_id", sorted(PREOPEN_PEAK_ORACLE_TASKS))
def test_a_window_that_counts_the_pending_row_misses_the_peak_on_its_oldest_session(env: Env, task_id: str) -> None:
    """Before the open on an ex-date the last N rows of ``history()`` hold the pending row and N - 1
    sessions. A highest close or a drawdown changes with that only where the window's oldest session is
    its extreme, which recorded data seldom show: the preopen world of such a task puts a peak there, on
    the stock whose dividend is pending, so a tool reading ``tail(days)`` of the rows with the pending
    one among them fails, and the reference (which drops rows without a close) passes."""
    task = env.judged[task_id]
    [world] = [w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
               if w.kind is WorldKind.PREOPEN]
    assert world.name.endswith(f"-{task_id}-peak") and "a peak" in world.perturbation, world.name
    assert env.judge(task_id, reference(task_id))[0].state == "pass"
    dropped = 'yf.Ticker(symbol).history(period="max")["Close"].dropna()'
    verdict, alone = env.judge(task_id, edited(task_id, dropped, 'yf.Ticker(symbol).history(period="max")["Close"]'))
    assert alone, "right on the snapshot (no pending row there)"
    assert verdict.state == "fail" and "preopen-" in verdict.reason, verdict.reason


@pytest.mark.slow
def test_the_preopen_world_goes_to_every_task_that_reads_the_bars(request: pytest.FixtureRequest) -> None:
    """The preopen world falls on the latest ex-date of the task's own stocks, or where they pay none (the
    index, AMZN, TSLA) of a symbol its probes ask (the ETF); the dividend history (whose readings part on
    an ex-date of today) and the statements' figures (which read no bar) get none."""
    snapshot = load_snapshot(DATA)
    tasks = {t.id: t for t in load_tasks(TASKS)}
    hidden = Worlds(snapshot, 3, 1, list(tasks.values()))
    request.addfinalizer(hidden.close)
    days = {tid: hidden.preopen_day(t) for tid, t in tasks.items()}
    assert days["fetch_005"] == date(2024, 12, 20) and days["calc_001"] == date(2024, 11, 8)  # SPY's, AAPL's
    assert days["fetch_004"] is None and days["calc_004"] is None  # the index and AMZN pay none...
    assert hidden.preopen_day(tasks["fetch_004"], [{"symbol": "SPY"}]) == date(2024, 12, 20)  # ...the ETF does
    for tid in ("fetch_007", "fetch_001", "fetch_003", "fetch_006"):
        assert days[tid] is not None or tid == "fetch_006"
        assert hidden._preopen_world(tasks[tid], [{"symbol": "SPY"}]) is None, tid
    # a yes/no task's day is one where its own answer is yes (a NaN close compares false)
    assert days["comp_002"] == date(2024, 2, 14)


@pytest.mark.slow
def test_a_quote_that_reads_the_book_during_the_session_fails_in_the_midsession_world(env: Env) -> None:
    """Every other world's clock reads the close or before the open, where the last trade is the close.
    The ``midsession`` world is the run's snapshot as recorded while its last session was open: the
    clock at a minute of it, each bar of that day the session so far (the open the day's, the high and
    low the extremes so far, a share of the volume), the quotes the last trade's. A quote that takes the
    book's midpoint while the market is open fails there, one that takes the session before's close too;
    the reference (``fast_info``'s last price) passes, and so does the running bar's close."""
    from finevo.market.replay import as_of_moment
    from finevo.market.snapshot import SESSION_CLOSE, SESSION_OPEN

    task = env.judged["fetch_002"]
    [world] = [w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
               if w.kind is WorldKind.MIDSESSION]
    day = env.snapshot.history("MSFT").index[-1].date()
    moment = world.provider.during_session
    assert world.as_of == day and moment is not None and SESSION_OPEN <= moment < SESSION_CLOSE
    assert as_of_moment(world.provider).strftime("%Y-%m-%d %H:%M") == f"{day} {moment:%H:%M}"
    hidden = load_snapshot(world.path)
    closed = env.worlds._base_market().market  # the run's market the world is cut from: the day's bar whole
    for symbol in hidden.symbols():
        bars, whole = hidden.history_unadjusted(symbol), closed.data[symbol].history
        assert bars.index[-1].date() == day and len(bars) == len(whole), symbol
        last, full = bars.iloc[-1], whole.iloc[-1]
        price, previous = float(last["Close"]), float(bars["Close"].iloc[-2])
        assert last["Low"] <= min(last["Open"], price) and max(last["Open"], price) <= last["High"], symbol
        assert last["Volume"] < full["Volume"], symbol  # the session so far
        for other in (float(last["Open"]), float(full["Close"]), previous):
            assert abs(price - other) >= 1e-3 * price, (symbol, price, other)
        info, fast = hidden.info(symbol), hidden.fast_info(symbol)
        assert fast["lastPrice"] == price and fast["previousClose"] == previous, symbol
        if "bid" in info:
            assert info["regularMarketPrice"] == price and abs((info["bid"] + info["ask"]) / 2 - price) >= 0.01
    result = env.run("import datetime\nimport yfinance as yf\n\n\ndef now(symbol: str) -> list:\n"
                     '    h = yf.Ticker(symbol).history(period="1d")\n'
                     "    return [datetime.datetime.now().strftime('%Y-%m-%d %H:%M'), str(h.index[-1].date()),\n"
                     '            float(h["Close"].iloc[-1]), float(yf.Ticker(symbol).fast_info["lastPrice"])]\n',
                     "now", {"symbol": "MSFT"}, str(world.path))
    assert result.ok, result.error_message
    assert result.value[:2] == [f"{day} {moment:%H:%M}", str(day)] and result.value[2] == result.value[3]
    name = f"midsession-{day.isoformat()}"
    book = edited("fetch_002", '        price = ticker.fast_info["lastPrice"]',
                  "        now = datetime.datetime.now().time()\n"
                  "        if datetime.time(9, 30) <= now < datetime.time(16):\n"
                  '            return (ticker.info["bid"] + ticker.info["ask"]) / 2\n'
                  '        price = ticker.fast_info["lastPrice"]')
    previous_close = edited("fetch_002", 'ticker.fast_info["lastPrice"]',
                            'ticker.info["regularMarketPreviousClose"] if datetime.time(9, 30) '
                            '<= datetime.datetime.now().time() < datetime.time(16) else ticker.fast_info["lastPrice"]')
    for wrong in (book, previous_close):
        verdict, alone = env.judge("fetch_002", wrong)
        assert alone, "right on the snapshot (recorded at the close)"
        assert verdict.state == "fail" and name in verdict.reason, verdict.reason
    running_bar = edited("fetch_002", 'ticker.fast_info["lastPrice"]', "None")
    for right in (reference("fetch_002"), running_bar):
        verdict, _ = env.judge("fetch_002", right)
        assert verdict.state == "pass", verdict.reason
        assert any(w.world == name and w.state == "pass" for w in verdict.worlds)


@pytest.mark.slow
def test_a_latest_close_refused_as_a_bad_tick_fails_in_the_gap_world(env: Env) -> None:
    """Elsewhere the last session moves as sessions mostly do. The ``gap`` world moves every stock's last
    session 18 to 30 % from the close before (an earnings day), on several times its volume, every other
    stock's as a single print, indices and funds as they are: a latest close that refuses a move beyond
    15 % as a bad print raises on the stock a probe asks and fails, one that drops a bar whose High
    equals its Low answers the close before and fails; the reference passes."""
    from runner.judging.world_market import GAP_MOVES, equities

    task = env.judged["fetch_005"]
    [world] = [w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes]) if w.kind is WorldKind.GAP]
    hidden, before = load_snapshot(world.path), env.worlds._base_market().market
    stocks = equities(before)
    assert stocks and {p.oracle_params.get("symbol") for p in task.probes} & set(stocks)
    for symbol in hidden.symbols():
        bars, was = hidden.history_unadjusted(symbol), before.data[symbol].history
        move = bars["Close"].iloc[-1] / bars["Close"].iloc[-2] - 1
        if symbol in stocks:
            assert GAP_MOVES[0] - 0.01 <= abs(move) <= GAP_MOVES[1] + 0.01, (symbol, move)
            assert bars["Volume"].iloc[-1] > 2 * was["Volume"].iloc[-1], symbol
            assert hidden.fast_info(symbol)["lastPrice"] == bars["Close"].iloc[-1]
            last = bars[["Open", "High", "Low", "Close"]].iloc[-1]
            single = symbol in sorted(stocks)[::2]
            assert (last.nunique() == 1) is single and f"{symbol} " in world.perturbation, (symbol, last)
        else:
            pd.testing.assert_frame_equal(bars, was, check_freq=False)
    assert "AAPL" in sorted(stocks)[::2] and {"symbol": "AAPL"} in [dict(p.oracle_params) for p in task.probes]
    guarded = edited("fetch_005", "    return float(closes.iloc[-1])",
                     "    if abs(closes.iloc[-1] / closes.iloc[-2] - 1) > 0.15:\n"
                     '        raise ValueError("bad tick")\n'
                     "    return float(closes.iloc[-1])")
    placeholders = edited("fetch_005", "    return float(closes.iloc[-1])",
                          "    bars = yf.Ticker(symbol).history(period=\"3mo\").dropna(subset=[\"Close\"])\n"
                          "    return float(bars[bars[\"High\"] > bars[\"Low\"]][\"Close\"].iloc[-1])")
    for wrong in (guarded, placeholders):
        verdict, alone = env.judge("fetch_005", wrong)
        assert alone, "right for SPY on the snapshot"
        assert verdict.state == "fail" and "gap-" in verdict.reason, verdict.reason
    reference_verdict, _ = env.judge("fetch_005", reference("fetch_005"))
    assert reference_verdict.state == "pass", reference_verdict.reason
    assert any(w.world.startswith("gap-") and w.state == "pass" for w in reference_verdict.worlds)


def test_only_a_latest_price_gets_the_midsession_and_gap_worlds(request: pytest.FixtureRequest) -> None:
    """During a session "the latest close" parts (the session before's, or the running bar's), so only
    the quote's task, whose readings all give the last trade there, is judged in it; every task of the
    latest price is judged in the gap world."""
    tasks = {t.id: t for t in load_tasks(TASKS)}
    hidden = Worlds(load_snapshot(DATA), 3, 1, list(tasks.values()))
    request.addfinalizer(hidden.close)
    assert {tid for tid, t in tasks.items() if hidden._midsession_world(t) is not None} == {"fetch_002"}
    assert {tid for tid, t in tasks.items() if hidden._gap_world(t) is not None} == {"fetch_002", "fetch_004",
                                                                                   "fetch_005"}


#: The benchmark's tasks that read an RSI (each gets the rally listing world).
RSI_TASKS = sorted(t.id for t in load_tasks(TASKS) if t.oracle.name in RALLY_ORACLES)


def test_the_rally_listing_world_is_built_for_every_task_that_reads_an_rsi() -> None:
    """Every task whose oracle is an RSI or takes an RSI's parameters (``rsi_window``...) is one."""
    reads_rsi = sorted(t.id for t in load_tasks(TASKS)
                       if t.oracle.name == "rsi" or any(k.startswith("rsi_") for k in t.oracle.params))
    assert reads_rsi == RSI_TASKS and RSI_TASKS


@pytest.mark.slow
def test_the_seed_world_ends_the_rsi_subject_on_a_run_of_gains_and_rs_zero_fails(env: Env) -> None:
    """A stock in a steady rally: the seed world's last closes of the RSI task's subject all rise, so
    an RSI over the last ``days`` closes has no loss to divide by and is 100. A tool that guards the
    zero average loss with ``rs = 0`` answers 0 there: right wherever a window holds a loss, it fails."""
    task = env.tasks["calc_001"]
    assert task.intent.args["symbol"] == RISING_SYMBOL and task.intent.args["days"] <= RISING_SESSIONS
    world = next(w for w in env.worlds.for_task(env.judged["calc_001"], []) if w.kind is WorldKind.SEED)
    closes = world.provider.history(RISING_SYMBOL)["Close"].to_numpy(dtype=float)
    changes = np.diff(closes[-RISING_SESSIONS:])  # a session missing inside it: one fewer
    assert (changes >= 0).all() and (changes[:RISING_SESSIONS - RECENT_HALT_SESSIONS[1] - 2] > 0).all()  # then a halt
    assert expected_values(task, world.provider)["last_30_days"] == 100.0
    verdict, alone = env.judge("calc_001", edited("calc_001", "if avg_loss == 0.0:\n        return 100.0",
                                                  "rs = avg_gain / avg_loss if avg_loss else 0.0\n"
                                                  "    return 100.0 - 100.0 / (1.0 + rs)"))
    assert alone, "right for the task's own arguments on the snapshot (its window holds a loss)"
    assert verdict.state == "fail" and "seed-" in verdict.reason, verdict.reason


@pytest.mark.slow
@pytest.mark.parametrize("task_id", RSI_TASKS)
def test_a_task_reading_an_rsi_is_judged_where_its_stock_never_closed_lower(env: Env, task_id: str) -> None:
    """The seed world's rally comes after years of history: Wilder's average loss over all of it decays
    and never reaches zero there. In the rally listing world the task's own stock is a recent listing
    whose every close lies above the one before: no loss at all, an RSI of 100 under every reading."""
    task = env.judged[task_id]
    assert task.oracle.name in RALLY_ORACLES
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.kind is WorldKind.LISTING and w.name.endswith("-rally"))
    closes = world.provider.history(RISING_SYMBOL)["Close"].to_numpy(dtype=float)
    turn = RALLY_TURN if task.oracle.name in RALLY_TURN_ORACLES else 0
    assert len(closes) == RALLY_SESSIONS + turn and (np.diff(closes[:RALLY_SESSIONS]) > 0).all(), closes
    assert "a recent listing, every close above the one before" in world.perturbation
    if turn:  # the rally turns: the stock's own moves, losses among them, after it
        assert (np.diff(closes[RALLY_SESSIONS - 1:]) < 0).any() and f"then {turn} sessions" in world.perturbation
    # the task's own arguments fit the history with ten times the RSI window of warm-up: only the value
    # is right for them there; probes at long windows may be refused
    assert world.may_raise_for is not None and 0 not in world.may_raise_for


@pytest.mark.slow
@pytest.mark.parametrize("guard", [
    "rs = avg_gain / avg_loss if avg_loss else 0.0\n    return 100.0 - 100.0 / (1.0 + rs)",  # RSI 0
    "if avg_loss == 0.0:\n        raise ValueError('RSI undefined: no losses')",  # no answer
], ids=["rs-zero", "refused"])
def test_an_rsi_of_all_history_that_mistakes_a_zero_average_loss_fails_in_the_rally_listing_world(env: Env,
                                                                                                  guard: str) -> None:
    """A tool that reads RSI from all the history (an accepted reading) and, where the average loss is
    zero, answers ``rs = 0`` (RSI 0) or raises ("RSI undefined"): the seed world's rally never shows it
    (a loss years back keeps Wilder's average above zero); a stock that has never closed lower does.
    The rally world's months of gains hold every reading's warm-up for the task's own window, so a clear
    error is no answer for its own arguments there (RSI 100 is); a probe at a long window, which may ask
    more warm-up than the history holds, may still be refused."""
    task = env.tasks["calc_001"]
    world = next(w for w in env.worlds.for_task(env.judged["calc_001"], []) if w.name.endswith("-rally"))
    assert set(expected_values(task, world.provider).values()) == {100.0}
    code = edited("calc_001", "change = closes.tail(days).diff().dropna()", "change = closes.diff().dropna()")
    code = code.replace("if avg_loss == 0.0:\n        return 100.0", guard)
    verdict, alone = env.judge("calc_001", code)
    assert alone, "right for the task's own arguments on the snapshot (all history holds losses)"
    assert verdict.state == "fail" and "listing-" in verdict.reason, verdict.reason
    judged = [(w.kind, w.state) for w in verdict.worlds if w.state != "skipped"]
    assert judged[-1] == (WorldKind.LISTING.value, "fail") and {s for _, s in judged[:-1]} == {"pass"}, judged


@pytest.mark.slow
def test_signals_that_make_a_zero_average_loss_nan_fail_where_the_rally_turns(env: Env) -> None:
    """comp_004 counts the sessions whose RSI is above 70 over all the history. A tool that replaces a
    zero average loss by NaN "to avoid a division by zero" has no RSI, so no signal, on the days of a
    rally (RSI 100 under every reading): on the snapshot every stock had a loss before its first RSI,
    so it passes there. In the rally world the listing's rally turns, and such a tool counts only the
    signals after the turn."""
    task = env.judged["comp_004"]
    world = next(w for w in env.worlds.for_task(task, [p.oracle_params for p in task.probes])
                 if w.name.endswith("-rally"))
    assert f"then {RALLY_TURN} sessions" in world.perturbation
    code = edited("comp_004", "rsi = (100.0 - 100.0 / (1.0 + avg_gain / avg_loss)).where(avg_loss != 0, 100.0)",
                  "rsi = 100.0 - 100.0 / (1.0 + avg_gain / avg_loss.replace(0.0, float('nan')))")
    verdict, alone = env.judge("comp_004", code)
    assert alone, "right for the task's own arguments on the snapshot (a loss before every RSI)"
    assert verdict.state == "fail" and "listing-" in verdict.reason, verdict.reason


@pytest.mark.slow
def test_the_seed_world_ends_each_extreme_measures_subject_on_a_record_close(env: Env) -> None:
    """The seed world's as-of day is a session, and the subjects of the highest close and the max
    drawdown end there on a record (a rally to a high above every close of the year before, a slide to
    a low below every one): the latest session alone decides both answers, so a tool that drops it
    (yfinance's exclusive ``end``) answers another value there, whatever the window."""
    from finevo.market.calendar import is_trading_day

    assert is_trading_day(env.worlds.variants(WorldKind.SEED, 0)[0][2].market.as_of)
    for task_id, (symbol, down) in zip(("fetch_008", "calc_007"), RECORD_TAILS, strict=True):
        task = env.tasks[task_id]
        assert task.intent.args["symbol"] == symbol
        world = next(w for w in env.worlds.for_task(env.judged[task_id], []) if w.kind is WorldKind.SEED)
        closes = world.provider.history(symbol)["Close"].to_numpy(dtype=float)
        year = closes[-RECORD_REACH - RISING_SESSIONS:-1]
        moves = np.diff(closes[-RISING_SESSIONS:])
        if down:
            assert closes[-1] < year.min() and (moves < 0).all()
            peak = closes[-task.intent.args["days"]:].max()
            assert expected_values(task, world.provider)["negative_fraction"] == pytest.approx(closes[-1] / peak - 1.0)
        else:
            assert closes[-1] > year.max() and (moves > 0).all()
            assert set(expected_values(task, world.provider).values()) == {closes[-1]}


@pytest.mark.slow
def test_the_seed_world_lists_a_penny_stock_where_a_value_rounded_to_four_decimals_is_off(env: Env) -> None:
    """The stock nearly every task asks trades under a few dollars in the seed world: its bars and
    dividends scaled by one factor (returns and yields kept), so a moving average rounded to four
    decimals, within tolerance at $200, is up to 5e-5 off at $1 and fails there; the reference passes."""
    world = next(w for w in env.worlds.for_task(env.judged["calc_002"], []) if w.kind is WorldKind.SEED)
    bars = world.provider.history_unadjusted(PENNY_SYMBOL)
    assert PENNY_LEVELS[0] <= bars["Close"].iloc[-1] <= PENNY_LEVELS[1], bars["Close"].iloc[-1]
    paid = bars["Dividends"][bars["Dividends"] > 0]
    yields = paid / bars["Close"].shift(1).reindex(paid.index)
    assert len(paid) and (yields < 0.05).all(), "its dividends scaled with it: a yield of a stock, not 40 %"
    assert f"{PENNY_SYMBOL} a penny stock" in world.perturbation
    rounded = edited("calc_002", "return [float(v) for v in average]", "return [round(float(v), 4) for v in average]")
    verdict, alone = env.judge("calc_002", rounded)
    assert alone, "right on the snapshot (MSFT at hundreds of dollars)"
    assert verdict.state == "fail" and "seed-" in verdict.reason, verdict.reason
    right, _ = env.judge("calc_002", reference("calc_002"))
    assert right.state == "pass", right.reason


@pytest.mark.slow
@pytest.mark.parametrize(("task_id", "old", "new"), [
    # where the n-session range is zero, the RSV before it carried forward instead of 50
    ("calc_006", ".fillna(50.0).iloc[n - 1:]", ".iloc[n - 1:].ffill().fillna(50.0)"),
    # a latest bar of Volume 0 dropped as "not traded yet": the bands one session stale
    ("calc_003", 'closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()',
     'bars = yf.Ticker(symbol).history(period="max")\n'
     '    closes = (bars.iloc[:-1] if bars["Volume"].iloc[-1] == 0 else bars)["Close"].dropna()'),
])
def test_a_halt_up_to_the_as_of_day_fails_a_tool_wrong_on_halted_bars(env: Env, task_id: str, old: str,
                                                                     new: str) -> None:
    """The seed world halts the KDJ and Bollinger subjects over their last sessions (flat bars, Volume
    0, the as-of day's too): a KDJ reads a range of zero there (RSV 50) and the latest bar is still a
    session. A tool that carries the RSV forward, or drops a bar of Volume 0, is right wherever the
    halt lies further back, and fails."""
    task = env.tasks[task_id]
    symbol = task.intent.args["symbol"]
    assert symbol in RECENT_HALT_SYMBOLS
    world = next(w for w in env.worlds.for_task(env.judged[task_id], []) if w.kind is WorldKind.SEED)
    bars = world.provider.history_unadjusted(symbol)
    last = bars.iloc[-1]
    assert last["Volume"] == 0 and last["High"] == last["Low"] == last["Close"] == last["Open"]
    flat = bars.tail(RECENT_HALT_SESSIONS[0] - 1)  # a session missing inside it: one fewer
    assert (flat["Volume"] == 0).all() and (flat["High"] == flat["Low"]).all() and flat["Close"].nunique() == 1
    assert "a trading halt up to the as-of day" in world.perturbation
    verdict, alone = env.judge(task_id, edited(task_id, old, new))
    assert alone, "right for the task's own arguments on the snapshot (no halt there)"
    assert verdict.state == "fail" and "seed-" in verdict.reason, verdict.reason


@pytest.mark.slow
def test_a_correlation_over_a_halted_window_must_raise(env: Env) -> None:
    """A measure that divides by a dispersion is undefined where a series does not move: the derived
    probe asks the correlation at its shortest window, inside the seed world's halt of AAPL up to its
    as-of day, and the judge expects a clear error there (the oracle's ``Undefined``), not "not judged".
    A tool that answers 0.0 ("no co-movement") fails; one that raises passes (FLAT_CHECKED, RIGHT)."""
    task = env.judged["calc_008"]
    flat = [i for i, p in enumerate(task.probes, start=1) if p.args == {"days": 5}]
    assert flat, [p.args for p in task.probes]
    world = next(w for w in env.worlds.for_task(task, []) if w.kind is WorldKind.SEED)
    answers = dict(a for a in world_answers(task, world) if not isinstance(a, str))
    assert RAISES in answers[flat[0]] and "does not move" in str(answers[flat[0]][RAISES])
    assert RAISES not in answers[0]  # the task's own window still moves
    wrong = edited("calc_008", 'raise ValueError("correlation is undefined for a constant series")', "return 0.0")
    verdict, alone = env.judge("calc_008", wrong)
    assert alone and verdict.state == "fail", verdict.reason
    assert verdict.reason.startswith("world seed-") and f"probe {flat[0]} (days=5)" in verdict.reason, verdict.reason
    assert "expected a clear error" in verdict.reason


ZERO_VOLUME_KEPT = """import yfinance as yf


def latest_close(symbol: str) -> float:
    bars = yf.Ticker(symbol).history(period="1mo").dropna(subset=["Close"])
    if bars.empty:
        raise ValueError("no bars")
    return float(bars["Close"].iloc[-1])
"""


@pytest.mark.slow
def test_an_index_with_volume_0_on_its_latest_sessions_fails_a_tool_that_drops_them(env: Env) -> None:
    """The seed world serves the index with Volume 0 on its last sessions, their closes moving (Yahoo's
    unconsolidated latest sessions; ^VIX on every bar): a "latest close" that drops bars of Volume 0
    answers a stale close and fails; one that keeps them passes in every world."""
    world = next(w for w in env.worlds.for_task(env.judged["fetch_004"], []) if w.kind is WorldKind.SEED)
    bars = world.provider.history_unadjusted("^GSPC")
    tail = bars.tail(NO_VOLUME_SESSIONS + 1)
    assert (tail["Volume"].iloc[1:] == 0).all() and tail["Volume"].iloc[0] > 0
    assert tail["Close"].nunique() == len(tail)  # the closes move
    assert "Volume 0 on an index's latest sessions" in world.perturbation
    verdict, _ = env.judge("fetch_004", ZERO_VOLUME_KEPT)
    assert verdict.state == "pass", verdict.reason
    wrong = ZERO_VOLUME_KEPT.replace('.dropna(subset=["Close"])', '.dropna(subset=["Close"])\n'
                                     '    bars = bars[bars["Volume"] > 0]')
    verdict, alone = env.judge("fetch_004", wrong)
    assert alone and verdict.state == "fail" and verdict.reason.startswith("world seed-"), verdict.reason
    # a task on a stock is asked about the index too, whatever the seed (the ETF has its own probe)
    quote, dropped = (code.replace("def latest_close", "def latest_quote") for code in (ZERO_VOLUME_KEPT, wrong))
    for seed in (1, 5):
        task = env.tasks["fetch_002"]
        task = task.model_copy(update={"probes": probes_for(task, env.snapshot, seed=seed)})
        verdict, _ = env.judge("fetch_002", quote, task)
        assert verdict.state == "pass", verdict.reason
        verdict, alone = env.judge("fetch_002", dropped, task)
        assert alone and verdict.state == "fail" and "(symbol=^GSPC)" in verdict.reason, verdict.reason
