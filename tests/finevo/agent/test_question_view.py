"""The agent sees a Question, never the benchmark task: the oracle, conventions, tolerance and probes
cannot reach a prompt, whatever they hold."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from finevo.agent.agent import Agent
from finevo.llm.base import ChatReply, ChatRequest
from finevo.outcome import LLMUsage
from finevo.paths import benchmarks_dir
from finevo.question import Question, SecurityQuestion
from finevo.settings import Settings
from runner.inputs.tasks import (
    Convention,
    OracleSpec,
    Probe,
    SecurityTask,
    Task,
    Tolerance,
    load_security_tasks,
    load_tasks,
)
from tests.finevo.agent.doubles import InlineSandbox

TASKS = load_tasks(benchmarks_dir() / "tasks.jsonl")
SECURITY = load_security_tasks(benchmarks_dir() / "security_tasks.jsonl")

#: Code that never fits (wrong function name): every attempt fails verification, so the agent also
#: writes its refinement prompts, which carry the verifier's feedback.
UNFIT = "```python\ndef unrelated_function() -> float:\n    return 1.0\n```\n"


class RecordingProvider:
    """An LLM that writes down every request and answers with code that never fits."""

    name = "recording"

    def __init__(self, reply: str = UNFIT) -> None:
        self.reply = reply
        self.requests: list[ChatRequest] = []

    def complete(self, request: ChatRequest, *, timeout: float | None = None) -> ChatReply:
        self.requests.append(request)
        return ChatReply(content=self.reply, usage=LLMUsage(calls=1), model="recording", finish_reason="stop")

    def prompt_text(self) -> str:
        return "\n".join(m["content"] for r in self.requests for m in r.messages)


def _agent(provider: RecordingProvider, max_refinements: int = 1) -> Agent:
    settings = Settings(model="m", max_refinements=max_refinements, agent_mode="memory_only")
    return Agent(settings, provider, InlineSandbox(), None, "memory_only")


def _planted(task: Task) -> tuple[Task, list[str]]:
    """``task`` with a unique marker in every part the agent must not see."""
    marks = {name: f"LEAK{name.upper()}{task.id.replace('_', '')}" for name in
             ("oraclename", "oracleparam", "convname", "convparam", "convreason", "probearg", "probeoracle",
              "probereason")}
    oracle = OracleSpec(name=marks["oraclename"], params={**task.oracle.params, "leak": marks["oracleparam"]})
    convention = Convention(name=marks["convname"], params={"leak": marks["convparam"]}, reason=marks["convreason"])
    probe = Probe(args={"symbol": marks["probearg"]}, oracle_params={"leak": marks["probeoracle"]},
                  reason=marks["probereason"])
    # Copied, not validated: a task file cannot hold an unknown oracle or parameter (the loader checks them
    # against the oracle's models), but whatever a task holds must stay out of every prompt.
    planted = task.model_copy(update={"oracle": oracle, "conventions": (convention, *task.conventions[1:]),
                                      "tolerance": Tolerance(rel=0.0987654321, abs=0.0123456789),
                                      "probes": (probe,)})
    return planted, [*marks.values(), "0.0987654321", "0.0123456789"]


def test_a_question_holds_only_what_a_model_may_see() -> None:
    assert [f.name for f in dataclasses.fields(Question)] == ["task_id", "category", "query", "intent", "output"]
    assert [f.name for f in dataclasses.fields(SecurityQuestion)] == ["task_id", "query", "entry"]
    for task in TASKS:
        q = task.question()
        assert (q.task_id, q.category, q.query, q.intent, q.output) == (
            task.id, task.category, task.query, task.intent, task.output)
    for stask in SECURITY:
        sq = stask.question()
        assert (sq.task_id, sq.query, sq.entry) == (stask.id, stask.query, stask.entry)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_no_oracle_convention_tolerance_or_probe_value_reaches_a_prompt(task: Task) -> None:
    planted, secrets = _planted(task)
    assert all(s in planted.model_dump_json() for s in secrets)  # each marker is in the task itself
    provider = RecordingProvider()
    agent = _agent(provider)
    try:
        outcome = agent.solve(planted.question())
    finally:
        agent.close()
    assert len(provider.requests) == 2, "synthesis and one refinement prompt were written"
    assert outcome.error is not None  # the unfit code never passed
    text = provider.prompt_text()
    assert task.query in text  # the prompts are real: the question is in them
    leaked = [s for s in secrets if s in text]
    assert leaked == [], f"{task.id}: {leaked} reached a prompt"


@pytest.mark.parametrize("stask", SECURITY[:5], ids=lambda t: t.id)
def test_a_security_prompt_holds_neither_the_attack_label_nor_the_compliant_code(stask: SecurityTask) -> None:
    planted = stask.model_copy(update={"attack": f"LEAKATTACK{stask.id}",
                                       "malicious_code": f"LEAKCODE{stask.id} = 1\n"})
    provider = RecordingProvider(reply="I can't help with that.")
    agent = _agent(provider)
    try:
        agent.solve(planted.question())
    finally:
        agent.close()
    text = provider.prompt_text()
    assert provider.requests and stask.query in text
    assert f"LEAKATTACK{stask.id}" not in text and f"LEAKCODE{stask.id}" not in text


@pytest.mark.parametrize("task", [TASKS[0], SECURITY[0]], ids=lambda t: t.id)
def test_the_agent_refuses_a_benchmark_task_itself(task: Any) -> None:
    agent = _agent(RecordingProvider())
    try:
        with pytest.raises(TypeError, match=r"task\.question\(\)"):
            agent.solve(task)
    finally:
        agent.close()
