"""Labelled replies through the gate's judge, over several world seeds: false passes and false fails.

    python scripts/judge_replies.py REPLIES.jsonl [--seeds 1-5] [--worlds K] [--data DIR] [--in-process]

``REPLIES.jsonl`` holds one labelled final tool a line: ``{"task": "calc_007", "label": "wrong" |
"correct", "entry": "max_drawdown", "code": "...", "why": "..."}``. For each seed the run's probes
(listed, derived and drawn across the argument space from the seed) and hidden worlds are built as
the gate builds them, each reply's value for the task's own arguments is computed in the sandbox
and judged exactly as the gate judges a final tool (:func:`runner.judging.grade.judge_task`). A
``wrong`` reply that passes is a false pass, a ``correct`` one that does not is a false fail; both
are printed with the judge's reason. Exit 0 when there are none, 1 otherwise, 2 on a bad file.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from finevo.outcome import Outcome
from finevo.paths import benchmarks_dir, snapshot_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.api import ExecutionResult
from runner.inputs.tasks import load_tasks
from runner.judging.grade import Reruns, judge_task


def _sibling(name: str) -> Any:
    """A sibling script loaded by its path (scripts/ is not a package; no sys.path change)."""
    spec = importlib.util.spec_from_file_location(name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_bench_worlds = _sibling("bench_worlds")
_InProcess, _seeds, _SeedContexts = _bench_worlds._InProcess, _bench_worlds._seeds, _bench_worlds.SeedContexts


def _replies(path: Path, known: set[str]) -> list[dict[str, Any]]:
    out = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            reply = json.loads(line)
        except json.JSONDecodeError as exc:
            raise SystemExit(f"{path}:{number}: not JSON ({exc.msg})") from None
        if reply.get("label") not in ("wrong", "correct") or reply.get("task") not in known \
                or not isinstance(reply.get("code"), str) or not isinstance(reply.get("entry"), str):
            raise SystemExit(f"{path}:{number}: needs task (a benchmark id), label (wrong|correct), entry and code")
        out.append(reply)
    return out


def main(argv: list[str] | None = None, contexts: Any = None) -> int:
    """``contexts``: a ``bench_worlds.SeedContexts`` of the caller's for the same data, the suite's
    tasks and worlds count, whose seeds it may have built already (the suite shares them with its
    sweep of the reference tools); None builds them here."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("replies", type=Path)
    parser.add_argument("--seeds", default="1-5", help="world seeds, e.g. 1-5 or 3,7 (default 1-5)")
    parser.add_argument("--worlds", type=int, default=3, help="worlds per task (default 3)")
    parser.add_argument("--data", type=Path, default=snapshot_dir(), help="the run's snapshot (default: bundled)")
    parser.add_argument("--in-process", action="store_true", help="no sandbox (trusted replies only)")
    args = parser.parse_args(argv)
    all_tasks = load_tasks(benchmarks_dir() / "tasks.jsonl")
    tasks = {t.id: t for t in all_tasks}
    try:
        replies = _replies(args.replies, set(tasks))
    except (OSError, SystemExit) as exc:
        print(f"judge_replies: {exc}", file=sys.stderr)
        return 2
    # every task's probes and expected values, and the worlds of all of them (as the gate builds them)
    own = contexts is None or not contexts.serves(args.data, tasks, args.worlds)
    shared = _SeedContexts(args.data, all_tasks, args.worlds) if own else contexts
    expected = shared.expected
    sandbox = _InProcess(args.data) if args.in_process else create_sandbox(args.data)
    limits = Limits(timeout_s=30.0)

    def run_tool(code: str, entry: str, call: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        if snapshot_dir is None:
            return sandbox.run(code, entry, call, limits)
        return sandbox.run(code, entry, call, limits, snapshot_dir=snapshot_dir)

    tally: Counter[str] = Counter()
    costs: list[float] = []
    try:
        for seed in _seeds(args.seeds):
            with shared.seed(seed) as context:
                judged, probe_expected, worlds = context.judged, context.probe_expected, context.worlds
                if isinstance(sandbox, _InProcess):
                    sandbox.worlds = worlds
                for number, reply in enumerate(replies, start=1):
                    task = judged[reply["task"]]
                    started = time.perf_counter()
                    main_run = run_tool(reply["code"], reply["entry"], dict(task.intent.args))
                    outcome = Outcome(task_id=task.id, value=main_run.value if main_run.ok else None,
                                      tool_code=reply["code"], stage="done")
                    result = judge_task(task, outcome, expected[task.id], 0.0,
                                        Reruns(run_tool, probe_expected=probe_expected[task.id], worlds=worlds))
                    costs.append(time.perf_counter() - started)
                    passed = result.state == "pass"
                    kind = ("false pass" if passed else "caught") if reply["label"] == "wrong" else \
                        ("ok" if passed else "false fail")
                    tally[kind] += 1
                    if kind in ("false pass", "false fail"):
                        print(f"seed {seed} #{number} {task.id} [{reply.get('why', '')}]: {kind.upper()}: "
                              f"{result.reason[:300]}")
            print(f"seed {seed}: {dict(tally)}", flush=True)
    finally:
        sandbox.close()
        if own:
            shared.close()
    print(f"{len(replies)} replies x {len(_seeds(args.seeds))} seed(s): {tally['false pass']} false pass(es), "
          f"{tally['false fail']} false fail(s) ({tally['caught']} wrong caught, {tally['ok']} correct passed); "
          f"judging a reply: median {sorted(costs)[len(costs) // 2] * 1000:.0f} ms")
    return 0 if tally["false pass"] == 0 and tally["false fail"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
