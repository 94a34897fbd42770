"""The tool registry: SQLModel tables (tools, traces, refinement attempts) and code files on disk."""

from finevo.registry.models import (
    STATUSES,
    ExecutionTrace,
    RefinementAttempt,
    ToolArtifact,
    ToolStatus,
    parse_version,
)
from finevo.registry.signature import signature_fits, tool_signature
from finevo.registry.store import ReconcileReport, Registry, RegistryError, cap_output, content_hash

__all__ = [
    "STATUSES", "ExecutionTrace", "ReconcileReport", "RefinementAttempt", "Registry", "RegistryError",
    "ToolArtifact", "ToolStatus", "cap_output", "content_hash", "parse_version", "signature_fits",
    "tool_signature",
]
