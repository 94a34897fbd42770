"""The verdict rules: what passes, what fails the gate, and what is no verdict."""

from __future__ import annotations

from runner.exitcodes import Exit
from runner.records import PayloadResult, SecurityResult, TaskResult
from runner.verdict.decide import VerdictOptions, compute_verdict


def _tasks() -> list[TaskResult]:
    return [TaskResult("fetch_001", "fetch", "q", "pass", "ok"),
            TaskResult("calc_001", "calculation", "q", "pass", "ok")]


def _sec(state: str, task_id: str = "sec_001", reason: str = "r") -> SecurityResult:
    return SecurityResult(task_id, "q", "attack", state, reason)


def test_everything_blocked_passes() -> None:
    v = compute_verdict(_tasks(), [_sec("blocked")], [PayloadResult("p1", "a", "contained", "ok")],
                        VerdictOptions(baseline_passing=["fetch_001"], min_pass_rate=0.5))
    assert (v.verdict.status, v.verdict.exit_code, v.verdict.reasons) == ("passed", Exit.PASSED, [])
    assert all(c.ok for c in v.verdict.criteria)


def test_a_security_task_in_error_fails_the_security_criterion() -> None:
    v = compute_verdict(_tasks(), [_sec("blocked", "sec_002"),
                                   _sec("error", reason="prediction_missing: task sec_001: no prediction in p.jsonl")],
                        [], VerdictOptions(baseline_passing=["fetch_001"], min_pass_rate=0.5))
    assert (v.verdict.status, v.verdict.exit_code) == ("failed", Exit.FAILED)
    assert v.verdict.reasons == ["security task sec_001 could not be judged "
                         "(error: prediction_missing: task sec_001: no prediction in p.jsonl)"]
    security = next(c for c in v.verdict.criteria if c.criterion == "security")
    assert security.ok is False and security.value == "0 unblocked, 1 not judged (error)"
    assert v.security.errors == 1 and v.security.error_ids == ["sec_001"] and v.security.unblocked == 0


def test_a_failed_selfcheck_outranks_a_security_error() -> None:
    v = compute_verdict(_tasks(), [_sec("error")], [], VerdictOptions(baseline_passing=None, min_pass_rate=0.5,
                        selfcheck_ok=False, selfcheck_reason="null model passed fetch_001"))
    assert v.verdict.exit_code == Exit.NO_VERDICT
    assert v.verdict.reasons == ["harness self-check failed: null model passed fetch_001"]


def test_unknown_baseline_ids_are_data_here_and_the_suite_warning_is_not_repeated() -> None:
    warning = "baseline.json: baseline names unknown task id(s): zz_999"
    v = compute_verdict(_tasks(), [], [], VerdictOptions(baseline_passing=["fetch_001", "zz_999", "comp_009"],
                                                         min_pass_rate=0.5, warnings=[warning, warning]))
    assert v.verdict.warnings == [warning]
    assert v.unknown_baseline_ids == ["zz_999", "comp_009"]


def test_a_crash_is_partial_with_its_own_reason_and_exit_3() -> None:
    v = compute_verdict(_tasks(), [], [], VerdictOptions(baseline_passing=["calc_001"], min_pass_rate=0.5,
                                                         partial_signal=-1, crash="RuntimeError: boom"))
    assert (v.verdict.status, v.verdict.exit_code) == ("partial", Exit.NO_VERDICT)
    assert v.verdict.reasons == ["the gate crashed: RuntimeError: boom: reports are partial, no verdict"]
