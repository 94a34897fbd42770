"""Benchmark the gate: wall time of a full reference run (self-check included) and the per-task
overhead outside the LLM (planning, sandbox, judging, reporting), with the judging time per task.

    python scripts/bench_gate.py [--out DIR] [--runs N] [--worlds K] [--worlds-seed S]

Uses the bundled suite and snapshot, the reference model, self-check, payloads, K hidden worlds
(default 3, as the gate) and no network. Target: <= 15 s on 2 cores.
"""

from __future__ import annotations

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

from finevo.paths import benchmarks_dir, snapshot_dir
from runner.gate import run_gate
from runner.inputs.prepare import GateConfig
from runner.reports import write_all
from runner.reports.console import Console


def _optional(path: Path) -> Path | None:
    return path if path.exists() else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--worlds", type=int, default=3, help="hidden worlds per task (default 3)")
    parser.add_argument("--worlds-seed", type=int, default=1, help="seed of the hidden worlds (default 1)")
    args = parser.parse_args()
    bench = benchmarks_dir()
    out = args.out or Path(tempfile.mkdtemp(prefix="finevo-bench-"))
    walls = []
    for i in range(args.runs):
        config = GateConfig(llm="reference", tasks_path=bench / "tasks.jsonl",
                            security_path=_optional(bench / "security_tasks.jsonl"),
                            payloads_path=_optional(bench / "security_payloads.jsonl"),
                            baseline_path=_optional(bench / "baseline.json"), data_dir=snapshot_dir(),
                            out_dir=out, run_id=f"bench-{i}", worlds=args.worlds, worlds_seed=args.worlds_seed)
        start = time.perf_counter()
        result = run_gate(config, console=Console(io.StringIO(), colour=False))
        walls.append(time.perf_counter() - start)
        doc = result.doc
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
    print(f"full reference run wall time: median {statistics.median(walls):.2f} s over {len(walls)} run(s) "
          f"(target <= 15 s on 2 cores) with {args.worlds} hidden world(s); tasks {len(tasks)}, "
          f"security {doc['security']['total']}, "
          f"payloads {doc['security']['payloads_total']}")
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
