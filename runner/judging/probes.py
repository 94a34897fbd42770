"""Probes derived from a task's intent: every argument the task binds must move the answer.

A tool may ignore an argument and still give the right answer for the task's own arguments (an
RSI window fixed at 14, the first symbol of a pair hard-coded, a constant served for the exact
question). So besides the probes a task lists, the gate derives, from the task's own arguments:

* for a symbol argument, another symbol of the snapshot;
* for a list of symbols, one probe per position, each replacing that position only;
* for every number (window, period, threshold, year, ...), another value; for a flag, its negation.

A candidate value is kept only when the oracle says it changes the answer, i.e. a tool that
ignored the argument would answer the probe wrong. For a yes/no task one argument alone often
cannot flip the answer (``MA5 > MA20 and RSI < 30`` stays False whatever the RSI window while
the averages disagree), so the argument is then moved together with one other argument, and the
probe counts only when moving *this* argument, with the other one moved, flips it. An argument
no candidate moves gets no probe (the oracle cannot tell it is ignored there).

Candidates come in a fixed order and the snapshot is the run's own, so a run's probes are
reproducible; the tool under test never sees them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from random import Random
from typing import Any

import pandas as pd

from finevo.contract import check_shape
from finevo.errors import InputError
from finevo.jsontypes import JSONObject, JSONValue
from finevo.market.provider import MarketProvider
from finevo.registry.signature import function_signature
from runner.inputs.oracle_params import PARAMS, param_bounds, param_kind, param_leading, param_seeded
from runner.inputs.tasks import Probe, Task
from runner.judging.compare import compare, probe_entry
from runner.judging.oracle import (
    DEFINED_ON_FLAT,
    OR_RAISES,
    UNDEFINED_ON_FLAT,
    accepted_readings,
    each_reading,
    expected_values,
    judged_values,
)
from runner.judging.world_market import LEAP_YEARS, LONG_YEARS, RECENT_HALT_SESSIONS, RECENT_HALT_SYMBOLS, long_sessions

#: Oracle evaluations one task's derivation may spend (a bound on the pair search).
MAX_EVALUATIONS = 400
_YEAR_LIKE = 1900


def _differs(task: Task, a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """True when some convention's value differs between ``a`` and ``b`` (a tool reading the task
    that way and ignoring the argument would then answer wrong)."""
    return any(compare(a[c], b[c], task.tolerance) is not None for c in a if c in b)


def _numbers(value: int | float, wide: bool = False) -> list[int | float]:
    """Other values of a number, in a fixed order. Within half to twice the task's own value: a tool
    may fairly fetch history in proportion to what the task asks (2 years for 250 sessions); a yes/no
    answer (``wide``) only flips near a threshold, so a third and three times are tried last."""
    extra = [value / 3, value * 3] if wide else []
    if isinstance(value, int):
        if value >= _YEAR_LIKE:
            raw: list[float] = [value - 1, value + 1]
        else:
            raw = [value * 1.5, value * 0.5, value * 2, value + 1, value - 1, value + 2, *extra]
        seen: list[int | float] = []
        for r in raw:
            n = round(r)
            if n >= 1 and n != value and n not in seen:
                seen.append(n)
        return seen
    out: list[int | float] = []
    for r in (value * 1.5, value * 0.5, value * 2, value + 1, value - 1, *extra):
        if r > 0 and r != value and r not in out:
            out.append(r)
    return out


class _Deriver:
    def __init__(self, task: Task, provider: MarketProvider) -> None:
        self.task = task
        self.provider = provider
        self.symbols = list(provider.symbols())
        self.evaluations = 0
        self._memo: dict[str, dict[str, JSONValue] | None] = {}

    def expected(self, overrides: Mapping[str, Any], *, bounded: bool = True) -> dict[str, JSONValue] | None:
        key = repr(sorted(overrides.items()))
        if key not in self._memo:
            if bounded and self.evaluations >= MAX_EVALUATIONS:
                return None
            self.evaluations += 1
            try:
                self._memo[key] = expected_values(self.task, self.provider, dict(overrides))
            except InputError:
                self._memo[key] = None
        return self._memo[key]

    def bound(self) -> JSONObject:
        """Intent arguments that are oracle parameters of the same name and value (the ones a
        probe can move on both sides)."""
        params = self.task.oracle.params
        return {k: v for k, v in self.task.intent.args.items() if k in params and params[k] == v}

    def candidates(self, key: str, value: Any) -> Iterator[tuple[Any, str]]:
        """``(new value, words)`` for one argument, in a fixed order."""
        used = set(self.task.intent.args.get(key, []) if isinstance(value, list) else [value])
        if isinstance(value, bool):
            yield (not value), f"{key}={not value}"
        elif isinstance(value, (int, float)):
            low, high = param_bounds(self.task.oracle.name, key)
            numbers = _numbers(value, wide=self.task.output.type == "boolean")
            if high is not None:
                # a bounded argument (a quarter) is asked at its last value first: there (Q4, the
                # year's end) date arithmetic rolls over, and a tool building "month 3q+1" fails
                numbers = [n for n in [high, *numbers] if n != value and n <= high and (low is None or n >= low)]
                numbers = list(dict.fromkeys(numbers))
            for number in numbers:
                yield number, f"{key}={number}"
        elif isinstance(value, str) and value in self.symbols:
            for other in self.symbols:
                if other not in used and other not in _all_symbols(self.task):
                    yield other, f"{key}={other}"

    def list_candidates(self, key: str, value: list[Any], position: int) -> Iterator[tuple[Any, str]]:
        for other in self.symbols:
            if other not in value and other not in _all_symbols(self.task):
                changed = list(value)
                changed[position] = other
                yield changed, f"{key}[{position}]={other}"

    def moves(self, overrides: JSONObject, key: str, original: Any) -> bool:
        """Whether the answer with ``overrides`` differs from the same with ``key`` put back."""
        probe = self.expected(overrides)
        reset = self.expected({**overrides, key: original}) if len(overrides) > 1 else self.expected({})
        return probe is not None and reset is not None and _differs(self.task, probe, reset)


def _all_symbols(task: Task) -> set[str]:
    found: set[str] = set()
    for value in task.intent.args.values():
        for v in value if isinstance(value, list) else [value]:
            if isinstance(v, str):
                found.add(v)
    return found


def derive_probes(task: Task, provider: MarketProvider) -> list[Probe]:
    """The derived probes of ``task`` on ``provider`` (see the module doc), in argument order."""
    d = _Deriver(task, provider)
    args = d.bound()
    contexts: list[JSONObject] = [dict(p.args) for p in task.probes]
    probes: list[Probe] = []
    for key, value in args.items():
        targets: list[tuple[str, list[tuple[Any, str]]]]
        if isinstance(value, list):
            targets = [(f"{key}[{i}]", list(d.list_candidates(key, value, i)))
                       for i in range(len(value)) if isinstance(value[i], str) and value[i] in d.symbols]
        else:
            targets = [(key, list(d.candidates(key, value)))]
        for what, options in targets:
            probe = _first_moving(d, _Target(key, value, what, options), contexts)
            if probe is not None:
                probes.append(probe)
                contexts.append(dict(probe.args))
    for key, value in args.items():
        if task.output.type == "boolean" and _is_threshold(key, value):
            probes += boundary_probes(d, key, value, contexts)
        for probe in (_nothing_selected(d, key, value), _fraction_level(d, key, value, contexts)):
            if probe is not None and dict(probe.args) not in contexts:
                probes.append(probe)
                contexts.append(dict(probe.args))
    probes += optional_probes(d)
    probes += flat_probes(d, contexts)
    probes += reversed_probes(d)
    return probes


#: Parts of argument names that make two windows an ordered pair, the first part the shorter one's.
_ORDERED_PAIRS = (("short", "long"), ("fast", "slow"))


def _int_counts(args: Mapping[str, Any]) -> dict[str, int]:
    """The integer arguments of ``args`` (a flag is not a count)."""
    return {k: v for k, v in args.items() if isinstance(v, int) and not isinstance(v, bool)}


def _named_pairs(counts: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The named pairs of windows among the keys of ``counts`` (:data:`_ORDERED_PAIRS`), each as (the
    shorter one's key, the longer one's)."""
    out = []
    for shorter, longer in _ORDERED_PAIRS:
        firsts = [k for k in counts if shorter in k.lower()]
        seconds = [k for k in counts if longer in k.lower()]
        if len(firsts) == 1 and len(seconds) == 1:
            out.append((firsts[0], seconds[0]))
    return out


def reversed_probes(d: _Deriver) -> list[Probe]:
    """For a task whose windows come as a named pair (``short_window``/``long_window``, ``fast``/``slow``),
    the pair given the other way round. The oracle computes it as asked (``SMA(20) > SMA(5)``,
    ``EMA(26) - EMA(12)``), and a clear error is as right (:attr:`Probe.may_raise`: a tool may refuse a
    pair in the wrong order); a tool that sorts the pair back quietly answers the task's own question
    instead, and fails wherever the two answers differ (a flip world, where the task's own answer is
    True, or any MACD)."""
    counts = _int_counts(d.bound())
    out: list[Probe] = []
    for first, second in _named_pairs(counts):
        if counts[first] == counts[second]:
            continue
        args: JSONObject = {first: counts[second], second: counts[first]}
        if d.expected(args, bounded=False) is not None:
            out.append(Probe(args=args, oracle_params=args, may_raise=True,
                             reason=f"derived: the pair given the other way round ({_words(args)}): computed "
                                    "as asked, or a clear error; a tool that sorts the pair back answers another "
                                    "question"))
    return out


def flat_probes(d: _Deriver, contexts: list[JSONObject]) -> list[Probe]:
    """For a measure that divides by a dispersion of its window (:data:`UNDEFINED_ON_FLAT`: a
    correlation) or whose value there is 0 (:data:`DEFINED_ON_FLAT`: a volatility, a drawdown), the
    task at its shortest lookback (of :data:`LOOKBACKS`) every accepted reading answers here, on a
    symbol the ``seed`` world halts up to its as-of day
    (:data:`~runner.judging.world_market.RECENT_HALT_SYMBOLS`, 10 to 13 flat sessions; the task's
    own when it names one, else in place of its last symbol). There that symbol does not move over
    the window: a correlation is undefined and a tool must raise (one that guards the zero
    dispersion with a number, 0.0 "no co-movement", fails); a volatility or a drawdown is 0 (one
    that refuses the window, or answers NaN, fails). Elsewhere it is judged as any probe."""
    undefined = d.task.oracle.name in UNDEFINED_ON_FLAT
    if not undefined and d.task.oracle.name not in DEFINED_ON_FLAT:
        return []
    bound = d.bound()
    lookbacks = {k: v for k, v in _int_counts(bound).items() if k in LOOKBACKS}
    halted: JSONObject = {}
    if not _all_symbols(d.task) & set(RECENT_HALT_SYMBOLS):
        for key, value in bound.items():
            if isinstance(value, list) and value and isinstance(value[-1], str):
                spare = [s for s in RECENT_HALT_SYMBOLS if s in d.symbols and s not in value]
                if spare:
                    halted = {key: [*value[:-1], spare[0]]}
                break
            if isinstance(value, str) and value in d.symbols:
                halted = {key: RECENT_HALT_SYMBOLS[0]}
                break
        if not halted:
            return []
    for key, value in lookbacks.items():
        for option in LOOKBACKS[key]:
            if option >= value or option + 1 > RECENT_HALT_SESSIONS[0]:  # its returns all inside the halt
                break
            args: JSONObject = {**halted, key: option}
            if args in contexts:
                break
            if d.expected(args, bounded=False) is not None:
                there = ("the measure is undefined there and the tool must raise, never answer a placeholder "
                         "such as 0.0") if undefined else ("the measure is 0 there, an answer: a tool that "
                                                          "refuses a window that does not move fails")
                return [Probe(args=args, oracle_params=args,
                              reason=f"derived: the shortest window, {_words(args)}, where a halted symbol "
                                     f"does not move (a hidden world halts it up to its as-of day): {there}")]
    return []


def measure_options(task: Task) -> dict[str, int | float]:
    """The measure's numeric parameters the task does not bind and no accepted reading sets (a
    ``periods_per_year``, a ``ddof``): a tool may fairly declare one with the task's value as its
    default, and must then honour another value (:func:`optional_probes` asks it). Their values: the
    task's oracle parameter, else the oracle's declared default."""
    model = PARAMS.get(task.oracle.name)
    if model is None:
        return {}
    readings = {k for _, reading in accepted_readings(task) for k in reading}
    readings -= set(task.oracle.params)  # keep the task's own parameters
    owned = {k for c in task.conventions for k in c.params} | readings
    out: dict[str, int | float] = {}
    for key, field in model.model_fields.items():
        value = task.oracle.params.get(key, field.default)
        if key in task.intent.args or key in owned or isinstance(value, bool) \
                or not isinstance(value, (int, float)):
            continue
        out[key] = value
    return out


def optional_probes(d: _Deriver) -> list[Probe]:
    """For each of the measure's optional parameters (:func:`measure_options`), the first other value
    (:func:`_numbers`, within its declared range) that moves the answer, asked only of a tool that
    declares that parameter (:attr:`Probe.declared`): a tool that takes ``periods_per_year`` and
    annualises by 252 whatever it is given fails; a tool without the parameter is not asked."""
    out: list[Probe] = []
    for key, value in measure_options(d.task).items():
        # a real parameter (``periods_per_year: float``) is asked at a fractional value first: a tool that
        # truncates it with int() (365.25 days a year read as 365) fails there, at a whole one it passes
        model = PARAMS.get(d.task.oracle.name)
        real = model is not None and model.model_fields[key].annotation is float and value > 0
        for new in [*(_fractions(value) if real else []), *_numbers(value)]:
            if d.moves({key: new}, key, value):
                out.append(Probe(args={key: new}, oracle_params={key: new}, declared=(key,),
                                 reason=f"derived: {key}={new}, an optional parameter of the measure moved (asked "
                                        f"only of a tool that declares {key}): a tool that ignores it fails"))
                break
    return out


Expected = Sequence[dict[str, JSONValue]]


def for_tool(task: Task, code: str | None, probe_expected: Expected | None) -> tuple[Task, Expected | None]:
    """``task`` and its probes' expected values without the probes ``code`` cannot be asked: those
    passing a parameter (:attr:`Probe.declared`) its function does not declare by name."""
    if not any(p.declared for p in task.probes):
        return task, probe_expected
    entry = probe_entry(code, task) if code else None
    signature = function_signature(code, entry) if code and entry else None
    names = {str(p["name"]) for p in signature["params"]
             if p["kind"] in ("positional_or_keyword", "keyword_only")} if signature else set()
    keep = [i for i, p in enumerate(task.probes) if set(p.declared) <= names]
    if len(keep) == len(task.probes):
        return task, probe_expected
    kept = task.model_copy(update={"probes": tuple(task.probes[i] for i in keep)})
    if probe_expected is None or len(probe_expected) != len(task.probes):
        return kept, probe_expected
    return kept, [probe_expected[i] for i in keep]


#: How far on either side of the level where a yes/no answer flips the boundary probes sit (a
#: fraction of that level): accepted readings of an indicator agree far closer than this (Wilder's
#: seed, SMA or first change, is forgotten to 1e-15 over two years of closes, 1e-7 of a point over one),
#: and a reading that computes it differently does not: Cutler's RSI, Wilder's from the last hundred
#: closes only (a tenth of a point off), or an indicator rounded to two decimals before the comparison
#: (up to half a hundredth off: an RSI of 29.996 is below 30, its rounding is not). At 0.5 % a Wilder RSI
#: from the last 90 closes passed both probes, at 0.05 % an RSI rounded to two decimals.
BOUNDARY_MARGIN = 0.00002
_BISECTIONS = 30


def _is_threshold(key: str, value: Any) -> bool:
    return ("threshold" in key.lower() or "level" in key.lower()) and isinstance(value, (int, float)) \
        and not isinstance(value, bool) and value > 0


def boundary_probes(d: _Deriver, key: str, value: int | float, contexts: list[JSONObject]) -> list[Probe]:
    """Two probes just either side of the level of ``key`` at which the oracle's answer flips (for the
    task's own arguments, else for another probe's): there the answer says which side of the level
    the indicator lies, so a tool whose indicator differs materially (Cutler's RSI where Wilder's is
    asked, an RSI from the last closes only) answers one of them wrong. The level is found by
    bisecting the oracle between the task's value and another value of a different answer (within
    the values the other probes already ask), so the probes stay within sane ranges; none when no
    such pair exists."""
    settings: list[JSONObject] = [{}]
    for context in contexts:
        rest = {k: v for k, v in context.items() if k != key}
        if rest not in settings:
            settings.append(rest)
    others = [float(n) for n in _numbers(value)] + [float(c[key]) for c in contexts if key in c]
    for rest in settings:
        here = d.expected({**rest, key: value}, bounded=False)
        if here is None:
            continue
        for other in others:
            there = d.expected({**rest, key: other}, bounded=False)
            if there is None or not _differs(d.task, here, there):
                continue
            low, high = float(value), other
            for _ in range(_BISECTIONS):
                middle = (low + high) / 2
                found = d.expected({**rest, key: middle}, bounded=False)
                if found is None:
                    break
                if _differs(d.task, here, found):
                    high = middle
                else:
                    low = middle
            level = (low + high) / 2
            below, above = round(level * (1 - BOUNDARY_MARGIN), 6), round(level * (1 + BOUNDARY_MARGIN), 6)
            a, b = d.expected({**rest, key: below}, bounded=False), d.expected({**rest, key: above}, bounded=False)
            if a is None or b is None or not _differs(d.task, a, b):
                continue
            where = ", ".join(f"{k}={v}" for k, v in rest.items()) or "the task's own arguments"
            return [Probe(args={**rest, key: side}, oracle_params={**rest, key: side},
                          reason=f"derived: the answer turns at {key}={level:.4g} for {where}; {key}={side} "
                                 f"lies {BOUNDARY_MARGIN:.3%} {word} it, so the indicator must be computed as "
                                 "accepted, not merely on the right side of the task's own threshold")
                    for side, word in ((below, "below"), (above, "above"))]
    return []


@dataclass(frozen=True)
class _Target:
    """One argument (or one position of a list argument) a derived probe moves."""

    key: str  # the argument's name
    value: Any  # the task's own value of it
    what: str  # the words naming it in a probe's reason (``symbols[1]``)
    options: list[tuple[Any, str]]  # ``(new value, words)`` candidates, in order


def _first_moving(d: _Deriver, target: _Target, contexts: list[JSONObject]) -> Probe | None:
    """The first candidate that moves the answer: alone; for a yes/no task also on top of another
    probe's arguments, then together with one other argument moved (of the task's bound ones,
    :meth:`_Deriver.bound`); else the first candidate the oracle can answer (it may still move the
    answer in the hidden worlds)."""
    key, value, what, options = target.key, target.value, target.what, target.options
    args = d.bound()
    for new, words in options:
        if d.moves({key: new}, key, value):
            return Probe(args={key: new}, oracle_params={key: new},
                         reason=f"derived: {words} changes the answer, so a tool that ignores {what} fails")
    if d.task.output.type == "boolean":
        pairs: list[tuple[JSONObject, str]] = [(c, ", ".join(f"{k}={v}" for k, v in c.items()))
                                                   for c in contexts if key not in c]
        for other, other_value in args.items():
            if other != key and not isinstance(other_value, list):
                pairs += [({other: new}, words) for new, words in d.candidates(other, other_value)]
        for context, context_words in pairs:
            for new, words in options:
                overrides = {**context, key: new}
                if d.moves(overrides, key, value):
                    return Probe(args=overrides, oracle_params=overrides,
                                 reason=f"derived: with {context_words}, {words} flips the answer, "
                                        f"so a tool that ignores {what} fails")
    for new, words in options:
        if d.expected({key: new}, bounded=False) is not None:
            return Probe(args={key: new}, oracle_params={key: new},
                         reason=f"derived: {words}; the snapshot gives the same answer as for the task's own "
                                f"arguments, the hidden worlds may not")
    return None


# --------------------------------------------------------------------------- the argument space
#: Lookback arguments (a count of sessions or calendar days, of years, or an indicator's window) and
#: the values a reused tool will plausibly be asked: short and long windows, one to five years.
LOOKBACKS: dict[str, tuple[int, ...]] = {
    "days": (5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 250, 300, 400, 500, 600),
    "years": (1, 2, 3, 4, 5),
    # an indicator's or a volatility's length: a tool that clamps it or fetches a fixed period fails
    "window": (5, 10, 20, 60, 120, 250),
}
#: Lookbacks a reuse asks more than any other, one of them probed (drawn) beside the far values: a year,
#: in sessions and in calendar days. Yahoo's quote answers "a year" itself (``fiftyTwoWeekHigh``,
#: ``yearHigh``, ``52WeekChange``) by its own reading (intraday highs, a calendar year): a tool that
#: takes the quote's figure for exactly that lookback, and computes every other, is right on every
#: value but these.
YEAR_LOOKBACKS: dict[str, tuple[int, ...]] = {"days": (252, 365)}
#: The symbols the benchmark's own tasks name besides stocks: the index, then the ETF (in that order:
#: where the index has no answer, a drawn stock takes its probe, :func:`_range_candidates`).
BENCHMARK_SYMBOLS = ("^GSPC", "SPY")
#: How many symbols a list-of-symbols argument may hold (a portfolio of two to five).
LIST_SIZES = (2, 3, 4, 5)
#: A lookback this many times the sessions the snapshot holds: no accepted reading can answer it (the far
#: end of the bisection for the data's limit, :func:`_limits`).
BEYOND_DATA = 4


def _lookback_options(d: _Deriver, key: str, value: Any) -> tuple[int, ...] | None:
    """The values a lookback ``key`` is drawn from and bisected over: its own in :data:`LOOKBACKS`, or
    for any other plain count of the oracle (a short or long moving average's window, KDJ's range, a
    forward horizon: :data:`~runner.inputs.oracle_params.Count`) those of a ``window``. A count that
    seeds a recursive smoothing (:data:`~runner.inputs.oracle_params.Seeded`: an EMA's span, an RSI's
    window) is left to the scaled probes, which leave it :data:`WARM_UP` windows of data: moved alone
    to a far value its accepted seeds would disagree. None for anything else."""
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if key in LOOKBACKS:
        return LOOKBACKS[key]
    name = d.task.oracle.name
    if param_kind(name, key) == "count" and not param_seeded(name, key):
        return LOOKBACKS["window"]
    return None


def _own_sessions(d: _Deriver) -> int:
    """The sessions of history the task's own symbols all hold."""
    return min((len(d.provider.history(s)) for s in _all_symbols(d.task) if s in d.symbols), default=0)


def _out_of_order(d: _Deriver, args: Mapping[str, Any]) -> bool:
    """Whether ``args`` leave a named pair of windows (:data:`_ORDERED_PAIRS`) not strictly ordered: a
    tool may rightly refuse that (the pair given the other way round is a probe of its own)."""
    counts = _int_counts({**d.bound(), **args})
    return any((first in args or second in args) and counts[first] >= counts[second]
               for first, second in _named_pairs(counts))


def _far(value: int, options: tuple[int, ...]) -> list[int]:
    """The options outside half to twice ``value`` (the derived probes cover that band)."""
    return [o for o in options if o != value and not value / 2 <= o <= value * 2]


def range_probes(task: Task, provider: MarketProvider, rng: Random, taken: list[JSONObject]) -> list[Probe]:
    """Probes drawn (with ``rng``) across the space a reused tool will see, each kept only when the
    oracle answers it under every accepted reading and the answer differs from the task's own: for a
    lookback one value far from the task's (a tool that truncates its history to a fixed period or
    clamps its lookback fails), for a symbol the index and the ETF each (another stock where the
    index has no answer), for a list of symbols a list of another length (a tool that assumes the
    count fails); and where the tool must raise: a lookback the data cannot support at all, a year at
    the data's edge or not reported yet, an optional argument left out, a symbol with nothing to read;
    every value of an argument with at most four (:func:`_small_domain`), a recursion's short run
    (:func:`_short_run`); and for a lookback, one value where the accepted readings part (:func:`_mixed`).
    """
    d = _Deriver(task, provider)
    own = d.expected({}, bounded=False)
    if own is None:
        return []
    out: list[Probe] = []
    for key, value in d.bound().items():
        for candidates in _range_candidates(d, key, value, rng):
            for args in candidates:
                if args not in taken and not _out_of_order(d, args) and _answers(d, args, own):
                    year = args.get(key) in YEAR_LOOKBACKS.get(key, ())
                    where = ("a year back, where Yahoo's quote has figures of its own" if year
                             else "far from the task's own")
                    out.append(Probe(args=args, oracle_params=args,
                                     reason=f"drawn from the argument space: {_words(args)}, {where}"))
                    taken.append(args)
                    break
        leap = _leap(d, key, value, taken)
        if leap is not None:
            out.append(leap)
            taken.append(leap.args)
        for refused in (*_limits(d, key, value), _floor(d, key, value), _edge(d, key, value),
                        _other_length(d, key, value),
                        _later(d, key, value), _omitted(d, key, value), _unanswered_symbol(d, key, value)):
            if refused is not None and refused.args not in taken:
                out.append(refused)
                taken.append(refused.args)
        tail = _short_run(d, key, own, taken)
        if tail is not None:
            out.append(tail)
            taken.append(dict(tail.args))
        for every in _small_domain(d, key, value, own, taken):
            out.append(every)
            taken.append(dict(every.args))
    for key, value in d.bound().items():
        mixed = _mixed(d, key, value, taken)
        if mixed is not None:
            out.append(mixed)
            taken.append(dict(mixed.args))
    for scaled in (_scaled(d, own, taken), _long_scaled(d, own, taken)):
        if scaled is not None:
            out.append(scaled)
            taken.append(dict(scaled.args))
    return out


def _answers(d: _Deriver, args: JSONObject, own: Mapping[str, Any]) -> bool:
    """Whether the oracle answers ``args`` under every accepted reading, in the task's output shape,
    and (a yes/no answer aside: it moves only near a threshold) differently from the task's own."""
    found = d.expected(args, bounded=False)
    if found is None or check_shape(next(iter(found.values())), d.task.output):
        return False
    return d.task.output.type == "boolean" or _differs(d.task, found, own)


#: Factors by which :func:`_scaled` multiplies every count of a task at once, the largest tried first.
SCALES = (10, 5, 3)
#: Sessions of history per session of the scaled counts' sum a scaled probe leaves: recursive
#: indicators (EMA, Wilder's RSI) differ by their seed until about ten times their window, where
#: accepted readings (a first-close seed, a mean seed, ``adjust=True``) would disagree and a careful
#: tool may rightly refuse; the probe stays where they all agree.
WARM_UP = 10


def _counts(d: _Deriver) -> dict[str, int]:
    """The task's bound arguments that are counts (windows, lookbacks, periods, horizons)."""
    return {k: v for k, v in _int_counts(d.bound()).items()
            if k in LOOKBACKS or param_kind(d.task.oracle.name, k) == "count"}


def _scaled(d: _Deriver, own: Mapping[str, Any], taken: list[JSONObject]) -> Probe | None:
    """Every count of the task multiplied by the same factor (the largest of :data:`SCALES` the data
    hold with :data:`WARM_UP` to spare and the oracle answers): the task asked at another scale keeps
    the relations between its counts (fast < slow, a window within its lookback), so no accepted
    reading refuses it. A tool that fetches a fixed period, clamps a window or assumes the task's
    own scale fails here whatever the seed, where moving one count alone is refused (a window longer
    than its lookback) or stays within what such a tool gets right."""
    counts = _counts(d)
    if len(counts) < 2:
        return None  # one count alone is drawn across its range by range_probes
    sessions = _own_sessions(d)
    for factor in SCALES:
        args: JSONObject = {k: v * factor for k, v in counts.items()}
        if WARM_UP * factor * sum(counts.values()) > sessions or args in taken:
            continue
        if _answers(d, args, own):
            return Probe(args=args, oracle_params=args,
                         reason=f"drawn from the argument space: every count x{factor} ({_words(args)}), "
                                "the task asked at a longer scale")
    return None


def _long_scaled(d: _Deriver, own: Mapping[str, Any], taken: list[JSONObject]) -> Probe | None:
    """Every count of the task multiplied by the largest of :data:`SCALES` that the ``long`` world
    (the run's snapshot lengthened back :data:`LONG_YEARS` years, :mod:`runner.judging.worlds`) holds
    with :data:`WARM_UP` to spare and the snapshot does not: judged only where the data hold that
    history (``min_sessions``), so every accepted reading agrees there. A tool that reads a fixed
    period (a year, two, 500 days) where the task's reading uses the whole history answers it from
    EMAs still carrying their seed, beyond the tolerance: at the task's own spans, or the snapshot's
    scaled ones, the seed has decayed below it and such a tool passes."""
    counts = _counts(d)
    if len(counts) < 2:
        return None
    symbols = [s for s in _all_symbols(d.task) if s in d.symbols]
    if not symbols:
        return None
    histories = [d.provider.history(s) for s in symbols]
    sessions = min(len(h) for h in histories)
    if not sessions:
        return None
    first = min(pd.DatetimeIndex(h.index)[0].date() for h in histories)
    longer = sessions + long_sessions(first, d.provider.as_of)
    for factor in SCALES:
        need = WARM_UP * factor * sum(counts.values())
        if need <= sessions:
            return None  # the snapshot holds this scale: :func:`_scaled` asks it there
        if need > longer:
            continue
        args: JSONObject = {k: v * factor for k, v in counts.items()}
        if args in taken or not _answers(d, args, own):
            continue
        return Probe(args=args, oracle_params=args, min_sessions=need,
                     reason=f"drawn from the argument space: every count x{factor} ({_words(args)}), the task "
                            f"asked at a longer scale, judged where the data hold {need} sessions (the hidden "
                            f"world of {LONG_YEARS} years): a tool that reads a fixed period fails there")
    return None


def _words(args: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in args.items())


def _range_candidates(d: _Deriver, key: str, value: Any, rng: Random) -> list[list[JSONObject]]:
    """Groups of candidates, in drawn order; one probe is kept from each group: for a lookback one
    shorter and one longer than half to twice the task's own (a clamp or a fixed period shows on
    the long side, a floor on the short side), and for a count of days a year (:data:`YEAR_LOOKBACKS`)."""
    options = _lookback_options(d, key, value)
    if options is not None:
        far = _far(value, options)
        groups = [[o for o in far if o < value] or [o for o in options if o < value],
                  [o for o in far if o > value] or [o for o in options if o > value]]
        groups.append([o for o in YEAR_LOOKBACKS.get(key, ()) if o != value])
        for group in groups:
            rng.shuffle(group)
        return [[{key: o} for o in group] for group in groups if group]
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 \
            and param_kind(d.task.oracle.name, key) == "number" and not _is_threshold(key, value):
        # a real multiplier given as a whole number (2 standard deviations): a tool that truncates it
        # to an int, or fits it to a table of whole values, fails on a fractional one
        return [[{key: v} for v in _fractions(value)]]
    if isinstance(value, str) and value in d.symbols:
        # The index and the ETF each where the oracle answers them, never one drawn in place of the other:
        # each parts a stock's tool its own way (the index has no volume on its latest sessions as Yahoo
        # serves it, no statements, no shares; the ETF no earnings). Where the index has no answer (a
        # statement, a dividend), another stock of the snapshot, drawn.
        benchmark = [s for s in BENCHMARK_SYMBOLS if s != value and s in d.symbols]  # the index, then the ETF
        others = [s for s in d.symbols if s != value and s not in BENCHMARK_SYMBOLS]
        rng.shuffle(others)
        return [[{key: o} for o in benchmark[:1] + others], [{key: o} for o in benchmark[1:]]]
    if isinstance(value, list) and value and all(isinstance(v, str) and v in d.symbols for v in value):
        sizes = [n for n in LIST_SIZES if n != len(value) and n <= len(d.symbols)]
        rng.shuffle(sizes)
        return [[{key: rng.sample(d.symbols, n)} for n in sizes]]
    return []


def _fractions(value: float) -> list[float]:
    """Fractional values near a real parameter's (a quarter more or less, a half more), in a fixed order."""
    out: list[float] = []
    for v in (value * 1.25, value * 0.75, value + 0.5, value - 0.5):
        v = round(v, 4)
        if v > 0 and v != int(v) and v not in out:
            out.append(v)
    return out


def _leap(d: _Deriver, key: str, value: Any, taken: list[JSONObject]) -> Probe | None:
    """For a lookback in years: :data:`LEAP_YEARS` years, the shortest window that spans two Feb 29ths
    (kept even where the run's data give it the task's own answer: the ``leap`` world holds the data),
    so a window of 365 days (or 52 weeks) a year, right at shorter spans, must show itself."""
    if key != "years" or not isinstance(value, int) or isinstance(value, bool) or value == LEAP_YEARS:
        return None
    args: JSONObject = {key: LEAP_YEARS}
    if args in taken or d.expected(args, bounded=False) is None:
        return None
    return Probe(args=args, oracle_params=args,
                 reason=f"drawn from the argument space: {_words(args)} spans two Feb 29ths, where a year of 365 "
                        "days parts from the calendar's")


#: Sessions in a year, to turn the data's length into a lookback counted in years.
_SESSIONS_PER_YEAR = 252


def _first_where(low: int, high: int, holds: Callable[[int], bool]) -> int:
    """The least value in ``(low, high]`` at which ``holds`` is true, by bisection: ``holds`` is false at
    ``low``, true at ``high``, and turns once between them."""
    while high - low > 1:
        middle = (low + high) // 2
        if holds(middle):
            high = middle
        else:
            low = middle
    return high


def _limits(d: _Deriver, key: str, value: Any) -> list[Probe]:
    """For a lookback (sessions, days, an indicator's window or years): both sides of the largest value
    the data support -- the limit, which every accepted reading answers, and the value just past it,
    which some (or every) reading refuses -- found by bisecting the oracle between the task's own
    value and one far beyond the data (:data:`BEYOND_DATA`). At the limit a tool must answer (one
    whose data check is off by one raises there and fails); just past it, it must raise (one that
    answers from fewer data than asked fails). For a count named otherwise whose limit the oracle sets
    below the data's own length, one probe past all the data instead. None when the oracle answers
    even far beyond the data."""
    if _lookback_options(d, key, value) is None:
        return []
    sessions = max((len(d.provider.history(s)) for s in d.symbols), default=0)
    span = -(-sessions // _SESSIONS_PER_YEAR) if key == "years" else sessions
    low, high = value, max(value * 2, span * BEYOND_DATA)
    if d.expected({key: high}, bounded=False) is not None or d.expected({key: low}, bounded=False) is None:
        return []
    # low: every reading answers; high: some reading refuses
    high = _first_where(low, high, lambda option: d.expected({key: option}, bounded=False) is None)
    low = high - 1
    own = _own_sessions(d)
    if key not in LOOKBACKS and low < own - 1:
        # a count named otherwise (KDJ's range, a forward horizon) whose limit the oracle sets by the
        # task's other counts too (K and D smoothed over the ranges that remain, a signal's warm-up):
        # there readings disagree on the data needed, so no value is asked at the oracle's limit; a
        # count longer than all the data is refused by every reading (no range, no horizon of that many
        # sessions), and a tool that answers it from fewer sessions than asked fails
        past = {key: own + 1}
        if d.expected(past, bounded=False) is not None:
            return []
        # In a hidden world that holds more history the same value lies where the readings disagree
        # again (the oracle may answer it, a tool asking a longer warm-up refuses): there a clear error
        # is as right as the oracle's value (may_raise); here, past all the data, only an error is.
        return [Probe(args=past, oracle_params=past, expect_error=True, may_raise=True,
                      reason=f"past the data: {key}={own + 1} is more sessions than the data hold, so the tool "
                             "must raise a clear error, never answer from fewer data")]
    return [Probe(args={key: low}, oracle_params={key: low},
                  reason=f"the limit: {key}={low} is the largest value every accepted reading answers (the task's "
                         "other arguments kept), so the tool must answer it (a data check off by one raises there)"),
            Probe(args={key: high}, oracle_params={key: high}, expect_error=True,
                  reason=f"just past the limit: {key}={high} is one more than some accepted reading answers, so "
                         "the tool must raise a clear error (or give an answering reading's value), never answer "
                         "from fewer data")]


def _floor(d: _Deriver, key: str, value: Any) -> Probe | None:
    """For a lookback: the value just below the smallest the task's primary reading answers (found by
    bisecting it between 1 and the task's own value) -- RSI-14 from the last N closes needs N >= 15.
    There the primary reading must raise: a tool following it whose data check
    is one too lenient (``days < window`` where it needs ``days <= window``) answers from fewer data than
    the reading asks, a value no reading gives, and fails; the readings that answer there (the whole
    history's, which ignores the lookback) give their values, as :func:`_mixed` says. The mirror of
    :func:`_limits` at the small end. None when the primary reading answers a lookback of 1 (or refuses
    the task's own), and when no other count of the task lies within one of that value."""
    if _lookback_options(d, key, value) is None or value <= 1:
        return None

    def primary_answers(option: int) -> bool:
        _, found = next(each_reading(d.task, d.provider, {key: option}))
        return not isinstance(found, InputError)

    if primary_answers(1) or not primary_answers(value):
        return None
    high = _first_where(1, value, primary_answers)  # the least value the primary reading answers
    low = high - 1
    # only where another count of the task sets the floor (RSI-14 over the last 14 closes: a query a
    # reuse brings); the least data a statistic needs at all (a correlation of one return) is no
    # question anyone asks, and there a tool's NaN would be judged, not its reading
    if not any(abs(low - count) <= 1 for name, count in _int_counts(d.bound()).items() if name != key):
        return None
    args: JSONObject = {key: low}
    words = (f"below the floor: {key}={low} is one less than the smallest value the task's primary reading answers "
             f"({high}), so a tool following it must raise a clear error, never answer from fewer data")
    if _refused(d, args):
        return Probe(args=args, oracle_params=args, expect_error=True, reason=words)
    return Probe(args=args, oracle_params=args, reason=f"{words} (the readings that answer here give their values)")


#: How many years back from the task's own :func:`_edge` looks for the first the data cannot answer.
EDGE_YEARS = 10


def _edge(d: _Deriver, key: str, value: Any) -> Probe | None:
    """For a year: the latest earlier one no accepted reading can answer (the data's edge, where a
    year may hold only some of its quarters): a tool that answers there from another period, or
    from whatever columns the year has, fails; it must raise."""
    if not isinstance(value, int) or isinstance(value, bool) or value < _YEAR_LIKE:
        return None
    for year in range(value - 1, value - EDGE_YEARS - 1, -1):
        args = {key: year}
        if d.expected(args, bounded=False) is None:
            return Probe(args=args, oracle_params=args, expect_error=True,
                         reason=f"the data's edge: {_words(args)} is the latest earlier year the data cannot "
                                "answer, so the tool must raise a clear error, never answer from another period")
    return None


def _refused(d: _Deriver, args: JSONObject) -> bool:
    """Whether the oracle answers ``args`` under none of the task's accepted readings (each reading
    tried alone, :func:`_answering`): only there is a refusal the one right answer."""
    return _answering(d, args)[0] == 0


def _must_raise(d: _Deriver, key: str, candidates: Iterable[JSONValue],
                reason: Callable[[JSONObject], str]) -> Probe | None:
    """The probe for the first of ``candidates`` (values of ``key``) no accepted reading answers: the
    tool must raise there; ``reason(args)`` says why."""
    for candidate in candidates:
        args: JSONObject = {key: candidate}
        if _refused(d, args):
            return Probe(args=args, oracle_params=args, expect_error=True, reason=reason(args))
    return None


#: Multiples of a threshold tried for :func:`_nothing_selected`, beyond it either way, then zero.
_EMPTYING_LEVELS = (1.5, 2.0, 10.0, 0.1, 0.0)


def _nothing_selected(d: _Deriver, key: str, value: Any) -> Probe | None:
    """For the threshold of a number averaged over the sessions it selects (the mean return after an
    RSI above a level), a derived probe (:func:`derive_probes`): the first level, beyond the task's own
    either way, at which no session qualifies under any accepted reading (an RSI above 105 never is).
    There the average has no value: the tool must raise; one that answers 0.0 ("nothing invested") or
    an empty mean's NaN fails."""
    if d.task.output.type == "boolean" or not _is_threshold(key, value):
        return None
    levels = [round(value * m, 4) for m in _EMPTYING_LEVELS]
    return _must_raise(d, key, [lv for lv in levels if lv != value],
                       lambda args: f"derived: nothing selected at {_words(args)}: no session qualifies under any "
                                    "accepted reading, so there is no average to give: the tool must raise a clear "
                                    "error, never answer 0.0")


def _fraction_level(d: _Deriver, key: str, value: Any, contexts: list[JSONObject]) -> Probe | None:
    """For a threshold above 1 and at most 100 (an RSI level of 70), a derived probe at a level of 1 or
    less -- the task's own as a fraction (0.7), then 1 -- where the answer differs from the answer at a
    hundred times that level: a tool that takes a level of 1 or less for a fraction ("either scale":
    0.7 read as 70) answers the latter, right at every level above 1. A level found where the hundred
    times has an answer is judged with a clear error as right as the value (a tool may refuse a level
    it finds ambiguous; the one that scales it answers a value); one found where the hundred times has
    none (nothing qualifies: the scaling tool raises) only with the value."""
    if not _is_threshold(key, value) or not 1 < value <= 100:
        return None
    def answers(level: float) -> dict[str, JSONValue] | None:  # some readings may refuse a level: the others'
        try:
            values = judged_values(d.task, d.provider, {key: level})
        except InputError:
            return None
        return {k: v for k, v in values.items() if k != OR_RAISES}

    levels = [lv for lv in dict.fromkeys((round(value / 100, 4), 1.0)) if {key: lv} not in contexts]
    unanswered: Probe | None = None
    for level in levels:
        args: JSONObject = {key: level}
        here, scaled = answers(level), answers(level * 100)
        if here is None:
            continue
        if scaled is not None and not _differs(d.task, here, scaled):
            continue
        probe = Probe(args=args, oracle_params=args, may_raise=scaled is not None,
                      reason=f"derived: {_words(args)} is a level of its own, not {level * 100:g} written as a "
                             "fraction: the answers differ there")
        if scaled is not None:
            return probe
        unanswered = unanswered or probe
    return unanswered


def _later(d: _Deriver, key: str, value: Any) -> Probe | None:
    """For a year: the first later one no accepted reading can answer (a fiscal year or quarter not
    reported yet): a tool that answers it with the latest reported period fails; it must raise."""
    if not isinstance(value, int) or isinstance(value, bool) or value < _YEAR_LIKE:
        return None
    return _must_raise(d, key, range(value + 1, value + EDGE_YEARS + 1),
                       lambda args: f"a period not reported yet: {_words(args)} is the first later year the data "
                                    "cannot answer, so the tool must raise a clear error, never answer the latest one")


def _omitted(d: _Deriver, key: str, value: Any) -> Probe | None:
    """An optional argument left out (``None``) where no accepted reading can answer without it (a
    year without its quarter): a tool that fills it in -- the latest quarter, a default -- answers a
    question nobody asked; it must raise."""
    model = PARAMS.get(d.task.oracle.name)
    field = model.model_fields.get(key) if model is not None else None
    if value is None or field is None or field.is_required() or field.default is not None:
        return None  # only an argument the oracle itself lets a caller leave out
    return _must_raise(d, key, [None],
                       lambda _args: f"an argument left out: {key}=None is a question the task's measure cannot "
                                     "answer without it, so the tool must raise a clear error, never fill it in")


def _unanswered_symbol(d: _Deriver, key: str, value: Any) -> Probe | None:
    """For a symbol: the first other one (stocks first) no accepted reading can answer -- an index
    has no statements, a company that never paid or stopped paying has no dividend in the window: a
    tool that answers there from another period (the last dividend before the window) or another
    line fails; it must raise."""
    if not isinstance(value, str) or value not in d.symbols:
        return None
    def stock(symbol: str) -> bool:
        try:
            return d.provider.info(symbol).get("quoteType") == "EQUITY"
        except (LookupError, ValueError):
            return False
    others = [s for s in d.symbols if s != value]
    stocks_first = sorted(others, key=lambda s: not stock(s))  # stable: the snapshot's order within each
    return _must_raise(d, key, stocks_first,
                       lambda args: f"a symbol the data cannot answer: {_words(args)} has nothing the task's "
                                    "measure reads (no statement, no dividend in the window), so the tool must "
                                    "raise a clear error")


def _answering(d: _Deriver, args: JSONObject) -> tuple[int, int]:
    """How many of the task's accepted readings answer ``args`` and how many refuse it (each tried alone)."""
    outcomes = [value for _, value in each_reading(d.task, d.provider, args)]
    refusing = sum(isinstance(value, InputError) for value in outcomes)
    return len(outcomes) - refusing, refusing


def _mixed(d: _Deriver, key: str, value: Any, taken: list[JSONObject]) -> Probe | None:
    """For a lookback: a value of :data:`LOOKBACKS` some accepted readings answer and others refuse --
    a window longer than the lookback the literal reading computes from (which the whole-history
    reading ignores), a calendar window too short for the indicator -- the one the most readings
    refuse, the nearest the task's own value among equals. There a tool passes only with the value of
    an answering reading its other values match, or with a clear error as a refusing reading gives
    (:func:`runner.judging.oracle.judged_values`); a tool that repairs the arguments silently (widens
    the lookback to fit the window) answers what no reading gives, and fails."""
    if key not in LOOKBACKS or not isinstance(value, int) or isinstance(value, bool):
        return None
    best: tuple[int, float, JSONObject] | None = None
    for option in LOOKBACKS[key]:
        args: JSONObject = {key: option}
        if option == value or args in taken:
            continue
        answering, refusing = _answering(d, args)
        if not answering or not refusing:
            continue
        distance = abs(math.log(option / value)) if value > 0 else float(option)
        if best is None or (refusing, -distance) > (best[0], -best[1]):
            best = (refusing, distance, args)
    if best is None:
        return None
    args = best[2]
    return Probe(args=args, oracle_params=args,
                 reason=f"accepted readings part here: {_words(args)} is answered by some and refused by others, "
                        "so the tool must give an answering reading's value (the one its other values match) or "
                        "raise a clear error, never a value no reading gives")


#: The most values a bounded whole-number argument may have for every one of them to be probed (a
#: quarter's four): date arithmetic right for one quarter is often wrong for another.
SMALL_DOMAIN = 4


def _small_domain(d: _Deriver, key: str, value: Any, own: Mapping[str, Any],
                  taken: list[JSONObject]) -> list[Probe]:
    """For a whole-number argument declared with at most :data:`SMALL_DOMAIN` values (a quarter),
    every value the oracle answers: a tool that builds the quarter's end as "the 30th of month 3q,
    then the month's end" is right for Q1 and Q4 and raises for Q2 and Q3, so one other value probed
    is not enough."""
    if not isinstance(value, int) or isinstance(value, bool):
        return []
    low, high = param_bounds(d.task.oracle.name, key)
    if not isinstance(low, int) or not isinstance(high, int) or high - low + 1 > SMALL_DOMAIN:
        return []
    out = []
    for other in range(low, high + 1):
        args: JSONObject = {key: other}
        if other != value and args not in taken and _answers(d, args, own):
            out.append(Probe(args=args, oracle_params=args,
                             reason=f"every value of a small domain: {_words(args)}, as each of "
                                    f"{key}={low}..{high} is asked"))
    return out


#: Sessions of data the short-run probe leaves beyond a :data:`~runner.inputs.oracle_params.Leading`
#: count: KDJ's K and D then run a dozen steps from their seed of 50, which still weighs (2/3)**12 of
#: it, about 1 % -- far above any tolerance -- where the task's own call, hundreds of sessions on, has
#: forgotten any seed. Every accepted reading answers there (the oracle asks the range and both
#: smoothings' periods, six sessions with KDJ(n, 3, 3)).
SHORT_RUN = 12


def _short_run(d: _Deriver, key: str, own: Mapping[str, Any], taken: list[JSONObject]) -> Probe | None:
    """For a count that sets where a recursion seeded at a constant begins (KDJ's range ``n``), the value
    that leaves the data :data:`SHORT_RUN` sessions past it: there the documented seed still shows,
    and a tool that seeds the recursion otherwise (at the first value, as ``ewm(adjust=False)`` does)
    answers another value. A reuse asks that of a stock listed months ago, or of a long range. A clear
    error is as right (:attr:`~runner.inputs.tasks.Probe.may_raise`): a tool may refuse a recursion
    that has not run long enough for its seed to fade, as the reference tool does."""
    if not param_leading(d.task.oracle.name, key):
        return None
    args: JSONObject = {key: _own_sessions(d) - SHORT_RUN}
    if int(args[key]) <= 0 or args in taken or not _answers(d, args, own):
        return None
    return Probe(args=args, oracle_params=args, may_raise=True,
                 reason=f"a short run: {_words(args)} leaves {SHORT_RUN} sessions past the range, where the "
                        "smoothing's documented seed still weighs: its value, or a clear error (a tool may ask "
                        "a warm-up that lets any seed fade); a tool seeding it otherwise answers another value")


def _other_length(d: _Deriver, key: str, value: Any) -> Probe | None:
    """For a list of symbols: one of another length no accepted reading can answer (a pair measure
    asked of three): a tool that silently uses the first items fails; it must raise."""
    if not (isinstance(value, list) and value and all(isinstance(v, str) and v in d.symbols for v in value)):
        return None
    extra = [s for s in d.symbols if s not in value]
    if not extra:
        return None
    args = {key: [*value, extra[0]]}
    if d.expected(args, bounded=False) is not None:
        return None
    return Probe(args=args, oracle_params=args, expect_error=True,
                 reason=f"drawn from the argument space: {_words(args)} is a list the task's measure does not "
                        "take, so the tool must raise a clear error, never answer from part of it")


def probes_for(task: Task, provider: MarketProvider, seed: int | None = None,
               derived: list[Probe] | None = None) -> tuple[Probe, ...]:
    """The task's listed probes, then the derived ones that ask something new (``derived``: already
    computed by :func:`derive_probes`), then (with ``seed``) the ones drawn across the argument
    space (:func:`range_probes`)."""
    listed = list(task.probes)
    seen = [p.args for p in listed]
    derived = derive_probes(task, provider) if derived is None else derived
    taken = [dict(a) for a in seen] + [dict(p.args) for p in derived]
    drawn = range_probes(task, provider, Random(seed), taken) if seed is not None else []
    for probe in [*derived, *drawn]:
        if probe.args not in seen:
            listed.append(probe)
            seen.append(probe.args)
    return tuple(listed)
