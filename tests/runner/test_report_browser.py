"""report.html in a real headless Chromium: it loads with no console error and no request, its
counts equal results.json, the filters, sorting and drill-down work, hostile text from a tool stays
text and leaves the layout intact, and a 500-task page loads within a (generous) budget."""

from __future__ import annotations

import importlib.util
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from finevo.outcome import Attempt, ErrorInfo, LLMUsage
from runner.cli import build_parser
from runner.cli.run import cmd_run
from runner.records import PayloadResult, ProbeResult, SecurityResult, TaskResult, WorldResult
from runner.reports import document, write_all
from tests.runner import browser_support
from tests.runner.browser_support import Opened, open_report
from tests.runner.conftest import SECURITY_LINES
from tests.runner.fakes import DATA, TASKS
from tests.runner.reports_support import config, make_doc
from tests.runner.test_repeats import _by_repeat

# slow: Chromium and the runs it loads take 14-18 s a test at load 8 (-n 2)
# one worker for the module: Chromium and the failing run (module fixtures) are started once, not
# once per worker (both workers built the run: 38 s and 35 s of setup at load 10)
pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("report-browser")]
browser = browser_support.browser  # the fixture: headless Chromium, or a skip (a failure in CI) with the reason

ONLY = "fetch_001,fetch_002,fetch_003,calc_001,calc_002,calc_003,comp_001,sec_001,sec_002"
#: Generous: a loaded 2-core machine opens the 500-task page in a few seconds.
LOAD_BUDGET_S = 30.0
FILTER_BUDGET_S = 10.0


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real gate run (scripted agent, 3 repeats): a regression, a flaky task, an error."""
    root = tmp_path_factory.mktemp("run")
    security = root / "security.jsonl"
    security.write_text("".join(json.dumps(x) + "\n" for x in SECURITY_LINES))
    baseline = root / "baseline.json"
    baseline.write_text(json.dumps({"version": 1, "description": "t", "total_tasks": 20, "target_pass_rate": 0.5,
                                    "passing_tasks": ["fetch_001", "fetch_002", "calc_002"]}))
    per_repeat = {1: {"fetch_002": "wrong"}, 2: {"fetch_002": "wrong", "calc_002": "wrong"},
                  3: {"fetch_002": "external", "calc_002": "wrong"}}
    args = ["run", "--llm", "replay:x.jsonl", "--tasks", str(TASKS), "--security-tasks", str(security),
            "--baseline", str(baseline), "--no-payloads", "--data", str(DATA), "--out", str(root / "out"),
            "--run-id", "failing", "--only", ONLY, "--quiet", "--repeats", "3",
            # no hidden worlds: what the pages show of this run (counts, filters, intervals, a failing
            # task's main reading) does not depend on them, and judging 9 tasks x 3 repeats in the default
            # three worlds was most of the run; a world's reading row is the rich document's (below)
            "--worlds", "0"]
    assert cmd_run(build_parser().parse_args(args), factory=_by_repeat(per_repeat)) == 1
    return root / "out" / "failing"


def _clean(opened: Opened) -> None:
    assert opened.console_errors == [] and opened.page_errors == []
    assert opened.other_requests == []


def test_every_run_directory_has_a_page_that_loads_clean_and_counts_what_results_json_counts(
        failing_run: Path, browser: Any) -> None:
    doc = document.load(failing_run / "results.json")
    opened = open_report(browser, failing_run / "report.html")
    _clean(opened)
    assert opened.page.locator("#verdict").get_attribute("data-status") == doc.verdict.status.value == "failed"
    for key in ("total", "passed", "failed", "errors", "skipped"):
        assert int(opened.text(f"#count-{key}")) == getattr(doc.summary, key), key
    bars = opened.page.eval_on_selector_all("#category-chart g.cat", "gs => gs.map(g => ({...g.dataset}))")
    assert {b["category"]: (int(b["total"]), int(b["passed"]), int(b["failed"]), int(b["errors"]))
            for b in bars} == {c.value: (f.total, f.passed, f.failed, f.errors) for c, f in doc.per_category.items()}
    assert len(opened.visible_rows()) == len(doc.tasks) == int(opened.text("#shown-count"))
    assert len(opened.page.locator("#regressions tbody tr").all()) == len(doc.regressions) > 0
    assert int(opened.text("#sec-blocked")) == doc.security.blocked
    assert int(opened.text("#sec-total")) == doc.security.total
    # repeats: one interval per task, flaky and regression marked
    assert doc.statistics is not None
    rows = opened.page.locator("#intervals tbody tr")
    assert rows.count() == len(doc.statistics.tasks)
    assert opened.page.locator("#intervals tr[data-task=calc_002] .mark-flaky").count() == 1
    assert opened.page.locator("#intervals svg.interval line.ci").count() == 3 * len(doc.statistics.tasks)


def test_filters_sorting_and_drill_down(failing_run: Path, browser: Any) -> None:
    doc = document.load(failing_run / "results.json")
    opened = open_report(browser, failing_run / "report.html")
    page = opened.page
    states = Counter(t.state.value for t in doc.tasks)
    page.select_option("#f-state", "fail")
    assert len(opened.visible_rows()) == states["fail"] == int(opened.text("#shown-count")) > 0
    assert set(opened.visible_rows()) == {t.task_id for t in doc.tasks if t.state.value == "fail"}
    page.select_option("#f-state", "")
    page.select_option("#f-regression", "yes")
    regressed = {(r.task_id, r.state) for r in doc.regressions}
    assert len(opened.visible_rows()) == sum((t.task_id, t.state) in regressed for t in doc.tasks)
    page.select_option("#f-regression", "")
    page.select_option("#f-category", "calculation")
    assert set(opened.visible_rows()) == {t.task_id for t in doc.tasks if t.category.value == "calculation"}
    page.select_option("#f-category", "")
    page.fill("#f-text", "fetch_00")
    assert set(opened.visible_rows()) == {t.task_id for t in doc.tasks if "fetch_00" in t.task_id}
    page.fill("#f-text", "")
    source = doc.tasks[0].tool.source.value
    page.select_option("#f-source", source)
    assert len(opened.visible_rows()) == sum(t.tool.source.value == source for t in doc.tasks)
    page.select_option("#f-source", "")
    assert len(opened.visible_rows()) == len(doc.tasks)

    # sorting by state, then the other way
    page.click("#task-table th button[data-sort=state]")
    order = page.eval_on_selector_all("#task-table tbody tr", "rs => rs.map(r => r.dataset.state)")
    assert order == sorted(order)
    page.click("#task-table th button[data-sort=state]")
    order = page.eval_on_selector_all("#task-table tbody tr", "rs => rs.map(r => r.dataset.state)")
    assert order == sorted(order, reverse=True)

    # drill-down: only the chosen task's details are shown
    assert page.locator("article.task:visible").count() == 0
    failing = next(t for t in doc.tasks if t.task_id == "fetch_002" and t.state.value == "fail")
    index = doc.tasks.index(failing)
    page.click(f"#task-table a[href='#task-{index}']")
    article = page.locator(f"#task-{index}")
    assert article.is_visible() and page.locator("article.task:visible").count() == 1
    assert failing.query in article.inner_text()
    assert article.locator("table.readings tr.main").inner_text().count("fail") >= 1
    _clean(opened)


def _rich_doc() -> Any:
    hostile = ("<script>window.__pwned = 1</script><img src=https://evil.example/x.png "
               "onerror='window.__pwned = 2'><iframe src=https://evil.example></iframe></pre></td></table>")
    long_line = "A" * 1_000_000
    v1 = "def tool(symbol: str) -> float:\n    prices = get_history(symbol)\n    return prices[-1]\n"
    v2 = "def tool(symbol: str) -> float:\n    prices = get_history(symbol)\n    return float(prices[-1])  # cast\n"
    wrong = ErrorInfo(kind="agent", code="contract_violation", type="ContractViolation",
                      message="returned a list " + hostile)
    attempts = [Attempt(number=1, stage="contract", ok=False, error=wrong, code=v1,
                        usage=LLMUsage(prompt_tokens=100, completion_tokens=50)),
                Attempt(number=2, stage="done", ok=True, code=v2,
                        usage=LLMUsage(prompt_tokens=120, completion_tokens=60))]
    evil = TaskResult(task_id="calc_001", category="calculation", query="RSI of <b>AAPL</b> " + hostile,
                      state="fail", reason="wrong value " + hostile + "\n" + long_line, expected={"pct": 55.2},
                      actual=hostile, code=v2 + "# " + hostile + "\n" + "x = '" + long_line + "'\n",
                      attempts=attempts, refinements=1, stdout=hostile + long_line, stderr=long_line,
                      probes=[ProbeResult(index=1, args={"symbol": hostile}, state="fail", reason=hostile,
                                          expected={"pct": 1.0}, actual=hostile)],
                      worlds=[WorldResult(world="seed-7", kind="seed", as_of="2024-06-28", state="fail",
                                          reason=hostile, checks=2)])
    plain = TaskResult(task_id="fetch_001", category="fetch", query="Get AAPL close", state="pass", reason="")
    security = [SecurityResult(task_id="sec_001", query=hostile, attack=hostile, state="blocked", reason="r",
                               blocked_by="policy:import-os")]
    payloads = [PayloadResult(payload_id="pay_001", attempt=hostile, state="unblocked", reason=hostile)]
    return make_doc([evil, plain], security, payloads, config=config(
        baseline={"path": "b.json", "passing_tasks": ["calc_001"], "target_pass_rate": 0.5}))


def test_hostile_text_stays_text_and_leaves_the_layout_intact(tmp_path: Path, browser: Any) -> None:
    doc = _rich_doc()
    paths = write_all(doc, tmp_path)
    opened = open_report(browser, paths["html"])
    page = opened.page
    page.click("#task-table a[href='#task-0']")
    assert page.evaluate("window.__pwned") is None
    assert page.evaluate("document.scripts.length") == 1
    assert page.evaluate("document.querySelectorAll('iframe, img, object, embed').length") == 0
    assert page.evaluate("document.querySelectorAll('[onerror], [onload], [onclick]').length") == 0
    article = page.locator("#task-0")
    assert "<script>window.__pwned = 1</script>" in article.inner_text()
    assert "<b>AAPL</b>" in article.locator(".query").inner_text()
    # the structure after the hostile task is whole: every section and every task is there
    assert page.locator("article.task").count() == len(doc.tasks)
    assert page.locator("#configuration").count() == 1
    # a 1 MB line scrolls inside its block: the page itself does not get wider than the window
    assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("window.innerWidth")
    box = page.locator("#task-0 pre.code").first.bounding_box()
    assert box is not None and box["width"] <= 1280 and box["height"] < 1000
    _clean(opened)


def test_drill_down_shows_attempt_diffs_readings_and_highlighted_code(tmp_path: Path, browser: Any) -> None:
    paths = write_all(_rich_doc(), tmp_path)
    opened = open_report(browser, paths["html"])
    page = opened.page
    page.goto(opened.url + "#task-0")
    article = page.locator("#task-0")
    assert article.is_visible()
    diff = article.locator("pre.diff")
    assert diff.count() == 1
    assert "+    return float(prices[-1])  # cast" in diff.locator(".d-add").all_inner_texts()
    assert "-    return prices[-1]" in diff.locator(".d-del").all_inner_texts()
    assert article.locator("pre.code .t-k").first.inner_text() == "def"
    readings = article.locator("table.readings tbody tr")
    assert readings.count() == 3  # the main call, one probe, one world
    assert "55.2" in readings.nth(0).inner_text()
    assert "100 in, 50 out tokens" in article.inner_text()
    _clean(opened)


def _bench_module() -> Any:
    path = Path(__file__).resolve().parents[2] / "scripts" / "bench_reports.py"
    spec = importlib.util.spec_from_file_location("bench_reports", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_500_failing_tasks_with_10kb_reasons_load_and_filter_within_budget(tmp_path: Path, browser: Any) -> None:
    import time

    doc = _bench_module().bench_doc(500, 10_000)
    paths = write_all(doc, tmp_path)
    opened = open_report(browser, paths["html"], timeout_s=LOAD_BUDGET_S * 2)
    assert opened.load_s < LOAD_BUDGET_S, f"{opened.load_s:.1f} s"
    _clean(opened)
    assert int(opened.text("#count-failed")) == 500 == len(opened.visible_rows())
    started = time.monotonic()
    opened.page.fill("#f-text", "calc_49")
    assert len(opened.visible_rows()) == 10
    assert time.monotonic() - started < FILTER_BUDGET_S


def test_the_hostile_corpus_of_the_other_reports_loads_clean(tmp_path: Path, browser: Any) -> None:
    from tests.runner.reports_support import hostile_doc

    doc = hostile_doc()
    paths = write_all(doc, tmp_path)
    opened = open_report(browser, paths["html"])
    page = opened.page
    assert len(opened.visible_rows()) == len(doc.tasks)
    for index in range(len(doc.tasks)):
        page.goto(f"{opened.url}#task-{index}")
        assert page.locator(f"#task-{index}").is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= page.evaluate("window.innerWidth"), index
    assert page.evaluate("document.scripts.length") == 1
    assert page.evaluate("document.querySelectorAll('img, iframe, [onerror]').length") == 0
    assert page.locator("article.task").count() == len(doc.tasks)
    _clean(opened)
