"""Report renderers: JUnit messages never empty, budgets by structure, the truth at a glance (verdict
first, banners, "not assessed"), console colour rules, payload canaries."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml

from runner.execution.canaries import PAYLOAD_ENV, Canaries
from runner.execution.payloads import run_payload
from runner.inputs.corpus import Payload
from runner.records import ContainmentSelftest, PayloadResult, SecurityResult, SelfCheck, TaskResult
from runner.reports import document, junit, markdown
from runner.reports.console import Console, use_colour
from runner.reports.model import ResultsDocument
from tests.runner.fakes import FakeSandbox
from tests.runner.reports_support import JUNIT_XSD, config, make_doc, render_gfm, tags


def _doc(tasks: list[TaskResult], **kwargs) -> ResultsDocument:
    return make_doc(tasks, **kwargs)


def test_failure_and_error_with_empty_reason_still_carry_a_message(tmp_path: Path) -> None:
    tasks = [TaskResult("calc_001", "calculation", "q1", "fail", " "),
             TaskResult("calc_002", "calculation", "q2", "error", " ")]
    path = tmp_path / "junit.xml"
    path.write_text(junit.render(_doc(tasks)))
    results = [r for suite in JUnitXml.fromfile(str(path)) for case in suite for r in case.result]
    assert [type(r) for r in results] == [Failure, Error]
    assert all(r.message for r in results)


@pytest.mark.slow
def test_markdown_stays_under_one_mebibyte() -> None:
    huge = "x = 1\n" * 40_000
    tasks = [TaskResult(f"calc_{i:03d}", "calculation", "q", "fail", "wrong", code=huge) for i in range(120)]
    text = markdown.render(_doc(tasks))
    assert len(text.encode()) < 1024 * 1024
    assert "Left out to fit:" in text and "more characters]" in text


def test_colour_only_on_tty_and_never_with_no_color() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert use_colour(Tty(), env={}) is True
    assert use_colour(Tty(), env={"NO_COLOR": ""}) is False
    assert use_colour(io.StringIO(), env={}) is False
    out = Tty()
    Console(out, colour=True).task_end("fail", 1.0)
    assert "\033[31m" in out.getvalue()


def _payload(pid: str, attempts: str, code: str, canary: str = "none") -> Payload:
    return Payload(id=pid, technique="test", attempts=attempts, canary=canary, expect="runtime", code=code)


def test_payload_states_from_sandbox_results_and_canaries(tmp_path: Path) -> None:
    canaries = Canaries(tmp_path / "canary")
    try:
        sandbox = FakeSandbox()
        blocked = run_payload(sandbox, _payload("p1", "import os", "BLOCK"), canaries)
        raised = run_payload(sandbox, _payload("p2", "open file", "RAISE"), canaries)
        contained = run_payload(sandbox, _payload("p3", "harmless", "def run():\n    return 1.0\n"), canaries)
        leaked = run_payload(sandbox, _payload("p4", "read canary", "LEAK_FILE:@@CANARY_FILE@@ "), canaries)
        secret = run_payload(sandbox, _payload("p5", "env", "LEAK_ENV"), canaries)
        forged = run_payload(sandbox, _payload("p6", "forge", "FORGE", canary="forge_result"), canaries)
        # the same value from a payload that does not try to forge one is just its return value
        honest = run_payload(sandbox, _payload("p7", "value", "FORGE"), canaries)
        denied = run_payload(sandbox, _payload("p8", "socket", "DENIED"), canaries)
        claimed = run_payload(sandbox, _payload("p9", "socket", "CLAIMS_SECCOMP"), canaries)
    finally:
        canaries.close()
    assert (blocked.state, blocked.layer) == ("blocked", "policy")
    # an exception the tool raised is its own claim: what holds is that every canary is intact
    assert raised.state == "contained" and "every canary intact" in raised.reason
    assert (denied.state, denied.layer) == ("blocked", "seccomp")
    assert claimed.state == "contained"  # "blocked by seccomp" without the supervisor's record
    assert contained.state == "contained"
    assert leaked.state == "unblocked" and "canary file" in leaked.reason
    assert secret.state == "unblocked" and "secret" in secret.reason
    assert forged.state == "unblocked" and "forged result" in forged.reason
    assert honest.state == "contained"
    assert PAYLOAD_ENV not in os.environ


def test_stable_view_drops_only_times() -> None:
    doc = _doc([TaskResult("calc_001", "calculation", "q", "pass", "ok", duration_s=3.0)])
    view = document.stable_view(doc)
    assert "started_at" not in view and "duration_s" not in view["tasks"][0]
    assert view["tasks"][0]["state"] == "pass"


def test_a_payload_the_sandbox_failed_on_is_an_error_and_fails_the_gate(tmp_path: Path) -> None:
    from finevo.errors import SandboxUnavailable
    from runner.verdict.decide import VerdictOptions, compute_verdict

    class DeadSandbox:
        def run(self, *args, **kwargs):
            raise SandboxUnavailable("the warm sandbox worker failed: ChannelClosed")

    canaries = Canaries(tmp_path / "canary")
    try:
        result = run_payload(DeadSandbox(), Payload(id="p9", technique="test", attempts="anything", canary="none",
                                                    expect="runtime", code="def run():\n    return 1\n"), canaries)
    finally:
        canaries.close()
    assert result.state == "error" and "the sandbox failed: SandboxUnavailable" in result.reason
    verdict = compute_verdict([], [], [result], VerdictOptions(baseline_passing=None, min_pass_rate=0.5))
    assert verdict.verdict.exit_code == 1 and verdict.security.error_ids == ["p9"]
    assert verdict.verdict.reasons == ["security payload p9 could not be judged (error: the sandbox failed: "
                                       "SandboxUnavailable: the warm sandbox worker failed: ChannelClosed)"]
    doc = _doc([], payloads=[result])
    assert doc.per_category["security"].errors == 1
    junit_path = tmp_path / "junit.xml"
    junit_path.write_text(junit.render(doc))
    (error,) = [r for suite in JUnitXml.fromfile(str(junit_path)) for case in suite for r in case.result]
    assert isinstance(error, Error) and error.message.startswith("the sandbox failed")


def test_per_category_rows_keep_their_order_after_a_reload(tmp_path: Path) -> None:
    from runner.reports import write_all

    tasks = [TaskResult("fetch_001", "fetch", "q", "pass", "ok"),
             TaskResult("calc_001", "calculation", "q", "pass", "ok"),
             TaskResult("comp_001", "composite", "q", "pass", "ok")]
    doc = _doc(tasks, security=[SecurityResult("sec_001", "q", "a", "blocked", "blocked by policy")])
    write_all(doc, tmp_path)
    reloaded = document.load(tmp_path / "results.json")
    assert list(reloaded.per_category) == sorted(reloaded.per_category)  # the JSON is key-sorted
    md = markdown.render(reloaded)
    table = md.split("## Per category", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "total" not in line]
    assert rows == ["fetch", "calculation", "composite", "security"]


def test_security_records_written_before_llm_usage_was_recorded_still_load() -> None:

    old = {"task_id": "sec_001", "query": "q", "attack": "a", "state": "blocked", "reason": "blocked by policy",
           "blocked_by": "policy", "stage": "policy", "tool_source": "blocked", "code": None, "duration_s": 0.1,
           "error": None, "category": "security"}
    doc = _doc([], security=[SecurityResult.from_dict(old)]).to_json_dict()
    del doc["security"]["tasks"][0]["llm"]
    document.validate(doc)  # the field is optional in the schema
    assert SecurityResult.from_dict(old).llm.calls == 0


# --------------------------------------------------------------------------- budgets by structure

def _many_failures(n: int = 500, reason_bytes: int = 10_000) -> ResultsDocument:
    reason = ("the value was wrong because " + "x" * 90 + "\n") * (reason_bytes // 120)
    tasks = [TaskResult(f"calc_{i:03d}", "calculation", f"query {i}", "fail", reason, code="def f():\n    return 1\n"
                        * 200) for i in range(n)]
    sec = [SecurityResult(f"sec_{i:03d}", "q", "attack", "unblocked", reason) for i in range(50)]
    cfg = config(baseline={"path": "b.json", "passing_tasks": [t.task_id for t in tasks], "target_pass_rate": 0.9})
    return make_doc(tasks, security=sec, config=cfg)


def _balanced(text: str) -> None:
    got = tags(text)
    assert got.counts.get("details", 0) == text.count("</details>")
    fences = [line for line in text.splitlines() if line.startswith("```")]
    assert len(fences) % 2 == 0


@pytest.mark.slow
def test_500_failing_tasks_fit_the_summary_and_the_comment_with_their_ending() -> None:
    doc = _many_failures()
    summary = markdown.render(doc, results_path="out/t/results.json")
    assert len(summary.encode("utf-8")) <= 1024 * 1024
    comment = markdown.render_comment(doc, run_url="https://github.com/o/r/actions/runs/9")
    assert len(comment) <= 65_536
    endings = ((summary, "_End of the finevo-verify summary."), (comment, "_End of the finevo-verify report."))
    for text, ending in endings:
        assert text.splitlines()[0] == "# ❌ finevo-verify: FAILED"
        last = text.rstrip().splitlines()[-1]
        assert last.startswith(ending) and "Left out to fit:" in last
        _balanced(text)
        html = render_gfm(text)
        assert "<h2>Criteria</h2>" in html and "<h2>Regressions</h2>" in html and "<h2>Security</h2>" in html
    assert "(https://github.com/o/r/actions/runs/9)._" in comment.rstrip().splitlines()[-1]
    # the comment could not hold 500 regression rows: it says how many, whole, instead of cutting a table
    assert "500 regression(s): " in comment and "Shortened to fit: regressions" in comment


def test_sections_are_kept_in_priority_order_and_dropped_whole() -> None:
    parts = [markdown.Section("a", ["## A", "", "a" * 50]), markdown.Section("b", ["## B", "", "b" * 5000],
                                                                              ["## B", "", "b is long"]),
             markdown.Section("c", ["## C", "", "c" * 5000]), markdown.Section("d", ["## D", "", "d"])]
    text = markdown.build(["# head"], parts, "end.{left_out}", 1200)
    assert text.startswith("# head") and text.rstrip().endswith("end. Shortened to fit: b. Left out to fit: c.")
    assert "## A" in text and "b is long" in text and "## C" not in text and "## D" in text
    assert len(text.encode()) <= 1200


# --------------------------------------------------------------------------- the truth at a glance

def test_the_first_line_is_the_verdict_and_a_reference_run_says_it_did_not_evaluate_the_agent() -> None:
    tasks = [TaskResult("calc_001", "calculation", "q", "pass", "ok")]
    agent = markdown.render(_doc(tasks))
    assert agent.splitlines()[0] == "# ✅ finevo-verify: PASSED"
    assert "did not evaluate the agent" not in agent and "Synthetic market data" not in agent
    ref = markdown.render(_doc(tasks, config=config(provider="reference", llm="reference", snapshot_synthetic=True)))
    assert ref.splitlines()[0] == "# ✅ finevo-verify: PASSED (reference self-check: the agent was not evaluated)"
    assert "This run did not evaluate the agent" in ref and "Synthetic market data" in ref
    assert "baseline update" not in ref.replace("it cannot update the baseline", "")


def test_weak_isolation_gets_a_banner_and_the_layers_are_listed() -> None:
    cfg = config(isolation="weak", require_isolation=None, sandbox_layers={"landlock": False, "seccomp": True})
    text = markdown.render(_doc([TaskResult("calc_001", "calculation", "q", "pass", "ok")], config=cfg,
                                containment_selftest=ContainmentSelftest(enabled=True, ok=True, duration_s=0.5,
                                                                         reason="every probe contained")))
    assert "**Weak isolation**" in text
    section = text.split("## Self-checks and isolation", 1)[1].split("\n## ", 1)[0]
    assert "Isolation: **weak**" in section and "on: seccomp; off: landlock" in section
    assert "Containment self-test: **ok**" in section


def test_a_partial_run_shows_not_assessed_for_what_it_could_not_assess() -> None:
    tasks = [TaskResult("calc_001", "calculation", "q", "pass", "ok"),
             TaskResult("calc_002", "calculation", "q", "skipped", "not run: interrupted")]
    sec = [SecurityResult("sec_001", "q", "a", "skipped", "not run: interrupted")]
    cfg = config(baseline={"path": "b", "passing_tasks": ["calc_001", "calc_002"], "target_pass_rate": 0.5})
    doc = _doc(tasks, security=sec, config=cfg, partial_signal=15)
    assert [c.ok for c in doc.verdict.criteria] == [None, None, None]
    text = markdown.render(doc)
    assert text.splitlines()[0] == "# ⏸️ finevo-verify: PARTIAL (no verdict)"
    criteria = text.split("## Criteria", 1)[1].split("## Regressions", 1)[0]
    assert "✅" not in criteria and criteria.count("➖ not assessed") == 3
    assert "Partial run" in text and "Not assessed (no verdict)." in text
    # an unblocked item already seen is a failure, partial or not
    sec = [SecurityResult("sec_001", "q", "a", "unblocked", "leaked"),
           SecurityResult("sec_002", "q", "a", "skipped", "")]
    doc = _doc(tasks, security=sec, config=cfg, partial_signal=2)
    assert doc.verdict.criteria[2].ok is False


def test_security_rows_say_what_happened_without_repeating_columns() -> None:
    sec = [SecurityResult("sec_001", "q", "read secrets", "blocked", "blocked by policy:no_os",
                          blocked_by="policy:no_os"),
           SecurityResult("sec_002", "q", "exfiltrate", "unblocked", "no layer blocked it")]
    pay = [PayloadResult("pay_001", "fork bomb", "contained", "ran to the end", layer="rlimits"),
           PayloadResult("pay_002", "read file", "blocked", "stopped by landlock", layer="landlock", status="blocked")]
    text = markdown.render(_doc([TaskResult("calc_001", "calculation", "q", "pass", "ok")], security=sec, payloads=pay))
    assert "| sec_001 | read secrets | 🛡️ blocked | policy:no_os |" in text
    assert "| sec_002 | exfiltrate | ❌ unblocked | no layer blocked it |" in text
    assert "| pay_001 | fork bomb | 🧱 contained | rlimits |" in text
    assert "1/2 security tasks blocked; 1 payloads blocked and 1 contained of 2; **1 unblocked**: sec_002" in text
    assert "passed" not in text.split("## Security", 1)[1].split("\n## ", 1)[0]


def test_an_interrupted_or_crashed_run_is_a_failing_junit_check(tmp_path) -> None:
    import xmlschema

    tasks = [TaskResult("calc_001", "calculation", "q", "pass", "ok"),
             TaskResult("calc_002", "calculation", "q", "skipped", "not run: interrupted by SIGTERM")]
    for signal, crash in ((15, None), (-1, "RuntimeError: boom")):
        doc = _doc(tasks, partial_signal=signal, crash=crash)
        path = tmp_path / "junit.xml"
        path.write_text(junit.render(doc))
        xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(path))
        results = [(case.name, r) for suite in JUnitXml.fromfile(str(path)) for case in suite for r in case.result]
        failures = [(name, r) for name, r in results if isinstance(r, Failure)]
        assert [name for name, _ in failures] == ["the run did not finish"]
        assert "no verdict" in failures[0][1].message
    doc = _doc(tasks[:1], selfcheck=SelfCheck(enabled=True, ok=False, reason="null model passed calc_001"))
    path.write_text(junit.render(doc))
    failures = [case.name for suite in JUnitXml.fromfile(str(path)) for case in suite
                for r in case.result if isinstance(r, Failure)]
    assert failures == ["the run produced no verdict"]


def test_junit_times_and_attributes_fit_the_strict_schema(tmp_path) -> None:
    import xmlschema

    doc = _doc([TaskResult("calc_001", "calculation", "q", "fail", "wrong", duration_s=1.23456789)])
    xml = junit.render(doc)
    assert "disabled" not in xml and 'time="1.235"' in xml
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(xml)
