"""The one typed model of ``results.json`` (schema 2.0); its JSON Schema is generated from it.

Every report (JUnit, markdown, GitHub outputs, the CLI's report / diff / merge / baseline) reads
these typed fields. Validation is strict: unknown keys are refused everywhere, times are ISO 8601
date-times with a zone, states and categories are enums, and :meth:`ResultsDocument._consistent`
checks the invariants that tie the figures to the records (summary and per-category counts equal
the task states, the security figures equal the security records, a passed verdict has nothing
against it, a partial run is marked partial everywhere). A forged or hand-edited document that
breaks one of them is an input error, never a report.

Extending (more trials per task, cost budgets, a new config key): add an optional field with a
default, regenerate the schema (``finevo-verify schema``) and commit it; bump
:data:`SCHEMA_VERSION` only when an older reader would misread the new document.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from datetime import date
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from finevo.jsontypes import JSONObject
from finevo.vocabulary import AgentMode, Category, Isolation, SandboxBackend
from runner.exitcodes import Exit
from runner.records import (
    ContainmentSelftest,
    PayloadResult,
    PayloadState,
    SecurityResult,
    SecurityState,
    SelfCheck,
    TaskResult,
    TaskState,
    VerdictStatus,
)
from runner.verdict.figures import (
    COUNT_FIELDS,
    Counts,
    Regression,
    SecurityFigures,
    Verdict,
    counts_of,
)
from runner.verdict.trials import BaselineCount, Budgets, Correction, Quarantine, Statistics, ThresholdOn, UsageFigures

SCHEMA_VERSION = "2.0"
#: Schema versions :func:`runner.reports.document.load` still reads (their verdict is recomputed).
READABLE_VERSIONS: tuple[str, ...] = ("1.0", SCHEMA_VERSION)

_RUN_ID = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
#: An ISO 8601 date-time with a zone; the pattern repeats ``format`` for validators that skip formats.
Timestamp = Annotated[AwareDatetime, Field(json_schema_extra={
    "pattern": r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$"})]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Selection(_Strict):
    only: list[str] | None = None
    category: Category | None = None
    shard: str | None = Field(default=None, pattern=r"^[1-9][0-9]*/[1-9][0-9]*$")
    #: A merged run: the run ids it was merged from.
    merged_from: list[str] | None = None


class BaselineInfo(_Strict):
    path: str = ""
    version: str = ""
    description: str = ""
    passing_tasks: list[str]
    total_tasks: int | None = Field(default=None, ge=0)
    target_pass_rate: float = Field(ge=0, le=1)
    #: Baseline version 2: per task, the passes in the trials it was measured with.
    tasks: dict[str, BaselineCount] | None = None
    quarantine: list[Quarantine] | None = None
    #: Baseline version 2: the usage it was measured with (totals over ``usage.trials`` trials).
    usage: UsageFigures | None = None


class WorldsConfig(_Strict):
    """How many worlds (changed market data) each value is judged in, and their seed."""

    count: int = Field(ge=0)
    seed: int | None


class RunConfig(_Strict):
    """The run configuration as actually used."""

    git_sha: str | None
    provider: str
    model: str | None
    temperature: float | None
    snapshot_hash: str | None
    snapshot_as_of: date | None
    judge_version: str | None
    min_pass_rate: float = Field(ge=0, le=1)
    baseline: BaselineInfo | None
    agent_mode: AgentMode
    max_refinements: int | None = Field(ge=0)
    task_timeout_s: float = Field(gt=0)
    selection: Selection
    self_check: bool
    #: The ``--llm`` spec (``live``, ``replay:FILE``, ``predictions:FILE``, ``reference``).
    llm: str | None = None
    #: The market snapshot is synthetic (generated), not recorded from the market.
    snapshot_synthetic: bool | None = None
    data_dir: str | None = None
    payloads: bool | None = None
    tasks_file: str | None = None
    security_file: str | None = None
    sandbox_backend: SandboxBackend | None = None
    sandbox_fallback: str | None = None
    #: Each containment layer of the sandbox and whether it is active.
    sandbox_layers: dict[str, bool] = Field(default_factory=dict)
    #: ``kernel``: Landlock and seccomp confined every tool and the containment self-test passed.
    isolation: Isolation | None = None
    #: ``--require-isolation`` / ``FINEVO_REQUIRE_ISOLATION``.
    require_isolation: Literal[Isolation.KERNEL] | None = None
    worlds: WorldsConfig | None = None
    #: ``--repeats``: how many times the suite ran (each repeat from an empty registry).
    repeats: int = Field(default=1, ge=1)
    #: ``--alpha``: the level of the one-sided exact test against the baseline.
    alpha: float = Field(default=0.05, gt=0, lt=1)
    #: ``--threshold-on``: the pass-rate criterion on the point estimate or the Wilson lower bound.
    threshold_on: ThresholdOn = "point"
    #: ``--correction``: how the tasks' tests share alpha (holm: family-wise; none: per task).
    correction: Correction = "holm"
    budgets: Budgets | None = None

    @property
    def evaluates_agent(self) -> bool:
        """False when the answers came from the gold reference tools, not from the agent."""
        spec = (self.llm or self.provider or "").strip()
        return spec != "reference" and self.provider != "reference"


class Summary(Counts):
    min_pass_rate: float = Field(ge=0, le=1)


class SecuritySummary(SecurityFigures):
    tasks: list[SecurityResult]


class ResultsDocument(_Strict):
    """``results.json``: one gate run (or several merged shards)."""

    schema_version: Literal["2.0"] = "2.0"
    run_id: str = Field(pattern=_RUN_ID, max_length=200)
    partial: bool
    #: The signal that interrupted the run (-1: a crash or a kill); None for a complete run.
    interrupted_by: int | None
    started_at: Timestamp
    finished_at: Timestamp
    duration_s: float = Field(ge=0)
    config: RunConfig
    verdict: Verdict
    summary: Summary
    per_category: dict[Category, Counts]
    regressions: list[Regression]
    improvements: list[str]
    unknown_baseline_ids: list[str]
    security: SecuritySummary
    payloads: list[PayloadResult]
    selfcheck: SelfCheck | None
    containment_selftest: ContainmentSelftest | None = None
    tasks: list[TaskResult]
    #: Repeats, intervals, flaky and quarantined tasks, usage and budgets (:mod:`runner.verdict.trials`).
    statistics: Statistics | None = None

    # ------------------------------------------------------------------ invariants
    @model_validator(mode="after")
    def _consistent(self) -> ResultsDocument:
        problems = list(self._problems())
        if problems:
            raise ValueError("inconsistent results: " + "; ".join(problems))
        return self

    def _problems(self) -> Any:
        yield from self._verdict_problems()
        yield from self._record_problems()
        yield from self._figure_problems()
        yield from self._security_problems()
        yield from self._trend_problems()

    def _verdict_problems(self) -> Any:
        v = self.verdict
        if self.partial != (self.interrupted_by is not None):
            yield f"partial is {self.partial} but interrupted_by is {self.interrupted_by}"
        if self.partial != (v.status == VerdictStatus.PARTIAL):
            yield f"partial is {self.partial} but the verdict is {v.status.value}"
        if v.passed != (v.status == VerdictStatus.PASSED):
            yield f"verdict.passed is {v.passed} but the status is {v.status.value}"
        expected_exit = {VerdictStatus.PASSED: {Exit.PASSED}, VerdictStatus.FAILED: {Exit.FAILED},
                         VerdictStatus.NO_VERDICT: {Exit.NO_VERDICT},
                         VerdictStatus.PARTIAL: {Exit.NO_VERDICT, Exit.SIGINT, Exit.SIGTERM}}[v.status]
        if v.exit_code not in expected_exit:
            yield f"exit code {v.exit_code} does not go with the verdict {v.status.value}"
        if self.finished_at < self.started_at:
            yield "finished_at is before started_at"

    def _record_problems(self) -> Any:
        keys = [f"{t.task_id}#{t.repeat}" for t in self.tasks] + [t.task_id for t in self.security.tasks]
        twice = sorted({i.removesuffix("#1") for i in keys if keys.count(i) > 1})
        if twice:
            yield f"task id(s) recorded twice: {', '.join(twice[:5])}"
        pids = [p.payload_id for p in self.payloads]
        if len(set(pids)) != len(pids):
            yield "a payload id is recorded twice"

    def _figure_problems(self) -> Any:
        """The figures equal the records."""
        s = self.summary
        got = counts_of([t.state.value for t in self.tasks])
        for key in COUNT_FIELDS:
            n = getattr(got, key)
            if getattr(s, key) != n:
                yield f"summary.{key} is {getattr(s, key)} but the tasks say {n}"
        rate = s.passed / s.total if s.total else 1.0
        if not math.isclose(s.pass_rate, rate, abs_tol=1e-6):
            yield f"summary.pass_rate is {s.pass_rate} but the tasks say {rate:.6f}"
        if not math.isclose(s.min_pass_rate, self.config.min_pass_rate, abs_tol=1e-9):
            yield "summary.min_pass_rate differs from config.min_pass_rate"
        for cat, figures in self.per_category.items():
            if cat == Category.SECURITY:
                continue
            want = counts_of([t.state.value for t in self.tasks if t.category == cat])
            if any(getattr(figures, k) != getattr(want, k) for k in COUNT_FIELDS):
                yield f"per_category.{cat} does not match its tasks"
        missing = {t.category for t in self.tasks} - set(self.per_category)
        if missing:
            yield f"per_category lacks {', '.join(sorted(missing))}"

    def _trend_problems(self) -> Any:
        v, s = self.verdict, self.summary
        trial_states = {(t.task_id, t.state) for t in self.tasks}
        for r in self.regressions:
            if (r.task_id, r.state) not in trial_states:
                yield f"regression {r.task_id} does not match a task in that state"
        passing = {t.task_id for t in self.tasks if t.state == TaskState.PASS}
        if any(i not in passing for i in self.improvements):
            yield "an improvement names a task that does not pass"
        if v.status == VerdictStatus.PASSED:
            sec = self.security
            rate = self.statistics.gated_rate if self.statistics is not None else s.pass_rate
            if self.regressions or sec.unblocked or sec.errors or (self.tasks and rate < s.min_pass_rate - 1e-9):
                yield "the verdict is passed but a criterion is not met"
            if any(c.ok is not True for c in v.criteria):
                yield "the verdict is passed but a criterion is not met"

    def _security_problems(self) -> Any:
        sec = self.security
        tasks = Counter(t.state for t in sec.tasks)
        pays = Counter(p.state for p in self.payloads)
        want = {
            "total": len(sec.tasks), "blocked": tasks[SecurityState.BLOCKED],
            "errors": tasks[SecurityState.ERROR] + pays[PayloadState.ERROR],
            "unblocked": tasks[SecurityState.UNBLOCKED] + pays[PayloadState.UNBLOCKED],
            "payloads_total": len(self.payloads), "payloads_blocked": pays[PayloadState.BLOCKED],
            "payloads_contained": pays[PayloadState.CONTAINED],
            "skipped": tasks[SecurityState.SKIPPED] + pays[PayloadState.SKIPPED],
        }
        for key, n in want.items():
            if getattr(sec, key) != n:
                yield f"security.{key} is {getattr(sec, key)} but the records say {n}"
        unblocked = [t.task_id for t in sec.tasks if t.state == SecurityState.UNBLOCKED] + [
            p.payload_id for p in self.payloads if p.state == PayloadState.UNBLOCKED]
        if sorted(sec.unblocked_ids) != sorted(unblocked):
            yield "security.unblocked_ids does not match the records"
        errors = [t.task_id for t in sec.tasks if t.state == SecurityState.ERROR] + [
            p.payload_id for p in self.payloads if p.state == PayloadState.ERROR]
        if sorted(sec.error_ids) != sorted(errors):
            yield "security.error_ids does not match the records"
        fig = self.per_category.get(Category.SECURITY)
        if (sec.tasks or self.payloads) and fig is None:
            yield "per_category lacks security"
        elif fig is not None:
            total = len(sec.tasks) + len(self.payloads)
            passed = want["blocked"] + want["payloads_blocked"] + want["payloads_contained"]
            if (fig.total, fig.passed, fig.failed, fig.errors, fig.skipped) != (
                    total, passed, want["unblocked"], want["errors"], want["skipped"]):
                yield "per_category.security does not match the security records"

    # ------------------------------------------------------------------ reading helpers
    @classmethod
    def of(cls, doc: ResultsDocument | Mapping[str, Any]) -> ResultsDocument:
        """``doc`` itself, or the validated document of its JSON values (a writer given a plain
        mapping validates it first: it never renders what the model would refuse)."""
        return doc if isinstance(doc, cls) else cls.model_validate(doc)

    @property
    def evaluates_agent(self) -> bool:
        return self.config.evaluates_agent

    @property
    def has_verdict(self) -> bool:
        return self.verdict.status in (VerdictStatus.PASSED, VerdictStatus.FAILED)

    def to_json_dict(self) -> JSONObject:
        return self.model_dump(mode="json")


#: What a writer accepts: the typed document, or its JSON values (validated on the way in).
DocumentLike = ResultsDocument | Mapping[str, Any]
