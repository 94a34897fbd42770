"""Snapshot reader: verification of the manifest, yfinance-like frames, copies not shared state."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from finevo.errors import InputError
from finevo.market.provider import MarketProvider
from finevo.market.snapshot import (
    ParsedFiles,
    Snapshot,
    SymbolNotRecorded,
    auto_adjust,
    content_hash_of,
    load_snapshot,
)
from finevo.paths import snapshot_dir


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(snapshot_dir(), target)
    return target


def test_implements_the_provider_protocol() -> None:
    snap: MarketProvider = load_snapshot()
    for name in ("as_of", "symbols", "history", "dividends", "income_stmt", "info", "fast_info"):
        assert hasattr(snap, name)


def test_history_frame_is_shaped_like_yfinance() -> None:
    hist = load_snapshot().history("MSFT")
    assert isinstance(hist.index, pd.DatetimeIndex)
    assert hist.index.name == "Date" and str(hist.index.tz) == "America/New_York"
    assert (hist.index.hour == 0).all()
    assert list(hist.columns) == ["Open", "High", "Low", "Close", "Volume", "Dividends", "Stock Splits"]
    assert hist["Volume"].dtype == "int64"
    assert all(hist[c].dtype == "float64" for c in hist.columns if c != "Volume")
    spy = load_snapshot().history("SPY")
    assert list(spy.columns)[-1] == "Capital Gains"            # yfinance adds it for ETFs
    divs = load_snapshot().dividends("AAPL")
    assert divs.name == "Dividends" and divs.index.name == "Date" and str(divs.index.tz) == "America/New_York"


def test_auto_adjusted_close_equals_adj_close() -> None:
    snap = load_snapshot()
    raw, adj = snap.history_unadjusted("SPY"), snap.history("SPY")
    pd.testing.assert_series_equal(adj["Close"], raw["Adj Close"], check_names=False)
    ratio = raw["Adj Close"] / raw["Close"]
    pd.testing.assert_series_equal(adj["Open"], raw["Open"] * ratio, check_names=False)


def test_auto_adjust_builds_one_consolidated_frame_in_the_recorded_column_order() -> None:
    raw = load_snapshot().history_unadjusted("SPY")  # Capital Gains too, and an int64 Volume
    adjusted = auto_adjust(raw)
    assert list(adjusted.columns) == [c for c in raw.columns if c != "Adj Close"]
    assert adjusted["Volume"].dtype == "int64" and adjusted._mgr.nblocks == 2  # float64, int64
    for column in ("Open", "High", "Low"):
        assert adjusted[column].to_list() == [o * (a / c) for o, a, c in  # scaled by Adj Close / Close
                                              zip(raw[column], raw["Adj Close"], raw["Close"], strict=True)]
    adjusted.iloc[:, :] = 0  # a new frame: the raw bars are untouched
    assert raw["Close"].iloc[-1] > 0 and raw["Open"].iloc[-1] > 0


def test_snapshots_given_the_same_parsed_files_parse_a_shared_file_once(copy: Path) -> None:
    """Two snapshots holding the same file (by its manifest digest) share its parsed frames; a file
    that differs is parsed for its own snapshot, and a snapshot given no cache keeps its own."""
    other = copy.parent / "other"
    shutil.copytree(copy, other)
    text = (other / "history" / "AMZN.csv").read_text()
    last = text.rstrip("\n").rsplit("\n", 1)[1].split(",")
    last[4] = str(float(last[4]) + 1.0)  # the last bar's close moves
    _rewrite(other, "history/AMZN.csv", text.rstrip("\n").rsplit("\n", 1)[0] + "\n" + ",".join(last) + "\n")
    parsed = ParsedFiles()
    first, second, alone = load_snapshot(copy, parsed), load_snapshot(other, parsed), load_snapshot(copy)
    assert first.history_view("MSFT") is second.history_view("MSFT")
    assert first.income_stmt("MSFT").equals(second.income_stmt("MSFT"))
    assert first.history_view("AMZN") is not second.history_view("AMZN")
    assert second.history_view("AMZN", adjusted=False)["Close"].iloc[-1] == \
        first.history_view("AMZN", adjusted=False)["Close"].iloc[-1] + 1.0
    assert alone.history_view("MSFT") is not first.history_view("MSFT")
    pd.testing.assert_frame_equal(alone.history("MSFT"), first.history("MSFT"))


def test_income_frame_shape() -> None:
    stmt = load_snapshot().income_stmt("GOOGL", "quarterly")
    assert isinstance(stmt.columns, pd.DatetimeIndex) and stmt.columns.tz is None
    assert stmt.index.name is None and (stmt.dtypes == "float64").all()
    with pytest.raises(ValueError, match="freq"):
        load_snapshot().income_stmt("GOOGL", "monthly")  # type: ignore[arg-type]


def test_returns_copies() -> None:
    snap = load_snapshot()
    first = snap.history("AAPL")
    first.iloc[:, :] = 0
    assert snap.history("AAPL")["Close"].iloc[-1] > 0
    info = snap.info("AAPL")
    info["currentPrice"] = -1
    assert snap.info("AAPL")["currentPrice"] > 0


def test_unknown_symbol_names_it() -> None:
    with pytest.raises(SymbolNotRecorded, match="NVDA"):
        load_snapshot().history("NVDA")
    with pytest.raises(LookupError):
        load_snapshot().info("NVDA")


def test_content_hash_is_over_file_hashes(copy: Path) -> None:
    snap = Snapshot(copy)
    assert snap.content_hash == content_hash_of(snap.manifest["files"])
    assert snap.content_hash == load_snapshot().content_hash
    assert len(snap.content_hash) == 64


def test_missing_manifest(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"manifest\.json.*not found"):
        Snapshot(tmp_path)


def test_missing_file_is_named(copy: Path) -> None:
    (copy / "history" / "TSLA.csv").unlink()
    with pytest.raises(InputError, match=r"TSLA\.csv: listed in manifest.json but missing"):
        Snapshot(copy)


def test_altered_file_is_named(copy: Path) -> None:
    path = copy / "quote" / "MSFT.json"
    path.write_text(path.read_text().replace('"USD"', '"EUR"', 1))
    with pytest.raises(InputError, match=r"MSFT\.json: sha256 does not match"):
        Snapshot(copy)


def _rewrite(copy: Path, rel: str, text: str) -> None:
    """Replace a file and re-sign it in the manifest, so only parsing can catch the damage."""
    import hashlib

    (copy / rel).write_text(text)
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["files"][rel] = hashlib.sha256(text.encode()).hexdigest()
    (copy / "manifest.json").write_text(json.dumps(manifest))


def test_unparsable_csv_is_named(copy: Path) -> None:
    _rewrite(copy, "history/AMZN.csv", "Date,Open\n2022-01-03,abc\n")
    snap = Snapshot(copy)
    with pytest.raises(InputError, match=r"AMZN\.csv: unparsable history CSV"):
        snap.history("AMZN")


def test_bad_date_in_csv_is_named(copy: Path) -> None:
    good = (copy / "history" / "AMZN.csv").read_text().splitlines()
    good[5] = "not-a-date" + good[5][10:]
    _rewrite(copy, "history/AMZN.csv", "\n".join(good) + "\n")
    with pytest.raises(InputError, match=r"AMZN\.csv"):
        Snapshot(copy).history("AMZN")


def test_invalid_manifest_json(copy: Path) -> None:
    (copy / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="invalid snapshot manifest"):
        Snapshot(copy)


def test_loading_everything_is_fast() -> None:
    start = time.perf_counter()
    snap = Snapshot(snapshot_dir())
    for symbol in snap.symbols():
        snap.history(symbol), snap.history_unadjusted(symbol), snap.info(symbol), snap.fast_info(symbol)
        snap.income_stmt(symbol, "yearly"), snap.income_stmt(symbol, "quarterly")
    assert time.perf_counter() - start < 1.0


def _pending_row(snap: Snapshot, symbol: str, day: str, dividend: float) -> str:
    """A history CSV line for ``day`` with no prices, Volume 0 and ``dividend``: a pending event row."""
    columns = list(snap.history_unadjusted(symbol).columns)
    cells = {"Volume": "0", "Dividends": f"{dividend:g}", "Stock Splits": "0", "Capital Gains": "0"}
    return ",".join([day, *[cells.get(c, "") for c in columns]])


def _with_manifest(copy: Path, **fields: Any) -> Path:
    manifest = json.loads((copy / "manifest.json").read_text())
    (copy / "manifest.json").write_text(json.dumps({**manifest, **fields}))
    return copy


def test_a_recording_during_the_session_says_when(copy: Path) -> None:
    """``"during_session": "HH:MM"``: recorded while the as-of date's session was open, at that New York
    time (the sandbox's clock reads it). Absent: at the close or on a closed day."""
    from datetime import time as dtime

    from finevo.market.replay import as_of_moment

    assert Snapshot(copy).during_session is None
    snap = Snapshot(_with_manifest(copy, during_session="11:47"))
    assert snap.during_session == dtime(11, 47) and not snap.before_open
    assert as_of_moment(snap).isoformat() == f"{snap.as_of}T11:47:00-05:00"


@pytest.mark.parametrize("value", ["08:15", "16:00", "23:59", "1147", "11:47:30", "noon", 1147, True, ""])
def test_a_moment_outside_the_session_is_refused_naming_the_manifest(copy: Path, value: Any) -> None:
    with pytest.raises(InputError, match=r"manifest\.json: invalid snapshot manifest .*during_session"):
        Snapshot(_with_manifest(copy, during_session=value))


def test_a_recording_cannot_be_both_before_the_open_and_during_the_session(copy: Path) -> None:
    with pytest.raises(InputError, match="'before_open' and 'during_session' cannot both hold"):
        Snapshot(_with_manifest(copy, during_session="10:00", before_open=True))


def test_a_pending_dividend_row_is_kept_apart_from_the_bars(copy: Path) -> None:
    """Data recorded before the open on an ex-date end with the day's dividend and no prices: the bars
    stay complete, the row is the snapshot's pending event, and the dividends list it."""
    before = Snapshot(copy)
    bars = before.history_unadjusted("MSFT")
    lines = (copy / "history" / "MSFT.csv").read_text().splitlines()
    _rewrite(copy, "history/MSFT.csv", "\n".join([*lines, _pending_row(before, "MSFT", "2025-01-02", 0.83)]) + "\n")
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["before_open"] = True
    (copy / "manifest.json").write_text(json.dumps(manifest))
    snap = Snapshot(copy)
    assert snap.before_open and not before.before_open
    pd.testing.assert_frame_equal(snap.history_unadjusted("MSFT"), bars)
    pending = snap.pending("MSFT")
    assert [ts.strftime("%Y-%m-%d") for ts in pending.index] == ["2025-01-02"]
    assert pending["Close"].isna().all() and pending["Volume"].tolist() == [0]
    assert snap.dividends("MSFT").iloc[-1] == 0.83 and len(snap.dividends("MSFT")) == len(before.dividends("MSFT")) + 1
    assert snap.pending("AAPL").empty


def test_an_empty_price_before_the_last_bar_is_refused(copy: Path) -> None:
    snap = Snapshot(copy)
    lines = (copy / "history" / "MSFT.csv").read_text().splitlines()
    lines.insert(len(lines) - 1, _pending_row(snap, "MSFT", "2024-12-30", 0.83))  # before the last bar
    lines.pop(len(lines) - 3)  # the bar it replaces, so the dates stay increasing
    _rewrite(copy, "history/MSFT.csv", "\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"MSFT\.csv: unparsable history CSV \(empty price cells"):
        Snapshot(copy).history("MSFT")
