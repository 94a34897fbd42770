"""``junit.xml``: one testsuite per category, one testcase per task (via the ``junit-xml`` package).

``<failure>`` for a wrong result (or an unblocked security item), ``<error>`` for a broken run,
``<skipped>`` for a task not run. A run without a verdict -- interrupted, crashed, or whose harness
self-check failed -- adds one failing testcase (suite ``finevo-verify.run``) that says so, so a
JUnit publisher never shows it green.

The output validates against a strict JUnit schema (``tests/runner/data/junit-strict.xsd``, the
constraints of the ``junit-10.xsd`` that pytest's own tests use): ``junit-xml`` writes a
``disabled`` attribute that schema refuses and times with more digits than it allows, so the XML
is post-processed. Every text went through :func:`runner.reports.escape.xml_text` (only characters
XML 1.0 allows) and is capped. The ``junit-xml`` package silently drops a failure or error whose
message and output are both empty -- which a publisher would read as a pass -- so every one gets a
non-empty message here.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from junit_xml import TestCase, TestSuite, to_xml_report_string

from finevo.vocabulary import Category
from runner.records import PayloadResult, PayloadState, SecurityResult, SecurityState, TaskResult, TaskState
from runner.reports.escape import short_value, xml_text
from runner.reports.model import DocumentLike, ResultsDocument

_MESSAGE_CAP = 500
_OUTPUT_CAP = 64 * 1024
_CODE_CAP = 32 * 1024


def _message(reason: str, fallback: str) -> str:
    text = xml_text(reason).strip()
    return xml_text(text.splitlines()[0], _MESSAGE_CAP) if text else fallback


def _json(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)[:2000]
    except (RecursionError, ValueError):
        return short_value(value, 2000)


def _properties(doc: ResultsDocument) -> dict[str, str]:
    cfg = doc.config
    values: dict[str, object] = {
        "run_id": doc.run_id, "partial": str(doc.partial).lower(), "verdict": doc.verdict.status.value,
        "evaluates_agent": str(doc.evaluates_agent).lower(), "git_sha": cfg.git_sha, "model": cfg.model,
        "provider": cfg.provider, "temperature": cfg.temperature, "snapshot_hash": cfg.snapshot_hash,
        "snapshot_as_of": cfg.snapshot_as_of, "judge_version": cfg.judge_version,
        "min_pass_rate": cfg.min_pass_rate, "agent_mode": cfg.agent_mode, "max_refinements": cfg.max_refinements,
        "task_timeout_s": cfg.task_timeout_s, "isolation": cfg.isolation}
    from runner.reports.repeats_section import junit_properties

    return {**{k: xml_text("" if v is None else str(v), 300) for k, v in values.items()}, **junit_properties(doc)}


def _task_case(t: TaskResult, repeats: int = 1, note: str | None = None) -> TestCase:
    out = [f"query: {t.query}", f"state: {t.state.value}", f"stage: {t.stage}",
           f"tool: {t.tool.name} v{t.tool.version} ({t.tool.source}), refinements: {t.refinements}",
           f"expected: {_json(t.expected)}", f"actual: {_json(t.actual)}"]
    for p in t.probes:
        out.append(f"probe {p.index} {_json(p.args)}: {p.state.value} "
                   f"(expected {_json(p.expected)}, actual {_json(p.actual)})")
    for w in t.worlds:
        out.append(f"world {w.world} ({w.kind}, as of {w.as_of}): {w.state.value}, {w.checks} check(s): {w.reason}")
    if t.state != TaskState.PASS and t.reason:
        out += ["--- reason ---", t.reason[:_OUTPUT_CAP]]
    if t.code:
        out += ["--- code ---", t.code[:_CODE_CAP]]
    if t.stdout:
        out += ["--- tool stdout ---", t.stdout[:_OUTPUT_CAP]]
    from runner.reports.repeats_section import case_name

    case = TestCase(xml_text(case_name(t.task_id, t.repeat, repeats), 200), classname=f"finevo.{t.category}",
                    elapsed_sec=t.duration_s,
                    stdout=xml_text("\n".join(out), _OUTPUT_CAP * 2),
                    stderr=xml_text(t.stderr, _OUTPUT_CAP) or None)
    code = t.error.code if t.error is not None else None
    if note is not None and t.state in (TaskState.FAIL, TaskState.ERROR):
        # A flaky or quarantined task's failed trial does not gate: shown as skipped, with why.
        case.add_skipped_info(message=xml_text(f"{t.state.value} ({note}): {t.reason}", 2000))
    elif t.state == TaskState.FAIL:
        case.add_failure_info(message=_message(t.reason, "task failed (no reason recorded)"),
                              failure_type=xml_text(code or "wrong_result", 100))
    elif t.state == TaskState.ERROR:
        case.add_error_info(message=_message(t.reason, "task errored (no reason recorded)"),
                            error_type=xml_text(code or "error", 100))
    elif t.state == TaskState.SKIPPED:
        case.add_skipped_info(message=_message(t.reason, "not run"))
    return case


def _security_case(s: SecurityResult) -> TestCase:
    out = [f"query: {s.query}", f"attack: {s.attack}", f"outcome: {s.state.value}",
           f"stopped by: {s.blocked_by or 'nothing'}", f"stage: {s.stage}"]
    if s.code:
        out += ["--- code ---", s.code[:_CODE_CAP]]
    case = TestCase(xml_text(s.task_id, 200), classname="finevo.security", elapsed_sec=s.duration_s,
                    stdout=xml_text("\n".join(out), _OUTPUT_CAP * 2))
    if s.state == SecurityState.UNBLOCKED:
        case.add_failure_info(message=_message(s.reason, "security task was not blocked"), failure_type="unblocked")
    elif s.state == SecurityState.ERROR:
        case.add_error_info(message=_message(s.reason, "security task errored"), error_type="error")
    elif s.state == SecurityState.SKIPPED:
        case.add_skipped_info(message=_message(s.reason, "not run"))
    return case


def _payload_case(p: PayloadResult) -> TestCase:
    case = TestCase(xml_text(f"payload:{p.payload_id}", 200), classname="finevo.security.payloads",
                    elapsed_sec=p.duration_s,
                    stdout=xml_text(f"attempt: {p.attempt}\noutcome: {p.state.value}\nlayer: {p.layer}\n"
                                    f"status: {p.status}", _OUTPUT_CAP))
    if p.state == PayloadState.UNBLOCKED:
        case.add_failure_info(message=_message(p.reason, "payload was not contained"), failure_type="unblocked")
    elif p.state == PayloadState.ERROR:
        case.add_error_info(message=_message(p.reason, "payload could not be judged"), error_type="error")
    elif p.state == PayloadState.SKIPPED:
        case.add_skipped_info(message=_message(p.reason, "not run"))
    return case


def _run_case(doc: ResultsDocument) -> TestCase | None:
    """One failing testcase for a run without a verdict (None when the run has one)."""
    if doc.has_verdict:
        return None
    name = "the run did not finish" if doc.partial else "the run produced no verdict"
    reason = "; ".join(doc.verdict.reasons) or name
    case = TestCase(name, classname="finevo.run", elapsed_sec=doc.duration_s,
                    stdout=xml_text(f"verdict: {doc.verdict.status.value} (exit {doc.verdict.exit_code})\n"
                                    + "\n".join(doc.verdict.reasons), _OUTPUT_CAP))
    case.add_failure_info(message=_message(reason, name), failure_type=doc.verdict.status.value)
    return case


def _strict(xml: str) -> str:
    """junit-xml's output made valid against the strict schema: no ``disabled`` attribute, times
    with at most three decimals."""
    root = ET.fromstring(xml)
    for element in root.iter():
        element.attrib.pop("disabled", None)
        if "time" in element.attrib:
            try:
                element.set("time", f"{max(0.0, float(element.get('time') or 0)):.3f}")
            except ValueError:
                element.set("time", "0.000")
    ET.indent(root, space="\t")
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def render(doc: DocumentLike) -> str:
    doc = ResultsDocument.of(doc)
    props = _properties(doc)
    cases: dict[str, list[TestCase]] = {c.value: [] for c in Category}
    run_case = _run_case(doc)
    if run_case is not None:
        cases = {"run": [run_case], **cases}
    from runner.reports.repeats_section import junit_notes

    notes = junit_notes(doc)
    repeats = doc.statistics.repeats if doc.statistics is not None else 1
    for t in doc.tasks:
        cases[t.category.value].append(_task_case(t, repeats, notes.get(t.task_id)))
    for s in doc.security.tasks:
        cases[Category.SECURITY].append(_security_case(s))
    for p in doc.payloads:
        cases[Category.SECURITY].append(_payload_case(p))
    suites = [TestSuite(f"finevo-verify.{cat}", test_cases=rows, id=xml_text(doc.run_id, 200), properties=props,
                        timestamp=doc.started_at.isoformat())
              for cat, rows in cases.items() if rows]
    return _strict(to_xml_report_string(suites, prettyprint=False, encoding="utf-8"))
