#!/usr/bin/env python3
"""Time the market-data layer: open + verify the snapshot, parse every frame, install the shim.

Each run happens in a fresh interpreter (imports timed separately, nothing cached between
runs). Prints every run, then the best and the median.

    python scripts/bench_snapshot.py [--runs 5] [--data DIR]
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
import pandas
from finevo.market.snapshot import load_snapshot
from finevo.market import replay
t1 = time.perf_counter()
snap = load_snapshot(sys.argv[1] or None)
t2 = time.perf_counter()
for sym in snap.symbols():
    snap.history(sym); snap.history_unadjusted(sym); snap.info(sym); snap.fast_info(sym)
    snap.income_stmt(sym, "yearly"); snap.income_stmt(sym, "quarterly")
t3 = time.perf_counter()
replay.install(snap)
t4 = time.perf_counter()
import yfinance as yf
yf.Ticker("AAPL").history(period="1y")
t5 = time.perf_counter()
size = sum((snap.path / rel).stat().st_size for rel in snap.manifest["files"])
print(json.dumps({"imports": t1 - t0, "open": t2 - t1, "parse": t3 - t2, "install": t4 - t3,
                  "first_call": t5 - t4, "bytes": size, "files": len(snap.manifest["files"])}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", default="", help="snapshot directory (default: the bundled one)")
    args = parser.parse_args(argv)
    totals: list[float] = []
    for i in range(1, args.runs + 1):
        proc = subprocess.run([sys.executable, "-c", _CHILD, args.data], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            print(f"run {i} failed:\n{proc.stderr.strip()}", file=sys.stderr)
            return 3
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        total = r["open"] + r["parse"] + r["install"]
        totals.append(total)
        print(f"run {i}: open+verify {r['open']:.3f} s + parse all {r['parse']:.3f} s + install {r['install']:.3f} s"
              f" = {total:.3f} s; first shim call {r['first_call']:.3f} s   (imports {r['imports']:.3f} s, "
              f"{r['files']} files, {r['bytes'] / 1024:.0f} KiB)")
    print(f"best {min(totals):.3f} s, median {statistics.median(totals):.3f} s over {len(totals)} fresh processes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
