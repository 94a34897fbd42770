from __future__ import annotations

import pytest

from finevo.registry.signature import (
    ParamKind,
    function_signature,
    signature_fits,
    signature_problem,
    tool_signature,
)
from tests.finevo.agent.doubles import MA_GOOD


def test_signature_reads_params_in_order_with_annotations_and_defaults() -> None:
    code = '''import math

def _helper(x):
    return x

def rsi(symbol: str, window: int = 14, *, method: str = "wilder", cols: tuple = ("Close",),
        start=None, scale=math.pi) -> float:
    return 50.0
'''
    sig = tool_signature(code)
    assert sig["function"] == "rsi" and sig["returns"] == "float"
    params = {p["name"]: p for p in sig["params"]}
    assert [p["name"] for p in sig["params"]] == ["symbol", "window", "method", "cols", "start", "scale"]
    assert params["symbol"] == {"name": "symbol", "annotation": "str", "default": None, "required": True,
                                "kind": "positional_or_keyword"}
    assert params["window"]["default"] == 14 and not params["window"]["required"]
    assert params["method"]["kind"] == "keyword_only" and params["method"]["default"] == "wilder"
    assert params["cols"]["default"] == ["Close"]
    assert params["start"]["default"] is None and params["start"]["required"] is False
    assert params["scale"]["default"] == {"expr": "math.pi"}


@pytest.mark.parametrize(("code", "needle"), [
    ("def a(): pass\ndef b(): pass\n", "exactly one public function"),
    ("x = 1\n", "exactly one public function"),
    ("def a(:\n", "does not parse"),
])
def test_signature_errors(code: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        tool_signature(code)


def test_named_function_among_several() -> None:
    assert tool_signature("def a(x): pass\ndef b(y): pass\n", function="b")["params"][0]["name"] == "y"


def test_fits() -> None:
    sig = tool_signature("def f(symbol: str, window: int = 20, *, price: str = 'Close') -> float: ...")
    assert signature_fits(sig, {"symbol"})
    assert signature_fits(sig, {"symbol", "window", "price"})
    assert not signature_fits(sig, set())
    assert not signature_fits(sig, {"symbol", "period"})
    kw = tool_signature("def g(symbol, **options): ...")
    assert signature_fits(kw, {"symbol", "anything"})
    pos = tool_signature("def h(symbol, /, window=3): ...")
    assert not signature_fits(pos, {"symbol"})


def test_every_parameter_kind_has_its_word() -> None:
    sig = tool_signature("def f(a, /, b, *args, c, d=1, **kw): ...")
    assert [(p["name"], p["kind"]) for p in sig["params"]] == [
        ("a", ParamKind.POSITIONAL_ONLY), ("b", ParamKind.POSITIONAL_OR_KEYWORD), ("args", ParamKind.VAR_POSITIONAL),
        ("c", ParamKind.KEYWORD_ONLY), ("d", ParamKind.KEYWORD_ONLY), ("kw", ParamKind.VAR_KEYWORD)]
    assert {p["kind"] for p in sig["params"]} == {k.value for k in ParamKind}
    assert [p["required"] for p in sig["params"]] == [True, True, False, True, False, False]


def test_signature_must_bind_the_task_arguments_by_name() -> None:
    sig = function_signature(MA_GOOD, "moving_average")
    assert sig is not None and [p["name"] for p in sig["params"]] == ["symbol", "window", "days"]
    assert signature_problem(sig, "moving_average", ["symbol", "window", "days"]) is None
    assert "no parameter(s) period" in (signature_problem(sig, "moving_average", ["symbol", "period"]) or "")
    assert "requires parameter(s) days" in (signature_problem(sig, "moving_average", ["symbol", "window"]) or "")
    assert function_signature(MA_GOOD, "nothing_here") is None
    assert function_signature("def f(:\n", "f") is None
    assert "no top-level function" in (signature_problem(None, "moving_average", ["symbol"]) or "")
    kw = function_signature("def f(symbol, **kw):\n    pass\n", "f")
    assert signature_problem(kw, "f", ["symbol", "anything"]) is None
    posonly = function_signature("def f(symbol, /):\n    pass\n", "f")
    assert "positional-only parameter(s) symbol" in (signature_problem(posonly, "f", ["symbol"]) or "")


@pytest.mark.parametrize("code, names", [
    ("def f(symbol: str, window: int = 20, *, price: str = 'Close') -> float: ...", ["symbol"]),
    ("def f(symbol: str, window: int = 20, *, price: str = 'Close') -> float: ...", ["symbol", "price"]),
    ("def f(symbol: str, window: int = 20, *, price: str = 'Close') -> float: ...", []),
    ("def f(symbol: str, window: int = 20, *, price: str = 'Close') -> float: ...", ["symbol", "period"]),
    ("def f(symbol, **options): ...", ["symbol", "anything"]),
    ("def f(symbol, /, window=3): ...", ["symbol"]),
    ("def f(*args): ...", []),
    ("def f(*, a, b=2): ...", ["a"]),
    ("def f(*, a, b=2): ...", ["b"]),
])
def test_the_yes_no_fit_and_the_reason_agree(code: str, names: list[str]) -> None:
    sig = tool_signature(code)
    assert signature_fits(sig, names) is (signature_problem(sig, "f", names) is None)
