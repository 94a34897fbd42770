"""Drawdown episodes: every stretch in which the close stayed below its running peak by more than
a threshold, with its depth and length in trading days.

Nested helper functions keep a counter with nonlocal, and the episodes are summarised with
comprehensions (a walrus names each episode's depth once).
"""

from __future__ import annotations

import yfinance as yf


def drawdown_episodes(symbol: str, threshold: float = 0.05, period: str = "2y") -> dict[str, float]:
    """Number of drawdown episodes deeper than ``threshold``, the deepest, and the mean length."""
    if not 0.0 < threshold < 1.0:
        raise ValueError(f"threshold must be in (0, 1), got {threshold}")
    closes = yf.Ticker(symbol).history(period=period)["Close"].dropna()
    if len(closes) < 30:
        raise ValueError(f"{symbol}: not enough closes")
    drawdown = (closes / closes.cummax() - 1.0).tolist()

    episodes: list[list[float]] = []
    opened = 0

    def close_episode(current: list[float]) -> None:
        nonlocal opened
        if current:
            episodes.append(current)
            opened += 1

    current: list[float] = []
    for value in drawdown:
        if value < 0.0:
            current.append(value)
        else:
            close_episode(current)
            current = []
    close_episode(current)

    deep = [(depth, len(ep)) for ep in episodes if (depth := min(ep)) <= -threshold]
    lengths = [length for _, length in deep]
    return {
        "episodes": float(len(deep)),
        "deepest": float(min((d for d, _ in deep), default=0.0)),
        "mean_length": float(sum(lengths) / len(lengths)) if lengths else 0.0,
        "all_dips": float(opened),
    }


if __name__ == "__main__":
    out = drawdown_episodes("TSLA")
    assert out["deepest"] <= 0.0 and out["episodes"] <= out["all_dips"], out
    print(out)
