"""Figures for the reports under load: N failing tasks with long reasons and code (all regressions),
rendered into every report; prints each report's size against its limit, what was left out, and
the time taken. report.html is also opened in headless Chromium when Playwright and the browser are
there (scripts/setup-browser.sh; ``FINEVO_CHROMIUM`` names another executable): load time, and the
time a filter takes over every row.

    python scripts/bench_reports.py [--tasks 500] [--reason-bytes 10000] [--no-browser]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from finevo.outcome import Attempt, ErrorInfo
from runner.records import SecurityResult, TaskResult
from runner.reports import document, html, junit, markdown, write_all


def bench_doc(n: int, reason_bytes: int) -> document.ResultsDocument:
    """N failing tasks (all regressions) with reasons and stdout of ``reason_bytes`` each, 100-line
    tools and two attempts each (so every task has a diff), and up to 50 unblocked security tasks."""
    reason = ("the value was wrong: expected 1.0 <b>got</b> 2.0 | see @octocat " + "x" * 50 + "\n") * max(
        1, reason_bytes // 120)
    code = "def tool(symbol: str) -> float:\n    return 1.0\n" * 100
    first = code.replace("return 1.0", "return 1", 3)
    # each task its own code (a comment with its number), so nothing is rendered once for all
    wrong = ErrorInfo(kind="agent", code="contract_violation", type="ContractViolation", message=reason[:300])
    tasks = [TaskResult(task_id=f"calc_{i:03d}", category="calculation", query=f"query {i}", state="fail",
                        reason=reason, code=f"# tool {i}\n" + code, stdout=reason, refinements=1,
                        attempts=[Attempt(number=1, stage="contract", ok=False, error=wrong,
                                          code=f"# tool {i}\n" + first),
                                  Attempt(number=2, stage="done", ok=True, code=f"# tool {i}\n" + code)])
             for i in range(n)]
    security = [SecurityResult(task_id=f"sec_{i:03d}", query="q", attack="exfiltrate", state="unblocked",
                               reason=reason) for i in range(min(n, 50))]
    config = {"git_sha": None, "model": "m", "provider": "replay:x", "llm": "replay:x", "temperature": 0.0,
              "snapshot_hash": "h", "snapshot_as_of": "2024-12-31", "judge_version": "2", "min_pass_rate": 0.8,
              "agent_mode": "evolving", "max_refinements": 3, "task_timeout_s": 120.0, "selection": {},
              "self_check": False,
              "baseline": {"path": "b.json", "passing_tasks": [t.task_id for t in tasks], "target_pass_rate": 0.8}}
    return document.assemble(run_id="bench", config=config, records=document.RunRecords(tasks, security, []),
                             span=document.RunSpan("2025-01-01T00:00:00+00:00", "2025-01-01T00:10:00+00:00", 600.0))


def browser_figures(page_path: Path) -> str:
    """Load and filter times of the page in headless Chromium, or why they were not measured."""
    chromium = os.environ.get("FINEVO_CHROMIUM", "/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return "not measured in a browser (Playwright is not installed)"
    if not os.access(chromium, os.X_OK):
        return f"not measured in a browser (no Chromium at {chromium}: bash scripts/setup-browser.sh)"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = browser.new_page()
            page.set_default_timeout(300_000)
            t0 = time.perf_counter()
            page.goto(page_path.resolve().as_uri(), wait_until="load")
            t_load = time.perf_counter() - t0
            # the filter's own time, measured in the page: the input event's handler and the layout after it
            t_filter = page.evaluate("""() => {
                const box = document.getElementById("f-text");
                const t0 = performance.now();
                box.value = "calc_49";
                box.dispatchEvent(new Event("input"));
                document.body.getBoundingClientRect();
                return (performance.now() - t0) / 1000;
            }""")
            shown = page.inner_text("#shown-count")
            t0 = time.perf_counter()
            page.goto(page_path.resolve().as_uri() + "#task-499")
            page.locator("#task-499").wait_for(state="visible")
            t_drill = time.perf_counter() - t0
        finally:
            browser.close()
    return (f"Chromium: load {t_load:.2f} s; a filter over every row {t_filter:.2f} s ({shown} shown); "
            f"drill down to the last task {t_drill:.2f} s")


def _closing(text: str) -> str:
    return text.rstrip().splitlines()[-1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--reason-bytes", type=int, default=10_000)
    parser.add_argument("--no-browser", action="store_true", help="do not open report.html in Chromium")
    args = parser.parse_args()

    t0 = time.perf_counter()
    doc = bench_doc(args.tasks, args.reason_bytes)
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
    t0 = time.perf_counter()
    page = html.render(doc)
    t_html = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        paths = write_all(doc, Path(tmp))
        t_write = time.perf_counter() - t0
        t0 = time.perf_counter()
        document.load(paths["json"])
        t_load = time.perf_counter() - t0
        json_bytes = paths["json"].stat().st_size
        in_browser = "not measured in a browser (--no-browser)" if args.no_browser else browser_figures(paths["html"])

    print(f"{args.tasks} failing tasks, reasons of {args.reason_bytes} bytes, {len(doc.security.tasks)} unblocked")
    print(f"build + validate the document: {t_build:.2f} s; reload results.json ({json_bytes / 1e6:.1f} MB): "
          f"{t_load:.2f} s; write every report: {t_write:.2f} s")
    print(f"summary.md: {len(summary.encode()):,} bytes of {markdown.SUMMARY_MAX_BYTES:,} in {t_summary:.2f} s")
    print(f"  closing: {_closing(summary)[:160]}")
    print(f"PR comment: {len(comment):,} characters of {markdown.COMMENT_MAX_CHARS:,} (GitHub: 65,536) "
          f"in {t_comment:.2f} s")
    print(f"  closing: {_closing(comment)[:160]}")
    print(f"junit.xml: {len(xml.encode()):,} bytes in {t_junit:.2f} s")
    print(f"report.html: {len(page.encode()):,} bytes ({len(page.encode()) / 1e6:.1f} MB) rendered in {t_html:.2f} s")
    print(f"  {in_browser}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
