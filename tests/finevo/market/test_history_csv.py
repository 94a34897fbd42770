"""A history file is written in one pass per column (worlds are written many times a gate run): the
bytes must be the ones ``DataFrame.to_csv`` writes, whatever the prices hold."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from finevo.market.snapshot import CAPITAL_GAINS, FLOAT_FORMAT, RAW_HISTORY_COLUMNS, history_csv, load_snapshot
from finevo.paths import snapshot_dir


def _to_csv(history: pd.DataFrame) -> bytes:
    columns = list(RAW_HISTORY_COLUMNS) + ([CAPITAL_GAINS] if CAPITAL_GAINS in history.columns else [])
    frame = history[columns].copy()
    frame["Volume"] = frame["Volume"].fillna(0).astype(np.int64)
    frame.index = pd.Index([ts.strftime("%Y-%m-%d") for ts in pd.DatetimeIndex(frame.index)], name="Date")
    return str(frame.to_csv(float_format=FLOAT_FORMAT, lineterminator="\n")).encode()


def _recorded() -> pd.DataFrame:
    snapshot = load_snapshot(snapshot_dir())
    return snapshot._raw_history(snapshot.symbols()[0]).copy()


def _perturbed(kind: str) -> pd.DataFrame:
    frame = _recorded()
    rng = np.random.default_rng(7)
    prices = [c for c in frame.columns if c != "Volume"]
    if kind == "gaps":
        for column in prices:
            frame.loc[frame.sample(frac=0.1, random_state=1).index, column] = np.nan
    elif kind == "scales":
        for column in prices:
            frame[column] = frame[column] * rng.choice([1e-12, 1e15, -1.0, 1 / 3], size=len(frame))
    elif kind == "specials":
        frame.iloc[0, 0], frame.iloc[1, 1], frame.iloc[2, 2], frame.iloc[3, 3] = -0.0, np.inf, -np.inf, 5e-324
    elif kind == "fund":
        frame[CAPITAL_GAINS] = rng.random(len(frame))
    return frame


@pytest.mark.parametrize("kind", ["recorded", "gaps", "scales", "specials", "fund"])
def test_a_history_file_is_what_to_csv_writes(kind: str) -> None:
    frame = _perturbed(kind)
    assert history_csv(frame) == _to_csv(frame)


def test_a_frame_the_fast_path_cannot_write_is_written_by_to_csv() -> None:
    frame = _recorded()
    frame["Dividends"] = frame["Dividends"].astype(object)  # not float64: to_csv formats it
    assert history_csv(frame) == _to_csv(frame)
    frame = _recorded()
    frame["Volume"] = frame["Volume"].astype(float)
    frame.loc[frame.index[:3], "Volume"] = np.nan  # a missing volume is written as 0, as before
    assert history_csv(frame) == _to_csv(frame)
