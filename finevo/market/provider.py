"""The market-data provider interface: the snapshot reader and the live yfinance provider both
implement it, and the replay shim and the oracle read through it.

Frame shapes are exactly yfinance 1.x's:

* ``history(symbol)``: daily rows, index ``DatetimeIndex`` named ``Date``, tz-aware
  (America/New_York, midnight), columns ``Open High Low Close Volume Dividends Stock Splits``
  (float64, Volume int64), exactly what ``Ticker.history(auto_adjust=True)`` returns; the replay
  shim derives the ``auto_adjust=False`` shape (with ``Adj Close``) from what the snapshot stores.
* ``dividends(symbol)``: Series named ``Dividends`` on the same kind of index.
* ``income_stmt(symbol, freq)``: rows = line items ("Net Income", "Total Revenue", ...),
  columns = period-end ``Timestamp`` (naive), newest first, float64.
* ``info(symbol)`` / ``fast_info(symbol)``: plain dicts of the fields yfinance users read.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Literal, Protocol

import pandas as pd

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject


class MarketProvider(Protocol):
    @property
    def as_of(self) -> date: ...

    def symbols(self) -> list[str]: ...

    def history(self, symbol: str) -> pd.DataFrame: ...

    def dividends(self, symbol: str) -> pd.Series: ...

    def income_stmt(self, symbol: str, freq: Literal["yearly", "quarterly"] = "yearly") -> pd.DataFrame: ...

    def info(self, symbol: str) -> JSONObject: ...

    def fast_info(self, symbol: str) -> JSONObject: ...
