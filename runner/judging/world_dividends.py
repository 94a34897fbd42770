"""The dividend shapes recorded histories have that the bundled snapshot lacks, for the hidden worlds.

In the snapshot every payer pays quarterly to the end and the others never paid. Yahoo serves a
third kind: a company that **stopped paying** years ago (a cut in a crisis, a policy change), whose
dividends all lie before a recent window. For it "the dividends of the last N years" is empty: the
oracle has no record to give (:func:`runner.judging.oracle.dividend_history` refuses), and a tool
that fills the empty window with the last dividend it finds before it answers a record nobody paid
in the window. :func:`stopped_payers` makes every stock that pays nothing such a company, in a
world whose history reaches far enough back (the ``leap`` world's).
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from finevo.market.snapshot import SymbolData
from runner.judging.world_market import Market, readjust, restate

#: The months and day a stopped payer's quarterly ex-dates fall on (the next session when closed):
#: mid-month, never on a whole-year edge of a month's end or a Feb 29.
STOPPED_MONTHS = (2, 5, 8, 11)
STOPPED_DAY = 14
#: Whole years before the earliest as-of day of the world it is used in that a stopped payer's last
#: dividend lies: one more than the benchmark's window of 3 years, so that window holds none.
STOPPED_YEARS = 4
#: A stopped payer's quarterly dividend, as a fraction of the close on its ex-date.
STOPPED_YIELD = 0.004


def stopped_payers(market: Market, until: date) -> tuple[Market, str]:
    """``market`` with every stock (``quoteType`` EQUITY) that pays no dividend in its history made a
    payer that stopped: a dividend each quarter from its first bar up to ``until`` (exclusive), none
    after. ``Adj Close`` and ``info``'s dividend fields follow."""
    data, words = [], []
    for item in market.data.values():
        raw = item.history
        paid = raw["Dividends"].to_numpy(dtype=float) != 0 if "Dividends" in raw.columns else np.zeros(len(raw), bool)
        if item.info.get("quoteType") != "EQUITY" or "Dividends" not in raw.columns or paid.any():
            data.append(item)
            continue
        index = pd.DatetimeIndex(raw.index)
        days = index.date
        first = days[0]
        raw = raw.copy()
        column = raw.columns.get_loc("Dividends")
        last = None
        for year in range(first.year, until.year + 1):
            for month in STOPPED_MONTHS:
                due = date(year, month, STOPPED_DAY)
                at = int(index.searchsorted(pd.Timestamp(due).tz_localize(index.tz)))
                if due < first or at >= len(days) or days[at] >= until:
                    continue
                raw.iloc[at, column] = round(float(raw["Close"].iloc[at]) * STOPPED_YIELD, 4)
                last = days[at]
        if last is None:
            data.append(item)
            continue
        words.append(f"{item.symbol} last paid {last}")
        data.append(restate(SymbolData(item.symbol, readjust(raw), item.income_yearly, item.income_quarterly,
                                       item.info, item.fast_info), market.as_of))
    return Market(data, market.as_of), ("dividends stopped: " + ", ".join(words)) if words else ""
