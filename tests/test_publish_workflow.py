"""publish.yml treats the verify run's artifact as untrusted: its render step, run here for real
(bash, this checkout's finevo-verify, a stand-in ``gh``), posts only what finevo-verify rendered from
a validated results document, and a fixed notice when there is none."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.records import TaskResult
from runner.reports import document
from tests.runner.reports_support import JUNIT_XSD, hostile_doc, make_doc

ROOT = Path(__file__).resolve().parents[1]
PUBLISH = ROOT / ".github" / "workflows" / "publish.yml"
RUN_URL = "https://github.com/o/r/actions/runs/42"
HEAD_SHA = "a" * 40


def _workflow() -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load(PUBLISH.read_text(encoding="utf-8"))
    data["on"] = data.pop(True, data.get("on"))
    return data


def _steps() -> list[dict[str, Any]]:
    (job,) = _workflow()["jobs"].values()
    return list(job["steps"])


def _render_step() -> dict[str, Any]:
    return next(s for s in _steps() if s.get("id") == "render")


def _run_render(tmp_path: Path, results: bytes | None, *, head_repo: str = "o/r", pr: str = "7",
                pr_head: str = HEAD_SHA, cli: str | None = None) -> dict[str, str]:
    """Run the render step's script in ``tmp_path`` as the runner would, with a stand-in ``gh``."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    gh = bindir / "gh"
    gh.write_text(f"#!/bin/sh\necho {pr_head}\n")
    gh.chmod(0o755)
    if cli is not None:  # a stand-in finevo-verify, first on PATH
        (bindir / "finevo-verify").write_text(cli)
        (bindir / "finevo-verify").chmod(0o755)
    exe = Path(sys.executable).parent / "finevo-verify"
    if not exe.exists():
        pytest.skip("finevo-verify is not installed next to this Python")
    reports = tmp_path / "artifacts" / "finevo-verify-reports"
    (reports / "ci").mkdir(parents=True)
    (reports / "ci" / "pr-number.txt").write_text(pr + "\n")
    if results is not None:
        (reports / "gh-1").mkdir()
        (reports / "gh-1" / "results.json").write_bytes(results)
        (reports / "gh-1" / "summary.md").write_text("<img src=https://evil.example/forged.png> @octocat")
        (reports / "gh-1" / "report.html").write_text("<script>fetch('https://evil.example/forged-page')</script>")
    output = tmp_path / "github_output"
    output.touch()
    workflow_env = {k: str(v) for k, v in _workflow().get("env", {}).items()}
    env = {"PATH": f"{bindir}:{exe.parent}:{os.environ['PATH']}", "HOME": str(tmp_path), "GITHUB_OUTPUT": str(output),
           "RUN_URL": RUN_URL, "HEAD_SHA": HEAD_SHA, "HEAD_REPO": head_repo, "REPO": "o/r", "GH_TOKEN": "x",
           **workflow_env}
    proc = subprocess.run(["bash", "-e", "-c", _render_step()["run"]], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    outputs = dict(line.split("=", 1) for line in output.read_text().splitlines() if "=" in line)
    outputs["log"] = proc.stdout + proc.stderr
    return outputs


def _junit_ok(path: Path) -> None:
    import xmlschema

    xmlschema.XMLSchema(str(JUNIT_XSD)).validate(str(path))


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_valid_results_file_is_rendered_by_finevo_verify_from_the_artifact(tmp_path: Path) -> None:
    doc = hostile_doc()
    out = _run_render(tmp_path, document.dumps(doc).encode("utf-8"), head_repo="evil/fork")
    assert out["valid"] == "true" and out["pr"] == "7"
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith("# ❌ finevo-verify: FAILED") and len(comment) <= 65_536
    assert "This run came from a fork" in comment and "evil/fork" in comment
    assert comment.rstrip().endswith(f"[the workflow run]({RUN_URL})._")
    assert "forged.png" not in comment  # the artifact's own summary.md is never posted
    _junit_ok(tmp_path / "rendered" / "junit.xml")
    page = (tmp_path / "page" / "report.html").read_text(encoding="utf-8")  # rendered here, not the artifact's
    assert page.startswith("<!DOCTYPE html>") and "Content-Security-Policy" in page and "forged-page" not in page
    assert doc.run_id in page


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("name, payload", [
    ("missing", None),
    # a file there runs the real renderer (a finevo-verify process, ~0.7 s): slow
    pytest.param("not json", b"\xff\xfe<script>", marks=pytest.mark.slow),
    pytest.param("forged counts", b"forged", marks=pytest.mark.slow),
    pytest.param("unknown key", b"unknown", marks=pytest.mark.slow),
])
def test_a_missing_or_forged_results_file_gets_a_fixed_notice_and_a_failing_check(tmp_path: Path, name,
                                                                                   payload) -> None:
    if payload in (b"forged", b"unknown"):
        data = make_doc([TaskResult("calc_001", "calculation", "q", "fail", "@octocat </details>")]).to_json_dict()
        if payload == b"forged":
            data["summary"]["passed"], data["summary"]["failed"] = 1, 0
            data["verdict"].update(status="passed", exit_code=0, passed=True, reasons=[])
        else:
            data["note"] = "<img src=https://evil.example/x.png>\n::warning::forged"
        payload = json.dumps(data).encode()
    out = _run_render(tmp_path, payload)
    assert out["valid"] == "false"
    comment = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert comment.startswith("# ⚠️ finevo-verify: NO VERDICT (the uploaded results could not be validated)")
    assert "octocat" not in comment and "evil" not in comment and "forged" not in comment
    assert comment.rstrip().endswith(f"[the workflow run]({RUN_URL})._")
    _junit_ok(tmp_path / "rendered" / "junit.xml")
    assert 'failures="1"' in (tmp_path / "rendered" / "junit.xml").read_text()
    for line in out["log"].splitlines():
        assert not line.lstrip().startswith("::"), line
    assert not (tmp_path / "page").exists()  # no page from an invalid artifact


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
@pytest.mark.parametrize("pr_head, expected", [(HEAD_SHA, "12"), ("b" * 40, "")])
def test_the_pull_request_number_is_digits_and_must_have_the_verified_head(tmp_path: Path, pr_head, expected) -> None:
    # The number is read and checked before the renderer runs: a stand-in renderer that writes a comment
    # and exits 0 (the real one renders a valid file in the test above) keeps a finevo-verify process
    # per case out of it.
    results = document.dumps(make_doc([TaskResult("calc_001", "calculation", "q", "pass", "ok")])).encode()
    renderer = '#!/bin/sh\necho "$*" > stand-in-args\necho "# stand-in comment" > comment.md\n'
    out = _run_render(tmp_path, results, pr="12; rm -rf /", pr_head=pr_head, cli=renderer)
    assert out["pr"] == expected and out["valid"] == "true"
    assert (tmp_path / "stand-in-args").read_text().startswith("report artifacts/finevo-verify-reports/gh-1/")


def test_the_check_and_the_comment_come_from_the_rendered_files_only() -> None:
    steps = _steps()
    check = next(s for s in steps if str(s.get("uses", "")).startswith("EnricoMi/publish-unit-test-result-action@"))
    files = [f.strip() for f in check["with"]["files"].splitlines() if f.strip()]
    assert files and all(f.startswith("rendered/") for f in files)
    comment = next(s for s in steps if str(s.get("uses", "")).startswith("marocchino/sticky-pull-request-comment@"))
    assert comment["with"]["path"] == "comment.md"
    run = _render_step()["run"]
    assert "finevo-verify report" in run and "--comment comment.md" in run
    install = next(s for s in steps if "pip install" in str(s.get("run", "")))
    assert "./base" in install["run"] and "artifacts" not in install["run"]


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_a_renderer_that_dies_without_a_comment_is_not_taken_for_a_verdict(tmp_path: Path) -> None:
    results = document.dumps(make_doc([TaskResult("calc_001", "calculation", "q", "pass", "ok")])).encode()
    crash = "#!/bin/sh\nmkdir -p rendered && echo '<testsuites/>' > rendered/junit.xml\necho boom >&2\nexit 3\n"
    out = _run_render(tmp_path, results, cli=crash)
    assert out["valid"] == "false"
    assert (tmp_path / "comment.md").read_text(encoding="utf-8").startswith("# ⚠️ finevo-verify: NO VERDICT")
    _junit_ok(tmp_path / "rendered" / "junit.xml")
    assert 'failures="1"' in (tmp_path / "rendered" / "junit.xml").read_text()


def test_report_html_is_rendered_here_uploaded_only_when_valid_and_linked_from_the_comment(tmp_path: Path) -> None:
    steps = _steps()
    assert "--html page/report.html" in _render_step()["run"]
    upload = next(s for s in steps if s.get("id") == "page")
    assert str(upload["uses"]).startswith("actions/upload-artifact@")
    assert upload["if"] == "steps.render.outputs.valid == 'true'" and upload["with"]["path"] == "page/report.html"
    link = steps[steps.index(upload) + 1]
    comment = next(s for s in steps if str(s.get("uses", "")).startswith("marocchino/sticky-pull-request-comment@"))
    assert steps.index(link) < steps.index(comment) and "comment.md" in link["run"]
    assert link["env"]["PAGE_URL"] == "${{ steps.page.outputs.artifact-url }}"
    (tmp_path / "comment.md").write_text("# verdict\n")
    url = "https://github.com/o/r/actions/runs/9/artifacts/3"
    for value in (url, "https://evil.example/x) [y](javascript:alert(1)"):
        subprocess.run(["bash", "-e", "-c", link["run"]], cwd=tmp_path, env={"PATH": os.environ["PATH"],
                       "PAGE_URL": value}, check=True, timeout=30)
    text = (tmp_path / "comment.md").read_text(encoding="utf-8")
    assert f"[finevo-verify-report-html artifact]({url})" in text and "javascript" not in text
