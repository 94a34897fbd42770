"""The normaliser under the TOOL policy (finevo/normalize.py), the rules a tool's value meets in the sandbox child.

Correct values in the shapes LLM-written tools return them must come out as plain JSON values of the
right kind (a bool stays a bool, a number never becomes a bool); everything else must be refused as
a typed failure, without calling any method of the tool's own classes and without recursion.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import math
import tracemalloc
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd
import pytest

from finevo.normalize import MAX_DEPTH, MAX_ITEMS, TOOL, ResultRefused, normalize

NY = "America/New_York"


def to_plain(value: Any) -> Any:
    return normalize(value, TOOL)
DAYS = pd.date_range("2024-12-23", periods=5, freq="B", tz=NY)


def _plain_json(value: Any) -> bool:
    """Only the JSON types, bool kept apart from numbers (type-exact, recursively)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            assert all(type(k) is str for k in item)
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif item is not None and type(item) not in (bool, int, float, str):
            return False
    return True


CORRECT: list[tuple[str, Any, Any]] = [
    ("numpy.bool_ from a comparison", np.float64(3.0) > np.float64(2.0), True),
    ("numpy.bool_ False", np.bool_(False), False),
    ("and of two numpy comparisons", bool(np.float64(1) > 0) and np.float64(1) < np.float64(0), False),
    ("numpy.float64", np.float64(1.25), 1.25),
    ("numpy.float32", np.float32(0.5), 0.5),
    ("numpy.int64", np.int64(7), 7),
    ("numpy.uint8", np.uint8(255), 255),
    ("numpy.str_", np.str_("AAPL"), "AAPL"),
    ("0-d array", np.array(2.5), 2.5),
    ("0-d bool array", np.array(True), True),
    ("1-d float array", np.array([1.0, 2.5]), [1.0, 2.5]),
    ("1-d int array", np.arange(3), [0, 1, 2]),
    ("1-d bool array", np.array([True, False]), [True, False]),
    ("Series by strings", pd.Series([0.1, 0.2], index=["upper", "lower"]), {"upper": 0.1, "lower": 0.2}),
    ("Series by object strings", pd.Series([1.0], index=pd.Index(["k"], dtype=object)), {"k": 1.0}),
    ("Series by dates, oldest first", pd.Series([1.0, 2.0, 3.0, 4.0, 5.0], index=DAYS), [1.0, 2.0, 3.0, 4.0, 5.0]),
    ("Series by dates, newest first", pd.Series([5.0, 4.0, 3.0, 2.0, 1.0], index=DAYS[::-1]),
     [1.0, 2.0, 3.0, 4.0, 5.0]),
    ("Series by date objects", pd.Series([2.0, 1.0], index=[dt.date(2024, 1, 3), dt.date(2024, 1, 2)]),
     [1.0, 2.0]),
    ("Series by position", pd.Series([3, 4]), [3, 4]),
    ("tail of a rolling mean", pd.Series(np.arange(30.0), index=pd.date_range("2024-01-01", periods=30))
     .rolling(5).mean().tail(3), [25.0, 26.0, 27.0]),
    ("Timestamp at midnight, zoned", pd.Timestamp("2024-12-31", tz=NY), "2024-12-31"),
    ("Timestamp with a time", pd.Timestamp("2024-12-31 16:00"), "2024-12-31T16:00:00"),
    ("datetime.date", dt.date(2024, 12, 31), "2024-12-31"),
    ("datetime at midnight", dt.datetime(2024, 12, 31), "2024-12-31"),
    ("numpy.datetime64", np.datetime64("2024-12-31"), "2024-12-31"),
    ("datetime64 array", np.array(["2024-12-30", "2024-12-31"], dtype="datetime64[D]"),
     ["2024-12-30", "2024-12-31"]),
    ("DatetimeIndex", DAYS[:2], ["2024-12-23", "2024-12-24"]),
    ("tuple", (1, (2.5, np.bool_(True))), [1, [2.5, True]]),
    ("dict of numpy values", {"macd": np.float64(1.5), "signal": [np.float32(0.5)], "ok": np.bool_(True)},
     {"macd": 1.5, "signal": [0.5], "ok": True}),
    ("dict keyed by Timestamps (Series.to_dict)", pd.Series([1.0], index=DAYS[:1]).to_dict(),
     {"2024-12-23": 1.0}),
    ("dict keyed by numpy ints", {np.int64(1): "a"}, {"1": "a"}),
    ("records", pd.DataFrame({"date": DAYS[:2], "amount": [0.24, 0.25]}).to_dict("records"),
     [{"date": "2024-12-23", "amount": 0.24}, {"date": "2024-12-24", "amount": 0.25}]),
    ("OrderedDict / defaultdict / Counter", [collections.OrderedDict(a=1), collections.defaultdict(int, b=2),
                                             collections.Counter(c=3)], [{"a": 1}, {"b": 2}, {"c": 3}]),
    ("Decimal", Decimal("1.5"), 1.5),
    ("plain values untouched", {"n": None, "b": False, "i": 3, "f": 0.1, "s": "x"},
     {"n": None, "b": False, "i": 3, "f": 0.1, "s": "x"}),
    ("nested as deep as allowed", json.loads("[" * MAX_DEPTH + "1" + "]" * MAX_DEPTH), None),
]


@pytest.mark.parametrize(("value", "expected"), [(c[1], c[2]) for c in CORRECT], ids=[c[0] for c in CORRECT])
def test_correct_values_become_plain_json(value: Any, expected: Any) -> None:
    plain = to_plain(value)
    assert _plain_json(plain)
    if expected is not None:
        assert plain == expected
        # bool stays bool, numbers never become bools (== would not tell 1 from True)
        assert json.dumps(plain) == json.dumps(expected)


class HostileFloat(float):
    def __repr__(self) -> str:
        raise AssertionError("the normaliser called the tool's __repr__")

    def __float__(self) -> float:
        raise AssertionError("the normaliser called the tool's __float__")


class HostileDict(dict):  # type: ignore[type-arg]
    def items(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the normaliser called the tool's items()")

    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the normaliser called the tool's __iter__")


class HostileList(list):  # type: ignore[type-arg]
    def __iter__(self):  # type: ignore[no-untyped-def]
        raise AssertionError("the normaliser called the tool's __iter__")


class HostileDate(dt.date):
    def isoformat(self) -> str:
        raise AssertionError("the normaliser called the tool's isoformat()")


class Opaque:
    """Any attribute read fails once armed (numpy and pandas probe objects while *building* arrays)."""

    armed = False

    def __getattribute__(self, name: str) -> Any:
        if type.__getattribute__(Opaque, "armed"):
            raise AssertionError(f"the normaliser read .{name} of the tool's object")
        return object.__getattribute__(self, name)


def _generator() -> Any:
    yield 1


def _nested(depth: int) -> list[Any]:
    top: list[Any] = []
    current = top
    for _ in range(depth):
        inner: list[Any] = []
        current.append(inner)
        current = inner
    return top


REFUSED: list[tuple[str, Any, str, str]] = [
    ("NaN", float("nan"), "ResultNotFinite", "value is nan"),
    ("inf inside a dict", {"a": [1.0, float("inf")]}, "ResultNotFinite", "value['a'][1]"),
    ("numpy NaN in an array", np.array([1.0, np.nan]), "ResultNotFinite", "value[1]"),
    ("numpy -inf scalar", np.float64("-inf"), "ResultNotFinite", "-inf"),
    ("NaN in a Series", pd.Series([1.0, np.nan], index=["a", "b"]), "ResultNotFinite", "nan"),
    ("pandas.NA", pd.array([1, None], dtype="Int64")[1], "ResultNotFinite", "pandas.NA"),
    ("NaT", pd.NaT, "ResultNotFinite", "NaT"),
    ("Decimal NaN", Decimal("NaN"), "ResultNotFinite", "Decimal"),
    ("DataFrame", pd.DataFrame({"a": [1]}), "ResultShape", "pandas.DataFrame"),
    ("2-d array", np.zeros((2, 2)), "ResultShape", "2-dimensional"),
    ("complex array", np.array([1j]), "ResultShape", "complex128"),
    ("set", {1, 2}, "ResultShape", "a set"),
    ("generator", _generator(), "ResultShape", "generator"),
    ("module", np, "ResultShape", "a module"),
    ("bytes", b"x", "ResultShape", "bytes"),
    ("timedelta", dt.timedelta(days=1), "ResultShape", "timedelta"),
    ("MultiIndex Series", pd.Series([1.0], index=pd.MultiIndex.from_tuples([("a", 1)])), "ResultShape",
     "MultiIndex"),
    ("tuple key", {(1, 2): 3}, "ResultShape", "key of type tuple"),
    ("float key", {1.5: 3}, "ResultShape", "key of type float"),
    ("keys that read alike", {1: "a", "1": "b"}, "ResultShape", "two keys"),
    ("lone surrogate", "a\ud800", "ResultShape", "surrogate"),
    ("tool float subclass", HostileFloat(1.0), "ResultShape", "HostileFloat"),
    ("tool dict subclass", HostileDict(a=1), "ResultShape", "HostileDict"),
    ("tool list subclass", HostileList([1]), "ResultShape", "HostileList"),
    ("tool date subclass", HostileDate(2024, 1, 1), "ResultShape", "HostileDate"),
    ("tool object in an object array", np.array([Opaque()], dtype=object), "ResultShape", "Opaque"),
    ("tool object as a Series value", pd.Series([Opaque()], index=["a"]), "ResultShape", "value['a']"),
    ("too deep", _nested(MAX_DEPTH + 1), "ResultTooDeep", "more than"),
    ("deep far beyond the recursion limit", _nested(200_000), "ResultTooDeep", "..."),
    ("too many values", [0.5] * (MAX_ITEMS + 1), "ResultTooLarge", "too large"),
    ("too many values in an array", np.zeros(MAX_ITEMS + 1), "ResultTooLarge", "too large"),
    ("too much text", ["x" * 1_000_000] * 5, "ResultTooLarge", "too large"),
    ("int with thousands of digits", 10 ** 5000, "ResultShape", "digits"),
]


@pytest.mark.parametrize(("value", "error_type", "message"), [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_everything_else_is_a_typed_failure(value: Any, error_type: str, message: str) -> None:
    Opaque.armed = True
    try:
        with pytest.raises(ResultRefused) as refused:
            to_plain(value)
    finally:
        Opaque.armed = False
    assert refused.value.error_type == error_type
    assert message in refused.value.message
    assert len(refused.value.message) < 400


@pytest.mark.parametrize("build", [
    lambda: [0.5] * (2 * MAX_ITEMS),
    lambda: (0.5,) * (2 * MAX_ITEMS),
    lambda: dict.fromkeys(range(2 * MAX_ITEMS), 0.5),
    lambda: {"values": [0.5] * (2 * MAX_ITEMS)},
], ids=["list", "tuple", "dict", "nested list"])
def test_an_oversized_container_is_refused_before_it_is_copied(build: Any) -> None:
    """The size is known before the walk copies anything: refusing a container twice the budget
    allocates next to nothing (a copy of it would take 16 MB or more)."""
    value = build()
    tracemalloc.start()
    try:
        with pytest.raises(ResultRefused) as refused:
            to_plain(value)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert refused.value.error_type == "ResultTooLarge"
    assert peak < 1024 * 1024


def test_shared_and_self_containing_structures_terminate() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ResultRefused) as refused:
        to_plain(loop)
    assert refused.value.error_type == "ResultTooDeep"
    shared = [1.0, 2.0]
    assert to_plain({"a": shared, "b": shared}) == {"a": [1.0, 2.0], "b": [1.0, 2.0]}


def test_nan_and_none_stay_apart() -> None:
    assert to_plain({"x": None}) == {"x": None}
    with pytest.raises(ResultRefused):
        to_plain({"x": math.nan})


class _CountingZone(dt.tzinfo):
    """A zone of the tool's own: each offset it is asked for is an hour later than the last."""

    asked = 0

    def utcoffset(self, moment: dt.datetime | None) -> dt.timedelta:
        _CountingZone.asked += 1
        return dt.timedelta(hours=_CountingZone.asked)

    def dst(self, moment: dt.datetime | None) -> dt.timedelta:
        return dt.timedelta(0)


@pytest.mark.parametrize("build", [
    lambda zone: dt.datetime(2024, 1, 2, 10, 0, tzinfo=zone),
    lambda zone: pd.Timestamp(2024, 1, 2, 10, 0, tzinfo=zone),
], ids=["datetime", "Timestamp"])
def test_a_date_time_in_a_zone_of_the_tools_own_class_is_refused_without_asking_it(build: Any) -> None:
    """Writing a date-time's text asks its zone for the offset: a zone of the tool's own class would run
    its code after the tool returned (one value, three instants). It is refused unasked; the standard
    library's zones are read as ever."""
    value = build(_CountingZone())
    asked = _CountingZone.asked
    with pytest.raises(ResultRefused) as refused:
        normalize({"when": value}, TOOL)
    assert refused.value.error_type == "ResultShape" and "time zone" in str(refused.value)
    assert _CountingZone.asked == asked, "the zone's own code ran during the conversion"
    for zone, offset in ((dt.UTC, "+00:00"), (dt.timezone(dt.timedelta(hours=-5)), "-05:00")):
        assert normalize(build(zone), TOOL) == "2024-01-02T10:00:00" + offset
    assert normalize(pd.Timestamp("2024-01-02 10:00", tz="America/New_York"), TOOL) == "2024-01-02T10:00:00-05:00"
