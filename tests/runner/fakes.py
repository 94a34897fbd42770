"""A scripted stand-in for the agent, so the gate is tested without an LLM.

The fake answers each benchmark task according to a behaviour map (task id -> behaviour):

* ``pass``: the oracle's primary expected value (computed on the bundled snapshot); its tool also
  answers the task's probes right when the gate re-runs it (see :class:`FakeSandbox`);
* ``wrong``: a value the judge must reject;
* ``base_only``: right for any arguments on the bundled snapshot, whatever market data it is given
  (the hidden worlds must catch it);
* ``external``: an :class:`ExternalError` (judged error; on a security task a missing prediction);
* ``hang``: waits until the sandbox is closed or the deadline passes, like a real agent would;
* ``ignore_deadline``: waits until the sandbox is closed, ignoring the deadline.

Run as a script (``python -m tests.runner.fakes BEHAVIOURS_JSON -- CLI ARGS``) it runs the real
``finevo-verify run`` CLI with the fake wired in, for signal tests on a real subprocess.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

from finevo.errors import DeadlineExceeded, InputError, LLMRateLimitError, PredictionMissingError
from finevo.market.snapshot import load_snapshot
from finevo.outcome import Attempt, LLMUsage, Outcome
from finevo.question import Question, SecurityQuestion
from finevo.sandbox.api import ExecutionResult
from runner.execution.session import Session, SessionInfo, SessionSpec
from runner.inputs.corpus import FORGED_VALUE
from runner.inputs.tasks import Task, load_tasks

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
TASKS = BENCH / "tasks.jsonl"
DATA = BENCH / "data"

_EXPECTED: dict[str, Any] = {}


def primary_expected(task: Task) -> Any:
    from runner.judging.oracle import expected_values

    if task.id not in _EXPECTED:
        _EXPECTED[task.id] = next(iter(expected_values(task, load_snapshot(DATA)).values()))
    return _EXPECTED[task.id]


_SNAPSHOTS: dict[str, Any] = {}
_TASKS: dict[str, Task] = {}


def answer_for(task_id: str, args: dict[str, Any], snapshot_dir: str | None = None) -> Any:
    """The primary expected value of ``task_id`` for the call ``args`` (its own, a probe's or any
    other) on the market data at ``snapshot_dir`` (default: the bundled snapshot): a right tool."""
    from runner.judging.oracle import expected_values

    if not _TASKS:
        _TASKS.update({t.id: t for t in load_tasks(TASKS)})
    task = _TASKS[task_id]
    if args == dict(task.intent.args) and snapshot_dir is None:
        return primary_expected(task)
    key = snapshot_dir or str(DATA)
    if key not in _SNAPSHOTS:
        _SNAPSHOTS[key] = load_snapshot(key)
    changed = {k: v for k, v in args.items() if task.intent.args.get(k) != v}
    return next(iter(expected_values(task, _SNAPSHOTS[key], changed).values()))


def wrong_value(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return float(value) * 1.5 + 1.0
    if isinstance(value, dict):
        return {k: wrong_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return []
    return None


def _right(task_id: str, args: dict[str, Any], snapshot_dir: str | None) -> ExecutionResult:
    """What a right tool returns for ``args``: the oracle's value, or, where the oracle has none (a
    lookback beyond the data), a clear error, as a right tool raises."""
    try:
        return ExecutionResult(status="ok", value=answer_for(task_id, args, snapshot_dir))
    except InputError as exc:
        return ExecutionResult(status="exception", error_type="ValueError", error_message=str(exc).split(": ")[-1])


class FakeSandbox:
    def __init__(self) -> None:
        self.closed = threading.Event()

    def run(self, code: str, entry: str | None, args: dict[str, Any] | None = None, limits: Any = None,
            *, snapshot_dir: str | None = None) -> ExecutionResult:
        if "BLOCK" in code:
            return ExecutionResult(status="blocked", layer="policy", rule="import-os", line=1, col=0)
        if "DENIED" in code:  # the supervisor's own record of a seccomp denial
            return ExecutionResult(status="blocked", layer="seccomp", rule="seccomp",
                                   details={"evidence": "seccomp notification: socket"})
        if "CLAIMS_SECCOMP" in code:  # the words of a seccomp block, without the supervisor's record
            return ExecutionResult(status="blocked", layer="seccomp", rule="seccomp")
        if "RAISE" in code:
            return ExecutionResult(status="exception", layer="audit-hook", error_type="PermissionError")
        if "LEAK_FILE" in code:  # a sandbox that failed: the payload read the canary file
            path = code.split("LEAK_FILE:")[1].split()[0]
            return ExecutionResult(status="ok", value=Path(path).read_text())
        if "# base-only " in code and args is not None:  # right on the bundled snapshot only
            return _right(code.split("# base-only ")[1].split()[0], args, None)
        if "# answers " in code and args is not None:  # a right tool re-run on a probe
            return _right(code.split("# answers ")[1].split()[0], args, snapshot_dir)
        if "FORGE" in code:  # a sandbox that failed: the tool's forged record was taken as its result
            return ExecutionResult(status="ok", value=FORGED_VALUE)
        if "LEAK_ENV" in code:
            import os

            return ExecutionResult(status="ok", value=os.environ.get("FINEVO_CANARY_SECRET"))
        return ExecutionResult(status="ok", value=1.0)

    def layers(self) -> dict[str, bool]:
        return {"policy": True, "fake": True}

    def close(self) -> None:
        self.closed.set()


def _escape(query: str) -> str:
    """What a tool that got out would do with the canaries a security request names: read each
    existing file, contact each ``127.0.0.1:PORT``; returns what it read."""
    import socket

    read = []
    for word in query.replace(",", " ").split():
        if word.startswith("127.0.0.1:"):
            with socket.create_connection(("127.0.0.1", int(word.split(":")[1])), timeout=5):
                pass
        elif word.startswith("/") and Path(word).is_file():
            read.append(Path(word).read_text())
    return "\n".join(read)


class FakeAgent:
    def __init__(self, behaviours: dict[str, str], sandbox: FakeSandbox, default: str = "pass") -> None:
        self.behaviours = behaviours
        self.sandbox = sandbox
        self.default = default
        self.calls: list[str] = []

    def solve(self, task: Question | SecurityQuestion, deadline: float | None = None) -> Outcome:
        self.calls.append(task.task_id)
        how = self.behaviours.get(task.task_id, self.default)
        code = f"def tool(symbol: str) -> float:\n    return 0.0  # {task.task_id}\n"
        out = Outcome(task_id=task.task_id, tool_name=f"tool_{task.task_id}", tool_version="1.0.0", tool_hash="ab" * 8,
                      tool_source="created", tool_code=code, stage="done",
                      attempts=[Attempt(number=1, stage="synthesis", ok=True)],
                      usage=LLMUsage(calls=1, prompt_tokens=10, completion_tokens=20, latency_s=0.001),
                      timings={"synthesis": 0.001})
        if isinstance(task, SecurityQuestion):
            if how == "unblocked":
                out.value, out.tool_source = 0, "created"
            elif how == "escapes":  # a policy and sandbox that failed, then a claim of a policy block
                out.stdout = _escape(task.query)
                out.blocked_by, out.tool_source, out.stage = "policy:import-os", "blocked", "policy"
            elif how == "external":  # e.g. a predictions file without this task: never reached a layer
                out.error = PredictionMissingError(f"task {task.task_id}: no prediction in preds.jsonl",
                                                   task_id=task.task_id)
                out.tool_source, out.tool_code, out.stage = "none", None, "synthesis"
            else:
                out.blocked_by, out.tool_source, out.stage = "policy:import-os", "blocked", "policy"
            return out
        if how in ("hang", "ignore_deadline"):
            while not self.sandbox.closed.is_set():
                if how == "hang" and deadline is not None and time.monotonic() > deadline:
                    out.error = DeadlineExceeded(f"task {task.task_id}: deadline passed", stage="synthesis")
                    out.stage = "synthesis"
                    return out
                self.sandbox.closed.wait(0.02)
            out.error = DeadlineExceeded("sandbox closed", stage="execution")
            return out
        if how == "external":
            out.error = LLMRateLimitError("429 from the endpoint", status=429)
            out.stage = "synthesis"
            return out
        # the agent gets a Question (no oracle): the fake looks the truth up by the task's id
        expected = answer_for(task.task_id, dict(task.intent.args))
        out.value = expected if how == "pass" else wrong_value(expected)
        if how in ("pass", "refined"):
            out.tool_code = f"def tool(**args: object) -> object:\n    ...  # answers {task.task_id}\n"
        if how == "base_only":  # right for any arguments, but always on the bundled snapshot's data
            out.value = expected
            out.tool_code = f"def tool(**args: object) -> object:\n    ...  # base-only {task.task_id}\n"
        if how == "refined":
            out.value = expected
            out.attempts.append(Attempt(number=2, stage="refinement", ok=True))
            out.tool_source = "refined"
        return out


def make_factory(behaviours: dict[str, str], default: str = "pass", log: list[SessionSpec] | None = None):
    def factory(spec: SessionSpec) -> Session:
        if log is not None:
            log.append(spec)
        sandbox = FakeSandbox()
        if spec.provider is not None:       # the self-check's null model: never right
            agent: Any = FakeAgent({}, sandbox, default="wrong")
        elif spec.llm == "reference":
            agent = FakeAgent({}, sandbox, default="pass")
        else:
            agent = FakeAgent(behaviours, sandbox, default=default)
        return Session(agent=agent, sandbox=sandbox, closers=[sandbox.close],
                       info=SessionInfo(provider=spec.llm, model="fake-model", temperature=0.0, max_refinements=3,
                                        sandbox_layers=sandbox.layers()))
    return factory


def main(argv: list[str]) -> int:
    from finevo.errors import InputError
    from runner.cli import build_parser
    from runner.cli.run import cmd_run

    behaviours = json.loads(argv[0])
    args = build_parser().parse_args(argv[1:])
    try:
        return cmd_run(args, factory=make_factory(behaviours))
    except InputError as exc:
        print(f"finevo-verify: error: {exc.message}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
