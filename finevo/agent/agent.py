"""The evolving agent: find a verified tool that fits, or have the model write one; verify it,
refine it, register it, run it, and return a typed :class:`~finevo.outcome.Outcome`.

Flow for a benchmark task (or a parsed free-text query)::

    retrieval   registry tools whose contract (indicator + output type + parameter names) fits
                -> re-verified with the task's own arguments -> run       tool_source "reused"
    synthesis   prompt -> LLM -> extract code
    policy .. metamorphic   (finevo.agent.verify), on failure:
    refinement  stage + error + code back to the model, at most ``max_refinements`` times
    registration            the verified tool (and every failed attempt, linked to its parent)
    execution   the tool with the task's arguments; an execution trace is written
                                                       tool_source "created" | "refined"

A :class:`~finevo.question.SecurityQuestion` goes through the same model, policy and sandbox: its code
is never trusted, never verified for correctness and never registered; the outcome says which
layer stopped it (``blocked_by``) and carries no value.

Modes: ``evolving`` (synthesis, refinement, persistence), ``static`` (registry only, never calls
the model: :class:`~finevo.errors.NoToolAvailable` when nothing fits), ``memory_only``
(synthesis and refinement into a private in-memory registry; nothing persists).

Errors are typed (:mod:`finevo.errors`): external trouble (LLM API, cassette miss, deadline)
ends in ``Outcome.error`` as an :class:`~finevo.errors.ExternalError`, the agent's own failures
as :class:`~finevo.errors.AgentFailure` subclasses. A policy violation on a normal task is final:
the rule that fired is never fed back to the model, which would teach it to evade the policy.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from finevo.agent.intent import question_for_query
from finevo.agent.ledger import Ledger, code_hash
from finevo.agent.prompts import (
    ToolRequest,
    refinement_messages,
    sanitise_error,
    security_messages,
    synthesis_messages,
)
from finevo.agent.verify import ToolContract, Verification, Verifier, policy_check, result_error
from finevo.errors import (
    AgentFailure,
    CodeExtractionError,
    DeadlineExceeded,
    FinevoError,
    InputError,
    LLMTimeoutError,
    ModelRefused,
    NoToolAvailable,
    PolicyViolation,
    ProviderNotConfigured,
    RefinementExhausted,
)
from finevo.llm.base import ChatReply, ChatRequest, LLMProvider
from finevo.normalize import ANSWER, normalize
from finevo.outcome import Attempt, AttemptStage, ErrorInfo, LLMUsage, Outcome
from finevo.question import Question, SecurityQuestion
from finevo.registry import Registry, RegistryError
from finevo.sandbox.api import ExecutionResult, Limits, Sandbox
from finevo.vocabulary import AgentMode, ToolSource, choices, words


def tool_contract(question: Question) -> ToolContract:
    """What the tool answering ``question`` must be: its entry, the arguments it binds, its output."""
    return ToolContract(entry=question.intent.indicator, args=dict(question.intent.args), output=question.output)


@dataclass(frozen=True)
class RunBounds:
    """How the agent's sandbox runs are bounded: their resource ``limits`` (the sandbox's defaults
    when None) and the ``clock`` their deadlines and timings are read on."""

    limits: Limits | None = None
    clock: Callable[[], float] = time.monotonic


@dataclass(frozen=True)
class VerifiedTool:
    """A tool ready to answer a task: its ``code``, the registry row it is stored as (None when
    never stored) and the verification it passed (None when none ran)."""

    code: str
    artifact: Any
    verification: Verification | None = None


@dataclass(frozen=True)
class LastFailure:
    """The last failed attempt: its reply or code, the stage it failed at, and why."""

    code: str
    stage: str
    error: AgentFailure


class Agent:
    """One agent: settings, an LLM provider, a sandbox, a registry and a mode."""

    def __init__(self, settings: Any, provider: LLMProvider | None, sandbox: Sandbox, registry: Any,
                 mode: str | None = None, *, bounds: RunBounds = RunBounds()) -> None:
        raw_mode = mode or getattr(settings, "agent_mode", AgentMode.EVOLVING)
        if raw_mode not in choices(AgentMode):
            raise InputError(f"unknown agent mode {raw_mode!r}: expected one of {words(AgentMode)}")
        mode = AgentMode(raw_mode)
        self.settings = settings
        self.provider = provider
        self.sandbox = sandbox
        self.mode = mode
        self.clock = bounds.clock
        self.max_refinements = int(getattr(settings, "max_refinements", 3))
        self.verifier = Verifier(sandbox, limits=bounds.limits, clock=bounds.clock)
        self._scratch: Path | None = None
        if mode is AgentMode.MEMORY_ONLY:
            self.registry = self._memory_registry()
        else:
            self.registry = registry
        self.ledger = Ledger(self.registry)

    # ------------------------------------------------------------------ lifecycle
    def _memory_registry(self) -> Any:
        self._scratch = Path(tempfile.mkdtemp(prefix="finevo-memory-"))
        return Registry("sqlite://", self._scratch / "tools")

    def close(self) -> None:
        """Drop a memory-only registry and its scratch files (a persistent registry stays open)."""
        if self._scratch is not None:
            close = getattr(self.registry, "close", None)
            if callable(close):
                close()
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None

    # ------------------------------------------------------------------ public
    def solve(self, question: Question | SecurityQuestion, deadline: float | None = None) -> Outcome:
        """Answer one question; never raises a :class:`FinevoError` other than :class:`InputError`.

        The agent takes a :class:`~finevo.question.Question` (``task.question()``), never the benchmark
        task itself: what a model may see is decided here, by type.
        """
        if isinstance(question, SecurityQuestion):
            return self._guard(question.task_id, lambda o: self._solve_security(question, o, deadline))
        if not isinstance(question, Question):
            raise TypeError(f"the agent answers a Question, not a {type(question).__name__} "
                            "(build it with task.question())")
        return self._guard(question.task_id, lambda o: self._solve(question, o, deadline))

    def solve_query(self, query: str, deadline: float | None = None) -> Outcome:
        """Answer a free-text query (raises :class:`InputError` when it cannot be parsed)."""
        return self.solve(question_for_query(query), deadline)

    def _guard(self, task_id: str, body: Callable[[Outcome], None]) -> Outcome:
        outcome = Outcome(task_id=task_id)
        started = self.clock()
        try:
            body(outcome)
        except InputError:
            raise
        except FinevoError as exc:
            outcome.error = exc
        finally:
            outcome.timings["total"] = self.clock() - started
        return outcome

    # ------------------------------------------------------------------ normal tasks
    def _solve(self, job: Question, outcome: Outcome, deadline: float | None) -> None:
        contract = tool_contract(job)
        outcome.stage = "retrieval"
        started = self.clock()
        if self._reuse(job, contract, outcome, deadline, started):
            return
        if self.mode is AgentMode.STATIC:
            raise NoToolAvailable(f"{job.task_id}: no verified tool in the registry fits "
                                  f"{contract.entry}({', '.join(contract.args)}) -> {contract.output.type} "
                                  "(static mode never writes tools)", indicator=contract.entry)
        self._execute(job, contract, self._synthesize(job, contract, outcome, deadline), outcome, deadline)

    def _reuse(self, job: Question, contract: ToolContract, outcome: Outcome, deadline: float | None,
               started: float) -> bool:
        candidates = self._find(contract)
        self._add_time(outcome, "retrieval", self.clock() - started)
        last_error: AgentFailure | None = None
        for artifact in candidates:
            try:
                code = self.registry.read_code(artifact)
            except RegistryError:
                continue  # its file went missing or was edited: not a tool to trust
            ver = self.verifier.verify(code, contract, deadline=deadline)
            self._merge_timings(outcome, ver)
            self.ledger.trace_verification(getattr(artifact, "id", None), job, ver)
            if not ver.ok:
                assert isinstance(ver.error, AgentFailure)
                last_error = ver.error
                if ver.stage in ("policy", "selftest") and self.mode is not AgentMode.STATIC:
                    # the stored tool itself is broken (not just unfit for these arguments)
                    self.registry.set_status(artifact, "failed")
                continue
            outcome.tool_source = ToolSource.REUSED
            self._describe_tool(outcome, artifact, code)
            outcome.tool_created_for = self.ledger.created_for(artifact)
            self._execute(job, contract, VerifiedTool(code, artifact, ver), outcome, deadline)
            return True
        if last_error is not None and self.mode is AgentMode.STATIC:
            raise last_error
        return False

    def _find(self, contract: ToolContract) -> list[Any]:
        """Verified tools whose contract fits, newest first (the verifier re-checks the signature)."""
        return list(self.registry.find(contract.entry, contract.output.type, list(contract.args)))

    def _synthesize(self, job: Question, contract: ToolContract, outcome: Outcome,
                    deadline: float | None) -> VerifiedTool:
        req = ToolRequest(job.query, job.category, contract.entry, contract.args, contract.output)
        messages = synthesis_messages(req)
        parent_hash: str | None = None
        parent_id: Any = None
        tool_ids: dict[int, Any] = {}  # attempt number -> the registry id of its code
        # what each failed attempt replied and what code it gave, by hash -> its attempt number
        replies: dict[str, int] = {}
        codes: dict[str, int] = {}
        failed = LastFailure("", "synthesis", CodeExtractionError("no attempt yet"))
        for number in range(1, self.max_refinements + 2):
            stage = "synthesis" if number == 1 else "refinement"
            outcome.stage = stage
            reply, call = self._complete(messages, job.task_id, number - 1, stage, outcome, deadline)
            repeat_of = self._repeat_of(reply, replies, codes)
            if repeat_of is not None:
                outcome.attempts.append(_repeated(outcome, number, repeat_of, parent_hash, call))
                self._stop_on_repeat(job, outcome, tool_ids, failed)
            replies[code_hash(reply.content)] = number
            try:
                code = self._extract(reply)
            except ModelRefused as exc:
                outcome.attempts.append(Attempt(number=number, stage="synthesis", ok=False, error=ErrorInfo.of(exc),
                                                parent_hash=parent_hash, usage=call))
                outcome.tool_source = ToolSource.REFUSED
                self.ledger.record_attempts(job, outcome, tool_ids)
                raise
            except CodeExtractionError as exc:
                outcome.attempts.append(Attempt(number=number, stage="synthesis", ok=False, error=ErrorInfo.of(exc),
                                                parent_hash=parent_hash, usage=call))
                failed = LastFailure(reply.content, "synthesis", exc)
            else:
                this_hash = code_hash(code)
                ver = self.verifier.verify(code, contract, deadline=deadline)
                self._merge_timings(outcome, ver)
                outcome.stage = ver.stage
                outcome.attempts.append(Attempt(number=number, stage=ver.stage, ok=ver.ok,
                                                error=ErrorInfo.of(ver.error), code_hash=this_hash,
                                                parent_hash=parent_hash, usage=call,
                                                stages=[stage.record() for stage in ver.stages], code=code))
                if ver.ok:
                    outcome.stage = "registration"
                    started = self.clock()
                    artifact = self.ledger.register(job, contract, code, parent_id, outcome, tool_ids)
                    self._add_time(outcome, "registration", self.clock() - started)
                    self.ledger.trace_verification(tool_ids[number], job, ver)
                    outcome.tool_source = ToolSource.REFINED if number > 1 else ToolSource.CREATED
                    self._describe_tool(outcome, artifact, code)
                    return VerifiedTool(code, artifact, ver)
                assert isinstance(ver.error, AgentFailure)
                if isinstance(ver.error, PolicyViolation):
                    outcome.tool_source = ToolSource.BLOCKED
                    outcome.tool_code = code
                    outcome.tool_hash = this_hash
                    outcome.blocked_by = _blocked_by(ver.error)
                    self.ledger.trace_verification(None, job, ver)  # never registered: kept by task only
                    self.ledger.record_attempts(job, outcome, tool_ids)
                    raise ver.error
                codes.setdefault(this_hash, number)
                parent_id = self.ledger.register_failed(job, contract, code, parent_id)
                tool_ids[number] = parent_id
                self.ledger.trace_verification(parent_id, job, ver)
                parent_hash = this_hash
                failed = LastFailure(code, ver.stage, ver.error)
                outcome.tool_code, outcome.tool_hash = code, this_hash
            if number > self.max_refinements:
                self.ledger.record_attempts(job, outcome, tool_ids)
                raise RefinementExhausted(
                    f"{job.task_id}: no tool passed verification after {number} attempt(s) "
                    f"({self.max_refinements} refinement(s)); last failure at {failed.stage}: "
                    f"{failed.error.message}",
                    attempts=number, last_stage=failed.stage, last_error=failed.error.to_dict())
            messages = refinement_messages(req, failed.code, failed.stage, _feedback(failed.error))
        raise AssertionError("unreachable")  # pragma: no cover

    @staticmethod
    def _repeat_of(reply: ChatReply, replies: Mapping[str, int], codes: Mapping[str, int]) -> int | None:
        """The earlier failed attempt this reply repeats (the same reply, or the same code in other
        words), or None. A repeat would fail exactly as before: tools are deterministic on the
        frozen snapshot, so it is neither verified again nor counted as a refinement."""
        if code_hash(reply.content) in replies:
            return replies[code_hash(reply.content)]
        try:
            code = Agent._extract(reply)
        except (CodeExtractionError, ModelRefused):
            return None
        return codes.get(code_hash(code))

    def _stop_on_repeat(self, job: Question, outcome: Outcome, tool_ids: dict[int, Any], failed: LastFailure) -> None:
        """Stop refining after the last attempt, the same reply again (:func:`_repeated`): the model (a
        prediction reused, a cassette reply, a model repeating itself) cannot change its answer."""
        repeat = outcome.attempts[-1]
        number, repeat_of = repeat.number, repeat.repeat_of
        outcome.stage = "refinement"
        self.ledger.record_attempts(job, outcome, tool_ids)
        distinct = number - 1 - sum(1 for a in outcome.attempts[:-1] if a.repeat_of is not None)
        raise RefinementExhausted(
            f"{job.task_id}: no tool passed verification after {distinct} distinct attempt(s) "
            f"({outcome.refinements} refinement(s)); attempt {number} was the same reply again (as attempt "
            f"{repeat_of}), so refining stopped; last failure at {failed.stage}: {failed.error.message}",
            attempts=number, distinct_attempts=distinct, stopped="same_reply", repeat_of=repeat_of,
            last_stage=failed.stage, last_error=failed.error.to_dict())

    def _execute(self, job: Question, contract: ToolContract, tool: VerifiedTool, outcome: Outcome,
                 deadline: float | None) -> None:
        """Run the tool with the task's arguments and write the execution trace.

        The contract stage of a verification that just passed already called this very code with
        these very arguments in the sandbox (and verified tools are deterministic), so that run is
        the execution: it is traced as such instead of being repeated.
        """
        outcome.stage = "execution"
        started = self.clock()
        result: ExecutionResult | None = None
        elapsed = 0.0
        verified = tool.verification
        try:
            if verified is not None and verified.ok and verified.result is not None and verified.result.ok:
                result = verified.result
                elapsed = result.duration_s
            else:
                result = self.verifier.run(tool.code, contract.entry, contract.args, stage="execution",
                                           deadline=deadline)
                elapsed = self.clock() - started
        finally:
            if result is None:
                elapsed = self.clock() - started
            self._add_time(outcome, "execution", self.clock() - started)
            self.ledger.trace_execution(tool.artifact, job, contract, result, elapsed)
        outcome.stdout, outcome.stderr = result.stdout, result.stderr
        if not result.ok:
            raise result_error(result, f"{contract.entry}({', '.join(f'{k}={v!r}' for k, v in contract.args.items())})")
        outcome.value = normalize(result.value, ANSWER)
        outcome.stage = "done"

    # ------------------------------------------------------------------ security tasks
    def _solve_security(self, question: SecurityQuestion, outcome: Outcome, deadline: float | None) -> None:
        outcome.tool_name = question.entry
        if self.mode is AgentMode.STATIC:
            outcome.blocked_by = "agent:static"
            raise NoToolAvailable(f"{question.task_id}: static mode runs registry tools only; "
                                  "nothing was written or run")
        outcome.stage = "synthesis"
        reply, call = self._complete(security_messages(question.query), question.task_id, 0, "synthesis", outcome,
                                     deadline)
        try:
            code = self._extract(reply)
        except ModelRefused:
            outcome.tool_source = ToolSource.REFUSED
            outcome.blocked_by = "refused"
            outcome.stage = "done"
            return
        outcome.tool_code, outcome.tool_hash = code, code_hash(code)
        outcome.attempts.append(Attempt(number=1, stage="policy", ok=False, code_hash=outcome.tool_hash, usage=call,
                                        code=code))
        outcome.stage = "policy"
        started = self.clock()
        violation = policy_check(code)
        self._add_time(outcome, "policy", self.clock() - started)
        if violation is not None:
            outcome.tool_source = ToolSource.BLOCKED
            outcome.blocked_by = _blocked_by(violation)
            outcome.stage = "done"
            return
        outcome.stage = "execution"
        started = self.clock()
        result = self.verifier.run(code, question.entry, {}, stage="execution", deadline=deadline)
        self._add_time(outcome, "execution", self.clock() - started)
        outcome.stdout, outcome.stderr = result.stdout, result.stderr
        outcome.attempts[-1].stage = "execution"
        if result.ok:
            outcome.tool_source = ToolSource.CREATED  # it ran to completion: nothing stopped it
            outcome.attempts[-1].ok = True
        else:
            outcome.tool_source = ToolSource.BLOCKED
            outcome.blocked_by = _sandbox_blocked_by(result)
        outcome.stage = "done"

    # ------------------------------------------------------------------ LLM
    def _complete(self, messages: tuple[dict[str, str], ...], task_id: str, attempt: int, stage: str,
                  outcome: Outcome, deadline: float | None) -> tuple[ChatReply, LLMUsage]:
        """The reply and this call's usage (also added to the task's total in ``outcome``)."""
        if self.provider is None:
            raise ProviderNotConfigured(f"{task_id}: no LLM provider configured (mode {self.mode})")
        timeout: float | None = None
        if deadline is not None:
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise DeadlineExceeded(f"{task_id}: task deadline passed before the LLM call ({stage})", stage=stage)
            # the whole call (retries and back-off included) may use the time left; each request
            # inside it is bounded by the client's own per-request timeout
            timeout = remaining
        request = ChatRequest(model=str(getattr(self.settings, "model", "")), messages=messages,
                              temperature=float(getattr(self.settings, "temperature", 0.0)),
                              task_id=task_id, attempt=attempt)
        started = self.clock()
        try:
            reply = self.provider.complete(request, timeout=timeout)
        except LLMTimeoutError as exc:
            self._count_call(outcome, None, self.clock() - started, stage)
            if deadline is not None and self.clock() >= deadline - 0.05:
                raise DeadlineExceeded(f"{task_id}: task deadline hit during the LLM call ({stage})",
                                       stage=stage, cause=exc.to_dict()) from exc
            raise
        except FinevoError:
            self._count_call(outcome, None, self.clock() - started, stage)
            raise
        call = self._count_call(outcome, reply, self.clock() - started, stage)
        if deadline is not None and self.clock() > deadline:
            raise DeadlineExceeded(f"{task_id}: task deadline passed during the LLM call ({stage})", stage=stage)
        return reply, call

    def _count_call(self, outcome: Outcome, reply: ChatReply | None, elapsed: float, stage: str) -> LLMUsage:
        # latency at microsecond resolution, as cassettes keep it: a replayed run reports what the
        # recorded run paid, to the byte
        usage = LLMUsage(calls=1, latency_s=round(elapsed, 6))
        if reply is not None:
            usage = LLMUsage(calls=max(1, reply.usage.calls), prompt_tokens=reply.usage.prompt_tokens,
                             completion_tokens=reply.usage.completion_tokens,
                             latency_s=round(reply.usage.latency_s or elapsed, 6))
        outcome.usage.add(usage)
        self._add_time(outcome, stage, elapsed)
        return usage

    @staticmethod
    def _extract(reply: ChatReply) -> str:
        from finevo.llm.extract import extract_code

        return extract_code(reply.content)

    # ------------------------------------------------------------------ bookkeeping
    @staticmethod
    def _describe_tool(outcome: Outcome, artifact: Any, code: str) -> None:
        outcome.tool_name = str(getattr(artifact, "name", None) or outcome.tool_name)
        version = getattr(artifact, "version", None)
        outcome.tool_version = str(version) if version is not None else None
        outcome.tool_hash = str(getattr(artifact, "content_hash", None) or code_hash(code))
        outcome.tool_code = code

    @staticmethod
    def _add_time(outcome: Outcome, stage: str, seconds: float) -> None:
        outcome.timings[stage] = outcome.timings.get(stage, 0.0) + seconds

    def _merge_timings(self, outcome: Outcome, ver: Verification) -> None:
        for stage, seconds in ver.timings().items():
            self._add_time(outcome, stage, seconds)


def _repeated(outcome: Outcome, number: int, repeat_of: int, parent_hash: str | None, call: LLMUsage) -> Attempt:
    """Attempt ``number``'s record as the same reply again as attempt ``repeat_of``: neither verified
    again nor counted as a refinement."""
    earlier = next(a for a in outcome.attempts if a.number == repeat_of)
    note = (f"the same reply again (as attempt {repeat_of}): not verified again, not counted as a "
            "refinement; refining stops because the reply cannot change")
    return Attempt(number=number, stage=earlier.stage, ok=False, error=earlier.error, code_hash=earlier.code_hash,
                   parent_hash=parent_hash, usage=call, stages=[AttemptStage(name="refinement", ok=False, note=note)],
                   repeat_of=repeat_of, code=earlier.code)


def _feedback(error: FinevoError) -> str:
    """Error text for the refinement prompt: the message and, for a crash, the traceback's tail."""
    text = error.message
    tb = error.details.get("traceback") if isinstance(error.details, Mapping) else None
    if tb:
        text += "\n\n" + sanitise_error(str(tb))
    problems = error.details.get("problems") if isinstance(error.details, Mapping) else None
    if problems:
        text += "\n" + "\n".join(f"- {p}" for p in problems[:10])
    return text


def _blocked_by(violation: PolicyViolation) -> str:
    layer = str(violation.details.get("layer") or "policy")
    rule = violation.details.get("rule")
    if layer == "policy":
        return f"policy:{rule or 'unknown'}"
    return f"sandbox:{layer}"


def _sandbox_blocked_by(result: ExecutionResult) -> str:
    """What stopped a run, in the words the security verdict reads: ``sandbox:<layer>`` only for a
    layer the sandbox named. An exception the tool raised is ``raised:<its class name>`` -- the
    tool picks that name (a class called ``seccomp`` or ``timeout``), so it never reads as a layer."""
    if result.layer == "policy":
        return f"policy:{result.rule or 'unknown'}"
    if result.layer:
        return f"sandbox:{result.layer}"
    if result.status == "exception":
        return f"raised:{result.error_type or 'exception'}"
    return f"sandbox:{result.status}"
