"""The NYSE sessions of the years before the calendar's own (1980-2004), for the long world's deep history."""

from __future__ import annotations

from collections import Counter
from datetime import date

import pytest

from runner.judging.world_calendar import EARLIER_HOLIDAYS, is_earlier_trading_day, sessions


def test_session_counts_per_year_match_the_nyse() -> None:
    counts = Counter(d.year for d in sessions(date(1980, 1, 1), date(2006, 12, 31)))
    # 1980-2004 as the NYSE counts them (2001: closed 11-14 September; 1985: Hurricane Gloria), then the
    # calendar's own years go on seamlessly
    assert [counts[y] for y in range(1980, 2007)] == [
        253, 253, 253, 253, 253, 252, 253, 253, 253, 252, 253, 253, 254, 253, 252, 252, 254, 253, 252, 252,
        252, 248, 252, 252, 252, 252, 251]


def test_the_closures_that_no_rule_gives() -> None:
    for day in (date(2001, 9, 11), date(2001, 9, 14), date(1985, 9, 27), date(1994, 4, 27), date(2004, 6, 11),
                date(1980, 11, 4)):
        assert not is_earlier_trading_day(day), day
    # New Year's Day on a Saturday is not observed on the Friday before; MLK Day closes from 1998 only
    assert is_earlier_trading_day(date(1999, 12, 31)) and is_earlier_trading_day(date(1997, 1, 20))
    assert not is_earlier_trading_day(date(1998, 1, 19))
    assert all(d.weekday() < 5 and 1980 <= d.year <= 2004 for d in EARLIER_HOLIDAYS)


def test_outside_its_years_is_an_error() -> None:
    with pytest.raises(ValueError, match="1980-2004"):
        is_earlier_trading_day(date(1979, 12, 31))
