"""The judge: a tool's structured return value against the oracle's expected values.

Strict by construction; each rule closes a false pass of the system this project re-implements:

* Only the structured return value is judged, never stdout: text that contains a number is not
  a number.
* Numbers must be finite ``int``/``float`` (never ``bool``) within ``abs + rel * |expected|`` of
  an accepted convention's value.
* Booleans must be real ``bool`` equal to the expected one (``1.0`` is not ``True``).
* Dicts need every required key with a right value (``None`` is never right).
* Lists are compared element-wise and must have the expected length; record fields that hold
  dates are compared as dates, numbers within tolerance, anything else exactly.
* A value passes when it matches *one* accepted convention entirely (no mixing conventions
  across keys or items).

``judge_outcome`` adds the error rule: an :class:`~finevo.errors.ExternalError` is judged
``error`` (it says nothing about the agent); any other error or missing value is ``fail``.

``judge_probes`` closes the constant-answer hole: after the main value passes, the final tool is
re-run with each of the task's probes (changed arguments) and every probe value is judged like
the main one -- against the convention(s) the main value matched, so a tool cannot read the task
one way for the main arguments and another way for a probe. The task passes only when the main
value and every probe pass; a probe whose run fails (exception, timeout, blocked) fails the task,
an external error is ``error``. A probe asked at a scale the run's own data are too short for
(its ``min_sessions``) is recorded ``skipped`` there and judged in the hidden world that holds it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypedDict

import pandas as pd

from finevo.contract import check_shape, describe, is_number
from finevo.errors import AgentFailure, ExternalError
from finevo.jsontypes import JSONObject
from finevo.normalize import ANSWER, REFUSALS, normalize
from finevo.outcome import Outcome
from finevo.registry.signature import function_signature, tool_signature
from finevo.sandbox.api import ExecutionResult
from finevo.vocabulary import ToolSource
from runner.inputs.tasks import Probe, Task, Tolerance
from runner.judging.oracle import NOT_HELD, OR_RAISES, RAISES, OneOf
from runner.records import ProbeResult, TaskState

__all__ = ["JUDGE_VERSION", "Judgement", "ToolRun", "compare", "judge_outcome", "judge_probes", "judge_value",
           "mismatch_words", "probe_entry", "raised_by_tool", "readings", "refused_value"]

#: Recorded in every report; bump it whenever a rule changes what passes.
#: 3.23: the MACD task is judged in a pinned ``listing`` world too (its stock listed months ago, its first
#: sessions at one price: :meth:`runner.judging.worlds.Worlds._pinned_world`), where an EMA seeded at zero
#: fails; pandas' weighted EMA (``adjust=True``) is an accepted reading of it; the threshold probes sit
#: 0.002 % from the level (an indicator rounded to two decimals before the comparison fails); every other
#: stock's gap session is a single print; the seed world lists AAPL as a penny stock;
#: 3.22: a lookback one below the floor another count of the task sets (RSI-14 from the last 14 closes:
#: :func:`runner.judging.probes._floor`); Apple's fiscal year ends in March in every seed world; every run
#: starts at its snapshot's moment;
#: 3.21: the latest quote's task is judged in a ``midsession`` world too
#: (:meth:`runner.judging.worlds.Worlds._midsession_world`): recorded while the last session was open, the
#: clock at a minute of it, each bar of that day the session so far; the book's midpoint is not the quote there;
#: every latest-price task in a ``gap`` world (:meth:`runner.judging.worlds.Worlds._gap_world`), each stock's
#: last session 18-30 % from the close before; the as_of world's extra dividend is a special one, 4-12 times
#: the payer's latest; the seed world's newest reported quarter leaves most of its cells empty;
#: 3.20: an argument with at most four declared values (a quarter) is probed at every one of them
#: (:func:`runner.judging.probes._small_domain`); KDJ's range is also asked where it leaves the data a dozen
#: sessions, where K and D's seed of 50 still shows (:func:`runner.judging.probes._short_run`: the value, or
#: a clear error);
#: 3.19: a threshold above 1 is also probed at a level of 1 or less (:func:`runner.judging.probes._fraction_level`:
#: a level of its own, not a percentage written as a fraction); comp_004's rally world turns 60 sessions
#: before its as-of day (the RSI of every session is read there: a rally's RSI is 100, not NaN); a yes/no
#: task gets a world per window whose answer turns at that window's edge
#: (:func:`runner.judging.world_shapes.edge_flip_markets`); the preopen world of an extreme over a window puts a
#: peak on the oldest session of a window that reads the stock whose dividend is pending;
#: 3.18: every task reading price levels over a window (a highest close, a moving average, a drawdown, a
#: portfolio return) is judged in a ``halted`` world too (:func:`runner.judging.world_shapes.halted_window_market`):
#: its symbols halted over its longest window after a fall, where a tool dropping repeated bars reads the fall;
#: a yes/no task on a payer in a ``dividend`` world (a special ex-dividend inside its longest window decides
#: the answer read from quoted closes); the zigzag world's tie compounds above 1 in floating point; the rally
#: world's stock has traded 400 sessions, and a clear error is no answer for the task's own arguments there;
#: 3.17: every task on a dividend payer whose oracle does not read the dividends is judged in a ``preopen``
#: world too (:meth:`runner.judging.worlds.Worlds._preopen_world`): as recorded at 08:00 on an ex-date,
#: the day's bar not made yet and its dividend a pending event row, which the shim ends ``history()``
#: with as yfinance does (prices NaN): a "latest close" from the last row answers NaN there;
#: 3.16: the ``as_of`` world's reporting lag is drawn from two to three weeks (it was three to six), so
#: its newest quarter is under four weeks old: a tool that takes "the latest quarter" as the newest one
#: ended a month before the last session reads the quarter before in every run (it passed a third);
#: a task on one symbol is asked about the index and the ETF each, where one of them was drawn: a
#: tool that drops the index's bars of Volume 0 passed the runs that drew the ETF;
#: 3.15: every plain count of an oracle (a moving average's short or long window, KDJ's range, a horizon:
#: :data:`~runner.inputs.oracle_params.Count`, not a :data:`~runner.inputs.oracle_params.Seeded` one) is
#: drawn far and asked at the data's limit and just past it, as a ``window`` was: a yes/no signal that
#: averages the closes there are, or reads a fixed period, for a long window fails;
#: 3.14: every task that reads an RSI is judged in a rally listing world too, its own stocks listed
#: weeks ago and never closing lower (:meth:`runner.judging.worlds.Worlds._rally_world`): an RSI of all the
#: history is 100 there, so a tool that takes no loss for ``rs = 0`` fails (a clear error is as right);
#: 3.13: the seed world ends the highest close's and the max drawdown's subjects on a record close (a year's
#: high, a year's low: :func:`runner.judging.world_market.record_tails`), so a tool that drops the as-of
#: session passes no more; every world's levels are its own (:func:`runner.judging.world_market.relevel`)
#: and its quotes shaped as recorded (:func:`runner.judging.world_market.recorded_quotes`), so a tool that
#: recognises the benchmark's bars or the generator's quote formulas finds them in no world;
#: 3.12: an RSI over a window with no change (0/0) accepts the answer of each common treatment (100, 50,
#: 0, none: :class:`~runner.judging.oracle.OneOf`), not 100 alone; a volatility and a drawdown are asked over
#: a halt (0 there), a numeric task's threshold past which nothing is selected must raise, and a quiet world
#: (:func:`runner.judging.world_shapes.quiet_market`) asks a volatility and a correlation of small dispersions;
#: 3.11: a flat world for a measure of the spread of price levels (Bollinger): its symbols halted at a
#: quoted cent price where a one-pass variance's rounding shows (:func:`runner.judging.world_shapes.flat_market`);
#: 3.10: a tool that declares a parameter with a default (other than the task's own arguments) and never
#: reads it fails (:mod:`runner.judging.unread_params`), and so does one that keeps market data from one
#: call to the next (:mod:`runner.judging.carried_state`); a dividend window opening before the data may
#: be refused (:func:`runner.judging.oracle.before_the_data`); a pair of windows is probed the
#: other way round (computed as asked, or refused); every world's dividends are off the cent grid; the
#: halt world's probe symbols resume trading, two averages apart by less than half a cent;
#: 3.9: a listing world for every task over a list of symbols (one stock listed weeks ago: the task's own
#: arguments must raise); the long world reaches back to 1980 (all the history is not "since 2000"); the
#: round-trip world's rise is under half a cent (rounded to cents, no rise);
#: 3.8: a bounded argument (a quarter) is probed at its last value first (Q4: month arithmetic rolls
#: over); a lookback is probed at the data's limit (it must answer) and one past it (it must raise),
#: in place of one far beyond the data; the zigzag world's last close ties the window's first exactly
#: (a tie is not a rise);
#: 3.7: a quarter is filed when its Net Income is reported (the seed world's unfiled quarter shows its
#: revenue, no Net Income); a tool that died without a result is a crash, never a refused value; the
#: seed world ends the RSI subject on a run of gains (RSI 100) and halts the KDJ and Bollinger
#: subjects up to its as-of day (RSV 50 over a zero range; a bar of Volume 0 is a session); the
#: round-trip world's payer goes ex-dividend for more than the window's net move (raw and adjusted
#: "price up" part);
#: 3.6: a value the sandbox refuses (NaN placeholders) is not the clear error an argument set the
#: data cannot answer asks for -- only an exception the tool raised is; every world's statements give
#: the rows the generator copies (Operating Revenue, Net Income Common Stockholders...) figures of
#: their own; the seed world holds a company whose fiscal year ends in January (fiscal N: the year
#: ending in calendar N); a closure world (as of 2012-10-30, four calendar days after the last
#: session) for every task the oracle answers there;
#: 3.5: probes of the measure's optional parameters a tool declares, a zigzag world (summed returns
#: positive, the close lower) for yes/no tasks, the first edge world after a holiday cluster, a long
#: world of twenty years (calendar from 2005), also for a measure of all the history; an argument set
#: some accepted readings answer and others refuse is judged (it was left out): a tool passes there by
#: matching an answering reading -- the one its other values match -- or by raising a clear error, and
#: any other value fails; probes ask a lookback where the readings part so (a window longer than the
#: literal reading's lookback), and the seed world holds a company whose fiscal quarters end in
#: January, April, July and October (the calendar reading has no answer there);
#: 3.4: statements shaped as recorded in the seed world (a loss with a missing line item, a skipped
#: quarter), a company that stopped paying dividends and a Feb 29 as-of in the leap world, probes that
#: must raise for a period not reported yet, an argument left out and a symbol with nothing to read;
#: a long world (the snapshot lengthened back ten years) and a probe asking every count of the task at
#: a scale only it holds (judged only where the data hold its warm-up); the oracle refuses a
#: correlation of fewer than two common returns or of a constant series, and a volume trend of one
#: session, rather than computing through numpy's warnings;
#: 3.3: a leap world (five years over two Feb 29ths) and a 5-year probe for a lookback in years, the
#: as-of world on a day that tells a window anchored at the last bar, the edge world on an exchange
#: holiday, 52/53-week fiscal dates in the seed world; 3.2: one sandbox run per judged call in a
#: secret order, the main call re-run, probes across the argument space and where the data cannot
#: support them (must raise), the dividend window's edge and Wilder's SMA seed as readings,
#: closed-day as-of worlds; 3.1: flip worlds, threshold boundary probes, RSI warm-up reading;
#: 3.0: hidden worlds.
JUDGE_VERSION = "3.23"

#: Runs tool code in the sandbox: ``(code, entry, args) -> ExecutionResult``; may raise a
#: :class:`~finevo.errors.FinevoError` (an external one when the sandbox itself is unavailable).
ToolRun = Callable[[str, str, JSONObject], ExecutionResult]

class JudgementDict(TypedDict):
    """A :class:`Judgement` as written out (``finevo-verify oracle --json``)."""

    state: TaskState
    reason: str
    convention: str | None


@dataclass(frozen=True)
class Judgement:
    #: Never ``skipped``: a judgement is made on something that ran.
    state: TaskState
    reason: str
    #: The accepted convention the value matched (pass only).
    convention: str | None = None

    @property
    def passed(self) -> bool:
        return self.state is TaskState.PASS

    def to_dict(self) -> JudgementDict:
        return JudgementDict(state=self.state, reason=self.reason, convention=self.convention)


def _close(actual: float, expected: float, tol: Tolerance) -> bool:
    return abs(actual - expected) <= tol.abs + tol.rel * abs(expected)


def _as_date(value: Any) -> str | None:
    """``YYYY-MM-DD`` of an ISO date/datetime string, else None."""
    if not isinstance(value, str) or len(value) < 10:
        return None
    try:
        stamp = pd.Timestamp(value)
    except (ValueError, TypeError):
        return None
    if stamp is pd.NaT:
        return None
    # The calendar date as written (a tz-aware ex-date stays on its own day).
    return str(stamp.strftime("%Y-%m-%d"))


def _compare_number(actual: Any, expected: float, tol: Tolerance, where: str) -> str | None:
    if not is_number(actual):
        return f"{where}: expected a finite number near {expected:.10g}, got {describe(actual)}"
    if _close(float(actual), float(expected), tol):
        return None
    return f"{where}: {float(actual):.10g} differs from expected {float(expected):.10g} beyond tolerance"


def _compare_dict(actual: Any, expected: Mapping[str, Any], tol: Tolerance, where: str) -> str | None:
    if not isinstance(actual, Mapping):
        return f"{where}: expected a dict, got {describe(actual)}"
    for key, exp in expected.items():
        if key not in actual:
            return f"{where}: missing key {key!r}"
        problem = compare(actual[key], exp, tol, f"{where}[{key!r}]")
        if problem:
            return problem
    return None


def _compare_list(actual: Any, expected: list[Any], tol: Tolerance, where: str) -> str | None:
    if not isinstance(actual, list):
        return f"{where}: expected a list of {len(expected)} items, got {describe(actual)}"
    if len(actual) != len(expected):
        return f"{where}: expected {len(expected)} items, got {len(actual)}"
    for index, (act, exp) in enumerate(zip(actual, expected, strict=False)):
        problem = compare(act, exp, tol, f"{where}[{index}]")
        if problem:
            return problem
    return None


def _compare_text(actual: Any, expected: str, where: str) -> str | None:
    expected_date = _as_date(expected)
    if expected_date is not None:
        if _as_date(actual) == expected_date:
            return None
        return f"{where}: expected date {expected_date}, got {describe(actual)}"
    return None if actual == expected else f"{where}: expected {expected!r}, got {describe(actual)}"


def compare(actual: Any, expected: Any, tol: Tolerance, where: str = "value") -> str | None:
    """None when ``actual`` equals ``expected`` under the judge's rules, else the first mismatch.
    A reading unsettled on these data (:class:`~runner.judging.oracle.OneOf`) is matched by a value
    that matches one of its values."""
    if isinstance(expected, OneOf):
        misses = [compare(actual, one, tol, where) for one in expected]
        if None in misses:
            return None
        shown = " / ".join(f"{one:.10g}" if is_number(one) else describe(one) for one in expected)
        return f"{where}: expected one of {shown} (a choice no accepted reading settles), got {describe(actual)}"
    if isinstance(expected, bool):
        if not isinstance(actual, bool):
            return f"{where}: expected bool {expected}, got {describe(actual)}"
        return None if actual is expected else f"{where}: expected {expected}, got {actual}"
    if isinstance(expected, (int, float)):
        return _compare_number(actual, expected, tol, where)
    if isinstance(expected, Mapping):
        return _compare_dict(actual, expected, tol, where)
    if isinstance(expected, list):
        return _compare_list(actual, expected, tol, where)
    if isinstance(expected, str):
        return _compare_text(actual, expected, where)
    if expected is None:  # the oracle never produces None; refuse rather than pass by accident
        return f"{where}: no expected value"
    return None if actual == expected else f"{where}: expected {expected!r}, got {describe(actual)}"


def judge_value(task: Task, value: Any, expected: Mapping[str, Any]) -> Judgement:
    """Judge one structured return value against ``{convention: expected}`` (primary first)."""
    if not expected:
        return Judgement(TaskState.ERROR, f"task {task.id}: the oracle produced no expected value")
    unknown = [name for name in expected if name.split("+")[0] not in {c.name for c in task.conventions}]
    if unknown:
        return Judgement(TaskState.ERROR, f"task {task.id}: expected values for unknown conventions {unknown}")
    value = normalize(value, ANSWER)
    problems = check_shape(value, task.output)
    if problems:
        more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
        return Judgement(TaskState.FAIL, f"wrong shape: {problems[0]}{more}")
    mismatches: list[str] = []
    for name, exp in expected.items():
        problem = compare(value, exp, task.tolerance)
        if problem is None:
            return Judgement(TaskState.PASS, f"matches convention {name!r}", convention=name)
        mismatches.append(f"{name}: {problem}")
    if len(mismatches) == 1:
        return Judgement(TaskState.FAIL, f"wrong value ({mismatches[0]})")
    return Judgement(TaskState.FAIL, f"matches no accepted convention ({'; '.join(mismatches)})")


def judge_outcome(task: Task, outcome: Outcome, expected: Mapping[str, Any]) -> Judgement:
    """Judge what the agent returned for ``task``: pass, fail (its own fault) or error (external)."""
    error = outcome.error
    if isinstance(error, ExternalError):
        return Judgement(TaskState.ERROR, f"{error.code}: {error.message}")
    if error is not None:
        return Judgement(TaskState.FAIL, f"{error.code}: {error.message}")
    if outcome.tool_source in (ToolSource.BLOCKED, ToolSource.REFUSED):
        return Judgement(TaskState.FAIL, f"no answer: the tool was {outcome.tool_source} on a benchmark task")
    if outcome.value is None:
        return Judgement(TaskState.FAIL, f"no value returned (stage reached: {outcome.stage})")
    return judge_value(task, outcome.value, expected)


# --------------------------------------------------------------------------- probes
def probe_entry(code: str, task: Task) -> str | None:
    """The function a probe calls: the one the agent called (``intent.indicator``) when the module
    defines it at top level, else the module's single public top-level function, else None."""
    if function_signature(code, task.intent.indicator) is not None:
        return task.intent.indicator
    try:
        return str(tool_signature(code)["function"])
    except ValueError:  # no single public function, or code that does not parse
        return None


def matched_conventions(task: Task, value: Any, expected: Mapping[str, Any]) -> list[str]:
    """The conventions ``value`` matches entirely (a probe must match one of these too)."""
    value = normalize(value, ANSWER)
    return [name for name, exp in readings(expected).items() if compare(value, exp, task.tolerance) is None]


#: Keys of an expected-values mapping that are no accepted reading: what the oracle says instead of,
#: or beside, the readings' values (:mod:`runner.judging.oracle`).
_NOT_READINGS = frozenset({RAISES, NOT_HELD, OR_RAISES})


def readings(expected: Mapping[str, Any]) -> dict[str, Any]:
    """``{convention: value}`` of ``expected`` without the oracle's words (:data:`OR_RAISES`, ...):
    a value is only ever compared with a reading's value, never with a reason."""
    return {name: value for name, value in expected.items() if name not in _NOT_READINGS}


def judge_probe_value(task: Task, index: int, probe: Probe, value: Any, expected: Mapping[str, Any]) -> Judgement:
    """Judge one probe's value against ``{convention: expected}`` (only the main value's conventions)."""
    where = f"probe {index} ({probe.label()})"
    if not expected:
        return Judgement(TaskState.ERROR, f"{where}: the oracle produced no expected value")
    value = normalize(value, ANSWER)
    problems = check_shape(value, task.output)
    if problems:
        return Judgement(TaskState.FAIL, f"{where}: wrong shape: {problems[0]}")
    for name, exp in readings(expected).items():
        if compare(value, exp, task.tolerance, where) is None:
            return Judgement(TaskState.PASS, f"{where}: matches convention {name!r}", convention=name)
    return Judgement(TaskState.FAIL, f"{where}: {mismatch_words(task, value, dict(expected), list(expected))}")


def mismatch_words(task: Task, value: Any, expected: Mapping[str, Any], names: Sequence[str]) -> str:
    """What ``value`` should have been, naming every accepted reading it was compared with:
    ``expected 478.847 (adjusted_close) or 479.106 (raw_close), got 480.2``; for lists and dicts, the
    first mismatch against each reading. Where ``expected`` holds :data:`OR_RAISES` (some accepted
    readings refuse these arguments), a clear error is named first, and only the readings of ``names``
    that answer are offered (none: the error alone)."""
    if OR_RAISES in expected:
        answering = [c for c in names if c in readings(expected)]
        got = f"{float(value):.10g}" if is_number(value) else describe(value)
        error = f"a clear error ({expected[OR_RAISES]})"
        if not answering:
            return f"expected {error}, got a value {got}"
        words = mismatch_words(task, value, readings(expected), answering)
        return f"expected {error} or {words.removeprefix('expected ')}"
    names = [c for c in names if c in expected] or list(readings(expected))
    if all(isinstance(expected[c], (int, float)) and not isinstance(expected[c], bool) for c in names) \
            and is_number(value):
        options = " or ".join(f"{float(expected[c]):.10g} ({c})" for c in names)
        return f"expected {options}, got {float(value):.10g}"
    if all(isinstance(expected[c], bool) for c in names) and isinstance(value, bool):
        if len(names) == 1:  # a yes/no task's one reading: nothing to tell apart
            return f"expected {expected[names[0]]}, got {value}"
        options = " or ".join(f"{expected[c]} ({c})" for c in names)
        return f"expected {options}, got {value}"
    return "; ".join(f"{compare(value, expected[c], task.tolerance, 'value')} ({c})" for c in names)


def refused_value(result: ExecutionResult) -> bool:
    """Whether the tool returned a value the sandbox's boundary refused (NaN placeholders, a shape no
    answer has): the supervisor records it on layer ``result`` with one of the boundary's refusal
    types (:data:`~finevo.normalize.REFUSALS`: ``ResultNotFinite``, ``ResultShape``...). The tool's
    own doing, and a value, never an error it raised. A tool that died on that layer without a value
    (``os._exit``, a harness failure after it started, an unreadable channel) carries none of them:
    a crash, not a refused value."""
    return result.layer == "result" and result.error_type in REFUSALS


def raised_by_tool(result: ExecutionResult) -> bool:
    """Whether the tool raised an exception of its own: the only run that counts as a clear error
    where the data cannot answer. A refused value (:func:`refused_value`), a timeout, a crash or a
    block is not one."""
    return result.status == "exception" and not refused_value(result)


def run_words(result: ExecutionResult) -> str:
    """What happened to a tool run that returned no value, in words ("the tool raised (...)")."""
    detail = ": ".join(x for x in (result.error_type, result.error_message or result.rule) if x)
    what = {"exception": "raised", "timeout": "timed out", "blocked": "was blocked",
            "killed": "was killed by a resource limit", "crashed": "died without a result"}.get(result.status,
                                                                                             result.status)
    if refused_value(result):
        what = "returned a value the sandbox refuses as an answer"
    return f"the tool {what}" + (f" ({detail})" if detail else "")


def raise_judgement(where: str, result: ExecutionResult, reason: str) -> Judgement:
    """A call whose arguments the data cannot support (the oracle's ``reason``): it passes only when
    the tool raised an exception of its own -- a clear error (:func:`raised_by_tool`). A value (a
    placeholder, an answer from fewer data than asked, a value the sandbox refuses such as a list
    of NaN), a timeout, a crash or a block fails."""
    if raised_by_tool(result):
        return Judgement(TaskState.PASS, f"{where}: raises as expected ({result.error_type or 'an error'})")
    if result.ok:
        got = describe(normalize(result.value, ANSWER))
        return Judgement(TaskState.FAIL, f"{where}: expected a clear error (the data cannot support these "
                                         f"arguments: {reason}), got a value {got}")
    if refused_value(result):
        return Judgement(TaskState.FAIL, f"{where}: expected a clear error (the data cannot support these "
                                         f"arguments: {reason}), but {run_words(result)}: a placeholder "
                                         "is not an error the tool raised")
    return Judgement(TaskState.FAIL, f"{where}: expected a clear error, but {run_words(result)}")


def pinned(expected: Mapping[str, Any], allowed: Sequence[str] | set[str]) -> dict[str, Any]:
    """``expected`` narrowed to the readings of ``allowed`` (the ones the tool's other values match),
    the oracle's words (:data:`RAISES`, :data:`OR_RAISES`) kept: where every reading of ``allowed``
    refuses an argument set others answer, only a clear error is left to pass. All of ``expected``
    when it shares no key with ``allowed``."""
    kept = {k: v for k, v in expected.items() if k in allowed or (k in _NOT_READINGS and k != NOT_HELD)}
    return kept if any(k in allowed for k in kept) or OR_RAISES in kept or RAISES in kept else dict(expected)


def refusal_judgement(where: str, result: ExecutionResult, reason: str) -> Judgement:
    """A tool that raised an exception of its own (``result``) on an argument set some accepted
    readings refuse (``reason``, the oracle's :data:`OR_RAISES`): a clear error, as those readings
    give, so it passes, whichever reading its other values match."""
    return Judgement(TaskState.PASS, f"{where}: raises ({result.error_type or 'an error'}), as accepted readings "
                                     f"do here: {reason}")


def _run_failure(index: int, probe: Probe, result: ExecutionResult) -> str:
    return f"probe {index} ({probe.label()}): {run_words(result)}"


def judge_probes(task: Task, outcome: Outcome, main: Judgement, main_expected: Mapping[str, Any],
                 probe_expected: Sequence[Mapping[str, Any]], run_tool: ToolRun) -> tuple[Judgement, list[ProbeResult]]:
    """Re-run the final tool on each probe of ``task`` and judge it; the task's final judgement.

    Nothing runs unless ``main`` passed. Probes run in order and stop at the first that does not
    pass (the rest are recorded ``skipped``). ``probe_expected[i]`` holds the oracle's values for
    probe ``i + 1``. Exceptions other than :class:`~finevo.errors.FinevoError` propagate (e.g. the
    gate's interrupt).
    """
    if not main.passed or not task.probes:
        return main, []
    if len(probe_expected) != len(task.probes):
        return Judgement(TaskState.ERROR, f"task {task.id}: {len(task.probes)} probe(s) but "
                                          f"{len(probe_expected)} expected value set(s)"), []
    code = outcome.tool_code
    entry = probe_entry(code, task) if code else None
    allowed = set(matched_conventions(task, outcome.value, main_expected))
    results: list[ProbeResult] = []
    verdict: Judgement | None = None
    for index, (probe, expected_all) in enumerate(zip(task.probes, probe_expected, strict=False), start=1):
        expected = pinned(expected_all, allowed)
        record = ProbeResult(index=index, args=dict(probe.args), state=TaskState.SKIPPED, reason="",
                             expected=expected)
        if verdict is not None:
            record.reason = "not run: an earlier probe did not pass"
            results.append(record)
            continue
        if NOT_HELD in expected_all:  # judged only where the data hold its history (its hidden world)
            record.expected, record.reason = {}, str(expected_all[NOT_HELD])
            results.append(record)
            continue
        started = time.monotonic()
        if code is None or entry is None:
            missing = ("no tool code to re-run" if code is None else
                       f"the tool defines no function {task.intent.indicator!r} to call")
            judgement = Judgement(TaskState.FAIL, f"probe {index} ({probe.label()}): {missing}")
        else:
            try:
                result = run_tool(code, entry, {**task.intent.args, **probe.args})
            except ExternalError as exc:
                judgement = Judgement(TaskState.ERROR,
                                      f"probe {index} ({probe.label()}): {exc.code}: {exc.message}")
            except AgentFailure as exc:
                judgement = Judgement(TaskState.FAIL,
                                      f"probe {index} ({probe.label()}): {exc.code}: {exc.message}")
            else:
                record.actual = normalize(result.value, ANSWER) if result.ok else None
                if RAISES in expected:
                    judgement = raise_judgement(f"probe {index} ({probe.label()})", result, str(expected[RAISES]))
                elif OR_RAISES in expected and raised_by_tool(result):
                    judgement = refusal_judgement(f"probe {index} ({probe.label()})", result, str(expected[OR_RAISES]))
                elif result.ok:
                    judgement = judge_probe_value(task, index, probe, result.value, expected)
                else:
                    judgement = Judgement(TaskState.FAIL, _run_failure(index, probe, result))
        record.state, record.reason = judgement.state, judgement.reason
        record.duration_s = round(time.monotonic() - started, 6)
        results.append(record)
        if not judgement.passed:
            verdict = judgement
    if verdict is not None:
        return Judgement(verdict.state, verdict.reason, convention=None), results
    passed = sum(r.state is TaskState.PASS for r in results)
    return (Judgement(TaskState.PASS, f"{main.reason}; {passed} probe(s) pass", convention=main.convention),
            results)
