"""Figures for repeats and the statistical verdict; prints, never asserts.

1. Overhead of repeats outside the LLM: the reference run (the gold tools answer, no model) with
   ``--repeats 1`` and ``--repeats K``; the target is K=5 <= 5x the K=1 wall time.
2. False regression rate of the statistical verdict: simulated pull requests that change nothing.
   Every task keeps its true pass probability; each pull request draws a fresh baseline measurement
   (``--baseline-trials`` per task) and ``--repeats`` trials now, and is judged by
   :func:`runner.verdict.trials.classify` (the gate's own rule). Compared with the old single-sample rule
   (one trial, a baseline task that fails is a regression). Target: <= 5% per task at alpha 0.05.
3. The workflow's wall-time model for N tasks x K repeats over S shards, fitted from (1).

    python scripts/bench_repeats.py [--repeats 5] [--prs 200] [--only ID,...] [--skip-runs]
"""

from __future__ import annotations

import argparse
import math
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from runner.verdict.trials import TaskStatus, classify, exact_test, significant

ROOT = Path(__file__).resolve().parents[1]
#: True pass probabilities of a simulated suite of 20 tasks: 12 deterministic, 8 flaky.
SUITE = [1.0] * 12 + [0.95, 0.9, 0.9, 0.8, 0.7, 0.7, 0.6, 0.5]


def _gate_seconds(repeats: int, only: str | None, out: Path) -> tuple[float, int]:
    args = [sys.executable, "-m", "runner.cli", "run", "--llm", "reference", "--no-payloads", "--security-tasks",
            "none", "--no-self-check", "--baseline", "none", "--out", str(out), "--run-id", f"k{repeats}",
            "--repeats", str(repeats), "--quiet"]
    if only:
        args += ["--only", only]
    t0 = time.monotonic()
    proc = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, check=False)
    elapsed = time.monotonic() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"reference run with --repeats {repeats} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    n = sum(1 for line in proc.stdout.splitlines() if line.strip().startswith(("fetch", "calculation", "composite")))
    return elapsed, n


def _rejected(tests: dict[str, tuple[float, float]], alpha: float, correction: str) -> set[str]:
    if correction == "none":
        return {tid for tid, (p, _) in tests.items() if p < alpha}
    return significant(tests, alpha)[0]


def _simulate(prs: int, repeats: int, baseline_trials: int, alpha: float, seed: int, correction: str) -> None:
    rng = random.Random(seed)
    per_task_false = 0
    per_pr_false = 0
    old_task_false = 0
    old_pr_false = 0
    flaky_reports = 0
    checks = 0
    for _ in range(prs):
        pr_false = old_false = False
        draws = {}
        for i, p in enumerate(SUITE):
            base = sum(rng.random() < p for _ in range(baseline_trials))
            now = sum(rng.random() < p for _ in range(repeats))
            draws[f"t{i}"] = (now, base, p)
        tests = {tid: t for tid, (now, base, _) in draws.items()
                 if (t := exact_test(now, repeats, (base, baseline_trials))) is not None}
        rejected = _rejected(tests, alpha, correction)
        for tid, (now, base, p) in draws.items():
            status, _ = classify(now, repeats, (base, baseline_trials), tid in rejected)
            checks += 1
            if status == TaskStatus.REGRESSION:
                per_task_false += 1
                pr_false = True
            flaky_reports += status == TaskStatus.FLAKY
            # the old gate: one trial now against a one-trial baseline (a listed task that fails)
            if rng.random() < p and not rng.random() < p:
                old_task_false += 1
                old_false = True
        per_pr_false += pr_false
        old_pr_false += old_false
    print(f"false regressions over {prs} simulated pull requests that change nothing "
          f"({len(SUITE)} tasks, {sum(p < 1 for p in SUITE)} flaky; baseline {baseline_trials} trials, "
          f"{repeats} repeats now, alpha {alpha:g}):")
    print(f"  statistical verdict (--correction {correction}): {per_task_false / checks:.2%} of task checks, "
          f"{per_pr_false / prs:.1%} of pull requests fail on noise; "
          f"{flaky_reports / prs:.1f} task(s) per pull request reported flaky instead")
    print(f"  old single-sample rule: {old_task_false / checks:.2%} of task checks, "
          f"{old_pr_false / prs:.1%} of pull requests fail on noise")


def _power(prs: int, repeats: int, baseline_trials: int, alpha: float, seed: int, correction: str) -> None:
    """How often a real drop of one task (the rest of the suite unchanged) is caught."""
    rng = random.Random(seed + 1)
    for before, after in ((1.0, 0.0), (0.9, 0.2), (0.9, 0.5), (0.7, 0.0)):
        caught = 0
        for _ in range(prs):
            tests, counts = {}, {}
            for i, p in enumerate([before, *SUITE[1:]]):
                now_p = after if i == 0 else p
                base = sum(rng.random() < p for _ in range(baseline_trials))
                now = sum(rng.random() < now_p for _ in range(repeats))
                counts[f"t{i}"] = (now, base)
                test = exact_test(now, repeats, (base, baseline_trials))
                if test is not None:
                    tests[f"t{i}"] = test
            rejected = _rejected(tests, alpha, correction)
            now, base = counts["t0"]
            status, _ = classify(now, repeats, (base, baseline_trials), "t0" in rejected)
            caught += status == TaskStatus.REGRESSION
        print(f"  power (--correction {correction}): a task dropping from {before:.0%} to {after:.0%} "
              f"is caught in {caught / prs:.1%} of pull requests")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prs", type=int, default=200)
    parser.add_argument("--baseline-trials", type=int, default=10)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--only", help="task ids for the reference runs (default: the whole suite)")
    parser.add_argument("--skip-runs", action="store_true", help="only the simulation")
    args = parser.parse_args()

    if not args.skip_runs:
        with tempfile.TemporaryDirectory() as tmp:
            t1, _ = _gate_seconds(1, args.only, Path(tmp))
            tk, _ = _gate_seconds(args.repeats, args.only, Path(tmp))
        n = len(args.only.split(",")) if args.only else 20
        per_trial = max(0.0, (tk - t1) / ((args.repeats - 1) * n)) if args.repeats > 1 else t1 / n
        fixed = max(0.0, t1 - n * per_trial)
        print(f"reference run, {n} task(s): --repeats 1 {t1:.1f}s, --repeats {args.repeats} {tk:.1f}s "
              f"= {tk / t1:.2f}x (target <= {args.repeats}x)")
        print(f"  fitted: {fixed:.1f}s fixed per process (start, snapshot, oracle) + {per_trial:.2f}s per task trial")
        print("wall-time model of verify.yml: T(N, K, S) = J + F + ceil(N / S) * K * (t_llm + t_trial) + M")
        print(f"  F = {fixed:.1f}s, t_trial = {per_trial:.2f}s (measured above); J = 120s per job (runner, cached "
              "image build), M = 60s (merge job), t_llm = 20s per task trial with a live model (assumed)")
        for n_tasks, k, s in ((20, 1, 1), (20, 5, 1), (20, 5, 4), (200, 5, 4), (200, 10, 8)):
            total = 120 + fixed + math.ceil(n_tasks / s) * k * (20 + per_trial) + 60
            print(f"  N={n_tasks:<4} K={k:<3} S={s:<3} -> {total / 60:6.1f} min")
    for correction in ("holm", "none"):
        _simulate(args.prs, args.repeats, args.baseline_trials, args.alpha, args.seed, correction)
        _power(args.prs, args.repeats, args.baseline_trials, args.alpha, args.seed, correction)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
