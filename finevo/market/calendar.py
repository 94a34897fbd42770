"""NYSE trading days for the span the bundled snapshot covers (2022-2024).

Full-day closures only; early closes (half days) are still trading days. The list is written
out by hand rather than derived from rules, because NYSE observance has exceptions (New Year's
Day 2022 fell on a Saturday and was *not* observed on Friday 2021-12-31).
"""

from __future__ import annotations

from datetime import date, timedelta

#: NYSE full-day holidays, 2022-2024.
NYSE_HOLIDAYS: frozenset[date] = frozenset({
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

COVERED_YEARS: tuple[int, int] = (2022, 2024)


def is_trading_day(day: date) -> bool:
    """True for a weekday that is not an NYSE holiday (only 2022-2024 are known)."""
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
