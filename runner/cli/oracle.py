"""``finevo-verify oracle``: the harness's gold run.

For every task: the oracle's value (primary convention), the value the task's reference tool
(``benchmarks/reference/<id>.py``) returns through the yfinance replay shim, and the judge's
verdict on it; then the same for each of the task's probes (the reference tool re-run with the
probe's arguments against the oracle with the probe's parameters). Exit 0 when every reference
tool passes on its task and every probe, 1 otherwise.

Reference tools run through the sandbox (``finevo.sandbox.create_sandbox``) exactly as generated
tools do: the static policy first, then a confined process with the replay shim over the snapshot.
When the sandbox itself cannot run (an external error) there is no verdict: one line, exit 3.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from finevo.errors import ExternalError, InputError
from finevo.paths import benchmarks_dir, reference_dir, snapshot_dir
from runner.exitcodes import Exit

if TYPE_CHECKING:  # the judge and the oracle import pandas, the JSON alias pydantic: only the handlers load them
    from finevo.jsontypes import JSONObject, JSONValue
    from finevo.sandbox.api import ExecutionResult, Sandbox
    from runner.inputs.tasks import Task
    from runner.judging.compare import Judgement
    from runner.records import ProbeResult

# runner.records (pydantic) is imported inside the functions that use it: `--help` must not load it.

__all__ = ["OracleRow", "ToolRunner", "check_reference_tools", "reference_code", "register", "run"]


class ToolRunner(Protocol):
    """What runs a reference tool: the sandbox (``finevo.sandbox.api.Sandbox``) or a test double."""

    def run(self, code: str, entry: str | None, args: JSONObject | None = None) -> ExecutionResult: ...


def create_sandbox(data_dir: Path) -> Sandbox:
    """The sandbox the reference tools run in (imported on use: the parser is built for every ``--help``)."""
    from finevo.sandbox import create_sandbox as create

    return create(data_dir)


# --------------------------------------------------------------------------- the gold run
@dataclass
class OracleRow:
    task: Task
    #: The oracle's value per accepted reading (:func:`runner.judging.oracle.expected_values`).
    expected: dict[str, JSONValue]
    result: ExecutionResult
    #: The verdict on the task: its main value and every probe.
    judgement: Judgement
    probes: list[ProbeResult] = field(default_factory=list)

    @property
    def primary(self) -> JSONValue:
        return next(iter(self.expected.values()))

    def to_dict(self) -> JSONObject:
        from runner.judging.compare import JUDGE_VERSION

        return {"task_id": self.task.id, "expected": self.expected, "tool_status": self.result.status,
                "tool_value": self.result.value, "judgement": self.judgement.to_dict(),
                "probes": [p.to_dict() for p in self.probes], "judge_version": JUDGE_VERSION}


def reference_code(task: Task, directory: Path | None = None) -> str:
    path = (directory or reference_dir()) / f"{task.id}.py"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: no reference tool for task {task.id}") from None


def check_reference_tools(tasks: list[Task], provider: Any, runner: ToolRunner,
                          directory: Path | None = None) -> list[OracleRow]:
    """Oracle values, reference-tool values and the judge's verdict for every task and probe."""
    from finevo.outcome import Outcome
    from runner.judging.compare import Judgement, judge_probes, judge_value
    from runner.judging.oracle import expected_values, probe_expected_values
    from runner.records import TaskState

    rows: list[OracleRow] = []
    for task in tasks:
        expected = expected_values(task, provider)
        code = reference_code(task, directory)
        result = runner.run(code, task.intent.indicator, dict(task.intent.args))
        probes: list[ProbeResult] = []
        if result.status == "ok":
            judgement = judge_value(task, result.value, expected)
            outcome = Outcome(task_id=task.id, value=result.value, tool_code=code, stage="done")
            judgement, probes = judge_probes(task, outcome, judgement, expected, probe_expected_values(task, provider),
                                             lambda c, entry, args: runner.run(c, entry, args))
        else:
            detail = ": ".join(x for x in (result.error_type, result.error_message, result.rule) if x)
            judgement = Judgement(TaskState.FAIL, f"reference tool {result.status}: {detail}")
        rows.append(OracleRow(task, expected, result, judgement, probes))
    return rows


def _short(value: Any, width: int = 40) -> str:
    if isinstance(value, bool) or value is None:
        text = str(value)
    elif isinstance(value, float):
        text = f"{value:.10g}"
    elif isinstance(value, dict):
        text = ", ".join(f"{k}={_short(v, 12)}" for k, v in value.items())
        if {"date", "amount"} <= set(value):
            text = f"{value['date']}:{_short(value['amount'], 8)}"
    elif isinstance(value, list):
        text = f"[{len(value)}] {_short(value[0], 15)} .. {_short(value[-1], 15)}" if value else "[]"
    else:
        text = str(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _select(tasks: list[Task], only: str | None) -> list[Task]:
    if not only:
        return tasks
    wanted = [x.strip() for x in only.split(",") if x.strip()]
    known = {t.id for t in tasks}
    unknown = [x for x in wanted if x not in known]
    if unknown:
        raise InputError(f"--only: unknown task id(s) {', '.join(unknown)}")
    return [t for t in tasks if t.id in wanted]


def run(args: argparse.Namespace) -> int:
    from finevo.market.snapshot import load_snapshot
    from runner.inputs.tasks import load_tasks
    from runner.judging.compare import JUDGE_VERSION
    from runner.records import TaskState

    data_dir = Path(args.data) if args.data else snapshot_dir()
    tasks = _select(load_tasks(args.tasks or benchmarks_dir() / "tasks.jsonl"), args.only)
    try:
        provider = load_snapshot(data_dir)
    except (OSError, ValueError) as exc:
        raise InputError(f"{data_dir}: cannot load snapshot: {exc}") from None
    try:
        sandbox = create_sandbox(data_dir)
        try:
            rows = check_reference_tools(tasks, provider, sandbox)
        finally:
            sandbox.close()
    except ExternalError as exc:
        print(f"finevo-verify oracle: no verdict: {exc.code}: {exc.message}", file=sys.stderr)
        return int(Exit.NO_VERDICT)
    out = sys.stdout
    out.write(f"snapshot {data_dir} (as of {provider.as_of}); reference tools via the sandbox; judge {JUDGE_VERSION}\n")
    out.write(f"{'task':<10} {'oracle (primary)':<42} {'reference tool':<42} verdict\n")
    for row in rows:
        tool = _short(row.result.value) if row.result.status == "ok" else f"<{row.result.status}>"
        verdict = row.judgement.state if row.judgement.passed else f"{row.judgement.state}: {row.judgement.reason}"
        out.write(f"{row.task.id:<10} {_short(row.primary):<42} {tool:<42} {verdict}\n")
        for probe in row.probes:
            probe_args = ", ".join(f"{k}={v}" for k, v in probe.args.items())
            shown = _short(next(iter(probe.expected.values()))) if probe.expected else "-"
            tool = _short(probe.actual) if probe.actual is not None else "-"
            verdict = f"pass ({probe_args})" if probe.state == TaskState.PASS else f"{probe.state}: {probe.reason}"
            out.write(f"{'  probe ' + str(probe.index):<10} {shown:<42} {tool:<42} {verdict}\n")
    passed = sum(row.judgement.passed for row in rows)
    n_probes = sum(len(row.task.probes) for row in rows)
    out.write(f"{passed}/{len(rows)} reference tools match the oracle (with their {n_probes} probe(s))\n")
    return int(Exit.PASSED if passed == len(rows) else Exit.FAILED)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "oracle", help="gold run: oracle value, reference-tool value and verdict for every task",
        description="Compute every task's oracle value, run its reference tool through the replay shim, "
                    "judge it; exit 0 when all match.")
    parser.add_argument("--data", metavar="DIR", help="market snapshot directory (default: the bundled one)")
    parser.add_argument("--tasks", metavar="FILE", help="task file (default: benchmarks/tasks.jsonl)")
    parser.add_argument("--only", metavar="ID,...", help="comma-separated task ids")
    parser.set_defaults(func=run)
