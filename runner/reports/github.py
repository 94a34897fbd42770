"""GitHub Actions integration: job summary, step outputs, and one ``::error::`` per regression.

The gate's own annotations are workflow commands whose message and properties are escaped as the
runner expects (:func:`runner.reports.escape.command_data` / ``command_property``): a reason with a
line break, a ``::`` or a ``%`` stays inside its one annotation. Step outputs are figures and
enum values only (plus the run id, which the model restricts to ``[A-Za-z0-9._-]``), never free text.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TextIO

from runner.reports.escape import command_data, command_property
from runner.reports.model import DocumentLike, ResultsDocument

#: At most this many regression annotations (GitHub shows 10 per step anyway); the rest are counted.
MAX_ANNOTATIONS = 50


def outputs(doc: DocumentLike) -> dict[str, str]:
    doc = ResultsDocument.of(doc)
    s, sec = doc.summary, doc.security
    return {"verdict": doc.verdict.status.value, "exit_code": str(doc.verdict.exit_code),
            "pass_rate": f"{s.pass_rate:.4f}", "min_pass_rate": f"{s.min_pass_rate:.4f}",
            "passed": str(s.passed), "failed": str(s.failed), "errors": str(s.errors),
            "total": str(s.total), "regressions": str(len(doc.regressions)),
            "improvements": str(len(doc.improvements)), "unblocked": str(sec.unblocked),
            "run_id": doc.run_id, "partial": str(doc.partial).lower(),
            "evaluates_agent": str(doc.evaluates_agent).lower()}


def annotation_lines(doc: DocumentLike) -> list[str]:
    """The gate's ``::error::`` lines: one per regression (capped), each one line whatever the text."""
    doc = ResultsDocument.of(doc)
    lines = []
    for r in doc.regressions[:MAX_ANNOTATIONS]:
        title = command_property(f"finevo-verify regression: {r.task_id}")
        lines.append(f"::error title={title}::{command_data(f'{r.task_id}: {r.state.value}: {r.reason}')}")
    if len(doc.regressions) > MAX_ANNOTATIONS:
        lines.append(f"::error title=finevo-verify regressions::{len(doc.regressions) - MAX_ANNOTATIONS} more "
                     "regression(s) in the reports")
    if not doc.evaluates_agent:
        lines.append("::warning title=finevo-verify reference run::"
                     + command_data("--llm reference: the gold reference tools answered; the agent was not evaluated"))
    return lines


def publish(doc: DocumentLike, markdown: str, stream: TextIO, env: dict[str, str] | None = None) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` / ``$GITHUB_OUTPUT`` when set; annotate regressions on ``stream``."""
    doc = ResultsDocument.of(doc)
    env = dict(os.environ) if env is None else env
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(Path(summary_path), "a", encoding="utf-8", errors="replace") as fh:
            fh.write(markdown.rstrip("\n") + "\n")
    output_path = env.get("GITHUB_OUTPUT")
    if output_path:
        with open(Path(output_path), "a", encoding="utf-8") as fh:
            for key, value in outputs(doc).items():
                fh.write(f"{key}={value}\n")
    if env.get("GITHUB_ACTIONS") == "true" or summary_path or output_path:
        for line in annotation_lines(doc):
            stream.write(line + "\n")
        stream.flush()
