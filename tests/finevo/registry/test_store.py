from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from finevo.registry import Registry, RegistryError, content_hash, parse_version

SMA = '''def sma(symbol: str, window: int = 20) -> float:
    """Simple moving average."""
    return 1.0
'''
SMA2 = SMA.replace("return 1.0", "return 2.0")
DRAWDOWN = '''def max_drawdown(symbol: str, period: str = "1y") -> float:
    return -0.1
'''


@pytest.fixture
def reg(tmp_path: Path) -> Registry:
    r = Registry(f"sqlite:///{tmp_path / 'db' / 'registry.db'}", tmp_path / "tools")
    yield r
    r.close()


def _sma(reg: Registry, code: str = SMA, **kw) -> object:  # type: ignore[no-untyped-def]
    return reg.register("sma", code, indicator="sma", output_type="numeric", category="calculation", **kw)


def test_register_writes_code_file_and_row(reg: Registry) -> None:
    assert reg.is_empty()
    tool = _sma(reg)
    assert not reg.is_empty()
    assert tool.version == "1.0.0" and tool.status == "provisional"
    assert tool.content_hash == content_hash(SMA)
    assert tool.code_path == f"sma_v1.0.0_{content_hash(SMA)[:8]}.py"
    assert (reg.code_dir / tool.code_path).read_text() == SMA
    assert reg.read_code(tool) == SMA
    assert tool.signature["function"] == "sma"
    assert [p["name"] for p in tool.signature["params"]] == ["symbol", "window"]
    assert tool.created_at is not None


def test_same_content_is_the_same_tool(reg: Registry) -> None:
    first = _sma(reg)
    again = _sma(reg)
    assert again.id == first.id and again.version == "1.0.0"
    assert len(reg.list()) == 1
    assert len(list(reg.code_dir.glob("*.py"))) == 1


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
    dd = reg.register("max_drawdown", DRAWDOWN, indicator="max_drawdown", output_type="numeric")
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
        reg.register("../evil", SMA, indicator="sma", output_type="numeric")
    with pytest.raises(ValueError, match="exactly one public function"):
        reg.register("two", SMA + DRAWDOWN, indicator="x", output_type="numeric")
    assert reg.is_empty() and list(reg.code_dir.iterdir()) == []


def test_read_code_detects_missing_and_edited_files(reg: Registry) -> None:
    tool = _sma(reg)
    path = reg.code_file(tool)
    path.write_text(SMA2)
    with pytest.raises(RegistryError, match="does not match its hash"):
        reg.read_code(tool)
    path.unlink()
    with pytest.raises(RegistryError, match="missing"):
        reg.read_code(tool)


def test_traces_are_written_and_capped(reg: Registry) -> None:
    tool = _sma(reg)
    big = "x" * (200 * 1024)
    trace = reg.record_trace(tool.id, "calc_001", {"symbol": "AAPL", "window": 20}, 187.25, "execution", 0.42,
                             "ok", stdout=big, stderr="warn é")
    reg.record_trace(tool.id, "calc_002", {"symbol": "MSFT"}, {"a": float("nan")}, "selftest", 0.1, "exception",
                     error={"type": "ToolCrashed", "message": "boom"})
    reg.record_trace(None, "sec_001", {}, None, "policy", 0.0, "blocked")
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
    reg.record_attempt("calc_001", 0, "selftest", False, tool_id=v1.id, code_hash=v1.content_hash,
                       error={"type": "ToolCrashed"})
    reg.record_attempt("calc_001", 1, "done", True, tool_id=v2.id, code_hash=v2.content_hash,
                       parent_hash=v1.content_hash)
    attempts = reg.attempts("calc_001")
    assert [(a.attempt, a.ok, a.stage) for a in attempts] == [(0, False, "selftest"), (1, True, "done")]
    assert attempts[1].parent_hash == v1.content_hash
    assert [t.version for t in reg.lineage(v2)] == ["1.1.0", "1.0.0"]


def test_clear_removes_rows_and_files(reg: Registry) -> None:
    tool = _sma(reg)
    reg.record_trace(tool.id, "calc_001", {}, 1.0, "execution", 0.1, "ok")
    (reg.code_dir / "notes.txt").write_text("keep me")
    assert reg.clear() == 1
    assert reg.is_empty() and reg.traces() == []
    assert sorted(p.name for p in reg.code_dir.iterdir()) == ["notes.txt"]


def test_reconcile_after_a_crash_between_file_and_row(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'registry.db'}"
    reg = Registry(url, tmp_path / "tools")
    kept = reg.register("sma", SMA, indicator="sma", output_type="numeric")
    lost = reg.register("max_drawdown", DRAWDOWN, indicator="max_drawdown", output_type="numeric")
    reg.record_trace(lost.id, "calc_009", {}, 1.0, "execution", 0.1, "ok")
    child = reg.register("sma", SMA2, indicator="sma", output_type="numeric", parent_id=lost.id)
    reg.close()
    # a run died after writing a code file but before its row committed, and a file was lost
    orphan = tmp_path / "tools" / "ema_v1.0.0_0123abcd.py"
    orphan.write_text("def ema(symbol: str) -> float:\n    return 0.0\n")
    temp = tmp_path / "tools" / ".tmp-half.py"
    temp.write_text("def half(")
    old = time.time() - 3600
    for p in (orphan, temp):
        os.utime(p, (old, old))
    (tmp_path / "tools" / lost.code_path).unlink()

    reopened = Registry(url, tmp_path / "tools")  # reconciles on open
    report = reopened.last_reconcile
    assert report.removed_rows == ["max_drawdown v1.0.0"]
    assert sorted(report.removed_files) == sorted([orphan.name, temp.name])
    assert [t.name for t in reopened.list()] == ["sma", "sma"]
    assert not orphan.exists() and not temp.exists()
    assert reopened.read_code(reopened.get("sma", "1.0.0")) == SMA
    assert reopened.get_by_id(child.id).parent_id is None
    assert reopened.traces(task_id="calc_009")[0].tool_id is None
    assert kept.id in {t.id for t in reopened.list()}
    assert not reopened.reconcile().changed


def test_fresh_orphans_survive_startup_but_not_an_explicit_reconcile(tmp_path: Path) -> None:
    reg = Registry(f"sqlite:///{tmp_path / 'r.db'}", tmp_path / "tools")
    fresh = tmp_path / "tools" / "ema_v1.0.0_0123abcd.py"
    fresh.write_text("def ema(symbol: str) -> float:\n    return 0.0\n")
    assert not Registry(reg.url, reg.code_dir).last_reconcile.changed  # maybe another writer's file
    assert fresh.exists()
    assert reg.reconcile().removed_files == [fresh.name]


def test_default_locations_follow_settings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FINEVO_REGISTRY_DIR", str(tmp_path / "reg"))
    monkeypatch.delenv("FINEVO_REGISTRY_URL", raising=False)
    reg = Registry()
    _sma(reg)
    assert (tmp_path / "reg" / "registry.db").is_file()
    assert reg.code_dir == tmp_path / "reg" / "tools"
    assert len(list(reg.code_dir.glob("sma_v1.0.0_*.py"))) == 1


def test_in_memory_database(tmp_path: Path) -> None:
    reg = Registry("sqlite://", tmp_path / "code")
    tool = _sma(reg)
    assert reg.get("sma").id == tool.id
    assert "sqlite://" in repr(reg)


def test_concurrent_registrations_get_distinct_versions(reg: Registry) -> None:
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
    assert len(list(reg.code_dir.glob("sma_v*.py"))) == 4
