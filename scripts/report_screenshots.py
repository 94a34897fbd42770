"""The screenshots of docs/report.md: a failing run's report.html (the scripted agent of the test
suite, 3 repeats, one regression, one flaky task), its overview and one task drilled down, taken in
headless Chromium (scripts/setup-browser.sh).

    PYTHONPATH=. python scripts/report_screenshots.py [--out docs/images]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

from runner.cli import build_parser
from runner.cli.run import cmd_run
from runner.reports import document
from tests.runner.conftest import SECURITY_LINES
from tests.runner.fakes import DATA, TASKS
from tests.runner.test_repeats import _by_repeat


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/images"))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "security.jsonl").write_text("".join(json.dumps(x) + "\n" for x in SECURITY_LINES))
        (root / "baseline.json").write_text(json.dumps({"version": 1, "description": "t", "total_tasks": 20,
                                                        "target_pass_rate": 0.5,
                                                        "passing_tasks": ["fetch_001", "fetch_002", "calc_002"]}))
        per_repeat = {1: {"fetch_002": "wrong"}, 2: {"fetch_002": "wrong", "calc_002": "wrong"},
                      3: {"fetch_002": "external", "calc_002": "wrong"}}
        cmd_run(build_parser().parse_args([
            "run", "--llm", "replay:x.jsonl", "--tasks", str(TASKS), "--security-tasks", str(root / "security.jsonl"),
            "--baseline", str(root / "baseline.json"), "--no-payloads", "--data", str(DATA), "--out",
            str(root / "out"), "--run-id", "example", "--quiet", "--repeats", "3",
            "--only", "fetch_001,fetch_002,fetch_003,calc_001,calc_002,calc_003,comp_001,sec_001,sec_002"]),
            factory=_by_repeat(per_repeat))
        run_dir = root / "out" / "example"
        doc = document.load(run_dir / "results.json")
        index = next(i for i, t in enumerate(doc.tasks) if t.task_id == "fetch_002")
        args.out.mkdir(parents=True, exist_ok=True)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=os.environ.get("FINEVO_CHROMIUM", "/usr/bin/chromium"),
                                         args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1200, "height": 1400})
            url = (run_dir / "report.html").resolve().as_uri()
            page.goto(url)
            page.screenshot(path=str(args.out / "report-overview.png"))
            page.goto(f"{url}#task-{index}")
            page.locator(f"#task-{index}").screenshot(path=str(args.out / "report-task.png"))
            browser.close()
    print(args.out / "report-overview.png")
    print(args.out / "report-task.png")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
