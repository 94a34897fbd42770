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
from finevo.contract import check_shape, describe, normalise
from finevo.errors import (
    AgentFailure,
    ContractViolation,
    DeadlineExceeded,
    FinevoError,
    PolicyViolation,
    ToolCrashed,
    VerificationFailed,
)
from finevo.policy import check
from finevo.registry.signature import function_signature, signature_problem
from finevo.sandbox.api import ExecutionResult, Limits, Sandbox
from finevo.tasks import OutputSpec

#: Symbols of the bundled snapshot, in the order variations pick them (stocks before indices:
#: indices have no financial statements or dividends).
DEFAULT_SYMBOLS: tuple[str, ...] = ("MSFT", "AAPL", "GOOGL", "AMZN", "TSLA", "SPY", "^GSPC")
#: Sandbox runs a boolean tool gets to show both answers (a constant one uses them all; an honest
#: one usually needs one to three).
_MAX_BOOLEAN_RUNS = 24
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

    def to_dict(self) -> dict[str, Any]:
        """The record kept with an attempt: no duration (the outcome's timings hold those), so a
        replayed run's attempts are the recorded run's, byte for byte."""
        return {"name": self.name, "ok": self.ok, "note": self.note}


@dataclass
class SandboxRun:
    """One sandbox run made while verifying: which stage, with which arguments (None for the
    self-test), and what came back."""

    stage: str
    args: dict[str, Any] | None
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
        tree = ast.parse(code)
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
    args: dict[str, Any]


def symbol_variations(args: Mapping[str, Any], symbols: tuple[str, ...] = DEFAULT_SYMBOLS,
                      limit: int = 2) -> list[Variation]:
    """Up to ``limit`` other symbols (for a ``symbols`` list: its last one replaced, never a mere
    reordering, since e.g. a correlation is symmetric)."""
    base = dict(args)
    out: list[Variation] = []
    if isinstance(base.get("symbol"), str):
        for alt in [s for s in symbols if s != base["symbol"]][:limit]:
            out.append(Variation("symbol", "symbol", f"symbol={alt!r}", {**base, "symbol": alt}))
    if isinstance(base.get("symbols"), list) and base["symbols"]:
        current = list(base["symbols"])
        for alt in [s for s in symbols if s not in current][:limit]:
            changed = [*current[:-1], alt]
            out.append(Variation("symbol", "symbols", f"symbols={changed!r}", {**base, "symbols": changed}))
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


def threshold_extremes(name: str, value: Any) -> list[Any]:
    """Values of a ``*threshold`` argument that no indicator crosses (for a 0-100 oscillator such
    as RSI: 0 and 100; otherwise far below and far above), so a signal built on it must come out
    False at one end; empty for any other argument."""
    if not name.endswith("threshold") or isinstance(value, bool) or not isinstance(value, (int, float)):
        return []
    if 0 <= value <= 100:
        low, high = 0.0, 100.0
    else:
        low, high = value - 1e6, value + 1e6
    return [type(value)(low), type(value)(high)]


def _same(a: Any, b: Any) -> bool:
    """Exact sameness of two normalised values (NaN equals NaN; 1 equals 1.0)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=False))
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
        value = normalise(result.value)
        problems = check_shape(value, contract.output) or range_problems(contract.entry, value)
        if problems:
            raise ContractViolation(f"{contract.entry}({_call_args(contract.args)}) returned {describe(value)}: "
                                    + "; ".join(problems[:5]), check="contract", problems=problems[:20])
        ver.value = value
        return "value fits the output contract"

    def _metamorphic(self, code: str, contract: ToolContract, deadline: float | None, ver: Verification) -> str:
        if contract.output.type == "boolean":
            return self._metamorphic_boolean(code, contract, deadline, ver)
        return self._metamorphic_values(code, contract, deadline, ver)

    def _metamorphic_values(self, code: str, contract: ToolContract, deadline: float | None,
                            ver: Verification) -> str:
        """The answer must move with the symbol, and with every parameter that can be checked.

        Symbols: the first other symbol whose answer differs settles it; when every other symbol
        that ran gave the task's answer, the tool is hard-coded. Parameters, one at a time: a
        smaller and a larger value with the task's symbol; only when neither moved the answer are
        the same values tried with the other symbols that ran (a highest close over 15, 30 and 60
        days may well be one and the same close for one symbol, hardly for every symbol). A
        parameter fails when at least two of its variations ran and all of them gave their
        symbol's own answer; with fewer it proves nothing either way (``inconclusive``).

        One exception: a lookback span (``days``, ``period``, ``years``: how much history to read)
        may leave the answer alone when another parameter of the indicator moves it. Cutler's RSI
        reads only its last ``window`` changes and Wilder's RSI "over the full history" (both
        accepted readings of an RSI task) ignores ``days`` by design. When no other parameter
        moved the answer, a span that does not move it fails like any other parameter.
        """
        value = ver.value
        moved: list[str] = []
        moved_params: list[str] = []
        inconclusive: list[str] = []
        still: dict[str, list[str]] = {}  # lookback spans that did not move the answer
        # (arguments, answer) pairs a parameter variation is compared against, the task's first
        bases: list[tuple[dict[str, Any], Any]] = [(dict(contract.args), value)]
        same: list[str] = []
        symbol_vars = symbol_variations(contract.args, self.symbols)
        for var in symbol_vars:
            other = self._variation(code, contract, var, deadline, ver)
            if other is _SKIP:
                continue
            bases.append((var.args, other))
            if not _same(other, value):
                moved.append(var.description)
                break
            same.append(var.description)
        if same and not moved:
            raise VerificationFailed(
                f"{contract.entry} returns the same value {describe(value)} for {', '.join(same)}: the answer "
                "does not depend on its symbol (hard-coded or constant output)",
                check="metamorphic", variations=same)
        if symbol_vars and not moved:
            inconclusive.append(symbol_vars[0].param)
        by_param: dict[str, list[Variation]] = {}
        for var in parameter_variations(contract.args):
            by_param.setdefault(var.param, []).append(var)
        for name, param_vars in by_param.items():
            compared: list[str] = []
            change: str | None = None
            for base_args, base_value in bases:
                for var in param_vars:
                    args = {**base_args, name: var.args[name]}
                    described = var.description if base_args is bases[0][0] else _describe_change(
                        contract.args, args)
                    other = self._variation(code, contract, Variation("param", name, described, args),
                                            deadline, ver)
                    if other is _SKIP:
                        continue
                    compared.append(described)
                    if not _same(other, base_value):
                        change = described
                        break
                if change is not None:
                    break
            if change is not None:
                moved.append(change)
                moved_params.append(name)
            elif len(compared) < 2:
                inconclusive.append(name)
            elif _is_span(name):
                still[name] = compared  # judged below, once every parameter has been tried
            else:
                raise _ignored(contract.entry, name, compared)
        spans_ok = [n for n in still if any(not _is_span(m) for m in moved_params)]
        for name, compared in still.items():
            if name not in spans_ok:
                raise _ignored(contract.entry, name, compared)
        if not moved:
            return "inconclusive: every variation lacked data" if inconclusive else "no variation applies"
        note = f"answer changes with {'; '.join(moved)}"
        if spans_ok:
            note += f"; the same with other {', '.join(spans_ok)} (a lookback its other parameters settle)"
        if inconclusive:
            note += f"; inconclusive for {', '.join(inconclusive)} (too little data to compare)"
        return note

    def _metamorphic_boolean(self, code: str, contract: ToolContract, deadline: float | None,
                             ver: Verification) -> str:
        """A yes/no answer must come out both ways somewhere: a threshold pushed to either end of
        its scale (an RSI below 0 never happens, below 100 nearly always), other symbols, other
        windows, and those together, until both True and False have been seen.

        A tool that gives one answer on every variation that ran is a constant and fails. The
        only way out is when fewer than two variations ran at all (every one lacked data): then
        there is nothing to compare, and calling that a constant would fail an honest tool for
        the snapshot's sake, so the stage says ``inconclusive``.
        """
        seen = {bool(ver.value)}
        ran: list[str] = []
        skipped = 0
        for var in self._boolean_variations(contract.args)[:_MAX_BOOLEAN_RUNS]:
            other = self._variation(code, contract, var, deadline, ver)
            if other is _SKIP:
                skipped += 1
                continue
            ran.append(var.description)
            seen.add(bool(other))
            if len(seen) == 2:
                return (f"both answers occur: {describe(ver.value)} for the task, "
                        f"{describe(other)} with {var.description}")
        if len(ran) < 2:
            return f"inconclusive: {len(ran)} variation(s) ran, {skipped} lacked data"
        raise VerificationFailed(
            f"{contract.entry} returns {describe(ver.value)} for the task and for every one of {len(ran)} "
            f"variation(s) ({', '.join(ran[:6])}{', ...' if len(ran) > 6 else ''}): a signal that never "
            "changes is a constant (hard-coded or ignoring its arguments)",
            check="metamorphic", variations=ran)

    def _boolean_variations(self, args: Mapping[str, Any]) -> list[Variation]:
        """Boolean variations, the likeliest to flip the answer first, no arguments twice."""
        base = dict(args)
        others = [v.args for v in symbol_variations(base, self.symbols, limit=len(self.symbols))]
        contexts = [base, *others]
        out: list[Variation] = []
        # thresholds at both ends, with the task's symbol, then the others
        for ctx in contexts:
            for name, value in base.items():
                for extreme in threshold_extremes(name, value):
                    out.append(_variation_of(base, {**ctx, name: extreme}))
        out.extend(_variation_of(base, ctx) for ctx in others)
        # windows and periods moved both ways, with each symbol
        for ctx in contexts:
            for var in parameter_variations(base):
                out.append(_variation_of(base, {**ctx, var.param: var.args[var.param]}))
        unique: list[Variation] = []
        keys: set[str] = set()
        for var in out:
            key = repr(sorted(var.args.items()))
            if key not in keys and var.args != base:
                keys.add(key)
                unique.append(var)
        return unique

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
        other = normalise(result.value)
        # a list's length follows the arguments (fewer days, fewer items): only the task's own call
        # is held to the task's minimum
        problems = check_shape(other, contract.output.model_copy(update={"min_items": 0}))
        if problems:
            raise ContractViolation(f"with {description} instead, {contract.entry} returned {describe(other)}: "
                                    + "; ".join(problems[:5]), check="metamorphic", variation=description)
        if other == [] or other == {}:
            return _SKIP  # e.g. no dividends for that symbol: nothing to compare
        return other


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


def _variation_of(base: Mapping[str, Any], args: dict[str, Any]) -> Variation:
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
    details: dict[str, Any] = {"status": result.status, "layer": result.layer}
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
