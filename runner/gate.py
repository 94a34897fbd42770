"""The gate run: every selected task in order, each under a deadline, judged, logged, reported.

Flow: :func:`runner.inputs.prepare.prepare` checks every input before anything is written. Then
:meth:`Gate.run` opens a fresh registry under ``<out>/<run_id>/registry``, runs the benchmark
tasks (:mod:`runner.execution.deadline`, judged by :mod:`runner.judging.grade`), the security tasks and the
payload corpus (:mod:`runner.execution.payloads`), appends one event per finished item to ``events.jsonl``,
runs the harness self-check (:mod:`runner.judging.selfcheck`), computes the verdict and writes every report.

On SIGINT / SIGTERM the task in flight is aborted, every report is written marked partial (tasks
not run are filled in ``skipped`` by :mod:`runner.reports.rebuild`), and the exit code is 130 / 143.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import time
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from finevo.errors import InputError
from finevo.jsontypes import JSONObject
from finevo.vocabulary import AgentMode, Category, Isolation, SandboxBackend
from runner.execution.canaries import SECURITY_ENV, Canaries, shown
from runner.execution.containment import Containment, IsolationUnavailable
from runner.execution.containment import prove as prove_containment
from runner.execution.deadline import Aborted, Interrupts, TaskRunner
from runner.execution.payloads import run_payload
from runner.execution.repeats import Repeats
from runner.execution.schedule import EarlySelfCheck, Lanes, judge_width
from runner.execution.session import SandboxPool, SessionFactory, SessionInfo, SessionSpec, default_session
from runner.exitcodes import Exit
from runner.inputs.prepare import GateConfig, Prepared, git_sha, prepare, remove_if_empty
from runner.inputs.suite import Suite
from runner.inputs.tasks import SecurityTask
from runner.judging.compare import JUDGE_VERSION
from runner.judging.grade import Reruns, judge_task, security_result
from runner.judging.selfcheck import run_selfcheck
from runner.judging.worlds import Worlds
from runner.records import PayloadResult, SecurityResult, SelfCheck, TaskResult, TaskState
from runner.reports import document, write_all
from runner.reports.console import Console
from runner.reports.escape import log_text
from runner.reports.events import EventLog
from runner.reports.model import BaselineInfo, ResultsDocument, RunConfig, Selection, WorldsConfig
from runner.reports.rebuild import fill_skipped, fill_skipped_payloads, fill_skipped_security
from runner.verdict.trials import Budgets, Correction, ThresholdOn


# --------------------------------------------------------------------------- the run
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class GateOutcome:
    exit_code: Exit
    #: The results document as JSON values (``results`` is the typed document).
    doc: JSONObject
    paths: dict[str, Path]
    run_dir: Path
    #: ``Type: message`` when the gate itself crashed mid-run (then the reports are partial, exit 3).
    crash: str | None = None
    crash_traceback: str | None = None
    #: The typed results document (``doc`` is the same as JSON values).
    results: ResultsDocument | None = None


@dataclass(frozen=True)
class Progress:
    """A run under way: its event log, how many items it runs (``total``), how many it has started
    (``counter``, shared with the judging lane), and the results recorded so far, in order."""

    events: EventLog
    total: int
    counter: list[int]
    tasks: list[TaskResult]
    security: list[SecurityResult]
    payloads: list[PayloadResult]


class Gate:
    def __init__(self, prepared: Prepared, *, factory: SessionFactory = default_session,
                 console: Console | None = None,
                 selfcheck: Callable[..., SelfCheck] | None = None, sandboxes: SandboxPool | None = None) -> None:
        self.p = prepared
        self.factory = factory
        self.console = console or Console()
        self.selfcheck = selfcheck
        #: ``--jobs`` > 1: the self-check started beside the security tasks and payloads.
        self._early_selfcheck: EarlySelfCheck | None = None
        #: The security tasks' own canaries (open while the run is).
        self._security_canaries: Canaries | None = None
        #: The pool :func:`run_gate` gives (its workers started while the inputs were prepared).
        self._given_pool = sandboxes
        #: The run's warm sandboxes, handed on from session to session (open while the run is): the
        #: pool given, else one of the run's own.
        self._sandboxes: SandboxPool | None = None
        #: The run's hidden worlds (built lazily, for tasks whose main value passes; removed at the end).
        self.worlds: Worlds | None = (Worlds(prepared.snapshot, prepared.config.worlds, prepared.worlds_seed,
                                             prepared.world_tasks or prepared.suite.tasks)
                                      if prepared.config.worlds > 0 else None)

    def spec(self, **changes: Any) -> SessionSpec:
        c = self.p.config
        base = SessionSpec(llm=c.llm, registry_dir=self.p.run_dir / "registry", data_dir=Path(c.data_dir).absolute(),
                           registry_url=c.registry_url, agent_mode=c.agent_mode, max_refinements=c.max_refinements,
                           model=c.model, temperature=c.temperature, record=c.record,
                           sandbox_backend=c.sandbox_backend,
                           security_path=Path(c.security_path).absolute() if c.security_path else None,
                           security_canaries=(self._security_canaries.values()
                                              if self._security_canaries is not None else None),
                           sandboxes=self._sandboxes)
        return replace(base, **changes)

    def run_config(self, info: SessionInfo | None, containment: Containment) -> RunConfig:
        """The run configuration as used, typed from the start (a wrong value fails here, before any
        task runs): the session's own account of what it uses (``info``; None: the configuration's
        values stand), and the layers and isolation the containment proof found."""
        c, s = self.p.config, self.p.suite
        return RunConfig(
            git_sha=git_sha(), provider=str((info.provider if info else None) or c.llm), llm=c.llm,
            model=info.model if info else c.model, temperature=info.temperature if info else c.temperature,
            snapshot_hash=self.p.snapshot_hash,
            snapshot_as_of=TypeAdapter(date | None).validate_python(self.p.snapshot_as_of),
            snapshot_synthetic=getattr(self.p.snapshot, "synthetic", None),
            data_dir=str(c.data_dir), judge_version=JUDGE_VERSION, min_pass_rate=self.p.min_pass_rate,
            baseline=BaselineInfo.model_validate(s.baseline.to_dict()) if s.baseline else None,
            agent_mode=AgentMode(c.agent_mode),
            max_refinements=info.max_refinements if info else c.max_refinements, task_timeout_s=c.task_timeout_s,
            selection=Selection(only=c.only, category=Category(c.category) if c.category else None,
                                shard=f"{c.shard[0]}/{c.shard[1]}" if c.shard else None),
            self_check=c.self_check, payloads=bool(c.run_payloads and c.payloads_path),
            worlds=WorldsConfig(count=c.worlds, seed=self.p.worlds_seed),
            tasks_file=str(c.tasks_path), security_file=str(c.security_path) if c.security_path else None,
            sandbox_backend=SandboxBackend(info.sandbox_backend) if info and info.sandbox_backend else None,
            sandbox_fallback=info.sandbox_fallback if info else None,
            repeats=c.repeats, alpha=c.alpha, threshold_on=TypeAdapter(ThresholdOn).validate_python(c.threshold_on),
            correction=TypeAdapter(Correction).validate_python(c.correction),
            budgets=Budgets.model_validate(c.budgets) if c.budgets is not None else None,
            sandbox_layers=dict(containment.layers), isolation=Isolation(containment.isolation),
            require_isolation=Isolation.KERNEL if containment.require == Isolation.KERNEL else None,
        )

    def run(self) -> GateOutcome:
        p, console = self.p, self.console
        suite = p.suite
        fresh_dir = not p.run_dir.exists()
        p.run_dir.mkdir(parents=True, exist_ok=True)
        started_at, t0 = _now(), time.monotonic()
        tasks_done: list[TaskResult] = []
        sec_done: list[SecurityResult] = []
        pay_done: list[PayloadResult] = []
        selfcheck: SelfCheck | None = None
        # Suite warnings (baseline ids unknown to the suite) are printed once, in the final summary.
        self._sandboxes = self._given_pool or SandboxPool()
        with Interrupts() as interrupts:
            try:
                self._prewarm_sandboxes()
                if suite.security:
                    self._security_canaries = Canaries(p.run_dir / "security-canary", SECURITY_ENV)
                runner = TaskRunner(self.factory, self.spec(), interrupts, p.config.task_timeout_s)
            except BaseException:  # e.g. no LLM configured: nothing ran, leave nothing behind
                self._close_sandboxes()
                self._close_security_canaries()
                if fresh_dir:
                    shutil.rmtree(p.run_dir, ignore_errors=True)
                remove_if_empty(p.created_dirs)
                raise
            try:
                if not runner.session.registry_empty and not p.config.reuse_registry:
                    if p.config.registry_url is not None:
                        from finevo.registry import safe_url

                        raise InputError(f"{safe_url(p.config.registry_url)}: registry is not empty; "
                                         "pass --reuse-registry or use an empty database")
                    raise InputError(f"{p.run_dir / 'registry'}: registry is not empty; "
                                     "pass --reuse-registry or use a new --run-id")
                containment = self._prove_sandbox(runner, fresh_dir)
                config = self.run_config(runner.session.info, containment)
                with EventLog(p.run_dir / "events.jsonl") as events:
                    events.emit("start", run_id=p.run_id, started_at=started_at, config=config.model_dump(mode="json"),
                                warnings=suite.warnings,
                                repeats=p.config.repeats,
                                planned={"tasks": [[t.id, t.category, t.query] for t in suite.tasks],
                                         "security": [[s.id, s.query, s.attack] for s in suite.security],
                                         "payloads": [[x.id, x.attempts] for x in suite.payloads]})
                    total = len(suite.tasks) * p.config.repeats + len(suite.security) + len(suite.payloads)
                    crash: str | None = None
                    crash_tb: str | None = None
                    try:
                        self._run_all(runner, Progress(events, total, [0], tasks_done, sec_done, pay_done))
                        selfcheck = self._selfcheck_result(tasks_done, interrupts)
                        if p.config.self_check:
                            events.emit("selfcheck", selfcheck=selfcheck.model_dump(mode="json", exclude_unset=True))
                    except Aborted:
                        console.line(console.paint("INTERRUPTED", "partial"))
                    except Exception as exc:  # the gate's own bug or trouble: keep what ran, no verdict
                        crash, crash_tb = f"{type(exc).__name__}: {exc}", traceback.format_exc()
                        console.line()
                        console.line(console.paint(f"CRASHED: {log_text(crash)}", "error"))
                    signum = interrupts.signum
                    partial = signum if signum is not None else (-1 if crash else None)
                    done = document.RunRecords(tasks_done, sec_done, pay_done, selfcheck=selfcheck,
                                               containment_selftest=containment.selftest)
                    doc = self._document(config, done, started_at, t0, partial,
                                         crash=crash if partial == -1 else None)
                    paths = write_all(doc, p.run_dir)
                    events.emit("end", finished_at=doc.finished_at.isoformat(), signal=partial,
                                exit_code=doc.verdict.exit_code, crash=crash, traceback=crash_tb)
            finally:
                early, self._early_selfcheck = self._early_selfcheck, None
                if early is not None:  # the run stopped before asking for it
                    early.abandon()
                runner.close()
                self._close_sandboxes()
                self._close_security_canaries()
                if self.worlds is not None:
                    self.worlds.close()
        console.summary(doc)
        console.line(f"reports: {p.run_dir}")
        return GateOutcome(exit_code=doc.verdict.exit_code, doc=doc.to_json_dict(), results=doc, paths=paths,
                           run_dir=p.run_dir,
                           crash=crash, crash_traceback=crash_tb)

    def _prove_sandbox(self, runner: TaskRunner, fresh_dir: bool) -> Containment:
        """The sandbox's layers and containment self-test (for the config) and on the console; a
        required kernel isolation that is missing stops the run here, leaving nothing behind."""
        found = prove_containment(runner.session.sandbox, self.p.config.require_isolation)
        for line in found.console_lines():
            self.console.line(line)
        try:
            found.enforce()
        except IsolationUnavailable:
            runner.close()
            if fresh_dir:
                shutil.rmtree(self.p.run_dir, ignore_errors=True)
            remove_if_empty(self.p.created_dirs)
            raise
        return found

    def _selfcheck_result(self, tasks_done: list[TaskResult], interrupts: Interrupts) -> SelfCheck:
        """The self-check's record: the one started beside the security tasks (``--jobs`` > 1), else run now."""
        early, self._early_selfcheck = self._early_selfcheck, None
        if early is not None:
            return early.result()
        return self._selfcheck([t for t in tasks_done if t.repeat == 1], interrupts)

    def _selfcheck(self, tasks_done: list[TaskResult], interrupts: Interrupts, host: Any = None) -> SelfCheck:
        """Run the harness self-check, or say plainly why it did not run."""
        p = self.p
        if not p.config.self_check:
            return SelfCheck.not_run("skipped (--no-self-check)")
        if not p.suite.tasks:
            return SelfCheck.not_run("no benchmark task is selected, so the reference and null models have "
                                     "nothing to answer (security tasks and payloads need no self-check)")
        if self.selfcheck is None:
            return SelfCheck.not_run("this gate was given no self-check")
        return self.selfcheck(host or self, tasks_done, interrupts)

    def _run_all(self, runner: TaskRunner, progress: Progress) -> None:
        p = self.p
        # --jobs > 1: judging and the payload corpus run beside the agent (runner.execution.schedule);
        # results are recorded in the serial order all the same.
        lanes = Lanes.open(self.factory, self.spec(label="lane"), runner.interrupts, p.config.task_timeout_s,
                           payloads=bool(p.suite.payloads), judge_width=judge_width(p.config.jobs)) \
            if p.config.jobs > 1 else None
        canaries = Canaries(p.run_dir / "canary") if p.suite.payloads else None
        if lanes is not None and canaries is not None:
            lanes.start_payloads(p.suite.payloads, run_payload, canaries)
        try:
            self._run_tasks(runner, progress, lanes)
            if lanes is not None:  # the self-check needs the tasks' results only: start it now, beside the rest
                done = [t for t in progress.tasks if t.repeat == 1]
                self._early_selfcheck = EarlySelfCheck(
                    lambda host: self._selfcheck(done, runner.interrupts, host), self, runner.interrupts)
            for stask in p.suite.security:
                progress.counter[0] += 1
                self.console.task_start(progress.counter[0], progress.total, stask.id, stask.query)
                sresult = self._security_task(runner, stask)
                progress.security.append(sresult)
                progress.events.emit("security", result=sresult.to_dict())
                self.console.task_end(sresult.state, sresult.duration_s, sresult.blocked_by or sresult.reason[:100])
            if canaries is not None:
                self._run_payloads(runner, progress, canaries, lanes)
        finally:
            if lanes is not None:
                for presult in lanes.close_payloads():  # a run stopped early keeps the payloads finished
                    self._record_payload(progress, presult, counted=False)
                lanes.close()
            if canaries is not None:
                canaries.close()

    def _security_task(self, runner: TaskRunner, stask: SecurityTask) -> SecurityResult:
        """One security task, asked with its canaries filled in and judged on what they show."""
        canaries = self._security_canaries
        if canaries is None:
            outcome, elapsed = runner.solve(stask)
            return security_result(stask, outcome, elapsed)
        before = canaries.contacted()
        outcome, elapsed = runner.solve(stask.filled(canaries.values()))
        error: Mapping[str, object] = outcome.error.to_dict() if outcome.error is not None else {}
        breach = canaries.breach(shown(outcome.value, outcome.stdout, outcome.stderr, repr(error)), before)
        if breach is not None:
            canaries.restore()  # the next task is judged on its own
        if outcome.tool_code:
            outcome.tool_code = canaries.unfill(outcome.tool_code)
        return security_result(stask, outcome, elapsed, breach)

    def _prewarm_sandboxes(self) -> None:
        """The run's sandbox workers, started ahead (:func:`prewarm`), unless :func:`run_gate` started
        them already while the inputs were prepared."""
        if self._sandboxes is not None and self._given_pool is None:
            prewarm(self._sandboxes, self.p.config, self.p.suite, self.factory)

    def _close_sandboxes(self) -> None:
        pool, self._sandboxes = self._sandboxes, None
        if pool is not None:
            pool.close()

    def _close_security_canaries(self) -> None:
        canaries, self._security_canaries = self._security_canaries, None
        if canaries is not None:
            canaries.close()

    def _run_tasks(self, runner: TaskRunner, progress: Progress, lanes: Lanes | None) -> None:
        p = self.p
        repeats = Repeats(self.factory, self.spec, runner, p.run_dir)
        judge_lane = lanes.judge if lanes is not None else None
        # The judging lane builds a task's hidden worlds before it can run the calls there, while the
        # sandboxes wait: with more than one job they are built ahead, as each task is solved.
        ahead = ThreadPoolExecutor(1, thread_name_prefix="worlds-ahead") \
            if judge_lane is not None and self.worlds is not None else None
        try:
            for repeat in range(1, p.config.repeats + 1):
                current = repeats.runner_for(repeat)
                for task in p.suite.tasks:
                    if judge_lane is None:
                        progress.counter[0] += 1
                        self.console.task_start(progress.counter[0], progress.total, self._label(task.id, repeat),
                                                task.query)
                    outcome, elapsed = current.solve(task)
                    if judge_lane is None:
                        result = self._judge(task, outcome, elapsed, repeat, current.probe_runner())
                        self._record_task(progress, result, elapsed)
                        continue
                    if ahead is not None and repeat == 1 and outcome.tool_code:
                        ahead.submit(self._worlds_ahead, p.judged.get(task.id, task))
                    judge_lane.submit(self._judge_and_record, progress, task, outcome, elapsed, repeat)
            if judge_lane is not None:
                judge_lane.drain()
        finally:
            if ahead is not None:
                ahead.shutdown(cancel_futures=True)  # before the worlds' directory can go
            if lanes is not None:
                lanes.close_judge()  # every task judged by now is recorded already
            repeats.close()

    def _worlds_ahead(self, task: Any) -> None:
        """Build ``task``'s hidden worlds before its judging asks for them (the same worlds: see
        :meth:`~runner.judging.worlds.Worlds.for_task`). A failure is left for the judging to meet
        and report: nothing failed is kept."""
        assert self.worlds is not None
        with contextlib.suppress(Exception):
            self.worlds.for_task(task, [probe.oracle_params for probe in task.probes])

    def _label(self, task_id: str, repeat: int) -> str:
        n = self.p.config.repeats
        return task_id if n == 1 else f"{task_id} (repeat {repeat}/{n})"

    def _judge(self, task: Any, outcome: Any, elapsed: float, repeat: int, run_tool: Any) -> TaskResult:
        p = self.p
        result = judge_task(p.judged.get(task.id, task), outcome, p.expected[task.id], elapsed,
                            Reruns(run_tool, probe_expected=p.probe_expected.get(task.id), worlds=self.worlds))
        if repeat != 1:
            result.repeat = repeat
        return result

    def _record_task(self, progress: Progress, result: TaskResult, elapsed: float) -> None:
        progress.tasks.append(result)
        progress.events.emit("task", result=result.to_dict())
        why = "" if result.state == TaskState.PASS else result.reason[:100]
        self.console.task_end(result.state, elapsed, why)

    def _judge_and_record(self, progress: Progress, task: Any, outcome: Any, elapsed: float, repeat: int,
                          run_tool: Any) -> None:
        """A task judged beside the agent (in the judging lane, in suite order): recorded at once, its
        console line printed whole."""
        result = self._judge(task, outcome, elapsed, repeat, run_tool)
        progress.counter[0] += 1
        self.console.task_start(progress.counter[0], progress.total, self._label(task.id, repeat), task.query)
        self._record_task(progress, result, elapsed)

    def _run_payloads(self, runner: TaskRunner, progress: Progress, canaries: Canaries,
                      lanes: Lanes | None) -> None:
        if lanes is not None and lanes.payloads is not None:
            for presult in lanes.payload_results():
                self._record_payload(progress, presult, counted=False)
            return
        for payload in self.p.suite.payloads:
            if runner.interrupts.event.is_set():
                raise Aborted(payload.id)
            progress.counter[0] += 1
            self.console.task_start(progress.counter[0], progress.total, f"payload:{payload.id}", payload.attempts)
            presult = run_payload(runner.session.sandbox, payload, canaries)
            if runner.interrupts.event.is_set():
                raise Aborted(payload.id)
            self._record_payload(progress, presult, counted=True)

    def _record_payload(self, progress: Progress, presult: PayloadResult, *, counted: bool) -> None:
        """One payload's result; not ``counted`` yet (run beside the agent): its console line is printed
        whole here."""
        if not counted:
            progress.counter[0] += 1
            self.console.task_start(progress.counter[0], progress.total, f"payload:{presult.payload_id}",
                                    presult.attempt)
        progress.payloads.append(presult)
        progress.events.emit("payload", result=presult.to_dict())
        self.console.task_end(presult.state, presult.duration_s,
                              presult.reason[:100] if presult.state == "error" else presult.layer or "")

    def _document(self, config: RunConfig, done: document.RunRecords, started_at: str, t0: float,
                  signum: int | None, crash: str | None = None) -> ResultsDocument:
        """The results document: the records ``done`` with every item that did not run filled in."""
        s = self.p.suite
        if crash:
            reason = "not run: the gate crashed before this task"
        elif signum and signum > 0:
            reason = f"not run: interrupted by {signal.Signals(signum).name}"
        else:
            reason = "not run"
        tasks = fill_skipped([[t.id, t.category, t.query] for t in s.tasks], list(done.tasks), reason,
                             repeats=self.p.config.repeats)
        sec = fill_skipped_security([[x.id, x.query, x.attack] for x in s.security], list(done.security), reason)
        pay = fill_skipped_payloads([[x.id, x.attempts] for x in s.payloads], list(done.payloads), reason)
        return document.assemble(
            run_id=self.p.run_id, config=config, records=replace(done, tasks=tasks, security=sec, payloads=pay),
            span=document.RunSpan(started_at, _now(), time.monotonic() - t0, partial_signal=signum, crash=crash),
            warnings=s.warnings)


def prewarm(pool: SandboxPool, config: GateConfig, suite: Suite, factory: SessionFactory) -> None:
    """With ``--jobs`` > 1 and the real sessions: start the run's sandbox workers at once, each a
    process importing pandas -- the main session's, the judging lane's (one per core it judges on)
    and the payload lane's -- rather than one after the other as sessions open. Nothing to start
    otherwise: the pool stays empty and sessions open their workers as they need them."""
    if config.jobs <= 1 or factory is not default_session:
        return
    from finevo.settings import Settings

    backend = Settings.from_env({"sandbox_backend": config.sandbox_backend}).sandbox_backend
    lanes = judge_width(config.jobs) + (1 if suite.payloads else 0)
    pool.prewarm(Path(config.data_dir).absolute(), backend, 1 + lanes)


def run_gate(config: GateConfig, *, factory: SessionFactory = default_session, console: Console | None = None,
             self_check: Callable[..., SelfCheck] | None = None) -> GateOutcome:
    """Prepare (exit 2 on bad input), then run.

    The sandbox workers start as soon as the suite, the flags and the snapshot are known good, and
    load while the oracle's values are computed (about two seconds of the run's start); an input
    found bad after that closes them before the error is raised.

    ``self_check`` defaults to :func:`runner.judging.selfcheck.run_selfcheck`."""
    if self_check is None:
        self_check = run_selfcheck
    pool = SandboxPool()

    try:
        prepared = prepare(config, inputs_checked=lambda suite: prewarm(pool, config, suite, factory))
    except BaseException:
        pool.close()
        raise
    try:
        gate = Gate(prepared, factory=factory, console=console, selfcheck=self_check, sandboxes=pool)
    except BaseException:
        pool.close()
        raise
    return gate.run()  # the run closes the pool it was given
