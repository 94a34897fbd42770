"""The registry's tables (SQLModel): tools, their code, their execution traces and refinement lineage.

The schema is versioned by Alembic (``finevo/registry/migrations``): a change to these classes needs
a new revision there (a test compares the two).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import JSON, Column, ForeignKey, Text, UniqueConstraint
from sqlmodel import Field, SQLModel

from finevo.jsontypes import JSONObject

ToolStatus = Literal["provisional", "verified", "failed", "deprecated"]
STATUSES: tuple[str, ...] = ("provisional", "verified", "failed", "deprecated")
#: Allowed status changes; anything else is a programming error.
TRANSITIONS: dict[str, frozenset[str]] = {
    "provisional": frozenset({"verified", "failed", "deprecated"}),
    "verified": frozenset({"failed", "deprecated"}),
    # the same code can verify later (e.g. it failed only for another task's arguments)
    "failed": frozenset({"verified", "deprecated"}),
    "deprecated": frozenset(),
}

_VERSION = re.compile(r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$")


def parse_version(version: str) -> tuple[int, int, int]:
    """``"1.10.0"`` -> ``(1, 10, 0)``; versions compare as these tuples (1.10.0 > 1.9.0)."""
    match = _VERSION.match(version)
    if match is None:
        raise ValueError(f"not a semantic version MAJOR.MINOR.PATCH: {version!r}")
    return int(match.group(1)), int(match.group(2)), int(match.group(3))


def utcnow() -> datetime:
    return datetime.now(UTC)


class ToolCode(SQLModel, table=True):
    """A tool's source, stored once per content: its SHA-256 (hex) is its key."""

    __tablename__ = "tool_code"

    content_hash: str = Field(primary_key=True, max_length=64)
    code: str = Field(sa_column=Column(Text, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class ToolArtifact(SQLModel, table=True):
    __tablename__ = "tool_artifact"
    __table_args__ = (
        UniqueConstraint("name", "version", name="uq_tool_name_version"),
        UniqueConstraint("name", "content_hash", name="uq_tool_name_hash"),
    )

    id: int | None = Field(default=None, primary_key=True)
    name: str = Field(index=True)
    version: str
    #: The version's numbers, so SQL can order numerically.
    major: int = 1
    minor: int = 0
    patch: int = 0
    #: The tool's code: a row of ``tool_code`` (the foreign key: a tool never points at missing code).
    content_hash: str = Field(index=True, sa_column_args=[
        ForeignKey("tool_code.content_hash", name="fk_tool_artifact_code")])
    category: str
    indicator: str = Field(index=True)
    output_type: str
    #: ``{"function": name, "params": [{"name", "annotation", "default", "required", "kind"}], "returns"}``
    signature: JSONObject = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    status: str = Field(default="provisional", index=True)
    parent_id: int | None = Field(default=None, foreign_key="tool_artifact.id")
    created_at: datetime = Field(default_factory=utcnow)
    description: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))

    @property
    def version_tuple(self) -> tuple[int, int, int]:
        return self.major, self.minor, self.patch

    @property
    def code_path(self) -> str:
        """The file name of the tool's code where it is written out (``name_vX.Y.Z_hash8.py``)."""
        return f"{self.name}_v{self.version}_{self.content_hash[:8]}.py"

    @property
    def hash8(self) -> str:
        return self.content_hash[:8]

    @property
    def function_name(self) -> str | None:
        return (self.signature or {}).get("function")

    @property
    def param_names(self) -> list[str]:
        return [p["name"] for p in (self.signature or {}).get("params", [])]


class ExecutionTrace(SQLModel, table=True):
    __tablename__ = "execution_trace"

    id: int | None = Field(default=None, primary_key=True)
    tool_id: int | None = Field(default=None, foreign_key="tool_artifact.id", index=True)
    task_id: str | None = Field(default=None, index=True)
    arguments: JSONObject = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    result: Any = Field(default=None, sa_column=Column(JSON, nullable=True))
    #: The stage this run belonged to: ``selftest``, ``contract``, ``metamorphic``, ``execution`` ...
    stage: str
    duration_s: float = 0.0
    #: The sandbox status: ``ok`` | ``exception`` | ``blocked`` | ``timeout`` | ``killed`` | ``crashed``.
    exit_status: str
    error: JSONObject | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    stdout: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    stderr: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    created_at: datetime = Field(default_factory=utcnow)


class RefinementAttempt(SQLModel, table=True):
    """One synthesis (attempt 0) or refinement attempt of a task's tool, with its parent."""

    __tablename__ = "refinement_attempt"

    id: int | None = Field(default=None, primary_key=True)
    task_id: str | None = Field(default=None, index=True)
    tool_id: int | None = Field(default=None, foreign_key="tool_artifact.id", index=True)
    attempt: int
    code_hash: str | None = None
    parent_hash: str | None = None
    #: The stage the attempt reached (the failing one when ``ok`` is false).
    stage: str
    ok: bool = False
    error: JSONObject | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    created_at: datetime = Field(default_factory=utcnow)
