"""Donchian price channel: highest high, lowest low and their midpoint over N bars."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import yfinance as yf


@dataclass(frozen=True)
class Channel:
    upper: float
    middle: float
    lower: float


def donchian_channel(symbol: str, window: int = 20) -> dict[str, float]:
    bars = yf.Ticker(symbol).history(period="3mo").tail(window)
    if len(bars) < window:
        raise ValueError(f"{symbol}: need {window} bars")
    upper = float(bars["High"].max())
    lower = float(bars["Low"].min())
    return asdict(Channel(upper=upper, middle=(upper + lower) / 2.0, lower=lower))


if __name__ == "__main__":
    print(donchian_channel("GOOGL"))
