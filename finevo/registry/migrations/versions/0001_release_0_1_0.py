"""The schema of release 0.1.0 (before migrations existed): tools, traces, refinement attempts.

Tool code lived in files beside the database (``tool_artifact.code_path``). A registry made by
0.1.0 has no ``alembic_version`` table: ``finevo registry migrate`` recognises its three tables,
stamps it with this revision and upgrades it from here.

Revision ID: 0001_release_0_1_0
Revises:
Create Date: 2026-11-26
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001_release_0_1_0"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_artifact",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("version", sa.String(), nullable=False),
        sa.Column("major", sa.Integer(), nullable=False),
        sa.Column("minor", sa.Integer(), nullable=False),
        sa.Column("patch", sa.Integer(), nullable=False),
        sa.Column("content_hash", sa.String(), nullable=False),
        sa.Column("code_path", sa.String(), nullable=False),
        sa.Column("category", sa.String(), nullable=False),
        sa.Column("indicator", sa.String(), nullable=False),
        sa.Column("output_type", sa.String(), nullable=False),
        sa.Column("signature", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["parent_id"], ["tool_artifact.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name", "version", name="uq_tool_name_version"),
        sa.UniqueConstraint("name", "content_hash", name="uq_tool_name_hash"),
    )
    for column in ("name", "content_hash", "indicator", "status"):
        op.create_index(f"ix_tool_artifact_{column}", "tool_artifact", [column])
    op.create_table(
        "execution_trace",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("tool_id", sa.Integer(), nullable=True),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("arguments", sa.JSON(), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("stage", sa.String(), nullable=False),
        sa.Column("duration_s", sa.Float(), nullable=False),
        sa.Column("exit_status", sa.String(), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("stdout", sa.Text(), nullable=False),
        sa.Column("stderr", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tool_id"], ["tool_artifact.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_execution_trace_task_id", "execution_trace", ["task_id"])
    op.create_index("ix_execution_trace_tool_id", "execution_trace", ["tool_id"])
    op.create_table(
        "refinement_attempt",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.String(), nullable=True),
        sa.Column("tool_id", sa.Integer(), nullable=True),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("code_hash", sa.String(), nullable=True),
        sa.Column("parent_hash", sa.String(), nullable=True),
        sa.Column("stage", sa.String(), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("error", sa.JSON(), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["tool_id"], ["tool_artifact.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_refinement_attempt_task_id", "refinement_attempt", ["task_id"])
    op.create_index("ix_refinement_attempt_tool_id", "refinement_attempt", ["tool_id"])


def downgrade() -> None:
    op.drop_table("refinement_attempt")
    op.drop_table("execution_trace")
    op.drop_table("tool_artifact")
