"""The wheel runs: built from the project's sources, installed into a fresh virtual environment outside
the checkout, it finds the benchmark suite, the snapshot, the reference tools and the schemas it
ships, runs README command 1 (``finevo-verify --llm reference``) and ``sandbox check`` from there,
and a missing snapshot is one line naming the path tried (exit 2).

The fresh environment takes the project from the wheel only; its third-party dependencies come from
the environment running this test (a ``.pth`` line to its site-packages, so nothing is downloaded),
which is why the test checks that ``finevo`` and ``runner`` are imported from the new environment.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SOURCES = ("pyproject.toml", "README.md", "finevo", "runner", "benchmarks")

# the built wheel and its environment (a module fixture) serve every test here: one worker, so it is
# built once (handed out one at a time, the tests landed on both workers and each built it)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL, check=False)


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str], Path]:
    """(the fresh environment's bin directory, an environment for its commands, a directory outside)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FINEVO_", "PYTHON", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    build = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(root / "dist"), str(src)]
    wheelhouse = os.environ.get("FINEVO_TEST_WHEELHOUSE")
    if wheelhouse:  # the build backend from the offline wheelhouse when there is one
        build[4:4] = ["--find-links", wheelhouse]
    done = _run(build, cwd=root, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    wheel = next((root / "dist").glob("finevo-*.whl"))

    target = root / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    purelib = Path(_run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                        cwd=root, env=env).stdout.strip())
    (purelib / "_test_dependencies.pth").write_text(sysconfig.get_path("purelib") + "\n", encoding="utf-8")
    done = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                 "--no-index", str(wheel)], cwd=root, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    elsewhere = root / "elsewhere"
    elsewhere.mkdir()
    env["PATH"] = f"{target / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["FINEVO_REGISTRY_DIR"] = str(root / "registry")
    return target / "bin", env, elsewhere


def test_the_wheel_ships_its_data_outside_every_package(installed: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, elsewhere = installed
    probe = ("import json, finevo, runner, finevo.paths as p, runner.reports.schema as s; "
             "print(json.dumps([finevo.__file__, runner.__file__, str(p.benchmarks_dir()), str(s.SCHEMA_PATH)]))")
    done = _run([str(bin_dir / "python"), "-c", probe], cwd=elsewhere, env=env)
    assert done.returncode == 0, done.stderr
    finevo_file, runner_file, bench, schema = (Path(x) for x in json.loads(done.stdout))
    prefix = bin_dir.parent
    assert prefix in finevo_file.parents and prefix in runner_file.parents  # the wheel's, not the checkout's
    assert bench == prefix / "share" / "finevo" / "benchmarks"
    assert runner_file.parent not in bench.parents and finevo_file.parent not in bench.parents
    for part in ("tasks.jsonl", "baseline.json", "security_tasks.jsonl", "security_payloads.jsonl",
                 "data/manifest.json", "reference/fetch_001.py", "benign/calls.json"):
        assert (bench / part).is_file(), part
    assert schema.is_file()
    assert (runner_file.parent / "reports" / "templates" / "report.html.j2").is_file()


def test_readme_command_1_runs_from_the_wheel(installed: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, elsewhere = installed
    out = elsewhere / "reports"
    done = _run([str(bin_dir / "finevo-verify"), "--llm", "reference", "--out", str(out), "--quiet"],
                cwd=elsewhere, env=env, timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (run_dir,) = [p for p in out.iterdir() if p.is_dir()]
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    assert doc["verdict"]["status"] == "passed" and doc["summary"]["total"] == 20
    assert (run_dir / "report.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_sandbox_check_runs_a_reference_tool_from_the_wheel(installed: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, elsewhere = installed
    tool = bin_dir.parent / "share" / "finevo" / "benchmarks" / "reference" / "fetch_001.py"
    done = _run([str(bin_dir / "finevo-verify"), "sandbox", "check", str(tool), "--run", "net_income",
                 "--args", '{"symbol": "AAPL", "year": 2023, "quarter": 1}'], cwd=elsewhere, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    verdict = json.loads(done.stdout)
    assert verdict["run"]["status"] == "ok" and isinstance(verdict["run"]["value"], (int, float))


def test_a_missing_snapshot_is_one_line_naming_the_path_tried(installed: tuple[Path, dict[str, str], Path]) -> None:
    bin_dir, env, elsewhere = installed
    nowhere = elsewhere / "no-snapshot"  # everything but the market data
    shutil.copytree(bin_dir.parent / "share" / "finevo" / "benchmarks", nowhere, ignore=shutil.ignore_patterns("data"))
    env = {**env, "FINEVO_BENCHMARKS": str(nowhere)}
    tool = bin_dir.parent / "share" / "finevo" / "benchmarks" / "reference" / "fetch_001.py"
    for cmd in ([str(bin_dir / "finevo-verify"), "--llm", "reference", "--out", str(elsewhere / "o"), "--quiet",
                 "--no-payloads"],
                [str(bin_dir / "finevo-verify"), "sandbox", "check", str(tool), "--run", "net_income"]):
        done = _run(cmd, cwd=elsewhere, env=env)
        lines = done.stderr.strip().splitlines()
        assert done.returncode == 2, done.stdout[-1000:] + done.stderr[-1000:]
        assert len(lines) == 1 and str(nowhere / "data" / "manifest.json") in lines[0], lines
