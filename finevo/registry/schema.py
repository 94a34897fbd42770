"""The registry's schema version: what a database holds, creating a fresh one, and migrating an old one.

Opening a registry never alters an existing schema. It reads the database's state first:

* ``empty``   -- no tables at all: the current schema is created (under a lock, so concurrent
  openers create it once) and stamped with the head revision;
* ``current`` -- stamped with this release's head revision: used as is;
* ``old``     -- an older revision, or release 0.1.0's three tables without a stamp: refused with
  one line naming ``finevo registry migrate``;
* ``newer``   -- the registry's tables stamped with a revision this release does not know (written
  by a newer release): refused;
* ``foreign`` -- tables that are not a registry's (a database of another application): refused,
  nothing is created next to them.

Migrations (Alembic, ``finevo/registry/migrations``) run only through :func:`migrate`, in one
transaction with the schema lock held: a killed migration leaves the old schema intact (PostgreSQL
and SQLite both have transactional DDL).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, MetaData, Table, inspect, text
from sqlalchemy.engine import Engine

from finevo.errors import InputError
from finevo.registry.models import ExecutionTrace, RefinementAttempt, ToolArtifact, ToolCode

MIGRATIONS_DIR = Path(__file__).resolve().parent / "migrations"
#: Release 0.1.0's tables; a database holding exactly these without a stamp is a 0.1.0 registry.
LEGACY_TABLES = frozenset({"tool_artifact", "execution_trace", "refinement_attempt"})
VERSION_TABLE = "alembic_version"
#: The PostgreSQL advisory lock taken around schema creation and migration.
SCHEMA_LOCK_KEY = 0x66696E65766F  # "finevo"
MIGRATE_HINT = "finevo registry migrate"

StateKind = Literal["empty", "current", "old", "newer", "foreign"]


class RegistrySchemaError(InputError):
    """The database is not a registry this release can use as it is (old, newer, another application's)."""

    code = "registry_schema"


def tables() -> list[Table]:
    # sqlmodel declares no __table__ on table classes (SQLAlchemy adds it when the class is built)
    return [m.__table__ for m in (ToolCode, ToolArtifact, ExecutionTrace, RefinementAttempt)]  # type: ignore[union-attr]


@functools.cache
def target_metadata() -> MetaData:
    """The registry's tables alone (SQLModel's shared metadata may hold other applications' tables)."""
    metadata = MetaData()
    for table in tables():
        table.to_metadata(metadata)
    return metadata


@functools.cache
def _script() -> Any:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(MIGRATIONS_DIR))


def head_revision() -> str:
    return str(_script().get_current_head())


def base_revision() -> str:
    return str(_script().get_base())


def known_revisions() -> list[str]:
    """Every revision of this release, oldest first."""
    return [str(r.revision) for r in reversed(list(_script().walk_revisions()))]


@dataclass(frozen=True)
class SchemaState:
    kind: StateKind
    #: The stamped revision; for an unstamped 0.1.0 registry, the base revision (``stamped`` False).
    revision: str | None
    stamped: bool = True

    @property
    def label(self) -> str:
        if self.kind == "empty":
            return "empty database"
        if not self.stamped:
            return f"{self.revision} (release 0.1.0, unversioned)"
        return str(self.revision)


def read_state(conn: Connection) -> SchemaState:
    names = set(inspect(conn).get_table_names())
    if not names:
        return SchemaState("empty", None)
    if VERSION_TABLE in names:
        revisions = [str(r) for r in conn.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars()]
        revision = revisions[0] if len(revisions) == 1 else None
        if revision == head_revision():
            return SchemaState("current", revision)
        if revision in known_revisions():
            return SchemaState("old", revision)
        if "tool_artifact" in names and revision is not None:
            return SchemaState("newer", revision)
        return SchemaState("foreign", revision)
    if names >= LEGACY_TABLES:
        return SchemaState("old", base_revision(), stamped=False)
    return SchemaState("foreign", None)


def refusal(state: SchemaState, where: str) -> RegistrySchemaError | None:
    """The one-line error for a state a registry cannot be opened in (None when it can)."""
    if state.kind in ("empty", "current"):
        return None
    if state.kind == "old":
        return RegistrySchemaError(
            f"the registry at {where} has an older schema ({state.label}; this release needs {head_revision()}): "
            f"run `{MIGRATE_HINT}` to upgrade it")
    if state.kind == "newer":
        return RegistrySchemaError(
            f"the registry at {where} has schema revision {state.revision}, newer than this release knows "
            f"(its newest is {head_revision()}): use a newer finevo; nothing was changed")
    return RegistrySchemaError(
        f"the database at {where} holds tables that are not a finevo registry (another application's "
        "database?): point FINEVO_REGISTRY_URL / --registry-url at an empty database; nothing was changed")


@contextmanager
def schema_lock(engine: Engine) -> Iterator[Connection]:
    """One transaction holding the schema lock: PostgreSQL's advisory lock, SQLite's write lock."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            conn = conn.execution_options(finevo_sqlite_begin="IMMEDIATE")
        with conn.begin():
            if engine.dialect.name == "postgresql":
                conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SCHEMA_LOCK_KEY})
            yield conn


def _stamp(conn: Connection, revision: str) -> None:
    from alembic.runtime.migration import MigrationContext

    MigrationContext.configure(conn).stamp(_script(), revision)


def ensure_schema(engine: Engine, where: str) -> SchemaState:
    """Open check: create the schema in an empty database, refuse any state but current."""
    with engine.connect() as conn:
        state = read_state(conn)
    if state.kind == "empty":
        with schema_lock(engine) as conn:
            state = read_state(conn)  # another opener may have created it meanwhile
            if state.kind == "empty":
                target_metadata().create_all(conn)
                _stamp(conn, head_revision())
                state = SchemaState("current", head_revision())
    error = refusal(state, where)
    if error is not None:
        raise error
    return state


@dataclass
class MigrationResult:
    before: SchemaState
    after: str
    #: Tools dropped because their code file was missing (only with ``drop_missing``).
    dropped: list[str]

    @property
    def changed(self) -> bool:
        return self.before.kind == "empty" or self.before.revision != self.after or not self.before.stamped


def migrate(engine: Engine, where: str, code_dir: Path | None, *, drop_missing: bool = False) -> MigrationResult:
    """Upgrade the database to this release's head revision, in one transaction."""
    from alembic import command
    from alembic.config import Config

    with schema_lock(engine) as conn:
        before = read_state(conn)
        if before.kind in ("newer", "foreign"):
            error = refusal(before, where)
            assert error is not None
            raise error
        dropped: list[str] = []
        if before.kind == "empty":
            target_metadata().create_all(conn)
            _stamp(conn, head_revision())
        elif before.kind == "old":
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS_DIR))
            config.attributes.update(connection=conn, code_dir=code_dir, drop_missing=drop_missing)
            if not before.stamped:
                command.stamp(config, base_revision())
            command.upgrade(config, "head")
            dropped = list(config.attributes.get("dropped", []))
            if engine.dialect.name == "sqlite":
                problems = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
                if problems:
                    raise RegistrySchemaError(f"the migrated registry at {where} would break {len(problems)} "
                                              "foreign key(s); nothing was changed")
        after = read_state(conn)
        assert after.kind == "current", after
    return MigrationResult(before, head_revision(), dropped)
