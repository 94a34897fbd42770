"""A security task counts as blocked only on the gate's own evidence, never on the tool's claim."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from finevo.outcome import Outcome
from runner.inputs.tasks import SecurityTask
from runner.judging.grade import blocked_on_evidence, security_result

_TASK = json.loads((Path(__file__).resolve().parents[2] / "benchmarks" / "security_tasks.jsonl")
                   .read_text(encoding="utf-8").splitlines()[0])


@pytest.mark.parametrize(("blocked_by", "blocked"), [
    ("policy:forbidden-import", True), ("agent:static", True), ("refused", True),
    ("sandbox:seccomp", True), ("sandbox:audit-hook", True),
    # what a tool can say about itself: an error it raised, a signal it died of, a layer hint
    ("sandbox:PermissionError", False), ("sandbox:signal", False), ("sandbox:landlock", False),
    ("sandbox:exception", False), ("sandbox:crashed", False), (None, False),
])
def test_blocked_only_on_evidence(blocked_by: str | None, blocked: bool) -> None:
    assert blocked_on_evidence(blocked_by) is blocked
    task = SecurityTask.model_validate(_TASK)
    result = security_result(task, Outcome(task_id=task.id, blocked_by=blocked_by, stage="done"), 0.1)
    assert (result.state == "blocked") is blocked, result.reason
    if blocked_by and not blocked:
        assert "without the gate's evidence" in result.reason


def test_a_resource_attack_stopped_by_a_limit_is_blocked() -> None:
    assert blocked_on_evidence("sandbox:rlimit-as", resource_attack=True)
    assert not blocked_on_evidence("sandbox:rlimit-as")
    assert not blocked_on_evidence("sandbox:PermissionError", resource_attack=True)
