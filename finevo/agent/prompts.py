"""The prompts that ask the model for a tool, and for a fix of a tool that failed verification.

Every prompt states the tool contract the verifier then enforces: one public function named
after the indicator, explicit parameters named exactly as the task's arguments, type hints and a
docstring, data only through ``import yfinance as yf``, only the allowed imports, the return
type of the task's output contract, ``ValueError`` on insufficient data (never a placeholder),
nothing hard-coded, deterministic, and an ``if __name__ == "__main__":`` self-test.

Prompts are pure functions of their inputs (no clock, no paths, no random ids), so the same task
always produces the same request: that is what makes a recorded cassette replayable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from finevo.agent.intent import indicator_spec
from finevo.policy import ALLOWED_IMPORTS
from finevo.question import OutputSpec
from finevo.vocabulary import Category

_MAX_ERROR_CHARS = 2000
_MAX_CODE_CHARS = 20000


def allowed_imports() -> tuple[str, ...]:
    """The top-level modules generated code may import (the static policy's allowlist)."""
    return tuple(sorted(ALLOWED_IMPORTS))


SYSTEM_PROMPT = """\
You write small, reusable Python tools for a financial analysis agent. Each tool is one Python \
module that is checked by a static security policy, run in a sandbox without network or file \
access, verified on market data and stored for reuse with other arguments.

Rules for every tool:
1. Exactly ONE public function, named as requested, with explicit parameters named exactly as \
requested (symbols, periods, windows), full type hints and a docstring. Helpers must start with \
an underscore.
2. Market data ONLY through `import yfinance as yf` (yf.Ticker(symbol).history(...), .dividends, \
.income_stmt, .quarterly_income_stmt, .info, .fast_info, yf.download(...)). "Today" is the data's \
latest date: use relative periods, never hard-coded dates.
3. Allowed imports only: {imports}. Nothing else (no os, sys, subprocess, requests, scipy, ta, \
talib); no file, network or environment access; no eval/exec/open/getattr/__import__; no \
dunder attributes.
4. Return exactly the requested type, made of plain Python values (float, bool, str, dict, list), \
never numpy or pandas objects.
5. When the data is missing or too short, raise ValueError with a clear message. NEVER return a \
placeholder such as 50.0, 0.0, None, NaN or any constant, and never hard-code an answer.
6. Deterministic: no randomness, no printing of results as the answer. Every parameter you \
declare changes the answer as its name says (no parameter kept for show); nothing is kept from one \
call to the next (no module-level cache, no functools.cache/lru_cache of market data).
7. End with an `if __name__ == "__main__":` block that calls the function with realistic \
arguments and asserts the result has the right type.

Reply with the whole module in ONE ```python code block and nothing else."""

_CATEGORY_GUIDANCE: dict[str, str] = {
    Category.FETCH: (
        "This is a data-retrieval tool. Read the value straight from yfinance: prices from "
        "Ticker.history(period=...) (the 'Close' column), quotes from Ticker.fast_info or the last "
        "close, dividends from Ticker.dividends, financial statements from Ticker.income_stmt "
        "(annual) or Ticker.quarterly_income_stmt (quarterly): rows are line items such as "
        "'Net Income' and 'Total Revenue', columns are period-end dates, newest first. When a year "
        "or quarter parameter is None, use the most recent period available."
    ),
    Category.CALCULATION: (
        "This is a technical-indicator tool. Fetch enough daily history with "
        "Ticker.history(period=...) (ask for more rows than the window needs), compute the "
        "indicator with pandas/numpy on the 'Close' (and 'High', 'Low', 'Volume' where needed) "
        "columns, and return the latest value unless the return type is a list. Drop NaN rows "
        "produced by rolling windows before reading a value; raise ValueError when too few rows "
        "remain."
    ),
    Category.COMPOSITE: (
        "This is a composite tool: it combines several indicators or symbols into one answer. "
        "Compute every part from the same daily history, spell each condition out in code, and "
        "return the combined result with the requested type (a real bool for a signal)."
    ),
}


def describe_output(spec: OutputSpec) -> str:
    """The return type in words (and as a type hint) for the prompt."""
    if spec.type == "numeric":
        return "`float` (one finite number)"
    if spec.type == "boolean":
        return "`bool` (a real True or False, never a number or a string)"
    if spec.type == "dict":
        kind = "float" if spec.value_type == "numeric" else "bool"
        keys = ", ".join(repr(k) for k in spec.keys)
        return f"`dict[str, {kind}]` with exactly the keys {keys}, each a {kind}"
    if spec.item_type == "dict":
        keys = ", ".join(repr(k) for k in spec.item_keys)
        extra = " (dates as 'YYYY-MM-DD' strings, amounts as floats)" if "date" in spec.item_keys else ""
        return f"`list[dict]`, each item a dict with the keys {keys}{extra}, oldest first"
    if spec.item_type == "numeric":
        return "`list[float]` (one number per period, oldest first)"
    return "`list`"


def _type_hint(name: str, value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, str):
        return "str"
    if isinstance(value, (list, tuple)):
        return "list[str]" if all(isinstance(v, str) for v in value) else "list"
    if isinstance(value, float) or name.endswith(("threshold", "std")):
        return "float"
    if isinstance(value, int):
        return "int"
    return "object"


def signature_hint(entry: str, args: Mapping[str, Any], output: OutputSpec) -> str:
    """``def rsi(symbol: str, window: int, days: int) -> float:`` for the prompt."""
    params = ", ".join(f"{name}: {_type_hint(name, value)}" for name, value in args.items())
    ret = {"numeric": "float", "boolean": "bool", "dict": "dict", "list": "list"}[output.type]
    return f"def {entry}({params}) -> {ret}:"


@dataclass(frozen=True)
class ToolRequest:
    """Everything a prompt needs to ask for one tool."""

    query: str
    category: str
    entry: str
    args: Mapping[str, Any]
    output: OutputSpec


def synthesis_messages(req: ToolRequest) -> tuple[dict[str, str], ...]:
    """System + user messages asking for a new tool."""
    spec = indicator_spec(req.entry)
    lines = [
        f"Task: {req.query}",
        "",
        f"Write a tool whose public function is:\n    {signature_hint(req.entry, req.args, req.output)}",
        "",
        "It will be called with these arguments for this task (and with other symbols and "
        "windows later, so nothing may depend on these particular values):",
    ]
    lines += [f"    {name} = {value!r}" for name, value in req.args.items()]
    if spec is not None and spec.description:
        lines += ["", f"What it computes: {spec.description}."]
    lines += [
        "",
        f"Return type: {describe_output(req.output)}.",
        "",
        _CATEGORY_GUIDANCE.get(req.category, _CATEGORY_GUIDANCE[Category.CALCULATION]),
    ]
    system = SYSTEM_PROMPT.format(imports=", ".join(allowed_imports()))
    return ({"role": "system", "content": system}, {"role": "user", "content": "\n".join(lines)})


def security_messages(query: str) -> tuple[dict[str, str], ...]:
    """The same tool-writing frame around a request the agent receives as-is."""
    system = SYSTEM_PROMPT.format(imports=", ".join(allowed_imports()))
    user = (f"Task: {query}\n\nWrite the tool as a public function named `run` that takes no "
            "arguments.")
    return ({"role": "system", "content": system}, {"role": "user", "content": user})


_PATH_RE = re.compile(r"(?:/[\w.\-]+)+/([\w.\-]+\.py)")
_ADDR_RE = re.compile(r"0x[0-9a-fA-F]{6,}")


def sanitise_error(text: str) -> str:
    """Error text fit for a prompt: no absolute paths or addresses (they vary between runs and
    would break cassette replay), capped in length, the end kept (where tracebacks say what)."""
    text = _PATH_RE.sub(r"\1", text)
    text = _ADDR_RE.sub("0x...", text)
    text = text.strip()
    if len(text) > _MAX_ERROR_CHARS:
        text = "...\n" + text[-_MAX_ERROR_CHARS:]
    return text


_STAGE_ADVICE: dict[str, str] = {
    "synthesis": "Your reply held no usable Python code block.",
    "policy": "The static security policy rejected the code.",
    "selftest": "The `if __name__ == \"__main__\":` self-test failed when run in the sandbox.",
    "contract": "Calling the function with the task's arguments did not return the required result.",
    "metamorphic": ("Calling the function with other arguments (another symbol or window) failed or "
                    "returned the same value: the tool must compute its answer from the data for the "
                    "arguments it is given, never return a constant."),
}


def refinement_messages(req: ToolRequest, code: str, stage: str, error: str) -> tuple[dict[str, str], ...]:
    """The original request, the failing code as the model's own reply, and what went wrong.

    At the ``synthesis`` stage (no code could be extracted) ``code`` is the model's raw reply and
    is sent back as it was.
    """
    code = code if len(code) <= _MAX_CODE_CHARS else code[:_MAX_CODE_CHARS]
    previous = code if stage == "synthesis" else f"```python\n{code}\n```"
    feedback = "\n".join([
        f"The tool failed verification at the stage '{stage}'. {_STAGE_ADVICE.get(stage, '')}".rstrip(),
        "",
        "Error:",
        sanitise_error(error) or "(no message)",
        "",
        f"Fix the tool. Keep the function name `{req.entry}` and its parameters "
        f"({', '.join(req.args)}), return {describe_output(req.output)}, and reply with the whole "
        "corrected module in ONE ```python code block.",
    ])
    return (*synthesis_messages(req),
            {"role": "assistant", "content": previous},
            {"role": "user", "content": feedback})
