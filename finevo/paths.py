"""Where the bundled benchmark suite and market snapshot live.

In this order, the first that holds a ``tasks.jsonl``:

1. ``FINEVO_BENCHMARKS`` (the container sets it): always this one, even when it holds nothing (a
   missing file is then named under it);
2. the ``benchmarks/`` folder next to the source tree (a checkout, an editable install);
3. ``<prefix>/share/finevo/benchmarks``: where a wheel installs them (``[tool.setuptools.data-files]``
   in pyproject.toml), for the environment's own prefix and for a ``--user`` install.

When none holds a suite, the wheel's location of this environment is returned, so the error a
reader sees names the path that was tried (``.../share/finevo/benchmarks/tasks.jsonl: file not
found``). The benchmarks are never inside a package directory: the snapshot is handed to the sandbox
by path, and a tool's read roots need not include the gate's packages.
"""

from __future__ import annotations

import os
import sysconfig
from pathlib import Path

#: The environment variable that names the benchmarks directory.
ENV = "FINEVO_BENCHMARKS"
#: Below an installation scheme's data directory (``sys.prefix`` for a virtual environment).
INSTALLED = Path("share") / "finevo" / "benchmarks"


def candidates() -> list[Path]:
    """Every place looked at without ``FINEVO_BENCHMARKS``, in order."""
    out = [Path(__file__).resolve().parent.parent / "benchmarks"]
    schemes = [sysconfig.get_default_scheme(), f"{os.name}_user"]
    for scheme in schemes:
        try:
            data = sysconfig.get_path("data", scheme)
        except KeyError:
            continue
        path = Path(data) / INSTALLED
        if path not in out:
            out.append(path)
    return out


def benchmarks_dir() -> Path:
    env = os.environ.get(ENV)
    if env:
        return Path(env)
    found = candidates()
    for path in found:
        if (path / "tasks.jsonl").is_file():
            return path
    return found[1] if len(found) > 1 else found[0]


def snapshot_dir() -> Path:
    return benchmarks_dir() / "data"


def reference_dir() -> Path:
    return benchmarks_dir() / "reference"
