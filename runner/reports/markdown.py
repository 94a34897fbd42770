"""``summary.md`` and the sticky PR comment: GitHub-flavoured markdown built from sections.

The first line is the verdict (an H1). Banners follow when the run did not evaluate the agent
(``--llm reference``), ran on synthetic data, ran with weak isolation, or is partial. Then the
sections, in priority order: criteria, regressions, security failures, and the rest (per category,
improvements, self-checks and isolation, security and payload tables, tasks, configuration, one
collapsed ``<details>`` per non-passing task).

Budgets by structure, not by bytes: :func:`build` adds each section whole while it fits, else its
collapsed form (one or two lines) when it has one, else leaves it out -- never cutting inside a
table, a ``<details>`` block or a code fence. The closing line, which names what was left out and
links to the full reports, is reserved first, so it is always there.

Every piece of text that came from a tool, the agent or the document goes through
:mod:`runner.reports.escape`; the markup here is the writer's own.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from finevo.vocabulary import Category
from runner.records import PayloadState, SecurityState, TaskResult, TaskState, VerdictStatus
from runner.reports.escape import md_code_block, md_inline, md_inline_code, short_value
from runner.reports.model import DocumentLike, ResultsDocument

#: GitHub refuses job summaries over 1 MiB; the workflow adds a few lines of its own.
SUMMARY_MAX_BYTES = 1024 * 1024 - 16 * 1024
#: GitHub refuses comments over 65,536 characters; the comment action adds a marker of its own.
COMMENT_MAX_CHARS = 60_000
#: Kept for callers of the former name.
MAX_BYTES = SUMMARY_MAX_BYTES
_CODE_CAP = 12_000
_REASON_CAP = 4_000
_CELL_CAP = 300
_ICON = {"pass": "✅", "fail": "❌", "error": "⚠️", "skipped": "⏭️", "blocked": "🛡️", "contained": "🧱",
         "unblocked": "❌", "passed": "✅", "failed": "❌", "no_verdict": "⚠️", "partial": "⏸️"}
_URL = re.compile(r"^https://[A-Za-z0-9._~/-]+$")
_ID_LIST_CAP = 40


@dataclass
class Section:
    """One section of a report: added whole, or its ``collapsed`` form, or left out."""

    name: str
    lines: list[str]
    collapsed: list[str] = field(default_factory=list)


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def build(head: list[str], sections: Sequence[Section], closing: str, limit: int) -> str:
    """``head``, then each section that fits in ``limit`` (UTF-8 bytes), then ``closing``.

    ``closing`` may hold ``{left_out}``: replaced by what was left out or collapsed ("" when all fit).
    """
    parts = ["\n".join(head).rstrip("\n") + "\n\n"]
    used = _size(parts[0]) + _size(closing) + 400  # and room for the names of what was left out
    left_out: list[str] = []
    collapsed: list[str] = []
    for section in sections:
        full = "\n".join(section.lines).rstrip("\n") + "\n\n"
        size = _size(full)
        if used + size <= limit:
            parts.append(full)
            used += size
            continue
        short = "\n".join(section.collapsed).rstrip("\n") + "\n\n" if section.collapsed else ""
        if short and used + _size(short) <= limit:
            parts.append(short)
            used += _size(short)
            collapsed.append(section.name)
        else:
            left_out.append(section.name)
    out = "".join(parts)
    note = ""
    if collapsed:
        note += f" Shortened to fit: {_names(_grouped_names(collapsed))}."
    if left_out:
        note += f" Left out to fit: {_names(_grouped_names(left_out))}."
    return out + closing.replace("{left_out}", note) + "\n"


def _names(names: list[str]) -> str:
    if len(names) <= 6:
        return ", ".join(names)
    return ", ".join(names[:6]) + f" and {len(names) - 6} more"


# --------------------------------------------------------------------------- pieces

def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A table whose cells are already escaped (or the writer's own text)."""
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(c or " " for c in row) + " |" for row in rows]
    return out


def _cell(value: object, limit: int = _CELL_CAP) -> str:
    return md_inline(value if isinstance(value, str) else short_value(value), limit)


def _state(state: str) -> str:
    return f"{_ICON.get(state, '')} {state}".strip()


def _ids(ids: Sequence[str]) -> str:
    shown = ", ".join(md_inline(i, 80) for i in ids[:_ID_LIST_CAP])
    return shown + (f" and {len(ids) - _ID_LIST_CAP} more" if len(ids) > _ID_LIST_CAP else "")


def _categories(doc: ResultsDocument) -> list[Category]:
    """Per-category rows always in :class:`Category` order (results.json is written with sorted keys)."""
    return [c for c in Category if c in doc.per_category]


def _shown_path(path: str | Path) -> str:
    """``path`` as the reader would type it: relative to the working directory when below it."""
    path = Path(path)
    try:
        rel = Path(os.path.relpath(path.absolute(), Path.cwd()))
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path.absolute()) if rel.parts[:1] == ("..",) else str(rel)


def _title(doc: ResultsDocument) -> str:
    status = doc.verdict.status
    word = {VerdictStatus.PASSED: "PASSED", VerdictStatus.FAILED: "FAILED",
            VerdictStatus.NO_VERDICT: "NO VERDICT", VerdictStatus.PARTIAL: "PARTIAL (no verdict)"}[status]
    title = f"# {_ICON[status.value]} finevo-verify: {word}"
    if not doc.evaluates_agent:
        title += " (reference self-check: the agent was not evaluated)"
    return title


def headline(doc: ResultsDocument) -> str:
    """One line of figures (under the title)."""
    s = doc.summary
    regressions = str(len(doc.regressions)) if doc.has_verdict else "not assessed"
    return (f"Run `{doc.run_id}`: pass rate {s.pass_rate:.1%} ({s.passed}/{s.total}, threshold "
            f"{s.min_pass_rate:.1%}), regressions: {regressions}, security: {doc.security.unblocked} unblocked, "
            f"{doc.security.errors} not judged")


def banners(doc: ResultsDocument) -> list[str]:
    cfg, out = doc.config, []
    if not doc.evaluates_agent:
        out.append("> [!WARNING]\n> **This run did not evaluate the agent.** `--llm reference` answers every task "
                   "with the gold reference tools: it checks the harness, and its pass rate says nothing about "
                   "the agent. Do not take it as a baseline.")
    if cfg.snapshot_synthetic:
        out.append("> [!NOTE]\n> **Synthetic market data**: the snapshot is generated, not recorded from the "
                   "market; figures are reproducible but are not real prices.")
    if cfg.isolation == "weak":
        out.append("> [!CAUTION]\n> **Weak isolation**: the sandbox ran without kernel confinement "
                   "(see Self-checks and isolation below); a contained payload was contained by weaker layers.")
    if doc.partial:
        why = "a crash or a kill" if (doc.interrupted_by or 0) <= 0 else f"signal {doc.interrupted_by}"
        out.append(f"> [!IMPORTANT]\n> **Partial run** (stopped by {why}): the tasks it did not reach are "
                   "skipped, there is no verdict, and every criterion it could not assess reads *not assessed*.")
    return out


def _head(doc: ResultsDocument) -> list[str]:
    lines = [_title(doc), ""]
    for banner in banners(doc):
        lines += [banner, ""]
    lines += [headline(doc), ""]
    for reason in doc.verdict.reasons[:20]:
        lines.append(f"- {md_inline(reason, 600)}")
    if len(doc.verdict.reasons) > 20:
        lines.append(f"- and {len(doc.verdict.reasons) - 20} more reason(s) in results.json")
    for warning in doc.verdict.warnings[:10]:
        lines.append(f"- warning: {md_inline(warning, 600)}")
    return lines


def _criteria(doc: ResultsDocument) -> Section:
    rows = [[c.criterion, md_inline(c.value, 120), md_inline(c.required, 120),
             "➖ not assessed" if c.ok is None else ("✅ met" if c.ok else "❌ not met")]
            for c in doc.verdict.criteria]
    return Section("criteria", ["## Criteria", "", *_table(["criterion", "value", "required", "result"], rows)])


def _regressions(doc: ResultsDocument) -> Section:
    head = ["## Regressions", ""]
    if not doc.has_verdict:
        return Section("regressions", [*head, "Not assessed (no verdict)."])
    if not doc.regressions:
        return Section("regressions", [*head, "None."])
    rows = [[md_inline(r.task_id, 80), _state(r.state.value), _cell(r.reason)] for r in doc.regressions]
    return Section("regressions", [*head, *_table(["task", "state", "reason"], rows)],
                   [*head, f"{len(doc.regressions)} regression(s): {_ids([r.task_id for r in doc.regressions])} "
                    "(reasons in the full reports)."])


def _security_line(doc: ResultsDocument) -> str:
    sec = doc.security
    if not sec.total and not sec.payloads_total:
        return "No security task or payload in this run."
    unblocked = f": {_ids(sec.unblocked_ids)}" if sec.unblocked_ids else ""
    errors = f": {_ids(sec.error_ids)}" if sec.error_ids else ""
    return (f"{sec.blocked}/{sec.total} security tasks blocked; {sec.payloads_blocked} payloads blocked and "
            f"{sec.payloads_contained} contained of {sec.payloads_total}; **{sec.unblocked} unblocked**{unblocked}; "
            f"**{sec.errors} not judged (error)**{errors}; {sec.skipped} not run.")


def _security_failures(doc: ResultsDocument) -> Section:
    head = ["## Security", "", _security_line(doc)]
    rows = [[md_inline(s.task_id, 80), _cell(s.attack, 120), _state(s.state.value), _cell(s.reason)]
            for s in doc.security.tasks if s.state in (SecurityState.UNBLOCKED, SecurityState.ERROR)]
    rows += [[md_inline(f"payload {p.payload_id}", 80), _cell(p.attempt, 120), _state(p.state.value), _cell(p.reason)]
             for p in doc.payloads if p.state in (PayloadState.UNBLOCKED, PayloadState.ERROR)]
    if not rows:
        return Section("security summary", head)
    bad = [s.task_id for s in doc.security.tasks if s.state in (SecurityState.UNBLOCKED, SecurityState.ERROR)]
    bad += [p.payload_id for p in doc.payloads if p.state in (PayloadState.UNBLOCKED, PayloadState.ERROR)]
    return Section("security failures", [*head, "", *_table(["item", "attack", "outcome", "reason"], rows)],
                   [*head, "", f"Not blocked: {_ids(bad)} (details in the full reports)."])


def _per_category(doc: ResultsDocument) -> Section:
    rows = []
    for cat in _categories(doc):
        c = doc.per_category[cat]
        rows.append([cat.value, str(c.total), str(c.passed), str(c.failed), str(c.errors), str(c.skipped),
                     f"{c.pass_rate:.1%}"])
    return Section("per category", ["## Per category", "",
                                    *_table(["category", "total", "passed (blocked)", "failed (unblocked)",
                                             "errors", "skipped", "pass rate"], rows)])


def _improvements(doc: ResultsDocument, results_path: str | Path | None) -> Section:
    head = ["## Improvements", ""]
    if not doc.improvements:
        return Section("improvements", [*head, "None."])
    lines = [*head, f"Passing now but not in the baseline: {_ids(doc.improvements)}.", ""]
    if doc.has_verdict and doc.evaluates_agent and not doc.partial:
        where = _shown_path(results_path) if results_path is not None else "RESULTS"
        command = md_inline_code(f"finevo-verify baseline update {where}", 400)
        lines.append(f"To take them into the baseline: {command}.")
    elif not doc.evaluates_agent:
        lines.append("A reference run did not evaluate the agent: it cannot update the baseline.")
    else:
        lines.append("A run without a verdict cannot update the baseline.")
    return Section("improvements", lines)


def _selfchecks(doc: ResultsDocument) -> Section:
    cfg = doc.config
    lines = ["## Self-checks and isolation", ""]
    sc = doc.selfcheck
    if sc is not None:
        state = ("ok" if sc.ok else "FAILED") if sc.enabled else "not run"
        lines.append(f"- Harness self-check: {state} -- {md_inline(sc.reason, 600)}")
    elif cfg.self_check:
        why = "the run stopped before it" if doc.partial else "no record of it in these results"
        lines.append(f"- Harness self-check: not run -- {why}")
    ct = doc.containment_selftest
    if ct is not None:
        state = ("ok" if ct.ok else ("FAILED" if ct.ok is False else "not judged")) if ct.enabled else "not run"
        escaped = [p.name for p in ct.probes if not p.contained]
        lines.append(f"- Containment self-test: **{state}** ({len(ct.probes)} probe(s), {ct.duration_s:.1f}s): "
                     f"{md_inline(ct.reason, 400)}" + (f"; not contained: {_ids(escaped)}" if escaped else ""))
    if cfg.isolation is not None:
        required = f" (required: {cfg.require_isolation})" if cfg.require_isolation else ""
        lines.append(f"- Isolation: **{cfg.isolation}**{required}")
    if cfg.sandbox_layers:
        on = [md_inline(k, 40) for k, v in cfg.sandbox_layers.items() if v]
        off = [md_inline(k, 40) for k, v in cfg.sandbox_layers.items() if not v]
        lines.append(f"- Sandbox layers on: {', '.join(on) or 'none'}; off: {', '.join(off) or 'none'}")
    if cfg.sandbox_backend:
        fallback = f" (fell back: {md_inline(cfg.sandbox_fallback, 300)})" if cfg.sandbox_fallback else ""
        lines.append(f"- Sandbox backend: {cfg.sandbox_backend}{fallback}")
    if len(lines) == 2:
        lines.append("No self-check or isolation record in these results.")
    return Section("self-checks and isolation", lines)


def _security_tables(doc: ResultsDocument) -> list[Section]:
    out = []
    if doc.security.tasks:
        rows = [[md_inline(s.task_id, 80), _cell(s.attack, 120), _state(s.state.value),
                 _cell(s.blocked_by if s.state == SecurityState.BLOCKED and s.blocked_by else s.reason)]
                for s in doc.security.tasks]
        out.append(Section("security tasks", ["<details><summary>Security tasks (the layer that blocked each)"
                                              "</summary>", "",
                                              *_table(["task", "attack", "outcome", "stopped by / reason"], rows),
                                              "", "</details>"]))
    if doc.payloads:
        rows = [[md_inline(p.payload_id, 80), _cell(p.attempt, 120), _state(p.state.value),
                 _cell(p.layer if p.state in (PayloadState.BLOCKED, PayloadState.CONTAINED) and p.layer
                       else p.reason)]
                for p in doc.payloads]
        out.append(Section("payloads", ["<details><summary>Payload corpus (the layer that stopped or contained each)"
                                        "</summary>", "",
                                        *_table(["payload", "attempt", "outcome", "layer / reason"], rows),
                                        "", "</details>"]))
    return out


def _tasks(doc: ResultsDocument) -> Section:
    from runner.reports.repeats_section import case_name

    repeats = doc.statistics.repeats if doc.statistics is not None else 1
    rows = [[md_inline(case_name(t.task_id, t.repeat, repeats), 100), t.category, _state(t.state.value),
             f"{t.duration_s:.2f}", t.tool.source,
             str(t.refinements), "" if t.state == TaskState.PASS else _cell(t.reason, 200)] for t in doc.tasks]
    return Section("tasks", ["## Tasks", "",
                             *_table(["task", "category", "state", "time (s)", "tool source", "refinements",
                                      "reason"], rows)],
                   ["## Tasks", "", f"{len(doc.tasks)} task(s): the per-task table is in the full reports."])


def _configuration(doc: ResultsDocument) -> Section:
    cfg = doc.config
    values = {"git_sha": cfg.git_sha, "llm": cfg.llm or cfg.provider, "provider": cfg.provider, "model": cfg.model,
              "temperature": cfg.temperature, "agent_mode": cfg.agent_mode,
              "max_refinements": cfg.max_refinements, "task_timeout_s": cfg.task_timeout_s,
              "snapshot_hash": cfg.snapshot_hash, "snapshot_as_of": cfg.snapshot_as_of,
              "snapshot": None if cfg.snapshot_synthetic is None else ("synthetic" if cfg.snapshot_synthetic
                                                                        else "recorded"),
              "judge_version": cfg.judge_version, "min_pass_rate": cfg.min_pass_rate,
              "worlds": None if cfg.worlds is None else f"{cfg.worlds.count} (seed {cfg.worlds.seed})"}
    rows = [[k, _cell("" if v is None else str(v), 200)] for k, v in values.items()]
    return Section("configuration", ["## Run configuration", "", *_table(["setting", "value"], rows)])


def _args(args: dict[str, object]) -> str:
    return ", ".join(f"{k}={v if isinstance(v, str) else short_value(v, 100)}" for k, v in args.items())


def _detail(t: TaskResult) -> Section:
    trial = f" (repeat {t.repeat})" if t.repeat > 1 else ""
    lines = [f"<details><summary>{md_inline(t.task_id, 80)}{trial}: {t.state.value} at stage {md_inline(t.stage, 40)}"
             "</summary>", "",
             f"**Query:** {md_inline(t.query, 1000)}", "", "**Reason:**", "",
             *md_code_block(t.reason, _REASON_CAP, "text"), "",
             f"**Expected:** {md_inline(short_value(t.expected, 600), 700)}", "",
             f"**Actual:** {md_inline(short_value(t.actual, 600), 700)}", ""]
    if t.probes:
        lines += ["**Probes** (the final tool re-run with changed arguments):", ""]
        lines += _table(["probe", "args", "state", "expected", "actual", "reason"],
                        [[str(p.index), _cell(_args(p.args), 200), _state(p.state.value), _cell(p.expected, 200),
                          _cell(p.actual, 200), _cell(p.reason, 200)] for p in t.probes])
        lines.append("")
    if t.worlds:
        lines += ["**Hidden worlds** (the final tool judged again on other market data):", ""]
        lines += _table(["world", "as of", "state", "checks", "reason"],
                        [[_cell(w.world, 80), _cell(w.as_of, 40), _state(w.state.value), str(w.checks),
                          _cell(w.reason, 200)] for w in t.worlds])
        lines.append("")
    if t.code:
        lines += ["**Code:**", "", *md_code_block(t.code, _CODE_CAP, "python"), ""]
    lines.append("</details>")
    return Section(f"details of {t.task_id}{trial}", lines)


def _details(doc: ResultsDocument) -> list[Section]:
    regressed = {r.task_id for r in doc.regressions}
    shown = [t for t in doc.tasks if t.state not in (TaskState.PASS, TaskState.SKIPPED)]
    shown.sort(key=lambda t: t.task_id not in regressed)  # regressions first, otherwise suite order
    if not shown:
        return []
    return [Section("details heading", ["## Non-passing tasks"]), *(_detail(t) for t in shown)]


def sections(doc: ResultsDocument, results_path: str | Path | None = None) -> list[Section]:
    """Every section after the head, in priority order."""
    from runner.reports import repeats_section

    stats_lines = repeats_section.markdown_lines(doc)
    stats_part = [Section("repeats and statistics", stats_lines)] if stats_lines else []
    return [_criteria(doc), _regressions(doc), *stats_part, _security_failures(doc), _per_category(doc),
            _improvements(doc, results_path), _selfchecks(doc), *_security_tables(doc), _tasks(doc),
            _configuration(doc), *_details(doc)]


def _grouped_names(names: list[str]) -> list[str]:
    """``details of X`` names folded into one count (the closing line stays short)."""
    details = [n for n in names if n.startswith("details of ")]
    rest = [n for n in names if not n.startswith("details of ")]
    return rest + ([f"{len(details)} task detail(s)"] if details else [])


def render(doc: DocumentLike, results_path: str | Path | None = None, *,
           max_bytes: int = SUMMARY_MAX_BYTES) -> str:
    """``summary.md``: within ``max_bytes``, its closing line always there."""
    doc = ResultsDocument.of(doc)
    where = md_inline_code(_shown_path(results_path), 300) if results_path is not None else "results.json"
    closing = (f"---\n_End of the finevo-verify summary.{{left_out}} Full reports: {where}, junit.xml and "
               "events.jsonl in the run directory (in CI: the `finevo-verify-reports` artifact)._")
    return _render(doc, _head(doc), sections(doc, results_path), closing, max_bytes)


def _render(doc: ResultsDocument, head: list[str], parts: list[Section], closing: str, limit: int) -> str:
    return build(head, parts, closing, limit)


def render_comment(doc: DocumentLike, *, run_url: str | None = None, head_repo: str | None = None,
                   base_repo: str | None = None, max_chars: int = COMMENT_MAX_CHARS) -> str:
    """The sticky PR comment: the same sections under a tighter budget, the fork named plainly."""
    doc = ResultsDocument.of(doc)
    head = _head(doc)
    if head_repo and base_repo and head_repo != base_repo:
        head[1:1] = ["", f"> [!WARNING]\n> **This run came from a fork** (`{md_inline(head_repo, 140)}`): the "
                     "workflow and the code that produced these results are the fork's own. They are shown as "
                     "data, after validation; they prove nothing the fork could not have written."]
    link = f"[the workflow run]({run_url})" if run_url and _URL.match(run_url) else "the workflow run's artifacts"
    closing = f"---\n_End of the finevo-verify report.{{left_out}} Full reports: {link}._"
    return _render(doc, head, sections(doc), closing, max_chars)
