"""The registry's behaviour, on SQLite and on a real PostgreSQL server (the ``backend`` fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from finevo.outcome import Attempt, ErrorInfo
from finevo.registry import Registry, RegistryError, ToolInterface, ToolRun, content_hash, parse_version

SMA = '''def sma(symbol: str, window: int = 20) -> float:
    """Simple moving average."""
    return 1.0
'''
SMA2 = SMA.replace("return 1.0", "return 2.0")
DRAWDOWN = '''def max_drawdown(symbol: str, period: str = "1y") -> float:
    return -0.1
'''


@pytest.fixture
def reg(registry_url: str, tmp_path: Path) -> Registry:
    r = Registry(registry_url, tmp_path / "tools")
    yield r
    r.close()


def _sma(reg: Registry, code: str = SMA, **kw) -> object:  # type: ignore[no-untyped-def]
    return reg.register("sma", code, ToolInterface("sma", "numeric"), **kw)


def _count(reg: Registry, table: str) -> int:
    with reg.engine.connect() as conn:
        return int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar_one())


def test_register_stores_code_and_row_in_the_database(reg: Registry) -> None:
    assert reg.is_empty()
    tool = _sma(reg)
    assert not reg.is_empty()
    assert tool.version == "1.0.0" and tool.status == "provisional"
    assert tool.content_hash == content_hash(SMA)
    assert tool.code_path == f"sma_v1.0.0_{content_hash(SMA)[:8]}.py"
    assert not reg.code_dir.exists()  # no file: any machine reaching the database loads the code
    # another process (a new connection, nothing cached) reads the same code
    with Registry(reg.url, reg.code_dir) as other:
        assert other.read_code(other.get("sma")) == SMA
    assert tool.signature["function"] == "sma"
    assert [p["name"] for p in tool.signature["params"]] == ["symbol", "window"]
    assert tool.created_at is not None


def test_same_content_is_the_same_tool(reg: Registry) -> None:
    first = _sma(reg)
    again = _sma(reg)
    assert again.id == first.id and again.version == "1.0.0"
    assert len(reg.list()) == 1
    assert _count(reg, "tool_code") == 1
    # the same code under another name is another tool sharing one code row
    other = reg.register("sma_copy", SMA, ToolInterface("sma", "numeric"))
    assert other.version == "1.0.0" and other.content_hash == first.content_hash
    assert _count(reg, "tool_code") == 1 and _count(reg, "tool_artifact") == 2


def test_failed_code_that_later_verifies_becomes_verified(reg: Registry) -> None:
    failed = _sma(reg, status="failed")
    assert reg.find("sma", "numeric", {"symbol"}) == []
    again = _sma(reg, status="verified")
    assert again.id == failed.id and again.version == failed.version
    assert again.status == "verified" and reg.get("sma").status == "verified"
    assert [t.id for t in reg.find("sma", "numeric", {"symbol"})] == [failed.id]
    # registering it as failed again does not demote a verified tool
    assert _sma(reg, status="failed").status == "verified"
    # nor does registering it again bring back a deprecated one
    reg.set_status(again, "deprecated")
    assert _sma(reg, status="verified").status == "deprecated"


def test_new_content_takes_the_next_version_numerically(reg: Registry) -> None:
    versions = []
    for i in range(12):
        versions.append(_sma(reg, SMA.replace("1.0", f"{i}.5")).version)
    assert versions[:3] == ["1.0.0", "1.1.0", "1.2.0"]
    assert versions[-1] == "1.11.0"
    assert reg.get("sma").version == "1.11.0"  # 1.11.0 > 1.9.0, not string order
    assert reg.get("sma", "1.9.0").version == "1.9.0"
    assert reg.get("nope") is None
    assert [t.version for t in reg.list()] == versions


def test_parse_version() -> None:
    assert parse_version("1.10.0") > parse_version("1.9.0")
    for bad in ("1.0", "v1.0.0", "1.01.0", ""):
        with pytest.raises(ValueError):
            parse_version(bad)


def test_find_returns_verified_fitting_tools_newest_first(reg: Registry) -> None:
    v1 = _sma(reg)
    assert reg.find("sma", "numeric", {"symbol"}) == []  # provisional is never reused
    reg.set_status(v1, "verified")
    v2 = _sma(reg, SMA2, parent_id=v1.id)
    reg.set_status(v2, "verified")
    found = reg.find("sma", "numeric", {"symbol", "window"})
    assert [t.version for t in found] == ["1.1.0", "1.0.0"]
    assert reg.find("sma", "boolean", {"symbol"}) == []
    assert reg.find("ema", "numeric", {"symbol"}) == []


def test_find_binds_task_arguments_to_the_signature(reg: Registry) -> None:
    reg.set_status(_sma(reg), "verified")
    assert reg.find("sma", "numeric", {"symbol"})            # window has a default
    assert reg.find("sma", "numeric", {"symbol", "window"})
    assert not reg.find("sma", "numeric", {"window"})         # symbol is required
    assert not reg.find("sma", "numeric", {"symbol", "period"})  # the tool cannot take period


def test_indicator_match_is_exact_not_substring(reg: Registry) -> None:
    reg.set_status(_sma(reg), "verified")
    dd = reg.register("max_drawdown", DRAWDOWN, ToolInterface("max_drawdown", "numeric"))
    reg.set_status(dd, "verified")
    assert [t.name for t in reg.find("max_drawdown", "numeric", {"symbol"})] == ["max_drawdown"]
    assert reg.find("ma", "numeric", {"symbol"}) == []


def test_status_transitions(reg: Registry) -> None:
    tool = _sma(reg)
    assert reg.set_status(tool, "verified").status == "verified"
    assert tool.status == "verified"
    with pytest.raises(ValueError, match="cannot go from verified to provisional"):
        reg.set_status(tool, "provisional")
    reg.set_status(tool.id, "deprecated")
    with pytest.raises(ValueError, match="cannot go from deprecated to verified"):
        reg.set_status(tool, "verified")
    assert reg.get("sma").status == "deprecated"
    assert reg.find("sma", "numeric", {"symbol"}) == []
    with pytest.raises(ValueError, match="unknown"):
        reg.set_status(tool, "great")
    with pytest.raises(KeyError):
        reg.set_status(999, "verified")
    other = _sma(reg, SMA2, status="failed")
    assert reg.set_status(other, "verified").status == "verified"


def test_register_rejects_bad_names_and_multi_function_code(reg: Registry) -> None:
    with pytest.raises(ValueError, match="identifier"):
        reg.register("../evil", SMA, ToolInterface("sma", "numeric"))
    with pytest.raises(ValueError, match="exactly one public function"):
        reg.register("two", SMA + DRAWDOWN, ToolInterface("x", "numeric"))
    assert reg.is_empty() and _count(reg, "tool_code") == 0


def test_read_code_detects_code_edited_in_the_database(reg: Registry) -> None:
    tool = _sma(reg)
    with reg.engine.begin() as conn:
        conn.execute(text("UPDATE tool_code SET code = :code"), {"code": SMA2})
    with pytest.raises(RegistryError, match="does not match its hash"):
        reg.read_code(tool)


def test_a_row_never_points_at_missing_code(reg: Registry) -> None:
    """The foreign key refuses both a tool without its code and code deleted under a tool."""
    from sqlalchemy.exc import IntegrityError

    tool = _sma(reg)
    with pytest.raises(IntegrityError), reg.engine.begin() as conn:
        conn.execute(text("DELETE FROM tool_code WHERE content_hash = :h"), {"h": tool.content_hash})
    with pytest.raises(IntegrityError), reg.engine.begin() as conn:
        conn.execute(text(
            "INSERT INTO tool_artifact (name, version, major, minor, patch, content_hash, category, indicator, "
            "output_type, signature, status, created_at, description) VALUES ('ghost', '1.0.0', 1, 0, 0, "
            "'00', 'calculation', 'x', 'numeric', '{}', 'provisional', CURRENT_TIMESTAMP, '')"))
    assert reg.read_code(tool) == SMA and [t.name for t in reg.list()] == ["sma"]


def test_traces_are_written_and_capped(reg: Registry) -> None:
    tool = _sma(reg)
    big = "x" * (200 * 1024)
    trace = reg.record_trace(tool.id, "calc_001", ToolRun("execution", {"symbol": "AAPL", "window": 20}, 187.25, 0.42,
                                                         "ok", stdout=big, stderr="warn é"))
    reg.record_trace(tool.id, "calc_002", ToolRun("selftest", {"symbol": "MSFT"}, {"a": float("nan")}, 0.1, "exception",
                                                  error={"type": "ToolCrashed", "message": "boom"}))
    reg.record_trace(None, "sec_001", ToolRun("policy", {}, None, 0.0, "blocked"))
    again = reg.traces(tool.id)
    assert [t.task_id for t in again] == ["calc_001", "calc_002"]
    first = again[0]
    assert first.id == trace.id
    assert first.arguments == {"symbol": "AAPL", "window": 20}
    assert first.result == 187.25 and first.exit_status == "ok" and first.duration_s == pytest.approx(0.42)
    assert len(first.stdout.encode()) <= 64 * 1024 and "more bytes cut" in first.stdout
    assert first.stderr == "warn é"
    assert again[1].result == {"a": None} and again[1].error["message"] == "boom"  # NaN: null
    assert len(reg.traces()) == 3
    assert [t.stage for t in reg.traces(task_id="sec_001")] == ["policy"]


def test_refinement_attempts_and_lineage(reg: Registry) -> None:
    v1 = _sma(reg)
    v2 = _sma(reg, SMA2, parent_id=v1.id)
    crashed = ErrorInfo(kind="tool", code="tool_crashed", type="ToolCrashed", message="the self-test crashed")
    reg.record_attempt("calc_001", Attempt(1, "selftest", False, error=crashed, code_hash=v1.content_hash),
                       tool_id=v1.id)
    reg.record_attempt("calc_001", Attempt(2, "done", True, code_hash=v2.content_hash, parent_hash=v1.content_hash),
                       tool_id=v2.id)
    attempts = reg.attempts("calc_001")
    assert [(a.attempt, a.ok, a.stage) for a in attempts] == [(1, False, "selftest"), (2, True, "done")]
    assert attempts[0].error is not None and attempts[0].error["type"] == "ToolCrashed"
    assert attempts[1].parent_hash == v1.content_hash
    assert [t.version for t in reg.lineage(v2)] == ["1.1.0", "1.0.0"]


def test_clear_removes_rows_and_code(reg: Registry) -> None:
    tool = _sma(reg)
    reg.record_trace(tool.id, "calc_001", ToolRun("execution", {}, 1.0, 0.1, "ok"))
    assert reg.clear() == 1
    assert reg.is_empty() and reg.traces() == [] and _count(reg, "tool_code") == 0


def test_default_locations_follow_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FINEVO_REGISTRY_DIR", str(tmp_path / "reg"))
    monkeypatch.delenv("FINEVO_REGISTRY_URL", raising=False)
    reg = Registry()
    _sma(reg)
    assert (tmp_path / "reg" / "registry.db").is_file()
    assert reg.code_dir == tmp_path / "reg" / "tools"  # where a 0.1.0 registry's files are (for migrate)
    reg.close()


def test_in_memory_database(tmp_path: Path) -> None:
    reg = Registry("sqlite://", tmp_path / "code")
    tool = _sma(reg)
    assert reg.get("sma").id == tool.id
    assert "sqlite://" in repr(reg)


def test_concurrent_threads_get_distinct_versions(reg: Registry) -> None:
    import threading

    errors: list[BaseException] = []

    def worker(i: int) -> None:
        try:
            _sma(reg, SMA.replace("1.0", f"{i}.25"))
        except BaseException as exc:  # surfaced by the assert below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert sorted(t.version for t in reg.list()) == ["1.0.0", "1.1.0", "1.2.0", "1.3.0"]
    assert _count(reg, "tool_code") == 4


def test_a_sqlite_registry_uses_the_wal_journal_and_a_busy_timeout(tmp_path: Path) -> None:
    with Registry(f"sqlite:///{tmp_path / 'registry.db'}") as reg, reg.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() >= 30_000
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
