"""The normaliser under the RECORD policy: every JSON the project writes is strict JSON (NaN/inf -> null)."""

from __future__ import annotations

import copy
import json
import math
from datetime import UTC, date, datetime, time
from decimal import Decimal
from enum import IntEnum, StrEnum
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from finevo.errors import ToolCrashed
from finevo.market.snapshot import json_bytes
from finevo.normalize import MAX_DEPTH, RECORD, normalize


def json_safe(value: Any, **options: Any) -> Any:
    return normalize(value, RECORD, **options)


def _strict(value: Any) -> str:
    return json.dumps(value, allow_nan=False, sort_keys=True)


def _only_json_types(value: Any) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return not (type(value) is float and not math.isfinite(value))
    if type(value) is list:
        return all(_only_json_types(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _only_json_types(v) for k, v in value.items())
    return False


class Colour(StrEnum):
    RED = "red"


class Level(IntEnum):
    HIGH = 3


class BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no")


class BadToList:
    def tolist(self) -> Any:
        raise ValueError("hostile")

    def __repr__(self) -> str:
        return "BadToList()"


NON_FINITE = [float("nan"), float("inf"), float("-inf"), np.float64("nan"), np.float32("inf"),
              Decimal("NaN"), Decimal("-Infinity"), pd.NaT, pd.NA, np.datetime64("NaT")]


@pytest.mark.parametrize("missing", NON_FINITE, ids=repr)
def test_non_finite_and_missing_values_become_null_at_any_depth(missing: Any) -> None:
    value = {"a": missing, "b": [1.0, missing, (missing,)], "c": {"d": {missing: 1}}}
    cleaned = json_safe(value)
    assert cleaned["a"] is None and cleaned["b"][1] is None and cleaned["b"][2] == [None]
    assert cleaned["c"]["d"] == {"null": 1}
    assert _only_json_types(cleaned)
    assert json.loads(_strict(cleaned)) == cleaned


@pytest.mark.parametrize("value, expected", [
    (np.float64(1.5), 1.5), (np.float32(0.25), 0.25), (np.int64(-7), -7), (np.uint8(200), 200),
    (np.bool_(True), True), (np.bool_(False), False), (np.str_("x"), "x"),
    (np.array([[1, 2], [3, 4]]), [[1, 2], [3, 4]]), (np.array([1.0, np.nan]), [1.0, None]),
    (np.array(2.5), 2.5), (pd.Series([1.0, np.inf]), [1.0, None]), (pd.Index(["a", "b"]), ["a", "b"]),
    (Decimal("1.25"), 1.25), (Colour.RED, "red"), (Level.HIGH, 3), (True, True), (10**30, 10**30),
    (b"caf\xc3\xa9 \xff", "café \ufffd"),
])
def test_scalars_and_arrays_become_plain_python_of_the_same_value(value: Any, expected: Any) -> None:
    cleaned = json_safe(value)
    assert cleaned == expected
    assert _only_json_types(cleaned)
    assert type(cleaned) is type(expected)


def test_times_are_iso_text() -> None:
    stamp = datetime(2024, 3, 1, 16, 0, tzinfo=UTC)
    assert json_safe(stamp) == stamp.isoformat()
    assert json_safe(pd.Timestamp(stamp)) == pd.Timestamp(stamp).isoformat()
    assert json_safe(date(2024, 3, 1)) == "2024-03-01"
    assert json_safe(time(9, 30)) == "09:30:00"
    assert json_safe(np.datetime64("2024-03-01")) == "2024-03-01"


def test_keys_are_text_as_json_writes_them_and_the_later_of_two_equal_keys_wins() -> None:
    cleaned = json_safe({"s": 0, 1: 1, 2.5: 2, None: 3, False: 4, ("t", 1): 5, np.int64(6): 6, Colour.RED: 7})
    assert cleaned == {"s": 0, "1": 1, "2.5": 2, "null": 3, "false": 4, '["t", 1]': 5, "6": 6, "red": 7}
    assert all(type(k) is str for k in cleaned)
    assert json_safe({1: "first", "1": "second"}) == {"1": "second"}
    assert json.loads(json.dumps({1: "first", "1": "second"})) == json_safe({1: "first", "1": "second"})


def test_sets_become_sorted_lists() -> None:
    assert json_safe({3, 1, 2}) == [1, 2, 3]
    assert json_safe(frozenset({"b", "a"})) == ["a", "b"]
    mixed = json_safe({"x", 1, None})
    assert sorted(mixed, key=lambda v: json.dumps(v)) == mixed and len(mixed) == 3


def test_anything_else_is_its_repr_and_a_failing_repr_or_tolist_is_survived() -> None:
    marker = object()
    assert json_safe({"o": marker}) == {"o": repr(marker)}
    assert json_safe(BadRepr()) == "<unrepresentable BadRepr>"
    assert json_safe(BadToList()) == "BadToList()"
    assert json_safe(Path("/tmp/x")) == repr(Path("/tmp/x"))


def test_depth_is_capped_and_a_self_referencing_container_ends() -> None:
    deep: Any = "leaf"
    for _ in range(MAX_DEPTH + 10):
        deep = [deep]
    cleaned = json_safe(deep)
    _strict(cleaned)
    level, node = 0, cleaned
    while isinstance(node, list):
        node, level = node[0], level + 1
    assert level == MAX_DEPTH and node == f"<nested deeper than {MAX_DEPTH} levels>"
    assert json_safe([[["x"]]], max_depth=2) == [["<nested deeper than 2 levels>"]]
    loop: dict[str, Any] = {"name": "loop"}
    loop["self"] = loop
    _strict(json_safe(loop))


def test_plain_json_is_unchanged_the_result_is_stable_and_the_input_untouched() -> None:
    plain = {"a": [1, 2.5, "x", None, True, {"b": []}], "c": {}}
    assert json_safe(plain) == plain
    messy = {"v": [np.float64("nan"), {1, 2}, (3, np.int64(4))], 5: Colour.RED}
    before = copy.deepcopy(messy)
    once = json_safe(messy)
    assert json_safe(once) == once
    assert messy.keys() == before.keys() and messy[5] is Colour.RED and isinstance(messy["v"][1], set)


def test_error_details_and_snapshot_files_use_it() -> None:
    details = ToolCrashed("boom", value=float("nan"), arr=np.array([np.inf, 1.0])).to_dict()["details"]
    assert details == {"value": None, "arr": [None, 1.0]}
    _strict(details)
    assert json.loads(json_bytes({"price": np.float64("nan"), "n": np.int64(3)})) == {"n": 3, "price": None}
