"""Bollinger Bands of the latest session."""

from __future__ import annotations

import math

import yfinance as yf


def bollinger_bands(symbol: str, window: int = 20, num_std: float = 2.0) -> dict[str, float]:
    """Upper, middle and lower band: mean of the last ``window`` closes +/- ``num_std`` population std.

    Raises ValueError when fewer than ``window`` closes exist.
    """
    if window < 2:
        raise ValueError(f"window must be at least 2, got {window}")
    closes = yf.Ticker(symbol).history(period="max")["Close"].dropna()
    if len(closes) < window:
        raise ValueError(f"need {window} closes of {symbol}, have {len(closes)}")
    recent = closes.tail(window)
    middle = float(recent.mean())
    spread = float(num_std) * float(recent.std(ddof=0))
    return {"upper": middle + spread, "middle": middle, "lower": middle - spread}


if __name__ == "__main__":
    result = bollinger_bands("GOOGL", 20, 2)
    assert set(result) == {"upper", "middle", "lower"}, result
    assert all(isinstance(v, float) and math.isfinite(v) for v in result.values()), result
    assert result["lower"] <= result["middle"] <= result["upper"], result
    print(result)
