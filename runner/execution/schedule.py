"""Scheduling the gate's work on more than one core (``--jobs N``) without changing a single result.

The gate's run has one order that matters: the agent solves the benchmark tasks, then the security
tasks, in suite order, on one registry (a later task may reuse a tool an earlier one registered).
Everything else does not depend on that order:

* **judging** a solved task (its probes and hidden worlds re-run the tool; the judge sees only the
  task, its outcome and the oracle's values) -- done by a :class:`JudgeLane`, in a thread with a
  sandbox of its own, while the agent solves the next task;
* the **payload corpus** (hostile code run straight in a sandbox next to the canaries) -- done by a
  :class:`PayloadLane`, in a thread with a sandbox of its own, from the start of the run.

With ``jobs == 1`` nothing here runs and the gate is the serial loop it always was. With more,
every result is still *recorded* in the serial order: events, console lines and reports come out
byte for byte as a serial run writes them (run ids and timings aside), because each lane hands its
results back in the order the work was given and the gate emits them at the point where the serial
loop would have.

A lane's sandbox is opened before the canaries are placed (its worker starts with a clean environment
anyway, as every sandbox worker does). An interrupt (SIGINT / SIGTERM) stops every lane: its sandbox is
closed (which kills its processes) and results already finished are kept.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import queue
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from runner.execution.deadline import POLL_S, Aborted, CallRoutes, Interrupts, TaskRunner
from runner.execution.session import Session, SessionFactory, SessionSpec, default_session, pooled_sandbox
from runner.records import SelfCheck

#: ``FINEVO_JOBS``: the number of cores the gate may use when ``--jobs`` is not given.
JOBS_ENV = "FINEVO_JOBS"
#: Sandboxes the judging lane shares a task's judged calls over at most (one per core given by
#: ``--jobs``): each is a warm worker of its own, which serves the hidden worlds too.
MAX_JUDGE_SANDBOXES = 4


def judge_width(jobs: int) -> int:
    """How many sandboxes judge at once with ``--jobs`` ``jobs`` (1 for a serial run)."""
    return max(1, min(jobs, MAX_JUDGE_SANDBOXES)) if jobs > 1 else 1

T = TypeVar("T")


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, e.g. a container's cpuset), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def resolve_jobs(flag: int | None, env: dict[str, str] | None = None) -> int:
    """``--jobs``, else ``FINEVO_JOBS``, else the cores available. Raises ``InputError`` on a bad value."""
    from finevo.errors import InputError
    from finevo.settings import env_whole_number

    if flag is not None:
        if flag < 1:
            raise InputError(f"--jobs: expected a whole number >= 1, got {flag}")
        return flag
    return env_whole_number(JOBS_ENV, available_cores(), minimum=1, env=env)


# --------------------------------------------------------------------------- one parse at a time
_parse_lock = threading.Lock()
_parse_guard = threading.Lock()
_parse_users = 0
_parse_original: Callable[..., Any] | None = None


def _serial_parse(*args: Any, **kwargs: Any) -> Any:
    assert _parse_original is not None
    with _parse_lock:
        return _parse_original(*args, **kwargs)


@contextlib.contextmanager
def one_parse_at_a_time() -> Iterator[None]:
    """While lanes run, every ``ast.parse`` in the process (the policy, the agent's checks, the
    registry's signatures, ``ast.literal_eval``) takes one lock.

    CPython 3.11 keeps the AST constructor's recursion-depth count per interpreter, not per thread:
    two threads parsing at once can make a well-formed tool fail with ``SystemError: AST constructor
    recursion depth mismatch`` (python/cpython gh-106905), which the policy rightly refuses -- a
    reference tool refused as ``internal-error`` only because a lane parsed beside the agent. Parsing
    is microseconds; serialising it costs nothing measurable."""
    import ast

    global _parse_users, _parse_original
    with _parse_guard:
        if _parse_users == 0:
            _parse_original = ast.parse
            ast.parse = _serial_parse
        _parse_users += 1
    try:
        yield
    finally:
        with _parse_guard:
            _parse_users -= 1
            if _parse_users == 0:
                ast.parse = _parse_original  # type: ignore[assignment]
                _parse_original = None


# --------------------------------------------------------------------------- a lane's own sandbox
def lane_session(factory: SessionFactory, spec: SessionSpec) -> SessionFactory:
    """A factory for a lane's session: only a sandbox when the real finevo session is in use (a lane
    never asks the agent anything), else the given factory's session (tests' fakes) on a throw-away
    registry outside the run directory, so a lane leaves no trace among the reports."""
    if factory is default_session:
        def sandbox_only(lane_spec: SessionSpec) -> Session:
            from finevo.settings import Settings

            backend = Settings.from_env({"sandbox_backend": lane_spec.sandbox_backend}).sandbox_backend
            closers: list[Callable[[], None]] = []
            sandbox, _ = pooled_sandbox(lane_spec, backend, closers)
            return Session(agent=None, sandbox=sandbox, closers=closers)  # type: ignore[arg-type]
        return sandbox_only

    scratch = Path(tempfile.mkdtemp(prefix="finevo-lane-"))

    def scratch_session(lane_spec: SessionSpec) -> Session:
        import shutil

        session = factory(lane_spec)
        session.closers.append(lambda: shutil.rmtree(scratch, ignore_errors=True))
        return session

    del spec
    return lambda lane_spec: scratch_session(dataclasses.replace(lane_spec, registry_dir=scratch / "lane-registry"))


# --------------------------------------------------------------------------- one ordered worker
@dataclass
class _Item(Generic[T]):
    index: int
    done: threading.Event = field(default_factory=threading.Event)
    value: T | None = None
    error: BaseException | None = None


class _Lane(Generic[T]):
    """One worker thread that runs submitted jobs one at a time, in order, and hands the results back
    in that order. After a job raised, the jobs queued behind it do not run (as in a serial loop, where
    the exception would have stopped them); :meth:`wait_next` re-raises the error in its place."""

    def __init__(self, name: str, interrupts: Interrupts) -> None:
        self.interrupts = interrupts
        self._jobs: queue.Queue[tuple[_Item[T], Callable[[], T]] | None] = queue.Queue()
        self._items: list[_Item[T]] = []
        self._handed = 0
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _work(self) -> None:
        failed = False
        while True:
            job = self._jobs.get()
            if job is None:
                return
            item, work = job
            if self._stopped.is_set() or failed:
                item.error = Aborted("not run: the lane stopped")
                item.done.set()
                continue
            try:
                item.value = work()
            except BaseException as exc:  # handed to the gate's thread, in order
                item.error = exc
                failed = True
            finally:
                item.done.set()

    def submit(self, work: Callable[[], T]) -> None:
        item: _Item[T] = _Item(len(self._items))
        self._items.append(item)
        self._jobs.put((item, work))

    @property
    def pending(self) -> int:
        return len(self._items) - self._handed

    def _hand(self) -> T:
        item = self._items[self._handed]
        self._handed += 1
        if item.error is not None:
            raise item.error
        return item.value  # type: ignore[return-value]

    def wait_next(self) -> T:
        """The next result in order, waiting for it; raises :class:`Aborted` on a signal meanwhile."""
        item = self._items[self._handed]
        while not item.done.wait(POLL_S):
            if self.interrupts.event.is_set():
                raise Aborted(self._thread.name)
        return self._hand()

    def finished_prefix(self) -> list[T]:
        """Every result not yet handed back that finished without error, in order, up to the first
        that did not (used when the run stops early: nothing finished is lost)."""
        out: list[T] = []
        while self.pending:
            item = self._items[self._handed]
            if not item.done.is_set() or item.error is not None:
                break
            out.append(self._hand())
        return out

    def finish(self) -> None:
        """No more jobs: run those queued, then end the thread."""
        self._jobs.put(None)

    def stop(self) -> None:
        """Start no queued job any more: let the one running finish (or be killed by the caller), then end."""
        self._stopped.set()
        self._jobs.put(None)

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


# --------------------------------------------------------------------------- judging beside solving
class JudgeLane:
    """Judges solved benchmark tasks in order, on a sandbox of its own, while the agent goes on.

    ``submit(judge, *args)`` queues ``judge(*args, run_tool)``, where ``run_tool`` is this lane's probe
    runner (one task's probe budget each, as the serial loop gives it). The gate's ``judge`` also
    *records* the result (event, console line): the lane runs one job at a time, in suite order, and
    the gate records nothing else until :meth:`drain` returns, so a task's event is written as soon as
    it is judged -- a run killed while the agent is stuck on the next task keeps it."""

    def __init__(self, factory: SessionFactory, spec: SessionSpec, interrupts: Interrupts,
                 timeout_s: float, width: int = 1) -> None:
        self.runner = TaskRunner(lane_session(factory, spec), spec, interrupts, timeout_s)
        #: Runners beside ``runner``, each on a sandbox of its own: a task's judged calls are shared
        #: out over all of them at once, world by world (``routes``), see :class:`CallRoutes`.
        self.beside: list[TaskRunner] = []
        try:
            for i in range(1, max(1, width)):
                lane_spec = dataclasses.replace(spec, label=f"{spec.label}-{i + 1}")
                self.beside.append(TaskRunner(lane_session(factory, lane_spec), lane_spec, interrupts, timeout_s))
        except BaseException:
            for runner in self.runners:
                runner.close()
            raise
        self.routes = CallRoutes(1 + len(self.beside))
        self._lane: _Lane[Any] = _Lane("judge-lane", interrupts)

    @property
    def runners(self) -> list[TaskRunner]:
        """Every runner of the lane: its own, then those beside it."""
        return [self.runner, *self.beside]

    def submit(self, judge: Callable[..., Any], *args: Any) -> None:
        self._lane.submit(lambda: judge(*args, self.runner.probe_runner(beside=self.beside, routes=self.routes)))

    def drain(self) -> None:
        """Wait for every job; raises the first job's error (``Aborted`` on a signal meanwhile)."""
        while self._lane.pending:
            self._lane.wait_next()

    def close(self) -> None:
        """Stop: no queued job starts any more; a judging in flight is killed with the lane's sandbox and
        dropped (as the serial loop drops the task an interrupt lands in). With every job handed back
        nothing is in flight: the sandbox is closed with the session (a run's pool keeps it)."""
        self._lane.stop()
        if self._lane.pending:
            for runner in self.runners:
                runner.session.interrupt()
        self._lane.join(10.0)
        for runner in self.runners:
            runner.close()


# --------------------------------------------------------------------------- the payload corpus beside it all
class PayloadLane:
    """Runs the payload corpus, in corpus order, on a sandbox of its own, from the start of the run.

    ``run_one(sandbox, payload, canaries)`` is the gate's own payload call. :meth:`start` is given
    the canaries (placed *after* this lane's sandbox opened) and queues every payload; the gate
    collects the results with :meth:`results` where the serial loop would have run them."""

    def __init__(self, factory: SessionFactory, spec: SessionSpec, interrupts: Interrupts) -> None:
        self.interrupts = interrupts
        self.session = lane_session(factory, spec)(spec)
        self._lane: _Lane[Any] = _Lane("payload-lane", interrupts)

    def start(self, payloads: Sequence[Any], run_one: Callable[[Any, Any, Any], Any], canaries: Any) -> None:
        sandbox = self.session.sandbox
        for payload in payloads:
            def job(payload: Any = payload) -> Any:
                if self.interrupts.event.is_set():
                    raise Aborted(payload.id)
                return run_one(sandbox, payload, canaries)
            self._lane.submit(job)

    def results(self) -> list[Any]:
        """Every payload's result, in corpus order; raises :class:`Aborted` on a signal meanwhile."""
        out = []
        while self._lane.pending:
            out.append(self._lane.wait_next())
        return out

    def close(self) -> list[Any]:
        """Stop: no payload starts any more; returns the results finished by now (a prefix of the
        corpus, none of them handed out before); the one in flight is killed with the sandbox and dropped,
        as the serial loop drops the payload an interrupt lands in."""
        self._lane.stop()
        kept = self._lane.finished_prefix()
        if self._lane.pending:  # a payload in flight (or queued): killed with the worker
            self.session.interrupt()
        self._lane.join(5.0)
        with contextlib.suppress(Exception):
            self.session.close()
        return kept


# --------------------------------------------------------------------------- the gate's lanes together
class Lanes:
    """The lanes of one gate run with ``jobs > 1``: judging always, the payload corpus when there is one.

    Every lane's sandbox is opened here, before the gate places its canaries."""

    def __init__(self, judge: JudgeLane | None, payloads: PayloadLane | None,
                 parse_guard: contextlib.ExitStack) -> None:
        self.judge = judge
        self.payloads = payloads
        self._parse_guard = parse_guard

    @classmethod
    def open(cls, factory: SessionFactory, spec: SessionSpec, interrupts: Interrupts, timeout_s: float, *,
             payloads: bool, judge_width: int = 1) -> Lanes:
        from concurrent.futures import ThreadPoolExecutor

        guard = contextlib.ExitStack()
        guard.enter_context(one_parse_at_a_time())
        # Each lane's sandbox starts a worker process of its own: start them at the same time.
        with ThreadPoolExecutor(2, thread_name_prefix="lane-open") as pool:
            judge_f = pool.submit(JudgeLane, factory, dataclasses.replace(spec, label="judge"), interrupts, timeout_s,
                                  judge_width)
            payload_f = pool.submit(PayloadLane, factory, dataclasses.replace(spec, label="payloads"),
                                    interrupts) if payloads else None
        opened: list[Any] = [f.result() for f in (judge_f, payload_f) if f is not None and f.exception() is None]
        failed = next((f.exception() for f in (judge_f, payload_f) if f is not None and f.exception()), None)
        if failed is not None:
            for lane in opened:
                lane.close()
            guard.close()
            raise failed
        return cls(judge_f.result(), payload_f.result() if payload_f is not None else None, guard)

    def start_payloads(self, payloads: Sequence[Any], run_one: Callable[[Any, Any, Any], Any],
                       canaries: Any) -> None:
        if self.payloads is not None:
            self.payloads.start(payloads, run_one, canaries)

    def payload_results(self) -> list[Any]:
        assert self.payloads is not None
        return self.payloads.results()

    def close_judge(self) -> None:
        judge, self.judge = self.judge, None
        if judge is not None:
            judge.close()

    def close_payloads(self) -> list[Any]:
        payloads, self.payloads = self.payloads, None
        return payloads.close() if payloads is not None else []

    def close(self) -> None:
        """After both lanes are closed: parsing goes back to the interpreter's own ``ast.parse``."""
        self.close_judge()
        self.close_payloads()
        self._parse_guard.close()


# --------------------------------------------------------------------------- the self-check beside the security tasks
class _HostView:
    """The gate as the self-check sees it, with a console of its own (printed later, in the serial order)."""

    def __init__(self, gate: Any, console: Any) -> None:
        self._gate = gate
        self.console = console

    def __getattr__(self, name: str) -> Any:
        return getattr(self._gate, name)


class EarlySelfCheck:
    """The harness self-check started as soon as the benchmark tasks are judged (it needs their
    results, nothing after them), in a thread, while the agent answers the security tasks and the
    payload corpus finishes. Its console lines are kept and printed by :meth:`result`, where the
    serial run prints them; its own sessions are its own, as in the serial run."""

    def __init__(self, run: Callable[[Any], SelfCheck], gate: Any, interrupts: Interrupts) -> None:
        from runner.reports.console import Console

        self.interrupts = interrupts
        self._gate_console = gate.console
        self._buffer = io.StringIO()
        console = Console(self._buffer, colour=gate.console.colour, quiet=gate.console.quiet,
                          env=gate.console.env)
        self._lane: _Lane[SelfCheck] = _Lane("selfcheck-lane", interrupts)
        view = _HostView(gate, console)
        self._lane.submit(lambda: run(view))
        self._lane.finish()  # one job only

    def result(self) -> SelfCheck:
        """The self-check record (waiting for it); raises what the self-check raised, ``Aborted`` on a signal."""
        try:
            return self._lane.wait_next()
        finally:
            text = self._buffer.getvalue()
            if text:
                self._gate_console.stream.write(text)
                self._gate_console.stream.flush()

    def abandon(self) -> None:
        """The run stopped before the self-check's result was asked for: wait for it to notice the signal."""
        self._lane.join(10.0)
