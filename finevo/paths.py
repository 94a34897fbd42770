"""Where the bundled benchmark suite and market snapshot live.

``FINEVO_BENCHMARKS`` (the container sets it) wins; otherwise the ``benchmarks/`` folder next to
the source tree (an editable install or a checkout).
"""

from __future__ import annotations

import os
from pathlib import Path


def benchmarks_dir() -> Path:
    env = os.environ.get("FINEVO_BENCHMARKS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "benchmarks"


def snapshot_dir() -> Path:
    return benchmarks_dir() / "data"


def reference_dir() -> Path:
    return benchmarks_dir() / "reference"
