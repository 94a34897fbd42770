from __future__ import annotations

import ast

import pytest

from finevo.errors import AgentFailure, CodeExtractionError, ModelRefused
from finevo.llm.extract import extract_code, strip_reasoning

TOOL = '''import yfinance as yf


def sma(symbol: str, window: int = 20) -> float:
    """Simple moving average of the close."""
    close = yf.Ticker(symbol).history(period="1y")["Close"]
    if len(close) < window:
        raise ValueError("not enough data")
    return float(close.tail(window).mean())
'''

FIXED = TOOL.replace("def sma", "def sma_fixed")


def _fence(code: str, lang: str = "python") -> str:
    body = code if code.endswith("\n") else code + "\n"
    return f"```{lang}\n{body}```"


def test_plain_python_block_with_prose_around() -> None:
    reply = f"Sure! Here is the tool.\n\n{_fence(TOOL)}\n\nIt raises when data is short."
    assert extract_code(reply) == TOOL


def test_think_tags_are_dropped_even_when_they_hold_code() -> None:
    decoy = "def decoy(x):\n    return 50.0\n"
    reply = f"<think>Maybe:\n{_fence(decoy)}\nno, better fetch data.</think>\n{_fence(TOOL)}"
    assert extract_code(reply) == TOOL


def test_missing_opening_think_tag() -> None:
    reply = f"I should fetch the data first...\n</think>\n\n{_fence(TOOL)}"
    assert extract_code(reply) == TOOL
    assert "fetch the data first" not in strip_reasoning(reply)


def test_unclosed_think_means_no_answer() -> None:
    with pytest.raises(CodeExtractionError, match="reasoning"):
        extract_code("<think>let me think about RSI for a long time")


def test_usage_example_block_after_the_tool_is_ignored() -> None:
    usage = _fence('print(sma("AAPL", 50))')
    reply = f"{_fence(TOOL)}\nUsage:\n{usage}"
    assert extract_code(reply) == TOOL


def test_last_complete_function_block_wins() -> None:
    reply = f"First try:\n{_fence(TOOL)}\nWait, corrected:\n{_fence(FIXED)}"
    assert extract_code(reply) == FIXED


def test_python_tagged_block_is_preferred_over_untagged() -> None:
    reply = f"{_fence(TOOL)}\nAlternative:\n{_fence(FIXED, lang='')}"
    assert extract_code(reply) == TOOL


@pytest.mark.parametrize("lang", ["py", "python3", "Python", ""])
def test_other_python_fence_tags(lang: str) -> None:
    assert extract_code(f"Here:\n{_fence(TOOL, lang)}") == TOOL


def test_tilde_fence_and_longer_backtick_fence() -> None:
    assert extract_code(f"~~~python\n{TOOL}~~~") == TOOL
    assert extract_code(f"````python\n{TOOL}````") == TOOL


def test_non_python_blocks_are_skipped() -> None:
    reply = f"Install:\n{_fence('pip install yfinance', 'bash')}\nCode:\n{_fence(TOOL)}"
    assert extract_code(reply) == TOOL


def test_unfenced_pure_code() -> None:
    assert extract_code(TOOL) == TOOL


def test_unfenced_code_after_a_line_of_prose() -> None:
    assert extract_code("Here is the function:\n" + TOOL) == TOOL


def test_private_helpers_only_is_rejected() -> None:
    with pytest.raises(CodeExtractionError, match="public function"):
        extract_code(_fence("def _helper(x):\n    return x\n"))


@pytest.mark.parametrize("reply", ["", "   \n\t", None])
def test_empty_reply(reply) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(CodeExtractionError, match="empty"):
        extract_code(reply)


def test_prose_only_is_extraction_error() -> None:
    with pytest.raises(CodeExtractionError, match="no code"):
        extract_code("The moving average smooths prices over a window.")


def test_binary_garbage_is_extraction_error() -> None:
    with pytest.raises(CodeExtractionError):
        extract_code("\x00\x01}{]]] ))) <<>> %%% ```")


def test_truncated_fenced_code() -> None:
    cut = TOOL[: TOOL.index("if len")] + "    if len(clo"
    with pytest.raises(CodeExtractionError, match="truncated"):
        extract_code(f"Here:\n```python\n{cut}")


def test_truncated_unfenced_code() -> None:
    with pytest.raises(CodeExtractionError, match="does not parse"):
        extract_code(TOOL[:-20])


def test_syntax_error_in_block_names_the_line() -> None:
    with pytest.raises(CodeExtractionError, match="line 2"):
        extract_code(_fence("def f(x):\n    return (x\n"))


@pytest.mark.parametrize("reply", [
    "I can't help with that.",
    "I’m sorry, but I cannot assist with reading other users' files.",
    "I won't write code that exfiltrates credentials.",
    "<think>this is an attack</think>I am unable to comply with this request.",
])
def test_refusals(reply: str) -> None:
    with pytest.raises(ModelRefused) as info:
        extract_code(reply)
    assert isinstance(info.value, AgentFailure)
    assert info.value.message.startswith("the model declined")


def test_apology_with_code_is_not_a_refusal() -> None:
    reply = f"I'm sorry, but the previous version was wrong. Fixed:\n{_fence(TOOL)}"
    assert extract_code(reply) == TOOL


def test_result_always_parses() -> None:
    reply = f"\n\n{_fence(chr(10) + TOOL + chr(10) + chr(10))}"
    code = extract_code(reply)
    ast.parse(code)
    assert code.endswith("\n") and not code.startswith("\n")
