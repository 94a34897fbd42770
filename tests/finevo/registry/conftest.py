"""Registry fixtures: every backend test runs on SQLite and on a real PostgreSQL server.

The server is a throw-away cluster (``pgcluster.PostgresCluster``) started once per test session
and stopped at its end; each test gets a database of its own. Tests marked ``postgres`` are skipped
with the reason when no server binaries are installed, unless ``FINEVO_REQUIRE_POSTGRES=1`` (set by
``.ci/run``): then they fail.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.finevo.registry.pgcluster import PostgresCluster, find_bindir


def _unavailable(reason: str) -> None:
    if os.environ.get("FINEVO_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"FINEVO_REQUIRE_POSTGRES=1 but no PostgreSQL server can run: {reason}")
    pytest.skip(f"no PostgreSQL server ({reason})")


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PostgresCluster]:
    bindir, why = find_bindir()
    if bindir is None:
        _unavailable(why)
    assert bindir is not None
    cluster = PostgresCluster(bindir)
    try:
        cluster.start()
    except (RuntimeError, OSError) as exc:
        cluster.stop()
        _unavailable(f"the throw-away cluster did not start: {exc}")
    yield cluster
    cluster.stop()


@pytest.fixture
def pg_url(pg_cluster: PostgresCluster) -> str:
    """The URL of a new, empty database on the session's server."""
    return pg_cluster.url(pg_cluster.create_database())


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def new_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> Callable[[], str]:
    """Makes the URL of a new, empty registry database on the test's backend."""
    counter = iter(range(1000))

    def make() -> str:
        if backend == "sqlite":
            where = tmp_path / f"db{next(counter)}"
            where.mkdir()
            return f"sqlite:///{where / 'registry.db'}"
        cluster: PostgresCluster = request.getfixturevalue("pg_cluster")
        return cluster.url(cluster.create_database())

    return make


@pytest.fixture
def registry_url(new_url: Callable[[], str]) -> str:
    return new_url()
