"""NYSE full-day closures of the years before the calendar of :mod:`finevo.market.calendar` (1980-2004),
for the ``long`` world's deep history only: recorded data reach back decades (a stock listed in 1980
trades since then; ``history(period="max")`` returns it all), so "all the history" of a world must
reach back before the fixed starts a tool may assume precede the data (``start="2000-01-01"``).

Written out by hand like the calendar's own years (the rules have exceptions: New Year's Day on a
Saturday is not observed on the Friday before; Martin Luther King Jr. Day closes the exchange from
1998 on; a presidential election day closed it through 1980), checked against the NYSE's published
session counts (``tests/runner/test_world_calendar.py``).
"""

from __future__ import annotations

from datetime import date, timedelta

from finevo.market.calendar import COVERED_YEARS, trading_days

#: The years this module adds before the calendar's own (:data:`~finevo.market.calendar.COVERED_YEARS`).
EARLIER_YEARS: tuple[int, int] = (1980, COVERED_YEARS[0] - 1)

#: NYSE full-day holidays, 1980-2004.
EARLIER_HOLIDAYS: frozenset[date] = frozenset({
    # 1980
    date(1980, 1, 1), date(1980, 2, 18), date(1980, 4, 4), date(1980, 5, 26), date(1980, 7, 4),
    date(1980, 9, 1), date(1980, 11, 27), date(1980, 12, 25),
    date(1980, 11, 4),  # presidential election day (the NYSE closed on those through 1980)
    # 1981
    date(1981, 1, 1), date(1981, 2, 16), date(1981, 4, 17), date(1981, 5, 25), date(1981, 7, 3),
    date(1981, 9, 7), date(1981, 11, 26), date(1981, 12, 25),
    # 1982
    date(1982, 1, 1), date(1982, 2, 15), date(1982, 4, 9), date(1982, 5, 31), date(1982, 7, 5),
    date(1982, 9, 6), date(1982, 11, 25), date(1982, 12, 24),
    # 1983 (New Year's Day fell on a Saturday: no weekday closure)
    date(1983, 2, 21), date(1983, 4, 1), date(1983, 5, 30), date(1983, 7, 4), date(1983, 9, 5),
    date(1983, 11, 24), date(1983, 12, 26),
    # 1984
    date(1984, 1, 2), date(1984, 2, 20), date(1984, 4, 20), date(1984, 5, 28), date(1984, 7, 4),
    date(1984, 9, 3), date(1984, 11, 22), date(1984, 12, 25),
    # 1985
    date(1985, 1, 1), date(1985, 2, 18), date(1985, 4, 5), date(1985, 5, 27), date(1985, 7, 4),
    date(1985, 9, 2), date(1985, 11, 28), date(1985, 12, 25),
    date(1985, 9, 27),  # Hurricane Gloria
    # 1986
    date(1986, 1, 1), date(1986, 2, 17), date(1986, 3, 28), date(1986, 5, 26), date(1986, 7, 4),
    date(1986, 9, 1), date(1986, 11, 27), date(1986, 12, 25),
    # 1987
    date(1987, 1, 1), date(1987, 2, 16), date(1987, 4, 17), date(1987, 5, 25), date(1987, 7, 3),
    date(1987, 9, 7), date(1987, 11, 26), date(1987, 12, 25),
    # 1988
    date(1988, 1, 1), date(1988, 2, 15), date(1988, 4, 1), date(1988, 5, 30), date(1988, 7, 4),
    date(1988, 9, 5), date(1988, 11, 24), date(1988, 12, 26),
    # 1989
    date(1989, 1, 2), date(1989, 2, 20), date(1989, 3, 24), date(1989, 5, 29), date(1989, 7, 4),
    date(1989, 9, 4), date(1989, 11, 23), date(1989, 12, 25),
    # 1990
    date(1990, 1, 1), date(1990, 2, 19), date(1990, 4, 13), date(1990, 5, 28), date(1990, 7, 4),
    date(1990, 9, 3), date(1990, 11, 22), date(1990, 12, 25),
    # 1991
    date(1991, 1, 1), date(1991, 2, 18), date(1991, 3, 29), date(1991, 5, 27), date(1991, 7, 4),
    date(1991, 9, 2), date(1991, 11, 28), date(1991, 12, 25),
    # 1992
    date(1992, 1, 1), date(1992, 2, 17), date(1992, 4, 17), date(1992, 5, 25), date(1992, 7, 3),
    date(1992, 9, 7), date(1992, 11, 26), date(1992, 12, 25),
    # 1993
    date(1993, 1, 1), date(1993, 2, 15), date(1993, 4, 9), date(1993, 5, 31), date(1993, 7, 5),
    date(1993, 9, 6), date(1993, 11, 25), date(1993, 12, 24),
    # 1994 (New Year's Day fell on a Saturday: no weekday closure)
    date(1994, 2, 21), date(1994, 4, 1), date(1994, 5, 30), date(1994, 7, 4), date(1994, 9, 5),
    date(1994, 11, 24), date(1994, 12, 26),
    date(1994, 4, 27),  # national day of mourning (President Richard M. Nixon)
    # 1995
    date(1995, 1, 2), date(1995, 2, 20), date(1995, 4, 14), date(1995, 5, 29), date(1995, 7, 4),
    date(1995, 9, 4), date(1995, 11, 23), date(1995, 12, 25),
    # 1996
    date(1996, 1, 1), date(1996, 2, 19), date(1996, 4, 5), date(1996, 5, 27), date(1996, 7, 4),
    date(1996, 9, 2), date(1996, 11, 28), date(1996, 12, 25),
    # 1997
    date(1997, 1, 1), date(1997, 2, 17), date(1997, 3, 28), date(1997, 5, 26), date(1997, 7, 4),
    date(1997, 9, 1), date(1997, 11, 27), date(1997, 12, 25),
    # 1998 (Martin Luther King Jr. Day observed from 1998 on)
    date(1998, 1, 1), date(1998, 1, 19), date(1998, 2, 16), date(1998, 4, 10), date(1998, 5, 25),
    date(1998, 7, 3), date(1998, 9, 7), date(1998, 11, 26), date(1998, 12, 25),
    # 1999
    date(1999, 1, 1), date(1999, 1, 18), date(1999, 2, 15), date(1999, 4, 2), date(1999, 5, 31),
    date(1999, 7, 5), date(1999, 9, 6), date(1999, 11, 25), date(1999, 12, 24),
    # 2000 (New Year's Day fell on a Saturday: no weekday closure)
    date(2000, 1, 17), date(2000, 2, 21), date(2000, 4, 21), date(2000, 5, 29), date(2000, 7, 4),
    date(2000, 9, 4), date(2000, 11, 23), date(2000, 12, 25),
    # 2001 (the attacks of 11 September: closed 11-14 September)
    date(2001, 1, 1), date(2001, 1, 15), date(2001, 2, 19), date(2001, 4, 13), date(2001, 5, 28),
    date(2001, 7, 4), date(2001, 9, 3), date(2001, 11, 22), date(2001, 12, 25),
    date(2001, 9, 11),
    date(2001, 9, 12),
    date(2001, 9, 13),
    date(2001, 9, 14),
    # 2002
    date(2002, 1, 1), date(2002, 1, 21), date(2002, 2, 18), date(2002, 3, 29), date(2002, 5, 27),
    date(2002, 7, 4), date(2002, 9, 2), date(2002, 11, 28), date(2002, 12, 25),
    # 2003
    date(2003, 1, 1), date(2003, 1, 20), date(2003, 2, 17), date(2003, 4, 18), date(2003, 5, 26),
    date(2003, 7, 4), date(2003, 9, 1), date(2003, 11, 27), date(2003, 12, 25),
    # 2004
    date(2004, 1, 1), date(2004, 1, 19), date(2004, 2, 16), date(2004, 4, 9), date(2004, 5, 31),
    date(2004, 7, 5), date(2004, 9, 6), date(2004, 11, 25), date(2004, 12, 24),
    date(2004, 6, 11),  # national day of mourning (President Ronald W. Reagan)
})


def is_earlier_trading_day(day: date) -> bool:
    """True for a weekday of :data:`EARLIER_YEARS` that is not an NYSE holiday."""
    if not EARLIER_YEARS[0] <= day.year <= EARLIER_YEARS[1]:
        raise ValueError(f"the earlier NYSE calendar covers {EARLIER_YEARS[0]}-{EARLIER_YEARS[1]}, not {day}")
    return day.weekday() < 5 and day not in EARLIER_HOLIDAYS


def sessions(start: date, end: date) -> list[date]:
    """NYSE trading days from ``start`` to ``end``, both inclusive, from 1980 to the calendar's last year:
    this module's years, then :func:`finevo.market.calendar.trading_days`."""
    days: list[date] = []
    day = start
    first = date(COVERED_YEARS[0], 1, 1)
    while day <= end and day < first:
        if is_earlier_trading_day(day):
            days.append(day)
        day += timedelta(days=1)
    if day <= end:
        days.extend(trading_days(day, end))
    return days
