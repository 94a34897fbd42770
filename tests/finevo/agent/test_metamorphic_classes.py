"""The metamorphic stage on labelled tools of our own: wrong-but-plausible tools it must stop, and
correct tools in other accepted (or merely defensible) readings it must let through, on the
bundled snapshot and on other synthetic worlds (other seeds, an earlier as-of date).

The stage only proves what moving an argument can prove: an ignored lookback span is
``inconclusive`` here (the gate's probes and hidden worlds judge it), while an ignored symbol,
list position, window feeding a thresholded quantity or a constant answer fails.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import pytest

from finevo.agent.verify import ToolContract, Verifier
from finevo.errors import VerificationFailed
from finevo.market import synthetic
from finevo.market.snapshot import Snapshot, load_snapshot
from finevo.paths import benchmarks_dir, reference_dir
from runner.inputs.tasks import Task, load_tasks
from tests.finevo.agent.doubles import InlineSandbox

TASKS = {t.id: t for t in load_tasks(benchmarks_dir() / "tasks.jsonl")}

# the four generated worlds (a module fixture) serve every test here: one worker builds them once
# (split, both workers built them: 3.9 s and 2.7 s of setup in a profile at load 11)
pytestmark = pytest.mark.xdist_group("metamorphic-worlds")

#: worlds besides the bundled one: (seed, as_of)
WORLDS = [(4, None), (7, None), (10, None), (synthetic.SEED, date(2024, 6, 28))]


@pytest.fixture(scope="module")
def worlds(tmp_path_factory: pytest.TempPathFactory) -> list[Snapshot]:
    out = [load_snapshot()]
    for seed, as_of in WORLDS:
        path = Path(tmp_path_factory.mktemp(f"world-{seed}"))
        synthetic.build(path, seed=seed, as_of=as_of)
        out.append(load_snapshot(path))
    return out


def _verify(task_id: str, code: str, snapshot: Snapshot | None = None) -> Any:
    task: Task = TASKS[task_id]
    contract = ToolContract(task.intent.indicator, dict(task.intent.args), task.output)
    return Verifier(InlineSandbox(snapshot)).verify(code, contract)


def _gold(task_id: str) -> str:
    return (reference_dir() / f"{task_id}.py").read_text(encoding="utf-8")


_MAIN = '\n\nif __name__ == "__main__":\n    pass\n'

# --------------------------------------------------------------------------- wrong tools
SIGNAL_HEAD = '''import yfinance as yf


def ma_cross_rsi_signal(symbol: str, short_window: int = 5, long_window: int = 20,
                        rsi_window: int = 14, rsi_threshold: float = 30.0) -> bool:
    closes = yf.Ticker(SYMBOL).history(period="2y")["Close"].dropna()
    if len(closes) < long_window + 10 * rsi_window:
        raise ValueError("too few closes")
    change = closes.diff().dropna()
    n = RSI_WINDOW
    gain = float(change.clip(lower=0).ewm(alpha=1 / n, adjust=False).mean().iloc[-1])
    loss = float((-change).clip(lower=0).ewm(alpha=1 / n, adjust=False).mean().iloc[-1])
    rsi = 100.0 if loss == 0 else 100 - 100 / (1 + gain / loss)
    return bool(closes.tail(short_window).mean() > closes.tail(long_window).mean() and rsi < THRESHOLD)
'''


def _signal(symbol: str = "symbol", rsi_window: str = "rsi_window", threshold: str = "rsi_threshold") -> str:
    return (SIGNAL_HEAD.replace("SYMBOL", symbol).replace("RSI_WINDOW", rsi_window)
            .replace("THRESHOLD", threshold) + _MAIN)


CORRELATION_FIRST_FIXED = '''import yfinance as yf
import pandas as pd


def correlation(symbols: list[str], days: int = 30) -> float:
    first, second = "^GSPC", symbols[1]
    closes = pd.concat({s: yf.Ticker(s).history(period="6mo")["Close"] for s in (first, second)},
                       axis=1, join="inner").dropna()
    if len(closes) < days:
        raise ValueError("too few sessions")
    returns = closes.tail(days).pct_change().dropna()
    return float(returns[first].corr(returns[second]))
''' + _MAIN

PORTFOLIO_LAST_DROPPED = '''import yfinance as yf
import pandas as pd


def portfolio_return(symbols: list[str], days: int = 30) -> float:
    used = symbols[:2] + ["AMZN"]
    closes = pd.concat({s: yf.Ticker(s).history(period="6mo")["Close"] for s in used}, axis=1,
                       join="inner").dropna()
    if len(closes) < days:
        raise ValueError("too few sessions")
    window = closes.tail(days)
    return float((window.iloc[-1] / window.iloc[0] - 1).mean())
''' + _MAIN

RSI_WINDOW_FIXED = '''import yfinance as yf


def rsi(symbol: str, window: int = 14, days: int = 30) -> float:
    closes = yf.Ticker(symbol).history(period="6mo")["Close"].dropna()
    if len(closes) < days or days <= 14:
        raise ValueError("too few closes")
    change = closes.tail(days).diff().dropna()
    gain = float(change.clip(lower=0).ewm(alpha=1 / 14, adjust=False).mean().iloc[-1])
    loss = float((-change).clip(lower=0).ewm(alpha=1 / 14, adjust=False).mean().iloc[-1])
    return 100.0 if loss == 0 else 100 - 100 / (1 + gain / loss)
''' + _MAIN

WRONG = [
    pytest.param("comp_001", _signal(rsi_window="14"), "rsi_window", id="comp_001-rsi-window-fixed-at-14"),
    pytest.param("comp_001", _signal(symbol='"AAPL"'), "symbol", id="comp_001-symbol-hard-coded"),
    pytest.param("comp_001", _signal(threshold="30"), "rsi_threshold", id="comp_001-threshold-fixed"),
    pytest.param("comp_001", "def ma_cross_rsi_signal(symbol, short_window=5, long_window=20, rsi_window=14,"
                 " rsi_threshold=30.0):\n    return False\n" + _MAIN, None, id="comp_001-constant-false"),
    pytest.param("calc_008", CORRELATION_FIRST_FIXED, "symbols[0]", id="calc_008-first-symbol-hard-coded"),
    pytest.param("comp_003", PORTFOLIO_LAST_DROPPED, "symbols[2]", id="comp_003-last-symbol-hard-coded"),
    pytest.param("calc_001", RSI_WINDOW_FIXED, "window", id="calc_001-window-fixed-at-14"),
]


@pytest.mark.slow
@pytest.mark.parametrize("task_id, code, parameter", WRONG)
def test_a_wrong_tool_fails_the_metamorphic_stage_in_every_world(task_id: str, code: str, parameter: str | None,
                                                                  worlds: list[Snapshot]) -> None:
    for snapshot in worlds:
        ver = _verify(task_id, code, snapshot)
        assert not ver.ok and ver.stage == "metamorphic", (snapshot.path, ver.stages[-1].note)
        assert isinstance(ver.error, VerificationFailed)
        # a constant answer in a world proves the fault as well as the argument that does not move it
        assert "never changes" in ver.error.message or ver.error.details["parameter"] == parameter, \
            ver.error.message


# --------------------------------------------------------------------------- right tools, other readings
MAX_CLOSE_CALENDAR = '''import pandas as pd
import yfinance as yf


def max_close(symbol: str, days: int = 30) -> float:
    """Highest close of the sessions dated within the last ``days`` calendar days."""
    closes = yf.Ticker(symbol).history(period="1y")["Close"].dropna()
    if closes.empty:
        raise ValueError("no closes")
    recent = closes[closes.index >= closes.index[-1] - pd.Timedelta(days=days)]
    return float(recent.max())
''' + _MAIN

RSI_CUTLER = '''import yfinance as yf


def rsi(symbol: str, window: int = 14, days: int = 30) -> float:
    """Cutler's RSI: plain means of the last ``window`` gains and losses."""
    closes = yf.Ticker(symbol).history(period="3mo")["Close"].dropna().tail(days)
    if len(closes) <= window:
        raise ValueError("too few closes")
    change = closes.diff().dropna().tail(window)
    gain, loss = float(change.clip(lower=0).mean()), float((-change).clip(lower=0).mean())
    return 100.0 if loss == 0 else 100 - 100 / (1 + gain / loss)
''' + _MAIN

RSI_FULL_HISTORY = '''import yfinance as yf


def rsi(symbol: str, window: int = 14, days: int = 30) -> float:
    """Wilder's RSI as a chart shows it: smoothed over all the history there is (days unused)."""
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < 10 * window:
        raise ValueError("too few closes")
    change = closes.diff().dropna()
    gain = float(change.clip(lower=0).ewm(alpha=1 / window, adjust=False).mean().iloc[-1])
    loss = float((-change).clip(lower=0).ewm(alpha=1 / window, adjust=False).mean().iloc[-1])
    return 100.0 if loss == 0 else 100 - 100 / (1 + gain / loss)
''' + _MAIN

DRAWDOWN_MAGNITUDE = '''import yfinance as yf


def max_drawdown(symbol: str, days: int = 250) -> float:
    """The largest peak-to-trough fall over the last ``days`` sessions, as a positive fraction."""
    closes = yf.Ticker(symbol).history(period="2y")["Close"].dropna()
    if len(closes) < days:
        raise ValueError("too few closes")
    window = closes.tail(days)
    return float(-(window / window.cummax() - 1).min())
''' + _MAIN

CORRELATION_LOG_RETURNS = '''import numpy as np
import pandas as pd
import yfinance as yf


def correlation(symbols: list[str], days: int = 30) -> float:
    """Pearson correlation of the last ``days`` daily log returns (days + 1 closes)."""
    if len(symbols) != 2:
        raise ValueError("two symbols")
    closes = pd.concat({s: yf.Ticker(s).history(period="6mo")["Close"] for s in symbols}, axis=1,
                       join="inner").dropna()
    if len(closes) < days + 1:
        raise ValueError("too few sessions")
    returns = np.log(closes / closes.shift(1)).dropna().tail(days)
    return float(returns[symbols[0]].corr(returns[symbols[1]]))
''' + _MAIN

SIGNAL_CUTLER = _signal().replace(
    "ewm(alpha=1 / n, adjust=False).mean()", "rolling(n).mean()")

DIVERGENCE_HALVES = '''import yfinance as yf


def volume_price_divergence(symbol: str, days: int = 30) -> bool:
    """Price up over the window while the later half traded less volume than the earlier half."""
    bars = yf.Ticker(symbol).history(period="1y").dropna()
    if len(bars) < days or days < 4:
        raise ValueError("too few sessions")
    window = bars.tail(days)
    half = days // 2
    volume_down = window["Volume"].iloc[-half:].mean() < window["Volume"].iloc[:half].mean()
    return bool(window["Close"].iloc[-1] > window["Close"].iloc[0] and volume_down)
''' + _MAIN

RIGHT = [
    pytest.param("fetch_008", MAX_CLOSE_CALENDAR, id="fetch_008-calendar-days"),
    pytest.param("calc_001", RSI_CUTLER, id="calc_001-cutler"),
    pytest.param("calc_001", RSI_FULL_HISTORY, id="calc_001-wilder-full-history"),
    pytest.param("calc_007", DRAWDOWN_MAGNITUDE, id="calc_007-positive-magnitude"),
    pytest.param("calc_008", CORRELATION_LOG_RETURNS, id="calc_008-log-returns-30-returns"),
    # a signal over an RSI series, run at every probe in every world: about a second each
    pytest.param("comp_001", SIGNAL_CUTLER, id="comp_001-cutler-rsi", marks=pytest.mark.slow),
    pytest.param("comp_002", DIVERGENCE_HALVES, id="comp_002-volume-halves"),
    *(pytest.param(task_id, None, id=f"{task_id}-reference", marks=[pytest.mark.slow] if task_id == "comp_001" else [])
      for task_id in sorted(TASKS)),
]


@pytest.mark.parametrize("task_id, code", RIGHT)
def test_a_right_tool_passes_the_metamorphic_stage_in_every_world(task_id: str, code: str | None,
                                                                   worlds: list[Snapshot]) -> None:
    for snapshot in worlds:
        ver = _verify(task_id, code if code is not None else _gold(task_id), snapshot)
        assert ver.ok, (snapshot.path, ver.stage, ver.error)
        assert ver.stages[-1].name == "metamorphic"


def test_a_boolean_checks_each_argument_feeding_its_threshold_at_a_bracket() -> None:
    sandbox = InlineSandbox()
    task = TASKS["comp_001"]
    ver = Verifier(sandbox).verify(_gold("comp_001"), ToolContract(task.intent.indicator, dict(task.intent.args),
                                                                   task.output))
    note = ver.stages[-1].note
    assert ver.ok and "each argument flips it" in note
    for name in ("rsi_threshold", "symbol", "rsi_window"):
        assert f"{name}: " in note, note
    # the threshold was bisected: runs with thresholds strictly between the extremes and the task's
    levels = {args["rsi_threshold"] for _, args in sandbox.runs if args}
    assert any(isinstance(v, float) and 0 < v < 100 and v not in (30, 30.0) for v in levels)
