"""GitHub Actions integration: job summary, step outputs, and one ``::error::`` per regression."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, TextIO


def _escape(text: str) -> str:
    """Workflow-command escaping for the message part of ``::error::``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def outputs(doc: dict[str, Any]) -> dict[str, str]:
    s, sec = doc["summary"], doc["security"]
    return {"verdict": doc["verdict"]["status"], "exit_code": str(doc["verdict"]["exit_code"]),
            "pass_rate": f"{s['pass_rate']:.4f}", "min_pass_rate": f"{s['min_pass_rate']:.4f}",
            "passed": str(s["passed"]), "failed": str(s["failed"]), "errors": str(s["errors"]),
            "total": str(s["total"]), "regressions": str(len(doc["regressions"])),
            "improvements": str(len(doc["improvements"])), "unblocked": str(sec["unblocked"]),
            "run_id": doc["run_id"], "partial": str(doc["partial"]).lower()}


def publish(doc: dict[str, Any], markdown: str, stream: TextIO, env: dict[str, str] | None = None) -> None:
    """Append to ``$GITHUB_STEP_SUMMARY`` / ``$GITHUB_OUTPUT`` when set; annotate regressions on ``stream``."""
    env = dict(os.environ) if env is None else env
    summary_path = env.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        with open(Path(summary_path), "a", encoding="utf-8") as fh:
            fh.write(markdown.rstrip("\n") + "\n")
    output_path = env.get("GITHUB_OUTPUT")
    if output_path:
        with open(Path(output_path), "a", encoding="utf-8") as fh:
            for key, value in outputs(doc).items():
                fh.write(f"{key}={value}\n")
    if env.get("GITHUB_ACTIONS") == "true" or summary_path or output_path:
        for r in doc["regressions"]:
            stream.write(f"::error title=finevo-verify regression::{_escape(r['task_id'] + ': ' + r['reason'])}\n")
        stream.flush()
