"""Monthly seasonality: the average return of each calendar month over the history, the best and
worst month, and how often the current month was positive.

Uses a dict comprehension over the grouped means, and a match statement with sequence patterns
to summarise the ranking.
"""

from __future__ import annotations

import pandas as pd
import yfinance as yf

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def monthly_seasonality(symbol: str, period: str = "5y") -> dict[str, float | str]:
    """Best and worst calendar month by mean monthly return, and the hit rate of the latest month."""
    closes = yf.Ticker(symbol).history(period=period)["Close"].dropna()
    monthly = closes.groupby([closes.index.year, closes.index.month]).agg(["first", "last"])
    if len(monthly) < 12:
        raise ValueError(f"{symbol}: need at least 12 months of closes")
    returns = pd.Series((monthly["last"] / monthly["first"] - 1.0).to_numpy(),
                        index=[m for _, m in monthly.index])
    grouped = returns.groupby(level=0)
    mean_return = grouped.mean()
    hits = grouped.apply(lambda r: float((r > 0).mean()))
    by_month = {_MONTHS[int(m) - 1]: float(v) for m, v in mean_return.items()}
    ranking = sorted(by_month, key=lambda k: by_month[k], reverse=True)
    match ranking:
        case [best]:
            worst = best
        case [best, *_, worst]:
            pass
        case _:
            raise ValueError("no months")
    current = int(closes.index[-1].month)
    return {"best_month": best, "worst_month": worst, "best_mean": by_month[best],
            "worst_mean": by_month[worst], "current_month_hit_rate": float(hits.get(current, 0.0))}


if __name__ == "__main__":
    out = monthly_seasonality("AAPL")
    assert out["best_mean"] >= out["worst_mean"], out
    print(out)
