"""The reference self-check in many market worlds: which seeds and as-of dates it passes on.

    python scripts/reference_worlds.py [--seeds 1-12] [--as-of 2024-03-28,2024-06-28,...] [--no-recorded]

Each world is a synthetic snapshot (``finevo.market.synthetic.build`` with another seed, or the
bundled seed truncated at an earlier as-of date), plus one snapshot written the way
``finevo-verify data refresh`` records a live one (``--no-recorded`` skips it). In each, the gate
runs the reference model over the 20 benchmark tasks with its self-check (reference 100 %,
null 0 %), and the script prints one line per world: passed or not, the failing tasks and why,
and the time it took. Exit code 0 when every world passes, 1 otherwise. No network.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from finevo.market import synthetic
from finevo.paths import benchmarks_dir
from runner.gate import GateConfig, run_gate
from runner.reports.console import Console

DEFAULT_AS_OF = "2024-03-28,2024-06-28,2024-09-30,2024-11-15"


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def run_world(data_dir: Path, out_dir: Path, run_id: str) -> tuple[bool, str]:
    """The reference run with self-check on one snapshot: (passed, what went wrong)."""
    config = GateConfig(llm="reference", tasks_path=benchmarks_dir() / "tasks.jsonl", security_path=None,
                        payloads_path=None, baseline_path=None, data_dir=data_dir, out_dir=out_dir,
                        run_id=run_id, run_payloads=False, task_timeout_s=120.0)
    result = run_gate(config, console=Console(io.StringIO(), colour=False))
    doc = result.doc
    check = doc.get("selfcheck") or {}
    if result.exit_code == 0 and check.get("ok"):
        return True, ""
    reasons = (check.get("reference") or {}).get("reasons") or {}
    detail = "; ".join(f"{task}: {why[:240]}" for task, why in reasons.items())
    return False, f"{check.get('reason') or doc['verdict']['reasons']}" + (f" -- {detail}" if detail else "")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-12", help="seeds, e.g. 1-12 or 3,5,8 (default 1-12)")
    parser.add_argument("--as-of", default=DEFAULT_AS_OF, help=f"earlier as-of dates (default {DEFAULT_AS_OF})")
    parser.add_argument("--no-recorded", action="store_true", help="skip the recorded-format world")
    args = parser.parse_args(argv)
    worlds: list[tuple[str, int, date | None, bool]] = [("bundled seed", synthetic.SEED, None, False)]
    worlds += [(f"seed {s}", s, None, False) for s in _seeds(args.seeds)]
    worlds += [(f"as of {d}", synthetic.SEED, date.fromisoformat(d), False)
               for d in args.as_of.split(",") if d.strip()]
    if not args.no_recorded:
        worlds.append(("recorded format (seed 5)", 5, None, True))
    failed = 0
    with tempfile.TemporaryDirectory(prefix="finevo-worlds-") as tmp:
        for i, (label, seed, as_of, recorded) in enumerate(worlds):
            data = Path(tmp) / f"world-{i}"
            started = time.perf_counter()
            if recorded:
                synthetic.build_recorded(data, seed)
            else:
                synthetic.build(data, seed=seed, as_of=as_of)
            ok, why = run_world(data, Path(tmp) / "out", f"world-{i}")
            failed += not ok
            print(f"{label:<28} {'pass' if ok else 'FAIL'}  {time.perf_counter() - started:5.1f} s"
                  + (f"  {why}" if why else ""), flush=True)
    print(f"{len(worlds) - failed}/{len(worlds)} worlds: reference self-check passed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
