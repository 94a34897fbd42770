"""Schema versions: a release 0.1.0 registry (committed fixture) is refused, migrated, and its tools reused;
newer and foreign databases are refused; models and migrations agree (autogenerate shows nothing)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from finevo.cli import main
from finevo.registry import Registry, RegistrySchemaError, ToolInterface
from finevo.registry.schema import MIGRATIONS_DIR, base_revision, head_revision, target_metadata
from tests.finevo.registry.pgcluster import PostgresCluster

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "registry-0.1.0"


@dataclass
class OldRegistry:
    url: str
    registry_dir: Path

    def args(self) -> list[str]:
        return ["--registry-dir", str(self.registry_dir), "--registry-url", self.url]

    def fingerprint(self) -> object:
        """What the database holds (tables and their rows): unchanged by a refused open."""
        engine = create_engine(self.url.replace("postgresql+psycopg", "postgresql+psycopg"))
        try:
            with engine.connect() as conn:
                names = sorted(inspect(conn).get_table_names())
                rows = {n: sorted(map(repr, conn.execute(text(f'SELECT * FROM "{n}"')).all())) for n in names}
        finally:
            engine.dispose()
        files = sorted((p.name, p.read_bytes()) for p in (self.registry_dir / "tools").iterdir())
        return names, rows, files


@pytest.fixture
def old_registry(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> OldRegistry:
    """A copy of the registry release 0.1.0 wrote (code files in ``<dir>/tools``)."""
    reg_dir = tmp_path / "registry"
    shutil.copytree(FIXTURE / "tools", reg_dir / "tools")
    if backend == "sqlite":
        shutil.copy(FIXTURE / "registry.sqlite3", reg_dir / "registry.db")
        return OldRegistry(f"sqlite:///{reg_dir / 'registry.db'}", reg_dir)
    cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
    db = cluster.create_database()
    cluster.execute_script(db, (FIXTURE / "postgres.sql").read_text())
    return OldRegistry(cluster.url(db), reg_dir)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_an_old_registry_is_refused_then_migrated_and_its_tools_reused(
        old_registry: OldRegistry, capsys: pytest.CaptureFixture[str]) -> None:
    before = old_registry.fingerprint()
    code, out, err = _run(capsys, "registry", *old_registry.args(), "list")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "older schema" in err and "`finevo registry migrate`" in err
    assert old_registry.fingerprint() == before  # refused: nothing written

    code, out, err = _run(capsys, "registry", *old_registry.args(), "migrate")
    assert code == 0, err
    assert out.strip().endswith(f"from {base_revision()} (release 0.1.0, unversioned) to {head_revision()}")
    code, out, _ = _run(capsys, "registry", *old_registry.args(), "migrate")
    assert code == 0 and f"already at {head_revision()}" in out

    # the tools, their lineage, traces and attempts are all there, code loaded from the database
    shutil.rmtree(old_registry.registry_dir / "tools")
    with Registry(old_registry.url, old_registry.registry_dir / "tools") as reg:
        tools = reg.list()
        assert [(t.name, t.version, t.status) for t in tools] == [
            ("moving_average", "1.0.0", "failed"), ("moving_average", "1.1.0", "verified")]
        assert tools[1].parent_id == tools[0].id
        for tool in tools:
            assert hashlib.sha256(reg.read_code(tool).encode()).hexdigest() == tool.content_hash
        assert len(reg.traces()) == 6 and len(reg.attempts()) == 2

        # reusable: the static agent answers another symbol with the migrated verified tool
        from tests.finevo.agent.test_agent import AAPL_MA, make_agent, solve

        outcome = solve(make_agent(None, reg, mode="static"), AAPL_MA)
        assert outcome.error is None and outcome.tool_source == "reused"
        assert outcome.tool_version == "1.1.0" and isinstance(outcome.value, list) and len(outcome.value) == 30
        # and the registry keeps evolving: new content under the name takes the next version
        fixed = reg.read_code(tools[1]).replace("dropna()", "dropna() ")
        again = reg.register("moving_average", fixed, ToolInterface("moving_average", "series"))
        assert again.version == "1.2.0"
    code, out, _ = _run(capsys, "registry", *old_registry.args(), "show", "moving_average", "--version", "1.1.0")
    assert code == 0 and "def moving_average(" in out


def test_a_missing_code_file_stops_the_migration_unless_dropped(
        old_registry: OldRegistry, capsys: pytest.CaptureFixture[str]) -> None:
    [first] = (old_registry.registry_dir / "tools").glob("moving_average_v1.0.0_*.py")
    first.unlink()
    before = old_registry.fingerprint()
    code, out, err = _run(capsys, "registry", *old_registry.args(), "migrate")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "1 tool(s) have no intact code file" in err and "moving_average v1.0.0" in err and "--drop-missing" in err
    assert old_registry.fingerprint() == before  # one transaction: nothing changed

    code, out, err = _run(capsys, "registry", *old_registry.args(), "migrate", "--drop-missing")
    assert code == 0, err
    assert "dropped moving_average v1.0.0: its code file was missing" in out
    with Registry(old_registry.url) as reg:
        [kept] = reg.list()
        assert kept.version == "1.1.0" and kept.parent_id is None
        assert all(t.tool_id in (None, kept.id) for t in reg.traces())


def test_a_registry_newer_than_the_release_is_refused(registry_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    Registry(registry_url).close()
    engine = create_engine(registry_url)
    with engine.begin() as conn:
        conn.execute(text("UPDATE alembic_version SET version_num = '0099_from_the_future'"))
    engine.dispose()
    for action in (["list"], ["migrate"]):
        code, out, err = _run(capsys, "registry", "--registry-url", registry_url, *action)
        assert code == 2 and out == "" and err.count("\n") == 1
        assert "0099_from_the_future, newer than this release" in err and "nothing was changed" in err
    with pytest.raises(RegistrySchemaError, match="newer"):
        Registry(registry_url)


def test_a_database_of_another_application_is_refused_untouched(
        registry_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    engine = create_engine(registry_url)
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE customers (id INTEGER PRIMARY KEY, name VARCHAR(40))"))
        conn.execute(text("INSERT INTO customers VALUES (1, 'ada')"))
    for action in (["list"], ["migrate"], ["clear", "--yes"]):
        code, out, err = _run(capsys, "registry", "--registry-url", registry_url, *action)
        assert code == 2 and out == "" and err.count("\n") == 1, (action, err)
        assert "not a finevo registry" in err
    with engine.connect() as conn:
        assert inspect(conn).get_table_names() == ["customers"]
        assert conn.execute(text("SELECT name FROM customers")).scalar_one() == "ada"
    engine.dispose()


def test_models_and_migrations_agree(new_url: Callable[[], str]) -> None:
    """``alembic check``: the migrations, run from nothing, build exactly the models' schema."""
    from alembic import command
    from alembic.autogenerate import compare_metadata
    from alembic.config import Config
    from alembic.runtime.migration import MigrationContext

    url = new_url()
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS_DIR))
            config.attributes.update(connection=conn, code_dir=None)
            command.upgrade(config, "head")
        with engine.connect() as conn:
            diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), target_metadata())
            assert diff == []
            assert MigrationContext.configure(conn).get_current_revision() == head_revision()
    finally:
        engine.dispose()
    # a registry created fresh (models + stamp) is the same schema and is opened as current
    with Registry(url) as reg:
        assert reg.is_empty()
    other = new_url()
    Registry(other).close()
    engine = create_engine(other)
    try:
        with engine.connect() as conn:
            assert compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}),
                                    target_metadata()) == []
    finally:
        engine.dispose()


def test_a_downgrade_writes_the_code_files_back(old_registry: OldRegistry, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The way back to release 0.1.0 exists: code files rewritten from the database, ``tool_code`` gone."""
    from alembic import command
    from alembic.config import Config

    from finevo.registry.store import make_engine

    assert _run(capsys, "registry", *old_registry.args(), "migrate")[0] == 0
    out_dir = tmp_path / "files"
    engine = make_engine(old_registry.url, foreign_keys=False)
    try:
        with engine.begin() as conn:
            config = Config()
            config.set_main_option("script_location", str(MIGRATIONS_DIR))
            config.attributes.update(connection=conn, code_dir=out_dir)
            command.downgrade(config, base_revision())
        with engine.connect() as conn:
            assert "tool_code" not in inspect(conn).get_table_names()
            rows = conn.execute(text("SELECT code_path, content_hash FROM tool_artifact ORDER BY id")).all()
    finally:
        engine.dispose()
    assert [r.code_path for r in rows] == sorted(p.name for p in (FIXTURE / "tools").iterdir())
    for code_path, digest in rows:
        assert (out_dir / code_path).read_bytes() == (FIXTURE / "tools" / code_path).read_bytes()
        assert hashlib.sha256((out_dir / code_path).read_bytes()).hexdigest() == digest
