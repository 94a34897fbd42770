"""NYSE trading days for the span the bundled snapshot covers (2022-2024) and the years before it
that the gate's lengthened hidden worlds reach back to (2005-2021).

Full-day closures only; early closes (half days) are still trading days. The list is written
out by hand rather than derived from rules, because NYSE observance has exceptions (New Year's
Day 2022 fell on a Saturday and was *not* observed on Friday 2021-12-31).
"""

from __future__ import annotations

from datetime import date, timedelta

#: NYSE full-day holidays, 2005-2024.
NYSE_HOLIDAYS: frozenset[date] = frozenset({
    # 2005 (New Year's Day fell on a Saturday: no weekday closure; Christmas observed Monday 26 December)
    date(2005, 1, 17), date(2005, 2, 21), date(2005, 3, 25), date(2005, 5, 30), date(2005, 7, 4),
    date(2005, 9, 5), date(2005, 11, 24), date(2005, 12, 26),
    # 2006 (New Year's Day observed on Monday 2 January)
    date(2006, 1, 2), date(2006, 1, 16), date(2006, 2, 20), date(2006, 4, 14), date(2006, 5, 29),
    date(2006, 7, 4), date(2006, 9, 4), date(2006, 11, 23), date(2006, 12, 25),
    # 2007
    date(2007, 1, 1),
    date(2007, 1, 2),    # national day of mourning (President Gerald R. Ford)
    date(2007, 1, 15), date(2007, 2, 19), date(2007, 4, 6), date(2007, 5, 28), date(2007, 7, 4),
    date(2007, 9, 3), date(2007, 11, 22), date(2007, 12, 25),
    # 2008
    date(2008, 1, 1), date(2008, 1, 21), date(2008, 2, 18), date(2008, 3, 21), date(2008, 5, 26),
    date(2008, 7, 4), date(2008, 9, 1), date(2008, 11, 27), date(2008, 12, 25),
    # 2009 (Independence Day observed on Friday 3 July)
    date(2009, 1, 1), date(2009, 1, 19), date(2009, 2, 16), date(2009, 4, 10), date(2009, 5, 25),
    date(2009, 7, 3), date(2009, 9, 7), date(2009, 11, 26), date(2009, 12, 25),
    # 2010 (Independence Day observed Monday 5 July, Christmas Friday 24 December; New Year's Day 2011,
    # a Saturday, was not observed on Friday 31 December)
    date(2010, 1, 1), date(2010, 1, 18), date(2010, 2, 15), date(2010, 4, 2), date(2010, 5, 31),
    date(2010, 7, 5), date(2010, 9, 6), date(2010, 11, 25), date(2010, 12, 24),
    # 2011 (no New Year closure; Christmas observed Monday 26 December)
    date(2011, 1, 17), date(2011, 2, 21), date(2011, 4, 22), date(2011, 5, 30), date(2011, 7, 4),
    date(2011, 9, 5), date(2011, 11, 24), date(2011, 12, 26),
    # 2012 (New Year's Day observed on Monday 2 January)
    date(2012, 1, 2), date(2012, 1, 16), date(2012, 2, 20), date(2012, 4, 6), date(2012, 5, 28),
    date(2012, 7, 4), date(2012, 9, 3),
    date(2012, 10, 29), date(2012, 10, 30),  # Hurricane Sandy
    date(2012, 11, 22), date(2012, 12, 25),
    # 2013
    date(2013, 1, 1), date(2013, 1, 21), date(2013, 2, 18), date(2013, 3, 29), date(2013, 5, 27),
    date(2013, 7, 4), date(2013, 9, 2), date(2013, 11, 28), date(2013, 12, 25),
    # 2014
    date(2014, 1, 1), date(2014, 1, 20), date(2014, 2, 17), date(2014, 4, 18), date(2014, 5, 26),
    date(2014, 7, 4), date(2014, 9, 1), date(2014, 11, 27), date(2014, 12, 25),
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

COVERED_YEARS: tuple[int, int] = (2005, 2024)


def is_trading_day(day: date) -> bool:
    """True for a weekday that is not an NYSE holiday (only 2005-2024 are known)."""
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
