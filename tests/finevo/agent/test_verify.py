"""The verification stages one by one."""

from __future__ import annotations

import time
from typing import Any

import pytest

from finevo.agent.verify import (
    ToolContract,
    Verifier,
    alternatives,
    has_selftest,
    range_problems,
    result_error,
    threshold_extremes,
    variations,
)
from finevo.errors import ContractViolation, DeadlineExceeded, PolicyViolation, ToolCrashed, VerificationFailed
from finevo.question import OutputSpec
from finevo.sandbox.api import ExecutionResult, Limits
from tests.finevo.agent.doubles import MA_BUGGY, MA_CONSTANT, MA_GOOD, MALICIOUS, InlineSandbox

MA = ToolContract("moving_average", {"symbol": "MSFT", "window": 5, "days": 20},
                  OutputSpec(type="list", item_type="numeric", min_items=1))


def test_a_good_tool_passes_every_stage() -> None:
    ver = Verifier(InlineSandbox()).verify(MA_GOOD, MA)
    assert ver.ok and ver.error is None and len(ver.value) == 20
    assert [s.name for s in ver.stages] == ["policy", "contract", "selftest", "contract", "metamorphic"]
    assert "symbol='AAPL'" in ver.stages[-1].note


@pytest.mark.parametrize("code, stage, error", [
    (MALICIOUS, "policy", PolicyViolation),
    (MA_GOOD.replace("def moving_average(", "def sma("), "contract", ContractViolation),
    (MA_GOOD.split('if __name__')[0], "selftest", VerificationFailed),
    (MA_BUGGY, "selftest", ToolCrashed),
    (MA_CONSTANT, "metamorphic", VerificationFailed),
])
def test_each_stage_catches_its_kind_of_fault(code: str, stage: str, error: type) -> None:
    ver = Verifier(InlineSandbox()).verify(code, MA)
    assert not ver.ok and ver.stage == stage and type(ver.error) is error
    assert ver.error.details["stage"] == stage


def test_policy_violation_names_rule_line_and_column() -> None:
    ver = Verifier(InlineSandbox()).verify(MALICIOUS, MA)
    assert ver.error.details["rule"] == "import-not-allowed"
    assert (ver.error.details["line"], ver.error.details["col"]) == (1, 8)


def test_placeholder_none_fails_the_contract() -> None:
    code = ('def moving_average(symbol: str, window: int, days: int) -> list:\n    return None\n\n'
            'if __name__ == "__main__":\n    moving_average("A", 1, 1)\n')
    ver = Verifier(InlineSandbox()).verify(code, MA)
    assert ver.stage == "contract" and isinstance(ver.error, ContractViolation)
    assert "expected a list" in ver.error.message


def test_implausible_values_fail_the_contract() -> None:
    assert range_problems("rsi", 140.0)
    assert range_problems("correlation", -1.5)
    assert range_problems("moving_average", [10.0, -3.0])
    assert not range_problems("rsi", 55.0)
    assert not range_problems("macd", {"macd": -3.0, "signal": -1.0, "histogram": -2.0})


def test_the_signature_stage_names_what_does_not_bind() -> None:
    verifier = Verifier(InlineSandbox())
    assert verifier._signature(MA_GOOD, MA) == "signature fits"
    wrong = ToolContract("moving_average", {"symbol": "MSFT", "period": 5}, MA.output)
    with pytest.raises(ContractViolation, match=r"no parameter.*period"):
        verifier._signature(MA_GOOD, wrong)
    with pytest.raises(ContractViolation, match="no top-level function named 'mean'"):
        verifier._signature(MA_GOOD, ToolContract("mean", MA.args, MA.output))


def test_selftest_block_detection() -> None:
    assert has_selftest(MA_GOOD)
    assert not has_selftest("def f():\n    pass\n")
    assert has_selftest("def f():\n    pass\nif '__main__' == __name__:\n    f()\n")


def test_variations_change_one_thing_at_a_time() -> None:
    out = variations({"symbol": "AAPL", "year": 2023, "quarter": 4})
    assert [(v.kind, v.param, v.description) for v in out] == [
        ("symbol", "symbol", "symbol='MSFT'"), ("symbol", "symbol", "symbol='GOOGL'"),
        ("param", "year", "year=2022"), ("param", "year", "year=2024"),
        ("param", "quarter", "quarter=1"), ("param", "quarter", "quarter=2")]
    for v in out:
        changed = {k for k in v.args if v.args[k] != {"symbol": "AAPL", "year": 2023, "quarter": 4}[k]}
        assert changed == {v.param}
    pair = variations({"symbols": ["^GSPC", "AAPL"], "days": 30})
    # every position of a list is replaced in turn, never a mere reordering (correlation is symmetric)
    assert [v.args["symbols"] for v in pair if v.kind == "symbol"] == [
        ["MSFT", "AAPL"], ["GOOGL", "AAPL"], ["^GSPC", "MSFT"], ["^GSPC", "GOOGL"]]
    # a window or period moves both ways: a smaller and a larger value
    assert [v.args for v in pair if v.kind == "param"] == [{"symbols": ["^GSPC", "AAPL"], "days": 15},
                                                           {"symbols": ["^GSPC", "AAPL"], "days": 60}]


def test_alternatives_are_two_distinct_sensible_values() -> None:
    for name, value in [("window", 14), ("window", 1), ("days", 250), ("num_std", 2.0), ("confidence", 0.95),
                        ("rsi_threshold", 70), ("rsi_threshold", 95.0), ("period", "1y"), ("risk_free", 0.02)]:
        alts = alternatives(name, value)
        assert len(set(alts)) == 2 and value not in alts, (name, value, alts)
        assert all(type(a) is type(value) for a in alts), (name, value, alts)
    assert all(0 < a < 1 for a in alternatives("confidence", 0.95))
    assert all(0 <= a <= 100 for a in alternatives("rsi_threshold", 95.0))
    assert alternatives("flag", True) == [] and alternatives("label", "2023 Q1") == []
    assert threshold_extremes("rsi_threshold", 30) == [0, 100]
    assert threshold_extremes("window", 30) == []


def _numeric(entry: str, args: dict[str, Any]) -> ToolContract:
    return ToolContract(entry, args, OutputSpec(type="numeric"))


def _tool(entry: str, params: str, body: str) -> str:
    return (f"import yfinance as yf\n\n\ndef {entry}({params}) -> float:\n{body}\n\n"
            f'if __name__ == "__main__":\n    pass\n')


# a Wilder RSI over the last `days` closes, as the reference tool computes it
_RSI_BODY = """\
    if window <= 0 or days <= window:
        raise ValueError("need days > window > 0")
    closes = yf.Ticker(symbol).history(period="6mo")["Close"].dropna()
    if len(closes) < days:
        raise ValueError("too few closes")
    change = closes.tail(days).diff().dropna()
    gain = float(change.clip(lower=0.0).ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])
    loss = float((-change).clip(lower=0.0).ewm(alpha=1.0 / window, adjust=False).mean().iloc[-1])
    return 100.0 if loss == 0.0 else 100.0 - 100.0 / (1.0 + gain / loss)"""
RSI = _numeric("rsi", {"symbol": "AAPL", "window": 14, "days": 30})


def test_an_rsi_tool_that_reads_its_window_and_days_passes() -> None:
    ver = Verifier(InlineSandbox()).verify(_tool("rsi", "symbol: str, window: int, days: int", _RSI_BODY), RSI)
    assert ver.ok, ver.error
    assert "window=7" in ver.stages[-1].note and "days=15" in ver.stages[-1].note


@pytest.mark.parametrize("forced, ignored", [("window = 14", "window"), ("window, days = 14, 30", "window")])
def test_a_tool_that_ignores_its_window_fails_the_metamorphic_check(forced: str, ignored: str) -> None:
    code = _tool("rsi", "symbol: str, window: int, days: int", f"    {forced}\n" + _RSI_BODY)
    ver = Verifier(InlineSandbox()).verify(code, RSI)
    assert not ver.ok and ver.stage == "metamorphic" and isinstance(ver.error, VerificationFailed)
    assert ver.error.details["parameter"] == ignored
    assert f"does not depend on its '{ignored}' argument" in ver.error.message


def test_a_lookback_span_that_never_moves_the_answer_is_inconclusive_not_ignored() -> None:
    # Cutler's RSI reads only the last `window` changes: `days` only bounds the data it reads
    cutler = """\
    closes = yf.Ticker(symbol).history(period="6mo")["Close"].dropna().tail(days)
    if len(closes) <= window:
        raise ValueError("too few closes")
    recent = closes.diff().dropna().tail(window)
    gain, loss = float(recent.clip(lower=0).sum()), float((-recent).clip(lower=0).sum())
    return 100.0 if loss == 0 else 100.0 - 100.0 / (1.0 + gain / loss)"""
    ver = Verifier(InlineSandbox()).verify(_tool("rsi", "symbol: str, window: int, days: int", cutler), RSI)
    assert ver.ok, ver.error
    assert "inconclusive for days" in ver.stages[-1].note and "window=7" in ver.stages[-1].note
    # a span that is the tool's only parameter, too: moving an argument cannot tell an ignored
    # span from data on which the span does not matter (the gate's probes and worlds decide)
    ignores_days = """\
    closes = yf.Ticker(symbol).history(period="6mo")["Close"].dropna()
    return float(closes.tail(30).max())"""
    contract = _numeric("max_close", {"symbol": "TSLA", "days": 30})
    sandbox = InlineSandbox()
    ver = Verifier(sandbox).verify(_tool("max_close", "symbol: str, days: int", ignores_days), contract)
    assert ver.ok, ver.error
    assert "inconclusive for days" in ver.stages[-1].note
    # ... but only after a much shorter span was tried too
    assert {args["days"] for _, args in sandbox.runs if args} >= {5, 15, 60}


def test_a_parameter_that_moves_the_answer_only_for_other_symbols_passes() -> None:
    # one symbol's answer may legitimately not move (its highest close is the latest one)
    body = '    return 1.0 if symbol == "TSLA" else float(days * len(symbol))'
    contract = _numeric("max_close", {"symbol": "TSLA", "days": 30})
    ver = Verifier(InlineSandbox()).verify(_tool("max_close", "symbol: str, days: int", body), contract)
    assert ver.ok, ver.error
    assert "symbol='MSFT', days=15" in ver.stages[-1].note


def test_a_parameter_with_a_single_comparable_variation_is_inconclusive() -> None:
    # only days=15 with the task's symbol has data, and it gives the same answer
    body = ('    if days > 30 or (days != 30 and symbol != "TSLA"):\n        raise ValueError("too few closes")\n'
            '    return {"TSLA": 1.0, "MSFT": 2.0}.get(symbol, 3.0)')
    contract = _numeric("max_close", {"symbol": "TSLA", "days": 30})
    ver = Verifier(InlineSandbox()).verify(_tool("max_close", "symbol: str, days: int", body), contract)
    assert ver.ok, ver.error
    assert "inconclusive for days" in ver.stages[-1].note


SIGNAL = ToolContract("signal", {"symbol": "AAPL", "days": 30, "rsi_threshold": 30},
                      OutputSpec(type="boolean"))


def _signal(body: str) -> str:
    return (f"def signal(symbol: str, days: int, rsi_threshold: float) -> bool:\n{body}\n\n"
            'if __name__ == "__main__":\n    signal("AAPL", 30, 30)\n')


def test_a_constant_boolean_fails_the_metamorphic_check() -> None:
    sandbox = InlineSandbox()
    ver = Verifier(sandbox).verify(_signal("    return False"), SIGNAL)
    assert not ver.ok and ver.stage == "metamorphic" and isinstance(ver.error, VerificationFailed)
    assert "never changes" in ver.error.message
    # threshold extremes, other symbols and other windows were all tried
    tried = [args for _, args in sandbox.runs if args]
    assert {a["rsi_threshold"] for a in tried} >= {0, 100}
    assert {a["symbol"] for a in tried} >= {"MSFT", "GOOGL", "TSLA"} and {a["days"] for a in tried} >= {15, 60}


@pytest.mark.parametrize("body, flips_with", [
    ('    return {"AAPL": 42.0, "MSFT": 61.5}.get(symbol, 55.0) + days / 100 < rsi_threshold',
     "rsi_threshold="),
    ('    return symbol == "TSLA" and rsi_threshold > 20', "symbol='TSLA'"),
    ("    return days > 40 and rsi_threshold > 5 * len(symbol)", "days=60"),
])
def test_a_boolean_that_comes_out_both_ways_passes(body: str, flips_with: str) -> None:
    ver = Verifier(InlineSandbox()).verify(_signal(body), SIGNAL)
    assert ver.ok, ver.error
    assert "both answers occur" in ver.stages[-1].note and flips_with in ver.stages[-1].note


@pytest.mark.parametrize("body, ignored", [
    ('    return symbol == "TSLA"', "rsi_threshold"),
    ("    return days > 40", "rsi_threshold"),
    ("    return days > 40 and rsi_threshold > 20", "symbol"),
])
def test_a_boolean_that_comes_out_both_ways_but_ignores_an_argument_fails(body: str, ignored: str) -> None:
    ver = Verifier(InlineSandbox()).verify(_signal(body), SIGNAL)
    assert not ver.ok and isinstance(ver.error, VerificationFailed), ver.stages[-1].note
    assert ver.error.details["parameter"] == ignored


def test_a_boolean_whose_variations_all_lack_data_is_inconclusive() -> None:
    body = ('    if (symbol, days, rsi_threshold) != ("AAPL", 30, 30):\n        raise ValueError("no data")\n'
            "    return False")
    ver = Verifier(InlineSandbox()).verify(_signal(body), SIGNAL)
    assert ver.ok, ver.error
    assert ver.stages[-1].note.startswith("inconclusive")


def test_boolean_answers_must_be_real_booleans() -> None:
    contract = ToolContract("signal", {"symbol": "AAPL", "days": 30}, OutputSpec(type="boolean"))
    flaky = ('def signal(symbol: str, days: int) -> bool:\n    return False if symbol == "AAPL" else 0\n\n'
             'if __name__ == "__main__":\n    signal("A", 1)\n')
    ver = Verifier(InlineSandbox()).verify(flaky, contract)
    assert ver.stage == "metamorphic" and isinstance(ver.error, ContractViolation)


def test_variations_without_data_are_skipped_not_failed() -> None:
    code = MA_GOOD.replace('    closes = yf', '    if symbol != "MSFT":\n        raise ValueError("no data")\n'
                           '    closes = yf').replace('moving_average("AAPL"', 'moving_average("MSFT"')
    ver = Verifier(InlineSandbox()).verify(code, MA)
    assert ver.ok, ver.error
    # symbols gave no data, so the window and days variations had to move the answer
    assert "window=2" in ver.stages[-1].note and "inconclusive for symbol" in ver.stages[-1].note


def test_every_sandbox_run_of_the_verification_is_kept_with_its_stage() -> None:
    sandbox = InlineSandbox()
    ver = Verifier(sandbox).verify(MA_GOOD, MA)
    assert [(r.args, r.result.ok) for r in ver.runs] == [(args, True) for _, args in sandbox.runs]
    assert [r.stage for r in ver.runs][:2] == ["selftest", "contract"]
    assert {r.stage for r in ver.runs[2:]} == {"metamorphic"}
    assert ver.result is ver.runs[1].result
    crashed = Verifier(InlineSandbox()).verify(MA_BUGGY, MA)
    [run] = crashed.runs
    assert run.stage == "selftest" and run.result.error_type == "KeyError"


class _SlowSandbox:
    """Records the limits it was given and reports a timeout, like the real one would."""

    def __init__(self) -> None:
        self.limits: list[Limits] = []

    def run(self, code: str, entry: Any, args: Any = None, limits: Limits | None = None) -> ExecutionResult:
        assert limits is not None
        self.limits.append(limits)
        return ExecutionResult(status="timeout", layer="timeout", duration_s=limits.timeout_s)


def test_sandbox_timeout_is_cut_to_the_deadline() -> None:
    sandbox = _SlowSandbox()
    verifier = Verifier(sandbox, limits=Limits(timeout_s=30.0))  # type: ignore[arg-type]
    with pytest.raises(DeadlineExceeded) as info:
        verifier.run("x = 1\n", None, None, stage="selftest", deadline=time.monotonic() + 2.0)
    assert sandbox.limits[0].timeout_s <= 2.0
    assert info.value.details["stage"] == "selftest"
    # without a deadline a timeout is the tool's own fault
    assert verifier.run("x = 1\n", None, None, stage="contract", deadline=None).status == "timeout"
    assert sandbox.limits[1].timeout_s == 30.0


def test_result_errors_are_typed_and_path_free() -> None:
    crashed = result_error(ExecutionResult(status="exception", error_type="KeyError", error_message="'x'",
                                           traceback='File "/tmp/sbx-123/tool.py", line 4, in f\nKeyError'), "f()")
    assert isinstance(crashed, ToolCrashed) and "/tmp/" not in crashed.details["traceback"]
    blocked = result_error(ExecutionResult(status="blocked", layer="audit-hook", rule="socket.connect"), "f()")
    assert isinstance(blocked, PolicyViolation) and blocked.details["layer"] == "audit-hook"
    killed = result_error(ExecutionResult(status="killed", layer="rlimit-as"), "f()")
    assert isinstance(killed, ToolCrashed) and "rlimit-as" in killed.message
