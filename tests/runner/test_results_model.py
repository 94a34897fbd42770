"""The typed results model: its generated schema is the committed one, and it refuses what is not true."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from finevo.errors import InputError
from runner.cli import main
from runner.records import ContainmentSelftest, PayloadResult, SecurityResult, TaskResult
from runner.reports import document, schema
from runner.reports.model import SCHEMA_VERSION
from tests.runner.reports_support import config, make_doc


def _doc() -> dict[str, Any]:
    tasks = [TaskResult("calc_001", "calculation", "q", "pass", "ok"),
             TaskResult("calc_002", "calculation", "q", "fail", "wrong"),
             TaskResult("fetch_001", "fetch", "q", "skipped", "not run")]
    security = [SecurityResult("sec_001", "q", "a", "blocked", "blocked by policy", blocked_by="policy")]
    payloads = [PayloadResult("pay_001", "x", "contained", "ran", layer="isolation")]
    cfg = config(baseline={"path": "b.json", "passing_tasks": ["calc_001", "calc_002"], "target_pass_rate": 0.3})
    return make_doc(tasks, security, payloads, config=cfg).to_json_dict()


def test_the_committed_schema_is_the_one_the_model_generates() -> None:
    committed = json.loads(schema.SCHEMA_PATH.read_text(encoding="utf-8"))
    assert committed == schema.generate(), "regenerate it: finevo-verify schema"
    assert schema.check()


def test_schema_check_fails_on_drift(tmp_path: Path, capsys) -> None:
    stale = tmp_path / "results.schema.json"
    stale.write_text(schema.dumps().replace('"minimum": 0', '"minimum": 1', 1))
    assert main(["schema", "--check", "--out", str(stale)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert main(["schema", "--out", str(stale)]) == 0
    assert main(["schema", "--check", "--out", str(stale)]) == 0


def test_a_document_validates_against_the_generated_schema_with_formats() -> None:
    doc = _doc()
    checker = jsonschema.Draft202012Validator(schema.generate(), format_checker=jsonschema.FormatChecker())
    checker.validate(doc)
    bad = copy.deepcopy(doc)
    bad["started_at"] = "yesterday-ish"
    assert list(checker.iter_errors(bad))


@pytest.mark.parametrize("change, where", [
    (lambda d: d.update(started_at="yesterday-ish"), "started_at"),
    (lambda d: d.update(finished_at="2025-01-01T00:00:01"), "finished_at"),  # no zone
    (lambda d: d.update(surprise=1), "surprise"),
    (lambda d: d["config"].update(surprise=1), "config/surprise"),
    (lambda d: d["tasks"][0].update(surprise=1), "tasks/0/surprise"),
    (lambda d: d["tasks"][0].update(state="passed"), "tasks/0/state"),
    (lambda d: d["tasks"][0].update(category="bonds"), "tasks/0/category"),
    (lambda d: d["tasks"][0]["tool"].update(source="stolen"), "tasks/0/tool/source"),
    (lambda d: d["security"]["tasks"][0].update(state="passed"), "security/tasks/0/state"),
    (lambda d: d["payloads"][0].update(state="fine"), "payloads/0/state"),
    (lambda d: d["verdict"].update(status="green"), "verdict/status"),
    (lambda d: d.update(schema_version="3.0"), "schema_version"),
    (lambda d: d.update(run_id="../etc"), "run_id"),
])
def test_malformed_documents_are_refused_naming_the_place(change, where) -> None:
    doc = _doc()
    change(doc)
    with pytest.raises(InputError) as err:
        document.parse(json.dumps(doc), source="r.json")
    assert "r.json" in err.value.message
    if where != "schema_version":
        assert where in err.value.message


@pytest.mark.parametrize("change, words", [
    (lambda d: d["summary"].update(passed=2), "summary.passed"),
    (lambda d: d["summary"].update(pass_rate=0.9), "summary.pass_rate"),
    (lambda d: d["per_category"]["calculation"].update(failed=0), "per_category.calculation"),
    (lambda d: d["security"].update(blocked=0), "security.blocked"),
    (lambda d: d["security"].update(unblocked_ids=["sec_001"]), "unblocked_ids"),
    (lambda d: d["per_category"]["security"].update(passed=0), "per_category.security"),
    (lambda d: d.update(regressions=[]) or d["verdict"].update(status="passed", exit_code=0, passed=True),
     "a criterion is not met"),
    (lambda d: d["verdict"].update(passed=True), "verdict.passed"),
    (lambda d: d["verdict"].update(exit_code=0), "exit code"),
    (lambda d: d.update(partial=True), "partial"),
    (lambda d: d["regressions"][0].update(task_id="calc_001"), "regression calc_001"),
    (lambda d: d["tasks"].append(dict(d["tasks"][0])), "recorded twice"),
    (lambda d: d.update(improvements=["calc_002"]), "improvement"),
])
def test_counts_and_verdict_must_match_the_records(change, words) -> None:
    doc = _doc()
    change(doc)
    with pytest.raises(InputError) as err:
        document.validate(doc, source="r.json")
    assert words in err.value.message


def test_a_round_trip_keeps_everything(tmp_path: Path) -> None:
    doc = document.validate(_doc())
    path = tmp_path / "results.json"
    path.write_text(document.dumps(doc))
    again = document.load(path)
    assert again == doc and again.schema_version == SCHEMA_VERSION


def test_optional_fields_from_other_parts_of_the_gate_are_accepted() -> None:
    doc = _doc()
    doc["config"].update(worlds={"count": 3, "seed": 7}, isolation="weak", require_isolation=None,
                         sandbox_layers={"landlock": True, "seccomp": False, "pidns": True, "audit_hook": True})
    doc["containment_selftest"] = {"enabled": True, "ok": False, "duration_s": 0.4, "reason": "1 escaped",
                                   "probes": [{"name": "write_home", "contained": False, "layer": None,
                                               "detail": "wrote ~/x"}]}
    doc["tasks"][0]["worlds"] = [{"world": "seed-7", "kind": "seed", "as_of": "2024-12-31", "state": "pass",
                                  "reason": "every value matched", "checks": 3, "duration_s": 0.2}]
    parsed = document.validate(doc)
    assert parsed.config.worlds is not None and parsed.config.worlds.count == 3
    assert parsed.containment_selftest is not None and parsed.containment_selftest.ok is False
    assert parsed.tasks[0].worlds[0].state == "pass" and parsed.tasks[0].worlds[0].checks == 3
    doc["config"]["isolation"] = "strong"
    with pytest.raises(InputError, match="config/isolation"):
        document.validate(doc)


def test_a_schema_1_0_document_is_read_with_its_verdict_recomputed(tmp_path: Path) -> None:
    new = _doc()
    old = copy.deepcopy(new)
    old["schema_version"] = "1.0"
    for c in old["verdict"]["criteria"]:
        c["ok"] = True  # 1.0 knew no "not assessed"
    old["verdict"].update(status="passed", exit_code=0, passed=True, reasons=[])  # what it claims is ignored
    path = tmp_path / "results.json"
    path.write_text(json.dumps(old))
    doc = document.load(path)
    assert doc.schema_version == "2.0" and doc.verdict.status == "failed"
    assert [r.task_id for r in doc.regressions] == ["calc_002"]
    old["tasks"][0]["surprise"] = 1
    path.write_text(json.dumps(old))
    with pytest.raises(InputError, match=r"schema 1\.0 results"):
        document.load(path)


def test_an_oversized_results_file_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(document.dumps(document.validate(_doc())))
    with pytest.raises(InputError, match="over the limit"):
        document.load(path, max_bytes=100)


def test_a_deeply_nested_tool_value_is_bounded_not_fatal(tmp_path: Path) -> None:
    value: Any = 1.0
    for _ in range(5000):
        value = [value]
    task = TaskResult("calc_001", "calculation", "q", "fail", "wrong", actual=value)
    doc = make_doc([task])
    path = tmp_path / "results.json"
    path.write_text(document.dumps(doc))
    assert "nested deeper than" in path.read_text()
    assert document.load(path) == doc


def test_the_document_is_typed_only_and_a_change_is_validated_as_a_whole() -> None:
    """No dict view (``doc["verdict"]``): fields are read typed; JSON values exist only at the boundary."""
    doc = document.validate(_doc())
    with pytest.raises(TypeError):
        doc["verdict"]  # type: ignore[index]
    assert not hasattr(doc, "get") and doc.verdict.status == "failed"
    selftest = {"enabled": True, "ok": True, "duration_s": 0.3, "reason": "every probe contained",
                "probes": [{"name": "read_canary", "contained": True, "layer": "landlock", "detail": "EACCES"}]}
    changed = document.validate({**doc.to_json_dict(), "containment_selftest": selftest})
    assert changed.containment_selftest is not None and changed.containment_selftest.probes[0].layer == "landlock"
    with pytest.raises(InputError, match="summary"):
        document.validate({**doc.to_json_dict(), "summary": {**doc.summary.model_dump(), "passed": 99}})


def test_a_merge_keeps_the_worst_containment_self_test() -> None:
    from runner.cli.results import merge_documents

    def proof(ok: bool | None) -> ContainmentSelftest:
        return ContainmentSelftest(enabled=True, ok=ok, duration_s=0.1, reason=f"ok={ok}")

    first = make_doc([TaskResult("calc_001", "calculation", "q", "pass", "ok")], run_id="a",
                     containment_selftest=proof(True))
    second = make_doc([TaskResult("calc_002", "calculation", "q", "pass", "ok")], run_id="b",
                      containment_selftest=proof(False))
    merged = merge_documents([first, second])
    assert merged.containment_selftest is not None and merged.containment_selftest.ok is False
    assert [t.task_id for t in merged.tasks] == ["calc_001", "calc_002"]
