"""The bundled snapshot: reproducible from its generator, plausible, and shaped like yfinance."""

from __future__ import annotations

import hashlib
import json
from datetime import date
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from finevo.market import synthetic
from finevo.market.calendar import trading_days
from finevo.market.snapshot import Snapshot, load_snapshot
from finevo.paths import snapshot_dir

STOCKS = ("AAPL", "MSFT", "GOOGL", "AMZN", "TSLA")


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return load_snapshot()


def _tree_hashes(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_regenerating_gives_identical_bytes(tmp_path: Path) -> None:
    synthetic.main(["--out", str(tmp_path)])
    fresh, committed = _tree_hashes(tmp_path), _tree_hashes(snapshot_dir())
    differing = sorted(rel for rel in fresh.keys() | committed.keys() if fresh.get(rel) != committed.get(rel))
    assert not differing, f"regenerated snapshot differs from benchmarks/data in: {differing}"
    assert "SYNTHETIC market data - not real prices" in (tmp_path / "README.md").read_text()


def test_a_different_seed_gives_different_prices(tmp_path: Path) -> None:
    synthetic.build(tmp_path, seed=7)
    assert (tmp_path / "history" / "AAPL.csv").read_bytes() != (snapshot_dir() / "history" / "AAPL.csv").read_bytes()


def test_manifest_labels_the_data_synthetic(snap: Snapshot) -> None:
    m = json.loads((snapshot_dir() / "manifest.json").read_text())
    assert m["synthetic"] is True
    assert m["label"] == "SYNTHETIC market data - not real prices"
    assert m["as_of"] == "2024-12-31"
    assert m["generator"] == "finevo.market.synthetic" and m["generator_version"] and isinstance(m["seed"], int)
    assert m["symbols"] == ["AAPL", "MSFT", "GOOGL", "AMZN", "TSLA", "SPY", "^GSPC"]
    assert sum((snapshot_dir() / rel).stat().st_size for rel in m["files"]) < 5_000_000
    assert snap.as_of == date(2024, 12, 31)


def test_every_symbol_covers_exactly_the_nyse_sessions(snap: Snapshot) -> None:
    expected = trading_days(date(2022, 1, 3), date(2024, 12, 31))
    for symbol in snap.symbols():
        hist = snap.history(symbol)
        assert [ts.date() for ts in hist.index] == expected, symbol


def test_bars_are_internally_consistent(snap: Snapshot) -> None:
    for symbol in snap.symbols():
        for frame in (snap.history(symbol), snap.history_unadjusted(symbol)):
            assert (frame["Low"] <= frame[["Open", "Close"]].min(axis=1) + 1e-9).all(), symbol
            assert (frame["High"] >= frame[["Open", "Close"]].max(axis=1) - 1e-9).all(), symbol
            assert (frame["Low"] > 0).all() and (frame["Volume"] > 0).all(), symbol


def test_levels_volatility_and_market_correlation_are_realistic(snap: Snapshot) -> None:
    market = snap.history("^GSPC")["Close"].pct_change().dropna()
    assert snap.history("^GSPC")["Close"].min() > 3000 and snap.history("^GSPC")["Close"].max() < 7000
    for symbol in (*STOCKS, "SPY"):
        close = snap.history(symbol)["Close"]
        returns = close.pct_change().dropna()
        vol = returns.std() * np.sqrt(252)
        assert 0.1 < vol < 0.8, (symbol, vol)
        assert returns.corr(market) > 0.5, symbol
        assert 20 < close.iloc[-1] < 1000, symbol
    spy, gspc = snap.history("SPY")["Close"].iloc[-1], snap.history("^GSPC")["Close"].iloc[-1]
    assert 9 < gspc / spy < 11


def test_dividend_payers_and_splits(snap: Snapshot) -> None:
    for symbol in ("AAPL", "MSFT", "SPY"):
        divs = snap.dividends(symbol)
        assert len(divs) == 12, symbol                       # quarterly over three years
        assert divs.groupby(divs.index.year).size().tolist() == [4, 4, 4]
    for symbol in ("AMZN", "TSLA", "^GSPC"):
        assert snap.dividends(symbol).empty, symbol
    googl = snap.dividends("GOOGL")
    assert len(googl) > 0 and googl.index.min().year == 2024
    assert snap.splits("TSLA").tolist() == [3.0]
    # Yahoo's dividend adjustment: adjusted closes before the last ex-date are lower than raw ones.
    raw, adj = snap.history_unadjusted("AAPL"), snap.history("AAPL")
    assert (adj["Close"].iloc[0] < raw["Close"].iloc[0]) and adj["Close"].iloc[-1] == raw["Close"].iloc[-1]


def test_income_statements_use_real_fiscal_period_ends(snap: Snapshot) -> None:
    aapl = snap.income_stmt("AAPL", "yearly")
    assert [c.strftime("%Y-%m-%d") for c in aapl.columns][:3] == ["2024-09-30", "2023-09-30", "2022-09-30"]
    msft = snap.income_stmt("MSFT", "yearly")
    assert [c.month for c in msft.columns] == [6] * len(msft.columns)
    googl = snap.income_stmt("GOOGL", "yearly")
    assert pd.Timestamp("2023-12-31") in googl.columns
    for symbol in STOCKS:
        for freq in ("yearly", "quarterly"):
            stmt = snap.income_stmt(symbol, freq)
            assert list(stmt.columns) == sorted(stmt.columns, reverse=True), (symbol, freq)
            for row in ("Total Revenue", "Cost Of Revenue", "Gross Profit", "Operating Income",
                        "Net Income", "Diluted EPS", "Basic EPS", "EBITDA"):
                assert row in stmt.index, (symbol, freq, row)
            gp = stmt.loc["Total Revenue"] - stmt.loc["Cost Of Revenue"]
            assert np.allclose(gp, stmt.loc["Gross Profit"], rtol=1e-6, atol=2e3)
        quarterly = snap.income_stmt(symbol, "quarterly")
        assert quarterly.columns.max() == pd.Timestamp("2024-09-30")
        assert quarterly.columns.min() <= pd.Timestamp("2022-03-31")
        revenue = snap.income_stmt(symbol, "yearly").loc["Total Revenue"].iloc[0]
        assert 5e10 < revenue < 1e12, symbol


def test_annual_figures_are_sums_of_the_fiscal_quarters(snap: Snapshot) -> None:
    # AAPL fiscal 2023 = the quarters ending Dec 2022, Mar, Jun and Sep 2023.
    quarterly = snap.income_stmt("AAPL", "quarterly")
    quarters = [pd.Timestamp(d) for d in ("2022-12-31", "2023-03-31", "2023-06-30", "2023-09-30")]
    annual = snap.income_stmt("AAPL", "yearly")[pd.Timestamp("2023-09-30")]
    assert quarterly.loc["Net Income", quarters].sum() == pytest.approx(annual["Net Income"], rel=1e-9)
    assert quarterly.loc["Total Revenue", quarters].sum() == pytest.approx(annual["Total Revenue"], rel=1e-9)


def test_index_and_etf_have_no_income_statement(snap: Snapshot) -> None:
    assert snap.income_stmt("SPY").empty and snap.income_stmt("^GSPC", "quarterly").empty


def test_quotes_agree_with_the_last_bar(snap: Snapshot) -> None:
    for symbol in snap.symbols():
        raw = snap.history_unadjusted(symbol)
        info, fast = snap.info(symbol), snap.fast_info(symbol)
        assert info["symbol"] == symbol and info["currency"] == "USD"
        assert info["regularMarketPrice"] == fast["lastPrice"] == raw["Close"].iloc[-1]
        assert info["previousClose"] == fast["previousClose"] == raw["Close"].iloc[-2]
        assert fast["dayHigh"] == raw["High"].iloc[-1] and fast["lastVolume"] == raw["Volume"].iloc[-1]
        assert fast["yearHigh"] >= fast["lastPrice"] >= fast["yearLow"]
        assert fast["fiftyDayAverage"] == pytest.approx(raw["Close"].iloc[-50:].mean(), rel=1e-6)
    for symbol in STOCKS:
        info = snap.info(symbol)
        assert info["marketCap"] == pytest.approx(info["currentPrice"] * info["sharesOutstanding"], rel=1e-6)
        assert 5 < info["trailingPE"] < 300
    assert snap.info("^GSPC")["quoteType"] == "INDEX" and snap.info("SPY")["quoteType"] == "ETF"


def test_an_as_of_without_a_year_of_bars_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The quotes' 52-week figures read the close a year before the last bar: an as-of within a year of
    the first bar (2023-01-02, a holiday whose last bar is 2022-12-30) is refused in one line, exit 2,
    and the first day that has a year behind it is generated."""
    with pytest.raises(SystemExit) as info:
        synthetic.main(["--out", str(tmp_path / "x"), "--as-of", "2023-01-02"])
    assert info.value.code == 2 and "on or after 2023-01-03" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    first = synthetic.generate(as_of=date(2023, 1, 3))
    assert first[0].history.index[-1].date() == date(2023, 1, 3)
