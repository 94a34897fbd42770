"""Tool code moves into the database: ``tool_code`` (content-addressed by SHA-256), referenced by a
foreign key from ``tool_artifact.content_hash``; ``tool_artifact.code_path`` goes (the file name is
derived from name, version and hash).

The upgrade reads each tool's code file from the registry's code directory (passed by
``finevo registry migrate``) and checks it against the row's hash. A row whose file is missing or
altered stops the upgrade (nothing is changed) unless ``--drop-missing`` asks to drop such rows,
as release 0.1.0 did when it opened a registry.

Revision ID: 0002_code_in_database
Revises: 0001_release_0_1_0
Create Date: 2026-11-26
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0002_code_in_database"
down_revision = "0001_release_0_1_0"
branch_labels = None
depends_on = None

_TOOLS = sa.table("tool_artifact", sa.column("id", sa.Integer()), sa.column("name", sa.String()),
                  sa.column("version", sa.String()), sa.column("content_hash", sa.String()),
                  sa.column("code_path", sa.String()), sa.column("parent_id", sa.Integer()))
_CODE = sa.table("tool_code", sa.column("content_hash", sa.String()), sa.column("code", sa.Text()),
                 sa.column("created_at", sa.DateTime(timezone=True)))


def _attributes() -> dict[str, Any]:
    attributes: dict[str, Any] = op.get_context().config.attributes  # type: ignore[union-attr]
    return attributes


def _read(code_dir: Path | None, name: str, digest: str) -> str | None:
    if code_dir is None or "/" in name or name.startswith("."):
        return None
    try:
        code = (code_dir / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return code if hashlib.sha256(code.encode("utf-8")).hexdigest() == digest else None


def upgrade() -> None:
    from finevo.registry.schema import RegistrySchemaError

    op.create_table(
        "tool_code",
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("code", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("content_hash"),
    )
    bind = op.get_bind()
    attributes = _attributes()
    code_dir = Path(attributes["code_dir"]) if attributes.get("code_dir") else None
    rows = bind.execute(sa.select(_TOOLS.c.id, _TOOLS.c.name, _TOOLS.c.version, _TOOLS.c.content_hash,
                                  _TOOLS.c.code_path).order_by(_TOOLS.c.id)).all()
    codes: dict[str, str] = {}
    missing = []
    for row in rows:
        code = _read(code_dir, row.code_path, row.content_hash)
        if code is None:
            missing.append(row)
        else:
            codes[row.content_hash] = code
    if missing and not attributes.get("drop_missing"):
        first = missing[0]
        raise RegistrySchemaError(
            f"{len(missing)} tool(s) have no intact code file in {code_dir} (first: {first.name} v{first.version}, "
            f"{first.code_path}): pass the registry's directory (--registry-dir DIR, its code is in DIR/tools), "
            "or --drop-missing to drop those tools; nothing was changed")
    if missing:
        gone = [r.id for r in missing]
        for table in ("execution_trace", "refinement_attempt"):
            ref = sa.table(table, sa.column("tool_id", sa.Integer()))
            bind.execute(ref.update().where(ref.c.tool_id.in_(gone)).values(tool_id=None))
        bind.execute(_TOOLS.update().where(_TOOLS.c.parent_id.in_(gone)).values(parent_id=None))
        bind.execute(_TOOLS.delete().where(_TOOLS.c.id.in_(gone)))
        attributes.setdefault("dropped", []).extend(f"{r.name} v{r.version}" for r in missing)
    now = datetime.now(UTC)
    if codes:
        bind.execute(_CODE.insert(), [{"content_hash": digest, "code": code, "created_at": now}
                                      for digest, code in sorted(codes.items())])
    with op.batch_alter_table("tool_artifact") as batch:
        batch.drop_column("code_path")
        batch.create_foreign_key("fk_tool_artifact_code", "tool_code", ["content_hash"], ["content_hash"])


def downgrade() -> None:
    """Back to code files: each tool's code is written to the code directory, then ``tool_code`` goes."""
    from finevo.fsutil import atomic_write
    from finevo.registry.schema import RegistrySchemaError

    bind = op.get_bind()
    code_dir = _attributes().get("code_dir")
    if code_dir is None:
        raise RegistrySchemaError("a downgrade writes the tools' code files: it needs the code directory")
    with op.batch_alter_table("tool_artifact") as batch:
        batch.drop_constraint("fk_tool_artifact_code", type_="foreignkey")
        batch.add_column(sa.Column("code_path", sa.String(), nullable=False, server_default=""))
    rows = bind.execute(sa.select(_TOOLS.c.id, _TOOLS.c.name, _TOOLS.c.version, _CODE.c.content_hash, _CODE.c.code)
                        .join(_CODE, _CODE.c.content_hash == _TOOLS.c.content_hash)).all()
    Path(code_dir).mkdir(parents=True, exist_ok=True)
    for row in rows:
        filename = f"{row.name}_v{row.version}_{row.content_hash[:8]}.py"
        atomic_write(Path(code_dir) / filename, row.code, prefix=".tmp-", suffix=".py")
        bind.execute(_TOOLS.update().where(_TOOLS.c.id == row.id).values(code_path=filename))
    with op.batch_alter_table("tool_artifact") as batch:
        batch.alter_column("code_path", server_default=None)
    op.drop_table("tool_code")
