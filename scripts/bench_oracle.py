#!/usr/bin/env python3
"""Time to load the market snapshot and compute all 20 oracle values (target: under 2 s).

Each run happens in a fresh interpreter (nothing cached between runs; imports are timed
separately). Prints every run, then the best and the median.

    python scripts/bench_oracle.py [--runs 5] [--data DIR] [--tasks FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from finevo.market.snapshot import load_snapshot
from runner.inputs.tasks import load_tasks
from runner.judging.oracle import expected_values
t1 = time.perf_counter()
data, tasks_file = sys.argv[1] or None, sys.argv[2]
snapshot = load_snapshot(data)
tasks = load_tasks(tasks_file)
t2 = time.perf_counter()
count = 0
for task in tasks:
    count += len(expected_values(task, snapshot))
t3 = time.perf_counter()
print(json.dumps({"imports": t1 - t0, "load": t2 - t1, "oracle": t3 - t2, "tasks": len(tasks), "values": count}))
"""


def main(argv: list[str] | None = None) -> int:
    from finevo.paths import benchmarks_dir

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", default="", help="snapshot directory (default: the bundled one)")
    parser.add_argument("--tasks", default=str(benchmarks_dir() / "tasks.jsonl"))
    parser.add_argument("--target", type=float, default=2.0, help="seconds allowed for load + oracle")
    args = parser.parse_args(argv)
    totals: list[float] = []
    for i in range(1, args.runs + 1):
        proc = subprocess.run([sys.executable, "-c", _CHILD, args.data, args.tasks],
                              capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"run {i} failed:\n{proc.stderr.strip()}", file=sys.stderr)
            return 1
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        total = r["load"] + r["oracle"]
        totals.append(total)
        print(f"run {i}: load snapshot {r['load']:.3f} s + {r['tasks']} tasks / {r['values']} oracle values "
              f"{r['oracle']:.3f} s = {total:.3f} s   (imports {r['imports']:.3f} s, not counted)")
    best, median = min(totals), statistics.median(totals)
    verdict = "within" if median < args.target else "OVER"
    print(f"best {best:.3f} s, median {median:.3f} s over {len(totals)} fresh processes "
          f"({verdict} the {args.target:g} s target)")
    return 0 if median < args.target else 1


if __name__ == "__main__":
    sys.exit(main())
