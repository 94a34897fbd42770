"""Maximum drawdown of daily closes over the last N trading sessions."""

from __future__ import annotations

import yfinance as yf


def max_drawdown(symbol: str, days: int = 250) -> float:
    """Largest peak-to-trough fall of Close within the last ``days`` sessions, as a negative fraction.

    -0.25 means the price fell 25 % below its running peak. Raises ValueError on too little data.
    """
    if days < 2:
        raise ValueError(f"days must be at least 2, got {days}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < days:
        raise ValueError(f"need {days} sessions of {symbol}, have {len(closes)}")
    window = closes.tail(days)
    return float((window / window.cummax() - 1.0).min())


if __name__ == "__main__":
    result = max_drawdown("MSFT", 250)
    assert isinstance(result, float) and -1.0 <= result <= 0.0, result
    print(result)
