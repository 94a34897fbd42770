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
    The same function called with other arguments (another symbol, another window or period)
    must give a different answer: a tool that returns a constant or a hard-coded value is caught
    here. Variations that raise ``ValueError`` (too little data for that variation) prove nothing
    either way and are skipped; a crash or a badly shaped answer on a variation fails the stage.
    Boolean answers may legitimately coincide, so for them the variations only have to run and
    return real booleans.

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
from finevo.sandbox.api import ExecutionResult, Limits, Sandbox
from finevo.tasks import OutputSpec

#: Symbols of the bundled snapshot, in the order variations pick them (stocks before indices:
#: indices have no financial statements or dividends).
DEFAULT_SYMBOLS: tuple[str, ...] = ("MSFT", "AAPL", "GOOGL", "AMZN", "TSLA", "SPY", "^GSPC")
_MAX_VARIATIONS = 2
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


@dataclass
class Verification:
    """The result of :meth:`Verifier.verify`; ``stage`` is the last stage reached."""

    ok: bool
    stage: str
    error: FinevoError | None = None
    value: Any = None
    result: ExecutionResult | None = None
    stages: list[StageRecord] = field(default_factory=list)

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


def function_signature(code: str, entry: str) -> list[dict[str, Any]] | None:
    """The parameters of the top-level function ``entry`` (None when there is no such function).

    Each item: ``{"name", "annotation", "required", "kind"}``; ``kind`` is ``"var_keyword"`` for
    ``**kwargs``.
    """
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == entry:
            a = node.args
            positional = [*a.posonlyargs, *a.args]
            n_required = len(positional) - len(a.defaults)
            params: list[dict[str, Any]] = []
            for i, arg in enumerate(positional):
                params.append({"name": arg.arg, "annotation": _annotation(arg), "required": i < n_required,
                               "kind": "positional_only" if arg in a.posonlyargs else "positional"})
            for arg, default in zip(a.kwonlyargs, a.kw_defaults):
                params.append({"name": arg.arg, "annotation": _annotation(arg), "required": default is None,
                               "kind": "keyword_only"})
            if a.vararg is not None:
                params.append({"name": a.vararg.arg, "annotation": _annotation(a.vararg), "required": False,
                               "kind": "var_positional"})
            if a.kwarg is not None:
                params.append({"name": a.kwarg.arg, "annotation": _annotation(a.kwarg), "required": False,
                               "kind": "var_keyword"})
            return params
    return None


def _annotation(arg: ast.arg) -> str | None:
    return ast.unparse(arg.annotation) if arg.annotation is not None else None


def signature_problem(params: list[dict[str, Any]] | None, entry: str, arg_names: list[str]) -> str | None:
    """Why a function with ``params`` cannot be called as ``entry(**args)`` (None when it can)."""
    if params is None:
        return f"the module defines no top-level function named '{entry}'"
    names = {p["name"] for p in params if p["kind"] in ("positional", "keyword_only")}
    takes_kwargs = any(p["kind"] == "var_keyword" for p in params)
    unknown = [n for n in arg_names if n not in names]
    if unknown and not takes_kwargs:
        return (f"function '{entry}' has no parameter(s) {', '.join(unknown)}; "
                f"it takes ({', '.join(p['name'] for p in params)})")
    missing = [p["name"] for p in params if p["required"] and p["kind"] != "positional_only"
               and p["name"] not in arg_names]
    posonly = [p["name"] for p in params if p["kind"] == "positional_only" and p["required"]]
    if posonly:
        return f"function '{entry}' has positional-only parameter(s) {', '.join(posonly)}"
    if missing:
        return (f"function '{entry}' requires parameter(s) {', '.join(missing)} that the task does not give "
                f"(the task gives {', '.join(arg_names) or 'nothing'})")
    return None


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


def variations(args: Mapping[str, Any],
               symbols: tuple[str, ...] = DEFAULT_SYMBOLS) -> list[tuple[str, str, dict[str, Any]]]:
    """Other arguments to call a tool with, one change at a time, most telling first.

    Each item is ``(kind, description, args)`` with ``kind`` ``"symbol"`` or ``"param"``: another
    symbol (two of them), then each numeric
    parameter moved to a different sensible value (a window halved, a year one back, another
    quarter). Booleans and strings other than symbols are left alone.
    """
    out: list[tuple[str, str, dict[str, Any]]] = []
    base = dict(args)
    if isinstance(base.get("symbol"), str):
        for alt in [s for s in symbols if s != base["symbol"]][:2]:
            out.append(("symbol", f"symbol={alt!r}", {**base, "symbol": alt}))
    if isinstance(base.get("symbols"), list) and base["symbols"]:
        current = list(base["symbols"])
        spare = [s for s in symbols if s not in current]
        if spare:
            changed = current[:-1] + [spare[0]]
            out.append(("symbol", f"symbols={changed!r}", {**base, "symbols": changed}))
    for name, value in base.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        alt = _vary_number(name, value)
        if alt is not None and alt != value:
            out.append(("param", f"{name}={alt!r}", {**base, name: alt}))
    return out


def _vary_number(name: str, value: int | float) -> int | float | None:
    if name in _YEAR_NAMES:
        return int(value) - 1
    if name in _QUARTER_NAMES:
        return int(value) % 4 + 1
    if isinstance(value, float) and not value.is_integer():
        return round(value / 2, 6) if value > 0 else None
    n = int(value)
    if name.endswith("threshold"):
        return n - 20 if n > 50 else n + 20
    if n >= 4:
        return n // 2
    if n >= 1:
        return n + 1
    return None


def _same(a: Any, b: Any) -> bool:
    """Exact sameness of two normalised values (NaN equals NaN; 1 equals 1.0)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
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
            ("selftest", lambda: self._selftest(code, deadline)),
            ("contract", lambda: self._contract(code, contract, deadline, ver)),
            ("metamorphic", lambda: self._metamorphic(code, contract, deadline, ver.value)),
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

    def _selftest(self, code: str, deadline: float | None) -> str:
        if not has_selftest(code):
            raise VerificationFailed('the module has no `if __name__ == "__main__":` self-test block',
                                     check="selftest")
        result = self.run(code, None, None, stage="selftest", deadline=deadline)
        if not result.ok:
            raise result_error(result, "self-test")
        return f"ran in {result.duration_s:.3f}s"

    def _contract(self, code: str, contract: ToolContract, deadline: float | None, ver: Verification) -> str:
        result = self.run(code, contract.entry, contract.args, stage="contract", deadline=deadline)
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

    def _metamorphic(self, code: str, contract: ToolContract, deadline: float | None, value: Any) -> str:
        """Symbols first: a tool whose answer is the same for another symbol is hard-coded. Only
        when no symbol variation could be compared do the other parameters have to move it."""
        boolean = contract.output.type == "boolean"
        groups: dict[str, list[tuple[str, dict[str, Any]]]] = {"symbol": [], "param": []}
        for kind, description, args in variations(contract.args, self.symbols):
            groups[kind].append((description, args))
        skipped: list[str] = []
        checked = 0
        for kind in ("symbol", "param"):
            same: list[str] = []
            for description, args in groups[kind][:_MAX_VARIATIONS]:
                other = self._variation(code, contract, description, args, deadline)
                if other is _SKIP:
                    skipped.append(description)
                    continue
                checked += 1
                if boolean:
                    continue
                if not _same(other, value):
                    return f"answer changes with {description}"
                same.append(description)
            if same and not boolean:
                what = "symbol" if kind == "symbol" else "arguments"
                raise VerificationFailed(
                    f"{contract.entry} returns the same value {describe(value)} for {', '.join(same)}: the answer "
                    f"does not depend on its {what} (hard-coded or constant output)",
                    check="metamorphic", variations=same)
        if boolean:
            return f"real booleans on {checked} variation(s)" + (f", {len(skipped)} skipped" if skipped else "")
        return "inconclusive: every variation lacked data" if skipped else "no variation applies"

    def _variation(self, code: str, contract: ToolContract, description: str, args: dict[str, Any],
                   deadline: float | None) -> Any:
        """The normalised answer for one variation, or ``_SKIP`` when it proves nothing."""
        result = self.run(code, contract.entry, args, stage="metamorphic", deadline=deadline)
        if result.status == "exception" and result.error_type == "ValueError":
            return _SKIP  # too little data for this variation: allowed, and proves nothing
        if not result.ok:
            raise _with_prefix(result_error(result, f"{contract.entry}({_call_args(args)})"),
                               f"with {description} instead: ")
        other = normalise(result.value)
        problems = check_shape(other, contract.output)
        if problems:
            raise ContractViolation(f"with {description} instead, {contract.entry} returned {describe(other)}: "
                                    + "; ".join(problems[:5]), check="metamorphic", variation=description)
        if other == [] or other == {}:
            return _SKIP  # e.g. no dividends for that symbol: nothing to compare
        return other


_SKIP = object()


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
