"""Every import is declared, and the lock files pin every declared dependency.

* The code (``finevo/``, ``runner/``, the benchmark's tools) imports only the standard library, itself
  and packages named in ``[project] dependencies``; tests and scripts may also use the ``dev`` extras.
  A package that merely arrives with another one (``requests`` through ``yfinance``) does not count:
  the day that one drops it, a fresh install breaks.
* ``requirements.lock`` pins every runtime dependency, at a version inside the range pyproject.toml
  gives, with sha256 hashes (the image installs it with ``pip --require-hashes``);
  ``requirements-build.lock`` does the same for the build backend.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
FIRST_PARTY = {"finevo", "runner", "tests", "conftest"}
#: Top-level directories whose imports must be runtime dependencies, and those that may use dev extras.
RUNTIME_TREES = ("finevo", "runner", "benchmarks")
DEV_TREES = ("tests", "scripts")
#: The image's interpreter and platform: lock markers are evaluated for it.
IMAGE_ENV = {"python_version": "3.11", "python_full_version": "3.11.2", "sys_platform": "linux",
             "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
             "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}

# The scans share their parsed files and the installed distributions' map (``functools.cache``): on one
# worker they parse each file once (under xdist they were split, and two workers parsed finevo/ and runner/).
pytestmark = pytest.mark.xdist_group("dependency-scan")

_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s;\\]+)")


def _declared(requirements: list[str]) -> set[str]:
    return {canonicalize_name(Requirement(r).name) for r in requirements}


RUNTIME = _declared(PYPROJECT["project"]["dependencies"])
DEV = _declared(PYPROJECT["project"]["optional-dependencies"]["dev"])
#: The feature extras (the live recorder, the docker launcher): declared, but not in a plain install.
EXTRAS = {name: _declared(reqs) for name, reqs in PYPROJECT["project"]["optional-dependencies"].items()
          if name != "dev"}


@functools.cache
def _tree(path: Path) -> ast.Module:
    """``path`` parsed once for every test here (the scans read the same files: 3.5 s a scan)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


@functools.cache
def _providers() -> dict[str, list[str]]:
    """Top-level module -> the distributions providing it (about a second each time it is built)."""
    return dict(importlib.metadata.packages_distributions())


def _imports(path: Path) -> set[str]:
    """Top-level names of the absolute imports in ``path``."""
    tree = _tree(path)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def _third_party(trees: tuple[str, ...]) -> dict[str, list[str]]:
    """Third-party module -> the files importing it, over every ``.py`` file under ``trees``."""
    found: dict[str, list[str]] = {}
    for tree in trees:
        for path in sorted((ROOT / tree).rglob("*.py")):
            for name in _imports(path):
                if name in sys.stdlib_module_names or name in FIRST_PARTY:
                    continue
                found.setdefault(name, []).append(str(path.relative_to(ROOT)))
    return found


def _undeclared(trees: tuple[str, ...], allowed: set[str]) -> list[str]:
    providers = _providers()
    problems = []
    for module, files in sorted(_third_party(trees).items()):
        dists = {canonicalize_name(d) for d in providers.get(module, [])}
        if not dists:
            problems.append(f"{module} (imported by {files[0]}) is not installed by any declared dependency")
        elif not dists & allowed:
            problems.append(f"{module} (imported by {files[0]}) comes from {', '.join(sorted(dists))}, "
                            "which pyproject.toml does not declare")
    return problems


@pytest.mark.slow
def test_the_code_imports_only_declared_runtime_dependencies() -> None:
    assert _third_party(RUNTIME_TREES), "the scan found no import at all"
    assert _undeclared(RUNTIME_TREES, RUNTIME | set().union(*EXTRAS.values())) == []


def _module_level_imports(path: Path) -> set[str]:
    """Top-level names imported outside any function (what importing ``path`` loads)."""
    tree = _tree(path)
    names: set[str] = set()
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
        else:
            todo.extend(ast.iter_child_nodes(node))
    return names


@pytest.mark.slow
def test_an_extras_package_is_imported_only_where_its_feature_runs() -> None:
    """A plain ``pip install .`` (and the image) lacks the extras: every module must still import, so an
    extra's package is imported inside the function that needs it, never at a module's top."""
    providers = _providers()
    extra_only = set().union(*EXTRAS.values()) - RUNTIME
    assert {"yfinance", "docker"} <= extra_only
    offenders = []
    for tree in ("finevo", "runner"):  # benchmarks/ holds tools: their `import yfinance` is the sandbox's shim
        for path in sorted((ROOT / tree).rglob("*.py")):
            for module in _module_level_imports(path):
                if {canonicalize_name(d) for d in providers.get(module, [])} & extra_only:
                    offenders.append(f"{path.relative_to(ROOT)} imports {module} at its top")
    assert offenders == []


@pytest.mark.slow
def test_tests_and_scripts_import_only_declared_dependencies() -> None:
    assert _undeclared(DEV_TREES, RUNTIME | DEV) == []


# --------------------------------------------------------------------------- lock files

def _lock(name: str) -> dict[str, tuple[str, list[str]]]:
    """Canonical name -> (pinned version, its sha256 hashes) of a pip-compile style lock file."""
    path = ROOT / name
    if not path.is_file():
        pytest.fail(f"{name} missing: `bash scripts/lock.sh` writes it")
    pins: dict[str, tuple[str, list[str]]] = {}
    current: str | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        pin = _PIN.match(line)
        if pin:
            current = canonicalize_name(pin["name"])
            assert current not in pins, f"{name}:{number}: {current} pinned twice"
            pins[current] = (pin["version"], [])
            continue
        hashed = re.fullmatch(r"--hash=sha256:([0-9a-f]{64})\s*\\?", stripped)
        assert hashed and current is not None, f"{name}:{number}: neither a pin nor a sha256 hash: {stripped!r}"
        pins[current][1].append(hashed[1])
    return pins


@pytest.mark.parametrize("lock_name, requirements", [
    ("requirements.lock", PYPROJECT["project"]["dependencies"]),
    ("requirements-build.lock", PYPROJECT["build-system"]["requires"]),
], ids=["runtime", "build"])
def test_the_lock_pins_every_declared_dependency_inside_its_range_with_hashes(
        lock_name: str, requirements: list[str]) -> None:
    pins = _lock(lock_name)
    assert pins, f"{lock_name} pins nothing"
    for name, (version, hashes) in pins.items():
        assert hashes, f"{lock_name}: {name}=={version} has no --hash (pip --require-hashes would refuse it)"
    for text in requirements:
        requirement = Requirement(text)
        if requirement.marker is not None and not requirement.marker.evaluate(IMAGE_ENV):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{lock_name} does not pin {requirement.name} ({text}): run `bash scripts/lock.sh`"
        version = pins[name][0]
        assert requirement.specifier.contains(version, prereleases=True), (
            f"{lock_name} pins {name}=={version}, outside pyproject's {text}: run `bash scripts/lock.sh`")


def test_the_image_installs_from_the_locks_with_hashes() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    installs = [line for line in dockerfile.splitlines() if "pip install" in line]
    for lock_name in ("requirements.lock", "requirements-build.lock"):
        assert any(f"-r {lock_name}" in line and "--require-hashes" in line for line in installs), lock_name
    # the project itself comes on top without re-resolving anything
    assert any("--no-deps" in line and "/wheels/project" in line for line in installs)
    ignored = (ROOT / ".dockerignore").read_text(encoding="utf-8").split()
    assert not {"requirements.lock", "requirements-build.lock", "*.lock"} & set(ignored)
