"""events.jsonl and results.json are strict JSON whatever a record holds (finevo.normalize, RECORD policy)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from finevo.vocabulary import Category
from runner.reports import document
from runner.reports.events import EventLog, read_events


def test_an_event_with_non_finite_numbers_is_strict_json(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    with EventLog(path) as log:
        log.emit("start", run_id="r")
        log.emit("task", value=float("inf"), probes=[np.float64("nan"), 1.5], category=Category.FETCH)
    line = path.read_text(encoding="utf-8").splitlines()[1]
    parsed = json.loads(line, parse_constant=lambda name: math.nan)  # NaN/Infinity would parse as nan
    assert parsed["value"] is None and parsed["probes"] == [None, 1.5] and parsed["category"] == "fetch"
    assert read_events(path)[1] == parsed


def test_results_text_is_strict_json() -> None:
    text = document.dumps({"tasks": [{"actual": float("nan"), "expected": {"x": np.float32("-inf")}}]})
    assert json.loads(text, parse_constant=lambda name: math.nan) == {"tasks": [{"actual": None,
                                                                                 "expected": {"x": None}}]}
