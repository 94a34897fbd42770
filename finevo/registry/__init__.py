"""The tool registry: SQLModel tables (tools and their code, traces, refinement attempts), versioned by Alembic."""

from finevo.registry.models import (
    STATUSES,
    ExecutionTrace,
    RefinementAttempt,
    ToolArtifact,
    ToolCode,
    ToolStatus,
    parse_version,
)
from finevo.registry.schema import RegistrySchemaError
from finevo.registry.signature import signature_fits, tool_signature
from finevo.registry.store import (
    Registry,
    RegistryError,
    RegistryUnavailable,
    ToolInterface,
    ToolRun,
    cap_output,
    content_hash,
    migrate_registry,
    safe_url,
)

__all__ = [
    "STATUSES", "ExecutionTrace", "RefinementAttempt", "Registry", "RegistryError", "RegistrySchemaError",
    "RegistryUnavailable", "ToolArtifact", "ToolCode", "ToolInterface", "ToolRun", "ToolStatus", "cap_output",
    "content_hash",
    "migrate_registry", "parse_version", "safe_url", "signature_fits", "tool_signature",
]
