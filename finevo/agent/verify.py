"""Verification of a tool before it is registered, and again before it is reused.

Stages, in order, each timed and recorded (names from :data:`finevo.outcome.STAGES`):

``policy``
    The static security policy. A rejection is a :class:`~finevo.errors.PolicyViolation`.
``contract`` (static part)
    The module defines the public function named after the indicator and that function accepts
    the task's arguments by name (every required parameter is one of them).
``selftest``
    The module's ``if __name__ == "__main__":`` block runs in the sandbox and must finish cleanly.
``contract``
    The function called with the task's arguments on the snapshot returns a value of the task's
    output shape (:func:`finevo.contract.check_shape`) inside a plausible range.
``metamorphic``
    The same function called with other arguments must give other answers: a tool that returns a
    constant, a hard-coded value or ignores an argument is caught here. The answer must change
    with another symbol, and with each window, period or other numeric parameter moved both ways
    (a smaller and a larger value; a lookback span such as ``days`` may stay put when another
    parameter moves the answer). A boolean answer must come out both True and False across
    threshold extremes, other symbols and other windows. Variations that raise ``ValueError``
    (too little data for that variation) prove nothing either way and are skipped; a crash or a
    badly shaped answer on a variation fails the stage. Details in
    :meth:`Verifier._metamorphic_values` and :meth:`Verifier._metamorphic_boolean`.

Each stage's result and note are kept (:class:`StageRecord`), and so is every sandbox run the
stages make (:class:`SandboxRun`), so the agent can store them with the attempt and as traces.

Every sandbox run is bounded by the task deadline: the run's timeout is the time left, and a run
cut short by the deadline raises :class:`~finevo.errors.DeadlineExceeded` (``stage`` in details).
"""

from __future__ import annotations

import ast
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from finevo.agent.intent import indicator_spec
from finevo.agent.prompts import sanitise_error
from finevo.contract import check_shape, describe
from finevo.errors import (
    AgentFailure,
    ContractViolation,
    DeadlineExceeded,
    FinevoError,
    PolicyViolation,
    ToolCrashed,
    VerificationFailed,
)
from finevo.jsontypes import JSONObject
from finevo.normalize import ANSWER, normalize
from finevo.outcome import AttemptStage
from finevo.policy import check
from finevo.pysource import parse
from finevo.question import OutputSpec
from finevo.registry.signature import function_signature, signature_problem
from finevo.sandbox.api import ExecutionResult, Limits, Sandbox

#: Symbols of the bundled snapshot, in the order variations pick them (stocks before indices:
#: indices have no financial statements or dividends).
DEFAULT_SYMBOLS: tuple[str, ...] = ("MSFT", "AAPL", "GOOGL", "AMZN", "TSLA", "SPY", "^GSPC")
#: Sandbox runs a boolean tool gets to show both answers (a constant one uses them all; an honest
#: one usually needs one to three).
_MAX_BOOLEAN_RUNS = 64
#: Sandbox runs the search for one boolean parameter may add (runs already made are free).
_MAX_PARAMETER_RUNS = 16
#: Contexts (symbols, threshold settings) tried to find one where a threshold flips the answer.
_MAX_BRACKET_CONTEXTS = 16
#: Width of the threshold bracket, on a 0..100 scale, at which a boolean is checked per parameter.
_BRACKET_WIDTH = 0.05
_TRACEBACK_TAIL = 1200


@dataclass(frozen=True)
class ToolContract:
    """What one tool must satisfy for one task."""

    entry: str
    args: Mapping[str, Any]
    output: OutputSpec


@dataclass
class StageRecord:
    name: str
    ok: bool
    duration_s: float
    note: str = ""

    def record(self) -> AttemptStage:
        """The record kept with an attempt: no duration (the outcome's timings hold those), so a
        replayed run's attempts are the recorded run's, byte for byte."""
        return AttemptStage(name=self.name, ok=self.ok, note=self.note)


@dataclass
class SandboxRun:
    """One sandbox run made while verifying: which stage, with which arguments (None for the
    self-test), and what came back."""

    stage: str
    args: JSONObject | None
    #: None only for a run cut short before the sandbox answered
    result: ExecutionResult | None


@dataclass
class Verification:
    """The result of :meth:`Verifier.verify`; ``stage`` is the last stage reached."""

    ok: bool
    stage: str
    error: FinevoError | None = None
    value: Any = None
    result: ExecutionResult | None = None
    stages: list[StageRecord] = field(default_factory=list)
    #: Every sandbox run the stages made, in order (the caller writes them as execution traces).
    runs: list[SandboxRun] = field(default_factory=list)

    def timings(self) -> dict[str, float]:
        out: dict[str, float] = {}
        for rec in self.stages:
            out[rec.name] = out.get(rec.name, 0.0) + rec.duration_s
        return out


# --------------------------------------------------------------------------- static checks
def policy_check(code: str) -> PolicyViolation | None:
    """The static policy's verdict on ``code`` as a typed error (None when it passes)."""
    report = check(code)
    violations = list(report.violations)
    if report.allowed or not violations:
        return None
    first = violations[0]
    rule = str(getattr(first, "rule", "unknown"))
    line, col = getattr(first, "line", None), getattr(first, "col", None)
    message = str(getattr(first, "message", "") or rule)
    where = f"line {line}, col {col}" if line is not None else "unknown position"
    return PolicyViolation(f"policy rule '{rule}' at {where}: {message}", rule=rule, line=line, col=col,
                           layer="policy", violations=len(violations) or 1)


def has_selftest(code: str) -> bool:
    """True when the module has a top-level ``if __name__ == "__main__":`` block."""
    try:
        tree = parse(code)
    except SyntaxError:
        return False
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Compare):
            parts = [node.test.left, *node.test.comparators]
            names = {p.id for p in parts if isinstance(p, ast.Name)}
            consts = {p.value for p in parts if isinstance(p, ast.Constant)}
            if "__name__" in names and "__main__" in consts:
                return True
    return False


# --------------------------------------------------------------------------- variations
_YEAR_NAMES = ("year",)
_QUARTER_NAMES = ("quarter",)
#: yfinance period strings, shortest first: a ``period`` argument moves one step each way.
_PERIODS = ("1mo", "3mo", "6mo", "1y", "2y", "5y")


@dataclass(frozen=True)
class Variation:
    """Other arguments for a tool, one argument changed (``param``; ``"symbol"``/``"symbols"`` for
    another ticker)."""

    kind: str  # "symbol" | "param"
    param: str
    description: str
    args: JSONObject


def symbol_variations(args: Mapping[str, Any], symbols: tuple[str, ...] = DEFAULT_SYMBOLS,
                      limit: int = 2) -> list[Variation]:
    """Up to ``limit`` other symbols for the ``symbol`` argument, and for each position of a
    ``symbols`` list (that position replaced by a symbol not in the list: never a mere
    reordering, since e.g. a correlation is symmetric)."""
    return [var for _, group in symbol_groups(args, symbols) for var in group[:limit]]


def symbol_groups(args: Mapping[str, Any], symbols: tuple[str, ...] = DEFAULT_SYMBOLS
                  ) -> list[tuple[str, list[Variation]]]:
    """Every other symbol, grouped by the position it replaces: ``("symbol", [...])`` or
    ``("symbols[i]", [...])`` per position of a list, each group in ``symbols`` order."""
    base = dict(args)
    out: list[tuple[str, list[Variation]]] = []
    if isinstance(base.get("symbol"), str):
        out.append(("symbol", [Variation("symbol", "symbol", f"symbol={alt!r}", {**base, "symbol": alt})
                               for alt in symbols if alt != base["symbol"]]))
    if isinstance(base.get("symbols"), list) and base["symbols"]:
        current = list(base["symbols"])
        for i in range(len(current)):
            group: list[Variation] = []
            for alt in (s for s in symbols if s not in current):
                changed = [*current[:i], alt, *current[i + 1:]]
                group.append(Variation("symbol", "symbols", f"symbols={changed!r}", {**base, "symbols": changed}))
            out.append((f"symbols[{i}]", group))
    return out


def parameter_variations(args: Mapping[str, Any]) -> list[Variation]:
    """Each numeric parameter (and yfinance ``period`` string) moved both ways: a smaller and a
    larger window or period, the year before and after, two other quarters. Booleans and other
    strings are left alone."""
    base = dict(args)
    out: list[Variation] = []
    for name, value in base.items():
        for alt in alternatives(name, value):
            out.append(Variation("param", name, f"{name}={alt!r}", {**base, name: alt}))
    return out


def variations(args: Mapping[str, Any], symbols: tuple[str, ...] = DEFAULT_SYMBOLS) -> list[Variation]:
    """Other arguments to call a tool with, one change at a time: two other symbols, then every
    parameter moved both ways."""
    return symbol_variations(args, symbols) + parameter_variations(args)


def alternatives(name: str, value: Any) -> list[Any]:
    """Other sensible values of one argument, a smaller one first (empty when it is not varied)."""
    if isinstance(value, str):
        if name == "period" and value in _PERIODS:
            i = _PERIODS.index(value)
            return [_PERIODS[j] for j in (i - 1, i + 1) if 0 <= j < len(_PERIODS)]
        return []
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    if name in _YEAR_NAMES:
        return [int(value) - 1, int(value) + 1]
    if name in _QUARTER_NAMES:
        return [int(value) % 4 + 1, (int(value) + 1) % 4 + 1]
    if name.endswith("threshold") and 1 < value <= 100:  # a level on a 0-100 oscillator (RSI)
        return [v for v in (value - 20, value + 20, value - 10, value + 10) if 0 <= v <= 100][:2]
    if isinstance(value, float) and value < 0:  # e.g. a return threshold of -0.05
        return [round(value * 2, 6), round(value / 2, 6)]
    if isinstance(value, float) and not value.is_integer():
        if 0 < value < 1:  # a fraction (a confidence level, a rate): stay inside (0, 1)
            return [round(value / 2, 6), round((1 + value) / 2, 6)]
        return [round(value / 2, 6), round(value * 2, 6)] if value > 0 else []
    n = int(value)
    if n < 0:
        return []
    smaller = n // 2 if n >= 2 else None
    larger = n * 2 if n >= 1 else 1
    out = [v for v in (smaller, larger) if v is not None and v != n]
    if len(out) < 2:
        out.append(out[-1] + 1)  # 1 -> 2, 3 (0 -> 1, 2): still two values to compare
    return [float(v) if isinstance(value, float) else v for v in out]


def wide_alternatives(name: str, value: Any) -> list[Any]:
    """More values of one argument than :func:`alternatives`, over a wider range (a window a
    sixth, a third, half, twice and three times as long; every other ``period``): what a boolean
    search tries to make a signal come out both ways. Thresholds and other kinds of argument get
    :func:`alternatives`."""
    alts = alternatives(name, value)
    if isinstance(value, str) and name == "period" and value in _PERIODS:
        return alts + [p for p in _PERIODS if p != value and p not in alts]
    if (isinstance(value, bool) or not isinstance(value, int) or name.endswith("threshold")
            or name in _YEAR_NAMES or name in _QUARTER_NAMES or value < 2):
        return alts
    more = [value // 3, value * 3, max(2, value // 6), (value * 3) // 2]
    return alts + [v for v in dict.fromkeys(more) if v not in alts and v != value and v >= 1]


def span_extremes(name: str, value: Any, tried: list[Any]) -> list[Any]:
    """A much shorter lookback span than ``tried`` (a sixth of a day count, the shortest
    ``period``): the last try before a span that never moved the answer is called inconclusive."""
    if isinstance(value, str) and name == "period" and value in _PERIODS:
        return [p for p in _PERIODS[:1] if p != value and p not in tried]
    if isinstance(value, bool) or not isinstance(value, int) or value < 4:
        return []
    short = max(2, value // 6)
    return [short] if short not in tried and short != value else []


def _oscillator_level(value: Any) -> bool:
    """A threshold on a 0..100 scale (an RSI or stochastic level)."""
    return not isinstance(value, bool) and isinstance(value, (int, float)) and 0 <= value <= 100


def threshold_extremes(name: str, value: Any) -> list[Any]:
    """Values of a ``*threshold`` argument that no indicator crosses (for a 0-100 oscillator such
    as RSI: 0 and 100; otherwise far below and far above), so a signal built on it must come out
    False at one end; empty for any other argument."""
    if not name.endswith("threshold") or isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    low, high = (0.0, 100.0) if 0 <= value <= 100 else (value - 1e6, value + 1e6)
    return [type(value)(low), type(value)(high)]


def _same(a: Any, b: Any) -> bool:
    """Exact sameness of two normalised values (NaN equals NaN; 1 equals 1.0)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


# --------------------------------------------------------------------------- plausibility
def range_problems(indicator: str, value: Any) -> list[str]:
    """Numbers outside the indicator's plausible range (from the catalogue), one line each."""
    spec = indicator_spec(indicator)
    if spec is None or spec.value_range is None:
        return []
    lo, hi = spec.value_range
    problems: list[str] = []
    for where, number in _numbers(value, "value"):
        if (lo is not None and number < lo) or (hi is not None and number > hi):
            bounds = f"[{'-inf' if lo is None else lo}, {'inf' if hi is None else hi}]"
            problems.append(f"{where} = {number!r} is outside the plausible range {bounds} for {indicator}")
        if len(problems) >= 5:
            break
    return problems


def _numbers(value: Any, where: str) -> list[tuple[str, float]]:
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float)):
        return [(where, float(value))]
    if isinstance(value, dict):
        return [n for k, v in value.items() if k not in ("date",) for n in _numbers(v, f"{where}[{k!r}]")]
    if isinstance(value, list):
        return [n for i, v in enumerate(value) for n in _numbers(v, f"{where}[{i}]")]
    return []


# --------------------------------------------------------------------------- the verifier
class Verifier:
    """Runs the verification stages for one tool against one task's contract."""

    def __init__(self, sandbox: Sandbox, *, limits: Limits | None = None,
                 symbols: tuple[str, ...] = DEFAULT_SYMBOLS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.sandbox = sandbox
        self.limits = limits or Limits()
        self.symbols = symbols
        self.clock = clock

    # ------------------------------------------------------------------ sandbox runs
    def run(self, code: str, entry: str | None, args: Mapping[str, Any] | None, *, stage: str,
            deadline: float | None) -> ExecutionResult:
        """One sandbox run whose timeout never outlasts ``deadline``."""
        limits = self.limits
        cut_by_deadline = False
        if deadline is not None:
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise DeadlineExceeded(f"task deadline passed before the {stage} run", stage=stage)
            if remaining < limits.timeout_s:
                limits = replace(limits, timeout_s=remaining)
                cut_by_deadline = True
        result = self.sandbox.run(code, entry, dict(args) if args is not None else None, limits)
        if result.status == "timeout" and cut_by_deadline:
            raise DeadlineExceeded(f"task deadline hit while the tool ran ({stage})", stage=stage,
                                   timeout_s=round(limits.timeout_s, 3))
        return result

    # ------------------------------------------------------------------ stages
    def verify(self, code: str, contract: ToolContract, *, deadline: float | None = None) -> Verification:
        """Run every stage; stop at the first failure. External errors (deadline) propagate."""
        ver = Verification(ok=False, stage="policy")
        steps: tuple[tuple[str, Callable[[], str]], ...] = (
            ("policy", lambda: self._policy(code)),
            ("contract", lambda: self._signature(code, contract)),
            ("selftest", lambda: self._selftest(code, deadline, ver)),
            ("contract", lambda: self._contract(code, contract, deadline, ver)),
            ("metamorphic", lambda: self._metamorphic(code, contract, deadline, ver)),
        )
        for name, step in steps:
            ver.stage = name
            started = self.clock()
            try:
                note = step()
            except AgentFailure as exc:
                exc.details.setdefault("stage", name)
                ver.stages.append(StageRecord(name, False, self.clock() - started, exc.message))
                ver.error = exc
                return ver
            except FinevoError:
                ver.stages.append(StageRecord(name, False, self.clock() - started, "interrupted"))
                raise
            ver.stages.append(StageRecord(name, True, self.clock() - started, note))
        ver.ok = True
        return ver

    def _policy(self, code: str) -> str:
        violation = policy_check(code)
        if violation is not None:
            raise violation
        return "passed"

    def _signature(self, code: str, contract: ToolContract) -> str:
        problem = signature_problem(function_signature(code, contract.entry), contract.entry, list(contract.args))
        if problem:
            raise ContractViolation(problem, check="signature")
        return "signature fits"

    def _run(self, ver: Verification, code: str, entry: str | None, args: Mapping[str, Any] | None, *,
             stage: str, deadline: float | None) -> ExecutionResult:
        """:meth:`run`, kept in ``ver.runs``."""
        result = self.run(code, entry, args, stage=stage, deadline=deadline)
        ver.runs.append(SandboxRun(stage, dict(args) if args is not None else None, result))
        return result

    def _selftest(self, code: str, deadline: float | None, ver: Verification) -> str:
        if not has_selftest(code):
            raise VerificationFailed('the module has no `if __name__ == "__main__":` self-test block',
                                     check="selftest")
        result = self._run(ver, code, None, None, stage="selftest", deadline=deadline)
        if not result.ok:
            raise result_error(result, "self-test")
        return "the self-test block finished cleanly"

    def _contract(self, code: str, contract: ToolContract, deadline: float | None, ver: Verification) -> str:
        result = self._run(ver, code, contract.entry, contract.args, stage="contract", deadline=deadline)
        ver.result = result
        if not result.ok:
            raise result_error(result, f"{contract.entry}({_call_args(contract.args)})")
        value = normalize(result.value, ANSWER)
        problems = check_shape(value, contract.output) or range_problems(contract.entry, value)
        if problems:
            raise ContractViolation(f"{contract.entry}({_call_args(contract.args)}) returned {describe(value)}: "
                                    + "; ".join(problems[:5]), check="contract", problems=problems[:20])
        ver.value = value
        return "value fits the output contract"

    def _metamorphic(self, code: str, contract: ToolContract, deadline: float | None, ver: Verification) -> str:
        calls = _Calls(self, code, contract, deadline, ver)
        if contract.output.type == "boolean":
            return _BooleanCheck(calls, self.symbols).run()
        return _ValueCheck(calls, self.symbols).run()

    def _variation(self, code: str, contract: ToolContract, var: Variation, deadline: float | None,
                   ver: Verification) -> Any:
        """The normalised answer for one variation, or ``_SKIP`` when it proves nothing."""
        description, args = var.description, var.args
        result = self._run(ver, code, contract.entry, args, stage="metamorphic", deadline=deadline)
        if result.status == "exception" and result.error_type == "ValueError":
            return _SKIP  # too little data for this variation: allowed, and proves nothing
        if not result.ok:
            raise _with_prefix(result_error(result, f"{contract.entry}({_call_args(args)})"),
                               f"with {description} instead: ")
        other = normalize(result.value, ANSWER)
        # a list's length follows the arguments (fewer days, fewer items): only the task's own call
        # is held to the task's minimum
        problems = check_shape(other, contract.output.model_copy(update={"min_items": 0}))
        if problems:
            raise ContractViolation(f"with {description} instead, {contract.entry} returned {describe(other)}: "
                                    + "; ".join(problems[:5]), check="metamorphic", variation=description)
        if other == [] or other == {}:
            return _SKIP  # e.g. no dividends for that symbol: nothing to compare
        return other


class _Calls:
    """The tool's answers for one verification, each set of arguments run at most once."""

    def __init__(self, verifier: Verifier, code: str, contract: ToolContract, deadline: float | None,
                 ver: Verification) -> None:
        self.verifier, self.code, self.contract, self.deadline, self.ver = verifier, code, contract, deadline, ver
        self.task = dict(contract.args)
        self.entry = contract.entry
        self._answers: JSONObject = {_key(self.task): ver.value}

    def answer(self, args: Mapping[str, Any]) -> Any:
        """The answer for ``args`` (``_SKIP`` when that variation lacks data)."""
        key = _key(args)
        if key not in self._answers:
            var = _variation_of(self.task, dict(args))
            self._answers[key] = self.verifier._variation(self.code, self.contract, var, self.deadline, self.ver)
        return self._answers[key]

    def known(self, args: Mapping[str, Any]) -> bool:
        return _key(args) in self._answers

    def describe(self, args: Mapping[str, Any]) -> str:
        return _describe_change(self.task, args) or "the task's own arguments"


def _key(args: Mapping[str, Any]) -> str:
    return repr(sorted(args.items()))


class _ValueCheck:
    """A number, list or dict must move with the symbol and with every parameter that can be checked.

    Symbols: every symbol argument, and every position of a symbol list, is replaced by other
    symbols; the first whose answer differs settles it; when every other symbol that ran gave
    the task's answer, that position is hard-coded and the stage fails.

    Parameters, one at a time: a smaller and a larger value with the task's symbol; only when
    neither moved the answer are the same values tried with the other symbols that ran (a highest
    close over 15, 30 and 60 days may well be one and the same close for one symbol, hardly for
    every symbol). A parameter fails when at least two of its variations ran and all of them gave
    their symbol's own answer; with fewer it proves nothing either way (``inconclusive``).

    A lookback span (``days``, ``period``, ``years``: how much history to read) is the exception:
    an honest answer can stay put when the span moves (the highest close of the last 30 sessions
    is also that of the last 15 when it came late; Cutler's RSI reads only its last ``window``
    changes). A span is also tried much shorter, on every symbol that ran; when nothing moves the
    answer it is reported ``inconclusive``, never failed: moving an argument cannot tell an ignored
    span from data in which the span does not matter (the gate's own probes and worlds can).
    """

    def __init__(self, calls: _Calls, symbols: tuple[str, ...]) -> None:
        self.calls, self.symbols = calls, symbols
        self.moved: list[str] = []
        self.inconclusive: list[str] = []
        self.spans_still: list[str] = []

    def run(self) -> str:
        calls = self.calls
        bases: list[JSONObject] = [calls.task]
        for label, group in symbol_groups(calls.task, self.symbols):
            same: list[str] = []
            change: str | None = None
            for var in group:
                other = calls.answer(var.args)
                if other is _SKIP:
                    continue
                if len(bases) < 3 and var.args not in bases:
                    bases.append(var.args)
                if not _same(other, calls.answer(calls.task)):
                    change = var.description
                    break
                same.append(var.description)
                if len(same) >= 2:
                    break
            if change is not None:
                self.moved.append(change)
            elif same:
                raise VerificationFailed(
                    f"{calls.entry} returns the same value {describe(calls.answer(calls.task))} for {', '.join(same)}: "
                    f"the answer does not depend on its {label} (hard-coded or constant output)",
                    check="metamorphic", parameter=label, variations=same)
            else:
                self.inconclusive.append(label)
        for name, value in calls.task.items():
            if name in ("symbol", "symbols"):
                continue
            self._parameter(name, value, bases)
        if not self.moved:
            return "inconclusive: every variation lacked data" if self.inconclusive else "no variation applies"
        note = f"answer changes with {'; '.join(self.moved)}"
        if self.spans_still:
            note += (f"; inconclusive for {', '.join(self.spans_still)} (the same answer with shorter and longer "
                     "spans on every symbol tried: a lookback that may not matter on this data)")
        if self.inconclusive:
            note += f"; inconclusive for {', '.join(self.inconclusive)} (too little data to compare)"
        return note

    def _parameter(self, name: str, value: Any, bases: list[JSONObject]) -> None:
        calls = self.calls
        alts = alternatives(name, value)
        if not alts:
            return
        compared: list[str] = []
        rounds = [alts] + ([extra] if _is_span(name) and (extra := span_extremes(name, value, alts)) else [])
        for values in rounds:
            for base in bases:
                base_value = calls.answer(base)
                for alt in values:
                    args = {**base, name: alt}
                    other = calls.answer(args)
                    if other is _SKIP:
                        continue
                    compared.append(calls.describe(args))
                    if not _same(other, base_value):
                        self.moved.append(calls.describe(args))
                        return
        if len(compared) < 2:
            self.inconclusive.append(name)
        elif _is_span(name):
            self.spans_still.append(name)
        else:
            raise _ignored(calls.entry, name, compared)


class _BooleanCheck:
    """A yes/no answer must come out both ways, and depend on each of its arguments.

    1. **Both answers**: a threshold pushed to either end of its scale (an RSI below 0 never
       happens, below 100 nearly always), other symbols, windows moved over a wide range, and
       those together, until True and False have both been seen. One answer on every variation
       that ran is a constant and fails; fewer than two variations that ran prove nothing
       (``inconclusive``).
    2. **Each parameter separately**. For a threshold on a 0..100 scale (``rsi_threshold``) whose
       answer flips between its extremes, the threshold is bisected until the answer flips within
       :data:`_BRACKET_WIDTH`: at that bracket the answer hangs on the thresholded quantity, so
       every argument that feeds it (the symbol, and the parameters named with the threshold's
       prefix, ``rsi_window``) must flip the answer at one end of the bracket when moved. One
       that never does is ignored or fixed inside, and the stage fails. Every other parameter
       needs two runs that differ in that parameter alone and give different answers, searched
       over the task's arguments, threshold extremes and other symbols; when none turns up it is
       reported ``inconclusive`` (a moving-average window may not change a crossing on this data).
    """

    def __init__(self, calls: _Calls, symbols: tuple[str, ...]) -> None:
        self.calls, self.symbols = calls, symbols
        self._rare: bool | None = None
        #: the first variation whose answer differs from the task's
        self._flip_args: JSONObject = dict(calls.task)

    def run(self) -> str:
        calls = self.calls
        task_answer = bool(calls.answer(calls.task))
        seen = {task_answer}
        ran: list[str] = []
        skipped = 0
        flipped: str | None = None
        for var in self._search_space()[:_MAX_BOOLEAN_RUNS]:
            other = calls.answer(var.args)
            if other is _SKIP:
                skipped += 1
                continue
            ran.append(var.description)
            seen.add(bool(other))
            if len(seen) == 2:
                flipped = f"{describe(other)} with {var.description}"
                self._flip_args = var.args
                break
        if flipped is None:
            if len(ran) < 2:
                return f"inconclusive: {len(ran)} variation(s) ran, {skipped} lacked data"
            raise VerificationFailed(
                f"{calls.entry} returns {describe(task_answer)} for the task and for every one of {len(ran)} "
                f"variation(s) ({', '.join(ran[:6])}{', ...' if len(ran) > 6 else ''}): a signal that never "
                "changes is a constant (hard-coded or ignoring its arguments)",
                check="metamorphic", variations=ran)
        settled: dict[str, str] = {}
        inconclusive: list[str] = []
        for name, value in calls.task.items():
            if name.endswith("threshold") and _oscillator_level(value):
                self._bracket(name, settled)
        for name in calls.task:
            if name in settled:
                continue
            found = self._flip(name)
            if found is None:
                inconclusive.append(name)
            else:
                settled[name] = found
        note = f"both answers occur: {describe(task_answer)} for the task, {flipped}"
        if settled:
            note += f"; each argument flips it: {'; '.join(settled.values())}"
        if inconclusive:
            note += f"; inconclusive for {', '.join(inconclusive)} (no variation tried flipped the answer)"
        return note

    # ------------------------------------------------------------------ search spaces
    def _thresholds(self) -> dict[str, list[Any]]:
        return {n: threshold_extremes(n, v) for n, v in self.calls.task.items() if threshold_extremes(n, v)}

    def _contexts(self) -> list[JSONObject]:
        """The task's arguments and each other symbol, each with its thresholds as given and at
        either extreme (one threshold at a time)."""
        task = self.calls.task
        symbols = [task, *(v.args for v in symbol_variations(task, self.symbols, limit=len(self.symbols)))]
        out: list[JSONObject] = []
        for ctx in symbols:
            out.append(ctx)
            for name, extremes in self._thresholds().items():
                out.extend({**ctx, name: e} for e in extremes)
        return out

    def _search_space(self) -> list[Variation]:
        """Variations for the both-answers search, the likeliest to flip first, none twice."""
        task = self.calls.task
        windows = [(n, alt) for n, v in task.items() if n not in ("symbol", "symbols")
                   and not n.endswith("threshold") for alt in wide_alternatives(n, v)]
        # every symbol with its thresholds as given and at either extreme; then, symbol by symbol,
        # each window moved with the thresholds at either extreme (one of them lets the other
        # conditions decide), or as given when there is no threshold
        contexts = self._contexts()
        per_symbol = 1 + 2 * len(self._thresholds())
        out = list(contexts)
        for i in range(0, len(contexts), per_symbol):
            settings = contexts[i + 1:i + per_symbol] or contexts[i:i + 1]
            out.extend({**ctx, n: alt} for n, alt in windows for ctx in settings)
        unique: list[Variation] = []
        keys = {_key(task)}
        for args in out:
            if _key(args) not in keys:
                keys.add(_key(args))
                unique.append(_variation_of(task, args))
        return unique

    # ------------------------------------------------------------------ per parameter
    def _differs(self, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool | None:
        """Whether two runs answer differently (None when either lacks data)."""
        x, y = self.calls.answer(a), self.calls.answer(b)
        if x is _SKIP or y is _SKIP:
            return None
        return bool(x) != bool(y)

    def _flip(self, name: str) -> str | None:
        """Two runs that differ in ``name`` alone and answer differently, or None."""
        calls = self.calls
        task = calls.task
        if name in ("symbol", "symbols"):
            moves = [(label, [v.args[name] for v in group]) for label, group in symbol_groups(task, self.symbols)]
            values = [value for _, group in moves for value in group]
        else:
            values = wide_alternatives(name, task[name]) if not name.endswith("threshold") \
                else threshold_extremes(name, task[name]) + alternatives(name, task[name])
        if not values:
            return "not varied"
        budget = _MAX_PARAMETER_RUNS
        for ctx in self._informative_contexts():
            if name in ctx and ctx[name] != task[name]:
                continue  # a context that already moves this very parameter
            for value in values:
                moved = {**ctx, name: value}
                if moved == ctx:
                    continue
                if not (calls.known(ctx) and calls.known(moved)):
                    if budget <= 0:
                        return None
                    budget -= 1
                if self._differs(ctx, moved):
                    return f"{name}: {calls.describe(ctx)} -> {calls.describe(moved)}"
        return None

    def _informative_contexts(self) -> list[JSONObject]:
        """:meth:`_contexts`, most informative first: those known to give the rarer answer, then
        other symbols with the same threshold settings, then the rest. In a signal made of
        several conditions (``a and b``) the rare answer is where every condition counts."""
        calls = self.calls
        contexts = self._contexts()
        thresholds = list(self._thresholds())

        def answer(ctx: JSONObject) -> bool | None:
            if not calls.known(ctx) or calls.answer(ctx) is _SKIP:
                return None
            return bool(calls.answer(ctx))

        if self._rare is None:  # settled once, from the runs of the both-answers search
            known = [a for a in map(answer, contexts) if a is not None]
            if not known:
                return contexts
            self._rare = known.count(True) <= known.count(False)
        rare = self._rare
        rare_settings = {tuple(c.get(n) for n in thresholds) for c in contexts if answer(c) is rare}

        def rank(ctx: JSONObject) -> int:
            got = answer(ctx)
            if got is rare:
                return 0
            if got is None:
                return 1 if tuple(ctx.get(n) for n in thresholds) in rare_settings else 2
            return 3

        return sorted(contexts, key=rank)

    def _bracket(self, threshold: str, settled: dict[str, str]) -> None:
        """Bisect ``threshold`` to a bracket where the answer flips, then check that each argument
        feeding the thresholded quantity moves the answer there (see the class docstring)."""
        calls = self.calls
        low, high = threshold_extremes(threshold, calls.task[threshold])
        ctx = self._flipping_context(threshold, low, high)
        if ctx is None:
            return
        bracket = self._bisect(threshold, ctx, low, high)
        if bracket is None:
            return
        lo, hi = bracket
        # the bracket's ends (an end never bisected is the extreme itself, already run)
        ends = [{**ctx, threshold: low if lo == float(low) else lo},
                {**ctx, threshold: high if hi == float(high) else hi}]
        settled[threshold] = f"{threshold}: the answer flips between {lo:g} and {hi:g} ({calls.describe(ctx)})"
        prefix = threshold[: -len("threshold")]
        feeding = [n for n in calls.task if n in ("symbol", "symbols")
                   or (prefix and n.startswith(prefix) and n != threshold)]
        for name in feeding:
            tried = self._moves_at(name, ctx, ends, settled)
            if name not in settled and len(tried) >= 2:
                raise VerificationFailed(
                    f"{calls.entry} flips its answer when {threshold} crosses {lo:g}..{hi:g} "
                    f"({calls.describe(ctx)}), yet gives the same answers there with "
                    f"{', '.join(tried[:6])}: the answer does not depend on its '{name}' argument "
                    "(ignored or fixed inside)", check="metamorphic", parameter=name, variations=tried)

    def _flipping_context(self, threshold: str, low: Any, high: Any) -> JSONObject | None:
        """A context in which the answer differs between the threshold's extremes; None when there is
        none (raises when the answer is the same at both extremes where it is True and where False)."""
        calls = self.calls
        # where the answer is True and where it is False (the both-answers search found one of
        # each), then the other contexts: a signal that honours its threshold flips between the
        # extremes in one of the first two ("a and rsi < t" where it is True, "a or rsi < t"
        # where it is False)
        candidates = list({_key(c): c for c in (self._flip_args, calls.task, *self._contexts())}.values())
        same: dict[bool, str] = {}
        for c in candidates[:_MAX_BRACKET_CONTEXTS]:
            at_low, at_high = calls.answer({**c, threshold: low}), calls.answer({**c, threshold: high})
            if at_low is _SKIP or at_high is _SKIP:
                continue
            if bool(at_low) != bool(at_high):
                return c
            same.setdefault(bool(at_low), calls.describe(c))
        if len(same) == 2:
            raise VerificationFailed(
                f"{calls.entry} gives the same answer with {threshold}={low!r} and {threshold}={high!r} "
                f"both where it answers True ({same[True]}) and where it answers False ({same[False]}): "
                f"the answer does not depend on its '{threshold}' argument (ignored or fixed inside)",
                check="metamorphic", parameter=threshold, variations=list(same.values()))
        return None

    def _bisect(self, threshold: str, ctx: JSONObject, low: Any, high: Any) -> tuple[float, float] | None:
        """The bracket ``(lo, hi)`` narrower than ``_BRACKET_WIDTH`` where the answer flips; None when a
        run in between proves nothing."""
        calls = self.calls
        lo, hi = float(low), float(high)
        answer_lo = bool(calls.answer({**ctx, threshold: low}))
        while hi - lo > _BRACKET_WIDTH:
            mid = (lo + hi) / 2
            answer = calls.answer({**ctx, threshold: mid})
            if answer is _SKIP:
                return None
            if bool(answer) == answer_lo:
                lo = mid
            else:
                hi = mid
        return lo, hi

    def _moves_at(self, name: str, ctx: JSONObject, ends: list[JSONObject],
                  settled: dict[str, str]) -> list[str]:
        """Try other values of ``name`` at the bracket's ends; record in ``settled`` the first that moves
        the answer. Returns the variations tried."""
        calls = self.calls
        if name in ("symbol", "symbols"):
            values = [v.args[name] for _, group in symbol_groups(ctx, self.symbols) for v in group]
        else:
            values = alternatives(name, ctx[name])
        tried: list[str] = []
        for value in values:
            for end in ends:
                moved = {**end, name: value}
                differs = self._differs(end, moved)
                if differs is None:
                    continue
                tried.append(calls.describe(moved))
                if differs:
                    settled[name] = f"{name}: {calls.describe(end)} -> {calls.describe(moved)}"
                    return tried
        return tried


_SKIP = object()


#: Arguments that say how much history to read rather than what to compute from it.
_SPAN_NAMES = ("days", "period", "years", "lookback", "sessions")


def _is_span(name: str) -> bool:
    return name in _SPAN_NAMES or name.endswith("_days")


def _ignored(entry: str, name: str, compared: list[str]) -> VerificationFailed:
    shown = ", ".join(compared[:6]) + (", ..." if len(compared) > 6 else "")
    return VerificationFailed(
        f"{entry} gives the same answer with {shown} as with the task's own arguments: the answer does "
        f"not depend on its '{name}' argument (ignored or hard-coded inside)",
        check="metamorphic", parameter=name, variations=compared)


def _describe_change(base: Mapping[str, Any], args: Mapping[str, Any]) -> str:
    """``a=1, b=2``: the arguments of ``args`` that differ from ``base``."""
    return ", ".join(f"{k}={v!r}" for k, v in args.items() if k not in base or base[k] != v)


def _variation_of(base: Mapping[str, Any], args: JSONObject) -> Variation:
    changed = [k for k, v in args.items() if k not in base or base[k] != v]
    kind = "symbol" if set(changed) <= {"symbol", "symbols"} else "param"
    return Variation(kind, ",".join(changed), _describe_change(base, args), args)


def _call_args(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in args.items())


def _with_prefix(error: AgentFailure, prefix: str) -> AgentFailure:
    error.message = prefix + error.message
    error.args = (error.message,)
    return error


def result_error(result: ExecutionResult, what: str) -> AgentFailure:
    """The typed failure for a sandbox run that did not return normally."""
    details: JSONObject = {"status": result.status, "layer": result.layer}
    if result.status == "blocked":
        rule = result.rule or result.layer or "unknown"
        if result.line is not None:
            details.update(line=result.line, col=result.col)
        return PolicyViolation(f"{what} was blocked by the {result.layer or 'sandbox'} layer ({rule})"
                               + (f": {result.error_message}" if result.error_message else ""),
                               rule=rule, **details)
    if result.status == "exception":
        tail = sanitise_error((result.traceback or "")[-_TRACEBACK_TAIL:])
        return ToolCrashed(f"{what} raised {result.error_type}: {sanitise_error(result.error_message or '')}",
                           error_type=result.error_type, traceback=tail, **details)
    if result.status == "timeout":
        return ToolCrashed(f"{what} timed out (wall-clock limit)", **details)
    if result.status == "killed":
        return ToolCrashed(f"{what} was killed by a resource limit ({result.layer or 'unknown'})", **details)
    return ToolCrashed(f"{what} died without a result"
                       + (f": {result.error_message}" if result.error_message else ""), **details)
