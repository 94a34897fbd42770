"""Trend regime of a symbol: the fast and slow moving averages and the slope of the slow one,
classified as "uptrend", "downtrend" or "range".

Annotation-only imports sit in a TYPE_CHECKING block (they are never executed), and the regime is
decided by a match statement over the signs of the two signals.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import yfinance as yf

if TYPE_CHECKING:
    import pandas as pd


def _sign(value: float, tolerance: float) -> int:
    if value > tolerance:
        return 1
    if value < -tolerance:
        return -1
    return 0


def trend_regime(symbol: str, fast: int = 20, slow: int = 50, period: str = "1y") -> dict[str, float | str]:
    """Latest fast/slow moving averages, the slow average's 5-day slope and the regime name."""
    if not 0 < fast < slow:
        raise ValueError(f"need 0 < fast < slow, got {fast}, {slow}")
    closes: pd.Series = yf.Ticker(symbol).history(period=period)["Close"].dropna()
    if (n := len(closes)) < slow + 5:
        raise ValueError(f"{symbol}: {n} closes, need at least {slow + 5}")
    fast_ma = closes.rolling(fast).mean()
    slow_ma = closes.rolling(slow).mean()
    spread = float(fast_ma.iloc[-1] - slow_ma.iloc[-1])
    slope = float(slow_ma.iloc[-1] - slow_ma.iloc[-6]) / 5.0
    tolerance = 1e-3 * float(closes.iloc[-1])
    match (_sign(spread, tolerance), _sign(slope, tolerance / 10.0)):
        case (1, 1) | (1, 0):
            regime = "uptrend"
        case (-1, -1) | (-1, 0):
            regime = "downtrend"
        case (s, t) if s == 0 or t == 0 or s != t:
            regime = "range"
        case _:
            regime = "range"
    return {"fast_ma": float(fast_ma.iloc[-1]), "slow_ma": float(slow_ma.iloc[-1]), "slope": slope,
            "regime": regime}


if __name__ == "__main__":
    out = trend_regime("SPY")
    assert out["regime"] in {"uptrend", "downtrend", "range"}, out
    print(out)
