"""One value, every path: the normaliser's three policies agree wherever they are meant to.

The same generated values (nested lists, tuples and dicts; numpy and pandas scalars, arrays and
Series; NaN, infinities, NaT; dates at and after midnight) go through:

* the tool path -- ``normalize(v, TOOL)`` in the sandbox child, then the JSON channel, then the
  judge's ``normalize(..., ANSWER)``;
* the oracle path -- ``normalize(v, ANSWER)`` on the oracle's own value;
* the record path -- ``normalize(v, RECORD)`` for results.json / events.jsonl.

and the test checks that the judge compares values prepared by the same rule, that the policies differ
only where their table says so (a missing value: refused / kept / null), that each policy is
idempotent and that a record is always strict JSON.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from finevo.normalize import ANSWER, RECORD, TOOL, ResultRefused, normalize

# Each property runs its examples through every path (~0.8 s a test): slow; the normaliser's own cases
# (test_normalize_tool.py, test_normalize_record.py) stay in the inner loop.
pytestmark = pytest.mark.slow

_finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
_any_float = st.floats(allow_nan=True, allow_infinity=True, width=64)
_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)
_days = st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2030, 12, 31))


def _scalars(floats: st.SearchStrategy[float], missing: bool) -> st.SearchStrategy[Any]:
    options: list[st.SearchStrategy[Any]] = [
        st.none(), st.booleans(), st.integers(-(10**12), 10**12), floats, _text,
        floats.map(np.float64), st.integers(-(10**9), 10**9).map(np.int64), st.booleans().map(np.bool_),
        _text.map(np.str_), _days,
        _days.map(lambda d: pd.Timestamp(d, tz="America/New_York")),
        st.tuples(_days, st.integers(1, 23)).map(lambda t: pd.Timestamp(t[0]) + pd.Timedelta(hours=t[1])),
    ]
    if missing:
        options.append(st.sampled_from([pd.NaT, np.datetime64("NaT")]))
    return st.one_of(options)


def _values(floats: st.SearchStrategy[float], missing: bool) -> st.SearchStrategy[Any]:
    arrays = st.lists(floats, max_size=5).map(lambda xs: np.array(xs, dtype=float))
    labelled = st.dictionaries(_text, floats, max_size=4).map(lambda d: pd.Series(d, dtype=float))
    dated = st.lists(floats, min_size=1, max_size=5).map(
        lambda xs: pd.Series(xs, index=pd.date_range("2024-01-02", periods=len(xs), freq="B")[::-1], dtype=float))
    return st.recursive(
        st.one_of(_scalars(floats, missing), arrays, labelled, dated),
        lambda inner: st.one_of(st.lists(inner, max_size=4), st.lists(inner, max_size=3).map(tuple),
                                st.dictionaries(st.one_of(_text, st.integers(-5, 5)), inner, max_size=4)
                                .filter(_keys_read_apart)),
        max_leaves=12)


def _keys_read_apart(mapping: dict[Any, Any]) -> bool:
    """No two keys read alike as text (``2`` and ``"2"``): such a value is refused on every path
    (its own test), never a clean value."""
    return len({str(key) for key in mapping}) == len(mapping)


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, NaN equal to NaN, a bool never equal to a number."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if type(a) is not type(b) and not (type(a) in (int, float) and type(b) in (int, float)):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _nan_to_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(v) for v in value]
    return value


def _has_dates(value: Any) -> bool:
    if isinstance(value, dt.date | np.datetime64 | pd.Series):
        return True
    if isinstance(value, dict):
        return any(_has_dates(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_dates(v) for v in value)
    return False


_SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(_values(_finite, missing=False))
def test_a_clean_value_reads_the_same_on_the_tool_path_and_the_oracle_path(value: Any) -> None:
    sent = normalize(value, TOOL)  # the child
    received = json.loads(json.dumps(sent, allow_nan=False))  # the channel
    judged = normalize(received, ANSWER)  # the judge, on the tool's value
    oracle = normalize(value, ANSWER)  # the judge, on the oracle's value
    assert _same(sent, received)
    assert _same(judged, sent)
    assert _same(oracle, sent)
    assert _same(normalize(sent, TOOL), sent)  # idempotent


@_SETTINGS
@given(_values(_any_float, missing=True))
def test_the_policies_differ_only_on_missing_values(value: Any) -> None:
    answer = normalize(value, ANSWER)
    record = normalize(value, RECORD)
    json.dumps(record, allow_nan=False)  # a record is always strict JSON
    assert _same(normalize(answer, ANSWER), answer)
    assert _same(normalize(record, RECORD), record)
    try:
        tool = normalize(value, TOOL)
    except ResultRefused as refused:
        assert refused.error_type == "ResultNotFinite", refused.message
        assert any(not math.isfinite(x) if isinstance(x, float) else x is None
                   for x in _leaves(answer)), "refused a value the oracle path found complete"
    else:
        assert _same(tool, answer)
    if not _has_dates(value):  # records keep a date-time's own text; answers read a bar's day
        assert _same(record, _nan_to_none(answer))


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, list):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]
