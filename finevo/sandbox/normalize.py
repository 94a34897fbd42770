"""The one place where a tool's return value becomes plain JSON: run in the sandbox child, before encoding.

LLM-written tools return numpy and pandas objects all the time (``a > b and c < d`` on two
``numpy.float64`` is a ``numpy.bool_``; ``ma.tail(20)`` is a Series). :func:`to_plain` turns the
values a careful analyst would accept as the answer into plain Python, and refuses everything else
with a one-line message naming the type and where it sits (``value['bands'][3]``).

The rules (README "Security: policy and sandbox" and ``benchmarks/README.md`` point here):

========================================  ==========================================================
returned                                  becomes
========================================  ==========================================================
``None``, ``bool``, ``int``, ``str``      itself (``bool`` stays ``bool``: never a number)
finite ``float`` / ``decimal.Decimal``    ``float``
``numpy.bool_``                           ``bool``
numpy integer / floating scalar           ``int`` / ``float``
``numpy.str_``                            ``str``
0-d ``numpy.ndarray``                     its scalar, by these rules
1-d ``numpy.ndarray``, ``pandas.Index``   ``list`` (element by element, by these rules)
``pandas.Series`` indexed by strings      ``dict`` ``{label: value}`` in the Series' order
``pandas.Series`` indexed by dates        ``list`` of its values in ascending date order
other ``pandas.Series`` (RangeIndex...)   ``list`` of its values in the Series' order
``date``, ``datetime``, ``Timestamp``,    ISO date ``"2024-12-31"``; with a time of day other than
``numpy.datetime64``                      midnight the ISO date-time (``"2024-12-31T16:00:00-05:00"``)
``list``, ``tuple``                       ``list``
``dict`` (also ``OrderedDict``,           ``dict``; keys must be ``str`` (``numpy.str_``), ``int``
``defaultdict``, ``Counter``)             (becomes its decimal text, as JSON does) or a date (ISO)
========================================  ==========================================================

Refused, each as a typed failure of the tool (never a crash of the gate):

* **not finite** (``ResultNotFinite``): NaN, +-inf, ``pandas.NA`` and ``NaT`` anywhere in the
  value. JSON has no NaN, and turning it into ``null`` would hide it: the judge treats a
  non-finite number as wrong, the failure says where it is so the tool can be fixed;
* **shape** (``ResultShape``): anything else -- a DataFrame, a 2-d array, a set, a generator,
  a module, bytes, complex numbers, timedeltas, a Series with a MultiIndex, a dict key that is
  neither text, integer nor date, two keys with the same text, a lone UTF-16 surrogate in text,
  and every *subclass* of the types above defined by the tool;
* **too deep** (``ResultTooDeep``): containers nested more than :data:`MAX_DEPTH` levels;
* **too large** (``ResultTooLarge``): more than :data:`MAX_ITEMS` values in all, or more than
  :data:`MAX_TEXT` characters of text.

This is stricter than :func:`finevo.jsonsafe.json_safe`, the rule for the reports the project
writes (there NaN becomes ``null`` and an unknown object its ``repr``): a report must always be
written, while an answer that is not a clean value must fail, saying why.

A date-indexed Series becomes a list because the tasks that want several values want them in
time order (a moving average "over the last 20 days" is a list); its dates order it (oldest first,
as yfinance delivers them), and a tool that wants the dates returns a dict or records explicitly.

Safety: this runs in the child, next to tool code. It decides by *exact* type
(``type(x) is float``, numpy/pandas types by their own classes), never by ``isinstance``, so no
method a tool could override on its own subclass (``__iter__``, ``items``, ``__float__``,
``__repr__``, ``isoformat``) is ever called; it walks the value with an explicit stack (no
recursion, whatever the depth) and checks sizes before it copies anything.
"""

from __future__ import annotations

import collections
import datetime as _dt
import math
import types
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from finevo.jsonsafe import MAX_DEPTH as JSON_MAX_DEPTH
from finevo.market import frozen_clock

__all__ = ["MAX_DEPTH", "MAX_ITEMS", "MAX_TEXT", "ResultRefused", "to_plain"]

#: Containers nested deeper than this are refused (real results are 1-3 levels deep); the same
#: bound as the JSON rule for reports.
MAX_DEPTH = JSON_MAX_DEPTH
#: Values (scalars and containers) in one result, at most.
MAX_ITEMS = 1_000_000
#: Characters of text (strings and keys) in one result, at most.
MAX_TEXT = 4 * 1024 * 1024


class ResultRefused(Exception):
    """The return value cannot cross the boundary; ``error_type`` names the class of problem."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.message = message


_NP_BOOL = np.bool_
_NP_INTEGERS = frozenset(t for t in set(np.sctypeDict.values()) if issubclass(t, np.integer))
_NP_FLOATS = frozenset(t for t in set(np.sctypeDict.values()) if issubclass(t, np.floating))
_NP_DATETIME = np.datetime64
_DICTS = frozenset({dict, collections.OrderedDict, collections.defaultdict, collections.Counter})
_SEQUENCES = frozenset({list, tuple})
_NAT_TYPE = type(pd.NaT)
_NA_TYPE = type(pd.NA)
# The real classes, whatever the frozen clock has put in their modules' namespaces since.
_DATE = frozen_clock._REAL_DATE
_DATETIME = frozen_clock._REAL_DATETIME
_TIMESTAMP = type(pd.Timestamp(0))
#: Date-only types and date-time types (the frozen clock's stand-ins build instances of their own).
_DATES = frozenset({_DATE, frozen_clock.FrozenDate})
_DATETIMES = frozenset({_DATETIME, frozen_clock.FrozenDatetime, _TIMESTAMP})
_ISOFORMAT_DATE = _DATE.isoformat
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


# --------------------------------------------------------------------------- scalars
def _iso(value: Any, cls: type) -> str:
    """ISO date, or ISO date-time when the time of day is not midnight (in the value's own zone)."""
    if cls in _DATES:
        return _ISOFORMAT_DATE(value)
    day = _DATE(value.year, value.month, value.day)
    if cls is _TIMESTAMP:
        midnight = (value.hour, value.minute, value.second, value.microsecond, value.nanosecond) == (0,) * 5
        return _ISOFORMAT_DATE(day) if midnight else _ISOFORMAT_TIMESTAMP(value)
    midnight = (value.hour, value.minute, value.second, value.microsecond) == (0, 0, 0, 0)
    return _ISOFORMAT_DATE(day) if midnight else _ISOFORMAT_DATETIME(value)


def _text(value: str, place: _Place) -> str:
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ResultRefused("ResultShape", f"{place.render()} holds text with a lone UTF-16 surrogate "
                                           "(not valid Unicode); return valid text") from None
    return value


def _not_finite(place: _Place, what: str) -> ResultRefused:
    return ResultRefused("ResultNotFinite",
                         f"{place.render()} is {what}: a missing or non-finite value is never a "
                         "valid answer (too little data should raise an error)")


def _datetime64(value: Any, place: _Place) -> str:
    if np.isnat(value):
        raise _not_finite(place, "NaT")
    moment = value.astype("datetime64[us]").item()
    if type(moment) is _DATETIME:
        return _iso(moment, _DATETIME)
    if type(moment) is _DATE:
        return _ISOFORMAT_DATE(moment)
    raise ResultRefused("ResultShape", f"{place.render()} is a numpy.datetime64 outside the years "
                                       "1..9999")


def _scalar(value: Any, cls: type, place: _Place) -> Any:
    """A non-container value as plain Python, or raise :class:`ResultRefused`."""
    if cls is float:
        if math.isfinite(value):
            return value
        raise _not_finite(place, repr(value))
    if value is None or cls is bool:
        return value
    if cls is int:
        if value.bit_length() > 4000 * 3:  # beyond what JSON text of an int may hold here
            raise ResultRefused("ResultShape", f"{place.render()} is an integer with more than "
                                               "3600 digits")
        return value
    if cls is str:
        return _text(value, place)
    if cls is _NP_BOOL:
        return bool(value)
    if cls in _NP_FLOATS:
        number = float(value)
        if math.isfinite(number):
            return number
        raise _not_finite(place, repr(number))
    if cls in _NP_INTEGERS:
        return int(value)
    if cls is np.str_:
        return _text(str(value), place)
    if cls in _DATES or cls in _DATETIMES:
        return _iso(value, cls)
    if cls is _NP_DATETIME:
        return _datetime64(value, place)
    if cls is Decimal:
        if value.is_finite():
            number = float(value)
            if math.isfinite(number):
                return number
        raise _not_finite(place, f"Decimal({str(value)!r})")
    if cls is _NAT_TYPE:
        raise _not_finite(place, "NaT")
    if cls is _NA_TYPE:
        raise _not_finite(place, "pandas.NA")
    hint = _HINTS.get(cls)
    name = type_name(value)
    if hint is None:
        kind = "a module" if cls is types.ModuleType else f"of type {name}"
        raise ResultRefused("ResultShape", f"{place.render()} is {kind}, which has no JSON form; "
                                           "return a number, a bool, text, a list or a dict")
    raise ResultRefused("ResultShape", f"{place.render()} is a {name}: {hint}")


# --------------------------------------------------------------------------- arrays and Series
def _array_items(array: np.ndarray, place: _Place) -> list[Any]:
    """The elements of a 1-d array: plain for numeric/bool/text dtypes, else numpy/pandas objects."""
    kind = array.dtype.kind
    if kind == "f":
        finite = np.isfinite(array)
        if not finite.all():
            index = int(np.argmin(finite))
            raise _not_finite(_Place(place, index), repr(float(array[index])))
        return array.astype(np.float64).tolist()  # type: ignore[no-any-return]
    if kind in "biuU":
        return array.tolist()  # type: ignore[no-any-return]
    if kind == "M":
        return list(array)  # numpy.datetime64 scalars, converted one by one
    if kind == "O":
        return array.tolist()  # type: ignore[no-any-return]  # the objects themselves, no method called
    raise ResultRefused("ResultShape", f"{place.render()} is a numpy array of dtype {array.dtype} "
                                       "(complex, timedelta, bytes or records); return numbers or text")


def _as_1d(array: np.ndarray, place: _Place, what: str) -> np.ndarray:
    if array.ndim != 1:
        raise ResultRefused("ResultShape", f"{place.render()} is a {array.ndim}-dimensional {what}; "
                                           "return a list (one row or column) or a dict")
    return array


def _series_labels(series: pd.Series, place: _Place) -> tuple[str, list[Any] | np.ndarray | None]:
    """How a Series' index shapes it: ("dict", labels), ("dates", order) or ("list", None)."""
    index = series.index
    index_cls = type(index)
    if index_cls is pd.MultiIndex:
        raise ResultRefused("ResultShape", f"{place.render()} is a Series with a MultiIndex; return a "
                                           "dict or a list of records")
    if index_cls is pd.DatetimeIndex:
        stamps = index.asi8
        if len(stamps) and (stamps == np.iinfo(np.int64).min).any():
            raise _not_finite(place, "a Series indexed by dates with a NaT label")
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


# --------------------------------------------------------------------------- the walk
def to_plain(value: Any) -> Any:
    """``value`` as plain JSON-shaped Python by the module's rules, or raise :class:`ResultRefused`."""
    budget = MAX_ITEMS
    text_budget = MAX_TEXT
    holder: list[Any] = [None]
    # Work items: (object, container to fill, key in it, depth of the object, where it sits)
    stack: list[tuple[Any, Any, Any, int, _Place]] = [(value, holder, 0, 0, _TOP)]
    while stack:
        obj, target, slot, depth, place = stack.pop()
        budget -= 1
        cls = type(obj)
        children: list[Any] | None = None
        keys: list[Any] | None = None
        if cls in _SEQUENCES:
            children = list(list.__iter__(obj)) if cls is list else list(tuple.__iter__(obj))
        elif cls in _DICTS:
            items = list(dict.items(obj))
            keys, children = [k for k, _ in items], [v for _, v in items]
        elif cls is np.ndarray:
            if obj.ndim == 0:
                stack.append((obj[()], target, slot, depth, place))
                budget += 1
                continue
            if obj.size > budget:
                raise _too_large(place)
            children = _array_items(_as_1d(obj, place, "numpy array"), place)
        elif cls is pd.Series:
            if len(obj) > budget:
                raise _too_large(place)
            shape, labels = _series_labels(obj, place)
            values = _array_items(_as_1d(np.asarray(obj.to_numpy()), place, "Series"), place)
            if shape == "dates":
                assert isinstance(labels, np.ndarray)
                children = [values[i] for i in labels.tolist()]
            elif shape == "dict":
                keys, children = list(labels or ()), values
            else:
                children = values
        elif cls in (pd.Index, pd.DatetimeIndex, pd.RangeIndex):
            if len(obj) > budget:
                raise _too_large(place)
            children = _array_items(_as_1d(np.asarray(obj.to_numpy()), place, "Index"), place)
        else:
            plain = _scalar(obj, cls, place)
            if type(plain) is str:
                text_budget -= len(plain)
                if text_budget < 0:
                    raise _too_large(place)
            target[slot] = plain
            continue
        # a container
        if depth >= MAX_DEPTH:
            raise ResultRefused("ResultTooDeep", f"{place.render()} nests containers more than "
                                                 f"{MAX_DEPTH} levels deep")
        if len(children) > budget:
            raise _too_large(place)
        if keys is None:
            out: Any = [None] * len(children)
            target[slot] = out
            for i in range(len(children) - 1, -1, -1):
                child = children[i]
                child_cls = type(child)
                if (child_cls is float and math.isfinite(child)) or child_cls is bool or (child_cls is int \
                        and child.bit_length() <= 12000):
                    out[i] = child  # the common case (a list of numbers), without a stack round trip
                    budget -= 1
                else:
                    stack.append((child, out, i, depth + 1, _Place(place, i)))
        else:
            out = {}
            for key in keys:
                name = _key(key, place)
                text_budget -= len(name)
                if name in out:
                    raise ResultRefused("ResultShape", f"{place.render()} has two keys that both read "
                                                       f"{name[:40]!r}")
                out[name] = None
            target[slot] = out
            if text_budget < 0:
                raise _too_large(place)
            names = list(out)
            for i in range(len(children) - 1, -1, -1):
                stack.append((children[i], out, names[i], depth + 1, _Place(place, names[i])))
        if budget < 0:
            raise _too_large(place)
    if budget < 0:
        raise _too_large(_TOP)
    return holder[0]


def _key(key: Any, place: _Place) -> str:
    cls = type(key)
    if cls is str:
        return _text(key, place)
    if cls is np.str_:
        return _text(str(key), place)
    if cls is int or cls in _NP_INTEGERS:
        return str(int(key))
    if cls in _DATES or cls in _DATETIMES:
        return _iso(key, cls)
    if cls is _NP_DATETIME:
        return _datetime64(key, place)
    raise ResultRefused("ResultShape", f"{place.render()} has a key of type {type_name(key)}; "
                                       "dict keys must be text, integers or dates")


def _too_large(place: _Place) -> ResultRefused:
    return ResultRefused("ResultTooLarge", f"the return value is too large at {place.render()} "
                                           f"(more than {MAX_ITEMS} values or {MAX_TEXT} characters "
                                           "of text)")
