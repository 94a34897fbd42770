"""The reference tools in the gate's hidden worlds, over many seeds: do they pass, and what it costs.

    python scripts/bench_worlds.py [--seeds 1-10] [--worlds K] [--data DIR] [--only ID,...] [--in-process]

For each seed: the gate's hidden worlds are built (:class:`runner.judging.worlds.Worlds`), and every
benchmark task's reference tool (``benchmarks/reference/<id>.py``) is judged exactly as the gate
judges a final tool (:func:`runner.judging.grade.judge_task`: the task's value, its listed and derived
probes, then every world), through one warm sandbox. Printed per seed: the earlier as-of date, the
tasks that do not pass (with the judge's reason), and the time spent; then the cost of judging in
K worlds per task (median / max over tasks and seeds, world building included) and of deriving
the probes. Exit 0 when every reference tool passes in every world of every seed, 1 otherwise.

``--in-process`` runs the (trusted) reference tools in this process on the replay shim instead of
the sandbox: the same values, a fraction of the cost, for the many-seed stability proof.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import time
import types
from collections.abc import Iterable, Iterator
from pathlib import Path
from types import CodeType
from typing import Any, NamedTuple

from finevo.market.snapshot import load_snapshot
from finevo.outcome import Outcome
from finevo.paths import benchmarks_dir, snapshot_dir
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.api import ExecutionResult
from runner.cli.oracle import reference_code
from runner.inputs.tasks import Task, load_tasks
from runner.judging.grade import Reruns, judge_task
from runner.judging.oracle import caching, expected_values, probe_expected_values
from runner.judging.probes import derive_probes, probes_for
from runner.judging.worlds import WorldKind, Worlds


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        if "-" in part:
            low, high = part.split("-", 1)
            out.extend(range(int(low), int(high) + 1))
        elif part.strip():
            out.append(int(part))
    return out


class _InProcess:
    """Trusted code on the replay shim in this process (the reference tools only: no confinement)."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self._loaded: dict[str, Any] = {}
        self._moment: Any = None
        #: each tool's code compiled once: a judged reply is run about 50 times a seed (its own
        #: arguments, every probe, every world), and compiling it was a twentieth of the time
        self._compiled: dict[str, CodeType] = {}
        #: the hidden worlds being judged in: a world's snapshot is served from the one the oracle
        #: loaded (the same files parsed the same way) instead of being parsed again for the tools
        self.worlds: Worlds | None = None

    def run(self, code: str, entry: str, call: dict[str, Any], limits: Limits,
            snapshot_dir: str | None = None) -> ExecutionResult:
        from finevo.market import frozen_clock, replay
        from finevo.normalize import TOOL, ResultRefused, normalize

        where = str(snapshot_dir or self.data)
        world = self.worlds.written(where) if self.worlds is not None and snapshot_dir is not None else None
        if world is None and where not in self._loaded:
            if len(self._loaded) > 16:
                self._loaded.clear()
            self._loaded[where] = load_snapshot(where)
        provider = world.provider if world is not None else self._loaded[where]
        moment = replay.as_of_moment(provider)  # the close, before the open, or a minute of the session
        if moment != self._moment:  # freezing the clock is costly: only when "now" moves
            replay.install(provider)
            self._moment = moment
        replay.bind(provider)
        frozen_clock.restart()  # each run starts at that moment, as a sandbox child does
        # a module of its own, as the sandbox gives a tool (a dataclass looks its module up by name), and
        # compiled without this script's own ``from __future__`` flags (string annotations break one)
        module = types.ModuleType("tool")
        sys.modules["tool"] = module
        try:
            compiled = self._compiled.get(code)
            if compiled is None:
                compiled = self._compiled[code] = compile(code, "<tool>", "exec", dont_inherit=True)
            exec(compiled, module.__dict__)  # the repository's own reference tools
            value = module.__dict__[entry](**call)
        except Exception as exc:
            return ExecutionResult(status="exception", error_type=type(exc).__name__, error_message=str(exc)[:500])
        finally:
            sys.modules.pop("tool", None)
        try:
            value = normalize(value, TOOL)  # as the sandbox's harness does
        except ResultRefused as exc:  # a value, not an error the tool raised: as the supervisor records it
            return ExecutionResult(status="crashed", layer="result", error_type=exc.error_type,
                                   error_message=exc.message[:500])
        return ExecutionResult(status="ok", value=value)

    def close(self) -> None:
        from finevo.market import replay

        replay.uninstall()


class SeedContext(NamedTuple):
    """What judging in one seed needs: the tasks with the probes the run draws from the seed, the
    probes' expected values on the snapshot, and the seed's hidden worlds (which keep the oracle's
    answers in each world once asked). (Not a dataclass: the scripts are loaded by path, outside
    ``sys.modules``, where a dataclass cannot resolve its string annotations.)"""

    seed: int
    judged: dict[str, Task]
    probe_expected: dict[str, Any]
    worlds: Worlds


class SeedContexts:
    """The snapshot's tasks, their derived probes and expected values, and per seed a
    :class:`SeedContext`, built as the gate builds them. A seed in ``keep`` is built once and kept
    for ``uses`` sweeps of it (then closed), so another sweep in the same process (the suite judges
    the reference tools and the labelled replies in the same seeds) reads the same worlds and oracle
    answers instead of building them again; any other seed's worlds are closed when its sweep is done."""

    def __init__(self, data: Path, tasks: list[Task], worlds: int = 3, keep: Iterable[int] = (),
                 uses: int = 2) -> None:
        self.data, self.worlds_count = data, worlds
        self.snapshot = load_snapshot(data)
        # the snapshot's caching view, as the gate reads it (runner/inputs/prepare.py): each symbol's bars
        # read once and each oracle value computed once, here for every seed -- the probes drawn across
        # the argument space ask many of the same argument sets from one seed to the next
        self.bars = caching(self.snapshot)
        self.tasks = {t.id: t for t in tasks}
        started = time.perf_counter()
        self.derived = {t.id: derive_probes(t, self.bars) for t in tasks}
        self.derive_s = time.perf_counter() - started
        self.expected = {t.id: expected_values(t, self.bars) for t in tasks}
        self._keep, self._uses = set(keep), uses
        self._kept: dict[int, tuple[SeedContext, int]] = {}

    def serves(self, data: Path, task_ids: Iterable[str], worlds: int) -> bool:
        """Whether these are the contexts a sweep of exactly ``task_ids`` on ``data`` in ``worlds`` worlds
        builds (the worlds depend on the tasks they are built for)."""
        return Path(data).resolve() == Path(self.data).resolve() and worlds == self.worlds_count \
            and set(task_ids) == set(self.tasks)

    def _build(self, seed: int) -> SeedContext:
        # the gate draws a run's probes across the argument space from the run's seed too
        judged = {k: t.model_copy(update={"probes": probes_for(t, self.bars, seed, self.derived[k])})
                  for k, t in self.tasks.items()}
        probe_expected = {k: probe_expected_values(t, self.bars) for k, t in judged.items()}
        return SeedContext(seed, judged, probe_expected,
                           Worlds(self.snapshot, self.worlds_count, seed, list(judged.values())))

    @contextlib.contextmanager
    def seed(self, seed: int) -> Iterator[SeedContext]:
        if seed not in self._keep:
            context = self._build(seed)
            with context.worlds:
                yield context
            return
        context, used = self._kept.get(seed) or (self._build(seed), 0)
        self._kept[seed] = context, used
        try:
            yield context
        finally:
            if used + 1 >= self._uses:
                self._kept.pop(seed)
                context.worlds.close()
            else:
                self._kept[seed] = context, used + 1

    def close(self) -> None:
        for context, _ in self._kept.values():
            context.worlds.close()
        self._kept.clear()


def main(argv: list[str] | None = None, contexts: SeedContexts | None = None) -> int:
    """``contexts``: seeds already built (or to keep) by the caller, for the same data, tasks and
    worlds count (the suite shares them between sweeps); None builds them here."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", default="1-10", help="seeds, e.g. 1-10 or 3,7,42 (default 1-10)")
    parser.add_argument("--worlds", type=int, default=3, help="worlds per task (default 3)")
    parser.add_argument("--data", type=Path, default=snapshot_dir(), help="the run's snapshot (default: bundled)")
    parser.add_argument("--only", default=None, help="task ids, comma-separated")
    parser.add_argument("--in-process", action="store_true",
                        help="run the reference tools in this process on the replay shim (no sandbox)")
    args = parser.parse_args(argv)
    tasks = load_tasks(benchmarks_dir() / "tasks.jsonl")
    if args.only:
        wanted = set(args.only.split(","))
        tasks = [t for t in tasks if t.id in wanted]
    own = contexts is None or not contexts.serves(args.data, (t.id for t in tasks), args.worlds)
    shared = SeedContexts(args.data, tasks, args.worlds) if own else contexts
    assert shared is not None
    expected = shared.expected
    derive_s = shared.derive_s
    sandbox = _InProcess(args.data) if args.in_process else create_sandbox(args.data)
    limits = Limits(timeout_s=30.0)

    def run_tool(code: str, entry: str, call: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        if snapshot_dir is None:
            return sandbox.run(code, entry, call, limits)
        return sandbox.run(code, entry, call, limits, snapshot_dir=snapshot_dir)

    outcomes: dict[str, Outcome] = {}
    for task in tasks:
        code = reference_code(task)
        result = run_tool(code, task.intent.indicator, dict(task.intent.args))
        outcomes[task.id] = Outcome(task_id=task.id, value=result.value if result.ok else None, tool_code=code,
                                    stage="done")
    per_task: list[float] = []
    build: list[float] = []
    failures = 0
    try:
        for seed in _seeds(args.seeds):
            seed_started = time.perf_counter()
            with shared.seed(seed) as context:
                judged, probe_expected, worlds = context.judged, context.probe_expected, context.worlds
                if isinstance(sandbox, _InProcess):
                    sandbox.worlds = worlds
                bad: list[str] = []
                for task in tasks:
                    t0 = time.perf_counter()
                    result = judge_task(judged[task.id], outcomes[task.id], expected[task.id], 0.0,
                                        Reruns(run_tool, probe_expected=probe_expected[task.id], worlds=worlds))
                    per_task.append(time.perf_counter() - t0 - result.timings.get("probes", 0.0))
                    if result.state != "pass":
                        bad.append(f"{task.id}: {result.reason}")
                build.append(worlds.build_s)
                parts = ", ".join(f"{k} {v:.2f} s" for k, v in worlds.timings.items())
                as_of = [worlds.as_of_date(r).isoformat() for kind, r in worlds.kinds() if kind is WorldKind.AS_OF]
            failures += len(bad)
            print(f"seed {seed}: as-of {', '.join(as_of) or '-'}: "
                  f"{len(tasks) - len(bad)}/{len(tasks)} reference tools pass "
                  f"({time.perf_counter() - seed_started:.1f} s; worlds {build[-1]:.2f} s: {parts})")
            for line in bad:
                print(f"  {line}")
    finally:
        sandbox.close()
        if own:
            shared.close()
    print(f"deriving the probes of {len(tasks)} task(s): {derive_s * 1000:.0f} ms "
          f"({sum(len(shared.derived[t.id]) for t in tasks)} derived probes, "
          f"{sum(len(t.probes) for t in tasks)} of them listed)")
    if per_task:
        print(f"judging in {args.worlds} hidden world(s) per task (world building included): median "
              f"{statistics.median(per_task) * 1000:.0f} ms, max {max(per_task) * 1000:.0f} ms; "
              f"world building per seed: median {statistics.median(build):.2f} s")
    return 0 if failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
