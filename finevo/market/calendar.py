"""NYSE trading days for the span the bundled snapshot covers (2022-2024) and the years before it
that the gate's lengthened hidden worlds reach back to (2015-2021).

Full-day closures only; early closes (half days) are still trading days. The list is written
out by hand rather than derived from rules, because NYSE observance has exceptions (New Year's
Day 2022 fell on a Saturday and was *not* observed on Friday 2021-12-31).
"""

from __future__ import annotations

from datetime import date, timedelta

#: NYSE full-day holidays, 2015-2024.
NYSE_HOLIDAYS: frozenset[date] = frozenset({
    # 2015 (Independence Day observed on Friday 3 July)
    date(2015, 1, 1), date(2015, 1, 19), date(2015, 2, 16), date(2015, 4, 3), date(2015, 5, 25),
    date(2015, 7, 3), date(2015, 9, 7), date(2015, 11, 26), date(2015, 12, 25),
    # 2016 (Christmas observed on Monday 26 December)
    date(2016, 1, 1), date(2016, 1, 18), date(2016, 2, 15), date(2016, 3, 25), date(2016, 5, 30),
    date(2016, 7, 4), date(2016, 9, 5), date(2016, 11, 24), date(2016, 12, 26),
    # 2017 (New Year's Day observed on Monday 2 January)
    date(2017, 1, 2), date(2017, 1, 16), date(2017, 2, 20), date(2017, 4, 14), date(2017, 5, 29),
    date(2017, 7, 4), date(2017, 9, 4), date(2017, 11, 23), date(2017, 12, 25),
    # 2018
    date(2018, 1, 1), date(2018, 1, 15), date(2018, 2, 19), date(2018, 3, 30), date(2018, 5, 28),
    date(2018, 7, 4), date(2018, 9, 3), date(2018, 11, 22),
    date(2018, 12, 5),   # national day of mourning (President George H. W. Bush)
    date(2018, 12, 25),
    # 2019
    date(2019, 1, 1), date(2019, 1, 21), date(2019, 2, 18), date(2019, 4, 19), date(2019, 5, 27),
    date(2019, 7, 4), date(2019, 9, 2), date(2019, 11, 28), date(2019, 12, 25),
    # 2020 (Independence Day observed on Friday July 3)
    date(2020, 1, 1), date(2020, 1, 20), date(2020, 2, 17), date(2020, 4, 10), date(2020, 5, 25),
    date(2020, 7, 3), date(2020, 9, 7), date(2020, 11, 26), date(2020, 12, 25),
    # 2021 (Independence Day observed Monday July 5, Christmas Friday December 24)
    date(2021, 1, 1), date(2021, 1, 18), date(2021, 2, 15), date(2021, 4, 2), date(2021, 5, 31),
    date(2021, 7, 5), date(2021, 9, 6), date(2021, 11, 25), date(2021, 12, 24),
    # 2022 (New Year's Day fell on a Saturday: no weekday closure)
    date(2022, 1, 17),   # Martin Luther King Jr. Day
    date(2022, 2, 21),   # Washington's Birthday
    date(2022, 4, 15),   # Good Friday
    date(2022, 5, 30),   # Memorial Day
    date(2022, 6, 20),   # Juneteenth (observed; June 19 was a Sunday)
    date(2022, 7, 4),    # Independence Day
    date(2022, 9, 5),    # Labor Day
    date(2022, 11, 24),  # Thanksgiving Day
    date(2022, 12, 26),  # Christmas (observed; Dec 25 was a Sunday)
    # 2023
    date(2023, 1, 2),    # New Year's Day (observed; Jan 1 was a Sunday)
    date(2023, 1, 16),   # Martin Luther King Jr. Day
    date(2023, 2, 20),   # Washington's Birthday
    date(2023, 4, 7),    # Good Friday
    date(2023, 5, 29),   # Memorial Day
    date(2023, 6, 19),   # Juneteenth
    date(2023, 7, 4),    # Independence Day
    date(2023, 9, 4),    # Labor Day
    date(2023, 11, 23),  # Thanksgiving Day
    date(2023, 12, 25),  # Christmas Day
    # 2024
    date(2024, 1, 1),    # New Year's Day
    date(2024, 1, 15),   # Martin Luther King Jr. Day
    date(2024, 2, 19),   # Washington's Birthday
    date(2024, 3, 29),   # Good Friday
    date(2024, 5, 27),   # Memorial Day
    date(2024, 6, 19),   # Juneteenth
    date(2024, 7, 4),    # Independence Day
    date(2024, 9, 2),    # Labor Day
    date(2024, 11, 28),  # Thanksgiving Day
    date(2024, 12, 25),  # Christmas Day
})

COVERED_YEARS: tuple[int, int] = (2015, 2024)


def is_trading_day(day: date) -> bool:
    """True for a weekday that is not an NYSE holiday (only 2015-2024 are known)."""
    if not COVERED_YEARS[0] <= day.year <= COVERED_YEARS[1]:
        raise ValueError(f"NYSE calendar only covers {COVERED_YEARS[0]}-{COVERED_YEARS[1]}, not {day}")
    return day.weekday() < 5 and day not in NYSE_HOLIDAYS


def trading_days(start: date, end: date) -> list[date]:
    """NYSE trading days from ``start`` to ``end``, both inclusive."""
    days: list[date] = []
    day = start
    while day <= end:
        if is_trading_day(day):
            days.append(day)
        day += timedelta(days=1)
    return days


def next_trading_day(day: date) -> date:
    """``day`` itself when it is a trading day, else the next one."""
    while not is_trading_day(day):
        day += timedelta(days=1)
    return day
