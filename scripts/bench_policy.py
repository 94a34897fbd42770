#!/usr/bin/env python3
"""Static policy check time per tool: median / p90 / max over the benign tools and the payload corpus.

Each source is checked ``--repeat`` times after one warm-up call; the figure per tool is its
median. With ``--baseline REV`` the same measurement also runs on the policy package of that git
revision (extracted to a temporary directory and run in its own interpreter), for a before/after.

    python scripts/bench_policy.py [--repeat 20] [--baseline 72a9076]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

_REPO = Path(__file__).resolve().parent.parent

#: Runs in a child interpreter whose ``sys.path`` starts at the policy package to time.
_CHILD = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
from finevo.policy import check
sources = json.load(sys.stdin)
repeat = int(sys.argv[2])
out = {}
for corpus, items in sources.items():
    per_tool = []
    for code in items:
        check(code)
        runs = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            check(code)
            runs.append(time.perf_counter() - t0)
        per_tool.append(statistics.median(runs))
    out[corpus] = per_tool
print(json.dumps(out))
"""


def _sources() -> dict[str, list[str]]:
    sys.path.insert(0, str(_REPO))
    from runner.inputs.corpus import load_benign, load_payloads

    sample = {"canary_file": "/tmp/canary/secret.txt", "canary_dir": "/tmp/canary", "host": "127.0.0.1",
              "port": 40123, "secret_name": "FINEVO_FAKE_KEY"}
    return {"benign": [t.code for t in load_benign()],
            "payloads": [p.materialise(**sample) for p in load_payloads()]}  # type: ignore[arg-type]


def _measure(root: Path, sources: dict[str, list[str]], repeat: int) -> dict[str, list[float]]:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(root), str(repeat)], input=json.dumps(sources),
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"measuring the policy under {root} failed:\n{proc.stderr.strip()}")
    result: dict[str, list[float]] = json.loads(proc.stdout.strip().splitlines()[-1])
    return result


def _extract(rev: str, into: Path) -> Path:
    """The policy package of ``rev`` under ``into`` (as ``finevo/policy``, with an empty ``finevo``)."""
    archive = subprocess.run(["git", "-C", str(_REPO), "archive", "--format=tar", rev, "finevo/policy"],
                             capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {rev} failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    (into / "finevo" / "__init__.py").write_text("")
    return into


def _line(label: str, figures: dict[str, list[float]]) -> str:
    parts = []
    for corpus, times in figures.items():
        ms = sorted(t * 1000 for t in times)
        p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
        parts.append(f"{corpus} ({len(ms)}): median {statistics.median(ms):.2f} ms, p90 {p90:.2f} ms, "
                     f"max {ms[-1]:.2f} ms")
    return f"{label:<10} " + " | ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20, help="timed checks per source (median kept)")
    parser.add_argument("--baseline", metavar="REV", help="also time the policy of this git revision")
    args = parser.parse_args(argv)
    sources = _sources()
    current = _measure(_REPO, sources, args.repeat)
    print(_line("current", current))
    if args.baseline:
        with tempfile.TemporaryDirectory() as tmp:
            before = _measure(_extract(args.baseline, Path(tmp)), sources, args.repeat)
        print(_line(args.baseline[:10], before))
        for corpus in current:
            ratio = statistics.median(current[corpus]) / statistics.median(before[corpus])
            print(f"{corpus}: current / {args.baseline[:10]} median = {ratio:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
