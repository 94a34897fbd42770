"""The shapes recorded income statements have that a generated one lacks, for the hidden worlds.

A generated statement has one column per quarter, every line item filled, a profit in every quarter.
Yahoo's statements are not so tidy, and a tool registered as verified meets them when it is reused:

* **missing line items**: a filed quarter with most of its cells empty (Yahoo leaves cells NaN, and
  serves a quarter it has not read in full with the earnings release's figures first: drawn rows,
  and its Total Revenue and EPS, :data:`EMPTY_BESIDE`): the quarter is reported, as its Net Income
  is; a column without Net Income is not filed yet, whatever other figures it shows
  (:func:`runner.judging.world_market.unfiled_quarter`). A tool that drops every column holding a
  NaN (or most of its cells NaN), or takes a quarter as filed only when its EPS (or revenue) is there
  too, answers an older quarter;
* **an empty Total Revenue**: a fiscal year whose Total Revenue cell is empty while its siblings
  (Operating Revenue, Net Income) are there, and a year whose EPS is empty while its Total Revenue
  is there (:func:`revenue_gaps`). The year's total revenue has no answer: a tool that falls back
  to Operating Revenue (or any other line) answers a figure nobody asked; one that takes a year as
  reported only when its EPS is there raises where the answer is;
* **a loss**: the newest reported quarter a loss (a negative Net Income). A tool that filters the
  row with ``> 0`` to drop NaN drops the loss and answers an older quarter;
* **a skipped quarter**: a column missing between older and newer ones (a quarter Yahoo does not
  serve). A tool that counts columns back from the newest instead of matching a column to the
  quarter's end answers the neighbouring quarter for every older one;
* **fiscal quarters off the calendar's**: a company whose quarters end in January, April, July and
  October (Cisco's, Nvidia's, Walmart's calendars), a month from any calendar quarter's end;
* **fiscal years in other months than the company's own**: companies do change their fiscal years,
  and a tool reused for a company it was not written for meets every calendar there is. A tool that
  keeps a table of fiscal year-ends per ticker (Apple's September, everyone else's December) answers
  another quarter wherever the statements say otherwise;
* **sibling line items with figures of their own**: the generator copies one figure into several
  rows (Operating Revenue is Total Revenue, Net Income Common Stockholders is Net Income, ...), as a
  plain company's statement shows it; a bank's, an insurer's or a company with preferred stock's do
  not. A tool that reads the sibling row answers right only where they are copies.

:func:`statement_shapes` puts the missing line items, the loss and the skipped quarter into every
stock's quarterly statement, :func:`revenue_gaps` the empty Total Revenue into the annual revenue
task's subject's annual statement, :func:`off_cycle_quarters` the quarters off the calendar's into two
stocks' statements (one whose fiscal year then ends in July, one in January), :func:`moved_fiscal_years`
draws the fiscal years in other months (the generator sums the same quarters into the drawn years), and
:func:`sibling_rows` puts the sibling line items into every statement of every world; the oracle reads them as recorded
(:func:`runner.judging.oracle.net_income`: the column within 15 days of the quarter's end, the newest
column whose Net Income is reported, whatever its sign; a fiscal quarter in the month the company's
annual statements end).
"""

from __future__ import annotations

import calendar
import math

import numpy as np
import pandas as pd

from finevo.market.snapshot import SymbolData
from runner.judging.world_market import Market, _filed, restate

#: The row never left empty in a reported quarter by :func:`statement_shapes`: the one that makes a
#: quarter reported (the latest-quarter task's reading), the row the quarterly tasks ask.
KEPT_ROWS = frozenset({"Net Income"})
#: The rows :func:`statement_shapes` leaves empty in the newest reported quarter besides the drawn one:
#: the rows a tool may wrongly require beside the one it is asked (a quarter taken as filed only when
#: its EPS or its revenue is there too). Yahoo serves a filed quarter with such cells empty; its
#: ``info`` still sums the filed figures (:func:`statement_shapes` restates before emptying them).
EMPTY_BESIDE = ("Total Revenue", "Basic EPS", "Diluted EPS")
#: The share of its other rows (drawn) that the newest reported quarter leaves empty besides
#: :data:`EMPTY_BESIDE`: more than half its cells, as Yahoo serves a quarter whose filing it has not
#: read in full (the figures of the earnings release first). A tool that keeps only columns with most
#: cells filled (``dropna(axis=1, thresh=...)``) drops a reported quarter.
THIN_SHARES = (0.6, 0.85)
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
    """``market`` with, in every quarterly statement, the newest reported quarter a loss holding
    missing line items (a drawn share, :data:`THIN_SHARES`, of the rows outside :data:`KEPT_ROWS` and
    :data:`EMPTY_BESIDE`, and the rows of :data:`EMPTY_BESIDE`: most of its cells), and the reported
    column :data:`SKIPPED_COLUMN` (counted from the newest) gone; ``info``'s statement fields follow the
    filed figures: they are summed before the cells are emptied, as Yahoo's trailing figures count a
    quarter whose cell its statement leaves empty."""
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
        free = [r for r in out.index if r not in KEPT_ROWS and r not in EMPTY_BESIDE and pd.notna(out.at[r, newest])]
        share = float(rng.uniform(*THIN_SHARES))
        gaps = [str(r) for r in rng.permutation(np.array(free, dtype=object))[:math.ceil(share * len(free))]]
        stated = restate(SymbolData(item.symbol, item.history, item.income_yearly, out.copy(), item.info,
                                    item.fast_info), market.as_of)
        empty = [r for r in (*EMPTY_BESIDE, *gaps) if r in out.index]
        out.loc[empty, newest] = np.nan
        day = pd.Timestamp(newest).date()
        words.append(f"{item.symbol} {day} a loss without {len(empty)} of its {len(out.index)} rows "
                     f"({', '.join(repr(r) for r in EMPTY_BESIDE if r in out.index)} among them), "
                     f"{pd.Timestamp(skipped).date()} skipped")
        data.append(SymbolData(item.symbol, item.history, item.income_yearly, out, stated.info, item.fast_info))
    return Market(data, market.as_of), ("statements as recorded: " + "; ".join(words)) if words else ""


#: The stock whose statements :func:`off_cycle_quarters` moves: the second stock of the generated
#: market, the first other symbol a statement task's derived probe names (the first, AAPL, is the
#: benchmark's own subject). Its fiscal year ends in June in the generator; moved, in July.
OFF_CYCLE_SYMBOL = "MSFT"
#: The stock whose fiscal year the seed world ends in January (Walmart's, Nvidia's, Target's): the
#: generator's December year moved a month by :func:`off_cycle_quarters`. The annual revenue task's
#: own subject (fetch_003), so every run asks its revenue there: "fiscal 2023" is the year ending in
#: January 2023 (a fiscal year is named by the calendar year it ends in, as these companies name
#: theirs), and a tool that names a January-March year by the calendar year before it answers
#: another year, or none. Not AMZN, the latest-quarter task's subject (fetch_006): a quarter ending
#: in January has not ended by the seed world's as-of day, so its statement would lose the ended
#: but unfiled newest quarter that task is judged on.
JANUARY_YEAR_SYMBOL = "GOOGL"
#: The months the seed world's fiscal years end in, drawn per company and world in place of the
#: generator's (:data:`finevo.market.synthetic.FUNDAMENTALS`: Apple's September, the December of
#: Amazon and Tesla). Each choice ends a calendar quarter, so both readings of "2023 Q1" answer, with
#: different quarters: a tool whose table of fiscal year-ends holds Apple's real one (or defaults
#: every other ticker to December) answers a quarter no reading gives. Apple's year, the fiscal
#: quarter task's own subject (fetch_001), ends in March in every seed world: a year ending in
#: January to March is named by the calendar year it ends in there too, so a tool that names it by
#: the year it starts in (Toyota's style) answers the next year's quarter on the task's own
#: arguments, whichever symbols the run's probes draw (with June drawn too, two seeds in five let
#: it pass). Its year stays off December, so its statements keep their 52/53-week dates
#: (:func:`runner.judging.world_market.weekly_fiscal_calendar`); MSFT and GOOGL keep the generator's
#: June and December, which :func:`off_cycle_quarters` moves a month.
MOVED_FISCAL_YEARS: dict[str, tuple[int, ...]] = {"AAPL": (3,), "AMZN": (3, 6, 9), "TSLA": (3, 6, 9)}


def moved_fiscal_years(rng: np.random.Generator) -> tuple[dict[str, int], str]:
    """``{symbol: month}`` of :data:`MOVED_FISCAL_YEARS`, one month drawn for each company (for
    :func:`finevo.market.synthetic.generate`'s ``fiscal_year_ends``), and the draw in words."""
    months = {symbol: int(rng.choice(choices)) for symbol, choices in MOVED_FISCAL_YEARS.items()}
    return months, "fiscal years ending in " + ", ".join(f"{calendar.month_abbr[m]} ({s})" for s, m in months.items())


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
    years = sorted({c.month for c in yearly.columns}) if yearly is not None else []
    return Market(data, market.as_of), (f"{symbol}'s fiscal quarters end in "
                                        f"{', '.join(calendar.month_abbr[m] for m in months)}"
                                        + (f", its fiscal year in {calendar.month_abbr[years[0]]}"
                                           if len(years) == 1 else ""))


#: Each row the generator fills with a copy of another row's figure: ``row -> (the row it copies,
#: the range of its own figure as a fraction of that row's)``. The ranges never hold 1 and never
#: overlap within a group, so no two rows of a statement are equal and none equals a row a task
#: asks (Total Revenue, Net Income): operating revenue a little below total revenue (other
#: revenue), net income to common below net income (preferred dividends), net income including
#: noncontrolling interests above it (the minority's share), and so on.
SIBLING_ROWS: dict[str, tuple[str, float, float]] = {
    "Operating Revenue": ("Total Revenue", 0.92, 0.98),
    "Net Income Common Stockholders": ("Net Income", 0.96, 0.98),
    "Diluted NI Availto Com Stockholders": ("Net Income", 0.981, 0.99),
    "Normalized Income": ("Net Income", 0.93, 0.95),
    "Net Income From Continuing And Discontinued Operation": ("Net Income", 1.002, 1.008),
    "Net Income From Continuing Operation Net Minority Interest": ("Net Income", 1.01, 1.02),
    "Net Income Including Noncontrolling Interests": ("Net Income", 1.025, 1.04),
    "Net Income Continuous Operations": ("Net Income", 1.045, 1.06),
    "Reconciled Cost Of Revenue": ("Cost Of Revenue", 0.97, 0.99),
    "Normalized EBITDA": ("EBITDA", 1.01, 1.04),
    "Total Operating Income As Reported": ("Operating Income", 0.96, 0.99),
    "Other Non Operating Income Expenses": ("Other Income Expense", 0.6, 0.9),
    "Net Non Operating Interest Income Expense": ("Net Interest Income", 0.85, 0.95),
    "Interest Expense Non Operating": ("Interest Expense", 0.9, 0.97),
    "Interest Income Non Operating": ("Interest Income", 0.9, 0.97),
}


def _own_figures(frame: pd.DataFrame | None, factors: dict[str, float]) -> pd.DataFrame | None:
    """``frame`` with each row of ``factors`` its base row's figures times its factor, rounded to whole
    thousands as filed (a cell its base row leaves empty stays empty)."""
    if frame is None or frame.empty:
        return frame
    out = frame.copy()
    for row, factor in factors.items():
        base = SIBLING_ROWS[row][0]
        if row in out.index and base in out.index:
            out.loc[row] = (out.loc[base].astype("float64") * factor / 1e3).round() * 1e3
    return out


def sibling_rows(market: Market, rng: np.random.Generator) -> Market:
    """``market`` with every row of :data:`SIBLING_ROWS` that copies its base row given figures of its
    own: the base row's times a factor drawn from the row's range, one per symbol and row, the same
    in the quarterly and the annual statement (an annual column still sums its quarters). Draws only
    from ``rng`` (a stream of its own: no other value of a world moves, and a world's description
    is unchanged: every world has these rows); ``info`` is untouched (its statement fields read
    Total Revenue, Net Income and Diluted EPS)."""
    data = []
    for item in market.data.values():
        factors = {row: float(rng.uniform(low, high)) for row, (_, low, high) in SIBLING_ROWS.items()}
        data.append(SymbolData(item.symbol, item.history, _own_figures(item.income_yearly, factors),
                               _own_figures(item.income_quarterly, factors), item.info, item.fast_info))
    return Market(data, market.as_of)


#: The rows :func:`revenue_gaps` leaves empty in the fiscal year before the newest (its Total Revenue
#: reported): a year is reported by the row asked, not by its EPS.
EMPTY_EPS_ROWS = ("Basic EPS", "Diluted EPS")
#: The fiscal year (0 = the newest) whose Total Revenue :func:`revenue_gaps` leaves empty: two back,
#: the year before the revenue task's own, asked by its derived probe of the year.
REVENUE_GAP_YEAR = 2


def revenue_gaps(market: Market, symbol: str = JANUARY_YEAR_SYMBOL) -> tuple[Market, str]:
    """``market`` with ``symbol``'s annual statement holding, in its fiscal year
    :data:`REVENUE_GAP_YEAR` back (counted from the newest), an empty Total Revenue cell beside its
    other figures (Operating Revenue, Net Income: the year is filed), and, in the year before the
    newest, empty EPS cells (:data:`EMPTY_EPS_ROWS`) beside its Total Revenue. The gap year's total
    revenue is undefined on these data (:func:`runner.judging.oracle.total_revenue` reads the Total
    Revenue row only and raises :class:`~runner.judging.oracle.Undefined` for an empty cell), so a
    tool asked it must raise; the year before the newest is answered.

    ``symbol`` is the annual revenue task's subject (fetch_003's GOOGL, whose seed-world fiscal years
    end in January): the year before the newest is the task's own (2023), the gap year the one before
    it, which the derived probe of the year asks (2022) in every run. The newest year (2024) stays
    whole: it is reported by the seed world's as-of day, so a tool that refuses every year of the
    current calendar year ("not reported yet" by the clock) fails on the probe asking it.
    ``info`` is untouched: its statement fields are summed from the quarterly statement."""
    item = market.data.get(symbol)
    yearly = item.income_yearly if item is not None else None
    if item is None or yearly is None or yearly.empty or "Total Revenue" not in yearly.index:
        return market, ""
    ordered = sorted(yearly.columns, key=lambda c: pd.Timestamp(c), reverse=True)
    if len(ordered) <= REVENUE_GAP_YEAR:
        return market, ""
    out = yearly.copy()
    gap = ordered[REVENUE_GAP_YEAR]
    out.at["Total Revenue", gap] = np.nan
    out.loc[[r for r in EMPTY_EPS_ROWS if r in out.index], ordered[1]] = np.nan
    words = (f"{symbol}'s fiscal year {pd.Timestamp(gap).date()} without 'Total Revenue', "
             f"{pd.Timestamp(ordered[1]).date()} without its EPS")
    changed = SymbolData(item.symbol, item.history, out, item.income_quarterly, item.info, item.fast_info)
    return Market([changed if other.symbol == symbol else other for other in market.data.values()],
                  market.as_of), words
