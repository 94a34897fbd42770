"""Hostile text through every writer: the structure of each report never depends on what a tool wrote.

The markdown is rendered by cmark-gfm (GitHub's own renderer, raw HTML kept as GitHub would keep it
before sanitising) and compared with the rendering of the same document with plain words; JUnit is
validated by a strict XSD and read by junitparser; the job log is read line by line as the runner
would read workflow commands.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from junitparser import Error, Failure, JUnitXml, Skipped

from runner.cli.results import diff_lines
from runner.reports import document, escape, github, junit, markdown, write_all
from runner.reports.console import Console
from tests.runner.reports_support import (
    HOSTILE,
    ISSUE_REF,
    JUNIT_XSD,
    MENTION,
    benign_twin,
    forged_twin,
    hostile_doc,
    hostile_text,
    render_gfm,
    tags,
)

STRUCTURE = ("h1", "h2", "table", "tr", "td", "details", "summary", "pre", "ul", "li", "blockquote", "hr")
FORBIDDEN = ("a", "img", "script", "iframe", "style", "input", "b", "del", "math", "sup")


@pytest.fixture(scope="module")
def doc():
    return hostile_doc()


@pytest.fixture(scope="module")
def twin(doc):
    return benign_twin(doc)


def _check_markdown(hostile: str, benign: str) -> None:
    got, want = tags(hostile), tags(benign)
    for tag in STRUCTURE:
        assert got.counts.get(tag, 0) == want.counts.get(tag, 0), f"<{tag}> count changed by hostile text"
    for tag in FORBIDDEN:  # none but the writer's own (the comment's one link to the run)
        assert got.counts.get(tag, 0) == want.counts.get(tag, 0) <= (tag == "a"), f"hostile text produced <{tag}>"
    assert set(got.counts) <= set(want.counts), f"new tags: {set(got.counts) - set(want.counts)}"
    assert got.comments == 0
    prose = "".join(got.prose)
    assert not MENTION.search(prose), MENTION.search(prose)
    assert not ISSUE_REF.search(prose), ISSUE_REF.search(prose)
    assert "\x00" not in hostile and "\x1b" not in hostile and "\r" not in hostile


def test_summary_structure_is_the_same_as_with_plain_words(doc, twin) -> None:
    hostile, benign = markdown.render(doc), markdown.render(twin)
    _check_markdown(hostile, benign)
    assert hostile.splitlines()[0].startswith("# ❌ finevo-verify: FAILED")
    assert hostile.rstrip().splitlines()[-1].startswith("_End of the finevo-verify summary.")


def test_comment_structure_is_the_same_as_with_plain_words(doc, twin) -> None:
    url = "https://github.com/o/r/actions/runs/1"
    big = 10**8  # nothing left out, so both have every section
    hostile = markdown.render_comment(doc, run_url=url, head_repo="evil/r", base_repo="o/r", max_chars=big)
    benign = markdown.render_comment(twin, run_url=url, head_repo="evil/r", base_repo="o/r", max_chars=big)
    _check_markdown(hostile, benign)
    fitted = markdown.render_comment(doc, run_url=url, head_repo="evil/r", base_repo="o/r")
    assert len(fitted) <= 65_536 and fitted.rstrip().endswith(f"[the workflow run]({url})._")
    html = render_gfm(fitted)
    assert re.findall(r"<a [^>]*>", html) == [f'<a href="{url}">']  # the writer's one link, nothing else


def test_the_run_link_is_rendered_as_a_link_and_a_forged_one_is_not() -> None:
    doc = hostile_doc()
    good = render_gfm(markdown.render_comment(doc, run_url="https://github.com/o/r/actions/runs/7"))
    assert good.count("<a href=") == 1 and 'href="https://github.com/o/r/actions/runs/7"' in good
    forged = render_gfm(markdown.render_comment(doc, run_url="javascript:alert(1)//)[x](https://evil.example"))
    assert "<a " not in forged


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_string_alone_stays_inert_in_a_table_cell_and_in_a_summary(name) -> None:
    value = HOSTILE[name]
    row = f"| {escape.md_inline(value)} | x |"
    html = render_gfm(f"| a | b |\n|---|---|\n{row}\n")
    got = tags(f"| a | b |\n|---|---|\n{row}\n")
    assert got.counts.get("tr") == 2 and got.counts.get("td") == 2, html
    assert not any(got.counts.get(t) for t in FORBIDDEN), html
    block = f"<details><summary>{escape.md_inline(value)}</summary>\n\nbody\n\n</details>\n"
    got = tags(block)
    assert got.counts.get("details") == 1 and got.counts.get("summary") == 1
    assert not any(got.counts.get(t) for t in FORBIDDEN)


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_each_hostile_string_stays_inside_its_code_block(name) -> None:
    value = HOSTILE[name]
    text = "\n".join(["<details><summary>s</summary>", "", *escape.md_code_block(value), "", "</details>", "",
                      "after"])
    html = render_gfm(text)
    got = tags(text)
    assert got.counts.get("pre") == 1 and got.counts.get("details") == 1, html
    assert html.rstrip().endswith("<p>after</p>")


def test_code_fence_is_longer_than_any_backtick_run() -> None:
    lines = escape.md_code_block("a ``````` b\n```")
    assert lines[0] == "`" * 8 and lines[-1] == "`" * 8


def test_junit_is_strictly_valid_and_every_failure_keeps_its_place(doc, tmp_path: Path) -> None:
    import xmlschema
    from lxml import etree

    xml = junit.render(doc)
    schema = xmlschema.XMLSchema(str(JUNIT_XSD))
    schema.validate(xml)
    etree.fromstring(xml.encode("utf-8"))  # a strict XML 1.0 parser accepts it
    path = tmp_path / "junit.xml"
    path.write_text(xml, encoding="utf-8")
    cases = [case for suite in JUnitXml.fromfile(str(path)) for case in suite]
    results = [r for case in cases for r in case.result]
    failing = sum(1 for t in doc.tasks if t.state == "fail") + doc.security.unblocked
    erroring = sum(1 for t in doc.tasks if t.state == "error") + doc.security.errors
    assert sum(isinstance(r, Failure) for r in results) == failing
    assert sum(isinstance(r, Error) for r in results) == erroring
    assert not any(isinstance(r, Skipped) for r in results)
    assert len(cases) == len(doc.tasks) + len(doc.security.tasks) + len(doc.payloads)
    assert all(r.message and "\n" not in r.message for r in results)


def test_xml_text_keeps_only_what_xml_allows() -> None:
    text = escape.xml_text("a\x00b\x0bc\ud800d\ufffee\U0001f600\t\r\n")
    assert text == "a\ufffdb\ufffdc\ufffdd\ufffde\U0001f600\t\n"


def test_the_job_log_reads_no_forged_command(doc, tmp_path: Path) -> None:
    out = io.StringIO()
    console = Console(out, colour=False, env={"GITHUB_ACTIONS": "true"})
    for t in doc.tasks:
        console.task_start(1, 2, t.task_id, t.query)
        console.task_end(t.state.value, 1.0, t.reason)
    console.summary(doc)
    github.publish(doc, markdown.render(doc), out, env={"GITHUB_ACTIONS": "true"})
    lines = out.getvalue().split("\n")
    stopped: str | None = None
    commands = []
    for line in lines:
        assert "\r" not in line and "\x1b" not in line
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        stripped = line.lstrip()
        if stripped.startswith("::stop-commands::"):
            stopped = stripped.split("::")[2]
            assert re.fullmatch(r"[0-9a-f]{32}", stopped)
            continue
        if stripped.startswith("::"):
            commands.append(stripped)
    assert stopped is None
    regressions = [c for c in commands if c.startswith("::error title=finevo-verify regression%3A ")]
    assert len(regressions) == len(doc.regressions) and len(commands) == len(regressions)
    for command in commands:
        message = command.split("::", 2)[2]
        assert "\n" not in message and "::warning" not in command.split("::", 2)[1]


def test_workflow_command_escaping() -> None:
    assert escape.command_data("50%\r\n::x") == "50%25%0A::x"
    assert escape.command_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    assert next(escape.stop_commands(["x"], token="t")) == "::stop-commands::t"
    block = list(escape.stop_commands(["::t::"], token="t"))
    assert block[-1] != "::t::" and block[-1].startswith("::")  # a token found inside is never used


def test_diff_lines_are_one_line_each(doc) -> None:
    twin = benign_twin(doc)
    lines = diff_lines(twin, doc)
    assert all("\n" not in line and "\r" not in line and not line.lstrip().startswith("::") for line in lines)


def test_every_report_file_is_written_whatever_the_bytes(doc, tmp_path: Path) -> None:
    paths = write_all(doc, tmp_path)
    assert document.load(paths["json"]) == doc
    raw = paths["json"].read_bytes()
    raw.decode("utf-8")  # valid UTF-8 although a tool wrote invalid bytes
    assert json.loads(raw)["tasks"][0]["query"] == doc.tasks[0].query
    paths["markdown"].read_text(encoding="utf-8")
    paths["junit"].read_text(encoding="utf-8")
    assert sorted(p.name for p in (tmp_path / "tools").iterdir()) == sorted(
        f"{t.task_id}.py" for t in doc.tasks if t.code)


def test_short_value_never_recurses_deeply() -> None:
    deep: list[object] = []
    cur = deep
    for _ in range(100_000):
        nxt: list[object] = []
        cur.append(nxt)
        cur = nxt
    text = escape.short_value(deep, 100)
    assert text.startswith("[[[[") and len(text) <= 100


def test_hostile_text_is_not_lost_from_the_results_document(doc) -> None:
    assert hostile_text() in doc.tasks[0].code


def test_writers_given_plain_json_values_validate_them_first(doc) -> None:
    from pydantic import ValidationError

    data = doc.to_json_dict()
    assert markdown.render(data) == markdown.render(doc) and junit.render(data) == junit.render(doc)
    data["summary"]["passed"] = 10**6
    for writer in (markdown.render, junit.render, github.outputs):
        with pytest.raises(ValidationError):
            writer(data)


def test_forged_verdict_reasons_and_warnings_cannot_open_blocks(doc, twin) -> None:
    forged, plain = doc.to_json_dict(), twin.to_json_dict()
    forged["verdict"]["reasons"] = forged["verdict"]["warnings"] = list(HOSTILE.values())
    plain["verdict"]["reasons"] = plain["verdict"]["warnings"] = ["word"] * len(HOSTILE)
    hostile, benign = document.validate(forged), document.validate(plain)
    got, want = tags(markdown.render(hostile)), tags(markdown.render(benign))
    for tag in (*STRUCTURE, "ol", "p", "code", "h3"):
        assert got.counts.get(tag, 0) == want.counts.get(tag, 0), tag


def test_a_forged_document_with_every_free_text_hostile_keeps_every_report_intact(doc, twin, tmp_path: Path) -> None:
    import xmlschema

    forged = forged_twin(doc)
    assert forged.verdict.criteria[0].value != twin.verdict.criteria[0].value  # really rewritten
    _check_markdown(markdown.render(forged), markdown.render(twin))
    big = 10**8
    _check_markdown(markdown.render_comment(forged, max_chars=big), markdown.render_comment(twin, max_chars=big))
    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(junit.render(forged))
    out = io.StringIO()
    Console(out, colour=False, env={"GITHUB_ACTIONS": "true"}).summary(forged)
    github.publish(forged, "", out, env={"GITHUB_ACTIONS": "true"})
    lines = out.getvalue().splitlines()
    token = lines[0].removeprefix("::stop-commands::")
    assert lines[0].startswith("::stop-commands::") and f"::{token}::" in lines
    end = lines.index(f"::{token}::")
    assert not any(line.lstrip().startswith("::") for line in lines[1:end])  # the summary itself
    assert all(line.startswith(("::error title=finevo-verify", "::warning title=finevo-verify"))
               for line in lines[end + 1:])  # then only the gate's own annotations
