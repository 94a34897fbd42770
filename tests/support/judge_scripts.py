"""The judge's scripts (``scripts/bench_worlds.py``, ``scripts/judge_replies.py``) run in the test
process, and the seeds they share.

The suite sweeps the reference tools through the hidden worlds of seeds 1-20 and judges the labelled
replies in seeds 1-5 (``tests/runner/test_worlds.py``, ``tests/benchmarks/test_labelled_replies.py``).
Each seed's probes, their expected values and its worlds (with the oracle's answers in them) are the
same for both: one :class:`SeedContexts` per worker builds them once and keeps seeds 1-5 for the
session, and the tests of the same seeds share an ``xdist_group`` so that they land on the same worker
(two chunks of the five seeds, two groups: the two workers share the judging). Each run
was a fresh interpreter before; now it is the script's ``main`` called here, its output captured.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import warnings
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
#: the seeds both sweeps judge in, kept for the session once built
SHARED_SEEDS = range(1, 6)
#: the shared seeds in chunks: each chunk of the labelled replies and the sweep's chunk of the same seeds
#: are one ``xdist_group`` (one build of those seeds for both), and the two groups go to two workers
SHARED_CHUNKS = ("1-2", "3-5")


def group(seeds: str) -> str:
    """The xdist group of the tests that judge in the shared ``seeds`` (a chunk of :data:`SHARED_CHUNKS`)."""
    assert seeds in SHARED_CHUNKS, seeds
    return f"judge-seeds-{seeds}"


def seed_range(seeds: str) -> list[int]:
    """``"3-5"`` as ``[3, 4, 5]``: the seeds the scripts' own ``--seeds`` parser reads there."""
    seeds_of: list[int] = script("bench_worlds")._seeds(seeds)
    return seeds_of

_loaded: dict[str, Any] = {}


def script(name: str) -> Any:
    """``scripts/<name>.py`` as a module (scripts/ is not a package), loaded once per process."""
    if name not in _loaded:
        spec = importlib.util.spec_from_file_location(f"_finevo_script_{name}", ROOT / "scripts" / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _loaded[name] = module
    return _loaded[name]


def run_script(name: str, argv: list[str], contexts: Any) -> tuple[int, str]:
    """``python scripts/<name>.py ARGV``, in this process, with the shared seed contexts: its exit
    code and standard output. Warnings are shown, never raised, as in a fresh interpreter (a tool
    under judgement may divide by zero; the suite's own filters must not turn that into its error)."""
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.simplefilter("ignore")
        code = script(name).main(argv, contexts=contexts)
    return code, out.getvalue()
