"""Replay shim semantics: periods from the as-of date, exclusive end, clear errors, install()."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import date
from typing import Any

import pandas as pd
import pytest

from finevo.market import replay
from finevo.market.snapshot import Snapshot, load_snapshot


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return load_snapshot()


@pytest.fixture
def shim(snap: Snapshot) -> Any:
    replay.bind(snap)
    yield replay
    replay.bind(None)


def _dates(frame: pd.DataFrame) -> list[str]:
    return [ts.strftime("%Y-%m-%d") for ts in frame.index]


def test_periods_count_back_from_the_as_of_date(shim: Any, snap: Snapshot) -> None:
    t = shim.Ticker("AAPL")
    assert _dates(t.history(period="1d")) == ["2024-12-31"]
    assert _dates(t.history(period="5d")) == ["2024-12-24", "2024-12-26", "2024-12-27", "2024-12-30", "2024-12-31"]
    month = t.history(period="1mo")           # default period too
    assert _dates(month)[0] == "2024-12-02" and _dates(month)[-1] == "2024-12-31"
    assert _dates(t.history()) == _dates(month)
    year = t.history(period="1y")
    assert _dates(year)[0] == "2024-01-02" and len(year) == 252
    assert _dates(t.history(period="ytd"))[0] == "2024-01-02"
    assert len(t.history(period="max")) == len(snap.history("AAPL"))
    assert len(t.history(period="10y")) == len(snap.history("AAPL"))   # only what is recorded
    assert _dates(t.history(period="30d"))[0] == "2024-12-02"


def test_end_is_exclusive_and_start_inclusive(shim: Any) -> None:
    frame = shim.Ticker("MSFT").history(start="2024-12-02", end="2024-12-31")
    assert _dates(frame)[0] == "2024-12-02" and _dates(frame)[-1] == "2024-12-30"
    frame = shim.Ticker("MSFT").history(start=date(2024, 12, 30))
    assert _dates(frame) == ["2024-12-30", "2024-12-31"]
    with pytest.raises(ValueError, match="nonsense"):
        shim.Ticker("MSFT").history(period="1mo", start="2024-01-02", end="2024-02-01")


def test_values_are_the_snapshot_values(shim: Any, snap: Snapshot) -> None:
    ours = shim.Ticker("^GSPC").history(period="max")
    pd.testing.assert_frame_equal(ours, snap.history("^GSPC"))
    raw = shim.Ticker("AAPL").history(period="max", auto_adjust=False)
    assert "Adj Close" in raw.columns
    pd.testing.assert_series_equal(raw["Close"], snap.history_unadjusted("AAPL")["Close"])


def test_statements_quotes_and_events(shim: Any, snap: Snapshot) -> None:
    t = shim.Ticker("GOOGL")
    pd.testing.assert_frame_equal(t.income_stmt, snap.income_stmt("GOOGL", "yearly"))
    pd.testing.assert_frame_equal(t.quarterly_financials, snap.income_stmt("GOOGL", "quarterly"))
    assert "NetIncome" in t.get_income_stmt(pretty=False).index
    as_dict = t.get_income_stmt(as_dict=True)
    assert isinstance(as_dict, dict) and len(as_dict) == len(snap.income_stmt("GOOGL").columns)
    # what the gate reads to label the data is never served to a tool
    assert "synthetic" in snap.info("GOOGL") and "synthetic" not in t.info
    assert t.info == {k: v for k, v in snap.info("GOOGL").items() if k != "synthetic"}
    assert t.get_info()["symbol"] == "GOOGL"
    fast = t.fast_info
    assert fast.last_price == fast["lastPrice"] == fast["last_price"] == snap.fast_info("GOOGL")["lastPrice"]
    assert "lastPrice" in fast and dict(fast)["yearHigh"] == snap.fast_info("GOOGL")["yearHigh"]
    assert json.loads(fast.toJSON())["currency"] == "USD"
    assert shim.Ticker("SPY").income_stmt.empty                     # ETFs have none, as on Yahoo
    assert list(shim.Ticker("TSLA").splits) == [3.0]
    assert len(shim.Ticker("AAPL").get_dividends(period="1y")) == 4
    actions = shim.Ticker("AAPL").actions
    assert list(actions.columns) == ["Dividends", "Stock Splits"] and (actions["Dividends"] > 0).all()


def test_download_layout(shim: Any) -> None:
    data = shim.download("AAPL MSFT", period="5d", progress=False)
    assert data.columns.names == ["Price", "Ticker"]
    assert data["Close"].columns.tolist() == ["AAPL", "MSFT"]
    assert data.index.tz is None and len(data) == 5
    grouped = shim.download(["aapl", "msft"], period="5d", group_by="ticker")
    assert grouped.columns.names == ["Ticker", "Price"] and "Open" in grouped["AAPL"].columns
    tickers = shim.Tickers("AAPL SPY")
    assert set(tickers.tickers) == {"AAPL", "SPY"} and tickers.tickers["SPY"].info["quoteType"] == "ETF"


@pytest.mark.parametrize("call, fragment", [
    (lambda yf: yf.Ticker("NVDA").history(period="1mo"), "'NVDA' is not in the recorded market data"),
    (lambda yf: yf.Ticker("AAPL").history(period="1mo", interval="1wk"), "interval='1d'"),
    (lambda yf: yf.Ticker("AAPL").options, "Ticker.options"),
    (lambda yf: yf.Ticker("AAPL").balance_sheet, "Ticker.balance_sheet"),
    (lambda yf: yf.Ticker("AAPL").get_income_stmt(freq="trailing"), "freq='trailing'"),
    (lambda yf: yf.Ticker("AAPL").history(start="2025-03-01"), "after the data's as-of date 2024-12-31"),
    (lambda yf: yf.Ticker("AAPL").history(start="2019-01-01", end="2020-01-01"), "no daily bars recorded"),
    (lambda yf: yf.Ticker("AAPL").history(period="7q"), "invalid period '7q'"),
    (lambda yf: yf.Ticker("AAPL").history(start="yesterday-ish"), "cannot read start"),
    (lambda yf: yf.Ticker("AAPL").fast_info.beta, "fast_info of AAPL has no field 'beta'"),
])
def test_unrecorded_requests_fail_clearly(shim: Any, call: Any, fragment: str) -> None:
    with pytest.raises(replay.ReplayDataError) as info:
        call(shim)
    assert fragment in str(info.value)


def test_unsupported_attributes_look_missing_to_hasattr(shim: Any) -> None:
    assert not hasattr(shim.Ticker("AAPL"), "options")
    assert hasattr(shim.Ticker("AAPL"), "income_stmt")


def test_unbound_shim_says_so() -> None:
    replay.bind(None)
    with pytest.raises(replay.ReplayDataError, match="not bound"):
        replay.Ticker("AAPL").history()


_PROBE = textwrap.dedent("""
    import json, sys, time
    import datetime as dt
    import finevo.market.replay as replay
    from finevo.market.snapshot import load_snapshot
    t0 = time.perf_counter()
    replay.install(load_snapshot())
    replay.install(load_snapshot())          # idempotent
    install_s = time.perf_counter() - t0
    import yfinance as yf
    import pandas as pd
    from datetime import datetime, date
    out = {
        "module": yf.__name__, "replay": getattr(yf, "__finevo_replay__", False),
        "ticker_is_shim": yf.Ticker is replay.Ticker,
        "last": str(yf.Ticker("AAPL").history(period="5d").index[-1].date()),
        "dt_now": datetime.now().isoformat(), "dt_today": datetime.today().date().isoformat(),
        "utcnow": datetime.utcnow().isoformat(), "date_today": date.today().isoformat(),
        "mod_now": dt.datetime.now(dt.timezone.utc).isoformat(),
        "pd_now": pd.Timestamp.now().isoformat(), "pd_today": pd.Timestamp.today().date().isoformat(),
        "pd_str_now": str(pd.Timestamp("now").date()), "to_datetime": str(pd.to_datetime("today").date()),
        "time": time.time(), "strftime": time.strftime("%Y-%m-%d"), "ctime": time.ctime(),
        "isinstance_ts": isinstance(pd.Timestamp("2020-01-01"), datetime),
        "isinstance_pd": isinstance(pd.Timestamp("2020-01-01"), pd.Timestamp),
        "isinstance_date": isinstance(dt.date(2020, 1, 1), date),
        "install_s": install_s,
    }
    print(json.dumps(out))
""")


@pytest.mark.slow
def test_install_serves_yfinance_and_freezes_the_clock() -> None:
    # A process time zone far from New York must not move "today".
    env = {**os.environ, "TZ": "Asia/Tokyo"}
    proc = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["module"] == "yfinance" and out["replay"] and out["ticker_is_shim"]
    assert out["last"] == "2024-12-31"
    assert out["dt_now"].startswith("2024-12-31T16:00:0")       # close, New York wall time
    assert out["utcnow"].startswith("2024-12-31T21:00:0")
    assert out["mod_now"].startswith("2024-12-31T21:00:0")
    assert out["dt_today"] == out["date_today"] == out["pd_today"] == "2024-12-31"
    assert out["pd_now"].startswith("2024-12-31T16:00:0")
    assert out["pd_str_now"] == out["to_datetime"] == "2024-12-31"
    assert 1735678800 <= out["time"] < 1735678800 + 60          # 2024-12-31 21:00 UTC, ticking
    assert out["strftime"] == "2024-12-31" and out["ctime"].startswith("Tue Dec 31 16:00")
    assert out["isinstance_ts"] and out["isinstance_pd"] and out["isinstance_date"]
    assert out["install_s"] < 1.0


@pytest.mark.slow
def test_install_replaces_an_already_imported_real_yfinance() -> None:
    code = ("import yfinance, sys; import finevo.market.replay as r; from finevo.market.snapshot import load_snapshot;"
            "r.install(load_snapshot()); import yfinance as yf; print(getattr(yf, '__finevo_replay__', False));"
            "r.uninstall(); import datetime; print(datetime.date.today().year > 2024)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["True", "True"]


class _AdjustedOnly:
    """A provider that records only adjusted bars (no ``history_unadjusted``)."""

    def __init__(self, snap: Snapshot) -> None:
        self._snap = snap
        self.as_of = snap.as_of

    def symbols(self) -> list[str]:
        return self._snap.symbols()

    def history(self, symbol: str) -> pd.DataFrame:
        return self._snap.history(symbol)


def test_unadjusted_prices_need_a_provider_that_records_them(snap: Snapshot) -> None:
    replay.bind(_AdjustedOnly(snap))  # type: ignore[arg-type]
    try:
        assert len(replay.Ticker("AAPL").history(period="5d")) == 5
        with pytest.raises(replay.ReplayDataError, match=r"auto_adjust=False\) are not recorded"):
            replay.Ticker("AAPL").history(period="5d", auto_adjust=False)
    finally:
        replay.bind(None)
