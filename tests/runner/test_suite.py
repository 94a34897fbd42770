"""Suite loading, baseline checks and task selection: one clear line per bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finevo.errors import InputError
from runner.inputs.suite import Suite, load_baseline, parse_shard, select
from runner.inputs.tasks import load_tasks
from tests.runner.fakes import TASKS


def _baseline(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "baseline.json"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, message", [
    ("{not json", r"baseline\.json:1: malformed JSON in baseline"),
    ("[1, 2]", "must be a JSON object"),
    ('{"target_pass_rate": 0.8}', "missing key\\(s\\): passing_tasks"),
    ('{"passing_tasks": [], "target_pass_rate": 0.8}', "names no tasks"),
    ('{"passing_tasks": ["a", "a"], "target_pass_rate": 0.8}', "twice: a"),
    ('{"passing_tasks": ["a"], "target_pass_rate": 1.5}', "must be a number in \\[0, 1\\]"),
    ('{"passing_tasks": [3], "target_pass_rate": 0.5}', "list of task ids"),
])
def test_bad_baseline_is_one_line_input_error(tmp_path, text, message) -> None:
    with pytest.raises(InputError, match=message) as info:
        load_baseline(_baseline(tmp_path, text))
    assert "\n" not in info.value.message


def test_unknown_baseline_ids_are_a_warning(tmp_path) -> None:
    path = _baseline(tmp_path, json.dumps({"passing_tasks": ["fetch_001", "gone_999"], "target_pass_rate": 0.8}))
    baseline, warnings = load_baseline(path, ["fetch_001", "fetch_002"])
    assert baseline.passing_tasks == ("fetch_001", "gone_999")
    assert len(warnings) == 1 and "gone_999" in warnings[0] and "fetch_001" not in warnings[0]


@pytest.mark.parametrize("text", ["0/3", "4/3", "1/0", "a/b", "1-3", ""])
def test_invalid_shard(text) -> None:
    with pytest.raises(InputError, match="--shard"):
        parse_shard(text)


def _suite() -> Suite:
    return Suite(tasks=load_tasks(TASKS), security=[], payloads=[], baseline=None)


def test_shards_partition_the_suite_in_order() -> None:
    suite = _suite()
    shards = [select(suite, shard=(k, 3)).tasks for k in (1, 2, 3)]
    ids = [t.id for shard in shards for t in shard]
    assert sorted(ids) == sorted(t.id for t in suite.tasks) and len(ids) == len(set(ids))
    order = [t.id for t in suite.tasks]
    for shard in shards:
        positions = [order.index(t.id) for t in shard]
        assert positions == sorted(positions)


def test_only_and_category_selection() -> None:
    suite = _suite()
    assert [t.id for t in select(suite, only=["calc_002", "fetch_001"]).tasks] == ["fetch_001", "calc_002"]
    assert {t.category for t in select(suite, category="composite").tasks} == {"composite"}
    with pytest.raises(InputError, match="unknown task id\\(s\\): nope_001"):
        select(suite, only=["nope_001"])
    with pytest.raises(InputError, match="unknown category"):
        select(suite, category="stocks")
