from datetime import date, timedelta

import pytest

from finevo.market.calendar import NYSE_HOLIDAYS, is_trading_day, next_trading_day, trading_days


def test_trading_day_counts_per_year_match_nyse() -> None:
    # NYSE had 251 sessions in 2022, 250 in 2023 and 252 in 2024.
    assert len(trading_days(date(2022, 1, 1), date(2022, 12, 31))) == 251
    assert len(trading_days(date(2023, 1, 1), date(2023, 12, 31))) == 250
    assert len(trading_days(date(2024, 1, 1), date(2024, 12, 31))) == 252
    # and before (the gate's lengthened worlds): 252 in 2015, 252 in 2016, 251 in 2017, 251 in 2018,
    # 252 in 2019, 253 in 2020, 252 in 2021 (the NYSE's published session counts)
    assert [len(trading_days(date(y, 1, 1), date(y, 12, 31))) for y in range(2015, 2022)] == \
        [252, 252, 251, 251, 252, 253, 252]
    # and further back, for a long world of more than ten years: 252 in 2005, 251 in 2006 and 2007,
    # 253 in 2008, 252 in 2009-2011, 250 in 2012 (two days closed for Hurricane Sandy), 252 in 2013-2014
    assert [len(trading_days(date(y, 1, 1), date(y, 12, 31))) for y in range(2005, 2015)] == \
        [252, 251, 251, 253, 252, 252, 252, 250, 252, 252]


def test_holidays_and_weekends_are_closed() -> None:
    assert not is_trading_day(date(2023, 4, 7))    # Good Friday
    assert not is_trading_day(date(2024, 12, 25))  # Christmas
    assert not is_trading_day(date(2024, 12, 28))  # Saturday
    assert is_trading_day(date(2022, 1, 3))
    assert all(h.weekday() < 5 for h in NYSE_HOLIDAYS)
    # Good Friday is Easter Sunday less two days, every year the calendar knows
    assert all(_easter(y) - timedelta(days=2) in NYSE_HOLIDAYS for y in range(2005, 2025))


def _easter(year: int) -> date:
    """Western Easter Sunday by the anonymous Gregorian computus (Meeus/Jones/Butcher): a second,
    independent source for the calendar's Good Fridays (no date library is a declared dependency)."""
    a, b, c = year % 19, year // 100, year % 100
    d, e = divmod(b, 4)
    g = (8 * b + 13) // 25
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    l_ = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l_) // 451
    month, day = divmod(h + l_ - 7 * m + 114, 31)
    return date(year, month, day + 1)


def test_the_computus_gives_the_known_easters() -> None:
    assert [_easter(y) for y in (2019, 2024, 2025)] == [date(2019, 4, 21), date(2024, 3, 31), date(2025, 4, 20)]


def test_next_trading_day_skips_closures() -> None:
    assert next_trading_day(date(2024, 3, 29)) == date(2024, 4, 1)
    assert next_trading_day(date(2024, 4, 1)) == date(2024, 4, 1)


def test_outside_known_years_is_an_error() -> None:
    with pytest.raises(ValueError, match="2005-2024"):
        is_trading_day(date(2025, 1, 2))
