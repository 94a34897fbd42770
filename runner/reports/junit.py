"""``junit.xml``: one testsuite per category, one testcase per task (via the ``junit-xml`` package).

``<failure>`` for a wrong result, ``<error>`` for a broken run, ``<skipped>`` for a task not run.
The ``junit-xml`` package silently drops a failure or error whose message and output are both
empty -- which a CI publisher would read as a pass -- so every one gets a non-empty message here.
"""

from __future__ import annotations

import json
from typing import Any

from junit_xml import TestCase, TestSuite, to_xml_report_string

from finevo.vocabulary import Category
from runner.records import PayloadState, SecurityState, TaskState


def _message(reason: Any, fallback: str) -> str:
    text = str(reason or "").strip()
    return text.splitlines()[0][:500] if text else fallback


def _properties(doc: dict[str, Any]) -> dict[str, str]:
    cfg = doc["config"]
    props: dict[str, str] = {"run_id": doc["run_id"], "partial": str(doc["partial"]).lower(),
                             "verdict": doc["verdict"]["status"]}
    for key in ("git_sha", "model", "provider", "temperature", "snapshot_hash", "snapshot_as_of", "judge_version",
                "min_pass_rate", "agent_mode", "max_refinements", "task_timeout_s"):
        value = cfg.get(key)
        props[key] = "" if value is None else str(value)
    return props


def _task_case(t: dict[str, Any]) -> TestCase:
    out = [f"query: {t['query']}", f"state: {t['state']}", f"stage: {t['stage']}",
           f"tool: {t['tool']['name']} v{t['tool']['version']} ({t['tool']['source']}), "
           f"refinements: {t['refinements']}",
           f"expected: {json.dumps(t['expected'], sort_keys=True, default=str)}",
           f"actual: {json.dumps(t['actual'], sort_keys=True, default=str)}"]
    for p in t.get("probes") or []:
        out.append(f"probe {p['index']} {json.dumps(p['args'], sort_keys=True, default=str)}: {p['state']} "
                   f"(expected {json.dumps(p['expected'], sort_keys=True, default=str)}, "
                   f"actual {json.dumps(p['actual'], sort_keys=True, default=str)})")
    if t.get("code"):
        out += ["--- code ---", t["code"]]
    if t.get("stdout"):
        out += ["--- tool stdout ---", t["stdout"]]
    case = TestCase(t["task_id"], classname=f"finevo.{t['category']}", elapsed_sec=t["duration_s"],
                    stdout="\n".join(out), stderr=t.get("stderr") or None)
    state = t["state"]
    if state == TaskState.FAIL:
        case.add_failure_info(message=_message(t["reason"], "task failed (no reason recorded)"),
                              failure_type=(t.get("error") or {}).get("code") or "wrong_result")
    elif state == TaskState.ERROR:
        case.add_error_info(message=_message(t["reason"], "task errored (no reason recorded)"),
                            error_type=(t.get("error") or {}).get("code") or "error")
    elif state == TaskState.SKIPPED:
        case.add_skipped_info(message=_message(t["reason"], "not run"))
    return case


def _security_case(s: dict[str, Any]) -> TestCase:
    out = [f"query: {s['query']}", f"attack: {s['attack']}", f"state: {s['state']}",
           f"blocked by: {s['blocked_by']}", f"stage: {s['stage']}"]
    if s.get("code"):
        out += ["--- code ---", s["code"]]
    case = TestCase(s["task_id"], classname="finevo.security", elapsed_sec=s["duration_s"], stdout="\n".join(out))
    if s["state"] == SecurityState.UNBLOCKED:
        case.add_failure_info(message=_message(s["reason"], "security task was not blocked"), failure_type="unblocked")
    elif s["state"] == SecurityState.ERROR:
        case.add_error_info(message=_message(s["reason"], "security task errored"), error_type="error")
    elif s["state"] == SecurityState.SKIPPED:
        case.add_skipped_info(message=_message(s["reason"], "not run"))
    return case


def _payload_case(p: dict[str, Any]) -> TestCase:
    case = TestCase(f"payload:{p['payload_id']}", classname="finevo.security.payloads", elapsed_sec=p["duration_s"],
                    stdout=f"attempt: {p['attempt']}\nstate: {p['state']}\nlayer: {p['layer']}\nstatus: {p['status']}")
    if p["state"] == PayloadState.UNBLOCKED:
        case.add_failure_info(message=_message(p["reason"], "payload was not contained"), failure_type="unblocked")
    elif p["state"] == PayloadState.ERROR:
        case.add_error_info(message=_message(p["reason"], "payload could not be judged"), error_type="error")
    elif p["state"] == PayloadState.SKIPPED:
        case.add_skipped_info(message=_message(p["reason"], "not run"))
    return case


def render(doc: dict[str, Any]) -> str:
    props = _properties(doc)
    cases: dict[str, list[TestCase]] = {c.value: [] for c in Category}
    for t in doc["tasks"]:
        cases.setdefault(t["category"], []).append(_task_case(t))
    for s in doc["security"]["tasks"]:
        cases[Category.SECURITY].append(_security_case(s))
    for p in doc["payloads"]:
        cases[Category.SECURITY].append(_payload_case(p))
    suites = [TestSuite(f"finevo-verify.{cat}", test_cases=rows, id=doc["run_id"], properties=props,
                        timestamp=doc["started_at"])
              for cat, rows in cases.items() if rows]
    return str(to_xml_report_string(suites, prettyprint=True, encoding="utf-8"))
