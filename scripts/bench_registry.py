#!/usr/bin/env python3
"""Throughput of concurrent tool registrations: N processes registering into ONE registry at once.

The workload is the concurrency test's (tests/finevo/registry/hammer.py): same name + same code,
same name + new code, and a name of each process's own, all at the same moment. Each backend runs
from an empty registry, the result is checked (unique gap-free versions, one code row per content,
nothing lost), and registrations per second are printed (wall time from the first process leaving
the start barrier to the last one finishing). PostgreSQL is a throw-away cluster of the system's
server binaries (durable settings: fsync on), unless --postgres-url names a server (its database
must be empty). SQLite is a WAL file in a temporary directory.

    python scripts/bench_registry.py [--procs 8] [--per-proc 60] [--runs 3] [--backend sqlite|postgres|both]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.finevo.registry.hammer import check, hammer
from tests.finevo.registry.pgcluster import PostgresCluster, find_bindir


def _report(backend: str, rates: list[float], procs: int, per_proc: int) -> None:
    runs = ", ".join(f"{r:.0f}" for r in rates)
    print(f"{backend:10s} {procs} processes x {per_proc} registrations: median {statistics.median(rates):.0f} "
          f"registrations/s (best {max(rates):.0f}; runs: {runs})")


def bench_sqlite(procs: int, per_proc: int, runs: int) -> list[float]:
    rates = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="finevo-bench-") as tmp:
            url = f"sqlite:///{Path(tmp) / 'registry.db'}"
            result = hammer(url, procs, per_proc)
            check(url, result, per_proc)
            rates.append(result.per_second)
    return rates


def bench_postgres(procs: int, per_proc: int, runs: int, url: str | None) -> list[float]:
    rates = []
    if url is not None:
        for _ in range(runs):
            from finevo.registry import Registry

            with Registry(url) as reg:
                reg.clear()
            result = hammer(url, procs, per_proc)
            check(url, result, per_proc)
            rates.append(result.per_second)
        return rates
    bindir, why = find_bindir()
    if bindir is None:
        raise SystemExit(f"bench_registry: {why} (or pass --postgres-url)")
    with PostgresCluster(bindir, durable=True) as cluster:
        for _ in range(runs):
            db_url = cluster.url(cluster.create_database())
            result = hammer(db_url, procs, per_proc)
            check(db_url, result, per_proc)
            rates.append(result.per_second)
    return rates


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--per-proc", type=int, default=60)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backend", choices=("sqlite", "postgres", "both"), default="both")
    parser.add_argument("--postgres-url", help="an existing server's empty database (default: a throw-away cluster)")
    args = parser.parse_args()
    if args.procs < 1 or args.per_proc < 3 or args.runs < 1:
        parser.error("--procs >= 1, --per-proc >= 3, --runs >= 1")
    if args.backend in ("sqlite", "both"):
        _report("sqlite", bench_sqlite(args.procs, args.per_proc, args.runs), args.procs, args.per_proc)
    if args.backend in ("postgres", "both"):
        _report("postgresql", bench_postgres(args.procs, args.per_proc, args.runs, args.postgres_url),
                args.procs, args.per_proc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
