"""Rate of change in percent, ROC = (close / close[lag] - 1) * 100."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import yfinance as yf


def rate_of_change(symbol: str, lag: int = 12, places: int = 4) -> float:
    """ROC over ``lag`` sessions, rounded half-up to ``places`` decimals."""
    closes = yf.Ticker(symbol).history(period="3mo")["Close"].dropna()
    if len(closes) <= lag:
        raise ValueError(f"{symbol}: need more than {lag} closes")
    roc = (closes.iloc[-1] / closes.iloc[-1 - lag] - 1.0) * 100.0
    quantum = Decimal(1).scaleb(-places)
    return float(Decimal(str(roc)).quantize(quantum, rounding=ROUND_HALF_UP))


if __name__ == "__main__":
    print(rate_of_change("MSFT"))
