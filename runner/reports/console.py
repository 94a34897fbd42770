"""Console progress and the final summary.

Colour (plain ANSI) only when the stream is a TTY and ``NO_COLOR`` is not set. Text that came from
a tool or the agent (reasons, queries, warnings) is printed through
:func:`runner.reports.escape.log_text`: one piece of the console's own line, no line break and no
control character, so it can never start a line (a ``::`` workflow command in GitHub Actions, or an
escape sequence on a terminal).
"""

from __future__ import annotations

import os
import sys
from typing import TextIO

from runner.records import PayloadState, TaskState, VerdictStatus
from runner.reports.escape import log_text, stop_commands
from runner.reports.model import DocumentLike, ResultsDocument

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
    def __init__(self, stream: TextIO | None = None, colour: bool | None = None, quiet: bool = False,
                 env: dict[str, str] | None = None) -> None:
        self.env = dict(os.environ) if env is None else env
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
        self.line(self.paint(f"warning: {log_text(text)}", "error"))

    def task_start(self, index: int, total: int, task_id: str, query: str) -> None:
        if self.quiet:
            return
        q = log_text(query, 60)
        self.stream.write(f"[{index}/{total}] {log_text(task_id, 100)} {q} ... ")
        self.stream.flush()

    def task_end(self, state: str, seconds: float, detail: str = "") -> None:
        extra = f" ({log_text(detail, 200)})" if detail else ""
        self.line(f"{self.paint(state.upper(), state)} {seconds:.2f}s{extra}")

    def summary(self, doc: DocumentLike) -> None:
        """The final summary; printed with ``--quiet`` too (quiet drops only the progress lines).

        In GitHub Actions (``GITHUB_ACTIONS=true``) the summary is also fenced with
        ``::stop-commands::`` and a random token: no text in it can act as a workflow command.
        """
        doc = ResultsDocument.of(doc)
        quiet, self.quiet = self.quiet, False
        try:
            lines = self._summary(doc)
            if self.env.get("GITHUB_ACTIONS") == "true":
                lines = list(stop_commands(lines))
            for line in lines:
                self.line(line)
        finally:
            self.quiet = quiet

    def _summary(self, doc: ResultsDocument) -> list[str]:
        s, v, sec = doc.summary, doc.verdict, doc.security
        out = ["", "=" * 64, f"run {doc.run_id}" + (" (PARTIAL)" if doc.partial else "")]
        if not doc.evaluates_agent:
            out.append(self.paint("reference run: the gold reference tools answered; the agent was not evaluated",
                                  "error"))
        out.append(f"pass rate {s.pass_rate:.1%} ({s.passed}/{s.total}), threshold {s.min_pass_rate:.1%}")
        out.append(f"  passed {s.passed}  failed {s.failed}  errors {s.errors}  skipped {s.skipped}")
        for cat, c in doc.per_category.items():
            out.append(f"  {cat:<12} {c.passed}/{c.total} ({c.pass_rate:.0%})")
        if doc.regressions:
            out.append(self.paint(f"regressions ({len(doc.regressions)}):", TaskState.FAIL))
            for r in doc.regressions:
                out.append(f"  - {log_text(r.task_id, 100)}: {r.state.value}: {log_text(r.reason, 300)}")
        if doc.improvements:
            hint = (" (consider `finevo-verify baseline update`)"
                    if doc.has_verdict and doc.evaluates_agent and not doc.partial else "")
            out.append(f"improvements: {log_text(', '.join(doc.improvements), 1000)}{hint}")
        from runner.reports.repeats_section import console_lines

        out += console_lines(doc)
        out.append(f"security: {sec.blocked}/{sec.total} tasks blocked, "
                   f"{sec.payloads_blocked + sec.payloads_contained}/{sec.payloads_total} payloads "
                   f"blocked/contained, {sec.unblocked} unblocked")
        if doc.selfcheck is not None and doc.selfcheck.enabled:
            out.append(f"self-check: {'ok' if doc.selfcheck.ok else 'FAILED'} ({log_text(doc.selfcheck.reason, 300)})")
        for w in v.warnings:
            out.append(self.paint(f"warning: {log_text(w, 500)}", "error"))
        verdict = v.status.value.replace("_", " ").upper()
        out.append(f"verdict: {self.paint(verdict, v.status.value)} (exit {v.exit_code})")
        for reason in v.reasons:
            out.append(f"  - {log_text(reason, 500)}")
        return out
