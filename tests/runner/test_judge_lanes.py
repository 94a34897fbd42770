"""A task's judged calls shared out over several sandboxes at once (``--jobs`` > 1): each world on one
sandbox for the whole run, the load evened out, every call answered once, one budget for them all."""

from __future__ import annotations

import threading
from collections import Counter
from random import Random
from typing import Any

import pytest

from finevo.errors import ExternalError
from finevo.sandbox.api import ExecutionResult
from runner.execution.deadline import Aborted, CallRoutes, ProbeRunner
from runner.execution.schedule import MAX_JUDGE_SANDBOXES, judge_width
from runner.judging.calls import OWN, Call, plan_calls, run_calls


def _calls(worlds: list[str], argsets: int) -> list[Call]:
    return plan_calls([{"n": i} for i in range(argsets)], worlds)


def test_every_call_of_a_world_goes_to_one_lane_for_the_whole_run() -> None:
    routes = CallRoutes(2)
    first = routes.split(_calls(["/w/a", "/w/b", "/w/c", "/w/shared"], 3))
    lane_of = {c.snapshot_dir: i for i, group in enumerate(first) for c in group if c.snapshot_dir}
    assert set(lane_of) == {"/w/a", "/w/b", "/w/c", "/w/shared"}
    for i, group in enumerate(first):  # a world's calls are never split
        assert all(lane_of[c.snapshot_dir] == i for c in group if c.snapshot_dir)
    # the next task shares one world with this one and brings new ones: the shared world stays put
    second = routes.split(_calls(["/w/shared", "/w/d", "/w/e"], 3))
    again = {c.snapshot_dir: i for i, group in enumerate(second) for c in group if c.snapshot_dir}
    assert again["/w/shared"] == lane_of["/w/shared"]


def test_the_lanes_get_an_even_share_and_keep_the_order_given() -> None:
    routes = CallRoutes(2)
    calls = _calls(["/w/a", "/w/b", "/w/c", "/w/d"], 4)  # 4 own calls, 16 in the worlds
    Random(3).shuffle(calls)
    groups = routes.split(calls)
    assert sorted(len(g) for g in groups) == [10, 10]
    assert Counter(c.key for g in groups for c in g) == Counter(c.key for c in calls)  # each call once
    for group in groups:
        assert group == [c for c in calls if c in group]  # the shuffled order, kept
    # an odd share of worlds: the calls on the run's own snapshot (every sandbox holds it) even it out
    uneven = CallRoutes(2).split(_calls(["/w/x", "/w/y", "/w/z"], 4))
    assert sorted(len(g) for g in uneven) == [8, 8]
    assert sum(c.world == OWN for g in uneven for c in g) == 4


def test_one_lane_routes_everything_to_it() -> None:
    calls = _calls(["/w/a"], 2)
    assert CallRoutes(1).split(calls) == [calls]


class _Lane:
    """A sandbox stand-in: records what it ran and on which thread; answers from the arguments."""

    def __init__(self, name: str, barrier: threading.Barrier | None = None, fail: BaseException | None = None):
        self.name = name
        self.ran: list[tuple[int, str | None]] = []
        self.threads: set[int] = set()
        self._barrier = barrier
        self._fail = fail

    def __call__(self, code: str, entry: str, args: dict[str, Any], snapshot_dir: str | None = None) -> ExecutionResult:
        if self._barrier is not None:  # every lane has to be running at the same moment to pass
            self._barrier.wait(timeout=60)
            self._barrier = None
        self.ran.append((args["n"], snapshot_dir))
        self.threads.add(threading.get_ident())
        if self._fail is not None and len(self.ran) == 2:
            raise self._fail
        return ExecutionResult(status="ok", value=[args["n"], snapshot_dir])


class _Runner:
    def __init__(self, lanes: list[_Lane], routes: CallRoutes) -> None:
        self.lanes = lanes
        self.routes = routes

    def __call__(self, *args: Any) -> ExecutionResult:  # the judge's own single runs
        return self.lanes[0](*args)


def test_run_calls_runs_the_lanes_at_once_and_answers_as_a_serial_run() -> None:
    worlds = ["/w/a", "/w/b", "/w/c"]
    calls = _calls(worlds, 3)
    barrier = threading.Barrier(2)
    lanes = [_Lane("one", barrier), _Lane("two", barrier)]
    routes = CallRoutes(2)
    answers = run_calls("code", "f", calls, _Runner(lanes, routes), Random(1))
    serial = run_calls("code", "f", calls, _Lane("serial"), Random(1))
    assert {k: (v.status, v.value) for k, v in answers.items()} == {k: (v.status, v.value) for k, v in serial.items()}
    assert sorted(n for lane in lanes for n, _ in lane.ran) == sorted(c.argset for c in calls)
    assert lanes[0].threads.isdisjoint(lanes[1].threads)  # two threads, one per lane
    for lane in lanes:  # each world ran on one lane only
        others = {d for other in lanes if other is not lane for _, d in other.ran}
        assert {d for _, d in lane.ran if d} & others == set()


def test_a_sandbox_error_is_that_calls_answer_and_an_interrupt_stops_the_judging() -> None:
    calls = _calls(["/w/a", "/w/b"], 3)
    failing = _Runner([_Lane("one", fail=ExternalError("sandbox failed", where="gate")), _Lane("two")], CallRoutes(2))
    answers = run_calls("code", "f", calls, failing, Random(2))
    assert len(answers) == len(calls)
    assert sum(isinstance(a, ExternalError) for a in answers.values()) == 1
    interrupted = _Runner([_Lane("one"), _Lane("two", fail=Aborted("probe-f"))], CallRoutes(2))
    with pytest.raises(Aborted):
        run_calls("code", "f", calls, interrupted, Random(2))


class _TaskRunner:
    timeout_s = 1.0

    def __init__(self) -> None:
        self.runs = 0

    def run_tool(self, code: str, entry: str, args: Any, timeout_s: float,
                 snapshot_dir: str | None = None) -> ExecutionResult:
        self.runs += 1
        return ExecutionResult(status="ok", value=timeout_s)


def test_the_lanes_share_one_budget(monkeypatch) -> None:
    clock = iter(float(i) for i in range(1000))  # every run takes one second of the budget's clock
    monkeypatch.setattr("runner.execution.deadline.time.monotonic", lambda: next(clock))
    first, beside = _TaskRunner(), _TaskRunner()
    runner = ProbeRunner(first, 3.0, beside=[beside], routes=CallRoutes(2))  # type: ignore[arg-type]
    assert len(runner.lanes) == 2
    results = [runner.lanes[i % 2]("code", "f", {}) for i in range(5)]
    assert [r.status for r in results] == ["ok", "ok", "ok", "timeout", "timeout"]
    assert (first.runs, beside.runs) == (2, 1)
    assert "budget" in (results[-1].error_message or "")
    # without runners beside it a ProbeRunner has no lanes: the judge runs its calls one by one
    assert ProbeRunner(first, 3.0).lanes == []  # type: ignore[arg-type]


def test_the_judge_uses_a_sandbox_per_core_up_to_a_cap() -> None:
    assert judge_width(1) == 1
    assert judge_width(2) == 2
    assert judge_width(64) == MAX_JUDGE_SANDBOXES
