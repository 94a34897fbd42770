"""Test doubles and tool sources for the agent tests.

:class:`InlineSandbox` implements the :class:`~finevo.sandbox.api.Sandbox` interface in-process:
the static policy first (a rejection is ``blocked`` / ``policy``, as in the real sandbox), then
the code is executed with ``import yfinance`` served by the real replay shim over the bundled
snapshot, its output captured. It contains nothing (the tools here are the tests' own code) and exists so the agent's
logic is tested fast and deterministically; the real sandbox is exercised by the slow
reference-run test.
"""

from __future__ import annotations

import contextlib
import io
import sys
import time
import traceback
from typing import Any

from finevo.llm.client import OpenAIChatClient, RetryPolicy
from finevo.market import replay
from finevo.market.snapshot import load_snapshot
from finevo.paths import snapshot_dir
from finevo.sandbox.api import ExecutionResult, Limits

_SNAPSHOT = None


def snapshot() -> Any:
    global _SNAPSHOT
    if _SNAPSHOT is None:
        _SNAPSHOT = load_snapshot(snapshot_dir())
    return _SNAPSHOT


class InlineSandbox:
    """``snapshot``: the market the tools read (default the bundled one)."""

    def __init__(self, snapshot: Any = None) -> None:
        self.runs: list[tuple[str | None, dict[str, Any] | None]] = []
        self.closed = False
        self.snapshot = snapshot

    def run(self, code: str, entry: str | None, args: dict[str, Any] | None = None,
            limits: Limits | None = None) -> ExecutionResult:
        from finevo.policy import check

        self.runs.append((entry, args))
        report = check(code)
        if not report.allowed:
            v = report.violations[0]
            return ExecutionResult(status="blocked", layer="policy", rule=v.rule, line=v.line, col=v.col,
                                   error_message=v.message)
        started = time.monotonic()
        saved = sys.modules.get("yfinance")
        replay.bind(self.snapshot if self.snapshot is not None else snapshot())
        sys.modules["yfinance"] = replay.build_module()
        namespace: dict[str, Any] = {"__name__": "__main__" if entry is None else "tool"}
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                exec(compile(code, "tool.py", "exec"), namespace)
                value = None if entry is None else namespace[entry](**(args or {}))
        except Exception as exc:  # the tool's own exception, reported like the real sandbox does
            return ExecutionResult(status="exception", error_type=type(exc).__name__, error_message=str(exc),
                                   traceback=traceback.format_exc(), duration_s=time.monotonic() - started,
                                   stdout=out.getvalue(), stderr=err.getvalue())
        finally:
            replay.bind(None)
            if saved is None:
                sys.modules.pop("yfinance", None)
            else:
                sys.modules["yfinance"] = saved
        return ExecutionResult(status="ok", value=value, duration_s=time.monotonic() - started,
                               stdout=out.getvalue(), stderr=err.getvalue())

    def layers(self) -> dict[str, bool]:
        return {"policy": True}

    def close(self) -> None:
        self.closed = True


def client(base_url: str, *, timeout: float = 5.0, max_retries: int = 0) -> OpenAIChatClient:
    """The real OpenAI-SDK client against the scripted server, with near-zero backoff."""
    return OpenAIChatClient(base_url=base_url, api_key="test-key", model="test-model", timeout=timeout,
                            retry=RetryPolicy(max_retries=max_retries, backoff_base=0.001, backoff_max=0.01))


def fenced(code: str) -> str:
    return f"Here is the tool.\n\n```python\n{code}```\n"


# --------------------------------------------------------------------------- tool sources
MA_GOOD = '''\
import yfinance as yf


def moving_average(symbol: str, window: int, days: int) -> list:
    """Simple moving average of the close for each of the last `days` sessions."""
    closes = yf.Ticker(symbol).history(period="1y")["Close"].dropna()
    if len(closes) < window + days - 1:
        raise ValueError(f"not enough closes for {symbol}")
    return [float(v) for v in closes.rolling(window).mean().dropna().tail(days)]


if __name__ == "__main__":
    out = moving_average("AAPL", 5, 20)
    assert isinstance(out, list) and len(out) == 20
'''

# A typical first draft: lower-case column name, so the self-test raises KeyError.
MA_BUGGY = MA_GOOD.replace('["Close"]', '["close"]')

# Passes shape and self-test, but ignores its arguments: the metamorphic check must catch it.
MA_CONSTANT = '''\
def moving_average(symbol: str, window: int, days: int) -> list:
    """A hard-coded answer."""
    return [101.5] * days


if __name__ == "__main__":
    assert len(moving_average("AAPL", 5, 20)) == 20
'''

# Wrong shape: a dict where a list is required.
MA_WRONG_SHAPE = MA_GOOD.replace(
    "return [float(v) for v in closes.rolling(window).mean().dropna().tail(days)]",
    "return {\"ma\": float(closes.rolling(window).mean().iloc[-1])}").replace(
    "assert isinstance(out, list) and len(out) == 20", "assert out")

MALICIOUS = '''\
import os


def moving_average(symbol: str, window: int, days: int) -> list:
    """Leaks the environment."""
    return [float(len(os.environ))] * days


if __name__ == "__main__":
    print(moving_average("AAPL", 5, 20))
'''

REFUSAL = "I'm sorry, but I can't help with that request."
