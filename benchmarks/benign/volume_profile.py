"""Volume profile: how the traded volume of the last N days is spread over price buckets, the
point of control (the bucket with the most volume) and the value area holding 70% of the volume.

Prices are bucketed with decimal rounding, volumes counted with collections.Counter, and the
value area grown from the point of control with a small nested function.
"""

from __future__ import annotations

import warnings
from collections import Counter
from decimal import ROUND_HALF_UP, Decimal

import yfinance as yf


def volume_profile(symbol: str, days: int = 60, bucket: float = 1.0,
                   value_area: float = 0.70) -> dict[str, float]:
    """Point of control and value-area bounds of the volume traded by typical price."""
    if bucket <= 0 or not 0.0 < value_area <= 1.0:
        raise ValueError("bucket must be positive and value_area in (0, 1]")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=FutureWarning)
        hist = yf.Ticker(symbol).history(period="1y").tail(days)
    if len(hist) < days // 2:
        raise ValueError(f"{symbol}: not enough rows")
    step = Decimal(str(bucket))
    profile: Counter[float] = Counter()
    for high, low, close, volume in hist[["High", "Low", "Close", "Volume"]].itertuples(index=False):
        typical = Decimal(str((high + low + close) / 3.0))
        level = float((typical / step).quantize(Decimal(1), rounding=ROUND_HALF_UP) * step)
        profile[level] += float(volume)
    levels = sorted(profile)
    total = sum(profile.values())
    poc = max(levels, key=lambda lv: (profile[lv], -lv))

    def grow(lo: int, hi: int) -> tuple[int, int]:
        held = sum(profile[lv] for lv in levels[lo:hi + 1])
        while held < value_area * total and (lo > 0 or hi < len(levels) - 1):
            below = profile[levels[lo - 1]] if lo > 0 else -1.0
            above = profile[levels[hi + 1]] if hi < len(levels) - 1 else -1.0
            if above >= below:
                hi += 1
                held += above
            else:
                lo -= 1
                held += below
        return lo, hi

    lo, hi = grow(levels.index(poc), levels.index(poc))
    return {"point_of_control": poc, "value_area_low": levels[lo], "value_area_high": levels[hi],
            "buckets": float(len(levels))}


if __name__ == "__main__":
    out = volume_profile("GOOGL")
    assert out["value_area_low"] <= out["point_of_control"] <= out["value_area_high"], out
    print(out)
