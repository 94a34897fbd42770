"""Argument sets where the accepted readings part: some answer, others refuse.

RSI-14 "over the last 10 days" has no answer under the literal reading (ten closes hold nine
changes) and one under the whole-history reading; net income for "2023 Q1" of a company whose
quarters end in January, April, July and October has none under the calendar reading and one under
the fiscal reading. There a tool passes by giving the value of an answering reading -- the one its
other values match -- or by raising a clear error, as a refusing reading does; any other value
fails. Each tool below is right for its task's own arguments on the snapshot. A dividend window opening
before the data's first bar is judged so too: the dividends held, or a clear error (what lies before
is unknown).
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from finevo.errors import InputError
from finevo.outcome import Outcome
from finevo.sandbox.api import ExecutionResult
from runner.inputs.tasks import Probe, Task
from runner.judging.grade import Reruns, judge_task, world_answers
from runner.judging.oracle import OR_RAISES, RAISES, expected_values, judged_values, probe_expected_values, rsi_series
from runner.judging.probes import probes_for
from runner.judging.world_statements import OFF_CYCLE_SYMBOL
from runner.judging.worlds import WorldKind
from tests.runner.test_worlds import SEED, Env, env, reference

__all__ = ["env"]  # the judge's harness of tests/runner/test_worlds.py, shared
# The harness (a warm sandbox, three hidden worlds, every task's probes) is a module fixture: one worker
# runs the module, so it is built once, not once per worker (the module's tests landed on both).
pytestmark = pytest.mark.xdist_group("mixed-readings")

TEN_DAYS = {"days": 10}


def _with_probe(task: Task, args: dict[str, Any]) -> Task:
    return task.model_copy(update={"probes": (Probe(args=args, oracle_params=args, reason="readings part"),)})


# --------------------------------------------------------------------------- the oracle
def test_the_oracle_gives_the_answering_readings_and_says_which_refuse(tasks, snapshot) -> None:
    task = tasks["calc_001"]
    mixed = judged_values(task, snapshot, TEN_DAYS)
    answering = {k for k in mixed if k != OR_RAISES}
    assert answering and all(k.startswith("full_history") for k in answering)
    assert "last_30_days" in str(mixed[OR_RAISES]) and "no answer here" in str(mixed[OR_RAISES])
    with pytest.raises(InputError):  # the strict form, for a task's own arguments, still refuses it
        expected_values(task, snapshot, TEN_DAYS)
    assert judged_values(task, snapshot) == expected_values(task, snapshot)  # every reading answers
    with pytest.raises(InputError, match="last_30_days"):  # no reading answers: the first one's reason
        judged_values(task, snapshot, {"window": 100_000})


def test_a_probe_expecting_an_error_that_a_reading_answers_is_judged_as_mixed(tasks, snapshot) -> None:
    task = tasks["calc_001"]
    beyond = {"days": 100_000}  # the literal reading has no such history, the whole-history one ignores it
    probe = Probe(args=beyond, oracle_params=beyond, expect_error=True, reason="beyond the data")
    [expected] = probe_expected_values(task.model_copy(update={"probes": (probe,)}), snapshot)
    assert OR_RAISES in expected and RAISES not in expected
    nothing = {"window": 100_000}
    probe = Probe(args=nothing, oracle_params=nothing, expect_error=True, reason="beyond the data")
    [expected] = probe_expected_values(task.model_copy(update={"probes": (probe,)}), snapshot)
    assert set(expected) == {RAISES}


@pytest.mark.slow
def test_a_lookback_where_the_readings_part_is_probed(tasks, snapshot) -> None:
    task = tasks["calc_001"]
    probes = probes_for(task, snapshot, SEED)
    parted = [p for p in probes if not p.expect_error and OR_RAISES in judged_values(task, snapshot, p.oracle_params)]
    assert {next(iter(p.args)) for p in parted} >= {"days", "window"}, [p.args for p in probes]
    assert all(p.args.get("days", 30) <= p.args.get("window", 14) for p in parted)  # the literal reading refuses


# --------------------------------------------------------------------------- the judge, with scripted runs
def _judge(task: Task, snapshot: Any, main: str, answer: Any) -> Any:
    """Judge a tool whose value for the task's own arguments is reading ``main``'s and whose run on the
    probe gives ``answer`` (an :class:`ExecutionResult`)."""
    expected = expected_values(task, snapshot)
    outcome = Outcome(task_id=task.id, value=expected[main], tool_code="def rsi(**kw):\n    pass\n", stage="done")

    def run(code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        if args == dict(task.intent.args):
            return ExecutionResult(status="ok", value=expected[main])
        return answer

    return judge_task(task, outcome, expected, 0.0, Reruns(run, probe_expected=probe_expected_values(task, snapshot)))


def _widened(snapshot: Any, window: int) -> float:
    """RSI-14 from the last 2 x window closes: the literal reading with its lookback silently widened."""
    closes = snapshot.history("AAPL")["Close"].astype(float)
    return float(rsi_series(closes.iloc[-2 * window:], window).iloc[-1])


def test_a_third_value_where_the_readings_part_fails(tasks, snapshot) -> None:
    task = _with_probe(tasks["calc_001"], TEN_DAYS)
    [expected] = probe_expected_values(task, snapshot)
    third = _widened(snapshot, 14)
    assert all(abs(third - v) > 1e-3 for k, v in expected.items() if k != OR_RAISES)  # no reading gives it
    for main in ("last_30_days", "full_history"):
        result = _judge(task, snapshot, main, ExecutionResult(status="ok", value=third))
        assert result.state == "fail" and result.reason.startswith("probe 1 (days=10): expected a clear error"), \
            result.reason
        assert result.probes[0].state == "fail"


def test_a_clear_error_where_the_readings_part_passes_whichever_reading_the_tool_follows(tasks, snapshot) -> None:
    task = _with_probe(tasks["calc_001"], TEN_DAYS)
    raised = ExecutionResult(status="exception", error_type="ValueError", error_message="need days > window")
    for main in ("last_30_days", "full_history"):
        result = _judge(task, snapshot, main, raised)
        assert result.state == "pass", result.reason
        assert result.probes[0].state == "pass" and "raises (ValueError)" in result.probes[0].reason
        assert result.convention == main


def test_the_answering_readings_value_passes_only_for_a_tool_that_follows_it(tasks, snapshot) -> None:
    task = _with_probe(tasks["calc_001"], TEN_DAYS)
    [expected] = probe_expected_values(task, snapshot)
    whole = ExecutionResult(status="ok", value=expected["full_history"])
    result = _judge(task, snapshot, "full_history", whole)
    assert result.state == "pass" and result.convention == "full_history", result.reason
    # the literal reading elsewhere, the whole history here: no one reading holds throughout
    result = _judge(task, snapshot, "last_30_days", whole)
    assert result.state == "fail" and "expected a clear error" in result.reason, result.reason


def test_a_run_that_breaks_where_the_readings_part_still_fails(tasks, snapshot) -> None:
    task = _with_probe(tasks["calc_001"], TEN_DAYS)
    result = _judge(task, snapshot, "last_30_days", ExecutionResult(status="timeout", layer="timeout"))
    assert result.state == "fail" and "timed out" in result.reason


# --------------------------------------------------------------------------- a window opening before the data
def test_a_dividend_window_opening_before_the_data_may_be_refused_or_answered(tasks, snapshot) -> None:
    # the snapshot's bars start 2022-01-03: five years back from its as-of day reaches before them
    task = _with_probe(tasks["fetch_007"], {"years": 5})
    [expected] = probe_expected_values(task, snapshot)
    assert "the data start 2022-01-03, after the window's start" in str(expected[OR_RAISES])
    refused = ExecutionResult(status="exception", error_type="ValueError", error_message="AAPL: the data start 2022")
    result = _judge(task, snapshot, "ex_date_within_3_years", refused)
    assert result.state == "pass", result.reason
    held = ExecutionResult(status="ok", value=expected["ex_date_within_3_years"])
    assert _judge(task, snapshot, "ex_date_within_3_years", held).state == "pass"
    # inside the data a clear error is no answer: the task's own three years, and a probe of two
    inside = _with_probe(tasks["fetch_007"], {"years": 2})
    [expected] = probe_expected_values(inside, snapshot)
    assert OR_RAISES not in expected
    assert _judge(inside, snapshot, "ex_date_within_3_years", refused).state == "fail"
    # an earlier as-of day whose own three years reach before the data is still posed for the main value
    assert expected_values(tasks["fetch_007"], snapshot)


# --------------------------------------------------------------------------- real tools, probes and worlds
@pytest.fixture(scope="module")
def drawn(env: Env) -> Env:
    """The harness with every task's probes drawn from the run's seed too, as the gate draws them."""
    judged = {k: t.model_copy(update={"probes": probes_for(t, env.snapshot, SEED)}) for k, t in env.tasks.items()}
    return Env(env.snapshot, env.tasks, judged, env.worlds, env.sandbox)


RSI_HEAD = '''"""RSI of the latest session."""

import yfinance as yf


def rsi(symbol: str, window: int = 14, days: int = 30) -> float:
    """Wilder's RSI (0..100)."""
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
'''
RSI_TAIL = '''    if len(closes) <= window:
        raise ValueError(f"{len(closes)} closes cannot seed an RSI of {window}")
    moves = closes.diff().dropna()
    up = moves.clip(lower=0.0).ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1]
    down = (-moves).clip(lower=0.0).ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1]
    return 100.0 if down == 0 else float(100.0 - 100.0 / (1.0 + up / down))
'''
#: The literal reading; too few closes for the window: the lookback doubled to fit (a value no reading gives).
RSI_REPAIRED = RSI_HEAD + '''    if days <= window:
        days = 2 * window
    if len(closes) < days:
        raise ValueError(f"need {days} closes")
    closes = closes.iloc[len(closes) - days:]
''' + RSI_TAIL
#: The literal reading; too few closes for the window: a clear error.
RSI_REFUSING = RSI_HEAD + '''    if len(closes) < days:
        raise ValueError(f"need {days} closes")
    closes = closes.iloc[len(closes) - days:]
    if len(closes) - 1 < window:
        raise ValueError(f"{days} closes hold {len(closes) - 1} changes, fewer than the window {window}")
''' + RSI_TAIL
#: The whole-history reading (a charting platform's RSI): ``days`` does not change it.
RSI_WHOLE = RSI_HEAD + RSI_TAIL


@pytest.mark.slow
@pytest.mark.parametrize(("code", "passes"), [(RSI_REPAIRED, False), (RSI_REFUSING, True), (RSI_WHOLE, True)],
                         ids=["repaired", "refusing", "whole-history"])
def test_rsi_tools_where_the_window_outgrows_the_lookback(drawn: Env, code: str, passes: bool) -> None:
    verdict, alone = drawn.judge("calc_001", code)
    assert alone, "right for the task's own arguments on the snapshot"
    assert (verdict.state == "pass") is passes, verdict.reason
    if not passes:
        assert "expected a clear error" in verdict.reason, verdict.reason


def _seed_world(env: Env, task_id: str) -> Any:
    return next(w for w in env.worlds.for_task(env.judged[task_id], []) if w.kind is WorldKind.SEED)


@pytest.mark.slow
def test_the_seed_world_holds_a_company_whose_quarters_end_a_month_off_the_calendars(env: Env) -> None:
    world = _seed_world(env, "fetch_001")
    task = env.tasks["fetch_001"]
    for freq, months in (("quarterly", {1, 4, 7, 10}), ("yearly", {7})):
        frame = world.provider.income_stmt(OFF_CYCLE_SYMBOL, freq)
        # the month a period ends in: a 52/53-week date early in a month ends the one before
        ends = {((pd.Timestamp(c) + pd.Timedelta(days=15)).to_period("M") - 1).month for c in frame.columns}
        assert ends == months, (freq, list(frame.columns))
    args = {"symbol": OFF_CYCLE_SYMBOL, "year": 2023, "quarter": 1}
    values = judged_values(task, world.provider, args)
    assert set(values) == {"fiscal_quarter", OR_RAISES}  # the calendar reading has no answer, the fiscal one has
    # judged there: the probe naming the company is answered in the world, not left out
    judged = env.judged["fetch_001"]
    index = next(i for i, p in enumerate(judged.probes, start=1) if p.args == {"symbol": OFF_CYCLE_SYMBOL})
    answers = dict(a for a in world_answers(judged, world) if not isinstance(a, str))
    assert OR_RAISES in answers[index] and "fiscal_quarter" in answers[index]


NET_INCOME_FISCAL = '''"""Net income of one of the company's own fiscal quarters."""

import pandas as pd
import yfinance as yf


def _month(stamp) -> int:
    """The month a statement period ends in (a 52/53-week date early in a month ends the one before)."""
    stamp = pd.Timestamp(stamp)
    return (stamp - pd.Timedelta(days=16)).month if stamp.day < 16 else stamp.month


def net_income(symbol: str, year: int | None = None, quarter: int | None = None) -> float:
    """Net Income of fiscal ``quarter`` of the fiscal year ending in ``year``; neither: the latest reported."""
    ticker = yf.Ticker(symbol)
    row = ticker.quarterly_income_stmt.loc["Net Income"]
    if (year is None) != (quarter is None):
        raise ValueError("year and quarter go together")
    if year is None:
        reported = row.dropna()
        if reported.empty:
            raise ValueError("nothing reported")
        return float(reported[max(reported.index)])
    last = _month(ticker.income_stmt.columns[0])
    first = (last % 12) + 1  # the fiscal year starts the month after the last one ends
    ends = pd.Timestamp(year=year - 1 if first != 1 else year, month=first, day=1) \\
        + pd.offsets.MonthEnd(3 * quarter)
    near = [c for c in row.index if abs((pd.Timestamp(c) - ends).days) <= 15]
    if not near or pd.isna(row[near[0]]):
        raise ValueError(f"no fiscal {year} Q{quarter}")
    return float(row[near[0]])
'''


@pytest.mark.slow
@pytest.mark.parametrize(("code", "passes"), [
    # calendar quarters matched within 40 days: off-cycle quarters are taken for calendar ones
    (lambda: reference("fetch_001").replace("gap <= 15", "gap <= 40"), False),
    (lambda: reference("fetch_001"), True),  # calendar quarters: a clear error for the off-cycle company
    (lambda: NET_INCOME_FISCAL, True),  # the company's own fiscal quarters
], ids=["calendar-40-days", "calendar", "fiscal"])
def test_net_income_tools_for_a_company_off_the_calendar_quarters(drawn: Env, code: Any, passes: bool) -> None:
    source = code()
    verdict, alone = drawn.judge("fetch_001", source)
    assert alone, "right for the task's own arguments on the snapshot"
    assert (verdict.state == "pass") is passes, verdict.reason
    if not passes:
        assert f"symbol={OFF_CYCLE_SYMBOL}" in verdict.reason and "expected a clear error" in verdict.reason, \
            verdict.reason
