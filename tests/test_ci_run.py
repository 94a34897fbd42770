"""``.ci/run``, the CI entry point, run for real against stand-ins for what it calls.

It must walk README's newcomer path in a virtual environment of its own (created fresh, never the
caller's), make the Docker tests and the workflow lint mandatory, lint before the suite when the
checkout has scripts/lint.sh, and never be green when the suite collected no test.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Stand-in for `python3`: answers .ci/run's probes and makes a "virtual environment" from a template.
FAKE_PYTHON = """#!/usr/bin/env bash
case "$1" in
    -c) exit 0 ;;
    --version) echo "Python 3.11.99"; exit 0 ;;
    -m) [ "$2" = venv ] || exit 9; cp -r "{template}/." "$3/"; echo "venv $3" >> "{log}"; exit 0 ;;
esac
exit 9
"""
ACTIVATE = """export VIRTUAL_ENV="{venv}"
export PATH="$VIRTUAL_ENV/bin:$PATH"
"""
#: pip and finevo-verify inside the fake environment: they record how they were called.
RECORDER = """#!/usr/bin/env bash
echo "$(basename "$0") $* [VIRTUAL_ENV=$VIRTUAL_ENV]" >> "{log}"
"""
FAKE_TEST_SH = """echo "test.sh $* [VIRTUAL_ENV=$VIRTUAL_ENV]" >> "{log}"
echo "docker=${{FINEVO_REQUIRE_DOCKER:-}} actionlint=${{FINEVO_REQUIRE_ACTIONLINT:-}} pwd=$PWD args=$*"
if [ -n "${{FINEVO_TEST_IMAGE_BUILD:-}}" ]; then
    for _ in $(seq 100); do [ -s "$FINEVO_TEST_IMAGE_BUILD" ] && break; sleep 0.1; done
    echo "image build: $(cat "$FINEVO_TEST_IMAGE_BUILD")" >> "{log}"
fi
exit "${{FAKE_TEST_EXIT:-0}}"
"""
#: Stand-in for the Docker set-up (.ci/run runs it in the background): its env file, then its exit code.
FAKE_SETUP_DOCKER_SH = """[ "$1" = --env-file ] && echo "export FINEVO_TEST_BASE_IMAGE=fake-base" > "$2"
echo "setup-docker.sh" >> "{log}"
exit "${{FAKE_DOCKER_EXIT:-0}}"
"""
#: `python` inside the fake environment: the background build of the test image, recorded.
FAKE_VENV_PYTHON = """#!/usr/bin/env bash
echo "python $* [base=${{FINEVO_TEST_BASE_IMAGE:-}}]" >> "{log}"
[ "$1 $2 $3" = "-m tests.support.docker_env prebuild" ] || exit 9
echo '{{"status": "built", "image": "sha256:fake"}}' > "$4"
"""
FAKE_LINT_SH = """echo "lint.sh [VIRTUAL_ENV=$VIRTUAL_ENV]" >> "{log}"
exit "${{FAKE_LINT_EXIT:-0}}"
"""


@dataclass
class CiRun:
    code: int
    stdout: str
    stderr: str
    calls: list[str]
    checkout: Path


def _executable(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _ci_run(tmp_path: Path, *, lint: bool = True, test_exit: int = 0, lint_exit: int = 0,
            docs: bool = False, docs_exit: int = 0, docker: bool = False, docker_exit: int = 0) -> CiRun:
    checkout = tmp_path / "checkout"
    (checkout / ".ci").mkdir(parents=True)
    (checkout / "scripts").mkdir()
    shutil.copy2(ROOT / ".ci" / "run", checkout / ".ci" / "run")
    log = tmp_path / "calls.log"
    log.touch()
    _executable(checkout / "scripts" / "test.sh", FAKE_TEST_SH.format(log=log))
    if lint:
        _executable(checkout / "scripts" / "lint.sh", FAKE_LINT_SH.format(log=log))
    if docs:
        (checkout / "mkdocs.yml").write_text("site_name: x\n", encoding="utf-8")
    if docker:
        _executable(checkout / "scripts" / "setup-docker.sh", FAKE_SETUP_DOCKER_SH.format(log=log))
        (checkout / "tests" / "support").mkdir(parents=True)
        (checkout / "tests" / "support" / "docker_env.py").touch()
    # the template of a virtual environment; activate finds its own directory when sourced
    template = tmp_path / "template"
    (template / "bin").mkdir(parents=True)
    (template / "bin" / "activate").write_text(
        ACTIVATE.format(venv='$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)'), encoding="utf-8")
    for tool in ("pip", "finevo-verify"):
        _executable(template / "bin" / tool, RECORDER.format(log=log))
    _executable(template / "bin" / "mkdocs", RECORDER.format(log=log) + 'exit "${FAKE_DOCS_EXIT:-0}"\n')
    _executable(template / "bin" / "python", FAKE_VENV_PYTHON.format(log=log))
    python = tmp_path / "python3"
    _executable(python, FAKE_PYTHON.format(template=template, log=log))

    env = {k: v for k, v in os.environ.items() if not k.startswith("FINEVO_REQUIRE_") and k != "CI"}
    env.update(PYTHON=str(python), VIRTUAL_ENV="/caller/venv", TMPDIR=str(tmp_path),
               FAKE_TEST_EXIT=str(test_exit), FAKE_LINT_EXIT=str(lint_exit), FAKE_DOCS_EXIT=str(docs_exit),
               FAKE_DOCKER_EXIT=str(docker_exit), FINEVO_CHROMIUM="/bin/true")
    env.pop("FINEVO_TEST_IMAGE_BUILD", None)
    proc = subprocess.run(["bash", str(checkout / ".ci" / "run")], capture_output=True, text=True, env=env,
                          cwd="/", timeout=60, stdin=subprocess.DEVNULL, check=False)
    return CiRun(proc.returncode, proc.stdout, proc.stderr, log.read_text(encoding="utf-8").splitlines(), checkout)


def _venv_of(call: str) -> str:
    return call.rsplit("[VIRTUAL_ENV=", 1)[1].rstrip("]")


def test_ci_walks_the_readme_path_in_a_fresh_venv_with_docker_and_actionlint_mandatory(tmp_path: Path) -> None:
    run = _ci_run(tmp_path)
    assert run.code == 0, run.stderr
    assert run.stdout.strip() == f"docker=1 actionlint=1 pwd={run.checkout} args="
    created = run.calls[0].split()
    assert created[0] == "venv"
    venv = created[1]
    assert venv.startswith(str(tmp_path)) and venv != "/caller/venv"
    steps = [call.split(" [")[0].strip() for call in run.calls[1:]]
    assert steps[0] == "pip install -q -e ."                          # README command 1 ...
    assert steps[1].startswith("finevo-verify --llm reference")      # ... then the gate, offline
    assert steps.index("lint.sh") < steps.index("test.sh")           # lint first: pytest's summary ends the log
    assert "pip install -q -e .[dev]" in steps[:steps.index("lint.sh")]
    assert all(_venv_of(call) == venv for call in run.calls[1:])      # every step inside the fresh venv
    assert not Path(venv).exists()                                    # and it is gone afterwards


def test_a_checkout_without_lint_script_runs_the_suite_only(tmp_path: Path) -> None:
    run = _ci_run(tmp_path, lint=False)
    assert run.code == 0, run.stderr
    assert not any(call.startswith("lint.sh") for call in run.calls)
    assert run.calls[-1].startswith("test.sh")


@pytest.mark.parametrize("test_exit, lint_exit, expected", [
    (1, 0, 1),   # a failing suite fails CI
    (5, 0, 1),   # pytest collected no test: never green
    (0, 1, 1),   # lint findings fail CI ...
    (0, 2, 2),   # ... with lint's own code
])
def test_ci_fails_on_a_failing_suite_an_empty_one_or_lint(tmp_path: Path, test_exit: int, lint_exit: int,
                                                         expected: int) -> None:
    run = _ci_run(tmp_path, test_exit=test_exit, lint_exit=lint_exit)
    assert run.code == expected, run.stderr
    assert run.calls[-1].startswith("test.sh")   # the suite runs even after lint findings
    if test_exit == 5:
        assert "collected no test" in run.stderr


@pytest.mark.parametrize("docs_exit, expected", [(0, 0), (1, 1)])
def test_the_docs_site_is_built_strictly_beside_lint_before_the_suite_and_a_broken_build_fails_ci(
        tmp_path: Path, docs_exit: int, expected: int) -> None:
    run = _ci_run(tmp_path, docs=True, docs_exit=docs_exit)
    assert run.code == expected, run.stderr
    steps = [call.split(" [")[0].strip() for call in run.calls[1:]]
    build = next(step for step in steps if step.startswith("mkdocs"))
    assert build.startswith("mkdocs build --strict")
    # beside lint (the two static checks run at once), both on the dev extras, both before the suite
    dev = steps.index("pip install -q -e .[dev]")
    assert dev < steps.index(build) < steps.index("test.sh") and dev < steps.index("lint.sh") < steps.index("test.sh")
    assert "mkdocs build --strict: exit" in run.stderr
    assert run.calls[-1].startswith("test.sh")   # the suite runs even after a failed build


def test_the_docker_tests_image_is_built_in_the_background_once_docker_is_set_up(tmp_path: Path) -> None:
    run = _ci_run(tmp_path, docker=True)
    assert run.code == 0, run.stderr
    steps = [call.split(" [")[0].strip() for call in run.calls[1:]]
    build = next(step for step in steps if step.startswith("python "))
    # the fixture's own build, after the Docker set-up and the dev extras (the SDK), with the set-up's env
    assert build.startswith("python -m tests.support.docker_env prebuild ")
    assert steps.index("setup-docker.sh") < steps.index(build)
    assert steps.index("pip install -q -e .[dev]") < steps.index(build)
    assert "[base=fake-base]" in next(call for call in run.calls if call.startswith("python "))
    # the suite is told where the outcome is, and finds it there
    assert 'image build: {"status": "built", "image": "sha256:fake"}' in run.calls


def test_a_failed_docker_set_up_leaves_the_image_to_the_fixture(tmp_path: Path) -> None:
    run = _ci_run(tmp_path, docker=True, docker_exit=1)
    assert run.code == 0, run.stderr
    assert not any(call.startswith("python ") for call in run.calls)
    assert 'image build: {"status": "not-started"}' in run.calls   # test.sh retries the set-up
