"""Shared by the report tests: results documents built from records, a corpus of hostile strings,
and readers of what GitHub would render (cmark-gfm) and what a JUnit consumer would accept."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from runner.records import PayloadResult, ProbeResult, SecurityResult, SelfCheck, TaskResult, ToolInfo, WorldResult
from runner.reports import document
from runner.reports.model import ResultsDocument

JUNIT_XSD = Path(__file__).resolve().parent / "data" / "junit-strict.xsd"
T0, T1 = "2025-01-01T00:00:00+00:00", "2025-01-01T00:00:01+00:00"


def config(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "git_sha": None, "model": "m", "provider": "replay:x.jsonl", "llm": "replay:x.jsonl", "temperature": 0.0,
        "snapshot_hash": "h", "snapshot_as_of": "2024-12-31", "judge_version": "2.0", "min_pass_rate": 0.5,
        "baseline": None, "agent_mode": "evolving", "max_refinements": 3, "task_timeout_s": 120.0,
        "selection": {}, "self_check": False}
    base.update(changes)
    return base


def make_doc(tasks: list[TaskResult], security: list[SecurityResult] | None = None,
             payloads: list[PayloadResult] | None = None, **kwargs: Any) -> ResultsDocument:
    cfg = kwargs.pop("config", None) or config()
    return document.assemble(run_id=kwargs.pop("run_id", "t"), config=cfg,
                             records=document.RunRecords(tasks, security or [], payloads or [],
                                                         selfcheck=kwargs.pop("selfcheck", None),
                                                         containment_selftest=kwargs.pop("containment_selftest", None)),
                             span=document.RunSpan(T0, T1, 1.0, partial_signal=kwargs.pop("partial_signal", None),
                                                   crash=kwargs.pop("crash", None)),
                             **kwargs)


# --------------------------------------------------------------------------- hostile strings

INVALID_UTF8 = b"caf\xc3 \xff\xfe\xed\xa0\x80 raw bytes".decode("utf-8", "surrogateescape")

HOSTILE: dict[str, str] = {
    "table": "a | b || c \\| d \\",
    "details": "</details></summary><details open><summary>forged",
    "table_html": "</td></tr></table><table><tr><td>forged",
    "html": "<script>alert(1)</script><img src=x onerror=alert(1)><a href='https://evil.example'>x</a><!--",
    "image": "![pixel](https://evil.example/p.png)",
    "links": "[click](https://evil.example) <https://evil.example> https://evil.example www.evil.example "
             "mail@evil.example",
    "mentions": "@octocat @github/security cc @admin",
    "issues": "fixes #1 and GH-2 and owner/repo#3",
    "commands": "::warning::forged\n::stop-commands::abc\n::error file=x,line=1::boom\n  ::add-mask::x",
    "cr": "line1\rline2\r\n::error::after a carriage return",
    "controls": "nul\x00bell\x07esc\x1b[31mred\x1b[0m del\x7f nel\x85 rlo\u202etxt ls\u2028ps\u2029",
    "invalid_utf8": INVALID_UTF8,
    "backticks": "```\n</details>\n```` ` ``",
    "markdown": "# heading\n---\n> quote\n- list\n1. item\n*em* _em_ **b** ~~s~~ $x$ [^1]\n\n| t |\n|---|",
    "entities": "&amp; &lt;b&gt; &#60;script&#62; %0A %25",
    "list_item": "- a list item",
    "ordered": "1. an ordered item",
    "indented": "    + indented code or a list",
}
HUGE = "<b>x</b>|" * 120_000  # a ~1 MB line


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"k": [value]}
    return value


def hostile_text() -> str:
    return "\n".join(HOSTILE.values())


def hostile_doc(*, regressions: bool = True, **kwargs: Any) -> ResultsDocument:
    """Every free-text field of every record hostile (one 1 MB line, one deeply nested value)."""
    text = hostile_text()
    tasks = []
    for i, (name, value) in enumerate(HOSTILE.items()):
        tasks.append(TaskResult(
            task_id=f"calc_{i:03d}", category="calculation", query=value, state="fail", reason=value,
            stage="execution", expected={"value": value}, actual=value, convention=value,
            tool=ToolInfo(name=value, version=value, source="created"), code=value + "\n" + text,
            error={"kind": "agent", "code": name, "type": "ToolError", "message": value},
            stdout=value, stderr=value,
            probes=[ProbeResult(index=1, args={"symbol": value}, state="fail", reason=value,
                                expected={"c": value}, actual=value)],
            worlds=[WorldResult(world=value, kind=value, as_of=value, state="fail", reason=value,
                                perturbation=value)]))
    tasks.append(TaskResult(task_id="calc_900", category="calculation", query=HUGE, state="error", reason=HUGE,
                            actual=nested(300), code=HUGE, stdout=HUGE))
    tasks.append(TaskResult(task_id="fetch_001", category="fetch", query="q", state="pass", reason="ok",
                            actual=nested(300)))
    security = [SecurityResult(task_id=f"sec_{i:03d}", query=v, attack=v, state=state, reason=v, blocked_by=v,
                               code=v)
                for i, (v, state) in enumerate(zip(HOSTILE.values(), ["blocked", "unblocked", "error"] * 10,
                                                   strict=False))]
    payloads = [PayloadResult(payload_id=f"pay_{i:03d}", attempt=v, state=state, reason=v, layer=v, status=v)
                for i, (v, state) in enumerate(zip(HOSTILE.values(), ["blocked", "contained", "unblocked",
                                                                       "error"] * 10, strict=False))]
    baseline = {"path": "b.json", "passing_tasks": [t.task_id for t in tasks] if regressions else [],
                "target_pass_rate": 0.5}
    cfg = config(baseline=baseline, model=text, sandbox_fallback=text, sandbox_layers={"landlock": True,
                                                                                          "seccomp": False})
    return make_doc(tasks, security, payloads, config=cfg, warnings=list(HOSTILE.values()),
                    selfcheck=SelfCheck(enabled=True, ok=True, reason=text), **kwargs)


def _rewrite(doc: ResultsDocument, text: Any) -> ResultsDocument:
    """``doc`` with every free-text string (all but enum words, ids and times) replaced by ``text()``."""
    def walk(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, key) for v in value]
        if isinstance(value, str) and key not in _KEEP:
            return text()
        return value
    return document.validate(walk(doc.to_json_dict()))


def benign_twin(doc: ResultsDocument) -> ResultsDocument:
    """The same document with every string replaced by a plain word (the structure to compare with)."""
    return _rewrite(doc, lambda: "word")


def forged_twin(doc: ResultsDocument) -> ResultsDocument:
    """The same document with every free-text string hostile, as a forged results.json could have it
    (reasons, warnings, criteria values, config values, selfcheck text, layers' names ...)."""
    values = [*HOSTILE.values(), hostile_text()]
    counter = iter(range(10**9))
    return _rewrite(doc, lambda: values[next(counter) % len(values)])


_KEEP = {"task_id", "payload_id", "category", "state", "status", "source", "schema_version", "run_id",
         "started_at", "finished_at", "agent_mode", "provider", "llm", "snapshot_as_of", "passing_tasks",
         "unblocked_ids", "error_ids", "improvements", "criterion", "tool_source", "sandbox_backend", "isolation",
         "require_isolation", "shard", "merged_from",
         # the statistics' enum values, lists of ids and dates
         "threshold_on", "correction", "states", "flaky", "quarantined", "expires"}


# --------------------------------------------------------------------------- rendered markdown

class Tags(HTMLParser):
    """Counts of every start tag, and the text outside code and pre."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.counts: dict[str, int] = {}
        self.comments = 0
        self._code = 0
        self.prose: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.counts[tag] = self.counts.get(tag, 0) + 1
        if tag in ("code", "pre"):
            self._code += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("code", "pre"):
            self._code -= 1

    def handle_comment(self, data: str) -> None:
        self.comments += 1

    def handle_data(self, data: str) -> None:
        if not self._code:
            self.prose.append(data)


def render_gfm(markdown: str) -> str:
    """What GitHub's renderer (cmark-gfm with its extensions) makes of ``markdown``; raw HTML kept."""
    import cmarkgfm
    from cmarkgfm.cmark import Options

    return cmarkgfm.github_flavored_markdown_to_html(markdown, options=Options.CMARK_OPT_UNSAFE)


def tags(markdown: str) -> Tags:
    parser = Tags()
    parser.feed(render_gfm(markdown))
    parser.close()
    return parser


MENTION = re.compile(r"(?<![\w/])@[A-Za-z0-9]")
ISSUE_REF = re.compile(r"(?<![\w&])#[0-9]|\bGH-[0-9]", re.IGNORECASE)
