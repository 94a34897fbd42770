"""The results document (``results.json``): assembled from records, validated, reloaded.

Every other report (JUnit, markdown, GitHub outputs) is rendered from this one typed document
(:class:`runner.reports.model.ResultsDocument`), so ``finevo-verify report`` can re-render all of
them from ``results.json`` or from ``events.jsonl``.

Reading a document written with schema 1.0: its records are validated against today's record
models and its verdict, figures and criteria are recomputed from them (never taken as written), so
an old ``results.json`` re-renders with the same rules as a new one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from finevo.errors import InputError
from finevo.jsontypes import JSONObject
from finevo.normalize import RECORD, normalize
from runner.records import (
    MAX_VALUE_DEPTH,
    ContainmentSelftest,
    PayloadResult,
    SecurityResult,
    SelfCheck,
    TaskResult,
)
from runner.reports.escape import log_text
from runner.reports.model import READABLE_VERSIONS, SCHEMA_VERSION, ResultsDocument, RunConfig
from runner.verdict.decide import VerdictOptions, compute_verdict
from runner.verdict.trials import StatPolicy

__all__ = ["SCHEMA_VERSION", "ResultsDocument", "RunRecords", "RunSpan", "assemble", "dumps", "load", "parse",
           "reassemble", "records_of", "schema", "stable_view", "validate"]

#: A results file larger than this is refused before it is parsed (a real run writes a few MiB).
MAX_RESULTS_BYTES = 256 * 1024 * 1024
#: How deep a value sits in the document (results / tasks / [i] / probes / [j] / expected / ...).
_DOCUMENT_DEPTH = 16
_VOLATILE_KEYS = ("started_at", "finished_at", "duration_s", "latency_s", "timings")


def _first_error(exc: ValidationError) -> str:
    """The first violation on one line (a forged document's ids and keys are shown, never obeyed)."""
    err = exc.errors(include_url=False)[0]
    where = "/".join(str(p) for p in err["loc"]) or "(root)"
    return log_text(f"at {where}: {err['msg']}", 600)


def validate(data: Any, *, source: str = "results") -> ResultsDocument:
    """The typed document of ``data``; :class:`InputError` names the first violation."""
    if isinstance(data, ResultsDocument):
        data = data.to_json_dict()
    try:
        return ResultsDocument.model_validate(data)
    except ValidationError as exc:
        raise InputError(f"{source}: does not match the results schema {_first_error(exc)}") from None


@dataclass(frozen=True)
class RunRecords:
    """What a run recorded: its task, security and payload results and its two self-tests."""

    tasks: Sequence[TaskResult]
    security: Sequence[SecurityResult]
    payloads: Sequence[PayloadResult]
    selfcheck: SelfCheck | None = None
    containment_selftest: ContainmentSelftest | None = None


@dataclass(frozen=True)
class RunSpan:
    """When a run started and finished, and how it ended: ``partial_signal`` the signal that cut it
    short (-1: killed or crashed), ``crash`` the error it failed with mid-run."""

    started_at: str
    finished_at: str
    duration_s: float
    partial_signal: int | None = None
    crash: str | None = None


def assemble(*, run_id: str, config: RunConfig | Mapping[str, Any], records: RunRecords, span: RunSpan,
             warnings: Sequence[str] = ()) -> ResultsDocument:
    """Compute the verdict and build the whole (validated) document, not yet written.

    ``span.crash``: the gate failed mid-run with this error (then ``span.partial_signal`` is -1).
    ``config``: the typed configuration, or its JSON values as read from a file (validated here).
    """
    tasks, security, payloads, selfcheck = records.tasks, records.security, records.payloads, records.selfcheck
    try:
        typed = config if isinstance(config, RunConfig) else RunConfig.model_validate(config)
    except ValidationError as exc:
        raise ValueError(f"run {run_id}: its configuration does not match the results model "
                         f"{_first_error(exc)}") from None
    config_json = typed.model_dump(mode="json")
    baseline = config_json.get("baseline")
    policy = StatPolicy.from_config(config_json, today=_day_of(span.started_at))
    judged = compute_verdict(tasks, security, payloads, VerdictOptions(
        baseline_passing=(baseline or {}).get("passing_tasks") if baseline else None,
        min_pass_rate=typed.min_pass_rate, partial_signal=span.partial_signal,
        selfcheck_ok=None if selfcheck is None or not selfcheck.enabled else bool(selfcheck.ok),
        selfcheck_reason=selfcheck.reason if selfcheck is not None else "", warnings=warnings, crash=span.crash,
        policy=policy))
    summary = {**judged.summary.model_dump(), "pass_rate": judged.pass_rate, "min_pass_rate": judged.min_pass_rate}
    data = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "partial": span.partial_signal is not None,
        "interrupted_by": span.partial_signal,
        "started_at": span.started_at,
        "finished_at": span.finished_at,
        "duration_s": round(span.duration_s, 3),
        "config": typed,
        "verdict": judged.verdict,
        "summary": summary,
        "per_category": judged.per_category,
        "regressions": judged.regressions,
        "improvements": judged.improvements,
        "unknown_baseline_ids": judged.unknown_baseline_ids,
        "security": {**judged.security.model_dump(), "tasks": list(security)},
        "payloads": list(payloads),
        "selfcheck": selfcheck,
        "containment_selftest": records.containment_selftest,
        "tasks": list(tasks),
        "statistics": judged.statistics,
    }
    try:
        return ResultsDocument.model_validate(data)
    except ValidationError as exc:  # the gate's own records do not fit its model: a bug, said plainly
        raise ValueError(f"run {run_id}: results do not match the results model {_first_error(exc)}") from None


def _day_of(timestamp: str) -> date | None:
    """The UTC day of an ISO time stamp (quarantine expiry is judged on the run's day, so a
    re-rendered report says what the run said)."""
    try:
        return datetime.fromisoformat(timestamp).astimezone(UTC).date()
    except ValueError:
        return None


def records_of(doc: ResultsDocument) -> tuple[list[TaskResult], list[SecurityResult], list[PayloadResult]]:
    return list(doc.tasks), list(doc.security.tasks), list(doc.payloads)


def reassemble(doc: ResultsDocument, *, config: RunConfig | Mapping[str, Any] | None = None) -> ResultsDocument:
    """Recompute the verdict of an existing document (after a merge, or under a changed ``config``)."""
    tasks, security, payloads = records_of(doc)
    return assemble(
        run_id=doc.run_id, config=doc.config if config is None else config,
        records=RunRecords(tasks, security, payloads, selfcheck=doc.selfcheck,
                           containment_selftest=doc.containment_selftest),
        span=RunSpan(doc.started_at.isoformat(), doc.finished_at.isoformat(), doc.duration_s,
                     partial_signal=doc.interrupted_by),
        warnings=list(doc.verdict.warnings))


def _upgrade_v1(data: JSONObject, source: str) -> ResultsDocument:
    """A schema 1.0 document: its records validated as today's, everything computed recomputed."""
    try:
        tasks = [TaskResult.from_dict(t) for t in data.get("tasks") or []]
        security = [SecurityResult.from_dict(s) for s in (data.get("security") or {}).get("tasks") or []]
        payloads = [PayloadResult.from_dict(p) for p in data.get("payloads") or []]
        verdict = data.get("verdict") or {}
        selfcheck = None if data.get("selfcheck") is None else SelfCheck.model_validate(data["selfcheck"])
        crash = next((r.split(": ", 1)[1].rsplit(": reports are partial", 1)[0]
                      for r in verdict.get("reasons") or [] if r.startswith("the gate crashed: ")), None)
        return assemble(
            run_id=data["run_id"], config=data["config"],
            records=RunRecords(tasks, security, payloads, selfcheck=selfcheck),
            span=RunSpan(data["started_at"], data["finished_at"], float(data["duration_s"]),
                         partial_signal=data.get("interrupted_by"), crash=crash),
            warnings=list(verdict.get("warnings") or []))
    except ValidationError as exc:
        raise InputError(f"{source}: schema 1.0 results do not match today's records {_first_error(exc)}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{source}: schema 1.0 results cannot be read: {exc}") from None


def parse(text: str | bytes, *, source: str = "results") -> ResultsDocument:
    """A typed document from JSON text (schema 2.0, or 1.0 upgraded)."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{source}:{exc.lineno}: results file is not valid JSON: {exc.msg}") from None
    except (UnicodeDecodeError, RecursionError) as exc:
        raise InputError(f"{source}: results file cannot be decoded: {type(exc).__name__}") from None
    if not isinstance(data, dict):
        raise InputError(f"{source}: results file must hold a JSON object")
    version = data.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise InputError(f"{source}: schema_version {version!r} is not one this finevo-verify reads "
                         f"({', '.join(READABLE_VERSIONS)})")
    if version == "1.0":
        return _upgrade_v1(data, source)
    return validate(data, source=source)


def load(path: str | Path, *, max_bytes: int = MAX_RESULTS_BYTES) -> ResultsDocument:
    """Read and validate a results file (refused unread when larger than ``max_bytes``)."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise InputError(f"{path}: results file is {size} bytes, over the limit of {max_bytes}")
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"{path}: results file not found") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read results: {exc.strerror or exc}") from None
    return parse(raw, source=str(path))


def dumps(doc: ResultsDocument | JSONObject) -> str:
    """results.json's text: strict JSON whatever a record holds (:data:`finevo.normalize.RECORD`);
    a lone surrogate (invalid UTF-8 a tool wrote) is kept as its JSON escape."""
    data = doc.to_json_dict() if isinstance(doc, ResultsDocument) else doc
    # A record bounds its values at MAX_VALUE_DEPTH already; the document's own nesting comes on top.
    safe = normalize(data, RECORD, max_depth=MAX_VALUE_DEPTH + _DOCUMENT_DEPTH)
    text = json.dumps(safe, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def schema() -> JSONObject:
    """The committed results JSON Schema (generated from the model: :mod:`runner.reports.schema`)."""
    from runner.reports.schema import SCHEMA_PATH

    loaded: JSONObject = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def stable_view(doc: Any) -> Any:
    """The document without timestamps and durations (what two identical runs share)."""
    if isinstance(doc, ResultsDocument):
        doc = doc.to_json_dict()
    if isinstance(doc, dict):
        return {k: stable_view(v) for k, v in doc.items()
                if k not in _VOLATILE_KEYS and not k.endswith("_s")}
    if isinstance(doc, list):
        return [stable_view(v) for v in doc]
    return doc
