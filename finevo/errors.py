"""The one error hierarchy of finevo.

The gate classifies a task from the *type* of its error, never from text:

* :class:`ExternalError` -- trouble outside the agent (LLM API, network, rate limit, timeout,
  cassette miss, task deadline). A task that ends with one is judged **error**: it says nothing
  about the agent's quality.
* :class:`AgentFailure` -- the agent's own failure (unparseable reply, bad code, code blocked by
  the policy on a normal task, crashed tool, wrong shape, refinements exhausted). Judged **fail**.
* :class:`InputError` -- a bad input file or flag. Never part of an outcome: the CLI turns it
  into one line and exit code 2.

Every error carries a short machine-readable ``code`` (stable, used in reports) and can be
turned into / rebuilt from a plain dict, so outcomes survive JSON round trips
(``events.jsonl`` -> ``finevo-verify report``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypedDict

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject


class ErrorDict(TypedDict):
    """:meth:`FinevoError.to_dict`: an error as written out (``details`` normalised to JSON)."""

    kind: str
    code: str
    type: str
    message: str
    details: JSONObject


class FinevoError(Exception):
    """Base of every error finevo raises on purpose."""

    code: ClassVar[str] = "finevo_error"
    kind: ClassVar[str] = "internal"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_dict(self) -> ErrorDict:
        # Imported here: the normaliser needs numpy and pandas, and `--help` or a usage error must
        # not load them (an error is raised long before any record is written).
        from finevo.normalize import RECORD, normalize

        return {"kind": self.kind, "code": self.code, "type": type(self).__name__,
                "message": self.message, "details": normalize(self.details, RECORD)}

    def __str__(self) -> str:  # pragma: no cover - trivial
        return self.message


# --------------------------------------------------------------------------- input / usage
class InputError(FinevoError):
    """A malformed input file, a bad flag value, an unreadable snapshot: exit code 2."""

    code = "input_error"
    kind = "input"


# --------------------------------------------------------------------------- external -> error
class ExternalError(FinevoError):
    """Trouble outside the agent; the task is judged *error*, not *fail*."""

    code = "external_error"
    kind = "external"


class LLMAPIError(ExternalError):
    code = "llm_api_error"


class LLMRateLimitError(LLMAPIError):
    code = "llm_rate_limited"


class LLMTimeoutError(LLMAPIError):
    code = "llm_timeout"


class LLMConnectionError(LLMAPIError):
    code = "llm_connection_error"


class LLMAuthError(LLMAPIError):
    code = "llm_auth_error"


class CassetteMissError(ExternalError):
    """A replay provider was asked something its cassette does not hold."""

    code = "cassette_miss"


class PredictionMissingError(ExternalError):
    """A predictions file holds no output for this task / attempt."""

    code = "prediction_missing"


class NetworkError(ExternalError):
    code = "network_error"


class DeadlineExceeded(ExternalError):
    """The task's wall-clock deadline passed; ``details['stage']`` says where it hit."""

    code = "deadline_exceeded"


class ProviderNotConfigured(ExternalError):
    """No LLM key and no explicit provider: the agent refuses to guess."""

    code = "provider_not_configured"


# --------------------------------------------------------------------------- agent -> fail
class AgentFailure(FinevoError):
    """The agent's own failure; the task is judged *fail*."""

    code = "agent_failure"
    kind = "agent"


class CodeExtractionError(AgentFailure):
    """The LLM reply held no usable Python code (garbage, prose only, truncated)."""

    code = "no_code_in_reply"


class ModelRefused(AgentFailure):
    """The model declined to write the tool."""

    code = "model_refused"


class PolicyViolation(AgentFailure):
    """Generated code rejected by the static policy (rule, line, column in details)."""

    code = "policy_violation"


class ToolCrashed(AgentFailure):
    """The tool raised, was killed by a limit, or timed out inside the sandbox."""

    code = "tool_crashed"


class ContractViolation(AgentFailure):
    """The tool's return value does not fit the task's output contract."""

    code = "contract_violation"


class VerificationFailed(AgentFailure):
    """A verification stage (self-test, metamorphic check, ...) failed."""

    code = "verification_failed"


class RefinementExhausted(AgentFailure):
    """All refinement attempts were used and the tool still fails verification."""

    code = "refinement_exhausted"


class NoToolAvailable(AgentFailure):
    """Static mode: the registry holds no tool whose contract fits the task."""

    code = "no_tool_available"


# --------------------------------------------------------------------------- (de)serialisation
_ALL: dict[str, type[FinevoError]] = {}


def _collect(cls: type[FinevoError]) -> None:
    _ALL[cls.__name__] = cls
    for sub in cls.__subclasses__():
        _collect(sub)


def error_from_dict(data: Mapping[str, Any]) -> FinevoError:
    """Rebuild a typed error from :meth:`FinevoError.to_dict` output (unknown types -> base by kind)."""
    if not _ALL:
        _collect(FinevoError)
    cls = _ALL.get(str(data.get("type")))
    if cls is None:
        cls = {"external": ExternalError, "agent": AgentFailure, "input": InputError}.get(
            str(data.get("kind")), FinevoError)
    return cls(str(data.get("message", "")), **dict(data.get("details") or {}))



class SandboxUnavailable(ExternalError):
    """The sandbox itself could not run a tool (worker failed to start, closed sandbox)."""

    code = "sandbox_unavailable"
