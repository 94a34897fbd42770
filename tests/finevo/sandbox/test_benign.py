"""A sandbox that blocks good code is a failure too: every benign tool passes and returns JSON."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from finevo.paths import snapshot_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.backends import WarmSandbox
from runner.inputs.corpus import BenignTool, load_benign

pytestmark = pytest.mark.timeout(600)


TOOLS: list[BenignTool] = load_benign()  # a flawed corpus is a collection error naming the file


@pytest.fixture(scope="module")
def market_sandbox() -> Iterator[WarmSandbox]:
    with create_sandbox(snapshot_dir(), backend="warm", policy=True) as box:
        yield box  # type: ignore[misc]


def test_the_benign_corpus_is_present() -> None:
    assert len(TOOLS) >= 30, "benchmarks/benign must hold at least 30 tools with calls.json"


@pytest.mark.parametrize("tool", TOOLS, ids=[t.name for t in TOOLS])
def test_benign_tool_runs(market_sandbox: WarmSandbox, tool: BenignTool) -> None:
    result = market_sandbox.run(tool.code, tool.entry, dict(tool.args), Limits(timeout_s=30))
    assert result.status == "ok", (f"{tool.name}: {result.status} layer={result.layer} rule={result.rule} "
                                   f"line={result.line}: {result.error_message}\n{result.traceback or ''}")
    assert result.value is not None
    json.dumps(result.value, allow_nan=False)


def test_market_data_and_frozen_clock_inside(market_sandbox: WarmSandbox) -> None:
    code = ("import datetime\nimport pandas as pd\nimport yfinance as yf\n\n"
            "def last(symbol: str) -> dict:\n"
            "    hist = yf.Ticker(symbol).history(period='5d')\n"
            "    return {'rows': len(hist), 'today': datetime.date.today().isoformat(),\n"
            "            'last': str(hist.index[-1].date()),\n"
            "            'pandas': [str(pd.bdate_range(end='today', periods=3)[-1].date()),\n"
            "                       str(pd.date_range(end='now', periods=2)[-1].date()),\n"
            "                       str(pd.date_range(start='today', periods=1)[0].date()),\n"
            "                       str(pd.Timestamp('today').date()), str(pd.Timestamp('now').date())]}\n")
    from finevo.market.snapshot import load_snapshot

    snap = load_snapshot(snapshot_dir())
    symbol = snap.symbols()[0]
    result = market_sandbox.run(code, "last", {"symbol": symbol}, Limits(timeout_s=30))
    assert result.status == "ok", result
    assert result.value["today"] == snap.as_of.isoformat()
    assert result.value["pandas"] == [snap.as_of.isoformat()] * 5  # as-of is a business day
    assert result.value["rows"] == 5
    assert result.value["last"] <= snap.as_of.isoformat()


def test_a_run_starts_at_the_as_of_moment_however_long_its_zygote_has_lived(market_sandbox: WarmSandbox) -> None:
    # the world zygote froze the clock when it loaded the snapshot; a child it forks later must
    # not start that much past the as-of moment (past the close of a session it runs during, or
    # the open of one it runs before): its clock ticks with its own run's time only
    from finevo.market.replay import as_of_moment
    from finevo.market.snapshot import load_snapshot

    code = ("import datetime\n\n\ndef now() -> float:\n"
            "    return datetime.datetime.now(datetime.timezone.utc).timestamp()\n")
    assert market_sandbox.run(code, "now", {}, Limits(timeout_s=30)).status == "ok"  # the zygote is up
    time.sleep(3)
    began = time.monotonic()
    result = market_sandbox.run(code, "now", {}, Limits(timeout_s=30))
    took = time.monotonic() - began
    assert result.status == "ok", result
    elapsed = result.value - as_of_moment(load_snapshot(snapshot_dir())).timestamp()
    assert 0 <= elapsed <= took, (elapsed, took)
