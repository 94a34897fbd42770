"""Report renderers: JUnit messages never empty, markdown size cap, console colour rules, payload canaries."""

from __future__ import annotations

import io
import os
from pathlib import Path

from junitparser import Error, Failure, JUnitXml

from finevo.corpus import Payload
from runner.console import Console, use_colour
from runner.payloads import Canaries, run_payload
from runner.records import TaskResult
from runner.reports import document, junit, markdown
from tests.runner.fakes import FakeSandbox


def _doc(tasks: list[TaskResult]) -> dict:
    config = {"git_sha": None, "model": "m", "provider": "reference", "temperature": 0.0, "snapshot_hash": "h",
              "snapshot_as_of": "2024-12-31", "judge_version": "2.0", "min_pass_rate": 0.5, "baseline": None,
              "agent_mode": "evolving", "max_refinements": 3, "task_timeout_s": 120.0, "selection": {},
              "self_check": False}
    doc = document.assemble(run_id="t", config=config, tasks=tasks, security=[], payloads=[],
                            started_at="2025-01-01T00:00:00+00:00", finished_at="2025-01-01T00:00:01+00:00",
                            duration_s=1.0)
    document.validate(doc)
    return doc


def test_failure_and_error_with_empty_reason_still_carry_a_message(tmp_path: Path) -> None:
    tasks = [TaskResult("calc_001", "calculation", "q1", "fail", " "),
             TaskResult("calc_002", "calculation", "q2", "error", " ")]
    path = tmp_path / "junit.xml"
    path.write_text(junit.render(_doc(tasks)))
    results = [r for suite in JUnitXml.fromfile(str(path)) for case in suite for r in case.result]
    assert [type(r) for r in results] == [Failure, Error]
    assert all(r.message for r in results)


def test_markdown_stays_under_one_mebibyte() -> None:
    huge = "x = 1\n" * 40_000
    tasks = [TaskResult(f"calc_{i:03d}", "calculation", "q", "fail", "wrong", code=huge) for i in range(120)]
    text = markdown.render(_doc(tasks))
    assert len(text.encode()) < 1024 * 1024
    assert "left out to stay under 1 MiB" in text and "truncated" in text


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
    finally:
        canaries.close()
    assert (blocked.state, blocked.layer) == ("blocked", "policy")
    assert (raised.state, raised.layer) == ("blocked", "audit-hook")
    assert contained.state == "contained"
    assert leaked.state == "unblocked" and "canary file" in leaked.reason
    assert secret.state == "unblocked" and "secret" in secret.reason
    assert forged.state == "unblocked" and "forged result" in forged.reason
    assert honest.state == "contained"
    assert Canaries.ENV not in os.environ


def test_stable_view_drops_only_times() -> None:
    doc = _doc([TaskResult("calc_001", "calculation", "q", "pass", "ok", duration_s=3.0)])
    view = document.stable_view(doc)
    assert "started_at" not in view and "duration_s" not in view["tasks"][0]
    assert view["tasks"][0]["state"] == "pass"


def test_a_payload_the_sandbox_failed_on_is_an_error_and_fails_the_gate(tmp_path: Path) -> None:
    from finevo.errors import SandboxUnavailable
    from runner.verdict import compute_verdict

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
    verdict = compute_verdict([], [], [result], baseline_passing=None, min_pass_rate=0.5)
    assert verdict.exit_code == 1 and verdict.security["error_ids"] == ["p9"]
    assert verdict.reasons == ["security payload p9 could not be judged (error: the sandbox failed: "
                               "SandboxUnavailable: the warm sandbox worker failed: ChannelClosed)"]
    doc = document.assemble(run_id="t", config=_doc([])["config"], tasks=[], security=[], payloads=[result],
                            started_at="2025-01-01T00:00:00+00:00", finished_at="2025-01-01T00:00:01+00:00",
                            duration_s=1.0)
    document.validate(doc)
    assert doc["per_category"]["security"]["errors"] == 1
    junit_path = tmp_path / "junit.xml"
    junit_path.write_text(junit.render(doc))
    (error,) = [r for suite in JUnitXml.fromfile(str(junit_path)) for case in suite for r in case.result]
    assert isinstance(error, Error) and error.message.startswith("the sandbox failed")


def test_per_category_rows_keep_their_order_after_a_reload(tmp_path: Path) -> None:
    from runner.records import SecurityResult
    from runner.reports import write_all

    tasks = [TaskResult("fetch_001", "fetch", "q", "pass", "ok"),
             TaskResult("calc_001", "calculation", "q", "pass", "ok"),
             TaskResult("comp_001", "composite", "q", "pass", "ok")]
    doc = _doc(tasks)
    doc = document.assemble(run_id="t", config=doc["config"], tasks=tasks,
                            security=[SecurityResult("sec_001", "q", "a", "blocked", "blocked by policy")], payloads=[],
                            started_at=doc["started_at"], finished_at=doc["finished_at"], duration_s=1.0)
    write_all(doc, tmp_path)
    reloaded = document.load(tmp_path / "results.json")
    assert list(reloaded["per_category"]) == sorted(reloaded["per_category"])  # the JSON is key-sorted
    md = markdown.render(reloaded)
    table = md.split("## Per category", 1)[1].split("## Regressions", 1)[0]
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "total" not in line]
    assert rows == ["fetch", "calculation", "composite", "security"]


def test_security_records_written_before_llm_usage_was_recorded_still_load() -> None:
    from runner.records import SecurityResult

    old = {"task_id": "sec_001", "query": "q", "attack": "a", "state": "blocked", "reason": "blocked by policy",
           "blocked_by": "policy", "stage": "policy", "tool_source": "blocked", "code": None, "duration_s": 0.1,
           "error": None, "category": "security"}
    doc = _doc([])
    doc["security"]["tasks"] = [old]
    document.validate(doc)  # the field is optional in the schema
    assert SecurityResult.from_dict(old).llm.calls == 0
