"""Highest close of the last N calendar days, with the date it happened."""

from __future__ import annotations

import yfinance as yf


def highest_close(symbol: str, days: int = 30) -> dict[str, float | str]:
    closes = yf.Ticker(symbol).history(period=f"{days}d")["Close"].dropna()
    if closes.empty:
        raise ValueError(f"{symbol}: no closes in the last {days} days")
    stamp = closes.idxmax()
    return {"date": stamp.strftime("%Y-%m-%d"), "close": float(closes.max())}


if __name__ == "__main__":
    print(highest_close("TSLA"))
