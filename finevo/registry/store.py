"""The tool registry: SQLModel rows in a database, tool code in files next to it.

Consistency rule: a tool's code file is written (atomically: temp file, fsync, rename) *before*
its row commits, so a row never points at a half-written file. A run that dies between the two
leaves at most an orphan file; :meth:`Registry.reconcile` (run when a registry opens) removes
orphan files and rows whose file has gone, so the database and the directory always agree.

Versions: the first code under a name is ``1.0.0``; each new content under the same name takes
the next minor version (``1.1.0``, ... ``1.10.0``); versions compare numerically. The same name
with the same content (SHA-256) is the same tool: registering it again returns the existing row,
promoted to ``verified`` when it is registered as verified (a ``failed`` or ``provisional`` row whose
code now passed verification); registering it with any other status leaves its status alone.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import IntegrityError
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel, col, create_engine, delete, select

from finevo.errors import FinevoError
from finevo.fsutil import atomic_write
from finevo.normalize import RECORD, normalize
from finevo.registry.models import (
    STATUSES,
    TRANSITIONS,
    ExecutionTrace,
    RefinementAttempt,
    ToolArtifact,
    parse_version,
)
from finevo.registry.signature import signature_fits, tool_signature
from finevo.vocabulary import Category

#: stdout / stderr kept per trace (bytes of UTF-8), the rest is cut with a marker.
OUTPUT_CAP_BYTES = 64 * 1024
#: Orphan files younger than this are left alone when a registry opens (another process may be
#: between writing a file and committing its row).
STARTUP_ORPHAN_GRACE_S = 300.0
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
_CODE_FILE = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)_v(?P<version>\d+\.\d+\.\d+)_(?P<hash8>[0-9a-f]{8})\.py$")
_TMP_PREFIX = ".tmp-"


class RegistryError(FinevoError):
    """The registry's files and rows disagree (a missing or altered code file)."""

    code = "registry_error"


@dataclass
class ReconcileReport:
    removed_rows: list[str] = field(default_factory=list)   # "name vX.Y.Z" whose file was missing
    removed_files: list[str] = field(default_factory=list)  # file names with no row

    @property
    def changed(self) -> bool:
        return bool(self.removed_rows or self.removed_files)


def content_hash(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


class Registry:
    """Tools, traces and refinement attempts. ``url``: any SQLAlchemy URL (default: SQLite file)."""

    def __init__(self, url: str | None = None, code_dir: str | Path | None = None, *,
                 reconcile_on_open: bool = True) -> None:
        if url is None or code_dir is None:
            from finevo.settings import Settings  # late: settings read the environment

            settings = Settings.from_env({})
            url = url or settings.registry_url
            code_dir = code_dir if code_dir is not None else _default_code_dir(url, settings.registry_code_dir)
        self.url = url
        self.code_dir = Path(code_dir)
        self.code_dir.mkdir(parents=True, exist_ok=True)
        self.engine = _make_engine(url)
        # sqlmodel declares no __table__ on table classes (SQLAlchemy adds it when the class is built)
        SQLModel.metadata.create_all(self.engine, tables=[
            ToolArtifact.__table__, ExecutionTrace.__table__, RefinementAttempt.__table__])  # type: ignore[attr-defined]
        self.last_reconcile = self.reconcile(min_age_s=STARTUP_ORPHAN_GRACE_S) if reconcile_on_open \
            else ReconcileReport()

    def __repr__(self) -> str:
        return f"Registry(url={self.display_url!r}, code_dir={str(self.code_dir)!r})"

    @property
    def display_url(self) -> str:
        """The database URL fit for messages and logs: a password in it is masked."""
        return _safe_url(self.url)

    def close(self) -> None:
        self.engine.dispose()

    def __enter__(self) -> Registry:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _session(self) -> Session:
        return Session(self.engine, expire_on_commit=False)

    # ------------------------------------------------------------------ tools
    def is_empty(self) -> bool:
        with self._session() as s:
            return s.exec(select(ToolArtifact.id).limit(1)).first() is None

    def register(self, name: str, code: str, indicator: str, output_type: str,
                 signature: dict[str, Any] | None = None, category: str = Category.CALCULATION,
                 parent_id: int | None = None, status: str = "provisional",
                 description: str = "") -> ToolArtifact:
        """Store ``code`` as tool ``name`` (same content -> the existing row, promoted to ``verified``
        when ``status`` is ``verified``; new content -> next version)."""
        if not _NAME.match(name):
            raise ValueError(f"tool name must be a Python identifier of at most 100 characters: {name!r}")
        if status not in STATUSES:
            raise ValueError(f"unknown tool status {status!r} (expected one of {', '.join(STATUSES)})")
        if signature is None:
            signature = tool_signature(code)
        digest = content_hash(code)
        for _ in range(5):  # another writer may take the same version between our read and commit
            with self._session() as s:
                existing = s.exec(select(ToolArtifact).where(ToolArtifact.name == name,
                                                             ToolArtifact.content_hash == digest)).first()
                if existing is not None:
                    if status == "verified" and existing.status in ("provisional", "failed"):
                        # the same code passed verification this time (another task's arguments, or
                        # a failure that was not the code's): it is a verified tool from now on
                        existing.status = "verified"
                        s.add(existing)
                        s.commit()
                        s.refresh(existing)
                    return existing
                latest = s.exec(select(ToolArtifact).where(ToolArtifact.name == name).order_by(
                    col(ToolArtifact.major).desc(), col(ToolArtifact.minor).desc(),
                    col(ToolArtifact.patch).desc())).first()
                major, minor, patch = (latest.major, latest.minor + 1, 0) if latest else (1, 0, 0)
                version = f"{major}.{minor}.{patch}"
                filename = f"{name}_v{version}_{digest[:8]}.py"
                atomic_write(self.code_dir / filename, code, prefix=_TMP_PREFIX, suffix=".py")
                tool = ToolArtifact(name=name, version=version, major=major, minor=minor, patch=patch,
                                    content_hash=digest, code_path=filename, category=category,
                                    indicator=indicator, output_type=output_type, signature=signature,
                                    status=status, parent_id=parent_id, description=description)
                s.add(tool)
                try:
                    s.commit()
                except IntegrityError:
                    s.rollback()
                    _unlink(self.code_dir / filename)
                    continue
                s.refresh(tool)
                return tool
        raise RegistryError(f"could not register tool {name}: concurrent writers kept taking its next version")

    def set_status(self, tool: ToolArtifact | int, status: str) -> ToolArtifact:
        tool_id = tool if isinstance(tool, int) else tool.id
        with self._session() as s:
            row = s.get(ToolArtifact, tool_id)
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
                s.refresh(row)
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

    def code_file(self, tool: ToolArtifact) -> Path:
        return self.code_dir / tool.code_path

    def read_code(self, tool: ToolArtifact) -> str:
        """The tool's code, checked against its content hash."""
        path = self.code_file(tool)
        try:
            code = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise RegistryError(f"tool {tool.name} v{tool.version}: code file {path} is missing") from None
        if content_hash(code) != tool.content_hash:
            raise RegistryError(f"tool {tool.name} v{tool.version}: code file {path} does not match its hash "
                                f"{tool.hash8} (edited on disk?)")
        return code

    # ------------------------------------------------------------------ traces and attempts
    def record_trace(self, tool_id: int | None, task_id: str | None, arguments: dict[str, Any] | None,
                     result: Any, stage: str, duration_s: float, exit_status: str, *, stdout: str = "",
                     stderr: str = "", error: dict[str, Any] | None = None) -> ExecutionTrace:
        trace = ExecutionTrace(tool_id=tool_id, task_id=task_id, arguments=normalize(arguments or {}, RECORD),
                               result=normalize(result, RECORD), stage=stage, duration_s=float(duration_s),
                               exit_status=exit_status, error=normalize(error, RECORD) if error else None,
                               stdout=cap_output(stdout), stderr=cap_output(stderr))
        with self._session() as s:
            s.add(trace)
            s.commit()
            s.refresh(trace)
        return trace

    def traces(self, tool_id: int | None = None, task_id: str | None = None) -> builtins.list[ExecutionTrace]:
        with self._session() as s:
            query = select(ExecutionTrace)
            if tool_id is not None:
                query = query.where(ExecutionTrace.tool_id == tool_id)
            if task_id is not None:
                query = query.where(ExecutionTrace.task_id == task_id)
            return list(s.exec(query.order_by(col(ExecutionTrace.id))).all())

    def record_attempt(self, task_id: str | None, attempt: int, stage: str, ok: bool, *,
                       tool_id: int | None = None, code_hash: str | None = None, parent_hash: str | None = None,
                       error: dict[str, Any] | None = None) -> RefinementAttempt:
        row = RefinementAttempt(task_id=task_id, tool_id=tool_id, attempt=attempt, code_hash=code_hash,
                                parent_hash=parent_hash, stage=stage, ok=ok,
                                error=normalize(error, RECORD) if error else None)
        with self._session() as s:
            s.add(row)
            s.commit()
            s.refresh(row)
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
        """Remove every tool, trace and attempt, and every code file; returns the number of tools."""
        with self._session() as s:
            count = len(s.exec(select(ToolArtifact.id)).all())
            s.exec(delete(ExecutionTrace))
            s.exec(delete(RefinementAttempt))
            s.exec(delete(ToolArtifact))
            s.commit()
        for path in self.code_dir.iterdir():
            if _CODE_FILE.match(path.name) or path.name.startswith(_TMP_PREFIX):
                _unlink(path)
        return count

    def reconcile(self, min_age_s: float = 0.0) -> ReconcileReport:
        """Make rows and files agree: drop rows whose file is missing and files that no row names.

        Orphan files modified less than ``min_age_s`` ago are kept (a concurrent writer may be about
        to commit their row). References to a dropped tool (traces, attempts, children) are unset.
        """
        report = ReconcileReport()
        with self._session() as s:
            rows = s.exec(select(ToolArtifact)).all()
            known = {r.code_path for r in rows}
            gone = [r for r in rows if not (self.code_dir / r.code_path).is_file()]
            gone_ids = [r.id for r in gone]
            if gone_ids:
                for model, column in ((ExecutionTrace, ExecutionTrace.tool_id),
                                      (RefinementAttempt, RefinementAttempt.tool_id),
                                      (ToolArtifact, ToolArtifact.parent_id)):
                    for ref in s.exec(select(model).where(col(column).in_(gone_ids))).all():
                        setattr(ref, column.key, None)  # type: ignore[union-attr]
                        s.add(ref)
                s.flush()
                for row in gone:
                    report.removed_rows.append(f"{row.name} v{row.version}")
                    s.delete(row)
                s.commit()
        now = time.time()
        for path in sorted(self.code_dir.iterdir()):
            orphan = (_CODE_FILE.match(path.name) and path.name not in known) or path.name.startswith(_TMP_PREFIX)
            if not orphan or not path.is_file():
                continue
            try:
                age = now - path.stat().st_mtime
            except FileNotFoundError:
                continue
            if age >= min_age_s:
                _unlink(path)
                report.removed_files.append(path.name)
        return report


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


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def _default_code_dir(url: str, fallback: Path) -> Path:
    """Next to a SQLite file (``<dir>/tools``); otherwise the configured registry code dir."""
    prefix = "sqlite:///"
    if url.startswith(prefix) and url[len(prefix):] not in ("", ":memory:"):
        return Path(url[len(prefix):]).parent / "tools"
    return fallback


def _make_engine(url: str) -> Engine:
    if url.startswith("sqlite"):
        memory = url in ("sqlite://", "sqlite:///:memory:")
        if not memory:
            db = url.split("///", 1)[-1]
            if db:
                Path(db).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30},
                               poolclass=StaticPool if memory else None)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn: Any, _record: Any) -> None:
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        return engine
    return create_engine(url)


def _safe_url(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]+@", r"//\1:***@", url)


__all__: Sequence[str] = ("ReconcileReport", "Registry", "RegistryError", "cap_output", "content_hash")
