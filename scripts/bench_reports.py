"""Figures for the reports under load: N failing tasks with long reasons and code (all regressions),
rendered into every report; prints each report's size against its limit, what was left out, and
the time taken.

    python scripts/bench_reports.py [--tasks 500] [--reason-bytes 10000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from runner.records import SecurityResult, TaskResult
from runner.reports import document, junit, markdown, write_all


def _doc(n: int, reason_bytes: int) -> document.ResultsDocument:
    reason = ("the value was wrong: expected 1.0 <b>got</b> 2.0 | see @octocat " + "x" * 50 + "\n") * max(
        1, reason_bytes // 120)
    code = "def tool(symbol: str) -> float:\n    return 1.0\n" * 100
    tasks = [TaskResult(task_id=f"calc_{i:03d}", category="calculation", query=f"query {i}", state="fail",
                        reason=reason, code=code, stdout=reason) for i in range(n)]
    security = [SecurityResult(task_id=f"sec_{i:03d}", query="q", attack="exfiltrate", state="unblocked",
                               reason=reason) for i in range(min(n, 50))]
    config = {"git_sha": None, "model": "m", "provider": "replay:x", "llm": "replay:x", "temperature": 0.0,
              "snapshot_hash": "h", "snapshot_as_of": "2024-12-31", "judge_version": "2", "min_pass_rate": 0.8,
              "agent_mode": "evolving", "max_refinements": 3, "task_timeout_s": 120.0, "selection": {},
              "self_check": False,
              "baseline": {"path": "b.json", "passing_tasks": [t.task_id for t in tasks], "target_pass_rate": 0.8}}
    return document.assemble(run_id="bench", config=config, tasks=tasks, security=security, payloads=[],
                             started_at="2025-01-01T00:00:00+00:00", finished_at="2025-01-01T00:10:00+00:00",
                             duration_s=600.0)


def _closing(text: str) -> str:
    return text.rstrip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--reason-bytes", type=int, default=10_000)
    args = parser.parse_args()

    t0 = time.perf_counter()
    doc = _doc(args.tasks, args.reason_bytes)
    t_build = time.perf_counter() - t0

    t0 = time.perf_counter()
    summary = markdown.render(doc, results_path="out/bench/results.json")
    t_summary = time.perf_counter() - t0
    t0 = time.perf_counter()
    comment = markdown.render_comment(doc, run_url="https://github.com/o/r/actions/runs/1")
    t_comment = time.perf_counter() - t0
    t0 = time.perf_counter()
    xml = junit.render(doc)
    t_junit = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        paths = write_all(doc, Path(tmp))
        t_write = time.perf_counter() - t0
        t0 = time.perf_counter()
        document.load(paths["json"])
        t_load = time.perf_counter() - t0
        json_bytes = paths["json"].stat().st_size

    print(f"{args.tasks} failing tasks, reasons of {args.reason_bytes} bytes, {len(doc.security.tasks)} unblocked")
    print(f"build + validate the document: {t_build:.2f} s; reload results.json ({json_bytes / 1e6:.1f} MB): "
          f"{t_load:.2f} s; write every report: {t_write:.2f} s")
    print(f"summary.md: {len(summary.encode()):,} bytes of {markdown.SUMMARY_MAX_BYTES:,} in {t_summary:.2f} s")
    print(f"  closing: {_closing(summary)[:160]}")
    print(f"PR comment: {len(comment):,} characters of {markdown.COMMENT_MAX_CHARS:,} (GitHub: 65,536) "
          f"in {t_comment:.2f} s")
    print(f"  closing: {_closing(comment)[:160]}")
    print(f"junit.xml: {len(xml.encode()):,} bytes in {t_junit:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
