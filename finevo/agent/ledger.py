"""What the agent writes into its registry: tools (verified, and each failed attempt's code linked
to its parent), one record per attempt, and an execution trace per sandbox run; and what it reads
back about a stored tool's origin.

The :class:`~finevo.agent.agent.Agent` decides; the :class:`Ledger` keeps the books.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from finevo.agent.prompts import sanitise_error
from finevo.agent.verify import SandboxRun, ToolContract, Verification
from finevo.jsontypes import JSONObject
from finevo.outcome import Outcome
from finevo.question import Question
from finevo.registry import ToolInterface, ToolRun
from finevo.sandbox.api import ExecutionResult


def code_hash(code: str) -> str:
    """The SHA-256 of a tool's code (how attempts, registry rows and outcomes name it)."""
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


class Ledger:
    """The agent's registry bookkeeping (``registry``: a :class:`~finevo.registry.Registry` or one
    that answers the same calls)."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry

    def register(self, job: Question, contract: ToolContract, code: str, parent_id: Any, outcome: Outcome,
                 tool_ids: dict[int, Any]) -> Any:
        """Store the verified tool (linked to its last failed attempt) and every attempt's record,
        each linked to the stored code it produced (``tool_ids`` gains this attempt's id)."""
        interface = ToolInterface(contract.entry, contract.output.type, category=job.category, description=job.query,
                                  signature=_signature(code, contract.entry))
        artifact = self.registry.register(contract.entry, code, interface, parent_id=parent_id, status="verified")
        tool_id = getattr(artifact, "id", None)
        final = code_hash(code)
        for attempt in outcome.attempts:
            if attempt.code_hash == final:
                tool_ids[attempt.number] = tool_id
        self.record_attempts(job, outcome, tool_ids)
        return artifact

    def register_failed(self, job: Question, contract: ToolContract, code: str, parent_id: Any) -> Any:
        """Keep a failed attempt's code (status ``failed``), linked to its parent; returns its id."""
        interface = ToolInterface(contract.entry, contract.output.type, category=job.category, description=job.query,
                                  signature=_signature(code, contract.entry))
        artifact = self.registry.register(contract.entry, code, interface, parent_id=parent_id, status="failed")
        return getattr(artifact, "id", None)

    def record_attempts(self, job: Question, outcome: Outcome, tool_ids: Mapping[int, Any]) -> None:
        """One record per attempt, linked to the stored tool its code became (none for a reply
        without code, or for blocked code, which is never stored)."""
        for attempt in outcome.attempts:
            self.registry.record_attempt(job.task_id, attempt, tool_id=tool_ids.get(attempt.number))

    def trace_verification(self, tool_id: Any, job: Question, ver: Verification) -> None:
        """An execution trace for every sandbox run the verification made (self-test, contract,
        metamorphic), with its stage. The contract run of a passed verification is the task's
        execution (see :meth:`finevo.agent.agent.Agent._execute`), which writes its trace as such."""
        for run in ver.runs:
            if ver.ok and run.result is ver.result:
                continue
            self.write_trace(tool_id, job.task_id, run)

    def trace_execution(self, artifact: Any, job: Question, contract: ToolContract,
                        result: ExecutionResult | None, elapsed: float) -> None:
        """The trace of the task's execution by a stored tool (none without one)."""
        if artifact is None:
            return
        self.write_trace(getattr(artifact, "id", None), job.task_id,
                         SandboxRun("execution", dict(contract.args), result), elapsed)

    def write_trace(self, tool_id: Any, task_id: str, run: SandboxRun, elapsed: float | None = None) -> None:
        result = run.result
        error: JSONObject | None = None
        if result is None:
            error = {"message": "interrupted before the tool returned"}
        elif not result.ok:
            error = {"status": result.status, "error_type": result.error_type,
                     "message": sanitise_error(result.error_message or ""), "layer": result.layer}
            if result.traceback:
                error["traceback"] = sanitise_error(result.traceback)
        self.registry.record_trace(tool_id, task_id, ToolRun(
            stage=run.stage, arguments=dict(run.args or {}),
            result=result.value if result is not None and result.ok else None,
            duration_s=elapsed if elapsed is not None else (result.duration_s if result is not None else 0.0),
            exit_status=result.status if result is not None else "interrupted",
            stdout=result.stdout if result else "", stderr=result.stderr if result else "",
            error=error))  # the registry caps them, with a marker saying how much was cut

    def created_for(self, artifact: Any) -> str | None:
        """The task whose attempt first produced ``artifact`` (None when the registry cannot say)."""
        tool_id = getattr(artifact, "id", None)
        attempts = getattr(self.registry, "attempts", None)
        if tool_id is None or attempts is None:
            return None
        try:
            rows = attempts(tool_id=tool_id)
        except Exception:  # a reason's detail: never worth failing the task over
            return None
        return next((str(row.task_id) for row in rows if getattr(row, "task_id", None)), None)


def _signature(code: str, entry: str) -> JSONObject:
    """The registry's signature record for ``entry`` ({} when the code has no such function)."""
    from finevo.registry.signature import tool_signature

    try:
        return dict(tool_signature(code, entry))
    except ValueError:
        return {}
