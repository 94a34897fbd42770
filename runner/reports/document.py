"""The results document (``results.json``): assembled from records, validated, reloaded.

Every other report (JUnit, markdown, GitHub outputs) is rendered from this one document, so
``finevo-verify report`` can re-render all of them from ``results.json`` or from ``events.jsonl``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema

from finevo.errors import InputError
from finevo.jsonsafe import json_safe
from runner.records import PayloadResult, SecurityResult, TaskResult
from runner.verdict import compute_verdict

SCHEMA_VERSION = "1.0"
SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schemas" / "results.schema.json"
_VOLATILE_KEYS = ("started_at", "finished_at", "duration_s", "latency_s", "timings")


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


def validate(doc: dict[str, Any], *, source: str = "results") -> None:
    """Raise :class:`InputError` naming the first schema violation."""
    try:
        jsonschema.validate(doc, schema())
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(root)"
        raise InputError(f"{source}: does not match results schema at {where}: {exc.message}") from None


def assemble(*, run_id: str, config: dict[str, Any], tasks: Sequence[TaskResult],
             security: Sequence[SecurityResult], payloads: Sequence[PayloadResult],
             started_at: str, finished_at: str, duration_s: float, partial_signal: int | None = None,
             selfcheck: dict[str, Any] | None = None, warnings: Sequence[str] = (),
             crash: str | None = None) -> dict[str, Any]:
    """Compute the verdict and build the whole document (not yet written).

    ``crash``: the gate failed mid-run with this error (then ``partial_signal`` is -1).
    """
    baseline = config.get("baseline")
    verdict = compute_verdict(
        tasks, security, payloads,
        baseline_passing=(baseline or {}).get("passing_tasks") if baseline else None,
        min_pass_rate=float(config["min_pass_rate"]), partial_signal=partial_signal,
        selfcheck_ok=None if selfcheck is None or not selfcheck.get("enabled") else bool(selfcheck.get("ok")),
        selfcheck_reason=str((selfcheck or {}).get("reason", "")), warnings=warnings, crash=crash)
    summary = {**verdict.summary.to_dict(), "pass_rate": verdict.pass_rate, "min_pass_rate": verdict.min_pass_rate}
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "partial": partial_signal is not None,
        "interrupted_by": partial_signal,
        "started_at": started_at,
        "finished_at": finished_at,
        "duration_s": round(duration_s, 3),
        "config": config,
        "verdict": {"status": verdict.status, "exit_code": verdict.exit_code, "passed": verdict.passed,
                    "reasons": verdict.reasons, "warnings": verdict.warnings, "criteria": verdict.criteria()},
        "summary": summary,
        "per_category": verdict.per_category,
        "regressions": verdict.regressions,
        "improvements": verdict.improvements,
        "unknown_baseline_ids": verdict.unknown_baseline_ids,
        "security": {**verdict.security, "tasks": [s.to_dict() for s in security]},
        "payloads": [p.to_dict() for p in payloads],
        "selfcheck": selfcheck,
        "tasks": [t.to_dict() for t in tasks],
    }


def records_of(doc: dict[str, Any]) -> tuple[list[TaskResult], list[SecurityResult], list[PayloadResult]]:
    return ([TaskResult.from_dict(t) for t in doc.get("tasks", [])],
            [SecurityResult.from_dict(s) for s in doc.get("security", {}).get("tasks", [])],
            [PayloadResult.from_dict(p) for p in doc.get("payloads", [])])


def reassemble(doc: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """Recompute the verdict of an existing document (after a merge or a config change)."""
    tasks, security, payloads = records_of(doc)
    kwargs: dict[str, Any] = dict(
        run_id=doc["run_id"], config=doc["config"], tasks=tasks, security=security, payloads=payloads,
        started_at=doc["started_at"], finished_at=doc["finished_at"], duration_s=doc["duration_s"],
        partial_signal=doc.get("interrupted_by"), selfcheck=doc.get("selfcheck"),
        warnings=list(doc["verdict"].get("warnings", [])))
    kwargs.update(changes)
    return assemble(**kwargs)


def load(path: str | Path) -> dict[str, Any]:
    """Read and validate a results file."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: results file not found") from None
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: results file is not valid JSON: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read results: {exc}") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path}: results file must hold a JSON object")
    validate(doc, source=str(path))
    return doc


def dumps(doc: dict[str, Any]) -> str:
    """results.json's text: strict JSON whatever a record holds (:func:`finevo.jsonsafe.json_safe`)."""
    return json.dumps(json_safe(doc), indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"


def stable_view(doc: Any) -> Any:
    """The document without timestamps and durations (what two identical runs share)."""
    if isinstance(doc, dict):
        return {k: stable_view(v) for k, v in doc.items()
                if k not in _VOLATILE_KEYS and not k.endswith("_s")}
    if isinstance(doc, list):
        return [stable_view(v) for v in doc]
    return doc
