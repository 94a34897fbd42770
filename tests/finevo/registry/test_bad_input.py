"""A registry database that cannot be used: one line, exit 2, nothing written, the password never shown;
and a writer killed in the middle of a registration leaves nothing behind."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect, text

from finevo.cli import main
from finevo.registry import Registry, RegistryUnavailable, ToolInterface, safe_url
from tests.finevo.registry.pgcluster import PostgresCluster, free_port

SMA = "def sma(symbol: str) -> float:\n    return 1.0\n"


def _refused(capsys: pytest.CaptureFixture[str], url: str, *secrets: str) -> str:
    for argv in (["registry", "--registry-url", url, "list"], ["registry", "list", "--registry-url", url],
                 ["registry", "--registry-url", url, "migrate"]):
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2 and out == "", (argv, out, err)
        assert err.startswith("finevo: error: ") and err.count("\n") == 1, err
        for secret in secrets:
            assert secret not in err
    return err


@pytest.mark.postgres
def test_an_unreachable_server(pg_cluster: PostgresCluster, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql+psycopg://finevo:s3cret-pw@127.0.0.1:{free_port()}/registry"
    err = _refused(capsys, url, "s3cret-pw")
    assert "cannot use the registry database at postgresql+psycopg://finevo:***@127.0.0.1:" in err
    assert "refused" in err.lower()


@pytest.mark.postgres
def test_wrong_credentials(pg_cluster: PostgresCluster, capsys: pytest.CaptureFixture[str]) -> None:
    db = pg_cluster.create_database()
    url = pg_cluster.url(db, password="not-the-password")
    err = _refused(capsys, url, "not-the-password", pg_cluster.password)
    assert "refused the credentials" in err and "password authentication failed" in err
    assert safe_url(url) in err
    with pytest.raises(RegistryUnavailable):
        Registry(url)
    engine = create_engine(pg_cluster.url(db))
    try:
        with engine.connect() as conn:
            assert inspect(conn).get_table_names() == []  # nothing written
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_database_that_does_not_exist(pg_cluster: PostgresCluster, capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, pg_cluster.url("no_such_db"), pg_cluster.password)
    assert "does not exist" in err


def test_an_unknown_url_scheme_or_a_missing_driver(capsys: pytest.CaptureFixture[str]) -> None:
    err = _refused(capsys, "mysql+nosuchdriver://u:hunter2@localhost/db", "hunter2")
    assert "no database driver" in err
    err = _refused(capsys, "not a url", "hunter2")
    assert "invalid registry URL" in err


def test_an_unwritable_sqlite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "registry.db").mkdir()  # a directory where the file should be
    err = _refused(capsys, f"sqlite:///{tmp_path / 'registry.db'}")
    assert "cannot use the registry database at sqlite:///" in err


def test_the_password_is_masked_in_every_display() -> None:
    url = "postgresql+psycopg://agent:p%40ss:word@db.example:5432/registry"
    assert "p%40ss" not in safe_url(url) and "***" in safe_url(url)
    from finevo.settings import Settings

    assert "p%40ss" not in repr(Settings.from_env({"registry_url": url}))


def _die_mid_registration(url: str) -> None:
    """Register, but die (no cleanup at all) once the code row is written and before the commit."""
    reg = Registry(url)
    original = reg._store_code

    def store_then_die(s: object, digest: str, code: str) -> None:
        original(s, digest, code)  # type: ignore[arg-type]
        s.flush()  # type: ignore[attr-defined]
        os._exit(9)

    reg._store_code = store_then_die  # type: ignore[method-assign]
    reg.register("sma", SMA, ToolInterface("sma", "numeric"))


def test_a_writer_killed_mid_registration_leaves_nothing(registry_url: str) -> None:
    Registry(registry_url).close()
    proc = multiprocessing.get_context("fork").Process(target=_die_mid_registration, args=(registry_url,))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == 9
    with Registry(registry_url) as reg:
        assert reg.is_empty()
        with reg.engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM tool_code")).scalar_one() == 0
        tool = reg.register("sma", SMA, ToolInterface("sma", "numeric"))  # the lock was released
        assert tool.version == "1.0.0" and reg.read_code(tool) == SMA


def test_solve_with_an_unusable_registry_url_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    url = f"postgresql+psycopg://agent:t0p-secret@127.0.0.1:{free_port()}/registry"
    code = main(["solve", "Calculate MSFT 5-day moving average over last 20 days", "--llm", "reference",
                 "--registry-url", url])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "postgresql+psycopg://agent:***@127.0.0.1" in err and "t0p-secret" not in err
