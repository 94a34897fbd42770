"""``summary.md``: a GitHub-flavoured summary that fits a job summary (always under 1 MiB).

Order: verdict, criteria table, per-category table, regressions and improvements, security,
per-task table, then one collapsed ``<details>`` per non-passing task with its reason, its probes
(when the task has any) and its code.
"""

from __future__ import annotations

import html
import os
from pathlib import Path
from typing import Any

from finevo.vocabulary import Category, choices
from runner.records import PayloadState, TaskState
from runner.verdict import VerdictStatus

#: GitHub refuses job summaries over 1 MiB; stay well under it.
MAX_BYTES = 1024 * 1024 - 64 * 1024
_CODE_CAP = 12_000
_ICON: dict[str, str] = {
    TaskState.PASS: "✅", TaskState.FAIL: "❌", TaskState.ERROR: "⚠️", TaskState.SKIPPED: "⏭️",
    PayloadState.BLOCKED: "🛡️", PayloadState.CONTAINED: "🛡️", PayloadState.UNBLOCKED: "❌",
    VerdictStatus.PASSED: "✅", VerdictStatus.FAILED: "❌", VerdictStatus.NO_VERDICT: "⚠️", VerdictStatus.PARTIAL: "⏸️"}


def _cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")[:200]


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return [*out, ""]


def _fence(code: str) -> list[str]:
    if len(code) > _CODE_CAP:
        code = code[:_CODE_CAP] + f"\n# ... truncated ({len(code) - _CODE_CAP} more characters)"
    return ["```python", code.replace("```", "`\u200b``"), "```"]


def headline(doc: dict[str, Any]) -> str:
    v, s = doc["verdict"], doc["summary"]
    status = v["status"].replace("_", " ").upper()
    return (f"{_ICON.get(v['status'], '')} finevo-verify: **{status}** -- pass rate {s['pass_rate']:.1%} "
            f"({s['passed']}/{s['total']}, threshold {s['min_pass_rate']:.1%}), "
            f"{len(doc['regressions'])} regression(s), {doc['security']['unblocked']} unblocked")


def _categories(per_category: dict[str, Any]) -> list[tuple[str, Any]]:
    """Per-category rows always in :class:`Category` order (results.json is written with sorted keys,
    so a reloaded document holds them alphabetically)."""
    order = [c for c in Category if c in per_category] + sorted(c for c in per_category
                                                                 if c not in choices(Category))
    return [(c, per_category[c]) for c in order]


def _shown_path(path: str | Path) -> str:
    """``path`` as the reader would type it: relative to the working directory when below it."""
    path = Path(path)
    try:
        rel = Path(os.path.relpath(path.absolute(), Path.cwd()))
    except ValueError:  # another drive (Windows)
        return str(path)
    return str(path.absolute()) if rel.parts[:1] == ("..",) else str(rel)


def _selfcheck_line(sc: dict[str, Any]) -> str:
    state = ("ok" if sc.get("ok") else "FAILED") if sc.get("enabled") else "not run"
    return f"Harness self-check: {state} -- {sc.get('reason', '')}"


def render(doc: dict[str, Any], results_path: str | Path | None = None) -> str:
    """The summary of ``doc``; ``results_path`` (where its JSON is written) is named in the hints."""
    cfg, v = doc["config"], doc["verdict"]
    lines: list[str] = [f"# finevo-verify run `{doc['run_id']}`" + (" (PARTIAL)" if doc["partial"] else ""), "",
                        headline(doc), ""]
    for reason in v["reasons"]:
        lines.append(f"- {reason}")
    for warning in v["warnings"]:
        lines.append(f"- warning: {warning}")
    lines.append("")
    lines += ["## Criteria", ""]
    lines += _table(["criterion", "value", "required", "ok"],
                    [[c["criterion"], c["value"], c["required"], "✅" if c["ok"] else "❌"] for c in v["criteria"]])
    if doc.get("selfcheck"):
        lines += [_selfcheck_line(doc["selfcheck"]), ""]
    elif cfg.get("self_check"):
        why = "the run stopped before it" if doc["partial"] else "no record of it in these results"
        lines += [f"Harness self-check: not run -- {why}", ""]
    lines += ["## Per category", ""]
    lines += _table(["category", "total", "passed", "failed", "errors", "skipped", "pass rate"],
                    [[cat, c["total"], c["passed"], c["failed"], c["errors"], c["skipped"], f"{c['pass_rate']:.1%}"]
                     for cat, c in _categories(doc["per_category"])])
    lines += ["## Regressions", ""]
    if doc["regressions"]:
        lines += _table(["task", "state", "reason"],
                        [[r["task_id"], r["state"], r["reason"]] for r in doc["regressions"]])
    else:
        lines += ["None." if v["status"] in ("passed", "failed") else "Not assessed (no verdict).", ""]
    lines += ["## Improvements", ""]
    if doc["improvements"]:
        lines += [", ".join(f"`{i}`" for i in doc["improvements"]), ""]
        if doc["partial"] or v["status"] == VerdictStatus.NO_VERDICT:
            lines += ["Passing now but not in the baseline (a run without a verdict cannot update the baseline).", ""]
        else:
            where = _shown_path(results_path) if results_path is not None else "RESULTS"
            lines += [f"Passing now but not in the baseline: consider `finevo-verify baseline update {where}`.", ""]
    else:
        lines += ["None.", ""]
    sec = doc["security"]
    lines += ["## Security", "",
              f"{sec['blocked']}/{sec['total']} security tasks blocked; "
              f"{sec['payloads_blocked'] + sec['payloads_contained']}/{sec['payloads_total']} payloads blocked or "
              f"contained; **{sec['unblocked']} unblocked**"
              + (f", **{len(sec.get('error_ids', []))} not judged (error)**: {', '.join(sec['error_ids'])}"
                 if sec.get("error_ids") else "") + ".", ""]
    if sec["tasks"]:
        lines += _table(["task", "attack", "state", "blocked by", "reason"],
                        [[s["task_id"], s["attack"], f"{_ICON.get(s['state'], '')} {s['state']}", s["blocked_by"],
                          s["reason"]] for s in sec["tasks"]])
    if doc["payloads"]:
        lines += ["<details><summary>Payload corpus (per payload, the layer that stopped it)</summary>", ""]
        lines += _table(["payload", "attempt", "state", "layer", "status", "reason"],
                        [[p["payload_id"], p["attempt"], f"{_ICON.get(p['state'], '')} {p['state']}", p["layer"],
                          p["status"], p["reason"]] for p in doc["payloads"]])
        lines += ["</details>", ""]
    lines += ["## Tasks", ""]
    lines += _table(["task", "category", "state", "time (s)", "tool source", "refinements", "reason"],
                    [[t["task_id"], t["category"], f"{_ICON.get(t['state'], '')} {t['state']}",
                      f"{t['duration_s']:.2f}", t["tool"]["source"], t["refinements"], t["reason"]]
                     for t in doc["tasks"]])
    lines += ["## Run configuration", ""]
    lines += _table(["setting", "value"], [[k, cfg.get(k)] for k in (
        "git_sha", "provider", "model", "temperature", "agent_mode", "max_refinements", "task_timeout_s",
        "snapshot_hash", "snapshot_as_of", "judge_version", "min_pass_rate")])
    body = "\n".join(lines)
    details: list[str] = []
    for t in doc["tasks"]:
        if t["state"] in (TaskState.PASS, TaskState.SKIPPED):
            continue
        block = [f"<details><summary>{html.escape(t['task_id'])}: {t['state']} at stage {html.escape(t['stage'])}"
                 "</summary>", "", f"**Query:** {t['query']}", "", f"**Reason:** {t['reason']}", ""]
        block += [f"**Expected:** `{_cell(t['expected'])}`", "", f"**Actual:** `{_cell(t['actual'])}`", ""]
        if t.get("probes"):
            block += ["**Probes** (the final tool re-run with changed arguments):", ""]
            block += _table(["probe", "args", "state", "expected", "actual", "reason"],
                            [[p["index"], ", ".join(f"{k}={v}" for k, v in p["args"].items()),
                              f"{_ICON.get(p['state'], '')} {p['state']}", p["expected"], p["actual"], p["reason"]]
                             for p in t["probes"]])
        if t.get("worlds"):
            block += ["**Hidden worlds** (the final tool re-run on other market data):", ""]
            block += _table(["world", "as of", "state", "values judged", "reason"],
                            [[w["world"], w["as_of"], f"{_ICON.get(w['state'], '')} {w['state']}", w["checks"],
                              w["reason"]] for w in t["worlds"]])
        if t.get("code"):
            block += _fence(t["code"])
        block += ["", "</details>", ""]
        details.append("\n".join(block))
    out = body + ("\n## Non-passing tasks\n\n" if details else "")
    for i, detail in enumerate(details):
        if len((out + detail).encode("utf-8")) > MAX_BYTES:
            out += f"\n_{len(details) - i} more task detail(s) left out to stay under 1 MiB._\n"
            break
        out += detail
    return out
