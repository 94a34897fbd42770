"""finevo.contract: normalisation to plain Python and output-shape checks."""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest

from finevo.contract import check_shape, is_number
from finevo.normalize import ANSWER, normalize
from finevo.question import OutputSpec

NUMERIC = OutputSpec(type="numeric")
BOOLEAN = OutputSpec(type="boolean")
BANDS = OutputSpec(type="dict", keys=("upper", "middle", "lower"))
NUM_LIST = OutputSpec(type="list", item_type="numeric", min_items=2)
DIVIDENDS = OutputSpec(type="list", item_type="dict", item_keys=("date", "amount"), min_items=1)


class TestNormalise:
    def test_numpy_scalars_become_python(self) -> None:
        assert type(normalize(np.float64(1.5), ANSWER)) is float
        assert type(normalize(np.float32(0.25), ANSWER)) is float
        assert type(normalize(np.int64(7), ANSWER)) is int
        assert normalize(np.bool_(True), ANSWER) is True
        assert type(normalize(np.str_("x"), ANSWER)) is str

    def test_containers_recursively(self) -> None:
        value = normalize({"a": np.array([1.0, 2.0]), "b": (np.int32(3), None)}, ANSWER)
        assert value == {"a": [1.0, 2.0], "b": [3, None]}
        assert all(type(v) is float for v in value["a"])

    def test_series_with_label_index_becomes_dict_else_list(self) -> None:
        labelled = pd.Series({"upper": np.float64(3.0), "lower": np.float64(1.0)})
        assert normalize(labelled, ANSWER) == {"upper": 3.0, "lower": 1.0}
        dated = pd.Series([1.0, 2.0], index=pd.date_range("2024-01-01", periods=2))
        assert normalize(dated, ANSWER) == [1.0, 2.0]

    def test_zero_dim_array_is_scalar(self) -> None:
        assert normalize(np.array(4.5), ANSWER) == 4.5

    def test_timestamps_become_iso_strings(self) -> None:
        # The tool rule: a bar's date at midnight is its day (an oracle's value reads as a tool's would).
        assert normalize(pd.Timestamp("2024-02-09", tz="America/New_York"), ANSWER) == "2024-02-09"
        assert normalize(pd.Timestamp("2024-02-09 16:00", tz="America/New_York"), ANSWER) == "2024-02-09T16:00:00-05:00"
        assert normalize(pd.NaT, ANSWER) is None

    def test_decimal_is_a_number(self) -> None:
        assert normalize(Decimal("1.25"), ANSWER) == 1.25

    @pytest.mark.parametrize("value", ["42", "12.5%", "value: 3.1", b"7"])
    def test_never_turns_text_into_number(self, value: object) -> None:
        assert normalize(value, ANSWER) == value
        assert not is_number(normalize(value, ANSWER))


class TestNumeric:
    @pytest.mark.parametrize("value", [1.5, 0, -3, 1e12])
    def test_finite_numbers_fit(self, value: float) -> None:
        assert check_shape(value, NUMERIC) == []

    @pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, True, False, "1.5", None, [1.0], {"v": 1.0}])
    def test_non_numbers_do_not_fit(self, value: object) -> None:
        problems = check_shape(value, NUMERIC)
        assert len(problems) == 1 and problems[0].startswith("value:")

    @pytest.mark.parametrize("value", [10**400, -(10**400)])
    def test_int_beyond_float_range_is_reported_not_raised(self, value: int) -> None:
        assert not is_number(value)
        problems = check_shape(value, NUMERIC)
        assert len(problems) == 1 and "beyond float range" in problems[0]
        assert check_shape([1.0, value], NUM_LIST) != []

    def test_unnormalised_numpy_scalar_is_reported(self) -> None:
        assert check_shape(np.float32(1.0), NUMERIC) != []  # not a float subclass
        assert check_shape(normalize(np.float32(1.0), ANSWER), NUMERIC) == []


class TestBoolean:
    def test_real_bools_fit(self) -> None:
        assert check_shape(True, BOOLEAN) == [] and check_shape(False, BOOLEAN) == []
        assert check_shape(normalize(np.bool_(False), ANSWER), BOOLEAN) == []

    @pytest.mark.parametrize("value", [1.0, 0.0, 1, 0, "True", None])
    def test_lookalikes_do_not_fit(self, value: object) -> None:
        assert check_shape(value, BOOLEAN) != []


class TestDict:
    def test_complete_dict_fits_extra_keys_allowed(self) -> None:
        assert check_shape({"upper": 3.0, "middle": 2.0, "lower": 1.0, "width": 2.0}, BANDS) == []

    def test_all_none_values_reported_per_key(self) -> None:
        problems = check_shape({"upper": None, "middle": None, "lower": None}, BANDS)
        assert len(problems) == 3
        assert all("None" in p for p in problems)

    def test_missing_and_nan(self) -> None:
        problems = check_shape({"upper": 3.0, "middle": math.nan}, BANDS)
        assert any("missing key 'lower'" in p for p in problems)
        assert any("'middle'" in p and "finite" in p for p in problems)

    def test_not_a_dict(self) -> None:
        assert check_shape([3.0, 2.0, 1.0], BANDS) != []


class TestList:
    def test_numeric_list(self) -> None:
        assert check_shape([1.0, 2.0, 3], NUM_LIST) == []
        assert check_shape([1.0], NUM_LIST) != []  # under min_items
        assert any("value[1]" in p for p in check_shape([1.0, "2.0", 3.0], NUM_LIST))
        assert check_shape((1.0, 2.0), NUM_LIST) != []  # a tuple is not normalised yet

    def test_list_of_records(self) -> None:
        good = [{"date": "2024-02-09", "amount": 0.24}, {"date": "2024-05-10", "amount": 0.25}]
        assert check_shape(good, DIVIDENDS) == []
        assert check_shape([], DIVIDENDS) != []
        bad = [{"date": "2024-02-09"}, {"date": "", "amount": 0.25}, 0.24, {"date": "x", "amount": None}]
        problems = check_shape(bad, DIVIDENDS)
        assert any("value[0]: missing key 'amount'" in p for p in problems)
        assert any("value[1]['date']: empty string" in p for p in problems)
        assert any(p.startswith("value[2]:") for p in problems)
        assert any(p.startswith("value[3]['amount']") for p in problems)
