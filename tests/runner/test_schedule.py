"""``--jobs``: judging and the payload corpus beside the agent give the serial run's results, byte for byte
(run ids and timings aside), in the serial run's order."""

from __future__ import annotations

import ast
import difflib
import gc
import io
import json
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from finevo.errors import InputError
from finevo.paths import benchmarks_dir, snapshot_dir
from runner.execution.schedule import JOBS_ENV, available_cores, one_parse_at_a_time, resolve_jobs
from runner.gate import run_gate
from runner.inputs.prepare import GateConfig
from runner.reports import document
from runner.reports.console import Console
from tests.runner.fakes import make_factory

_TIME_ATTRS = re.compile(r'\s(time|timestamp)="[^"]*"')
_DECIMAL = re.compile(r"\d+\.\d+")


def _stable_event(line: str, run_id: str) -> Any:
    event = json.loads(line.replace(run_id, "RUN"))
    return document.stable_view(event)


def reports_of(run_dir: Path) -> dict[str, Any]:
    """Everything a run leaves that a reader compares, with run ids and timings taken out."""
    run_id = run_dir.name
    results = json.loads((run_dir / "results.json").read_text())
    view = document.stable_view(results)
    view.pop("run_id")
    md = (run_dir / "summary.md").read_text().replace(run_id, "RUN")
    return {
        "results.json": view,
        "events.jsonl": [_stable_event(line, run_id)
                         for line in (run_dir / "events.jsonl").read_text().splitlines()],
        "junit.xml": _TIME_ATTRS.sub("", (run_dir / "junit.xml").read_text().replace(run_id, "RUN")),
        # durations are the only decimals that differ; their places (and everything else) must not
        "summary.md": _DECIMAL.sub("D", md),
        "tools": {p.name: p.read_bytes() for p in sorted((run_dir / "tools").glob("*"))},
        "files": sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                        if "registry" not in p.parts and "selfcheck" not in p.parts),
    }


def _report_diff(serial: dict[str, Any], fast: dict[str, Any]) -> str:
    """The lines that differ between two runs' reports, report by report (a failure says what moved)."""
    out = []
    for name in serial:
        if serial[name] != fast.get(name):
            a, b = (json.dumps(r[name], indent=1, sort_keys=True, default=repr) if not isinstance(r[name], str)
                    else r[name] for r in (serial, fast))
            out += [f"{name}:", *list(difflib.unified_diff(a.splitlines(), b.splitlines(), "serial", "jobs 2",
                                                           lineterm="", n=1))[:40]]
    return "\n".join(out)


def _console_lines(text: str) -> list[str]:
    return [_DECIMAL.sub("D", line) for line in text.splitlines() if line.startswith("[")]


@pytest.mark.slow
def test_jobs_two_gives_the_serial_results_with_fakes(make_config) -> None:
    runs = {}
    for jobs in (1, 2):
        out = io.StringIO()
        log: list = []
        result = run_gate(make_config(run_id=f"jobs{jobs}", jobs=jobs, worlds=1),  # a lane judges worlds too
                          factory=make_factory({"fetch_002": "wrong", "calc_002": "external"}, log=log),
                          console=Console(out, colour=False))
        runs[jobs] = (result, out.getvalue(), [s.label for s in log])
    (serial, serial_out, serial_labels), (fast, fast_out, fast_labels) = runs[1], runs[2]
    assert serial.exit_code == fast.exit_code == 1
    serial_reports, fast_reports = reports_of(serial.run_dir), reports_of(fast.run_dir)
    assert serial_reports == fast_reports, _report_diff(serial_reports, fast_reports)
    assert _console_lines(serial_out) == _console_lines(fast_out)
    assert len(_console_lines(fast_out)) == 7
    # the serial run opens no lane; the parallel one a judging lane of its own (a sandbox per core),
    # beside the same sessions
    assert serial_labels == ["main", "reference", "null"]
    assert sorted(fast_labels) == sorted(["main", "judge", "judge-2", "reference", "null"])


@pytest.mark.slow
def test_jobs_two_gives_the_serial_results_on_the_real_gate(tmp_path) -> None:
    """The bundled suite (a slice with tool reuse), the reference model, hidden worlds, security tasks and
    a slice of the payload corpus: serial and ``--jobs 2`` write the same reports."""
    bench = benchmarks_dir()
    payloads = tmp_path / "payloads.jsonl"
    lines = (bench / "security_payloads.jsonl").read_text().splitlines()
    payloads.write_text("\n".join(lines[:24]) + "\n")
    security = tmp_path / "security.jsonl"
    security.write_text("\n".join((bench / "security_tasks.jsonl").read_text().splitlines()[:3]) + "\n")
    wanted = ("fetch_001", "fetch_004", "fetch_005", "fetch_006", "calc_002", "comp_001")
    tasks = tmp_path / "tasks.jsonl"  # a file of its own: --only would drop the payloads
    tasks.write_text("".join(line + "\n" for line in (bench / "tasks.jsonl").read_text().splitlines()
                             if line.strip() and json.loads(line)["id"] in wanted))
    runs = {}
    for jobs in (1, 2):
        out = io.StringIO()
        config = GateConfig(llm="reference", tasks_path=tasks, security_path=security,
                            payloads_path=payloads, baseline_path=None, data_dir=snapshot_dir(),
                            out_dir=tmp_path / "out", run_id=f"jobs{jobs}", worlds=1, worlds_seed=7, jobs=jobs)
        result = run_gate(config, console=Console(out, colour=False))
        runs[jobs] = result, out.getvalue()
    (serial, serial_out), (fast, fast_out) = runs[1], runs[2]
    assert serial.exit_code == fast.exit_code == 0, fast.doc["verdict"]
    serial_reports, fast_reports = reports_of(serial.run_dir), reports_of(fast.run_dir)
    assert serial_reports == fast_reports, _report_diff(serial_reports, fast_reports)
    assert _console_lines(serial_out) == _console_lines(fast_out)
    assert {t["tool"]["source"] for t in fast.doc["tasks"]} >= {"created", "reused"}  # the order that matters held
    assert fast.doc["security"]["payloads_total"] == 24 and fast.doc["security"]["total"] == 3
    assert [t["task_id"] for t in fast.doc["tasks"]] == list(wanted)


def test_jobs_come_from_the_flag_then_the_environment_then_the_cores() -> None:
    assert resolve_jobs(3, {JOBS_ENV: "5"}) == 3
    assert resolve_jobs(None, {JOBS_ENV: "5"}) == 5
    assert resolve_jobs(None, {}) == available_cores() >= 1
    for bad in ("0", "-2", "two"):
        with pytest.raises(InputError, match=JOBS_ENV):
            resolve_jobs(None, {JOBS_ENV: bad})
    with pytest.raises(InputError, match="--jobs"):
        resolve_jobs(0, {})


def test_jobs_zero_is_a_usage_error(capsys) -> None:
    from runner.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--jobs", "0"])
    assert exc.value.code == 2
    assert "--jobs" in capsys.readouterr().err


class _Finalised:
    """Cyclic garbage with a finaliser: collecting it runs Python code, so the interpreter may switch
    threads in the middle of building an AST -- what the gate's own garbage does during a run."""

    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))


@pytest.mark.slow
def test_parsing_beside_a_lane_never_raises_the_interpreters_spurious_system_error() -> None:
    code = "\n".join(p.read_text() for p in sorted((benchmarks_dir() / "reference").glob("*.py")))
    errors: list[str] = []

    def parse_often() -> None:
        for _ in range(60):
            for _ in range(100):
                _Finalised()
            try:
                ast.parse(code)
                ast.literal_eval("{'a': [1, 2.5, None]}")
            except SystemError as exc:
                errors.append(str(exc))

    original = ast.parse
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        with one_parse_at_a_time():
            threads = [threading.Thread(target=parse_often) for _ in range(3)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            assert ast.parse is not original
    finally:
        sys.setswitchinterval(interval)
        gc.collect()
    assert errors == []
    assert ast.parse is original  # the interpreter's own parser is back once no lane runs
