"""The one value normaliser: any value -> plain, JSON-shaped Python, by one table of rules.

Three uses, one walk, one table (:data:`RULES`); where the uses must differ the difference is a
field of a named :class:`Policy`, never a second implementation:

* :data:`TOOL` -- a tool's return value, in the sandbox child before it is encoded. Anything that is
  not a clean answer is refused with a typed failure (:class:`ResultRefused`) naming where it sits
  (``value['bands'][3]``): NaN is never turned into ``null``, because that would hide it.
* :data:`ANSWER` -- a value the judge or the agent compares: the oracle's value, a tool's value read
  back. Nothing is refused (the judge explains what is wrong with a value; it never crashes on one):
  a non-finite number stays a float so the judge can call it wrong and say which.
* :data:`RECORD` -- every record that leaves the process as JSON (results.json, events.jsonl, error
  details, registry traces, the snapshot's JSON files): it must always be written, so a missing value
  becomes ``null`` and an unknown object its ``repr``; ``json.dumps(..., allow_nan=False)`` always
  succeeds on the result.

The rules (first column: what a value is; a policy column says how that use treats it when it
differs from "becomes"):

======================================  ============================  ====================================
value                                   becomes                       why
======================================  ============================  ====================================
``None``, ``bool``, ``int``, ``str``    itself                        already JSON; ``bool`` never a number
finite ``float`` / ``Decimal``          ``float``                     JSON has one number type
NaN, +-inf, ``NaT``, ``pandas.NA``      TOOL: refused                 a missing value is no answer; a
                                        ANSWER: float (NaT/NA None)   non-finite number must reach the
                                        RECORD: ``None``              judge as what it is; a record is
                                                                      always written
numpy bool / integer / floating         ``bool`` / ``int`` /          tools return numpy scalars all the
scalar, ``numpy.str_``                  ``float`` / ``str``           time (``a > b`` on two float64)
0-d / 1-d ``numpy.ndarray``,            its scalar / ``list``         one row or column of numbers
``pandas.Index``
n-d ``numpy.ndarray`` (n > 1)           TOOL: refused, else rows      an answer is one row or column
``pandas.Series`` indexed by text       ``dict`` in the Series order  labelled values are a dict
``pandas.Series`` indexed by dates      ``list`` oldest first         "the last 20 days" is a list in
                                                                      time order, whatever the index order
other ``pandas.Series``                 ``list`` in order             positions carry no meaning
``date``, ``datetime``, ``Timestamp``,  ISO date; ISO date-time when  a daily bar's date is its day
``numpy.datetime64``                    not midnight. RECORD: the
                                        value's own ``isoformat()``   a record keeps what it was given
``time``                                TOOL: refused, else ISO text  no answer is a time of day
``list``, ``tuple``                     ``list``, in order
``dict`` (``OrderedDict``,              ``dict``; keys: text, an int  JSON keys are text, written as JSON
``defaultdict``, ``Counter``)           as its digits, a date as ISO  writes them
                                        TOOL: other keys and two keys
                                        with the same text refused;
                                        else JSON text, later wins
``set``, ``frozenset``                  TOOL: refused; RECORD: list   its order is undefined
                                        sorted by JSON text
``bytes``                               TOOL: refused; RECORD: UTF-8  text, not bytes, is an answer
nested deeper than the depth bound      TOOL: refused; else a text    ends self-referencing containers
more than :data:`MAX_ITEMS` values or   TOOL: refused                 a result must fit the channel
:data:`MAX_TEXT` characters
anything else (DataFrame, generator,    TOOL: refused (with a hint)   no JSON form
module, complex, timedelta...)          ANSWER: itself; RECORD: repr
a *subclass* of any type above          TOOL: refused; else its base  a tool's subclass could override
                                        type's rule                   any method
======================================  ============================  ====================================

Safety (what makes it fit to run next to tool code): it decides by *exact* type, by a lookup in the
rule table (``type(x) is float``), never by ``isinstance``, so no method a tool could override on
its own subclass (``__iter__``, ``items``, ``__float__``, ``__repr__``, ``isoformat``) is called
under :data:`TOOL`; it walks the value with an explicit stack (no recursion, whatever the depth) and
checks sizes before it copies anything. Only :data:`RECORD` and :data:`ANSWER`, which see the
project's own values, follow a subclass to its base type's rule and call ``repr`` on what is left.
"""

from __future__ import annotations

import collections
import datetime as _dt
import json
import math
import types
import zoneinfo
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from finevo.limits import MAX_DEPTH, MAX_ITEMS, MAX_TEXT
from finevo.market import frozen_clock

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

__all__ = ["ANSWER", "MAX_DEPTH", "MAX_ITEMS", "MAX_TEXT", "RECORD", "REFUSALS", "RULES", "TOOL", "Policy",
           "ResultRefused", "Rule", "normalize", "type_name"]



@dataclass(frozen=True)
class Policy:
    """How one use of the normaliser treats the values where uses differ (see the module's table)."""

    name: str
    #: NaN, +-inf, NaT, pandas.NA: refuse (typed failure), keep (a float; NaT/NA -> None) or null.
    missing: Literal["refuse", "keep", "null"]
    #: A value no rule matches: refuse, keep it as it is, or its repr.
    foreign: Literal["refuse", "keep", "repr"]
    #: Dates and times: "day" (ISO date, date-time only when not midnight) or "iso" (isoformat()).
    dates: Literal["day", "iso"]
    #: Whether the project's own conveniences apply (subclasses follow their base type's rule; sets,
    #: bytes, times and n-d arrays have a form; other keys become JSON text). Never for tool values.
    lenient: bool
    #: Whether MAX_ITEMS / MAX_TEXT bound the value (a tool result must fit the channel).
    bounded: bool


TOOL = Policy("tool", missing="refuse", foreign="refuse", dates="day", lenient=False, bounded=True)
ANSWER = Policy("answer", missing="keep", foreign="keep", dates="day", lenient=True, bounded=False)
RECORD = Policy("record", missing="null", foreign="repr", dates="iso", lenient=True, bounded=False)


#: The ``error_type`` of every :class:`ResultRefused`: the ways a return value can fail to cross the
#: sandbox's boundary. The supervisor records such a run on layer ``result`` with one of these types;
#: a run that died on that layer without a value (no result, a harness failure) carries none of them.
REFUSALS = frozenset({"ResultShape", "ResultNotFinite", "ResultTooDeep", "ResultTooLarge"})


class ResultRefused(Exception):
    """The value cannot be normalised under :data:`TOOL`; ``error_type`` names the class of problem
    (one of :data:`REFUSALS`)."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


# --------------------------------------------------------------------------- types, read once
_NP_INTEGERS = frozenset(t for t in set(np.sctypeDict.values()) if issubclass(t, np.integer))
_NP_FLOATS = frozenset(t for t in set(np.sctypeDict.values()) if issubclass(t, np.floating))
_DICTS = frozenset({dict, collections.OrderedDict, collections.defaultdict, collections.Counter})
_SEQUENCES = frozenset({list, tuple})
_INDEXES = frozenset({pd.Index, pd.DatetimeIndex, pd.RangeIndex})
# The real classes, whatever the frozen clock has put in their modules' namespaces since.
_DATE = frozen_clock._REAL_DATE
_DATETIME = frozen_clock._REAL_DATETIME
_TIMESTAMP = type(pd.Timestamp(0))
#: Date-only types and date-time types (the frozen clock's stand-ins build instances of their own).
_DATES = frozenset({_DATE, frozen_clock.FrozenDate})
_DATETIMES = frozenset({_DATETIME, frozen_clock.FrozenDatetime, _TIMESTAMP})
_DATE_TYPES: frozenset[type] = frozenset({_DATE, frozen_clock.FrozenDate, _DATETIME, frozen_clock.FrozenDatetime,
                                          _TIMESTAMP})
_ISOFORMAT_DATE = _DATE.isoformat
#: A date-time's zone, read from the object itself (no property of a subclass runs).
_ZONE_OF = _DATETIME.__dict__["tzinfo"].__get__
#: The zones a date-time may carry: the standard library's own, whose offsets the interpreter
#: computes. Writing the text calls the zone's ``utcoffset``: a zone of the tool's own class would run
#: its code there, after the tool returned, and could give one value three instants.
_ZONES = (_dt.timezone, zoneinfo.ZoneInfo)
_ISOFORMAT_DATETIME = _DATETIME.isoformat
_ISOFORMAT_TIMESTAMP = _TIMESTAMP.isoformat
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_TYPE_MODULE = type.__dict__["__module__"]
#: Hints for the types tools return most often by mistake.
_HINTS: dict[type, str] = {
    pd.DataFrame: "return a number, a list or a dict (e.g. one column's values, or .iloc[-1])",
    set: "its order is undefined; return a sorted list",
    frozenset: "its order is undefined; return a sorted list",
    types.GeneratorType: "return a list",
    bytes: "return text",
    complex: "return a real number",
    _dt.timedelta: "return a number (of days, seconds...)",
    pd.Timedelta: "return a number (of days, seconds...)",
    np.timedelta64: "return a number (of days, seconds...)",
}


def type_name(value: Any) -> str:
    """``module.QualName`` of ``value``'s type, read without calling anything of the type."""
    cls = type(value)
    try:
        qualname = _TYPE_QUALNAME.__get__(cls, type)
        module = _TYPE_MODULE.__get__(cls, type)
    except Exception:  # pragma: no cover - a C type without these descriptors
        return "<unknown type>"
    if not isinstance(qualname, str) or type(qualname) is not str:
        qualname = "<unnamed>"
    if type(module) is not str or module in ("builtins", "tool", "__main__"):
        return qualname[:80]
    return f"{module}.{qualname}"[:120]


# --------------------------------------------------------------------------- where a value sits
class _Place:
    """A node of the path from the top of the value; rendered only for a message."""

    __slots__ = ("key", "parent")

    def __init__(self, parent: _Place | None, key: Any) -> None:
        self.parent = parent
        self.key = key

    def render(self) -> str:
        keys: list[Any] = []
        node: _Place | None = self
        while node is not None and node.parent is not None:
            keys.append(node.key)
            node = node.parent
        keys.reverse()
        if len(keys) > 12:  # a deep path: its start and its end say enough
            keys = [*keys[:6], "...", *keys[-5:]]
        parts: list[str] = []
        for key in keys:
            if key == "..." and type(key) is str and len(parts) == 6:
                parts.append("...")
                continue
            if type(key) is str:
                text = key if len(key) <= 40 else key[:37] + "..."
                parts.append("[" + repr(text) + "]")
            else:
                parts.append(f"[{key}]")
        return "value" + "".join(parts)


_TOP = _Place(None, None)


class _Missing(Exception):
    """A missing or non-finite value, raised by a rule; the policy decides what it becomes."""

    def __init__(self, what: str, kept: Any) -> None:
        super().__init__(what)
        self.what = what
        self.kept = kept  # what ANSWER keeps: the float itself, or None for NaT / NA


def _not_finite(place: _Place, what: str) -> ResultRefused:
    return ResultRefused("ResultNotFinite",
                         f"{place.render()} is {what}: a missing or non-finite value is never a "
                         "valid answer (too little data should raise an error)")


def _shape(place: _Place, message: str) -> ResultRefused:
    return ResultRefused("ResultShape", f"{place.render()} {message}")


# --------------------------------------------------------------------------- scalar rules
def _iso(value: Any, cls: type, policy: Policy) -> str:
    """A date or date-time as ISO text by the policy's ``dates`` style."""
    if policy.dates == "iso":
        if cls is _TIMESTAMP:
            return str(_ISOFORMAT_TIMESTAMP(value))
        return str(_ISOFORMAT_DATETIME(value) if cls in _DATETIMES else _ISOFORMAT_DATE(value))
    if cls in _DATES:
        return str(_ISOFORMAT_DATE(value))
    day = _DATE(value.year, value.month, value.day)
    if cls is _TIMESTAMP:
        midnight = (value.hour, value.minute, value.second, value.microsecond, value.nanosecond) == (0,) * 5
        return str(_ISOFORMAT_DATE(day) if midnight else _ISOFORMAT_TIMESTAMP(value))
    midnight = (value.hour, value.minute, value.second, value.microsecond) == (0, 0, 0, 0)
    return str(_ISOFORMAT_DATE(day) if midnight else _ISOFORMAT_DATETIME(value))


def _text(value: str, place: _Place, policy: Policy) -> str:
    if value.isascii() or policy.lenient:  # a record's JSON writer escapes a lone surrogate (\udxxx)
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise _shape(place, "holds text with a lone UTF-16 surrogate (not valid Unicode); "
                            "return valid text") from None
    return value


def _float(value: Any, place: _Place, policy: Policy) -> Any:
    number = float(value)
    if math.isfinite(number):
        return number
    raise _Missing(repr(number), number)


def _int(value: Any, place: _Place, policy: Policy) -> Any:
    number = int(value)
    if not policy.lenient and number.bit_length() > 4000 * 3:  # beyond what JSON text of an int may hold here
        raise _shape(place, "is an integer with more than 3600 digits")
    return number


def _decimal(value: Any, place: _Place, policy: Policy) -> Any:
    if value.is_finite():
        number = float(value)
        if math.isfinite(number):
            return number
    raise _Missing(f"Decimal({str(value)!r})", float(value))


def _datetime64(value: Any, place: _Place, policy: Policy) -> str:
    if np.isnat(value):
        raise _Missing("NaT", None)
    if policy.dates == "iso":
        return str(value)  # numpy's own ISO text, at the value's own precision
    moment = value.astype("datetime64[us]").item()
    if type(moment) is _DATETIME:
        return _iso(moment, _DATETIME, policy)
    if type(moment) is _DATE:
        return str(_ISOFORMAT_DATE(moment))
    raise _shape(place, "is a numpy.datetime64 outside the years 1..9999")


def _nat(value: Any, place: _Place, policy: Policy) -> Any:
    raise _Missing("NaT" if type(value) is _NAT_TYPE else "pandas.NA", None)


def _time(value: Any, place: _Place, policy: Policy) -> Any:
    if not policy.lenient:
        return _foreign(value, type(value), place, policy)
    return value.isoformat()


def _set(value: Any, place: _Place, policy: Policy) -> Any:
    if not policy.lenient:
        return _foreign(value, type(value), place, policy)
    items = [normalize(item, policy) for item in value]
    items.sort(key=lambda item: json.dumps(item, sort_keys=True))
    return items


def _bytes(value: Any, place: _Place, policy: Policy) -> Any:
    if policy.name != "record":
        return _foreign(value, type(value), place, policy)
    return bytes(value).decode("utf-8", errors="replace")


_NAT_TYPE = type(pd.NaT)
_NA_TYPE = type(pd.NA)
Convert = Callable[[Any, _Place, Policy], Any]


@dataclass(frozen=True)
class Rule:
    """One row of the table: the types it matches, how a value of them becomes plain, and why."""

    name: str
    types: frozenset[type]
    convert: Convert | None  # None: the value is a container, walked by :func:`normalize`
    reason: str


def _same(value: Any, place: _Place, policy: Policy) -> Any:
    return value


def _str(value: Any, place: _Place, policy: Policy) -> Any:
    return _text(str.__str__(value), place, policy)


def _bool(value: Any, place: _Place, policy: Policy) -> Any:
    return bool(value)


def _date(value: Any, place: _Place, policy: Policy) -> Any:
    if issubclass(type(value), _DATETIME):  # by the type's own lineage: no __class__ of the value's is read
        zone = _ZONE_OF(value)
        if zone is not None and not any(type(zone) is known for known in _ZONES):
            raise _shape(place, "is a date-time whose time zone is of a class of its own (only datetime.timezone "
                                "and zoneinfo.ZoneInfo are read); return ISO text or a date-time in one of those")
    return _iso(value, type(value) if type(value) in _DATE_TYPES else _base_date(value), policy)


def _base_date(value: Any) -> type:
    """A subclass of date / datetime (RECORD, ANSWER only) follows its base class's style."""
    return _DATETIME if isinstance(value, _dt.datetime) else _DATE


#: The table. Lookup is by exact type; under a lenient policy a subclass follows the first rule
#: that names one of its base classes.
RULES: tuple[Rule, ...] = (
    Rule("none", frozenset({type(None)}), _same, "JSON null"),
    Rule("bool", frozenset({bool}), _bool, "JSON true/false; a bool is never a number"),
    Rule("int", frozenset({int}), _int, "JSON number; bounded in length for tool values"),
    Rule("float", frozenset({float}), _float, "JSON number; NaN and infinities have no JSON form"),
    Rule("text", frozenset({str, np.str_}), _str, "JSON text; a lone surrogate is not Unicode"),
    Rule("numpy bool", frozenset({np.bool_}), _bool, "tools compare numpy floats: the result is numpy.bool_"),
    Rule("numpy integer", _NP_INTEGERS, _int, "numpy scalars are numbers"),
    Rule("numpy floating", _NP_FLOATS, _float, "numpy scalars are numbers"),
    Rule("decimal", frozenset({Decimal}), _decimal, "JSON has one number type"),
    Rule("date", _DATE_TYPES, _date,
         "a daily bar's date is its day; ISO 8601 is JSON's usual date text"),
    Rule("numpy datetime64", frozenset({np.datetime64}), _datetime64, "dates, by the date rule"),
    Rule("missing", frozenset({_NAT_TYPE, _NA_TYPE}), _nat, "pandas' missing-value markers"),
    Rule("time", frozenset({_dt.time}), _time, "ISO text; no answer is a time of day"),
    Rule("set", frozenset({set, frozenset}), _set, "an undefined order: sorted by JSON text in records"),
    Rule("bytes", frozenset({bytes, bytearray}), _bytes, "records hold text"),
    Rule("sequence", _SEQUENCES, None, "JSON array, in order"),
    Rule("mapping", _DICTS, None, "JSON object; keys are text"),
    Rule("numpy array", frozenset({np.ndarray}), None, "0-d: its scalar; 1-d: a list; n-d: rows"),
    Rule("pandas Series", frozenset({pd.Series}), None, "dict by text labels, dates oldest first, else list"),
    Rule("pandas Index", _INDEXES, None, "a list of its labels"),
)
_BY_TYPE: dict[type, Rule] = {cls: rule for rule in RULES for cls in rule.types}


def _rule_for(cls: type, policy: Policy) -> Rule | None:
    rule = _BY_TYPE.get(cls)
    if rule is not None or not policy.lenient:
        return rule
    for base in cls.__mro__[1:]:
        rule = _BY_TYPE.get(base)
        if rule is not None:
            return rule
    return None


def _foreign(value: Any, cls: type, place: _Place, policy: Policy) -> Any:
    """A value no rule matches (or one a strict policy refuses)."""
    if policy.foreign == "keep":
        return value
    if policy.foreign == "repr":
        try:
            return repr(value)
        except Exception:
            return f"<unrepresentable {type(value).__name__}>"
    hint = _HINTS.get(cls)
    name = type_name(value)
    if hint is None:
        kind = "a module" if cls is types.ModuleType else f"of type {name}"
        raise _shape(place, f"is {kind}, which has no JSON form; return a number, a bool, text, a list or a dict")
    raise _shape(place, f"is a {name}: {hint}")


def _scalar(value: Any, cls: type, place: _Place, policy: Policy) -> Any:
    rule = _rule_for(cls, policy)
    if rule is None or rule.convert is None:
        return _foreign(value, cls, place, policy)
    try:
        return rule.convert(value, place, policy)
    except _Missing as missing:
        if policy.missing == "refuse":
            raise _not_finite(place, missing.what) from None
        return missing.kept if policy.missing == "keep" else None


# --------------------------------------------------------------------------- arrays and Series
def _array_items(array: np.ndarray, place: _Place, policy: Policy) -> list[Any]:
    """The elements of a 1-d array: plain for numeric/bool/text dtypes, else numpy/pandas objects."""
    kind = array.dtype.kind
    if kind == "f":
        finite = np.isfinite(array)
        if not finite.all():
            if policy.missing == "refuse":
                index = int(np.argmin(finite))
                raise _not_finite(_Place(place, index), repr(float(array[index])))
            return list(array.astype(np.float64))  # numpy floats, each by the float rule
        return array.astype(np.float64).tolist()  # type: ignore[no-any-return]
    if kind in "biuU":
        return array.tolist()  # type: ignore[no-any-return]
    if kind == "M":
        return list(array)  # numpy.datetime64 scalars, converted one by one
    if kind == "O" or policy.lenient:
        return array.tolist()  # type: ignore[no-any-return]  # the objects themselves, no method called
    raise _shape(place, f"is a numpy array of dtype {array.dtype} (complex, timedelta, bytes or records); "
                        "return numbers or text")


def _as_1d(array: np.ndarray, place: _Place, what: str, policy: Policy) -> np.ndarray | None:
    """``array`` when it is 1-d; None for an n-d array a lenient policy turns into rows."""
    if array.ndim == 1:
        return array
    if policy.lenient:
        return None
    raise _shape(place, f"is a {array.ndim}-dimensional {what}; return a list (one row or column) or a dict")


def _series_labels(series: pd.Series, place: _Place, policy: Policy) -> tuple[str, list[Any] | np.ndarray | None]:
    """How a Series' index shapes it: ("dict", labels), ("dates", order) or ("list", None)."""
    index = series.index
    index_cls = type(index)
    if index_cls is pd.MultiIndex:
        if policy.lenient:
            return "list", None
        raise _shape(place, "is a Series with a MultiIndex; return a dict or a list of records")
    if index_cls is pd.DatetimeIndex:
        stamps = index.asi8
        if len(stamps) and (stamps == np.iinfo(np.int64).min).any():
            if not policy.lenient:
                raise _not_finite(place, "a Series indexed by dates with a NaT label")
            return "list", None
        return "dates", np.argsort(stamps, kind="stable")
    if index_cls is not pd.Index or (index.dtype.kind not in "OU" and str(index.dtype) != "str"):
        return "list", None
    labels = index.tolist()
    if not labels:
        return "list", None
    kinds = {type(label) for label in labels}
    if kinds <= {str, np.str_}:
        return "dict", labels
    if kinds <= _DATES | _DATETIMES:
        try:  # naive wall time of each label orders them (a mixed-zone index is unusual)
            keys = [_DATETIME(label.year, label.month, label.day) if type(label) in _DATES
                    else _DATETIME(label.year, label.month, label.day, label.hour, label.minute,
                                   label.second, label.microsecond) for label in labels]
            return "dates", np.argsort(np.array(keys, dtype="datetime64[us]"), kind="stable")
        except (TypeError, ValueError, OverflowError):
            pass
    return "list", None


def _children(obj: Any, cls: type, place: _Place, policy: Policy,
              budget: float) -> tuple[list[Any] | None, list[Any] | None]:
    """(keys or None, children) of a container, or (None, None) when ``obj`` is not one."""
    # Sizes are checked before anything is copied: refusing a container of 50 million values
    # costs nothing, where copying it first doubled the child's memory and took most of a second.
    if cls in _SEQUENCES:
        if (list.__len__(obj) if cls is list else tuple.__len__(obj)) > budget:
            raise _too_large(place)
        return None, (list(list.__iter__(obj)) if cls is list else list(tuple.__iter__(obj)))
    if cls in _DICTS:
        if dict.__len__(obj) > budget:
            raise _too_large(place)
        items = list(dict.items(obj))
        return [k for k, _ in items], [v for _, v in items]
    if cls is np.ndarray:
        if obj.size > budget:
            raise _too_large(place)
        flat = _as_1d(obj, place, "numpy array", policy)
        return None, (list(obj) if flat is None else _array_items(flat, place, policy))
    if cls is pd.Series:
        if len(obj) > budget:
            raise _too_large(place)
        shape, labels = _series_labels(obj, place, policy)
        array = np.asarray(obj.to_numpy())
        flat = _as_1d(array, place, "Series", policy)
        values = list(array) if flat is None else _array_items(flat, place, policy)
        if shape == "dates":
            assert isinstance(labels, np.ndarray)
            return None, [values[i] for i in labels.tolist()]
        if shape == "dict":
            return list(labels or ()), values
        return None, values
    if cls in _INDEXES:
        if len(obj) > budget:
            raise _too_large(place)
        array = np.asarray(obj.to_numpy())
        flat = _as_1d(array, place, "Index", policy)
        return None, (list(array) if flat is None else _array_items(flat, place, policy))
    if policy.lenient and _rule_for(cls, policy) is not None:
        rule = _rule_for(cls, policy)
        assert rule is not None
        if rule.convert is None:  # a subclass of a container type: its base class's walk
            base = next(c for c in cls.__mro__ if c in _BY_TYPE)
            return _children(obj, base, place, policy, budget)
    return None, None


# --------------------------------------------------------------------------- the walk
def normalize(value: Any, policy: Policy, *, max_depth: int = MAX_DEPTH) -> Any:
    """``value`` as plain JSON-shaped Python by :data:`RULES` under ``policy``.

    Raises :class:`ResultRefused` under :data:`TOOL` only. ``max_depth`` bounds the nesting (a
    container deeper than that is refused under TOOL, else replaced by a short text).
    """
    budget: float = MAX_ITEMS if policy.bounded else math.inf
    text_budget: float = MAX_TEXT if policy.bounded else math.inf
    holder: list[Any] = [None]
    # Work items: (object, container to fill, key in it, depth of the object, where it sits)
    stack: list[tuple[Any, Any, Any, int, _Place]] = [(value, holder, 0, 0, _TOP)]
    while stack:
        obj, target, slot, depth, place = stack.pop()
        budget -= 1
        cls = type(obj)
        if cls is np.ndarray and obj.ndim == 0:
            stack.append((obj[()], target, slot, depth, place))
            budget += 1
            continue
        keys, children = _children(obj, cls, place, policy, budget)
        if children is None:  # a scalar
            plain = _scalar(obj, cls, place, policy)
            if type(plain) is str:
                text_budget -= len(plain)
                if text_budget < 0:
                    raise _too_large(place)
            target[slot] = plain
            continue
        if depth >= max_depth:
            if not policy.lenient:
                raise ResultRefused("ResultTooDeep", f"{place.render()} nests containers more than "
                                                     f"{max_depth} levels deep")
            target[slot] = f"<nested deeper than {max_depth} levels>"
            continue
        if len(children) > budget:
            raise _too_large(place)
        if keys is None:
            target[slot], placed = _list_node(children, depth, place, stack)
            budget -= placed
        else:
            target[slot], key_text = _dict_node(keys, children, depth, place, stack, policy)
            text_budget -= key_text
            if text_budget < 0:
                raise _too_large(place)
        if budget < 0:
            raise _too_large(place)
    if budget < 0:
        raise _too_large(_TOP)
    return holder[0]


def _list_node(children: list[Any], depth: int, place: _Place,
               stack: list[tuple[Any, Any, Any, int, _Place]]) -> tuple[list[Any], int]:
    """A new list for a sequence's ``children``, its plain numbers filled in and the rest queued;
    and how many values were filled in (they count against the item budget)."""
    out: list[Any] = [None] * len(children)
    placed = 0
    for i in range(len(children) - 1, -1, -1):
        child = children[i]
        child_cls = type(child)
        if (child_cls is float and math.isfinite(child)) or child_cls is bool or (
                child_cls is int and child.bit_length() <= 12000):
            out[i] = child  # the common case (a list of numbers), without a stack round trip
            placed += 1
        else:
            stack.append((child, out, i, depth + 1, _Place(place, i)))
    return out, placed


def _dict_node(keys: list[Any], children: list[Any], depth: int, place: _Place,
               stack: list[tuple[Any, Any, Any, int, _Place]], policy: Policy) -> tuple[JSONObject, int]:
    """A new dict with its keys filled in and its values queued; and the characters of text its keys hold."""
    out: JSONObject = {}
    names: list[str] = []
    text = 0
    for key in keys:
        name = _key(key, place, policy)
        text += len(name)
        if name in out and not policy.lenient:
            raise _shape(place, f"has two keys that both read {name[:40]!r}")
        out[name] = None
        names.append(name)
    last = {name: i for i, name in enumerate(names)}
    for i in range(len(children) - 1, -1, -1):
        if last[names[i]] != i:
            continue  # two keys with the same text (lenient only): the later one wins, as a JSON reader's
        stack.append((children[i], out, names[i], depth + 1, _Place(place, names[i])))
    return out, text


def _key(key: Any, place: _Place, policy: Policy) -> str:
    """A dict key as JSON text: text itself, an integer its digits, a date ISO; else (lenient) JSON text."""
    cls = type(key)
    if cls is str:
        return _text(key, place, policy)
    if cls is np.str_:
        return _text(str(key), place, policy)
    if cls is int or cls in _NP_INTEGERS:
        return str(int(key))
    if cls in _DATES or cls in _DATETIMES:
        return _iso(key, cls, policy)
    if cls is np.datetime64:
        return _scalar(key, cls, place, TOOL if not policy.lenient else policy) or "null"
    if not policy.lenient:
        raise _shape(place, f"has a key of type {type_name(key)}; dict keys must be text, integers or dates")
    plain = normalize(key, policy)
    return plain if isinstance(plain, str) else json.dumps(plain, sort_keys=True)


def _too_large(place: _Place) -> ResultRefused:
    return ResultRefused("ResultTooLarge", f"the return value is too large at {place.render()} "
                                           f"(more than {MAX_ITEMS} values or {MAX_TEXT} characters "
                                           "of text)")
