"""``report.html``: one self-contained page per run, rendered from the validated results document.

The page needs nothing but itself: the stylesheet and the one script are inline, fonts are the
system's, the chart and the intervals are SVG drawn here, and a Content-Security-Policy forbids
every remote load, every other script and every inline event handler (the stylesheet and the
script are allowed by their SHA-256 hashes, nothing else is). It opens from disk and from a
downloaded workflow artifact alike.

Hostile text stays text: the template is Jinja2 with autoescape on for every value, and every
piece of text from a tool, the agent or the document first crosses :func:`runner.reports.escape.clean`
(control characters and bidirectional overrides replaced) and a length cap, so a tool that prints
``<script>`` shows ``<script>`` and a 1 MB line costs the page a bounded, scrollable block. The
markup is the template's own (and :func:`code_markup`'s, below); no piece of text is marked safe.

The banners, the title and the headline are the words of ``summary.md``
(:func:`runner.reports.markdown.banners`, :func:`~runner.reports.markdown.headline`): their two
pieces of markdown (``**bold**`` and ``code``) become elements here, the text is not restated.

The tool code is highlighted by a tiny tokenizer of its own (one regular expression, no
dependency); the change between consecutive attempts is a :mod:`difflib` unified diff. Both are
turned into markup by :func:`code_markup` (markupsafe's escape on every piece, classes from a fixed
set), the one place outside the template that writes markup.
"""

from __future__ import annotations

import base64
import builtins
import difflib
import hashlib
import keyword
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from markupsafe import Markup, escape

from finevo.outcome import LLMUsage
from finevo.vocabulary import Category
from runner.records import PayloadState, SecurityState, TaskResult, TaskState
from runner.reports.escape import cap, clean, short_value
from runner.reports.model import DocumentLike, ResultsDocument

#: Caps per kind of text (characters): a 10 KB reason is shown whole, a 1 MB line is cut with a note.
TEXT_CAP = 16_000
CODE_CAP = 100_000
VALUE_CAP = 4_000
CELL_CAP = 160
#: Above this many lines a diff is shown cut (it is the change between two attempts, not a file).
DIFF_LINES_CAP = 2_000

_BUILTINS = frozenset(dir(builtins))
_BANNER_KIND = re.compile(r"^> \[!(NOTE|TIP|IMPORTANT|WARNING|CAUTION)\]$")
_INLINE_MD = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`")


# --------------------------------------------------------------------------- text pieces

def text(value: Any, limit: int = TEXT_CAP) -> str:
    """Untrusted text (or any value, rendered compactly) as safe, capped text (escaped by the template)."""
    if value is None:
        return ""
    raw = value if isinstance(value, str) else short_value(value, limit)
    return cap(clean(raw), limit)


def line(value: Any, limit: int = CELL_CAP) -> str:
    """Untrusted text as one capped line (a table cell)."""
    if value is None:
        return ""
    raw = value if isinstance(value, str) else short_value(value, limit)
    return cap(clean(raw, keep_newlines=False), limit)


@dataclass(frozen=True)
class Piece:
    """A run of text with a style: ``""`` plain, ``strong``, ``code``; or a syntax class."""

    kind: str
    text: str


def inline_markdown(source: str) -> list[Piece]:
    """The writer's own markdown (``**bold**``, ``code``) of a banner or headline as pieces.

    Only for strings this package writes: the pieces are still escaped by the template."""
    out: list[Piece] = []
    pos = 0
    for m in _INLINE_MD.finditer(source):
        if m.start() > pos:
            out.append(Piece("", source[pos:m.start()]))
        out.append(Piece("strong", m.group(1)) if m.group(1) is not None else Piece("code", m.group(2)))
        pos = m.end()
    if pos < len(source):
        out.append(Piece("", source[pos:]))
    return out


@dataclass(frozen=True)
class Banner:
    kind: str
    pieces: list[Piece]


def banner_of(markdown_banner: str) -> Banner:
    """A ``summary.md`` banner (a GitHub alert: ``> [!KIND]`` then ``> text``) as kind and pieces."""
    lines = markdown_banner.split("\n")
    kind = "note"
    m = _BANNER_KIND.match(lines[0])
    if m:
        kind, lines = m.group(1).lower(), lines[1:]
    body = " ".join(ln.removeprefix(">").strip() for ln in lines)
    return Banner(kind, inline_markdown(body))


# --------------------------------------------------------------------------- syntax highlighting

#: One pass of one compiled pattern: comments, strings (prefixed, triple-quoted), numbers, names.
#: Operators and plain names stay unstyled (a span per ``(`` would double the page for little help);
#: whatever the pattern does not match is plain text, so every character is kept whatever the code.
_TOKEN = re.compile(r"""
    (?P<c>\#[^\n]*)
  | (?P<s>(?<![A-Za-z0-9_])[rRbBuUfF]{0,2}(?:\"\"\"(?:\\.|[^\\])*?\"\"\"|'''(?:\\.|[^\\])*?'''
          |"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'))
  | (?P<n>(?<![A-Za-z0-9_.])(?:0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][+-]?[0-9]+)?j?|\.[0-9]+))
  | (?P<w>[A-Za-z_][A-Za-z0-9_]*)
""", re.VERBOSE | re.DOTALL)
#: Longer code is shown plain (still escaped): highlighting is for reading, not for megabytes.
HIGHLIGHT_CAP = 100_000


def highlight(code: str) -> list[Piece]:
    """Python ``code`` as pieces with a syntax class each (``k`` keyword, ``b`` builtin, ``s``
    string, ``c`` comment, ``n`` number, ``d`` a name after ``def``/``class``; ``""`` plain).
    A tiny tokenizer of its own (a regular expression, not :mod:`tokenize`: it never refuses code
    that does not parse, and it is fast enough for pages of hundreds of tools). Code longer than
    :data:`HIGHLIGHT_CAP` is one plain piece."""
    if len(code) > HIGHLIGHT_CAP:
        return [Piece("", code)]
    out: list[Piece] = []
    pos = 0
    after_def = False
    for m in _TOKEN.finditer(code):
        kind = m.lastgroup or ""
        word = m.group()
        if kind == "w":
            if after_def:
                kind = "d"
            elif keyword.iskeyword(word) or keyword.issoftkeyword(word):
                kind = "k"
            elif word in _BUILTINS:
                kind = "b"
            else:
                kind = ""
            after_def = word in ("def", "class")
        if not kind:
            continue  # a plain name: part of the plain run around it
        if m.start() > pos:
            out.append(Piece("", code[pos:m.start()]))
        out.append(Piece(kind, word))
        pos = m.end()
    if pos < len(code):
        out.append(Piece("", code[pos:]))
    return out


#: The classes a piece of code or of a diff may carry (anything else is dropped, never written).
_CLASSES = frozenset({"k", "b", "s", "c", "n", "d", "add", "del", "hunk", "file"})


def code_markup(pieces: list[Piece], *, prefix: str = "t-", line_break: bool = False) -> Markup:
    """Highlighted code (or diff lines) as markup: each piece's text escaped, its class from
    :data:`_CLASSES` only. Built here rather than by a macro per piece (a 500-task page has hundreds
    of thousands of pieces); the same escaping as the template's autoescape."""
    parts = []
    for p in pieces:
        body = escape(p.text)
        if p.kind in _CLASSES:
            parts.append(f'<span class="{prefix}{p.kind}">{body}</span>')
        else:
            parts.append(str(body))
        if line_break:
            parts.append("\n")
    return Markup("".join(parts))


def diff_lines(old: str, new: str, old_name: str, new_name: str) -> list[Piece]:
    """The unified diff of two attempts' code, one piece per line (``add``, ``del``, ``hunk``,
    ``file``, ``""`` for context). Without difflib's "popular line" heuristic below 2,000 lines (in
    code, a line repeated often -- ``return``, a blank -- is no reason to lose the alignment)."""
    a, b = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=len(a) + len(b) > 4_000)
    out: list[Piece] = [Piece("file", f"--- {old_name}"), Piece("file", f"+++ {new_name}")]
    for group in matcher.get_grouped_opcodes(2):
        (_, i1, _, j1, _), (_, _, i2, _, j2) = group[0], group[-1]
        out.append(Piece("hunk", f"@@ -{i1 + 1},{i2 - i1} +{j1 + 1},{j2 - j1} @@"))
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                out += [Piece("", line(" " + ln, 2_000)) for ln in a[x1:x2]]
                continue
            out += [Piece("del", line("-" + ln, 2_000)) for ln in a[x1:x2]]
            out += [Piece("add", line("+" + ln, 2_000)) for ln in b[y1:y2]]
        if len(out) >= DIFF_LINES_CAP:
            out = out[:DIFF_LINES_CAP]
            out.append(Piece("hunk", f"… the diff is longer than {DIFF_LINES_CAP} lines; cut here"))
            break
    return out


# --------------------------------------------------------------------------- charts (SVG geometry)

@dataclass(frozen=True)
class Segment:
    kind: str
    x: float
    width: float
    count: int


@dataclass(frozen=True)
class CategoryBar:
    category: str
    total: int
    passed: int
    failed: int
    errors: int
    skipped: int
    pass_rate: float
    segments: list[Segment]
    y: float


#: Width of the drawing area of a bar (SVG user units; the SVG scales to the page).
BAR_W = 400.0


def category_bars(doc: ResultsDocument) -> list[CategoryBar]:
    bars = []
    for i, cat in enumerate(c for c in Category if c in doc.per_category):
        f = doc.per_category[cat]
        segs, x = [], 0.0
        for kind, n in (("pass", f.passed), ("fail", f.failed), ("error", f.errors), ("skipped", f.skipped)):
            w = BAR_W * n / f.total if f.total else 0.0
            if n:
                segs.append(Segment(kind, round(x, 2), round(w, 2), n))
            x += w
        bars.append(CategoryBar(cat.value, f.total, f.passed, f.failed, f.errors, f.skipped, f.pass_rate, segs,
                                y=i * 28.0))
    return bars


@dataclass(frozen=True)
class Interval:
    task_id: str
    status: str
    passes: int
    trials: int
    rate: float | None
    low: float
    high: float
    pass_hat_k: float | None
    pass_at_k: float | None
    baseline: str
    baseline_rate: float | None
    p_value: float | None
    tokens: int
    cost: float | None
    anchor: str


# --------------------------------------------------------------------------- per task

@dataclass
class AttemptView:
    number: int
    stage: str
    ok: bool
    repeat_of: int | None
    error: str
    tokens: str
    stages: list[tuple[str, bool, str]]
    code: list[Piece] | None
    diff: list[Piece] | None
    diff_from: int | None


@dataclass
class TaskView:
    index: int
    anchor: str
    t: TaskResult
    regression: bool
    improvement: bool
    status: str
    reason_line: str
    expected: list[tuple[str, str]]
    actual: str
    code: list[Piece] | None
    attempts: list[AttemptView] = field(default_factory=list)
    attempts_have_code: bool = False
    cost: float | None = None


def _tokens(usage: LLMUsage | None) -> str:
    return "" if usage is None else f"{usage.prompt_tokens} in, {usage.completion_tokens} out"


def _attempts(t: TaskResult) -> tuple[list[AttemptView], bool]:
    views: list[AttemptView] = []
    previous: tuple[int, str] | None = None
    any_code = False
    for a in t.attempts:
        code = a.code
        any_code = any_code or code is not None
        err = ""
        if a.error:
            err = text(a.error.message or a.error.to_dict(), VALUE_CAP)
        diff = None
        diff_from = None
        if code is not None and previous is not None and previous[1] != code:
            diff = diff_lines(previous[1], code, f"attempt {previous[0]}", f"attempt {a.number}")
            diff_from = previous[0]
        views.append(AttemptView(a.number, line(a.stage, 40), a.ok, a.repeat_of, err, _tokens(a.usage),
                                 [(line(s.name, 60), s.ok, line(s.note, 400)) for s in a.stages],
                                 # the first code in full (plain: the page stays light), unless it is the
                                 # final tool's; each later one as its diff
                                 [Piece("", cap(clean(code), CODE_CAP))]
                                 if code is not None and previous is None and code != t.code else None,
                                 diff, diff_from))
        if code is not None:
            previous = (a.number, code)
    return views, any_code


def _task_views(doc: ResultsDocument) -> list[TaskView]:
    regressed = {(r.task_id, r.state) for r in doc.regressions}
    improved = set(doc.improvements)
    st = doc.statistics
    figures = {f.task_id: f for f in st.tasks} if st is not None else {}
    views = []
    for i, t in enumerate(doc.tasks):
        f = figures.get(t.task_id)
        attempts, with_code = _attempts(t)
        views.append(TaskView(
            index=i, anchor=f"task-{i}", t=t, regression=(t.task_id, t.state) in regressed,
            improvement=t.task_id in improved and t.state == TaskState.PASS,
            status=f.status.value if f is not None else "",
            reason_line=line(t.reason) if t.state != TaskState.PASS else "",
            expected=[(line(k, 80), text(v, VALUE_CAP)) for k, v in t.expected.items()],
            actual=text(t.actual, VALUE_CAP) if t.actual is not None else "",
            code=highlight(cap(clean(t.code), CODE_CAP)) if t.code else None,
            attempts=attempts, attempts_have_code=with_code,
            cost=(f.usage.cost_usd / f.usage.trials if f is not None and f.usage.cost_usd is not None
                  and f.usage.trials else None)))
    return views


def _intervals(doc: ResultsDocument, anchors: dict[str, str]) -> list[Interval]:
    st = doc.statistics
    if st is None:
        return []
    out = []
    for f in st.tasks:
        base = "-" if f.baseline_trials is None else f"{f.baseline_passes}/{f.baseline_trials}"
        base_rate = (f.baseline_passes / f.baseline_trials
                     if f.baseline_trials and f.baseline_passes is not None else None)
        out.append(Interval(f.task_id, f.status.value, f.passes, f.trials, f.pass_rate, f.wilson_low, f.wilson_high,
                            f.pass_hat_k, f.pass_at_k, base, base_rate, f.p_value, f.usage.tokens,
                            f.usage.cost_usd, anchors.get(f.task_id, "")))
    return out


# --------------------------------------------------------------------------- assets and page

@cache
def _asset(name: str) -> str:
    return (resources.files("runner.reports") / "static" / name).read_text(encoding="utf-8")


def _csp_hash(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


def content_security_policy() -> str:
    """Nothing remote, no plugin, no form, no base; only the page's own stylesheet and script (by hash)."""
    return ("default-src 'none'; " f"style-src {_csp_hash(_asset('report.css'))}; "
            f"script-src {_csp_hash(_asset('report.js'))}; img-src data:; base-uri 'none'; form-action 'none'")


@cache
def _environment() -> Any:
    import jinja2

    env = jinja2.Environment(loader=jinja2.PackageLoader("runner.reports", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["text"] = text
    env.filters["code"] = code_markup
    env.filters["diff"] = lambda pieces: code_markup(pieces, prefix="d-", line_break=True)
    env.filters["line"] = line
    env.filters["pct"] = lambda x: "-" if x is None else f"{x:.0%}"
    env.filters["pct1"] = lambda x: "-" if x is None else f"{x:.1%}"
    env.filters["secs"] = lambda x: "-" if x is None else f"{x:.2f}"
    env.filters["usd"] = lambda x: "-" if x is None else f"${x:.4f}"
    return env


def render(doc: DocumentLike) -> str:
    """The page of the (validated) ``doc``."""
    from runner.reports import markdown, repeats_section

    doc = ResultsDocument.of(doc)
    tasks = _task_views(doc)
    anchors: dict[str, str] = {}
    for v in tasks:
        anchors.setdefault(v.t.task_id, v.anchor)
    stats = doc.statistics
    repeats = stats.repeats if stats is not None else 1
    title = markdown._title(doc).removeprefix("# ")
    context = {
        "doc": doc, "title": title, "banners": [banner_of(b) for b in markdown.banners(doc)],
        "headline": inline_markdown(markdown.headline(doc)), "tasks": tasks, "anchors": anchors,
        "bars": category_bars(doc), "bar_w": BAR_W, "intervals": _intervals(doc, anchors),
        "stats": stats, "show_stats": repeats_section.shown(doc) is not None, "repeats": repeats,
        "categories": sorted({v.t.category.value for v in tasks}),
        "sources": sorted({v.t.tool.source.value for v in tasks}),
        "states": [s.value for s in TaskState],
        "sec_bad": [s for s in doc.security.tasks if s.state in (SecurityState.UNBLOCKED, SecurityState.ERROR)],
        "pay_bad": [p for p in doc.payloads if p.state in (PayloadState.UNBLOCKED, PayloadState.ERROR)],
        "usage_line": repeats_section.usage_line(stats.usage) if stats is not None else "",
        "css": _asset("report.css"), "js": _asset("report.js"), "csp": content_security_policy(),
        "TaskState": TaskState,
    }
    return str(_environment().get_template("report.html.j2").render(**context))
