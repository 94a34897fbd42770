"""Average pairwise correlation of daily returns across several symbols (yf.download)."""

from __future__ import annotations

from itertools import combinations

import yfinance as yf


def average_pairwise_correlation(symbols: list[str], period: str = "6mo") -> float:
    if len(symbols) < 2:
        raise ValueError("need at least two symbols")
    data = yf.download(symbols, period=period, auto_adjust=True, progress=False)
    closes = data["Close"].dropna()
    returns = closes.pct_change().dropna()
    matrix = returns.corr()
    pairs = [float(matrix.loc[a, b]) for a, b in combinations(symbols, 2)]
    return sum(pairs) / len(pairs)


if __name__ == "__main__":
    print(average_pairwise_correlation(["AAPL", "MSFT", "GOOGL"]))
