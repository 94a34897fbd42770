"""The tool registry: SQLModel rows in a database (SQLite file by default, or a PostgreSQL server),
tool code included.

Code lives where the rows live: ``tool_code`` holds each distinct source once, keyed by its SHA-256,
and ``tool_artifact.content_hash`` references it with a foreign key. A tool's code row and its
tool row are written in ONE transaction, so a row never points at missing code and a writer killed
at any moment leaves nothing half-done (the transaction rolls back). Any machine that reaches the
database can load every tool; nothing is kept in files (``code_dir`` only names where a release
0.1.0 registry kept its code files, which ``finevo registry migrate`` imports).

Versions: the first code under a name is ``1.0.0``; each new content under the same name takes
the next minor version (``1.1.0``, ... ``1.10.0``); versions compare numerically. The same name
with the same content (SHA-256) is the same tool: registering it again returns the existing row,
promoted to ``verified`` when it is registered as verified (a ``failed`` or ``provisional`` row whose
code now passed verification); registering it with any other status leaves its status alone.

Many writers at once (processes on one machine or many): a registration holds a per-name lock for
its transaction -- PostgreSQL's transaction-scoped advisory lock on a hash of the name; SQLite's
database write lock (``BEGIN IMMEDIATE``, WAL journal, busy timeout) -- so the next version is read
and taken by one writer at a time: versions per name are unique and gap-free. Code rows are
inserted with ``ON CONFLICT DO NOTHING`` (one row per content, whoever comes first). Unique
constraints back this up; a conflict, a serialization failure or a deadlock report rolls the
transaction back and retries it, a bounded number of times.
"""

from __future__ import annotations

import builtins
import hashlib
import random
import re
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import event, text
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, IntegrityError, NoSuchModuleError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, col, create_engine, delete, select
from tenacity import Retrying, retry_if_exception, stop_after_delay, wait_random_exponential

from finevo.errors import FinevoError, InputError
from finevo.normalize import RECORD, normalize
from finevo.outcome import Attempt
from finevo.registry.models import (
    STATUSES,
    TRANSITIONS,
    ExecutionTrace,
    RefinementAttempt,
    ToolArtifact,
    ToolCode,
    parse_version,
    utcnow,
)
from finevo.registry.schema import MigrationResult, ensure_schema, migrate
from finevo.registry.signature import signature_fits, tool_signature
from finevo.vocabulary import Category

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject
    from finevo.registry.signature import ToolSignature

#: stdout / stderr kept per trace (bytes of UTF-8), the rest is cut with a marker.
OUTPUT_CAP_BYTES = 64 * 1024
#: Attempts of one write transaction that lost a race (conflict, serialization failure, deadlock).
MAX_WRITE_ATTEMPTS = 10
#: SQLite waits this long for another writer's lock before giving up.
SQLITE_BUSY_TIMEOUT_S = 60.0
#: A server that does not answer the connection within this many seconds is unreachable.
CONNECT_TIMEOUT_S = 10
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
#: SQLSTATEs after which a transaction is simply run again: serialization failure, deadlock.
_RETRY_SQLSTATES = frozenset({"40001", "40P01"})


class RegistryError(FinevoError):
    """The registry's contents are inconsistent (code altered in the database) or a write kept losing races."""

    code = "registry_error"


class RegistryUnavailable(InputError):
    """The registry's database cannot be used: unreachable, credentials refused, no such database."""

    code = "registry_unavailable"


def content_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ToolInterface:
    """What a stored tool computes, as :meth:`Registry.find` looks it up: the ``indicator``, the
    type of its return value (``output_type``), its ``signature`` (default: read from its code),
    its ``category`` and a one-line ``description``."""

    indicator: str
    output_type: str
    category: str = Category.CALCULATION
    description: str = ""
    signature: ToolSignature | JSONObject | None = None


@dataclass(frozen=True)
class ToolRun:
    """One sandbox run of a tool as its execution trace records it: the ``stage`` it belonged to
    (``selftest``, ``contract``, ``metamorphic``, ``execution`` ...), its ``arguments``, its
    ``result``, its duration, the sandbox's ``exit_status``, its output and its ``error``."""

    stage: str
    arguments: JSONObject | None
    result: Any
    duration_s: float
    exit_status: str
    stdout: str = ""
    stderr: str = ""
    error: JSONObject | None = None


class Registry:
    """Tools, their code, traces and refinement attempts. ``url``: any SQLAlchemy URL (default: the
    SQLite file of the settings); PostgreSQL through psycopg 3 (``postgresql+psycopg://``).

    Opening checks the database first (reachable, a registry of this release's schema, or empty:
    then the schema is created) and raises :class:`RegistryUnavailable` or
    :class:`~finevo.registry.schema.RegistrySchemaError` (both input errors) without writing
    anything otherwise.
    """

    def __init__(self, url: str | None = None, code_dir: str | Path | None = None) -> None:
        if url is None or code_dir is None:
            from finevo.settings import Settings  # late: settings read the environment

            settings = Settings.from_env({})
            url = url or settings.registry_url
            code_dir = code_dir if code_dir is not None else _default_code_dir(url, settings.registry_code_dir)
        self.url = url
        #: Where a release 0.1.0 registry kept its code files (read by a migration only).
        self.code_dir = Path(code_dir)
        self.engine = make_engine(url)
        try:
            with _translated(url):
                ensure_schema(self.engine, self.display_url)
                _use_wal(self.engine)
        except BaseException:
            self.engine.dispose()
            raise
        # writes: SQLite takes its write lock when the transaction begins (a deferred transaction
        # that reads, then writes, could fail at once instead of waiting for the lock)
        self._writer = self.engine.execution_options(finevo_sqlite_begin="IMMEDIATE")

    def __repr__(self) -> str:
        return f"Registry(url={self.display_url!r})"

    @property
    def display_url(self) -> str:
        """The database URL fit for messages and logs: a password in it is masked."""
        return safe_url(self.url)

    @property
    def backend(self) -> str:
        return str(self.engine.dialect.name)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    @contextmanager
    def _write(self) -> Iterator[Session]:
        with Session(self._writer, expire_on_commit=False) as s:
            yield s

    def _retrying(self, what: str) -> Iterator[int]:
        """Attempt numbers for a write transaction; the caller ``continue``s after a lost race."""
        for attempt in range(MAX_WRITE_ATTEMPTS):
            if attempt:
                time.sleep(random.uniform(0, min(0.2, 0.005 * 2 ** attempt)))  # back off, de-synchronised
            yield attempt
        raise RegistryError(f"could not {what}: {MAX_WRITE_ATTEMPTS} attempts lost to concurrent writers")

    def _lock_name(self, s: Session, name: str) -> None:
        """Serialise writers of one tool name for the rest of the transaction (SQLite: already serial)."""
        if self.backend == "postgresql":
            key = int.from_bytes(hashlib.sha256(f"finevo.tool:{name}".encode()).digest()[:8], "big", signed=True)
            s.connection().execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": key})

    def _store_code(self, s: Session, digest: str, code: str) -> None:
        created = utcnow()
        if self.backend in ("postgresql", "sqlite"):
            from sqlalchemy.dialects import postgresql, sqlite

            insert = postgresql.insert if self.backend == "postgresql" else sqlite.insert
            s.connection().execute(insert(ToolCode).values(content_hash=digest, code=code, created_at=created)
                                   .on_conflict_do_nothing(index_elements=["content_hash"]))
        elif s.get(ToolCode, digest) is None:  # other databases: a racing insert fails and is retried
            s.add(ToolCode(content_hash=digest, code=code, created_at=created))
            s.flush()

    # ------------------------------------------------------------------ tools
    def is_empty(self) -> bool:
        with self._session() as s:
            return s.exec(select(ToolArtifact.id).limit(1)).first() is None

    def register(self, name: str, code: str, interface: ToolInterface, *, parent_id: int | None = None,
                 status: str = "provisional") -> ToolArtifact:
        """Store ``code`` as tool ``name`` (same content -> the existing row, promoted to ``verified``
        when ``status`` is ``verified``; new content -> next version)."""
        if not _NAME.match(name):
            raise ValueError(f"tool name must be a Python identifier of at most 100 characters: {name!r}")
        if status not in STATUSES:
            raise ValueError(f"unknown tool status {status!r} (expected one of {', '.join(STATUSES)})")
        signature: JSONObject = dict(interface.signature if interface.signature is not None else tool_signature(code))
        digest = content_hash(code)
        for _ in self._retrying(f"register tool {name}"):
            try:
                with self._write() as s:
                    self._lock_name(s, name)
                    existing = s.exec(select(ToolArtifact).where(ToolArtifact.name == name,
                                                                 ToolArtifact.content_hash == digest)).first()
                    if existing is not None:
                        if status == "verified" and existing.status in ("provisional", "failed"):
                            # the same code passed verification this time (another task's arguments, or
                            # a failure that was not the code's): it is a verified tool from now on
                            existing.status = "verified"
                            s.add(existing)
                        s.commit()
                        return existing
                    latest = s.exec(select(ToolArtifact).where(ToolArtifact.name == name).order_by(
                        col(ToolArtifact.major).desc(), col(ToolArtifact.minor).desc(),
                        col(ToolArtifact.patch).desc())).first()
                    major, minor, patch = (latest.major, latest.minor + 1, 0) if latest else (1, 0, 0)
                    self._store_code(s, digest, code)
                    tool = ToolArtifact(name=name, version=f"{major}.{minor}.{patch}", major=major, minor=minor,
                                        patch=patch, content_hash=digest, category=interface.category,
                                        indicator=interface.indicator, output_type=interface.output_type,
                                        signature=signature, status=status, parent_id=parent_id,
                                        description=interface.description)
                    s.add(tool)
                    s.commit()
                    return tool
            except DBAPIError as exc:
                if not _lost_race(exc):
                    raise
        raise AssertionError("unreachable")  # pragma: no cover - _retrying raises when attempts run out

    def set_status(self, tool: ToolArtifact | int, status: str) -> ToolArtifact:
        tool_id = tool if isinstance(tool, int) else tool.id
        with self._write() as s:
            row = s.get(ToolArtifact, tool_id, with_for_update=True)
            if row is None:
                raise KeyError(f"no tool with id {tool_id}")
            if status not in STATUSES:
                raise ValueError(f"unknown tool status {status!r}")
            if status != row.status:
                if status not in TRANSITIONS[row.status]:
                    raise ValueError(f"tool {row.name} v{row.version}: cannot go from {row.status} to {status}")
                row.status = status
                s.add(row)
            s.commit()
        if isinstance(tool, ToolArtifact):
            tool.status = row.status
        return row

    def find(self, indicator: str, output_type: str, params: Iterable[str] = ()) -> list[ToolArtifact]:
        """Verified tools for this contract whose signature binds exactly ``params``; newest first."""
        wanted = set(params)
        with self._session() as s:
            rows = s.exec(select(ToolArtifact).where(ToolArtifact.indicator == indicator,
                                                     ToolArtifact.output_type == output_type,
                                                     ToolArtifact.status == "verified")).all()
        fits = [r for r in rows if signature_fits(r.signature or {}, wanted)]
        return sorted(fits, key=lambda r: (r.version_tuple, r.created_at, r.id or 0), reverse=True)

    def get(self, name: str, version: str | None = None) -> ToolArtifact | None:
        """Tool ``name`` at ``version`` (default: its highest version, whatever its status)."""
        with self._session() as s:
            query = select(ToolArtifact).where(ToolArtifact.name == name)
            if version is not None:
                parse_version(version)
                query = query.where(ToolArtifact.version == version)
            rows = s.exec(query).all()
        return max(rows, key=lambda r: r.version_tuple) if rows else None

    def get_by_id(self, tool_id: int) -> ToolArtifact | None:
        with self._session() as s:
            return s.get(ToolArtifact, tool_id)

    def list(self, status: str | None = None) -> list[ToolArtifact]:
        with self._session() as s:
            query = select(ToolArtifact)
            if status is not None:
                query = query.where(ToolArtifact.status == status)
            rows = s.exec(query).all()
        return sorted(rows, key=lambda r: (r.name, r.version_tuple))

    def read_code(self, tool: ToolArtifact) -> str:
        """The tool's code, from the database, checked against its content hash."""
        with self._session() as s:
            row = s.get(ToolCode, tool.content_hash)
        if row is None:  # the foreign key forbids it: only a database edited by hand gets here
            raise RegistryError(f"tool {tool.name} v{tool.version}: its code {tool.hash8} is missing from the registry")
        if content_hash(row.code) != tool.content_hash:
            raise RegistryError(f"tool {tool.name} v{tool.version}: the stored code does not match its hash "
                                f"{tool.hash8} (edited in the database?)")
        return row.code

    # ------------------------------------------------------------------ traces and attempts
    def record_trace(self, tool_id: int | None, task_id: str | None, run: ToolRun) -> ExecutionTrace:
        """Trace ``run`` of tool ``tool_id`` (None: code never stored, e.g. blocked) for ``task_id``;
        values cleaned for JSON, stdout and stderr capped (:func:`cap_output`)."""
        trace = ExecutionTrace(tool_id=tool_id, task_id=task_id, arguments=normalize(run.arguments or {}, RECORD),
                               result=normalize(run.result, RECORD), stage=run.stage, duration_s=float(run.duration_s),
                               exit_status=run.exit_status, error=normalize(run.error, RECORD) if run.error else None,
                               stdout=cap_output(run.stdout), stderr=cap_output(run.stderr))
        with self._write() as s:
            s.add(trace)
            s.commit()
        return trace

    def traces(self, tool_id: int | None = None, task_id: str | None = None) -> builtins.list[ExecutionTrace]:
        with self._session() as s:
            query = select(ExecutionTrace)
            if tool_id is not None:
                query = query.where(ExecutionTrace.tool_id == tool_id)
            if task_id is not None:
                query = query.where(ExecutionTrace.task_id == task_id)
            return list(s.exec(query.order_by(col(ExecutionTrace.id))).all())

    def record_attempt(self, task_id: str | None, attempt: Attempt, *, tool_id: int | None = None) -> RefinementAttempt:
        """The record of ``attempt`` (its number, stage, outcome, code and parent code, error) for
        ``task_id``, linked to the stored tool its code became (``tool_id``; None when not stored)."""
        row = RefinementAttempt(task_id=task_id, tool_id=tool_id, attempt=attempt.number, code_hash=attempt.code_hash,
                                parent_hash=attempt.parent_hash, stage=attempt.stage, ok=attempt.ok,
                                error=normalize(attempt.error.to_dict(), RECORD) if attempt.error else None)
        with self._write() as s:
            s.add(row)
            s.commit()
        return row

    def attempts(self, task_id: str | None = None, tool_id: int | None = None) -> builtins.list[RefinementAttempt]:
        with self._session() as s:
            query = select(RefinementAttempt)
            if task_id is not None:
                query = query.where(RefinementAttempt.task_id == task_id)
            if tool_id is not None:
                query = query.where(RefinementAttempt.tool_id == tool_id)
            return list(s.exec(query.order_by(col(RefinementAttempt.id))).all())

    def lineage(self, tool: ToolArtifact) -> builtins.list[ToolArtifact]:
        """``tool`` and its ancestors through ``parent_id``, newest first."""
        chain = [tool]
        seen = {tool.id}
        with self._session() as s:
            while chain[-1].parent_id is not None and chain[-1].parent_id not in seen:
                parent = s.get(ToolArtifact, chain[-1].parent_id)
                if parent is None:
                    break
                seen.add(parent.id)
                chain.append(parent)
        return chain

    # ------------------------------------------------------------------ maintenance
    def clear(self) -> int:
        """Remove every tool, its code, trace and attempt; returns the number of tools."""
        with self._write() as s:
            count = len(s.exec(select(ToolArtifact.id)).all())
            s.exec(delete(ExecutionTrace))
            s.exec(delete(RefinementAttempt))
            s.exec(delete(ToolArtifact))
            s.exec(delete(ToolCode))
            s.commit()
        return count


def migrate_registry(url: str, code_dir: Path | None, *, drop_missing: bool = False) -> MigrationResult:
    """Upgrade the registry at ``url`` to this release's schema (``finevo registry migrate``)."""
    engine = make_engine(url, foreign_keys=False)  # SQLite rebuilds tables; checked before commit
    try:
        with _translated(url):
            result = migrate(engine, safe_url(url), code_dir, drop_missing=drop_missing)
            _use_wal(engine)
        return result
    finally:
        engine.dispose()


# --------------------------------------------------------------------------- helpers
def cap_output(text: str | None, limit: int = OUTPUT_CAP_BYTES) -> str:
    """``text`` cut to ``limit`` bytes of UTF-8, with a marker saying how much was dropped."""
    if not text:
        return ""
    raw = text.encode("utf-8", errors="replace")
    if len(raw) <= limit:
        return text
    marker = f"\n[... {len(raw) - limit} more bytes cut]"
    keep = raw[: max(0, limit - len(marker.encode()))]
    return keep.decode("utf-8", errors="ignore") + marker


def _default_code_dir(url: str, fallback: Path) -> Path:
    """Next to a SQLite file (``<dir>/tools``); otherwise the configured registry code dir."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and url[len(prefix):] not in ("", ":memory:"):
        return Path(url[len(prefix):]).parent / "tools"
    return fallback


def make_engine(url: str, *, foreign_keys: bool = True) -> Engine:
    """An engine for ``url``; SQLite: foreign keys on, busy timeout, transactions begun explicitly."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise RegistryUnavailable(f"invalid registry URL {safe_url(url)!r}: expected an SQLAlchemy URL such as "
                                  "sqlite:///PATH or postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB") from None
    try:
        if parsed.get_backend_name() == "sqlite":
            return _sqlite_engine(url, parsed.database, foreign_keys=foreign_keys)
        connect_args: dict[str, object] = {}
        if parsed.get_backend_name() == "postgresql" and "connect_timeout" not in parsed.query:
            connect_args["connect_timeout"] = CONNECT_TIMEOUT_S
        return create_engine(url, connect_args=connect_args, pool_pre_ping=True)
    except (NoSuchModuleError, ModuleNotFoundError) as exc:
        hint = " (install the postgres extra: pip install 'finevo[postgres]')" \
            if parsed.get_backend_name() == "postgresql" else ""
        raise RegistryUnavailable(f"no database driver for the registry URL {safe_url(url)}: {exc}{hint}") from None


def _sqlite_engine(url: str, database: str | None, *, foreign_keys: bool) -> Engine:
    memory = database in (None, "", ":memory:")
    if not memory and database:
        Path(database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_S},
                           poolclass=StaticPool if memory else None)

    @event.listens_for(engine, "connect")
    def _connect(dbapi_conn: Any, _record: Any) -> None:
        # the driver's own implicit transactions skip DDL; SQLAlchemy's "begin" below covers everything
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute(f"PRAGMA foreign_keys={'ON' if foreign_keys else 'OFF'}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _begin(conn: Any) -> None:
        mode = conn.get_execution_options().get("finevo_sqlite_begin", "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")

    return engine


def _use_wal(engine: Engine) -> None:
    """SQLite files: the WAL journal (readers never wait for the writer). Set once the file is ours.

    Switching the journal needs the file to itself, and SQLite answers "database is locked" at once
    there rather than waiting on the busy timeout while another process opening the same new file
    reads it: the switch is retried until that timeout, as any other lock would be waited for."""
    if engine.dialect.name != "sqlite" or engine.url.database in (None, "", ":memory:"):
        return
    for attempt in Retrying(retry=retry_if_exception(_sqlite_locked), stop=stop_after_delay(SQLITE_BUSY_TIMEOUT_S),
                            wait=wait_random_exponential(multiplier=0.01, max=0.5), reraise=True):
        with attempt:
            _switch_to_wal(engine)


def _sqlite_locked(exc: BaseException) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and _busy(str(exc))


def _switch_to_wal(engine: Engine) -> None:
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        mode = cur.execute("PRAGMA journal_mode").fetchone()
        if not mode or str(mode[0]).lower() != "wal":
            cur.execute("PRAGMA journal_mode=WAL")
        cur.close()
    finally:
        raw.close()


def _lost_race(exc: DBAPIError) -> bool:
    """A transaction another writer made fail: run it again."""
    if isinstance(exc, IntegrityError):
        return True
    if getattr(exc.orig, "sqlstate", None) in _RETRY_SQLSTATES:
        return True
    return _busy(str(exc.orig))


def _busy(message: str) -> bool:
    """SQLite's words for a lock another connection holds."""
    message = message.lower()
    return "database is locked" in message or "database is busy" in message


@contextmanager
def _translated(url: str) -> Iterator[None]:
    """Driver errors while opening a registry become one line naming the masked URL."""
    try:
        yield
    except DBAPIError as exc:
        raise _unavailable(exc, url) from None


def _unavailable(exc: DBAPIError, url: str) -> RegistryUnavailable:
    where = safe_url(url)
    orig = exc.orig
    lines = [line.strip() for line in str(orig).splitlines() if line.strip()]
    detail = lines[0] if lines else type(orig).__name__
    try:
        password = make_url(url).password
    except ArgumentError:
        password = None
    if password:
        detail = detail.replace(str(password), "***")
    detail = " ".join(detail.split())
    # a failed connection carries no SQLSTATE in psycopg: the server's own wording is the evidence
    state = getattr(orig, "sqlstate", None)
    lowered = detail.lower()
    if state in ("28P01", "28000") or "password authentication failed" in lowered \
            or "no password supplied" in lowered:
        return RegistryUnavailable(f"the registry database at {where} refused the credentials: {detail}")
    if state == "3D000" or ("database" in lowered and "does not exist" in lowered):
        return RegistryUnavailable(f"the registry database at {where} does not exist: {detail}")
    if state == "42501":
        return RegistryUnavailable(f"no permission on the registry database at {where}: {detail}")
    return RegistryUnavailable(f"cannot use the registry database at {where}: {detail}")


def safe_url(url: str) -> str:
    """``url`` with its password masked (``***``)."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return re.sub(r"//([^:/@]*):[^@]*@", r"//\1:***@", url)


__all__: Sequence[str] = ("Registry", "RegistryError", "RegistryUnavailable", "cap_output", "content_hash",
                          "make_engine", "migrate_registry", "safe_url")
