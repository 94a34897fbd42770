"""Console progress and the final summary.

Colour (plain ANSI) only when the stream is a TTY and ``NO_COLOR`` is not set.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from runner.records import PayloadState, TaskState
from runner.verdict import VerdictStatus

_COLOURS: dict[str, str] = {
    TaskState.PASS: "32", PayloadState.BLOCKED: "32", PayloadState.CONTAINED: "32", VerdictStatus.PASSED: "32",
    TaskState.FAIL: "31", PayloadState.UNBLOCKED: "31", VerdictStatus.FAILED: "31", TaskState.ERROR: "33",
    VerdictStatus.NO_VERDICT: "33", TaskState.SKIPPED: "90", VerdictStatus.PARTIAL: "33"}


def use_colour(stream: TextIO, env: dict[str, str] | None = None) -> bool:
    env = dict(os.environ) if env is None else env
    if "NO_COLOR" in env:
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Console:
    def __init__(self, stream: TextIO | None = None, colour: bool | None = None, quiet: bool = False) -> None:
        self.stream = stream if stream is not None else sys.stdout
        self.colour = use_colour(self.stream) if colour is None else colour
        self.quiet = quiet

    def paint(self, text: str, state: str) -> str:
        code = _COLOURS.get(state)
        return f"\033[{code}m{text}\033[0m" if self.colour and code else text

    def line(self, text: str = "") -> None:
        if not self.quiet:
            self.stream.write(text + "\n")
            self.stream.flush()

    def warn(self, text: str) -> None:
        self.line(self.paint(f"warning: {text}", "error"))

    def task_start(self, index: int, total: int, task_id: str, query: str) -> None:
        if self.quiet:
            return
        q = query if len(query) <= 60 else query[:57] + "..."
        self.stream.write(f"[{index}/{total}] {task_id} {q} ... ")
        self.stream.flush()

    def task_end(self, state: str, seconds: float, detail: str = "") -> None:
        extra = f" ({detail})" if detail else ""
        self.line(f"{self.paint(state.upper(), state)} {seconds:.2f}s{extra}")

    def summary(self, doc: dict[str, Any]) -> None:
        """The final summary; printed with ``--quiet`` too (quiet drops only the progress lines)."""
        quiet, self.quiet = self.quiet, False
        try:
            self._summary(doc)
        finally:
            self.quiet = quiet

    def _summary(self, doc: dict[str, Any]) -> None:
        s, v, sec = doc["summary"], doc["verdict"], doc["security"]
        self.line("")
        self.line("=" * 64)
        self.line(f"run {doc['run_id']}" + (" (PARTIAL)" if doc["partial"] else ""))
        self.line(f"pass rate {s['pass_rate']:.1%} ({s['passed']}/{s['total']}), threshold {s['min_pass_rate']:.1%}")
        self.line(f"  passed {s['passed']}  failed {s['failed']}  errors {s['errors']}  skipped {s['skipped']}")
        for cat, c in doc["per_category"].items():
            self.line(f"  {cat:<12} {c['passed']}/{c['total']} ({c['pass_rate']:.0%})")
        if doc["regressions"]:
            self.line(self.paint(f"regressions ({len(doc['regressions'])}):", TaskState.FAIL))
            for r in doc["regressions"]:
                self.line(f"  - {r['task_id']}: {r['state']}: {r['reason']}")
        if doc["improvements"]:
            self.line(f"improvements: {', '.join(doc['improvements'])} (consider `finevo-verify baseline update`)")
        self.line(f"security: {sec['blocked']}/{sec['total']} tasks blocked, "
                  f"{sec['payloads_blocked'] + sec['payloads_contained']}/{sec['payloads_total']} payloads "
                  f"blocked/contained, {sec['unblocked']} unblocked")
        if doc.get("selfcheck") and doc["selfcheck"].get("enabled"):
            self.line(f"self-check: {'ok' if doc['selfcheck'].get('ok') else 'FAILED'} ({doc['selfcheck']['reason']})")
        for w in v["warnings"]:
            self.warn(w)
        verdict = v["status"].replace("_", " ").upper()
        self.line(f"verdict: {self.paint(verdict, v['status'])} (exit {v['exit_code']})")
        for reason in v["reasons"]:
            self.line(f"  - {reason}")
