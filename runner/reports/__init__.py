"""Every report of a run, rendered from one results document and written atomically.

A complete run writes ``results.json``, ``junit.xml``, ``summary.md``, ``report.html`` and
``tools/<task_id>.py``; a partial one (interrupted, or rebuilt from the events of a killed run) writes
``partial_<run_id>.json``, ``partial_<run_id>.xml``, ``partial_<run_id>.md`` and
``partial_<run_id>.html`` instead, so a partial file is never mistaken for a verdict.
"""

from __future__ import annotations

import re
from pathlib import Path

from finevo.fsutil import atomic_write
from runner.reports.model import DocumentLike, ResultsDocument

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}$")


def report_names(doc: ResultsDocument) -> dict[str, str]:
    if doc.partial:
        stem = f"partial_{doc.run_id}"
        return {"json": f"{stem}.json", "junit": f"{stem}.xml", "markdown": f"{stem}.md", "html": f"{stem}.html"}
    return {"json": "results.json", "junit": "junit.xml", "markdown": "summary.md", "html": "report.html"}


def write_all(doc: DocumentLike, run_dir: str | Path) -> dict[str, Path]:
    """Write every report of the (validated) ``doc`` into ``run_dir``; returns kind -> path.

    A task's code goes to ``tools/<task_id>.py`` only when the id is a plain file name (a forged
    document cannot write outside ``tools/``).
    """
    doc = ResultsDocument.of(doc)
    from runner.reports import document, html, junit, markdown  # not at import: runner.verdict.decide imports the model

    run_dir = Path(run_dir)
    names = report_names(doc)
    md = markdown.render(doc, results_path=run_dir / names["json"])
    paths = {
        "json": atomic_write(run_dir / names["json"], document.dumps(doc)),
        "junit": atomic_write(run_dir / names["junit"], junit.render(doc)),
        "markdown": atomic_write(run_dir / names["markdown"], md),
        "html": atomic_write(run_dir / names["html"], html.render(doc)),
    }
    for t in doc.tasks:
        if t.code and _SAFE_NAME.match(t.task_id):
            atomic_write(run_dir / "tools" / f"{t.task_id}.py", t.code.encode("utf-8", "backslashreplace"))
    paths["tools"] = run_dir / "tools"
    return paths
