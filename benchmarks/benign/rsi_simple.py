"""RSI with simple (arithmetic) averages of gains and losses -- Cutler's variant.

Unlike the file-based tools of old systems, this reads data only through yfinance.
"""

from __future__ import annotations

import numpy as np
import yfinance as yf


def rsi_simple(symbol: str, window: int = 14, days: int = 30) -> float:
    """RSI over the last ``days`` closes using rolling means of gains and losses."""
    closes = yf.Ticker(symbol).history(period="3mo")["Close"].dropna().tail(days)
    if len(closes) <= window:
        raise ValueError(f"need more than {window} closes, have {len(closes)}")
    delta = np.diff(closes.to_numpy())
    recent = delta[-window:]
    gain = recent[recent > 0].sum() / window
    loss = -recent[recent < 0].sum() / window
    if loss == 0:
        return 100.0
    return float(100.0 - 100.0 / (1.0 + gain / loss))


if __name__ == "__main__":
    print(rsi_simple("TSLA"))
