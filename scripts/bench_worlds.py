"""The reference tools in the gate's hidden worlds, over many seeds: do they pass, and what it costs.

    python scripts/bench_worlds.py [--seeds 1-10] [--worlds K] [--data DIR] [--only ID,...] [--in-process]

For each seed: the gate's hidden worlds are built (:class:`runner.judging.worlds.Worlds`), and every
benchmark task's reference tool (``benchmarks/reference/<id>.py``) is judged exactly as the gate
judges a final tool (:func:`runner.judging.grade.judge_task`: the task's value, its listed and derived
probes, then every world), through one warm sandbox. Printed per seed: the earlier as-of date, the
tasks that do not pass (with the judge's reason), and the time spent; then the cost of judging in
K worlds per task (median / max over tasks and seeds, world building included) and of deriving
the probes. Exit 0 when every reference tool passes in every world of every seed, 1 otherwise.

``--in-process`` runs the (trusted) reference tools in this process on the replay shim instead of
the sandbox: the same values, a fraction of the cost, for the many-seed stability proof.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from finevo.market.snapshot import load_snapshot
from finevo.outcome import Outcome
from finevo.paths import benchmarks_dir, snapshot_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.api import ExecutionResult
from runner.cli.oracle import reference_code
from runner.inputs.tasks import load_tasks
from runner.judging.grade import Reruns, judge_task
from runner.judging.oracle import expected_values, probe_expected_values
from runner.judging.probes import derive_probes, probes_for
from runner.judging.worlds import WorldKind, Worlds


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            out.extend(range(int(low), int(high) + 1))
        elif part.strip():
            out.append(int(part))
    return out


class _InProcess:
    """Trusted code on the replay shim in this process (the reference tools only: no confinement)."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self._loaded: dict[str, Any] = {}
        self._as_of: Any = None

    def run(self, code: str, entry: str, call: dict[str, Any], limits: Limits,
            snapshot_dir: str | None = None) -> ExecutionResult:
        from finevo.market import replay
        from finevo.normalize import TOOL, ResultRefused, normalize

        where = str(snapshot_dir or self.data)
        if where not in self._loaded:
            if len(self._loaded) > 16:
                self._loaded.clear()
            self._loaded[where] = load_snapshot(where)
        provider = self._loaded[where]
        if provider.as_of != self._as_of:  # freezing the clock is costly: only when "today" moves
            replay.install(provider)
            self._as_of = provider.as_of
        replay.bind(provider)
        try:
            namespace: dict[str, Any] = {"__name__": "tool"}
            exec(compile(code, "<tool>", "exec"), namespace)  # the repository's own reference tools
            value = namespace[entry](**call)
        except Exception as exc:
            return ExecutionResult(status="exception", error_type=type(exc).__name__, error_message=str(exc)[:500])
        try:
            value = normalize(value, TOOL)  # as the sandbox's harness does
        except ResultRefused as exc:  # a value, not an error the tool raised: as the supervisor records it
            return ExecutionResult(status="crashed", layer="result", error_type=exc.error_type,
                                   error_message=exc.message[:500])
        return ExecutionResult(status="ok", value=value)

    def close(self) -> None:
        from finevo.market import replay

        replay.uninstall()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-10", help="seeds, e.g. 1-10 or 3,7,42 (default 1-10)")
    parser.add_argument("--worlds", type=int, default=3, help="worlds per task (default 3)")
    parser.add_argument("--data", type=Path, default=snapshot_dir(), help="the run's snapshot (default: bundled)")
    parser.add_argument("--only", default=None, help="task ids, comma-separated")
    parser.add_argument("--in-process", action="store_true",
                        help="run the reference tools in this process on the replay shim (no sandbox)")
    args = parser.parse_args(argv)
    snapshot = load_snapshot(args.data)
    tasks = load_tasks(benchmarks_dir() / "tasks.jsonl")
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t.id in wanted]
    started = time.perf_counter()
    derived = {t.id: derive_probes(t, snapshot) for t in tasks}
    derive_s = time.perf_counter() - started
    expected = {t.id: expected_values(t, snapshot) for t in tasks}
    sandbox = _InProcess(args.data) if args.in_process else create_sandbox(args.data)
    limits = Limits(timeout_s=30.0)

    def run_tool(code: str, entry: str, call: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        if snapshot_dir is None:
            return sandbox.run(code, entry, call, limits)
        return sandbox.run(code, entry, call, limits, snapshot_dir=snapshot_dir)

    outcomes: dict[str, Outcome] = {}
    for task in tasks:
        code = reference_code(task)
        result = run_tool(code, task.intent.indicator, dict(task.intent.args))
        outcomes[task.id] = Outcome(task_id=task.id, value=result.value if result.ok else None, tool_code=code,
                                    stage="done")
    per_task: list[float] = []
    build: list[float] = []
    failures = 0
    try:
        for seed in _seeds(args.seeds):
            seed_started = time.perf_counter()
            # the gate draws a run's probes across the argument space from the run's seed too
            judged = {t.id: t.model_copy(update={"probes": probes_for(t, snapshot, seed, derived[t.id])})
                      for t in tasks}
            probe_expected = {t.id: probe_expected_values(t, snapshot) for t in judged.values()}
            with Worlds(snapshot, args.worlds, seed, list(judged.values())) as worlds:
                bad: list[str] = []
                for task in tasks:
                    t0 = time.perf_counter()
                    result = judge_task(judged[task.id], outcomes[task.id], expected[task.id], 0.0,
                                        Reruns(run_tool, probe_expected=probe_expected[task.id], worlds=worlds))
                    per_task.append(time.perf_counter() - t0 - result.timings.get("probes", 0.0))
                    if result.state != "pass":
                        bad.append(f"{task.id}: {result.reason}")
                build.append(worlds.build_s)
                parts = ", ".join(f"{k} {v:.2f} s" for k, v in worlds.timings.items())
                as_of = [worlds.as_of_date(r).isoformat() for kind, r in worlds.kinds() if kind is WorldKind.AS_OF]
            failures += len(bad)
            print(f"seed {seed}: as-of {', '.join(as_of) or '-'}: "
                  f"{len(tasks) - len(bad)}/{len(tasks)} reference tools pass "
                  f"({time.perf_counter() - seed_started:.1f} s; worlds {build[-1]:.2f} s: {parts})")
            for line in bad:
                print(f"  {line}")
    finally:
        sandbox.close()
    print(f"deriving the probes of {len(tasks)} task(s): {derive_s * 1000:.0f} ms "
          f"({sum(len(p) for p in derived.values())} derived probes, "
          f"{sum(len(t.probes) for t in tasks)} of them listed)")
    if per_task:
        print(f"judging in {args.worlds} hidden world(s) per task (world building included): median "
              f"{statistics.median(per_task) * 1000:.0f} ms, max {max(per_task) * 1000:.0f} ms; "
              f"world building per seed: median {statistics.median(build):.2f} s")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
