"""Start-up time of the two command lines: ``--help``, ``--version`` and usage errors, each a fresh process.

    python scripts/bench_cli.py [--runs N]

Prints, per command, the median and the fastest of N runs (wall clock, from process start to
exit) against the 0.1 s target. The commands run through the interpreter this script runs under
(``python -m runner.cli`` / ``-m finevo.cli``), so the figure is the package's own import cost plus
interpreter start-up, whatever PATH holds.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

TARGET_S = 0.1

#: (label, arguments after the interpreter, expected exit code)
COMMANDS: tuple[tuple[str, list[str], int], ...] = (
    ("finevo-verify --help", ["-m", "runner.cli", "--help"], 0),
    ("finevo-verify --version", ["-m", "runner.cli", "--version"], 0),
    ("finevo-verify --jobs 0 (bad value)", ["-m", "runner.cli", "--jobs", "0"], 2),
    ("finevo-verify --onl x (usage error)", ["-m", "runner.cli", "--onl", "x"], 2),
    ("finevo-verify frob (unknown verb)", ["-m", "runner.cli", "frob"], 2),
    ("finevo-verify --shard 3/2 (bad value)", ["-m", "runner.cli", "--shard", "3/2"], 2),
    ("finevo --help", ["-m", "finevo.cli", "--help"], 0),
    ("finevo solve (usage error)", ["-m", "finevo.cli", "solve"], 2),
)


def time_once(args: list[str], expected: int) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != expected:
        raise SystemExit(f"bench_cli: {' '.join(args)} exited {proc.returncode}, expected {expected}: "
                         f"{proc.stderr.decode(errors='replace').strip()[:300]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None, allow_abbrev=False)
    parser.add_argument("--runs", type=int, default=7, help="runs per command (default 7)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    print(f"python {sys.version.split()[0]} at {sys.executable}; {args.runs} run(s) each; target {TARGET_S:.2f} s")
    worst = 0.0
    for label, argv, expected in COMMANDS:
        time_once(argv, expected)  # warm the file cache; not counted
        samples = [time_once(argv, expected) for _ in range(args.runs)]
        median = statistics.median(samples)
        worst = max(worst, median)
        mark = "ok" if median <= TARGET_S else "OVER"
        print(f"{label:<40} median {median:.3f} s  min {min(samples):.3f} s  [{mark}]")
    print(f"slowest median: {worst:.3f} s ({'within' if worst <= TARGET_S else 'over'} the {TARGET_S:.2f} s target)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
