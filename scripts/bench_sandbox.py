"""Per-execution overhead of the sandbox backends, side by side, in one run.

    python scripts/bench_sandbox.py [--runs N] [--cold-runs N] [--data DIR|none]

Measures, for a trivial tool (``def f(x): return x + 1``):

* cold   -- a fresh ``python -c "import pandas, numpy"`` subprocess (what every execution would
            cost without warm workers),
* subprocess -- the subprocess backend (cold child + full confinement),
* warm   -- the warm backend (fork of a preloaded worker + full confinement),

Both sandboxes load the bundled market snapshot and the yfinance replay shim by default, as the
gate's do (``--data none`` measures them without it), so the worker RSS is the real one. Printed:
median and p90 wall-clock milliseconds, the warm speed-up over cold, and the resident
memory of a warm worker, with the targets (warm median <= 15 ms, >= 20x faster than cold,
worker RSS <= 200 MB). Exit 0 when every target is met, 1 otherwise.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

from finevo.paths import snapshot_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.backends import WarmSandbox
from finevo.sandbox.preload import BLAS_ENV

TRIVIAL = "def f(x: int) -> int:\n    return x + 1\n"
TARGET_WARM_MS = 15.0
TARGET_SPEEDUP = 20.0
TARGET_RSS_MB = 200.0


def _time(call: Callable[[], None], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000.0)
    return samples


def _p90(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="warm executions (default 50)")
    parser.add_argument("--cold-runs", type=int, default=10, help="cold / subprocess executions (default 10)")
    parser.add_argument("--data", default=str(snapshot_dir()),
                        help="market snapshot for the sandboxes, or 'none' (default: the bundled snapshot)")
    args = parser.parse_args(argv)
    data = None if args.data.strip().lower() == "none" else args.data
    limits = Limits(timeout_s=60.0)

    def cold() -> None:
        subprocess.run([sys.executable, "-c", "import numpy, pandas"], check=True, env=dict(BLAS_ENV))

    rows: list[tuple[str, list[float]]] = [("cold python -c (pandas+numpy)", _time(cold, args.cold_runs))]
    with create_sandbox(data, backend="subprocess", policy=True) as sub:
        def run_sub() -> None:
            result = sub.run(TRIVIAL, "f", {"x": 1}, limits)
            assert result.ok, result
        rows.append(("subprocess backend", _time(run_sub, args.cold_runs)))
    with create_sandbox(data, backend="warm", policy=True) as warm:
        assert isinstance(warm, WarmSandbox)

        def run_warm() -> None:
            result = warm.run(TRIVIAL, "f", {"x": 1}, limits)
            assert result.ok, result
        run_warm()  # the first child is forked while the worker starts
        rows.append(("warm backend", _time(run_warm, args.runs)))
        rss_mb = warm.worker_rss_kb() / 1024.0
        layers = warm.layers()

    print(f"snapshot: {data or 'none (no market data, no replay shim)'}")
    print(f"{'path':32} {'runs':>5} {'median ms':>10} {'p90 ms':>9}")
    for name, samples in rows:
        print(f"{name:32} {len(samples):5d} {statistics.median(samples):10.1f} {_p90(samples):9.1f}")
    cold_median = statistics.median(rows[0][1])
    warm_median = statistics.median(rows[-1][1])
    speedup = cold_median / warm_median if warm_median else float("inf")
    print(f"warm speed-up over cold: {speedup:.1f}x   warm worker RSS: {rss_mb:.1f} MB")
    print("active layers: " + ", ".join(k for k, v in layers.items() if v)
          + ("   inactive: " + ", ".join(k for k, v in layers.items() if not v) if not all(layers.values()) else ""))
    checks = [(f"warm median <= {TARGET_WARM_MS:g} ms", warm_median <= TARGET_WARM_MS),
              (f"warm >= {TARGET_SPEEDUP:g}x faster than cold", speedup >= TARGET_SPEEDUP),
              (f"worker RSS <= {TARGET_RSS_MB:g} MB", rss_mb <= TARGET_RSS_MB)]
    for label, met in checks:
        print(f"  [{'met' if met else 'MISSED'}] {label}")
    return 0 if all(met for _, met in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
