"""Start-up cost of the two command lines: ``--help``, ``--version`` and every usage error must load
no third-party library at all.

The list of what must stay unloaded is derived, not hand-picked: every distribution that
pyproject.toml depends on (runtime and extras), with everything those pull in, mapped to the
top-level modules they install. A new dependency is covered the day it is added.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from functools import cache
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]

def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project.get("optional-dependencies", {}).values():
        reqs.extend(Requirement(r) for r in extra)
    return reqs


def _closure(roots: list[Requirement]) -> set[str]:
    """Canonical names of the installed distributions ``roots`` need, transitively (markers honoured,
    extras of a dependency followed only when named)."""
    seen: set[str] = set()
    todo = [(r, frozenset(r.extras)) for r in roots]
    while todo:
        req, extras = todo.pop()
        name = canonicalize_name(req.name)
        if name in seen or canonicalize_name(ROOT.name) == name:
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            continue  # a platform-specific dependency not installed here
        seen.add(name)
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is not None and not any(
                    sub.marker.evaluate({"extra": e}) for e in (extras or {""})):
                continue
            todo.append((sub, frozenset(sub.extras)))
    return seen


@cache
def heavy_modules() -> tuple[str, ...]:
    """Top-level import names of every third-party distribution in the dependency closure."""
    wanted = _closure(_declared())
    modules = {module for module, dists in metadata.packages_distributions().items()
               if any(canonicalize_name(d) in wanted for d in dists)
               and not module.startswith("_") and module.isidentifier()}
    return tuple(sorted(modules))


def test_the_heavy_list_is_derived_from_pyproject() -> None:
    heavy = set(heavy_modules())
    # the libraries the command lines were once caught loading, and every runtime dependency's own module
    assert {"pydantic", "pydantic_core", "sqlalchemy", "sqlmodel", "pandas", "numpy", "openai", "docker",
            "yfinance", "junit_xml", "tenacity", "jsonschema"} <= heavy
    # and what those pull in
    assert {"requests", "urllib3", "typing_extensions", "annotated_types"} <= heavy


def _modules_loaded_by(code: str) -> list[str]:
    """The heavy modules a fresh interpreter holds after running ``code`` (a CLI call ending in SystemExit)."""
    probe = ("import json, sys\n"
             f"try:\n    {code}\nexcept SystemExit:\n    pass\n"
             f"print(json.dumps(sorted(m for m in {heavy_modules()!r} if m in sys.modules)))")
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return list(json.loads(proc.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("code", [
    "from runner.cli import main; main(['--help'])",
    "from runner.cli import main; main(['--version'])",
    "from runner.cli import main; main(['run', '--help'])",
    "from runner.cli import main; main(['--onl', 'x'])",
    "from runner.cli import main; main(['frob'])",
    "from runner.cli import main; main(['--shard', '3/2'])",
    "from runner.cli import main; main(['--min-pass-rate', '2'])",
    "from runner.cli import main; main(['--jobs', '0'])",
    "from runner.cli import main; main(['diff', '--help'])",
    "from runner.cli import main; main(['report'])",
    "from runner.cli import main; main(['oracle', '--help'])",
    "from runner.cli import main; main(['docker', '--help'])",
    "from runner.cli import main; main(['data', 'frob'])",
    "from finevo.cli import main; main(['--help'])",
    "from finevo.cli import main; main(['solve', '--help'])",
    "from finevo.cli import main; main(['solve'])",
], ids=["verify-help", "verify-version", "verify-run-help", "verify-bad-flag", "verify-bad-verb", "verify-bad-shard",
        "verify-bad-rate", "verify-bad-jobs", "verify-diff-help", "verify-report-no-file", "verify-oracle-help",
        "verify-docker-help", "verify-data-bad-verb", "finevo-help", "finevo-solve-help", "finevo-solve-no-query"])
def test_help_and_usage_errors_import_no_third_party_library(code: str) -> None:
    assert _modules_loaded_by(code) == []


def test_version_prints_the_installed_version(capsys) -> None:
    from importlib.metadata import version

    from runner.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.strip() == f"finevo-verify {version('finevo')}"
