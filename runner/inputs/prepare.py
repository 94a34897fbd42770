"""Everything a gate run needs before it writes anything: its configuration, the checked inputs
(suite, baseline, snapshot, the oracle's expected values) and the ``--out`` directory.

:func:`prepare` checks every input -- a bad one is one :class:`~finevo.errors.InputError` line and
exit 2 -- and creates nothing it does not remove again when the run cannot start.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from finevo.errors import InputError
from finevo.jsontypes import JSONValue
from finevo.vocabulary import AgentMode
from runner.inputs.suite import Suite, load_suite, select
from runner.inputs.tasks import Task
from runner.judging.worlds import DEFAULT_WORLDS
from runner.verdict.decide import DEFAULT_MIN_PASS_RATE

_T = TypeVar("_T")
#: Per task id, the oracle's ``{convention: value}`` for each of the task's probes, in order.
Expectations = dict[str, list[dict[str, JSONValue]]]

DEFAULT_TASK_TIMEOUT_S = 120.0


class BudgetFlags(TypedDict):
    """The usage budgets as the command line gives them (``--max-tokens`` ...), checked into
    :class:`runner.verdict.trials.Budgets` when the verdict is made."""

    max_tokens: int | None
    max_cost: float | None
    usage_regression_pct: float | None
    fail_on_usage_regression: bool
    #: Model name -> {"input": $ per million tokens, "output": $ per million tokens} (``--price-table``).
    prices: dict[str, dict[str, float]] | None


@dataclass
class GateConfig:
    llm: str
    tasks_path: Path
    security_path: Path | None
    payloads_path: Path | None
    baseline_path: Path | None
    data_dir: Path
    out_dir: Path = Path("out")
    run_id: str | None = None
    only: list[str] | None = None
    category: str | None = None
    shard: tuple[int, int] | None = None
    task_timeout_s: float = DEFAULT_TASK_TIMEOUT_S
    max_refinements: int | None = None
    agent_mode: str = AgentMode.EVOLVING
    sandbox_backend: str | None = None   # None: FINEVO_SANDBOX_BACKEND, else warm
    require_isolation: str | None = None  # "kernel": exit 3 without Landlock + seccomp (runner.execution.containment)
    reuse_registry: bool = False
    #: The agent's registry database (None: ``<run dir>/registry/registry.db``); the self-check's are its own.
    registry_url: str | None = None
    self_check: bool = True
    run_payloads: bool = True
    model: str | None = None
    temperature: float | None = None
    record: Path | None = None
    min_pass_rate: float | None = None
    #: Hidden worlds each benchmark task is judged in besides the snapshot (0: none), and the seed
    #: that picks them (None: a fresh random one, recorded in results.json for a replay).
    worlds: int = DEFAULT_WORLDS
    worlds_seed: int | None = None
    #: The statistical verdict (:mod:`runner.verdict.trials`): repeats, test level, threshold, budgets.
    repeats: int = 1
    alpha: float = 0.05
    threshold_on: str = "point"
    correction: str = "holm"
    budgets: BudgetFlags | None = None
    #: Cores the run may use (runner.execution.schedule): 1 is the serial loop; more judge tasks and run
    #: the payload corpus beside the agent, with the same results. The CLI's default is the cores available.
    jobs: int = 1


@dataclass
class Prepared:
    config: GateConfig
    suite: Suite
    expected: dict[str, dict[str, JSONValue]]
    snapshot_hash: str | None
    snapshot_as_of: str | None
    snapshot: Any
    run_id: str
    run_dir: Path
    min_pass_rate: float
    #: The tasks as the gate judges them and their probes' expected values (:attr:`judged`,
    #: :attr:`probe_expected`), derived in a thread of their own while the run starts.
    probes: Future[tuple[dict[str, Task], Expectations]] | None = None
    #: The seed of the run's hidden worlds (``config.worlds_seed`` or drawn here).
    worlds_seed: int = 0
    #: Every benchmark task of the file, selected or not: the hidden worlds place their spikes at
    #: the windows of all of them, so one seed gives the same world data whatever ``--only`` /
    #: ``--category`` / ``--shard`` selects.
    world_tasks: list[Task] = field(default_factory=list)
    #: Directories :func:`prepare` created for ``--out`` (deepest first): removed again when the run
    #: cannot start, so a refused run leaves nothing behind.
    created_dirs: list[Path] = field(default_factory=list)

    @property
    def judged(self) -> dict[str, Task]:
        """Per task id, the task as the gate judges it: its listed probes and those derived from its
        arguments (:mod:`runner.judging.probes`; the agent is given the task as listed). Waits for
        the derivation the first time it is asked for (by then it has usually finished)."""
        return self.probes.result()[0] if self.probes is not None else {}

    @property
    def probe_expected(self) -> Expectations:
        """Per task id, the oracle's ``{convention: value}`` for each of the task's probes, in order."""
        return self.probes.result()[1] if self.probes is not None else {}


def _in_a_thread(compute: Callable[[], _T]) -> Future[_T]:
    """``compute()`` started in a daemon thread of its own; its value (or error) in the future."""
    future: Future[_T] = Future()

    def run() -> None:
        try:
            future.set_result(compute())
        except BaseException as exc:  # raised again where the value is asked for
            future.set_exception(exc)

    threading.Thread(target=run, name="derive-probes", daemon=True).start()
    return future


def _check_listed_probes(tasks: Sequence[Task], bars: Any) -> None:
    """The probes a task file lists are inputs: one the oracle cannot judge stops the run here,
    before anything is written (:class:`InputError`, exit 2)."""
    from runner.judging.oracle import probe_expected_values

    for task in tasks:
        probe_expected_values(task, bars)


def _judged_tasks(tasks: Sequence[Task], bars: Any, seed: int) -> Future[tuple[dict[str, Task], Expectations]]:
    """The tasks as the gate judges them, with their probes' expected values (:attr:`Prepared.judged`).

    Deriving the probes from each task's arguments (about a second) is needed only once a task is
    judged: it runs beside the start of the run (the workers' start, the first tasks), reading
    ``bars`` (the snapshot's caching view, which nothing else reads once :func:`prepare` has
    returned: the values it holds already, e.g. each task's own, are not computed again)."""
    from runner.judging.oracle import probe_expected_values
    from runner.judging.probes import probes_for

    def derive() -> tuple[dict[str, Task], Expectations]:
        judged = {t.id: t.model_copy(update={"probes": probes_for(t, bars, seed=seed)}) for t in tasks}
        return judged, {t.id: probe_expected_values(t, bars) for t in judged.values() if t.probes}

    return _in_a_thread(derive)


def new_run_id() -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + secrets.token_hex(3)


#: Values that mean "no commit known" (the image's ``FINEVO_GIT_SHA`` when built without REVISION).
_NO_SHA = ("", "unknown", "none", "null")


def git_sha() -> str | None:
    """The commit under test: ``FINEVO_GIT_SHA`` / ``GITHUB_SHA`` when set, else ``git rev-parse``."""
    for name in ("FINEVO_GIT_SHA", "GITHUB_SHA"):
        value = os.environ.get(name, "").strip()
        if value.lower() not in _NO_SHA:
            return value
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parent)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and sha else None


def _check_out_dir(out_dir: Path) -> list[Path]:
    """Create ``out_dir`` and prove it writable; returns the directories created (deepest first)."""
    created = [d for d in (out_dir, *out_dir.parents) if not d.exists()]
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        probe = out_dir / f".write-probe-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        remove_if_empty(created)
        raise InputError(f"--out {out_dir}: not writable ({exc.strerror or exc})") from None
    return created


def remove_if_empty(dirs: Sequence[Path]) -> None:
    """Remove each directory (deepest first) that is empty; never anything with content."""
    for d in dirs:
        try:
            d.rmdir()
        except OSError:
            return


def prepare(config: GateConfig, *, inputs_checked: Callable[[Suite], None] | None = None) -> Prepared:
    """Check every input before the run writes anything (InputError -> exit 2).

    ``inputs_checked(suite)`` is called once the suite, the flags and the snapshot are known good,
    before the oracle's values are computed (the longest part): the gate starts its sandbox
    workers there, so they load while the oracle computes."""
    from finevo.market.snapshot import load_snapshot
    from runner.judging.oracle import caching, expected_values

    suite = load_suite(config.tasks_path, config.security_path,
                       config.payloads_path if config.run_payloads else None, config.baseline_path)
    world_tasks = list(suite.tasks)
    suite = select(suite, only=config.only, category=config.category, shard=config.shard)
    if config.task_timeout_s <= 0:
        raise InputError(f"--task-timeout: must be positive, got {config.task_timeout_s}")
    if config.repeats < 1:
        raise InputError(f"--repeats: must be at least 1, got {config.repeats}")
    if config.registry_url is not None and config.repeats > 1:
        raise InputError(f"--registry-url with --repeats {config.repeats}: every repeat starts from an empty "
                         "registry of its own, one database cannot be that; run the repeats without --registry-url")
    if not 0.0 < config.alpha < 1.0:
        raise InputError(f"--alpha: must be in (0, 1), got {config.alpha}")
    if config.correction not in ("holm", "none"):
        raise InputError(f"--correction: holm or none, got {config.correction!r}")
    if config.threshold_on not in ("point", "lower"):
        raise InputError(f"--threshold-on: point or lower, got {config.threshold_on!r}")
    if config.min_pass_rate is not None and not 0.0 <= config.min_pass_rate <= 1.0:
        raise InputError(f"--min-pass-rate: must be in [0, 1], got {config.min_pass_rate}")
    if config.worlds < 0:
        raise InputError(f"--worlds: must be 0 or more, got {config.worlds}")
    if config.worlds_seed is not None and not 0 <= config.worlds_seed < 2**63:
        raise InputError(f"--worlds-seed: must be in [0, 2**63), got {config.worlds_seed}")
    snapshot = load_snapshot(config.data_dir)
    run_id = config.run_id or new_run_id()
    if not run_id.replace("-", "").replace("_", "").replace(".", "").isalnum() or run_id.startswith((".", "-")):
        raise InputError(f"--run-id: use letters, digits, '.', '_' and '-' only, got {run_id!r}")
    if inputs_checked is not None:
        inputs_checked(suite)
    bars = caching(snapshot)  # every task's oracle reads the snapshot's bars: each symbol's read once for all
    expected = {t.id: expected_values(t, bars) for t in suite.tasks}
    _check_listed_probes(suite.tasks, bars)
    # One secret seed draws the hidden worlds and the probes across the argument space.
    worlds_seed = config.worlds_seed if config.worlds_seed is not None else secrets.randbelow(2**31)
    out_dir = Path(config.out_dir).absolute()
    created = _check_out_dir(out_dir)
    run_dir = out_dir / run_id
    registry_dir = run_dir / "registry"
    if registry_dir.exists() and any(registry_dir.iterdir()) and not config.reuse_registry:
        remove_if_empty(created)
        raise InputError(f"{registry_dir}: registry is not empty; pass --reuse-registry or use a new --run-id")
    if config.min_pass_rate is not None:
        min_rate = config.min_pass_rate
    elif suite.baseline is not None:
        min_rate = suite.baseline.target_pass_rate
    else:
        min_rate = DEFAULT_MIN_PASS_RATE
    probes = _judged_tasks(suite.tasks, bars, worlds_seed)  # every input is known good by now
    return Prepared(config=config, suite=suite, expected=expected, snapshot=snapshot,
                    snapshot_hash=getattr(snapshot, "content_hash", None),
                    snapshot_as_of=str(snapshot.as_of) if getattr(snapshot, "as_of", None) else None,
                    run_id=run_id, run_dir=run_dir, min_pass_rate=min_rate, probes=probes, world_tasks=world_tasks,
                    worlds_seed=worlds_seed,
                    created_dirs=created)

