"""``finevo-verify data info|refresh``: output, exit codes, one-line errors."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from finevo.market import live
from finevo.market.snapshot import Snapshot
from finevo.paths import snapshot_dir
from runner.cli import main


def test_info_describes_the_bundled_snapshot(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["data", "info"]) == 0
    out = capsys.readouterr().out
    assert "SYNTHETIC market data - not real prices" in out and "as-of:      2024-12-31" in out
    assert "all sha256 OK" in out and Snapshot(snapshot_dir()).content_hash in out
    assert "^GSPC" in out and "2022-01-03 .. 2024-12-31" in out


def test_info_on_a_broken_snapshot_is_one_line_and_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    shutil.copytree(snapshot_dir(), data)
    (data / "history" / "SPY.csv").write_text("tampered\n")
    assert main(["data", "info", "--data", str(data)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "SPY.csv" in err[0] and "sha256" in err[0]


class _Stub:
    def __init__(self, symbol: str) -> None:
        self.symbol = symbol

    def history(self, **kwargs: Any) -> pd.DataFrame:
        raise ConnectionError("Max retries exceeded with url: /v8/finance/chart/AAPL")


def test_refresh_without_network_is_one_line_and_exit_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(live, "_default_factory", lambda: _Stub)
    code = main(["data", "refresh", "--out", str(tmp_path / "real"), "--symbols", "AAPL",
                 "--start", "2024-01-02", "--end", "2024-02-01"])
    assert code == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "AAPL" in err[0] and "ConnectionError" in err[0]
    assert not (tmp_path / "real").exists()


def test_refresh_records_through_the_ticker_factory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from tests.finevo.market.test_live import StubTicker

    monkeypatch.setattr(live, "_default_factory", lambda: StubTicker)
    code = main(["data", "refresh", "--out", str(tmp_path / "real"), "--symbols", "MSFT",
                 "--start", "2024-01-02", "--end", "2024-03-28"])
    assert code == 0
    snap = Snapshot(tmp_path / "real")
    assert not snap.synthetic and snap.symbols() == ["MSFT"] and str(snap.as_of) == "2024-03-28"
    assert "recorded 1 symbols (MSFT)" in capsys.readouterr().out


@pytest.mark.parametrize("argv, fragment", [
    (["data", "refresh", "--out", "x", "--start", "2024-13-01"], "--start"),
    (["data", "refresh", "--out", "x", "--start", "2024-06-01", "--end", "2024-01-01"], "after --end"),
])
def test_refresh_bad_flags_exit_2(argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert fragment in capsys.readouterr().err
