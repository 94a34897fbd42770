"""Eight processes register tools into one registry at once: PostgreSQL server and SQLite (WAL)."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable

import pytest

from tests.finevo.registry.hammer import check, hammer

PROCS = 8
PER_PROC = 24


@pytest.mark.slow
def test_many_processes_get_unique_gap_free_versions_and_lose_nothing(registry_url: str) -> None:
    result = hammer(registry_url, procs=PROCS, per_proc=PER_PROC)
    check(registry_url, result, PER_PROC)
    assert result.registrations == PROCS * PER_PROC


def _open(url: str, barrier: object, out: object) -> None:
    from finevo.registry import Registry

    try:
        barrier.wait(timeout=120)  # type: ignore[attr-defined]
        Registry(url).close()
        out.put("ok")  # type: ignore[attr-defined]
    except BaseException as exc:  # reported to the parent
        out.put(f"{type(exc).__name__}: {exc}")  # type: ignore[attr-defined]


def test_processes_opening_an_empty_database_at_once_create_the_schema_once(new_url: Callable[[], str]) -> None:
    from finevo.registry import Registry, ToolInterface

    url = new_url()
    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(PROCS), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(url, barrier, out)) for _ in range(PROCS)]
    for p in procs:
        p.start()
    outcomes = [out.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    assert outcomes == ["ok"] * PROCS
    with Registry(url) as reg:
        assert reg.is_empty()
        reg.register("sma", "def sma(symbol: str) -> float:\n    return 1.0\n", ToolInterface("sma", "numeric"))
