"""report.html without a browser: written with every report (partial ones too) and by ``report --html``;
its markup is the template's own whatever the text (parsed here); the CSP allows exactly the inline
stylesheet and script by their hashes; banners are summary.md's words; highlighting and diffs keep the
text they were given."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from finevo.outcome import Attempt
from runner.cli import main
from runner.records import TaskResult
from runner.reports import document, html, markdown, write_all
from tests.runner.reports_support import HOSTILE, config, hostile_doc, make_doc

#: Every element the template writes; anything else in a page came from text that was not escaped.
TEMPLATE_TAGS = {"html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "div", "span",
                 "strong", "code", "p", "ul", "ol", "li", "b", "nav", "a", "main", "section", "table", "thead",
                 "tbody", "tr", "th", "td", "figure", "svg", "g", "text", "rect", "line", "circle", "form", "label",
                 "select", "option", "input", "button", "article", "dl", "dt", "dd", "pre", "details", "summary",
                 "footer", "script"}


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.data: dict[str, list[str]] = {"style": [], "script": []}
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag in self.data:
            self._in = tag

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if tag == self._in:
            self._in = None

    def handle_data(self, data: str) -> None:
        if self._in:
            self.data[self._in].append(data)


def _parse(page: str) -> _Tags:
    parser = _Tags()
    parser.feed(page)
    parser.close()
    return parser


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_hostile_text_never_becomes_markup_and_the_csp_allows_only_the_pages_own_code() -> None:
    page = html.render(hostile_doc())
    parsed = _parse(page)
    assert {tag for tag, _ in parsed.tags} <= TEMPLATE_TAGS
    assert [tag for tag, _ in parsed.tags].count("script") == 1
    assert [tag for tag, _ in parsed.tags].count("style") == 1
    for tag, attrs in parsed.tags:
        assert not any(name.startswith("on") for name in attrs), (tag, attrs)
        if tag == "a":
            assert str(attrs["href"]).startswith("#"), attrs  # no link leaves the page
        assert "src" not in attrs, (tag, attrs)
    (csp,) = [a["content"] for t, a in parsed.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert csp is not None
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    assert directives["script-src"] == _sha("".join(parsed.data["script"]))
    assert directives["style-src"] == _sha("".join(parsed.data["style"]))
    assert "unsafe" not in csp and "http" not in csp


def test_a_1mb_line_costs_the_page_a_bounded_block() -> None:
    huge = "A" * 1_000_000
    doc = make_doc([TaskResult("calc_001", "calculation", huge, "fail", huge, code=huge, stdout=huge, stderr=huge,
                               actual=huge)])
    page = html.render(doc)
    assert len(page) < 300_000
    assert "more characters]" in page


def test_every_run_directory_and_every_partial_run_gets_its_page(tmp_path: Path) -> None:
    doc = make_doc([TaskResult("calc_001", "calculation", "q", "fail", "wrong")])
    paths = write_all(doc, tmp_path / "full")
    assert paths["html"] == tmp_path / "full" / "report.html"
    partial = make_doc([TaskResult("calc_001", "calculation", "q", "fail", "wrong")], partial_signal=15)
    paths = write_all(partial, tmp_path / "partial")
    assert paths["html"].name == f"partial_{partial.run_id}.html"
    assert "Partial run" in paths["html"].read_text(encoding="utf-8")


def test_report_html_renders_any_valid_results_and_refuses_a_forged_one(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    doc = make_doc([TaskResult("calc_001", "calculation", "q", "fail", "wrong")],
                   config=config(baseline={"path": "b", "passing_tasks": ["calc_001"], "target_pass_rate": 0.5}))
    results = tmp_path / "results.json"
    results.write_text(document.dumps(doc), encoding="utf-8")
    page = tmp_path / "elsewhere" / "page.html"
    page.parent.mkdir()
    assert main(["report", str(results), "--out", str(tmp_path / "out"), "--html", str(page)]) == 1
    assert str(page) in capsys.readouterr().out.splitlines()
    assert 'data-status="failed"' in page.read_text(encoding="utf-8")
    forged = json.loads(results.read_text(encoding="utf-8"))
    forged["summary"]["passed"] = 1
    results.write_text(json.dumps(forged), encoding="utf-8")
    page.unlink()
    assert main(["report", str(results), "--html", str(page)]) == 2
    assert not page.exists()


def test_merged_shards_get_one_page(tmp_path: Path) -> None:
    docs = []
    for k, task in ((1, "calc_001"), (2, "calc_002")):
        doc = make_doc([TaskResult(task, "calculation", "q", "pass", "ok")], run_id=f"s{k}",
                       config=config(selection={"shard": f"{k}/2"}))
        path = tmp_path / f"s{k}.json"
        path.write_text(document.dumps(doc), encoding="utf-8")
        docs.append(path)
    assert main(["merge", *map(str, docs), "--out", str(tmp_path / "out"), "--run-id", "m"]) == 0
    page = (tmp_path / "out" / "m" / "report.html").read_text(encoding="utf-8")
    assert 'id="count-total">2<' in page and "merged from s1, s2" in page


def test_banners_are_the_words_of_summary_md() -> None:
    cfg = config(llm="reference", provider="reference", snapshot_synthetic=True, isolation="weak")
    doc = make_doc([TaskResult("calc_001", "calculation", "q", "pass", "ok")], config=cfg, partial_signal=15)
    words = [re.sub(r"\*\*|`", "", " ".join(ln.removeprefix(">").strip() for ln in b.split("\n")[1:]))
             for b in markdown.banners(doc)]
    assert len(words) == 4
    banners = [html.banner_of(b) for b in markdown.banners(doc)]
    assert [b.kind for b in banners] == ["warning", "note", "caution", "important"]
    assert ["".join(p.text for p in b.pieces) for b in banners] == words
    page = html.render(doc)
    for b in banners:
        for piece in b.pieces:
            assert piece.text.replace("'", "&#39;").replace('"', "&#34;") in page


@pytest.mark.parametrize("code", [
    "def tool(symbol: str) -> float:\n    '''doc'''\n    x = 1.5e3  # note\n    return float(len(symbol)) + x\n",
    "def broken(:\n    return '\n",                      # does not tokenize: shown plain
    "x = f'{a!r:>{width}}'\nclass C: pass\r\n",
    "",
])
def test_highlighting_keeps_every_character(code: str) -> None:
    pieces = html.highlight(code)
    assert "".join(p.text for p in pieces) == code


def test_highlighting_classes() -> None:
    kinds = {p.text: p.kind for p in html.highlight("def tool(x):\n    return len(x)  # n\n")}
    assert kinds["def"] == "k" and kinds["tool"] == "d" and kinds["len"] == "b" and kinds["# n"] == "c"


def test_the_diff_between_attempts_is_shown_and_an_unchanged_repeat_has_none() -> None:
    a1, a2 = "def tool():\n    return 1\n", "def tool():\n    return 2\n"
    task = TaskResult("calc_001", "calculation", "q", "pass", "ok", code=a2, attempts=[
        Attempt(number=1, stage="contract", ok=False, code=a1),
        Attempt(number=2, stage="contract", ok=False, code=a1, repeat_of=1),
        Attempt(number=3, stage="done", ok=True, code=a2)])
    (view,) = html._task_views(make_doc([task]))
    assert [a.diff_from for a in view.attempts] == [None, None, 2]  # consecutive: 2 repeated 1
    diff = view.attempts[2].diff
    assert diff is not None
    assert [(d.kind, d.text) for d in diff if d.kind in ("add", "del")] == [("del", "-    return 1"),
                                                                            ("add", "+    return 2")]
    assert view.attempts[0].code is not None and view.attempts_have_code


@pytest.mark.slow
def test_a_page_of_500_failing_tasks_is_one_file_of_bounded_size() -> None:
    tasks = [TaskResult(f"calc_{i:03d}", "calculation", "q", "fail", "r" * 10_000, code="x = 1\n" * 100)
             for i in range(500)]
    page = html.render(make_doc(tasks))
    assert page.count('<article class="task"') == 500
    assert len(page.encode()) < 30_000_000
    assert HOSTILE["html"] not in page
