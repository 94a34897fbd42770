"""The harness self-check: before a verdict, prove the gate can tell right from wrong.

On the same tasks, data and judge as the run:

* the **reference** model (the gold tools of ``benchmarks/reference/``) must pass 100%; when the
  main run *is* the reference run its results are reused instead of running it twice;
* a **null** model, whose tools return ``None`` or raise, must pass 0%.

If either fails, a pass or a fail of the agent under test means nothing: the run ends with
exit 3 and no regression is reported. The null run uses no refinements (a null model never
improves), which keeps the check cheap.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from finevo.llm.base import ChatReply, ChatRequest
from finevo.outcome import LLMUsage
from finevo.vocabulary import AgentMode, ProviderKind
from runner.execution.deadline import Interrupts, TaskRunner
from runner.execution.session import SessionFactory, SessionSpec
from runner.inputs.prepare import Prepared
from runner.judging.grade import Reruns, judge_task
from runner.judging.worlds import Worlds
from runner.records import SelfCheck, SelfCheckNull, SelfCheckReference, TaskResult, TaskState
from runner.reports.console import Console


class GateHost(Protocol):
    """What the self-check needs from the run it checks (:class:`runner.gate.Gate` is one)."""

    p: Prepared
    factory: SessionFactory
    console: Console
    worlds: Worlds | None

    def spec(self, **changes: Any) -> SessionSpec: ...

_NULL_RETURNS = '''```python
from typing import Any


def tool(*args: Any, **kwargs: Any) -> Any:
    """Null model: accepts anything and returns nothing."""
    return None
```
'''

_NULL_RAISES = '''```python
from typing import Any


def tool(*args: Any, **kwargs: Any) -> Any:
    """Null model: accepts anything and always fails."""
    raise ValueError("null model: no answer")
```
'''


class NullProvider:
    """An LLM provider whose tools return ``None`` (even attempts) or raise (odd attempts)."""

    name = "null"

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply:
        content = _NULL_RAISES if request.attempt % 2 else _NULL_RETURNS
        return ChatReply(content=content, usage=LLMUsage(calls=1), model="null", finish_reason="stop")


def _run(gate: GateHost, interrupts: Interrupts, label: str, **spec_changes: Any) -> list[TaskResult]:
    p = gate.p
    spec = gate.spec(registry_dir=p.run_dir / "selfcheck" / label / "registry", registry_url=None, label=label,
                     **spec_changes)
    runner = TaskRunner(gate.factory, spec, interrupts, p.config.task_timeout_s)
    try:
        results = []
        for task in p.suite.tasks:
            outcome, elapsed = runner.solve(task)
            results.append(judge_task(p.judged.get(task.id, task), outcome, p.expected[task.id], elapsed,
                                      Reruns(runner.probe_runner(), probe_expected=p.probe_expected.get(task.id),
                                             worlds=gate.worlds)))
        return results
    finally:
        runner.close()


def evaluate(reference: Sequence[TaskResult], null: Sequence[TaskResult], *, reused: bool,
             duration_s: float | None = None) -> SelfCheck:
    """The self-check record from both runs' results."""
    ref_bad = [r.task_id for r in reference if r.state != TaskState.PASS]
    null_good = [r.task_id for r in null if r.state == TaskState.PASS]
    problems = []
    if ref_bad:
        problems.append(f"reference model did not pass {', '.join(ref_bad)}")
    if null_good:
        problems.append(f"null model passed {', '.join(null_good)}")
    ok = not problems
    reason = ("reference 100%, null 0%" if ok else "; ".join(problems))
    return SelfCheck(enabled=True, ok=ok, reason=reason, duration_s=duration_s,
                     reference=SelfCheckReference(
                         passed=len(reference) - len(ref_bad), total=len(reference), not_passing=ref_bad,
                         reused_main_run=reused,
                         reasons={r.task_id: r.reason for r in reference if r.state != TaskState.PASS}),
                     null=SelfCheckNull(passed=len(null_good), total=len(null), passing=null_good))


def run_selfcheck(gate: GateHost, main_results: Sequence[TaskResult], interrupts: Interrupts) -> SelfCheck:
    """Run (or reuse) the reference run and the null run; raises ``Aborted`` on a signal."""
    started = time.monotonic()
    console = gate.console
    config = gate.p.config
    reused = config.llm.strip() == ProviderKind.REFERENCE and config.agent_mode != AgentMode.STATIC
    if reused:
        reference = list(main_results)
    else:
        console.line("self-check: reference model ...")
        reference = _run(gate, interrupts, "reference", llm=ProviderKind.REFERENCE, record=None,
                         agent_mode=AgentMode.EVOLVING,
                         max_refinements=None)
    console.line("self-check: null model ...")
    null = _run(gate, interrupts, "null", provider=NullProvider(), record=None, agent_mode=AgentMode.EVOLVING,
                max_refinements=0)
    record = evaluate(reference, null, reused=reused, duration_s=round(time.monotonic() - started, 3))
    console.line(f"self-check: {'ok' if record.ok else 'FAILED'} ({record.reason})")
    return record
