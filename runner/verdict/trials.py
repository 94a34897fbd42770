"""The statistical verdict over repeated trials: each task's passes in K repeats against its baseline.

A task ran ``n`` trials (repeats that were not skipped) and passed ``c`` of them; its baseline says
it passed ``b`` of ``m`` trials when the baseline was measured (a version 1 baseline: ``1 of 1`` for
each listed task). The task is

* a **regression** when the pass rate now is significantly lower than the baseline's -- the
  one-sided Fisher exact test (:func:`runner.verdict.stats.fisher_lower_p`), with the family of tasks held
  at ``alpha`` together (Holm's step-down over the tasks whose test *can* reach significance at all,
  Tarone's count; see :func:`significant`) -- or when it
  passed in no trial although the baseline always passed (``c == 0`` and ``b == m``: with one trial
  either side no test can be significant, and this rule is what keeps ``--repeats 1`` exactly the
  gate it was before repeats existed);
* **flaky** when it is not a regression but its trials disagree now or in the baseline, or its pass
  rate now is lower without being significantly lower: reported, never gating;
* **quarantined** when the baseline's quarantine list names it (until its expiry date): reported with
  its figures, never gating, and left out of the pass-rate criterion; an expired entry is a warning
  and the task gates again;
* an **improvement** when it passes now and the baseline never saw it pass;
* **ok** otherwise (``not_in_baseline`` for a task without baseline that did not pass, ``not_run``
  when every trial was skipped).

The pass-rate criterion uses every trial of every non-quarantined task: the point estimate
``passes / trials`` or, with ``--threshold-on lower``, the lower end of its 95% Wilson interval.

Usage (tokens, LLM calls, latency) is summed per task and per run; a price table turns tokens into
an estimated cost; budgets and a change against the baseline's recorded usage give reasons (fail)
or warnings.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from finevo.vocabulary import TASK_CATEGORIES, Category
from runner.records import TaskResult, TaskState
from runner.verdict import stats
from runner.verdict.figures import Regression

DEFAULT_ALPHA = 0.05
ThresholdOn = Literal["point", "lower"]
#: ``holm``: the tasks' tests share alpha (family-wise); ``none``: each task is tested at alpha alone.
Correction = Literal["holm", "none"]


class TaskStatus(StrEnum):
    """What the statistical verdict says about one task."""

    OK = "ok"
    FLAKY = "flaky"
    REGRESSION = "regression"
    IMPROVEMENT = "improvement"
    QUARANTINED = "quarantined"
    NOT_IN_BASELINE = "not_in_baseline"
    NOT_RUN = "not_run"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Quarantine(_Strict):
    """One quarantined task of the baseline: reported, never gating, until ``expires``."""

    task: str = Field(min_length=1)
    reason: str = Field(min_length=1)
    expires: dt.date


class BaselineCount(_Strict):
    passes: int = Field(ge=0)
    trials: int = Field(ge=1)


class UsageFigures(_Strict):
    """Usage over some trials (a task's, or the run's)."""

    trials: int = Field(ge=0)
    tokens_in: int = Field(ge=0)
    tokens_out: int = Field(ge=0)
    llm_calls: int = Field(ge=0)
    latency_median_s: float | None = Field(default=None, ge=0)
    latency_p90_s: float | None = Field(default=None, ge=0)
    #: Estimated with the price table; None without one (or for a model it does not price).
    cost_usd: float | None = Field(default=None, ge=0)

    @property
    def tokens(self) -> int:
        return self.tokens_in + self.tokens_out


class Budgets(_Strict):
    """``--max-tokens``, ``--max-cost``, ``--usage-regression``, ``--fail-on-usage-regression``, ``--price-table``."""

    max_tokens: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0)
    usage_regression_pct: float | None = Field(default=None, ge=0)
    fail_on_usage_regression: bool = False
    #: Model name -> {"input": $ per million tokens, "output": $ per million tokens}.
    prices: dict[str, dict[Literal["input", "output"], float]] | None = None


class RateFigures(_Strict):
    """Pass figures over a group of tasks (a category, or all)."""

    tasks: int = Field(ge=0)
    trials: int = Field(ge=0)
    passes: int = Field(ge=0)
    pass_rate: float = Field(ge=0, le=1)
    wilson_low: float = Field(ge=0, le=1)
    wilson_high: float = Field(ge=0, le=1)
    #: The mean over the group's tasks of each task's pass@k / pass^k (k = the repeats).
    pass_at_k: float | None = Field(default=None, ge=0, le=1)
    pass_hat_k: float | None = Field(default=None, ge=0, le=1)


class TaskFigures(_Strict):
    task_id: str
    category: Category
    status: TaskStatus
    #: Each repeat's state, in repeat order.
    states: list[TaskState]
    trials: int = Field(ge=0)
    passes: int = Field(ge=0)
    pass_rate: float | None = Field(default=None, ge=0, le=1)
    pass_at_k: float | None = Field(default=None, ge=0, le=1)
    pass_hat_k: float | None = Field(default=None, ge=0, le=1)
    wilson_low: float = Field(ge=0, le=1)
    wilson_high: float = Field(ge=0, le=1)
    baseline_passes: int | None = Field(default=None, ge=0)
    baseline_trials: int | None = Field(default=None, ge=1)
    #: One-sided Fisher exact p-value for "lower than the baseline" (None without a baseline).
    p_value: float | None = Field(default=None, ge=0, le=1)
    usage: UsageFigures
    quarantine: Quarantine | None = None


class Statistics(_Strict):
    """The statistical part of a results document."""

    repeats: int = Field(ge=1)
    alpha: float = Field(gt=0, lt=1)
    #: How many tasks' tests shared alpha (Holm over the tasks able to reach significance, Tarone's m).
    family_tests: int = Field(default=0, ge=0)
    correction: Correction = "holm"
    threshold_on: ThresholdOn
    #: The rate the pass-rate criterion compared (point estimate or Wilson lower bound).
    gated_rate: float = Field(ge=0, le=1)
    overall: RateFigures
    per_category: dict[Category, RateFigures]
    tasks: list[TaskFigures]
    flaky: list[str]
    quarantined: list[str]
    usage: UsageFigures
    budgets: Budgets | None = None
    #: The baseline's usage per trial when it recorded one, for comparison.
    baseline_usage: UsageFigures | None = None


@dataclass
class StatPolicy:
    """What the statistical verdict compares against, and how."""

    baseline: dict[str, tuple[int, int]] = field(default_factory=dict)
    quarantine: list[Quarantine] = field(default_factory=list)
    repeats: int = 1
    alpha: float = DEFAULT_ALPHA
    threshold_on: ThresholdOn = "point"
    correction: Correction = "holm"
    budgets: Budgets | None = None
    model: str | None = None
    baseline_usage: UsageFigures | None = None
    today: dt.date | None = None

    @classmethod
    def from_config(cls, config: Mapping[str, Any], *, today: dt.date | None = None) -> StatPolicy:
        """The policy a results document's configuration describes (a version 1 baseline: 1 of 1 each)."""
        base = config.get("baseline") or {}
        counts: dict[str, tuple[int, int]] = {}
        if base.get("tasks"):
            for tid, row in base["tasks"].items():
                c = BaselineCount.model_validate(row)
                counts[tid] = (c.passes, c.trials)
        else:
            counts = {tid: (1, 1) for tid in base.get("passing_tasks") or []}
        budgets = config.get("budgets")
        usage = base.get("usage")
        return cls(baseline=counts, quarantine=[Quarantine.model_validate(q) for q in base.get("quarantine") or []],
                   repeats=int(config.get("repeats") or 1), alpha=float(config.get("alpha") or DEFAULT_ALPHA),
                   threshold_on=config.get("threshold_on") or "point",
                   correction=config.get("correction") or "holm",
                   budgets=Budgets.model_validate(budgets) if budgets else None, model=config.get("model"),
                   baseline_usage=UsageFigures.model_validate(usage) if usage else None, today=today)


@dataclass
class Analysis:
    statistics: Statistics
    regressions: list[Regression]
    improvements: list[str]
    #: Gate failures (budgets, a usage regression with --fail-on-usage-regression).
    reasons: list[str]
    warnings: list[str]


def _ran(t: TaskResult) -> bool:
    return t.state != TaskState.SKIPPED


def _cost(rows: Sequence[TaskResult], policy: StatPolicy) -> float | None:
    prices = (policy.budgets.prices if policy.budgets else None) or None
    if prices is None or policy.model is None or policy.model not in prices:
        return None
    price = prices[policy.model]
    tin = sum(r.llm.prompt_tokens for r in rows)
    tout = sum(r.llm.completion_tokens for r in rows)
    return round((tin * price.get("input", 0.0) + tout * price.get("output", 0.0)) / 1e6, 6)


def usage_of(rows: Sequence[TaskResult], policy: StatPolicy) -> UsageFigures:
    ran = [r for r in rows if _ran(r)]
    durations = [float(r.duration_s) for r in ran]
    return UsageFigures(
        trials=len(ran), tokens_in=sum(r.llm.prompt_tokens for r in ran),
        tokens_out=sum(r.llm.completion_tokens for r in ran), llm_calls=sum(r.llm.calls for r in ran),
        latency_median_s=round(stats.median(durations), 6) if durations else None,
        latency_p90_s=round(stats.percentile(durations, 90), 6) if durations else None,
        cost_usd=_cost(ran, policy))


def _rate(rows: Sequence[TaskFigures], all_trials: int, repeats: int) -> RateFigures:
    passes = sum(t.passes for t in rows)
    low, high = stats.wilson(passes, all_trials) if all_trials else (0.0, 1.0)
    at_k = [t.pass_at_k for t in rows if t.pass_at_k is not None]
    hat_k = [t.pass_hat_k for t in rows if t.pass_hat_k is not None]
    return RateFigures(tasks=len(rows), trials=all_trials, passes=passes,
                       pass_rate=round(passes / all_trials, 6) if all_trials else 0.0,
                       wilson_low=round(low, 6), wilson_high=round(high, 6),
                       pass_at_k=round(sum(at_k) / len(at_k), 6) if at_k else None,
                       pass_hat_k=round(sum(hat_k) / len(hat_k), 6) if hat_k else None)


def significant(tests: Mapping[str, tuple[float, float]], alpha: float) -> tuple[set[str], int]:
    """The tasks whose "lower than the baseline" test is significant with the family held at ``alpha``.

    ``tests``: task id -> (p-value, the smallest p-value its test could give with the table's margins
    as observed -- the exact test is conditional on them). A discrete exact test that cannot reach a
    level cannot make a false discovery at it (a task that passed every trial, now and before, can
    never be significant), so only tasks that can count (Tarone: the smallest m with at most m tasks
    able to reach alpha / m); among those Holm's step-down rejects in order of p while
    ``p < alpha / (m - rank)``. A gate with one flaky task is then tested at alpha; twenty
    deterministic tasks cost nothing.
    Returns the significant ids and m.
    """
    if not tests:
        return set(), 0
    m = 1
    while sum(1 for _, low in tests.values() if low < alpha / m) > m:
        m += 1
    candidates = sorted((p, tid) for tid, (p, low) in tests.items() if low < alpha / m)
    out: set[str] = set()
    for rank, (p, tid) in enumerate(candidates):
        if p >= alpha / (m - rank):
            break
        out.add(tid)
    return out, m


def exact_test(passes: int, trials: int, baseline: tuple[int, int] | None) -> tuple[float, float] | None:
    """(p-value, smallest p-value achievable with the same margins) of a task's test; None when it has
    nothing to test (no trial, no baseline, or a baseline that never passed)."""
    if trials == 0 or baseline is None or baseline[0] == 0:
        return None
    b_pass, b_trials = baseline
    total = passes + b_pass
    fewest = max(0, total - b_trials)  # the fewest passes now these margins allow
    return (stats.fisher_lower_p(passes, trials, b_pass, b_trials),
            stats.fisher_lower_p(fewest, trials, total - fewest, b_trials))


def classify(passes: int, trials: int, baseline: tuple[int, int] | None,
             is_significant: bool) -> tuple[TaskStatus, float | None]:
    """A task's status (before quarantine) and its one-sided p-value against the baseline."""
    if trials == 0:
        return TaskStatus.NOT_RUN, None
    if baseline is None:
        return (TaskStatus.IMPROVEMENT if passes else TaskStatus.NOT_IN_BASELINE), None
    b_pass, b_trials = baseline
    p = stats.fisher_lower_p(passes, trials, b_pass, b_trials)
    if b_pass == 0:
        return (TaskStatus.IMPROVEMENT if passes else TaskStatus.OK), p
    if is_significant or (passes == 0 and b_pass == b_trials):
        return TaskStatus.REGRESSION, p
    mixed_now = 0 < passes < trials
    mixed_before = 0 < b_pass < b_trials
    if mixed_now or mixed_before or passes * b_trials < b_pass * trials:
        return TaskStatus.FLAKY, p
    return TaskStatus.OK, p


def _active_quarantine(policy: StatPolicy) -> tuple[dict[str, Quarantine], list[str]]:
    """The quarantine entries still in force, and a warning for each expired one."""
    today = policy.today or dt.datetime.now(dt.UTC).date()
    active: dict[str, Quarantine] = {}
    warnings: list[str] = []
    for q in policy.quarantine:
        if q.expires < today:
            warnings.append(f"quarantine of {q.task} expired on {q.expires.isoformat()} ({q.reason}): "
                            "it gates again; renew or remove the entry")
        else:
            active[q.task] = q
    return active, warnings


def _rejected(by_task: dict[str, list[TaskResult]], policy: StatPolicy,
              active: dict[str, Quarantine]) -> tuple[set[str], int]:
    """The tasks significantly worse than their baseline, and how many tests the family holds."""
    tests: dict[str, tuple[float, float]] = {}
    for tid, rows in by_task.items():
        ran_rows = [r for r in rows if _ran(r)]
        c, n = sum(1 for r in ran_rows if r.state == TaskState.PASS), len(ran_rows)
        test = exact_test(c, n, policy.baseline.get(tid))
        if test is not None and tid not in active:
            tests[tid] = test
    if policy.correction == "none":
        return {tid for tid, (p, _) in tests.items() if p < policy.alpha}, len(tests)
    return significant(tests, policy.alpha)


def _gated_rate(overall: RateFigures, policy: StatPolicy) -> float:
    if not overall.trials:  # every task quarantined: nothing gates on the pass rate
        return 1.0
    if policy.threshold_on == "lower":
        return stats.wilson(overall.passes, overall.trials)[0]
    return overall.passes / overall.trials


def analyse(tasks: Sequence[TaskResult], policy: StatPolicy) -> Analysis:
    """The statistical verdict of the task trials ``tasks`` (every repeat's record, in any order)."""
    by_task: dict[str, list[TaskResult]] = {}
    for t in sorted(tasks, key=lambda r: r.repeat):
        by_task.setdefault(t.task_id, []).append(t)
    active, warnings = _active_quarantine(policy)
    k = max(1, policy.repeats)
    rejected, family = _rejected(by_task, policy, active)
    figures: list[TaskFigures] = []
    regressions: list[Regression] = []
    improvements: list[str] = []
    for tid, rows in by_task.items():
        ran = [r for r in rows if _ran(r)]
        n, c = len(ran), sum(1 for r in ran if r.state == TaskState.PASS)
        base = policy.baseline.get(tid)
        status, p = classify(c, n, base, tid in rejected)
        quarantine = active.get(tid)
        if quarantine is not None and status != TaskStatus.NOT_RUN:
            status = TaskStatus.QUARANTINED
        low, high = stats.wilson(c, n)
        kk = min(k, n)
        figures.append(TaskFigures(
            task_id=tid, category=rows[0].category, status=status, states=[r.state for r in rows],
            trials=n, passes=c, pass_rate=round(c / n, 6) if n else None,
            pass_at_k=round(stats.pass_at_k(n, c, kk), 6) if n else None,
            pass_hat_k=round(stats.pass_hat_k(n, c, kk), 6) if n else None,
            wilson_low=round(low, 6), wilson_high=round(high, 6),
            baseline_passes=base[0] if base else None, baseline_trials=base[1] if base else None,
            p_value=round(p, 6) if p is not None else None, usage=usage_of(rows, policy), quarantine=quarantine))
        if status == TaskStatus.REGRESSION:
            first = next(r for r in ran if r.state != TaskState.PASS)
            state: Literal[TaskState.FAIL, TaskState.ERROR] = (  # a ran task that did not pass: fail or error
                TaskState.ERROR if first.state == TaskState.ERROR else TaskState.FAIL)
            regressions.append(Regression(task_id=tid, state=state, reason=first.reason, passes=c, trials=n,
                                          p_value=round(p, 6) if p is not None else None))
        elif status == TaskStatus.IMPROVEMENT:
            improvements.append(tid)
    gated_rows = [r for r in tasks if r.task_id not in active]
    gated = [f for f in figures if f.status != TaskStatus.QUARANTINED]
    overall = _rate(gated, len(gated_rows), k)
    gated_rate = _gated_rate(overall, policy)
    per_category: dict[Category, RateFigures] = {}
    for cat in TASK_CATEGORIES:
        rows_c = [f for f in figures if f.category == cat]
        if rows_c:
            per_category[cat] = _rate(rows_c, sum(1 for r in tasks if r.category == cat), k)
    usage = usage_of(list(tasks), policy)
    reasons = _budget_reasons(usage, policy, warnings)
    return Analysis(
        statistics=Statistics(
            repeats=k, alpha=policy.alpha, family_tests=family, correction=policy.correction,
            threshold_on=policy.threshold_on,
            gated_rate=gated_rate,
            overall=overall, per_category=per_category, tasks=figures,
            flaky=[f.task_id for f in figures if f.status == TaskStatus.FLAKY],
            quarantined=[f.task_id for f in figures if f.status == TaskStatus.QUARANTINED],
            usage=usage, budgets=policy.budgets, baseline_usage=policy.baseline_usage),
        regressions=regressions, improvements=improvements, reasons=reasons, warnings=warnings)


def _budget_reasons(usage: UsageFigures, policy: StatPolicy, warnings: list[str]) -> list[str]:
    b = policy.budgets
    reasons: list[str] = []
    if b is None:
        return reasons
    if b.max_tokens is not None and usage.tokens > b.max_tokens:
        reasons.append(f"token budget exceeded: {usage.tokens} tokens used, --max-tokens {b.max_tokens}")
    if b.max_cost is not None:
        if usage.cost_usd is None:
            warnings.append("--max-cost is set but no cost could be estimated "
                            f"(no --price-table entry for model {policy.model!r})")
        elif usage.cost_usd > b.max_cost:
            reasons.append(f"cost budget exceeded: ${usage.cost_usd:.4f} estimated, --max-cost ${b.max_cost:.4f}")
    base = policy.baseline_usage
    if b.usage_regression_pct is not None and base is not None and base.trials and usage.trials:
        changes: list[str] = []
        now_tok, base_tok = usage.tokens / usage.trials, base.tokens / base.trials
        if base_tok > 0 and (now_tok - base_tok) / base_tok * 100 > b.usage_regression_pct:
            changes.append(f"tokens per trial {now_tok:.0f} vs baseline {base_tok:.0f} "
                           f"(+{(now_tok - base_tok) / base_tok:.0%})")
        if usage.latency_median_s and base.latency_median_s and (
                (usage.latency_median_s - base.latency_median_s) / base.latency_median_s * 100
                > b.usage_regression_pct):
            changes.append(f"median latency {usage.latency_median_s:.2f}s vs baseline {base.latency_median_s:.2f}s")
        for change in changes:
            text = f"usage regression beyond {b.usage_regression_pct:g}%: {change}"
            (reasons if b.fail_on_usage_regression else warnings).append(text)
    return reasons
