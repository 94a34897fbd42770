"""Running the agent and its tools under a deadline, watching for SIGINT / SIGTERM.

Each task runs in a worker thread; the main thread waits for it with the task's deadline and
watches for signals. On a signal the task in flight is aborted (the sandbox is closed, which
kills its processes) and :class:`Aborted` is raised. A deadline is passed to the agent
(``solve(task, deadline=...)``, a ``time.monotonic()`` value) which stops the LLM call or
sandbox run itself; if the agent overruns it by more than :data:`DEADLINE_GRACE_S`, the worker
is abandoned, ``deadline_exceeded`` is recorded and a fresh session opens on the same registry.
"""

from __future__ import annotations

import functools
import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from finevo.errors import DeadlineExceeded, ExternalError, FinevoError
from finevo.jsontypes import JSONObject
from finevo.outcome import Outcome
from finevo.sandbox.api import ExecutionResult, Limits
from runner.execution.session import Session, SessionFactory, SessionSpec
from runner.inputs.tasks import SecurityTask, Task

DEADLINE_GRACE_S = 5.0
POLL_S = 0.05

T = TypeVar("T")


# --------------------------------------------------------------------------- interrupts
class Interrupts:
    """SIGINT / SIGTERM handlers that only record the signal; the main loop acts on it."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.event = threading.Event()
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> Interrupts:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _handle(self, signum: int, frame: Any) -> None:
        if self.signum is not None:  # second signal: stop now, reports may be missing
            os._exit(128 + signum)
        self.signum = signum
        self.event.set()


class Aborted(Exception):
    """The run was interrupted while a task was in flight."""


# --------------------------------------------------------------------------- task execution
@dataclass
class _Call:
    done: threading.Event = field(default_factory=threading.Event)
    value: Any = None
    error: BaseException | None = None


class _Overdue(Exception):
    """The worker did not finish by its hard stop (it has been abandoned)."""


class TaskRunner:
    """Runs ``agent.solve`` for one task at a time with a deadline, in a worker thread."""

    def __init__(self, factory: SessionFactory, spec: SessionSpec, interrupts: Interrupts,
                 timeout_s: float) -> None:
        self.factory = factory
        self.spec = spec
        self.interrupts = interrupts
        self.timeout_s = timeout_s
        self.session: Session = factory(spec)

    def close(self) -> None:
        self.session.close()

    def _renew(self) -> None:
        """Abandon a stuck worker: kill the sandbox and open a new session on the same registry."""
        self.session.interrupt()
        self.session.close()
        self.session = self.factory(self.spec)

    def _watched(self, name: str, work: Callable[[], Any], hard_stop: float) -> _Call:
        """Run ``work`` in a worker thread and wait for it: the one deadline / interrupt loop.

        Raises :class:`Aborted` when a signal arrives meanwhile (the sandbox is interrupted first),
        :class:`_Overdue` when ``hard_stop`` (a ``time.monotonic()`` value) passes first (the worker
        is abandoned and the session renewed). Otherwise the finished call, with its value or error.
        """
        call = _Call()

        def run() -> None:
            try:
                call.value = work()
            except BaseException as exc:  # reported in the main thread
                call.error = exc
            finally:
                call.done.set()

        threading.Thread(target=run, name=name, daemon=True).start()
        while not call.done.wait(POLL_S):
            if self.interrupts.event.is_set():
                self.session.interrupt()
                call.done.wait(2.0)
                raise Aborted(name)
            if time.monotonic() > hard_stop:
                self._renew()
                raise _Overdue(name)
        if self.interrupts.event.is_set():
            raise Aborted(name)
        return call

    def solve(self, task: Task | SecurityTask) -> tuple[Outcome, float]:
        """Solve one task; raises :class:`Aborted` when a signal arrives meanwhile."""
        start = time.monotonic()
        deadline = start + self.timeout_s
        agent = self.session.agent
        try:
            call = self._watched(f"solve-{task.id}", lambda: agent.solve(task.question(), deadline=deadline),
                                 deadline + DEADLINE_GRACE_S)
        except Aborted:
            raise Aborted(task.id) from None
        except _Overdue:
            overdue = DeadlineExceeded(f"task {task.id}: no answer {self.timeout_s:g}s after its start "
                                   "(the agent ignored its deadline; worker abandoned)", stage="unknown")
            return Outcome(task_id=task.id, error=overdue, stage="unknown"), time.monotonic() - start
        elapsed = time.monotonic() - start
        if call.error is not None:
            exc = call.error
            if isinstance(exc, FinevoError):
                return Outcome(task_id=task.id, error=exc), elapsed
            err = ExternalError(f"agent crashed: {type(exc).__name__}: {exc}", where="gate")
            return Outcome(task_id=task.id, error=err), elapsed
        outcome = call.value
        if not isinstance(outcome, Outcome):
            err = ExternalError(f"agent returned {type(outcome).__name__}, not an Outcome")
            return Outcome(task_id=task.id, error=err), elapsed
        return outcome, elapsed

    def probe_runner(self, *, beside: Sequence[TaskRunner] = (), routes: CallRoutes | None = None) -> ProbeRunner:
        """A tool runner for one task's probes, sharing one budget of the task timeout; with runners
        ``beside`` this one (each on a sandbox of its own), the judge may run its calls on all of them
        at once (:attr:`ProbeRunner.lanes`), world by world as ``routes`` assigns them."""
        return ProbeRunner(self, self.timeout_s, beside=beside, routes=routes)

    def run_tool(self, code: str, entry: str, args: JSONObject, timeout_s: float,
                 snapshot_dir: str | None = None) -> ExecutionResult:
        """One sandbox run of ``entry(**args)`` in a worker thread, watching for signals; on the
        market data at ``snapshot_dir`` when given (a hidden world), else the session's own.

        Raises :class:`Aborted` on a signal, :class:`ExternalError` when the sandbox fails or does
        not return ``DEADLINE_GRACE_S`` after its own wall-clock limit.
        """
        sandbox = self.session.sandbox
        # The agent's own run's limits: the sandbox's defaults with only the wall-clock cut (what a
        # tool can read of its limits must not tell a judged call from the agent's own).
        limits = Limits(timeout_s=timeout_s)
        try:
            def run() -> ExecutionResult:
                result: ExecutionResult
                if snapshot_dir is None:
                    result = sandbox.run(code, entry, dict(args), limits)
                else:
                    result = sandbox.run(code, entry, dict(args), limits, snapshot_dir=snapshot_dir)
                return result

            call = self._watched(f"probe-{entry}", run, time.monotonic() + timeout_s + DEADLINE_GRACE_S)
        except Aborted:
            raise Aborted(entry) from None
        except _Overdue:
            raise ExternalError(f"the sandbox did not return {timeout_s:g}s after starting {entry}",
                                where="gate") from None
        if call.error is not None:
            if isinstance(call.error, FinevoError):
                raise call.error
            raise ExternalError(f"sandbox failed: {type(call.error).__name__}: {call.error}", where="gate")
        result: ExecutionResult = call.value
        return result


class CallRoutes:
    """Which of a judge's runners serves the calls of each hidden world, for a whole run.

    A hidden world is loaded by the sandbox that first runs a call in it (a world zygote reading its
    snapshot), so every call in one world goes to one runner, for every task: a world shared by
    tasks is loaded once. A world seen for the first time goes to the runner with the fewest calls
    of the task at hand (:meth:`split`); the calls on the run's own snapshot, which every runner's
    sandbox holds already, then even out the load."""

    def __init__(self, width: int) -> None:
        self.width = max(1, width)
        self._world: dict[str, int] = {}
        self._lock = threading.Lock()

    def split(self, calls: Sequence[T]) -> list[list[T]]:
        """``calls`` (objects with ``snapshot_dir``: None on the run's own snapshot) in ``width``
        groups, each in the order given."""
        load = [0] * self.width
        by_dir: dict[str, int] = {}
        for call in calls:
            key = getattr(call, "snapshot_dir", None)
            if key is not None:
                by_dir[key] = by_dir.get(key, 0) + 1
        with self._lock:
            for key in sorted(by_dir, key=lambda k: (k not in self._world, -by_dir[k], k)):
                lane = self._world.get(key)
                if lane is None:
                    lane = self._world[key] = min(range(self.width), key=lambda i: (load[i], i))
                load[lane] += by_dir[key]
        groups: list[list[T]] = [[] for _ in range(self.width)]
        for call in calls:
            key = getattr(call, "snapshot_dir", None)
            if key is None:
                lane = min(range(self.width), key=lambda i: (load[i], i))
                load[lane] += 1
            else:
                lane = self._world[key]
            groups[lane].append(call)
        return groups


class ProbeRunner:
    """``(code, entry, args[, snapshot_dir]) -> ExecutionResult`` for the judge's re-runs (probes,
    hidden worlds): each run gets the sandbox's usual wall-clock limit, cut to what is left of the
    task's budget for them. The budget counts the runs only, not the gate's own work between them
    (computing expected values, building worlds); runs at the same time (:attr:`lanes`) each count.

    With runners ``beside`` the first, :attr:`lanes` holds one such callable per runner (one
    budget for all) and :attr:`routes` says which serves which world: the judge runs each lane's
    calls in a thread of its own (:func:`runner.judging.calls.run_calls`)."""

    def __init__(self, runner: TaskRunner, budget_s: float, *, beside: Sequence[TaskRunner] = (),
                 routes: CallRoutes | None = None) -> None:
        self.runner = runner
        self.budget_s = budget_s
        self.spent_s = 0.0
        self._lock = threading.Lock()
        runners = [runner, *beside]
        self.routes = routes if routes is not None and len(runners) > 1 else None
        self.lanes: list[Callable[..., ExecutionResult]] = (
            [functools.partial(self._run, r) for r in runners] if self.routes is not None else [])

    def __call__(self, code: str, entry: str, args: JSONObject, snapshot_dir: str | None = None) -> ExecutionResult:
        return self._run(self.runner, code, entry, args, snapshot_dir)

    def _run(self, runner: TaskRunner, code: str, entry: str, args: JSONObject,
             snapshot_dir: str | None = None) -> ExecutionResult:
        with self._lock:
            remaining = self.budget_s - self.spent_s
        if remaining <= 0:
            return ExecutionResult(status="timeout", layer="timeout",
                                   error_message=f"the task's probe budget of {self.runner.timeout_s:g}s is spent")
        started = time.monotonic()
        try:
            return runner.run_tool(code, entry, args, min(Limits().timeout_s, remaining), snapshot_dir)
        finally:
            with self._lock:
                self.spent_s += time.monotonic() - started
