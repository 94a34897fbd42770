"""The shared readings (benchmarks/README.md), decided once and applied by the oracle to every task
they fit: labelled tools of our own, right in another accepted reading or wrong in a plausible
way, each run on the bundled snapshot and on other worlds (seeds, earlier as-of dates) and
judged against the oracle's values there.

A right tool must match one and the same reading in every world (a tie, where two readings give
the same number on some data, still leaves that reading among the matches); a wrong one must
miss every reading in at least one world.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from finevo.errors import InputError
from finevo.market import synthetic
from finevo.market.snapshot import Snapshot, load_snapshot
from finevo.paths import benchmarks_dir
from runner.inputs.tasks import Convention, Task, load_tasks
from runner.judging.compare import compare
from runner.judging.oracle import READINGS, SHARED_READINGS, accepted_readings, expected_values
from tests.finevo.agent.doubles import InlineSandbox

TASKS = {t.id: t for t in load_tasks(benchmarks_dir() / "tasks.jsonl")}
WORLDS = [(4, None), (7, None), (10, None), (synthetic.SEED, date(2024, 6, 28)),
          (synthetic.SEED, date(2024, 11, 15))]


# The five generated worlds (a module fixture) serve every test that reads them: one worker builds them
# once (xdist split the module, and both workers built all five).
pytestmark = pytest.mark.xdist_group("convention-worlds")


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> list[Snapshot]:
    out = [load_snapshot()]
    for seed, as_of in WORLDS:
        path = Path(tmp_path_factory.mktemp("world"))
        synthetic.build(path, seed=seed, as_of=as_of)
        out.append(load_snapshot(path))
    return out


def _matches(task: Task, code: str, snapshot: Snapshot) -> set[str]:
    """The readings whose expected value the tool's answer matches on ``snapshot``."""
    result = InlineSandbox(snapshot).run(code, task.intent.indicator, dict(task.intent.args))
    assert result.ok, (task.id, snapshot.path, result.error_type, result.error_message)
    expected = expected_values(task, snapshot)
    return {name for name, value in expected.items() if compare(result.value, value, task.tolerance) is None}


def _tool(signature: str, body: str, imports: str = "import yfinance as yf\n") -> str:
    return f"{imports}\n\ndef {signature}:\n{body}\n"


# --------------------------------------------------------------------------- right, another reading
RIGHT = [
    pytest.param("fetch_008", "highest_close+calendar_days_after", _tool("max_close(symbol: str, days: int)", '''\
    return float(yf.Ticker(symbol).history(period=f"{days}d")["Close"].max())'''), id="max-close-period-Nd"),
    pytest.param("fetch_008", "highest_close+raw_close", _tool("max_close(symbol: str, days: int)", '''\
    closes = yf.Ticker(symbol).history(period="1y", auto_adjust=False)["Close"]
    return float(closes.tail(days).max())'''), id="max-close-raw"),
    pytest.param("calc_002", "sma5_last_20_sessions+newest_first", _tool(
        "moving_average(symbol: str, window: int, days: int)", '''\
    closes = yf.Ticker(symbol).history(period="6mo")["Close"]
    values = closes.rolling(window).mean().dropna().tail(days)
    return [float(v) for v in reversed(values.tolist())]'''), id="ma-newest-first"),
    pytest.param("calc_003", "sma20_2std+raw_close+sample_std", _tool(
        "bollinger_bands(symbol: str, window: int, num_std: float)", '''\
    closes = yf.Ticker(symbol).history(period="3mo", auto_adjust=False)["Close"].tail(window)
    middle, std = float(closes.mean()), float(closes.std())
    return {"upper": middle + num_std * std, "middle": middle, "lower": middle - num_std * std}'''),
        id="bollinger-raw-sample"),
    pytest.param("calc_005", "daily+n_closes+population_std+log_returns", _tool(
        "volatility(symbol: str, window: int)", '''\
    closes = yf.Ticker(symbol).history(period="1y")["Close"].tail(window).to_numpy()
    return float(np.log(closes[1:] / closes[:-1]).std())''', "import numpy as np\nimport yfinance as yf\n"),
        id="volatility-59-log-returns-population-daily"),
    pytest.param("calc_007", "positive_fraction+calendar_days", _tool("max_drawdown(symbol: str, days: int)", '''\
    closes = yf.Ticker(symbol).history(period="2y")["Close"]
    window = closes[closes.index.date >= (closes.index[-1] - pd.Timedelta(days=days)).date()]
    return float(1 - (window / window.cummax()).min())''', "import pandas as pd\nimport yfinance as yf\n"),
        id="drawdown-calendar-magnitude"),
    pytest.param("calc_008", "pearson_daily_returns+n_returns+log_returns", _tool(
        "correlation(symbols: list, days: int)", '''\
    frame = pd.concat([yf.Ticker(s).history(period="6mo")["Close"] for s in symbols], axis=1).dropna()
    returns = np.log(frame / frame.shift(1)).dropna().tail(days)
    return float(returns.iloc[:, 0].corr(returns.iloc[:, 1]))''',
        "import numpy as np\nimport pandas as pd\nimport yfinance as yf\n"), id="correlation-30-log-returns"),
    pytest.param("comp_003", "buy_and_hold+calendar_days", _tool("portfolio_return(symbols: list, days: int)", '''\
    returns = []
    for s in symbols:
        closes = yf.Ticker(s).history(period="6mo")["Close"]
        # by date: tz-aware arithmetic across a DST change would move the first day
        window = closes[closes.index.date >= (closes.index[-1] - pd.Timedelta(days=days)).date()]
        returns.append(window.iloc[-1] / window.iloc[0] - 1)
    return float(sum(returns) / len(returns))''', "import pandas as pd\nimport yfinance as yf\n"),
        id="portfolio-calendar"),
    pytest.param("comp_004", "every_signal_day+cutler", _tool(
        "post_signal_return(symbol: str, rsi_window: int, rsi_threshold: float, horizon: int)", '''\
    closes = yf.Ticker(symbol).history(period="max")["Close"]
    change = closes.diff()
    gain = change.clip(lower=0).rolling(rsi_window).mean()
    loss = (-change).clip(lower=0).rolling(rsi_window).mean()
    rsi = 100 - 100 / (1 + gain / loss)
    forward = closes.shift(-horizon) / closes - 1
    return float(forward[(rsi > rsi_threshold) & forward.notna()].mean())'''), id="post-signal-cutler"),
    pytest.param("calc_001", "last_30_days+calendar_days+cutler", _tool(
        "rsi(symbol: str, window: int, days: int)", '''\
    closes = yf.Ticker(symbol).history(period="6mo")["Close"]
    closes = closes[closes.index.date >= (closes.index[-1] - pd.Timedelta(days=days)).date()]
    change = closes.diff().dropna().tail(window)
    gain, loss = change.clip(lower=0).mean(), (-change).clip(lower=0).mean()
    return float(100 - 100 / (1 + gain / loss))''', "import pandas as pd\nimport yfinance as yf\n"),
        id="rsi-calendar-cutler"),
]


@pytest.mark.slow
@pytest.mark.parametrize("task_id, reading, code", RIGHT)
def test_a_right_tool_in_another_reading_matches_it_in_every_world(task_id: str, reading: str, code: str,
                                                                    worlds: list[Snapshot]) -> None:
    task = TASKS[task_id]
    assert reading in dict(accepted_readings(task))
    for snapshot in worlds:
        matched = _matches(task, code, snapshot)
        assert reading in matched, (snapshot.path, reading, sorted(matched))


# --------------------------------------------------------------------------- wrong, plausibly
# (a window one session too long is wrong as well, but right on any data whose extreme is not on
# that one extra session: only a world built to put it there tells, which is the gate's job)
WRONG = [
    pytest.param("fetch_008", _tool("max_close(symbol: str, days: int)", '''\
    return float(yf.Ticker(symbol).history(period="1y")["Close"].iloc[:-1].tail(days).max())'''),
        id="max-close-previous-session"),
    pytest.param("calc_005", _tool("volatility(symbol: str, window: int)", '''\
    closes = yf.Ticker(symbol).history(period="1y")["Close"]
    return float(closes.pct_change().dropna().tail(window).std() * 252 ** 0.5 * 100)'''), id="volatility-percent"),
    pytest.param("calc_007", _tool("max_drawdown(symbol: str, days: int)", '''\
    closes = yf.Ticker(symbol).history(period="2y", auto_adjust=False)["Close"].tail(days)
    return float((closes / closes.cummax() - 1).min())'''), id="drawdown-raw-closes"),
    pytest.param("calc_008", _tool("correlation(symbols: list, days: int)", '''\
    a = yf.Ticker(symbols[0]).history(period="6mo")["Close"].tail(days)
    b = yf.Ticker(symbols[1]).history(period="6mo")["Close"].tail(days)
    return float(a.corr(b))'''), id="correlation-of-price-levels"),
    pytest.param("comp_003", _tool("portfolio_return(symbols: list, days: int)", '''\
    returns = []
    for s in symbols:
        closes = yf.Ticker(s).history(period="6mo", auto_adjust=False)["Close"].tail(days)
        returns.append(closes.iloc[-1] / closes.iloc[0] - 1)
    return float(sum(returns) / len(returns))'''), id="portfolio-raw-closes"),
]


@pytest.mark.parametrize("task_id, code", WRONG)
def test_a_wrong_tool_misses_every_reading_in_some_world(task_id: str, code: str, worlds: list[Snapshot]) -> None:
    task = TASKS[task_id]
    missed = [snapshot.path for snapshot in worlds if not _matches(task, code, snapshot)]
    assert missed, f"{task_id}: a wrong tool matched a reading in every world"


# --------------------------------------------------------------------------- the rules themselves
def test_every_reading_names_a_known_axis_and_a_primary_among_its_values() -> None:
    for oracle_name, axes in SHARED_READINGS.items():
        for axis, primary in axes.items():
            assert primary in [value for _, value in READINGS[axis].values], (oracle_name, axis)


def test_boolean_tasks_get_no_shared_reading_and_numeric_ones_get_all_that_fit() -> None:
    for task in TASKS.values():
        names = [name for name, _ in accepted_readings(task)]
        assert names[0] == task.conventions[0].name and len(set(names)) == len(names)
        if task.output.type == "boolean":
            assert names == [c.name for c in task.conventions]
            continue
        for axis in SHARED_READINGS.get(task.oracle.name, {}):
            labels = [label for label, value in READINGS[axis].values
                      if value != SHARED_READINGS[task.oracle.name][axis]]
            assert any(label in name.split("+") for name in names for label in labels), (task.id, axis)


def test_a_task_that_sets_a_shared_reading_itself_is_refused(tmp_path: Path) -> None:
    """Refused when the task file is loaded (exit 2), one line naming the line, the task and the reading;
    :func:`accepted_readings` refuses such a task too (one built without validation)."""
    line = TASKS["calc_003"].model_dump()
    line["conventions"] = [*line["conventions"], {"name": "sample", "params": {"ddof": 1}, "reason": "pandas"}]
    bad = tmp_path / "tasks.jsonl"
    bad.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"^.*tasks\.jsonl:1: task calc_003: convention 'sample' sets ddof, a shared"):
        load_tasks(bad)
    unchecked = TASKS["calc_003"].model_copy(update={"conventions": (
        *TASKS["calc_003"].conventions, Convention(name="sample", params={"ddof": 1}, reason="pandas"))})
    with pytest.raises(InputError, match=r"calc_003.*'sample' sets ddof"):
        accepted_readings(unchecked)
    line = TASKS["fetch_008"].model_dump()
    line["oracle"]["params"]["window_unit"] = "calendar"
    bad.write_text(json.dumps(line) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"tasks\.jsonl:1: task fetch_008: oracle parameter window_unit='calendar'"):
        load_tasks(bad)


def test_the_raw_closes_the_oracle_derives_are_the_recorded_ones() -> None:
    from runner.judging.oracle import _history

    snapshot = load_snapshot()
    for symbol in snapshot.symbols():
        raw = _history(snapshot, symbol, "raw")["Close"].to_numpy()
        recorded = snapshot.history_unadjusted(symbol)["Close"].to_numpy()
        assert raw == pytest.approx(recorded, rel=1e-9)


def test_calendar_windows_differ_only_at_their_first_day() -> None:
    # the as-of date minus 30 days is a session: "on or after" keeps it, "strictly after" does not
    cut = date(2024, 11, 15)  # a Friday; 30 days earlier is Wednesday 2024-10-16
    snapshot = load_snapshot()
    task = TASKS["fetch_008"]

    class AsOf:
        as_of = cut

        def __getattr__(self, name: str) -> Any:
            return getattr(snapshot, name)

    values = expected_values(task, AsOf())  # type: ignore[arg-type]
    closes = snapshot.history("TSLA")["Close"]
    closes = closes[closes.index.date <= cut]
    inclusive = closes[closes.index.date >= date(2024, 10, 16)]
    assert values["highest_close+calendar_days"] == pytest.approx(float(inclusive.max()))
    assert values["highest_close+calendar_days_after"] == pytest.approx(float(inclusive.iloc[1:].max()))


def test_the_readme_names_every_reading_and_every_task_convention() -> None:
    text = (benchmarks_dir() / "README.md").read_text(encoding="utf-8")
    shared = text[text.index("## Shared readings"):text.index("## Probes")]
    for axis, reading in READINGS.items():
        assert f"(`{axis}`)" in shared, axis
        for label, _ in reading.values:
            assert f"`{label}`" in shared, (axis, label)
    decisions = text[text.index("## Per-task decisions"):text.index("## Known limits")]
    for task in TASKS.values():
        row = next(line for line in decisions.splitlines() if line.startswith(f"| {task.id} "))
        for convention in task.conventions:
            assert f"`{convention.name}`" in row, (task.id, convention.name)
        applied = list(SHARED_READINGS.get(task.oracle.name, {})) if task.output.type != "boolean" else []
        cell = row.split("|")[3]
        assert all(axis in cell for axis in applied) and (applied or "none" in cell), (task.id, cell)
