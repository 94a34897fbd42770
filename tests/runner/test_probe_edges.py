"""Arguments at the edge of their range: a bounded argument at its last value, a length at the data's limit.

Each test judges a tool written the way a model writes it -- right for the task's own arguments --
exactly as the gate judges a final tool (its probes, listed, derived and drawn from a seed, and the
hidden worlds of that seed), in this process on the replay shim, and shows that the judge fails it
while the same tool without its one mistake passes.
"""

from __future__ import annotations

from typing import Any

import pytest

from finevo.outcome import Outcome
from finevo.sandbox import Limits
from finevo.sandbox.api import ExecutionResult
from runner.inputs.tasks import Task
from runner.judging.grade import Reruns, judge_task
from runner.judging.oracle import expected_values, probe_expected_values
from runner.judging.probes import probes_for
from runner.judging.worlds import Worlds

# Each judges a tool through every probe and hidden world of a seed: seconds of CPU, outside the inner loop.
pytestmark = pytest.mark.slow

SEED = 1


def _judge(task: Task, code: str, entry: str, snapshot: Any, tasks: dict[str, Task], runner: Any) -> Any:
    """The gate's verdict on ``code`` as the final tool of ``task`` (probes and worlds of :data:`SEED`)."""
    judged = task.model_copy(update={"probes": probes_for(task, snapshot, SEED)})

    def run(code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        return runner.run(code, entry, args, Limits(timeout_s=30.0), snapshot_dir=snapshot_dir)

    main = run(code, entry, dict(task.intent.args))
    assert main.ok, main
    outcome = Outcome(task_id=task.id, value=main.value, tool_code=code, stage="done")
    with Worlds(snapshot, 3, SEED, list(tasks.values())) as worlds:
        return judge_task(judged, outcome, expected_values(judged, snapshot), 0.0,
                          Reruns(run, probe_expected=probe_expected_values(judged, snapshot), worlds=worlds))


# --------------------------------------------------------------------------- a bounded argument at its last value
_NET_INCOME = '''import math
from datetime import datetime, timedelta

import pandas as pd
import yfinance as yf


def net_income(symbol: str, year: int | None = None, quarter: int | None = None) -> float:
    row = yf.Ticker(symbol).quarterly_income_stmt.loc["Net Income"]
    if (year is None) != (quarter is None):
        raise ValueError("give both year and quarter, or neither")
    if year is None:
        for end in sorted(row.index, reverse=True):
            if math.isfinite(float(row[end])):
                return float(row[end])
        raise ValueError("no reported quarter")
    if not 1 <= quarter <= 4:
        raise ValueError("quarter must be 1..4")
    QUARTER_END
    for end in row.index:
        if abs((pd.Timestamp(end).tz_localize(None).normalize() - pd.Timestamp(nominal)).days) <= 15:
            if math.isfinite(float(row[end])):
                return float(row[end])
    raise ValueError(f"{symbol} has no Net Income for {year} Q{quarter}")
'''


def test_a_quarter_is_probed_at_the_years_last_one_where_month_arithmetic_rolls_over(tasks, snapshot,
                                                                                       in_process) -> None:
    """``datetime(year, 3 * quarter + 1, 1) - 1 day`` is right for Q1-Q3 and raises for Q4 (month 13):
    the derived quarter probe asks Q4 first, so the tool fails; the quarter's end built without the
    rollover passes. The other quarters follow (every value of a small domain is asked)."""
    from runner.inputs.oracle_params import param_bounds

    task = tasks["fetch_001"]
    assert param_bounds("net_income", "quarter") == (1, 4)
    asked = [p.args["quarter"] for p in probes_for(task, snapshot, SEED) if p.args.get("quarter") is not None]
    assert asked == [4, 2, 3]
    month_13 = _NET_INCOME.replace("QUARTER_END", "nominal = datetime(year, 3 * quarter + 1, 1) - timedelta(days=1)")
    failed = _judge(task, month_13, "net_income", snapshot, tasks, in_process)
    assert failed.state == "fail" and "quarter=4" in failed.reason, failed.reason
    right = _NET_INCOME.replace("QUARTER_END", "nominal = pd.Timestamp(year, 3 * quarter, 1) + pd.offsets.MonthEnd(0)")
    passed = _judge(task, right, "net_income", snapshot, tasks, in_process)
    assert passed.state == "pass", passed.reason


# --------------------------------------------------------------------------- a length at the data's limit
_MOVING_AVERAGE = '''import yfinance as yf


def moving_average(symbol: str, window: int = 5, days: int = 20) -> list:
    if window <= 0 or days <= 0:
        raise ValueError("window and days must be positive")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < NEEDED:
        raise ValueError(f"need {NEEDED} closes of {symbol}, have {len(closes)}")
    return [float(v) for v in closes.rolling(window).mean().dropna().tail(days)]
'''


def test_a_length_is_probed_at_the_datas_limit_and_just_past_it(tasks, snapshot, in_process) -> None:
    """``days`` SMA-5 values need ``days + 4`` closes: a check asking ``days + 5`` raises where the data
    hold exactly enough, and passed while no probe sat at the limit. The probes now hold the limit
    (the oracle answers) beside the value just past it (the oracle refuses): the off-by-one check
    fails, the exact one passes, and a tool with no check at all fails just past the limit."""
    task = tasks["calc_002"]
    closes = len(snapshot.history("MSFT"))
    probes = {(p.args.get("days"), p.expect_error) for p in probes_for(task, snapshot, SEED) if set(p.args) == {"days"}}
    assert {(closes - 4, False), (closes - 3, True)} <= probes, probes
    off_by_one = _judge(task, _MOVING_AVERAGE.replace("NEEDED", "window + days"), "moving_average", snapshot, tasks,
                        in_process)
    limits = (f"days={closes - 4})", f"window={closes - 19})")  # either length at its limit
    assert off_by_one.state == "fail" and any(w in off_by_one.reason for w in limits), off_by_one.reason
    exact = _judge(task, _MOVING_AVERAGE.replace("NEEDED", "window + days - 1"), "moving_average", snapshot, tasks,
                   in_process)
    assert exact.state == "pass", exact.reason
    unchecked = _judge(task, _MOVING_AVERAGE.replace("NEEDED", "0"), "moving_average", snapshot, tasks, in_process)
    assert unchecked.state == "fail" and "expected a clear error" in unchecked.reason, unchecked.reason
