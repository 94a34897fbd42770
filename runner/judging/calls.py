"""The judge's re-runs of a final tool: one sandbox run per call, in an order the tool cannot predict.

A tool judged by several calls (the task's own arguments again, each probe, each probe in each
hidden world) must not be able to tell them apart: were they run as a batch in one process, a
tool could answer its first call one way and later calls another, and be judged on whichever
happens to be right. So every judged call is its own :meth:`~finevo.sandbox.api.Sandbox.run`
(its own forked child, exactly the call pattern of the agent's own run: ``code``, ``entry``,
keyword ``args``, the sandbox's limits, and for a world only its ``snapshot_dir``), and the calls
of one task run in an order drawn from the operating system's randomness
(:class:`secrets.SystemRandom`), never from a seed a tool could see or a report records. The
main call's re-run, the probes and the worlds are interleaved.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass
from random import Random
from typing import Any

from finevo.errors import FinevoError
from finevo.jsontypes import JSONObject
from finevo.sandbox.api import ExecutionResult

#: ``Call.world`` of a call on the run's own snapshot.
OWN = -1


@dataclass(frozen=True)
class Call:
    """One judged call: on the run's own snapshot (``world == OWN``) or in hidden world ``world``
    (an index into the task's plan), with argument set ``argset`` (0: the task's own, ``i``: probe ``i``)."""

    world: int
    argset: int
    args: Mapping[str, Any]
    snapshot_dir: str | None = None

    @property
    def key(self) -> tuple[int, int]:
        return self.world, self.argset


#: What one call gave: the sandbox's result, or the :class:`~finevo.errors.FinevoError` the run raised.
Answer = ExecutionResult | FinevoError


def plan_calls(argsets: list[JSONObject], world_dirs: Iterable[str], *, own_probes: bool = True) -> list[Call]:
    """Every call of one task: each argument set on the run's own snapshot (only the task's own
    arguments when ``own_probes`` is false), then each argument set in each world."""
    calls = [Call(OWN, i, args) for i, args in enumerate(argsets) if own_probes or i == 0]
    for w, path in enumerate(world_dirs):
        calls += [Call(w, i, args, path) for i, args in enumerate(argsets)]
    return calls


def run_calls(code: str, entry: str, calls: list[Call], run_tool: Callable[..., ExecutionResult],
              rng: Random | None = None) -> dict[tuple[int, int], Answer]:
    """Run every call once, in an order drawn from ``rng`` (default: :class:`secrets.SystemRandom`).

    A :class:`~finevo.errors.FinevoError` a run raises is kept as that call's answer (the judge
    words it); anything else (the gate's interrupt) propagates.

    A ``run_tool`` with more than one lane (``run_tool.lanes``, each a runner on a sandbox of its
    own, and ``run_tool.routes`` saying which lane serves which world: a
    :class:`~runner.execution.deadline.ProbeRunner` given runners beside its own) runs each lane's
    share of the shuffled calls in a thread of its own, all at once: the answers are the same (each
    call is its own sandbox run either way), the wall time is shared out over the sandboxes.
    """
    order = list(calls)
    (rng or secrets.SystemRandom()).shuffle(order)
    lanes = list(getattr(run_tool, "lanes", None) or [])
    routes = getattr(run_tool, "routes", None)
    if len(lanes) < 2 or routes is None:
        return _run_in_order(code, entry, order, run_tool)
    groups = routes.split(order)
    with ThreadPoolExecutor(max_workers=len(lanes), thread_name_prefix="judge-calls") as pool:
        futures = [pool.submit(_run_in_order, code, entry, group, lane)
                   for lane, group in zip(lanes, groups, strict=True) if group]
        wait(futures)
    answers: dict[tuple[int, int], Answer] = {}
    for future in futures:
        answers.update(future.result())  # the first lane's error (an interrupt) propagates
    return answers


def _run_in_order(code: str, entry: str, order: Iterable[Call],
                  run_tool: Callable[..., ExecutionResult]) -> dict[tuple[int, int], Answer]:
    answers: dict[tuple[int, int], Answer] = {}
    for call in order:
        try:
            if call.snapshot_dir is None:
                answers[call.key] = run_tool(code, entry, dict(call.args))
            else:
                answers[call.key] = run_tool(code, entry, dict(call.args), call.snapshot_dir)
        except FinevoError as exc:
            answers[call.key] = exc
    return answers


def served(answers: Mapping[tuple[int, int], Answer], world: int, argsets: list[JSONObject],
           run_tool: Callable[..., ExecutionResult]) -> Callable[..., ExecutionResult]:
    """A ``run_tool`` that hands out the answers already computed for ``world`` (matched by
    arguments), and runs anything else for real."""
    by_args = {json.dumps(args, sort_keys=True, default=str): (world, i) for i, args in enumerate(argsets)}

    def run(code: str, entry: str, args: JSONObject, snapshot_dir: str | None = None) -> ExecutionResult:
        key = by_args.get(json.dumps(args, sort_keys=True, default=str))
        answer = answers.get(key) if key is not None and snapshot_dir is None else None
        if answer is None:
            return run_tool(code, entry, args) if snapshot_dir is None else run_tool(code, entry, args, snapshot_dir)
        if isinstance(answer, FinevoError):
            raise answer
        return answer

    return run
