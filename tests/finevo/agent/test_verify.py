"""The verification stages one by one."""

from __future__ import annotations

import time
from typing import Any

import pytest

from finevo.agent.verify import (
    ToolContract,
    Verifier,
    function_signature,
    has_selftest,
    range_problems,
    result_error,
    signature_problem,
    variations,
)
from finevo.errors import ContractViolation, DeadlineExceeded, PolicyViolation, ToolCrashed, VerificationFailed
from finevo.sandbox.api import ExecutionResult, Limits
from finevo.tasks import OutputSpec
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


def test_signature_must_bind_the_task_arguments_by_name() -> None:
    sig = function_signature(MA_GOOD, "moving_average")
    assert [p["name"] for p in sig] == ["symbol", "window", "days"]
    assert signature_problem(sig, "moving_average", ["symbol", "window", "days"]) is None
    assert "no parameter" in signature_problem(sig, "moving_average", ["symbol", "period"])
    assert "requires" in signature_problem(sig, "moving_average", ["symbol", "window"])
    assert "no top-level function" in signature_problem(None, "moving_average", ["symbol"])
    kw = function_signature("def f(symbol, **kw):\n    pass\n", "f")
    assert signature_problem(kw, "f", ["symbol", "anything"]) is None


def test_selftest_block_detection() -> None:
    assert has_selftest(MA_GOOD)
    assert not has_selftest("def f():\n    pass\n")
    assert has_selftest("def f():\n    pass\nif '__main__' == __name__:\n    f()\n")


def test_variations_change_one_thing_at_a_time() -> None:
    out = variations({"symbol": "AAPL", "year": 2023, "quarter": 4})
    assert [(k, d) for k, d, _ in out] == [("symbol", "symbol='MSFT'"), ("symbol", "symbol='GOOGL'"),
                                           ("param", "year=2022"), ("param", "quarter=1")]
    pair = variations({"symbols": ["^GSPC", "AAPL"], "days": 30})
    assert pair[0][2]["symbols"] == ["^GSPC", "MSFT"]  # not a mere reordering (correlation is symmetric)
    assert pair[1][2] == {"symbols": ["^GSPC", "AAPL"], "days": 15}


def test_boolean_answers_may_coincide_but_must_be_real_booleans() -> None:
    contract = ToolContract("signal", {"symbol": "AAPL", "days": 30}, OutputSpec(type="boolean"))
    const = 'def signal(symbol: str, days: int) -> bool:\n    return False\n\nif __name__ == "__main__":\n    signal("A", 1)\n'
    assert Verifier(InlineSandbox()).verify(const, contract).ok
    flaky = const.replace("return False", "return False if symbol == 'AAPL' else 0")
    ver = Verifier(InlineSandbox()).verify(flaky, contract)
    assert ver.stage == "metamorphic" and isinstance(ver.error, ContractViolation)


def test_variations_without_data_are_skipped_not_failed() -> None:
    code = MA_GOOD.replace('    closes = yf', '    if symbol != "MSFT":\n        raise ValueError("no data")\n'
                           '    closes = yf').replace('moving_average("AAPL"', 'moving_average("MSFT"')
    ver = Verifier(InlineSandbox()).verify(code, MA)
    assert ver.ok, ver.error
    # symbols gave no data, so a window variation had to move the answer
    assert "window=2" in ver.stages[-1].note


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
