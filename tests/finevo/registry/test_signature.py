from __future__ import annotations

import pytest

from finevo.registry.signature import signature_fits, tool_signature


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
