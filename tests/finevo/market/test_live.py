"""Live provider and recorder against a stubbed yfinance.Ticker (no network)."""

from __future__ import annotations

from datetime import UTC, date
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pytest

from finevo.errors import NetworkError
from finevo.market.live import LiveProvider, record_snapshot
from finevo.market.snapshot import Snapshot, load_snapshot


class StubTicker:
    """Answers like yfinance.Ticker, from the bundled snapshot (prices with a 09:30 timestamp
    that must be normalised to midnight, as some Yahoo answers have)."""

    calls: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def __init__(self, symbol: str) -> None:
        self.symbol = symbol
        self._snap = load_snapshot()

    def history(self, **kwargs: Any) -> pd.DataFrame:
        StubTicker.calls.append((self.symbol, kwargs))
        frame = (self._snap.history(self.symbol) if kwargs.get("auto_adjust", True)
                 else self._snap.history_unadjusted(self.symbol))
        end = kwargs.get("end")
        if end is not None:
            frame = frame[frame.index < pd.Timestamp(end, tz="America/New_York")]
        frame.index = frame.index + pd.Timedelta(hours=9, minutes=30)
        return frame

    @property
    def income_stmt(self) -> pd.DataFrame:
        return self._snap.income_stmt(self.symbol, "yearly")

    @property
    def quarterly_income_stmt(self) -> pd.DataFrame:
        return self._snap.income_stmt(self.symbol, "quarterly")

    @property
    def info(self) -> dict[str, Any]:
        return {**self._snap.info(self.symbol), "nan_field": float("nan")}

    @property
    def fast_info(self) -> dict[str, Any]:
        return self._snap.fast_info(self.symbol)


class DownTicker:
    def __init__(self, symbol: str) -> None:
        self.symbol = symbol

    def history(self, **kwargs: Any) -> pd.DataFrame:
        raise ConnectionError("Failed to resolve 'query2.finance.yahoo.com'")


class EmptyTicker(DownTicker):
    def history(self, **kwargs: Any) -> pd.DataFrame:
        return pd.DataFrame()


def test_record_snapshot_writes_a_real_snapshot_in_the_same_format(tmp_path: Path) -> None:
    manifest = record_snapshot(tmp_path, ["AAPL", "SPY"], date(2024, 1, 2), date(2024, 6, 28),
                               ticker_factory=StubTicker)
    assert manifest["synthetic"] is False and "yfinance" in manifest["label"]
    assert manifest["as_of"] == "2024-06-28" and manifest["symbols"] == ["AAPL", "SPY"]
    snap = Snapshot(tmp_path)                                 # hashes verify
    bundled = load_snapshot()
    hist = snap.history_unadjusted("AAPL")
    assert hist.index[0].strftime("%Y-%m-%d") == "2024-01-02" and hist.index[-1].strftime("%Y-%m-%d") == "2024-06-28"
    assert (hist.index.hour == 0).all()
    expected = bundled.history_unadjusted("AAPL").loc["2024-01-02":"2024-06-28"]
    pd.testing.assert_frame_equal(hist, expected, rtol=1e-9)
    assert "Capital Gains" in snap.history("SPY").columns
    pd.testing.assert_frame_equal(snap.income_stmt("AAPL", "quarterly"), bundled.income_stmt("AAPL", "quarterly"))
    assert snap.income_stmt("SPY").empty
    assert snap.info("AAPL")["nan_field"] is None             # NaN is not valid JSON
    assert snap.fast_info("AAPL") == bundled.fast_info("AAPL")
    # yfinance's end is exclusive: the recorder asks for the day after the last one.
    assert any(kw.get("end") == "2024-06-29" for _, kw in StubTicker.calls)


def test_network_failure_is_a_network_error_naming_the_symbol(tmp_path: Path) -> None:
    with pytest.raises(NetworkError, match=r"MSFT: history failed \(ConnectionError: Failed to resolve"):
        record_snapshot(tmp_path / "out", ["MSFT"], date(2024, 1, 2), date(2024, 2, 1), ticker_factory=DownTicker)
    assert not (tmp_path / "out").exists()                    # nothing written


def test_empty_answer_is_a_network_error(tmp_path: Path) -> None:
    with pytest.raises(NetworkError, match="XYZ: yfinance returned no daily prices"):
        record_snapshot(tmp_path, ["XYZ"], date(2024, 1, 2), date(2024, 2, 1), ticker_factory=EmptyTicker)


def test_live_provider_serves_the_provider_interface() -> None:
    live = LiveProvider(["aapl"], as_of=date(2024, 12, 31), ticker_factory=StubTicker)
    assert live.symbols() == ["AAPL"] and live.as_of == date(2024, 12, 31)
    hist = live.history("AAPL")
    assert hist.index.name == "Date" and str(hist.index.tz) == "America/New_York"
    assert list(hist.columns) == list(load_snapshot().history("AAPL").columns)
    assert len(live.dividends("AAPL")) == 12
    assert live.income_stmt("AAPL", "quarterly").columns[0] == pd.Timestamp("2024-09-30")
    assert live.info("AAPL")["symbol"] == "AAPL" and live.fast_info("AAPL")["lastPrice"] > 0
    with pytest.raises(LookupError, match="MSFT"):
        live.history("MSFT")


def test_bad_range_is_rejected(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="empty date range"):
        record_snapshot(tmp_path, ["AAPL"], date(2024, 6, 1), date(2024, 1, 1), ticker_factory=StubTicker)


class PreOpenTicker(StubTicker):
    """SPY on its ex-date 2024-12-20 before the open: yfinance's history ends with the dividend's row,
    prices NaN, Volume 0 (its ``safe_merge_dfs``), after the last bar of 2024-12-19."""

    def history(self, **kwargs: Any) -> pd.DataFrame:
        frame = super().history(**{**kwargs, "end": "2024-12-20"})
        row = self._snap.history_unadjusted(self.symbol).loc["2024-12-20":"2024-12-20"].copy()
        for column in ("Open", "High", "Low", "Close", "Adj Close"):
            if column in row.columns:
                row[column] = float("nan")
        row["Volume"] = 0
        row.index = row.index + pd.Timedelta(hours=9, minutes=30)
        return pd.concat([frame, row[frame.columns]])


def test_a_recording_before_the_open_on_an_ex_date_keeps_the_dividend_pending(tmp_path: Path) -> None:
    """Recorded that morning, the snapshot says so (the sandbox's clock reads 08:00 then): its bars end
    the session before, and the day's dividend is a pending event row, not a bar with empty prices
    (which the reader refuses)."""
    manifest = record_snapshot(tmp_path, ["SPY"], date(2024, 1, 2), date(2024, 12, 20), ticker_factory=PreOpenTicker)
    assert manifest["before_open"] is True
    snap = Snapshot(tmp_path)
    assert snap.before_open and snap.history("SPY").index[-1].strftime("%Y-%m-%d") == "2024-12-19"
    assert [ts.strftime("%Y-%m-%d") for ts in snap.pending("SPY").index] == ["2024-12-20"]
    assert snap.dividends("SPY").index[-1].strftime("%Y-%m-%d") == "2024-12-20"
    plain = record_snapshot(tmp_path / "close", ["SPY"], date(2024, 1, 2), date(2024, 12, 20),
                            ticker_factory=StubTicker)
    assert "before_open" not in plain and not Snapshot(tmp_path / "close").before_open


@pytest.mark.parametrize(("now", "during"), [
    ("2024-12-20 14:05:33", "14:05"),  # the session open, the day's bar the session so far
    ("2024-12-20 09:30:00", "09:30"),
    ("2024-12-20 09:29:59", None),  # before the open: no bar of that day yet (this stub has one: not "during")
    ("2024-12-20 16:00:00", None),  # at the close: the bar is the day's
    ("2024-12-21 14:05:00", None),  # a day after the as-of date
])
def test_a_recording_made_during_the_session_says_when(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        now: str, during: str | None) -> None:
    """Recorded on the as-of date while its session is open (New York time), the last bar is the session
    so far, and the manifest says when: the sandbox's clock then reads that minute, not the close."""
    from datetime import time as dtime

    from finevo.market import live

    moment = pd.Timestamp(now, tz="America/New_York").to_pydatetime()
    monkeypatch.setattr(live, "wall_clock", lambda: moment.astimezone(UTC))
    manifest = record_snapshot(tmp_path, ["SPY"], date(2024, 1, 2), date(2024, 12, 20), ticker_factory=StubTicker)
    assert manifest.get("during_session") == during
    assert manifest["recorded_at"] == moment.astimezone(UTC).isoformat()
    snap = Snapshot(tmp_path)
    assert snap.during_session == (None if during is None else dtime.fromisoformat(during))
