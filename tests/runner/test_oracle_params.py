"""runner.inputs.oracle_params: each oracle's parameters are a typed model, read from the task file's JSON
in one place and checked when the task file is loaded (every accepted reading, every probe), so a
wrong parameter is one line naming the file, the line, the task and the parameter, and exit 2 before
anything runs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from finevo.errors import InputError
from finevo.paths import benchmarks_dir
from runner.cli import main as cli_main
from runner.inputs.oracle_params import (
    PARAMS,
    READINGS,
    SHARED_READINGS,
    BollingerBandsParams,
    MaxCloseParams,
    OracleParamsError,
    RsiParams,
    accepted_readings,
    parse_params,
)
from runner.inputs.suite import load_suite
from runner.inputs.tasks import load_tasks
from runner.judging.oracle import ORACLES

TASKS_FILE = benchmarks_dir() / "tasks.jsonl"
TASKS = {t.id: t for t in load_tasks(TASKS_FILE)}


# --------------------------------------------------------------------------- the registry
def test_every_oracle_is_its_function_and_the_model_its_function_reads() -> None:
    assert set(ORACLES) == set(PARAMS)
    for name, oracle in ORACLES.items():
        assert oracle.params is PARAMS[name], name
        assert typing.get_type_hints(oracle.function)["p"] is PARAMS[name], name


def test_an_oracle_function_gets_its_model_only() -> None:
    params = MaxCloseParams(symbol="AAPL", days=5)
    with pytest.raises(TypeError, match="rsi takes RsiParams, not MaxCloseParams"):
        ORACLES["rsi"](object(), params)  # type: ignore[arg-type]


def test_every_shared_reading_value_is_a_value_its_oracles_take() -> None:
    """A reading added to READINGS must be added to the models too, or no task could use it."""
    for oracle_name, axes in SHARED_READINGS.items():
        task = next(t for t in TASKS.values() if t.oracle.name == oracle_name)
        for axis in axes:
            reading = READINGS[axis]
            for label, value in reading.values:
                parsed = parse_params(oracle_name, {**task.oracle.params, reading.key: value})
                assert getattr(parsed, reading.key) == value, (oracle_name, label)


def test_every_benchmark_reading_and_probe_parses() -> None:
    for task in TASKS.values():
        for convention, params in accepted_readings(task):
            for probe in (None, *task.probes):
                merged = params if probe is None else {**params, **probe.oracle_params}
                assert isinstance(parse_params(task.oracle.name, merged), PARAMS[task.oracle.name]), convention


def test_the_readme_table_lists_every_oracle_s_parameters() -> None:
    """benchmarks/README.md, "Oracle parameters": one row per oracle, its required and optional keys."""
    text = (benchmarks_dir() / "README.md").read_text(encoding="utf-8")
    section = text.split("## Oracle parameters", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0].startswith("`"):
            rows[cells[0].strip("`")] = (re.findall(r"`(\w+)`", cells[1]),
                                         dict(re.findall(r"`(\w+)` \(`([^`]*)`\)", cells[2])))
    assert list(rows) == list(PARAMS)
    for name, model in PARAMS.items():
        fields = model.model_fields
        required = [k for k, f in fields.items() if f.is_required()]
        optional = {k: "none" if f.default is None else str(f.default).lower()
                    for k, f in fields.items() if not f.is_required()}
        assert rows[name] == (required, optional), name


# --------------------------------------------------------------------------- the models
@pytest.mark.parametrize("params, problem", [
    ({"symbol": "AAPL", "window": 14, "days": "30"}, r"parameter 'days': Input should be a valid integer, got '30'"),
    ({"symbol": "AAPL", "window": 14, "days": 30.0}, r"parameter 'days': Input should be a valid integer, got 30\.0"),
    ({"symbol": "AAPL", "window": True, "days": 30}, r"parameter 'window': Input should be a valid integer, got True"),
    ({"symbol": "AAPL", "window": 0, "days": 30}, r"parameter 'window': Input should be greater than 0, got 0"),
    ({"symbol": "", "window": 14, "days": 30}, r"parameter 'symbol': String should have at least 1 character"),
    ({"symbol": "AAPL", "window": 14, "days": 30, "rsi_method": "cutler"},
     r"parameter 'rsi_method': Input should be 'wilder', 'wilder_sma' or 'simple', got 'cutler'"),
    ({"symbol": "AAPL", "window": 14, "dayz": 30}, r"unknown parameter 'dayz' \(it takes symbol, window, days, "),
    ({"window": 14, "days": 30}, r"parameter 'symbol' is required"),
    ({"symbol": "AAPL", "window": 14}, r"parameter 'days' is required with lookback 'window'"),
])
def test_a_refused_parameter_is_named(params: dict[str, Any], problem: str) -> None:
    with pytest.raises(OracleParamsError, match=r"^oracle 'rsi': " + problem) as caught:
        parse_params("rsi", params)
    assert isinstance(caught.value, InputError)


def test_the_models_read_json_as_the_oracle_needs_it() -> None:
    bands = parse_params("bollinger_bands", {"symbol": "GOOGL", "window": 20, "num_std": 2})
    assert isinstance(bands, BollingerBandsParams)
    assert type(bands.num_std) is float and bands.ddof == 0 and bands.prices == "adjusted"
    full = parse_params("rsi", {"symbol": "AAPL", "window": 14, "lookback": "full"})
    assert isinstance(full, RsiParams) and full.days is None
    pair = parse_params("correlation", {"symbols": ["^GSPC", "AAPL"], "days": 30})
    assert pair.model_dump()["symbols"] == ("^GSPC", "AAPL")
    with pytest.raises(ValidationError):
        bands.window = 5  # type: ignore[misc]  # frozen
    with pytest.raises(OracleParamsError, match=r"net_income needs both year and quarter"):
        parse_params("net_income", {"symbol": "AAPL", "year": 2023})
    with pytest.raises(OracleParamsError, match=r"parameter 'quarter': Input should be less than or equal to 4"):
        parse_params("net_income", {"symbol": "AAPL", "year": 2023, "quarter": 5})
    with pytest.raises(OracleParamsError, match=r"parameter 'symbol': Input should be a valid string, "
                                                r"got \['A', 'A', [^\n]*\.\.\.$") as caught:
        parse_params("latest_close", {"symbol": ["A"] * 10_000})
    assert len(caught.value.message) < 150  # one short line, whatever the task file holds
    with pytest.raises(InputError, match=r"^unknown oracle 'highest_close' \(known: bollinger_bands, "):
        parse_params("highest_close", {"symbol": "AAPL"})


# --------------------------------------------------------------------------- the task file
def _write(path: Path, task_id: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """The benchmark's task file with one task changed by ``change``."""
    lines = TASKS_FILE.read_text(encoding="utf-8").splitlines()
    out = []
    for line in lines:
        if line.strip() and not line.lstrip().startswith("#") and json.loads(line)["id"] == task_id:
            record = json.loads(line)
            change(record)
            line = json.dumps(record)
        out.append(line)
    path.write_text("\n".join(out) + "\n", encoding="utf-8")
    return path


def _line_of(task_id: str) -> int:
    for number, line in enumerate(TASKS_FILE.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip() and not line.lstrip().startswith("#") and json.loads(line)["id"] == task_id:
            return number
    raise AssertionError(task_id)


BAD_TASKS = [
    pytest.param("calc_001", lambda r: r["oracle"]["params"].update(days="30"),
                 "oracle 'rsi' convention 'last_30_days': parameter 'days': Input should be a valid integer, got '30'",
                 id="mistyped"),
    pytest.param("calc_008", lambda r: r["oracle"]["params"].pop("days"),
                 "oracle 'correlation' convention 'pearson_daily_returns': parameter 'days' is required",
                 id="missing"),
    pytest.param("comp_002", lambda r: r["oracle"]["params"].update(vol_trend="halves"),
                 "oracle 'volume_price_divergence' convention 'price_up_volume_slope_down': unknown parameter "
                 "'vol_trend' (it takes symbol, days, window_unit, volume_trend)", id="unknown-key"),
    pytest.param("comp_004", lambda r: r["conventions"][1]["params"].update(signal="crossing"),
                 "oracle 'post_signal_return' convention 'first_cross_only': parameter 'signal': Input should be "
                 "'every_day' or 'cross', got 'crossing'", id="convention"),
    pytest.param("comp_001", lambda r: r["probes"][2]["oracle_params"].update(rsi_threshold=True),
                 "oracle 'ma_cross_rsi_signal' convention 'wilder_rsi', probe 3: parameter 'rsi_threshold': Input "
                 "should be a valid number, got True", id="probe"),
    pytest.param("calc_001", lambda r: r["conventions"][1]["params"].update(lookback="window", days=None),
                 "oracle 'rsi' convention 'full_history': parameter 'days' is required with lookback 'window'",
                 id="together"),
    pytest.param("fetch_008", lambda r: r["oracle"].update(name="highest_close"),
                 "unknown oracle 'highest_close' (known: bollinger_bands, correlation,", id="unknown-oracle"),
]


@pytest.mark.parametrize("task_id, change, problem", BAD_TASKS)
def test_a_wrong_oracle_parameter_fails_the_load_naming_line_task_and_parameter(
        tmp_path: Path, task_id: str, change: Callable[[dict[str, Any]], None], problem: str) -> None:
    bad = _write(tmp_path / "tasks.jsonl", task_id, change)
    with pytest.raises(InputError) as caught:
        load_tasks(bad)
    message = caught.value.message
    assert message.startswith(f"{bad}:{_line_of(task_id)}: task {task_id}: {problem}"), message
    assert "\n" not in message


def test_the_suite_load_refuses_it_before_any_selection(tmp_path: Path) -> None:
    """``--only`` another task does not hide it: the whole task file is checked."""
    bad = _write(tmp_path / "tasks.jsonl", "calc_001", lambda r: r["oracle"]["params"].update(days=-30))
    with pytest.raises(InputError, match=r"task calc_001: oracle 'rsi' .*parameter 'days': Input should be greater"):
        load_suite(bad, None, None, None)


def test_the_gate_exits_2_and_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = _write(tmp_path / "tasks.jsonl", "comp_003", lambda r: r["oracle"]["params"].update(symbols="AAPL"))
    out = tmp_path / "out"
    code = cli_main(["run", "--llm", "reference", "--tasks", str(bad), "--only", "fetch_001", "--out", str(out)])
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines == [f"finevo-verify: error: {bad}:{_line_of('comp_003')}: task comp_003: oracle 'portfolio_return' "
                     "convention 'buy_and_hold': parameter 'symbols': Input should be a valid tuple, got 'AAPL'"]
    assert not out.exists()
    assert cli_main(["list", "--tasks", str(bad)]) == 2
    assert cli_main(["oracle", "--tasks", str(bad), "--only", "fetch_001"]) == 2


def test_loading_a_task_file_does_not_load_pandas() -> None:
    code = ("import sys; from runner.inputs.tasks import load_tasks; "
            f"load_tasks({str(TASKS_FILE)!r}); print(sorted(m for m in ('pandas', 'numpy') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert proc.stdout.strip() == "[]"
