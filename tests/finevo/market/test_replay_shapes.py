"""The replay shim's frames have the shapes the installed yfinance produces.

Real yfinance is fed canned Yahoo chart / fundamentals-timeseries JSON (built from the snapshot)
through its HTTP layer, ``YfData.get``; no network is touched. Both sides then answer the same
calls and are compared: index type, tz, name and unit, columns, dtypes and row labels -- and,
since the raw numbers are the same, the values too.
"""

from __future__ import annotations

import json
from datetime import date, datetime, time
from typing import Any
from urllib.parse import parse_qs, urlparse
from zoneinfo import ZoneInfo

import pandas as pd
import pytest

yf = pytest.importorskip("yfinance")
from yfinance import const  # noqa: E402
from yfinance.data import YfData  # noqa: E402

from finevo.market import replay  # noqa: E402
from finevo.market.snapshot import (  # noqa: E402
    Snapshot,
    SnapshotOrigin,
    SymbolData,
    load_snapshot,
    write_snapshot,
)

NY = ZoneInfo("America/New_York")


class _Response:
    def __init__(self, payload: dict[str, Any]) -> None:
        self.text = json.dumps(payload)
        self.status_code = 200
        self.url = "https://query2.finance.yahoo.com/"

    def json(self) -> dict[str, Any]:
        return json.loads(self.text)

    def raise_for_status(self) -> None:
        return None


def _session_epoch(ts: pd.Timestamp) -> int:
    return int(datetime.combine(ts.date(), time(9, 30), NY).timestamp())


def _chart(snap: Snapshot, symbol: str, period1: int | None, period2: int | None) -> dict[str, Any]:
    raw = snap.history_unadjusted(symbol)
    stamps = [_session_epoch(ts) for ts in raw.index]
    keep = [i for i, s in enumerate(stamps)
            if (period1 is None or s >= period1) and (period2 is None or s < period2)]
    rows = raw.iloc[keep]
    info = snap.info(symbol)
    events: dict[str, Any] = {}
    divs = rows[rows["Dividends"] != 0]
    if len(divs):
        events["dividends"] = {str(_session_epoch(ts)): {"amount": float(v), "date": _session_epoch(ts)}
                               for ts, v in divs["Dividends"].items()}
    splits = rows[rows["Stock Splits"] != 0]
    if len(splits):
        events["splits"] = {str(_session_epoch(ts)): {"date": _session_epoch(ts), "numerator": float(v),
                                                       "denominator": 1.0, "splitRatio": f"{v:g}:1"}
                            for ts, v in splits["Stock Splits"].items()}
    return {"chart": {"error": None, "result": [{
        "meta": {"currency": "USD", "symbol": symbol, "exchangeName": info["exchange"],
                 "instrumentType": info["quoteType"], "exchangeTimezoneName": "America/New_York",
                 "timezone": "EST", "gmtoffset": -18000, "priceHint": 2, "dataGranularity": "1d",
                 "validRanges": list(replay.VALID_PERIODS)},
        "timestamp": [stamps[i] for i in keep],
        "events": events,
        "indicators": {
            "quote": [{"open": rows["Open"].tolist(), "high": rows["High"].tolist(),
                       "low": rows["Low"].tolist(), "close": rows["Close"].tolist(),
                       "volume": rows["Volume"].tolist()}],
            "adjclose": [{"adjclose": rows["Adj Close"].tolist()}],
        },
    }]}}


def _timeseries(snap: Snapshot, symbol: str, types: list[str]) -> dict[str, Any]:
    results = []
    for prefix, freq in (("annual", "yearly"), ("quarterly", "quarterly")):
        stmt = snap.income_stmt(symbol, freq)
        for label, row in stmt.iterrows():
            key = prefix + label.replace(" ", "")
            if key not in types:
                continue
            results.append({
                "meta": {"symbol": [symbol], "type": [key]},
                "timestamp": [int(pd.Timestamp(c).timestamp()) for c in stmt.columns],
                key: [{"asOfDate": pd.Timestamp(c).strftime("%Y-%m-%d"), "periodType": "3M",
                       "currencyCode": "USD", "reportedValue": {"raw": float(v), "fmt": ""}}
                      for c, v in row.items()],
            })
    return {"timeseries": {"result": results, "error": None}}


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return load_snapshot()


@pytest.fixture
def canned_yahoo(monkeypatch: pytest.MonkeyPatch, snap: Snapshot, tmp_path: Any) -> list[str]:
    """Serve real yfinance from the snapshot through its HTTP layer; record requested URLs."""
    seen: list[str] = []

    def fake_get(self: Any, url: str, params: dict[str, Any] | None = None, timeout: float = 30) -> _Response:
        seen.append(url)
        parsed = urlparse(url)
        if "/v8/finance/chart/" in parsed.path:
            symbol = parsed.path.rsplit("/", 1)[1]
            params = params or {}
            p1, p2 = params.get("period1"), params.get("period2")
            return _Response(_chart(snap, symbol, int(p1) if p1 else None, int(p2) if p2 else None))
        if "fundamentals-timeseries" in parsed.path:
            query = parse_qs(parsed.query)
            symbol = query["symbol"][0]
            return _Response(_timeseries(snap, symbol, query["type"][0].split(",")))
        raise AssertionError(f"unexpected request in test: {url}")

    def fake_cache_get(self: Any, url: str, params: dict[str, Any] | None = None, timeout: float = 30) -> _Response:
        return fake_get(self, url, params, timeout)

    monkeypatch.setattr(YfData, "get", fake_get)
    monkeypatch.setattr(YfData, "cache_get", fake_cache_get)
    yf.set_tz_cache_location(str(tmp_path / "yf-cache"))
    return seen


@pytest.fixture
def shim(snap: Snapshot) -> Any:
    replay.bind(snap)
    yield replay
    replay.bind(None)


def _assert_same_frame_shape(real: pd.DataFrame, ours: pd.DataFrame) -> None:
    assert type(ours.index) is type(real.index)
    assert ours.index.name == real.index.name
    assert str(ours.index.dtype) == str(real.index.dtype)
    assert list(ours.columns) == list(real.columns)
    assert ours.columns.names == real.columns.names
    assert ours.dtypes.astype(str).tolist() == real.dtypes.astype(str).tolist()


def _real_ticker(symbol: str) -> Any:
    ticker = yf.Ticker(symbol)
    ticker._tz = "America/New_York"
    return ticker


@pytest.mark.parametrize("symbol", ["AAPL", "SPY", "TSLA", "^GSPC"])
@pytest.mark.parametrize("auto_adjust", [True, False])
def test_history_matches_real_yfinance(canned_yahoo: list[str], shim: Any, symbol: str, auto_adjust: bool) -> None:
    kwargs = dict(start="2022-06-01", end="2022-10-01", auto_adjust=auto_adjust)
    real = _real_ticker(symbol).history(**kwargs)
    ours = shim.Ticker(symbol).history(**kwargs)
    assert any("/v8/finance/chart/" in url for url in canned_yahoo)
    _assert_same_frame_shape(real, ours)
    assert str(ours.index.tz) == str(real.index.tz) == "America/New_York"
    pd.testing.assert_frame_equal(ours, real, check_freq=False, rtol=1e-9)


def test_actions_false_drops_event_columns_like_yfinance(canned_yahoo: list[str], shim: Any) -> None:
    real = _real_ticker("SPY").history(start="2024-01-02", end="2024-02-01", actions=False)
    ours = shim.Ticker("SPY").history(start="2024-01-02", end="2024-02-01", actions=False)
    _assert_same_frame_shape(real, ours)


def test_dividends_series_matches(canned_yahoo: list[str], shim: Any) -> None:
    real = _real_ticker("MSFT").history(start="2022-01-03", end="2025-01-01")["Dividends"]
    real = real[real != 0]
    ours = shim.Ticker("MSFT").dividends
    assert ours.name == real.name and ours.index.name == "Date"
    assert str(ours.index.dtype) == str(real.index.dtype)
    pd.testing.assert_series_equal(ours, real, check_freq=False)


@pytest.mark.parametrize("attr", ["income_stmt", "quarterly_income_stmt", "financials", "quarterly_financials"])
def test_income_statement_matches_real_yfinance(canned_yahoo: list[str], shim: Any, attr: str) -> None:
    real = getattr(_real_ticker("AAPL"), attr)
    ours = getattr(shim.Ticker("AAPL"), attr)
    assert any("fundamentals-timeseries" in url for url in canned_yahoo)
    assert list(ours.index) == list(real.index)              # same labels, same (Yahoo) order
    assert type(ours.columns) is type(real.columns)
    assert str(ours.columns.dtype) == str(real.columns.dtype)
    assert list(ours.columns) == list(real.columns)           # period ends, newest first
    assert ours.dtypes.astype(str).tolist() == real.dtypes.astype(str).tolist()
    assert ours.index.name == real.index.name and str(ours.index.dtype) == str(real.index.dtype)
    pd.testing.assert_frame_equal(ours, real)


def test_raw_income_keys_match(canned_yahoo: list[str], shim: Any) -> None:
    real = _real_ticker("MSFT").get_income_stmt(pretty=False, freq="quarterly")
    ours = shim.Ticker("MSFT").get_income_stmt(pretty=False, freq="quarterly")
    assert list(ours.index) == list(real.index)


def test_snapshot_rows_are_known_yahoo_keys(snap: Snapshot) -> None:
    keys = set(const.fundamentals_keys["financials"])
    for label in snap.income_stmt("AAPL").index:
        assert label.replace(" ", "") in keys, label


@pytest.mark.parametrize("group_by", ["column", "ticker"])
def test_download_matches_real_yfinance(canned_yahoo: list[str], shim: Any, group_by: str) -> None:
    kwargs = dict(start="2024-11-01", end="2024-12-01", progress=False, group_by=group_by)
    real = yf.download(["AAPL", "MSFT"], threads=False, **kwargs)
    ours = shim.download(["AAPL", "MSFT"], **kwargs)
    _assert_same_frame_shape(real.sort_index(axis=1), ours.sort_index(axis=1))
    assert ours.index.tz is None and real.index.tz is None
    pd.testing.assert_frame_equal(ours.sort_index(axis=1), real.sort_index(axis=1), check_freq=False, rtol=1e-9)


def test_download_single_flat_columns(canned_yahoo: list[str], shim: Any) -> None:
    kwargs = dict(start="2024-11-01", end="2024-12-01", progress=False, multi_level_index=False,
                  auto_adjust=False)
    real = yf.download("SPY", threads=False, **kwargs)
    ours = shim.download("SPY", **kwargs)
    _assert_same_frame_shape(real, ours)


# --------------------------------------------------------------------------- before the open on an ex-date
EX_DATE = "2024-12-20"  # an ex-dividend date of SPY in the bundled snapshot


@pytest.fixture
def before_open(snap: Snapshot, tmp_path: Any) -> Snapshot:
    """The bundled SPY as recorded on its ex-date before the open: the bars up to the session
    before, and the day's dividend a pending event row (prices empty, Volume 0)."""
    raw = snap.history_unadjusted("SPY")
    cut = int((raw.index < pd.Timestamp(EX_DATE, tz="America/New_York")).sum())
    assert raw["Dividends"].iloc[cut] > 0
    row = raw.iloc[cut:cut + 1].copy()
    for column in ("Open", "High", "Low", "Close", "Adj Close"):
        row[column] = float("nan")
    row["Volume"] = 0
    item = SymbolData("SPY", raw.iloc[:cut], None, None, snap.info("SPY"), snap.fast_info("SPY"), pending=row)
    origin = SnapshotOrigin(as_of=date.fromisoformat(EX_DATE), synthetic=True, label="test", generator="test",
                            generator_version="1", before_open=True)
    write_snapshot(tmp_path / "pre", [item], origin)
    return Snapshot(tmp_path / "pre")


@pytest.fixture
def canned_before_open(monkeypatch: pytest.MonkeyPatch, before_open: Snapshot, tmp_path: Any) -> None:
    """Real yfinance served ``before_open``: the chart's bars and, in its events, the pending dividend
    (Yahoo sends an event scheduled for the next session without a bar)."""
    pending = before_open.pending("SPY")

    def fake_get(self: Any, url: str, params: dict[str, Any] | None = None, timeout: float = 30) -> _Response:
        params = params or {}
        p1, p2 = params.get("period1"), params.get("period2")
        payload = _chart(before_open, "SPY", int(p1) if p1 else None, int(p2) if p2 else None)
        events = payload["chart"]["result"][0]["events"].setdefault("dividends", {})
        for ts, amount in pending["Dividends"].items():
            events[str(_session_epoch(ts))] = {"amount": float(amount), "date": _session_epoch(ts)}
        return _Response(payload)

    monkeypatch.setattr(YfData, "get", fake_get)
    monkeypatch.setattr(YfData, "cache_get", fake_get)
    yf.set_tz_cache_location(str(tmp_path / "yf-cache"))


@pytest.mark.parametrize("auto_adjust", [True, False])
def test_a_pending_dividend_ends_history_as_in_real_yfinance(canned_before_open: None, before_open: Snapshot,
                                                              auto_adjust: bool) -> None:
    real = _real_ticker("SPY").history(start="2024-12-02", auto_adjust=auto_adjust)
    replay.bind(before_open)
    try:
        ours = replay.Ticker("SPY").history(start="2024-12-02", auto_adjust=auto_adjust)
    finally:
        replay.bind(None)
    assert real.index[-1].strftime("%Y-%m-%d") == EX_DATE and pd.isna(real["Close"].iloc[-1])
    _assert_same_frame_shape(real, ours)  # the price columns in the order of their names, as yfinance's concat
    pd.testing.assert_frame_equal(ours, real, check_freq=False, rtol=1e-9)


def test_a_pending_dividend_is_left_out_where_yfinance_leaves_it_out(canned_before_open: None,
                                                                     before_open: Snapshot) -> None:
    replay.bind(before_open)
    try:
        for kwargs in ({"start": "2024-12-02", "actions": False}, {"start": "2024-12-02", "end": EX_DATE}):
            real = _real_ticker("SPY").history(**kwargs)
            ours = replay.Ticker("SPY").history(**kwargs)
            assert ours.index[-1] < pd.Timestamp(EX_DATE, tz="America/New_York")
            _assert_same_frame_shape(real, ours)
            pd.testing.assert_frame_equal(ours, real, check_freq=False, rtol=1e-9)
        real_div, ours_div = _real_ticker("SPY").dividends, replay.Ticker("SPY").dividends
        assert ours_div.index[-1].strftime("%Y-%m-%d") == real_div.index[-1].strftime("%Y-%m-%d") == EX_DATE
        assert ours_div.iloc[-1] == real_div.iloc[-1]
    finally:
        replay.bind(None)
