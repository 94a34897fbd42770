"""The shapes recorded income statements have that a generated one lacks, for the hidden worlds.

A generated statement has one column per quarter, every line item filled, a profit in every quarter.
Yahoo's statements are not so tidy, and a tool registered as verified meets them when it is reused:

* **a missing line item**: a filed quarter whose figures are there except one row (Yahoo leaves
  single cells NaN): the quarter is reported; only a column whose figures are *all* missing is
  not filed yet (:func:`runner.judging.world_market.unfiled_quarter`). A tool that drops every
  column holding a NaN answers an older quarter;
* **a loss**: the newest reported quarter a loss (a negative Net Income). A tool that filters the
  row with ``> 0`` to drop NaN drops the loss and answers an older quarter;
* **a skipped quarter**: a column missing between older and newer ones (a quarter Yahoo does not
  serve). A tool that counts columns back from the newest instead of matching a column to the
  quarter's end answers the neighbouring quarter for every older one;
* **fiscal quarters off the calendar's**: a company whose quarters end in January, April, July and
  October (Cisco's, Nvidia's, Walmart's calendars), a month from any calendar quarter's end.

:func:`statement_shapes` puts the first three into every stock's quarterly statement,
:func:`off_cycle_quarters` the last into one stock's statements; the oracle reads them as recorded
(:func:`runner.judging.oracle.net_income`: the column within 15 days of the quarter's end, the newest
column whose Net Income is reported, whatever its sign; a fiscal quarter in the month the company's
annual statements end).
"""

from __future__ import annotations

import calendar

import numpy as np
import pandas as pd

from finevo.market.snapshot import SymbolData
from runner.judging.world_market import Market, _filed, restate

#: Rows never left empty by :func:`statement_shapes` (the ones the benchmark asks for, and those
#: ``info``'s trailing figures are summed from).
KEPT_ROWS = frozenset({"Net Income", "Total Revenue", "Diluted EPS"})
#: Which reported column (0 = the newest) a world drops as a skipped quarter: one between the newest,
#: which the latest-quarter tasks ask for, and the older ones a year-and-quarter task asks for.
SKIPPED_COLUMN = 2


def _loss(frame: pd.DataFrame, column: object) -> None:
    """``column`` of ``frame`` turned into a loss of the same size: every Net Income row and the
    per-share earnings negated (in place)."""
    rows = [r for r in frame.index if "Net Income" in str(r) or str(r) in ("Basic EPS", "Diluted EPS")]
    for row in rows:
        value = frame.at[row, column]
        if pd.notna(value):
            frame.at[row, column] = -abs(float(value))


def statement_shapes(market: Market, rng: np.random.Generator) -> tuple[Market, str]:
    """``market`` with, in every quarterly statement, the newest reported quarter a loss holding one
    missing line item (drawn from the rows outside :data:`KEPT_ROWS`), and the reported column
    :data:`SKIPPED_COLUMN` (counted from the newest) gone; ``info``'s statement fields follow."""
    data, words = [], []
    for item in market.data.values():
        frame = item.income_quarterly
        filed = _filed(frame)
        if frame is None or filed is None or len(filed.columns) <= SKIPPED_COLUMN + 1:
            data.append(item)
            continue
        ordered = sorted(filed.columns, key=lambda c: pd.Timestamp(c), reverse=True)
        newest, skipped = ordered[0], ordered[SKIPPED_COLUMN]
        out = frame.drop(columns=[skipped]).copy()
        _loss(out, newest)
        free = [r for r in out.index if r not in KEPT_ROWS and pd.notna(out.at[r, newest])]
        gap = str(free[int(rng.integers(len(free)))]) if free else ""
        if gap:
            out.at[gap, newest] = np.nan
        day = pd.Timestamp(newest).date()
        words.append(f"{item.symbol} {day} a loss{f' without {gap!r}' if gap else ''}, "
                     f"{pd.Timestamp(skipped).date()} skipped")
        data.append(restate(SymbolData(item.symbol, item.history, item.income_yearly, out, item.info,
                                       item.fast_info), market.as_of))
    return Market(data, market.as_of), ("statements as recorded: " + "; ".join(words)) if words else ""


#: The stock whose statements :func:`off_cycle_quarters` moves: the second stock of the generated
#: market, the first other symbol a statement task's derived probe names (the first, AAPL, is the
#: benchmark's own subject). Its fiscal year ends in June in the generator; moved, in July.
OFF_CYCLE_SYMBOL = "MSFT"


def off_cycle_quarters(market: Market, symbol: str = OFF_CYCLE_SYMBOL) -> tuple[Market, str]:
    """``market`` with ``symbol``'s quarterly and annual statement columns dated one month later (a
    quarter ending March 31 ends April 30, a fiscal year ending in June ends in July), so its fiscal
    quarters end in January, April, July and October; a column dated after the as-of date is dropped
    (not reported yet), and ``info``'s statement fields follow. Each annual column still sums its
    four quarters. No calendar quarter's end lies within 15 days of such a quarter's, so the calendar
    reading has no answer for this company and the fiscal reading has one: a tool that matches a
    column to a calendar quarter with a wider tolerance (45 days) answers a quarter no reading
    gives. Apply it before :func:`runner.judging.world_market.weekly_fiscal_calendar`, which then
    dates the moved columns as a 52/53-week calendar does."""
    item = market.data.get(symbol)
    if item is None or item.income_quarterly is None or item.income_quarterly.empty:
        return market, ""

    def later(frame: pd.DataFrame) -> pd.DataFrame:
        out = frame.copy()
        out.columns = pd.DatetimeIndex([pd.Timestamp(c) + pd.offsets.MonthEnd(1) for c in frame.columns])
        return out.loc[:, [c.date() <= market.as_of for c in out.columns]]

    quarterly = later(item.income_quarterly)
    yearly = later(item.income_yearly) if item.income_yearly is not None else None
    moved = restate(SymbolData(item.symbol, item.history, yearly, quarterly, item.info, item.fast_info),
                    market.as_of)
    data = [moved if other.symbol == symbol else other for other in market.data.values()]
    months = sorted({c.month for c in quarterly.columns})
    return Market(data, market.as_of), (f"{symbol}'s fiscal quarters end in "
                                        f"{', '.join(calendar.month_abbr[m] for m in months)}")
