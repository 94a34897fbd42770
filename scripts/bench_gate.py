"""Benchmark the gate: wall time of a full reference run (self-check included) and the per-task
overhead outside the LLM (planning, sandbox, judging, reporting), with the judging time per task.

    python scripts/bench_gate.py [--out DIR] [--runs N] [--jobs N] [--worlds K] [--worlds-seed S]

Uses the bundled suite and snapshot, the reference model, self-check, payloads, K hidden worlds
(default 3, as the gate), ``--jobs`` as the gate's (default: the cores available) and no network.
Target: a median of <= 10 s over 3 runs on 2 cores.

Besides the wall time it prints where the time goes, part by part: start-up (inputs, oracle, the
agent's session, the containment self-test), tasks (the agent solving, and judging it), judged calls
(the sandbox re-runs of every task's judged calls -- its own arguments, probes, hidden worlds --
world building included, shared over a sandbox per core with ``--jobs`` > 1), judging (comparing
the value and the probes), worlds (comparing in the hidden worlds), payloads, self-check and reports.
Each is that part's own busy time: with ``--jobs`` > 1 judging, worlds and payloads run beside the
tasks, so the parts add up to more than the wall time. The CPU used (user + sys, of the gate process
and of the sandbox processes) and the machine's load average are printed per run: on a shared
machine the wall time says little, the CPU time is what to compare.
"""

from __future__ import annotations

import argparse
import io
import os
import resource
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import runner.gate as gate_module
from finevo.paths import benchmarks_dir, snapshot_dir
from finevo.sandbox import backends
from runner.execution.schedule import available_cores
from runner.gate import run_gate
from runner.inputs.prepare import GateConfig
from runner.reports import write_all
from runner.reports.console import Console

TARGET_S = 10.0


class _Clock:
    """Start-up (until the gate's task loop starts) and report writing, timed around the gate's own calls."""

    def __init__(self) -> None:
        self.started = 0.0
        self.startup = 0.0
        self.reports = 0.0
        self._run_all = gate_module.Gate._run_all
        self._write_all = gate_module.write_all

    def install(self) -> None:
        clock = self

        def run_all(gate: Any, *args: Any, **kwargs: Any) -> Any:
            clock.startup = time.perf_counter() - clock.started
            return clock._run_all(gate, *args, **kwargs)

        def write(*args: Any, **kwargs: Any) -> Any:
            begun = time.perf_counter()
            try:
                return clock._write_all(*args, **kwargs)
            finally:
                clock.reports = time.perf_counter() - begun

        gate_module.Gate._run_all = run_all  # type: ignore[method-assign]
        gate_module.write_all = write


class _Executions:
    """Every tool execution the gate asks of its sandboxes (the agent's own runs, the judged calls,
    payloads, the self-check), with the CPU its child used: counted around the backends' one entry
    point, so the per-run cost of a sandbox child can be set against the run's total."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self._lock = threading.Lock()

    def install(self) -> None:
        executions = self
        # A warm sandbox hands a run in a world it cannot see to the one that can, through that one's
        # ``_execute``: only the outermost call of a thread is counted, or such a run counts twice.
        inside = threading.local()
        for backend in (backends.WarmSandbox, backends.SubprocessSandbox):
            def counted(sandbox: Any, *args: Any, _run: Any = backend._execute, **kwargs: Any) -> Any:
                if getattr(inside, "depth", 0):
                    return _run(sandbox, *args, **kwargs)
                inside.depth = 1
                try:
                    result = _run(sandbox, *args, **kwargs)
                finally:
                    inside.depth = 0
                with executions._lock:
                    executions.cpu.append(float((result.details or {}).get("cpu_s") or 0.0))
                return result

            backend._execute = counted  # type: ignore[method-assign]

    def take(self) -> list[float]:
        with self._lock:
            taken, self.cpu = self.cpu, []
        return taken


def split(doc: dict[str, Any], clock: _Clock, wall: float) -> dict[str, float]:
    """Seconds per part of one run (each part's own busy time)."""
    tasks = doc["tasks"]
    timing = lambda t, k: float(t["timings"].get(k, 0.0))  # noqa: E731
    return {
        "start-up": clock.startup,
        "tasks": sum(float(t["duration_s"]) for t in tasks) + sum(float(s["duration_s"])
                                                                  for s in doc["security"]["tasks"]),
        "judged calls": sum(timing(t, "calls") for t in tasks),
        "judging": sum(timing(t, "judge") + timing(t, "probes") for t in tasks),
        "worlds": sum(timing(t, "worlds") for t in tasks),
        "payloads": sum(float(p["duration_s"]) for p in doc["payloads"]),
        "self-check": float((doc.get("selfcheck") or {}).get("duration_s") or 0.0),
        "reports": clock.reports,
        "wall": wall,
    }


def _cpu() -> dict[str, float]:
    """CPU seconds used so far by this process and by the children it reaped (every sandbox
    worker and its forks, once the run has closed them)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"gate user": own.ru_utime, "gate sys": own.ru_stime,
            "sandbox user": children.ru_utime, "sandbox sys": children.ru_stime}


def _load() -> str:
    """The machine's load averages (1, 5, 15 minutes): the machine may be shared."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _optional(path: Path) -> Path | None:
    return path if path.exists() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=3, help="runs; the median is reported (default 3)")
    parser.add_argument("--jobs", type=int, default=None,
                        help="cores the gate may use (default: the cores available, as the gate)")
    parser.add_argument("--worlds", type=int, default=3, help="hidden worlds per task (default 3)")
    parser.add_argument("--worlds-seed", type=int, default=1, help="seed of the hidden worlds (default 1)")
    args = parser.parse_args()
    bench = benchmarks_dir()
    out = args.out or Path(tempfile.mkdtemp(prefix="finevo-bench-"))
    jobs = args.jobs or available_cores()
    walls = []
    splits = []
    cpus: list[dict[str, float]] = []
    clock = _Clock()
    clock.install()
    executions = _Executions()
    executions.install()
    runs_cpu: list[list[float]] = []
    for i in range(args.runs):
        config = GateConfig(llm="reference", tasks_path=bench / "tasks.jsonl",
                            security_path=_optional(bench / "security_tasks.jsonl"),
                            payloads_path=_optional(bench / "security_payloads.jsonl"),
                            baseline_path=_optional(bench / "baseline.json"), data_dir=snapshot_dir(),
                            out_dir=out, run_id=f"bench-{i}", worlds=args.worlds, worlds_seed=args.worlds_seed,
                            jobs=jobs)
        used = _cpu()
        start = clock.started = time.perf_counter()
        result = run_gate(config, console=Console(io.StringIO(), colour=False))
        walls.append(time.perf_counter() - start)
        doc = result.doc
        splits.append(split(doc, clock, walls[-1]))
        cpu = {k: v - used[k] for k, v in _cpu().items()}
        cpus.append(cpu)
        runs_cpu.append(executions.take())
        print(f"run {i + 1}/{args.runs}: {walls[-1]:.2f} s wall, CPU {sum(cpu.values()):.2f} s "
              f"(gate {cpu['gate user'] + cpu['gate sys']:.2f} s, sandbox processes "
              f"{cpu['sandbox user'] + cpu['sandbox sys']:.2f} s), load average {_load()}", flush=True)
    tasks = doc["tasks"]
    per_task = [t["duration_s"] for t in tasks]
    llm = [t["llm"]["latency_s"] for t in tasks]
    overhead = [d - lat for d, lat in zip(per_task, llm, strict=True)]
    stage_totals: dict[str, list[float]] = {}
    for t in tasks:
        for stage, secs in t["timings"].items():
            stage_totals.setdefault(stage, []).append(secs)
    print(f"verdict: {doc['verdict']['status']} (exit {doc['verdict']['exit_code']}), "
          f"self-check: {(doc['selfcheck'] or {}).get('reason')}")
    median = statistics.median(walls)
    print(f"full reference run wall time: median {median:.2f} s over {len(walls)} run(s) "
          f"(target <= {TARGET_S:g} s on 2 cores: {'met' if median <= TARGET_S else 'NOT met'}) with --jobs {jobs}, "
          f"{args.worlds} hidden world(s); tasks {len(tasks)}, security {doc['security']['total']}, "
          f"payloads {doc['security']['payloads_total']}")
    print("CPU per run (median; user + sys of the gate process and of the sandbox processes it reaped): "
          + ", ".join(f"{k} {statistics.median(c[k] for c in cpus):.2f} s" for k in cpus[0])
          + f"; total {statistics.median(sum(c.values()) for c in cpus):.2f} s")
    counts = [len(c) for c in runs_cpu]
    child = [x for c in runs_cpu for x in c]
    if child:
        print(f"sandbox executions per run: median {statistics.median(counts):.0f}; CPU of one child "
              f"(user + sys, as reaped): median {statistics.median(child) * 1000:.1f} ms, mean "
              f"{statistics.mean(child) * 1000:.1f} ms, total {sum(child) / len(runs_cpu):.2f} s per run")
    print("time per part (median over the runs; each part's own busy time -- with --jobs > 1 judging, "
          "worlds and payloads overlap the tasks):")
    for part in splits[0]:
        values = [s[part] for s in splits]
        print(f"  {part:<11} {statistics.median(values):7.2f} s")
    print(f"benchmark task time: median {statistics.median(per_task) * 1000:.0f} ms, "
          f"max {max(per_task) * 1000:.0f} ms")
    print(f"per-task overhead outside the LLM: median {statistics.median(overhead) * 1000:.0f} ms, "
          f"mean {statistics.mean(overhead) * 1000:.0f} ms (LLM latency median {statistics.median(llm) * 1000:.1f} ms)")
    for stage, values in sorted(stage_totals.items()):
        print(f"  {stage:<14} median {statistics.median(values) * 1000:7.1f} ms")
    # The gate records its own judging time per task next to the agent's stages (timings.judge:
    # the value against the oracle's; timings.probes: re-running the tool on the probes and judging them).
    judge = [float(t["timings"].get("judge", 0.0)) for t in tasks]
    probes = [float(t["timings"]["probes"]) for t in tasks if "probes" in t["timings"]]
    print(f"judging per task: median {statistics.median(judge) * 1000:.2f} ms, max {max(judge) * 1000:.2f} ms, "
          f"total {sum(judge) * 1000:.1f} ms"
          + (f"; probes ({len(probes)} task(s)): median {statistics.median(probes) * 1000:.0f} ms, "
             f"total {sum(probes) * 1000:.0f} ms" if probes else ""))
    worlds = [float(t["timings"]["worlds"]) for t in tasks if "worlds" in t["timings"]]
    if worlds:
        checks = sum(w["checks"] for t in tasks for w in t["worlds"])
        print(f"judging in {args.worlds} hidden world(s) per task (world building included): median "
              f"{statistics.median(worlds) * 1000:.0f} ms, max {max(worlds) * 1000:.0f} ms, total "
              f"{sum(worlds):.2f} s for {checks} re-runs")
    started = time.perf_counter()
    write_all(doc, out / "bench-report-timing")
    print(f"reporting (results.json, junit.xml, summary.md, tools/): "
          f"{(time.perf_counter() - started) * 1000:.0f} ms per run")
    print(f"reports in {out}")
    return 0 if doc["verdict"]["status"] == "passed" else 1


if __name__ == "__main__":
    raise SystemExit(main())
