"""Latest close and daily change from the price history (what a quote endpoint would give)."""

from __future__ import annotations

import yfinance as yf


def latest_quote(symbol: str) -> dict[str, float]:
    bars = yf.Ticker(symbol).history(period="5d")
    if len(bars) < 2:
        raise ValueError(f"{symbol}: need two sessions")
    last, prev = float(bars["Close"].iloc[-1]), float(bars["Close"].iloc[-2])
    return {"close": last, "change": last - prev, "change_pct": (last / prev - 1.0) * 100.0,
            "volume": float(bars["Volume"].iloc[-1])}


if __name__ == "__main__":
    print(latest_quote("^GSPC"))
