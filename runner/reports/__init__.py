"""Every report of a run, rendered from one results document and written atomically.

A complete run writes ``results.json``, ``junit.xml``, ``summary.md`` and ``tools/<task_id>.py``;
a partial one (interrupted, or rebuilt from the events of a killed run) writes
``partial_<run_id>.json``, ``partial_<run_id>.xml`` and ``partial_<run_id>.md`` instead, so a
partial file is never mistaken for a verdict.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from finevo.fsutil import atomic_write
from runner.reports import document, junit, markdown


def report_names(doc: dict[str, Any]) -> dict[str, str]:
    if doc["partial"]:
        stem = f"partial_{doc['run_id']}"
        return {"json": f"{stem}.json", "junit": f"{stem}.xml", "markdown": f"{stem}.md"}
    return {"json": "results.json", "junit": "junit.xml", "markdown": "summary.md"}


def write_all(doc: dict[str, Any], run_dir: str | Path) -> dict[str, Path]:
    """Validate ``doc``, then write every report into ``run_dir``; returns kind -> path."""
    document.validate(doc, source=f"{doc.get('run_id', '?')} results")
    run_dir = Path(run_dir)
    names = report_names(doc)
    md = markdown.render(doc, results_path=run_dir / names["json"])
    paths = {
        "json": atomic_write(run_dir / names["json"], document.dumps(doc)),
        "junit": atomic_write(run_dir / names["junit"], junit.render(doc)),
        "markdown": atomic_write(run_dir / names["markdown"], md),
    }
    for t in doc["tasks"]:
        if t.get("code"):
            atomic_write(run_dir / "tools" / f"{t['task_id']}.py", t["code"])
    paths["tools"] = run_dir / "tools"
    return paths
