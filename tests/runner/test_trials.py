"""The statistical verdict's rules on records, without the gate."""

from __future__ import annotations

import datetime as dt

import pytest

from finevo.outcome import LLMUsage
from runner.records import TaskResult
from runner.verdict import stats
from runner.verdict.trials import (
    Budgets,
    Quarantine,
    StatPolicy,
    TaskStatus,
    UsageFigures,
    analyse,
    exact_test,
    significant,
)


def _trials(task: str, states: str, *, tokens: int = 0, seconds: float = 1.0) -> list[TaskResult]:
    """One record per character: p = pass, f = fail, e = error, s = skipped."""
    names = {"p": "pass", "f": "fail", "e": "error", "s": "skipped"}
    return [TaskResult(task, "calculation", "q", names[c], f"{task} r{i + 1}", repeat=i + 1,
                       llm=LLMUsage(calls=1, prompt_tokens=tokens, completion_tokens=tokens // 2),
                       duration_s=seconds * (i + 1)) for i, c in enumerate(states)]


def _status(result, task: str) -> TaskStatus:  # type: ignore[no-untyped-def]
    return next(f.status for f in result.statistics.tasks if f.task_id == task)


def test_significance_is_shared_only_by_tasks_that_can_reach_it() -> None:
    # Twenty tasks that passed everything now and before cannot be significant: they do not dilute alpha.
    sure = {f"d{i}": exact_test(5, 5, (10, 10)) for i in range(20)}
    assert all(t is not None and t[1] == 1.0 for t in sure.values())
    dropped = exact_test(0, 10, (7, 10))
    assert dropped is not None and dropped[0] == pytest.approx(286 / 184756)
    rejected, m = significant({**sure, "x": dropped}, 0.05)  # type: ignore[dict-item]
    assert rejected == {"x"} and m == 1
    # Holm: two tasks able to reach significance share alpha (0.05 / 2 for the smaller p).
    p_small = stats.fisher_lower_p(0, 5, 6, 10)  # 0.042: below 0.05, above 0.025
    twin = exact_test(0, 5, (6, 10))
    assert twin is not None and 0.025 < p_small < 0.05
    assert significant({"a": twin, "b": twin}, 0.05)[0] == set()
    assert significant({"a": twin}, 0.05)[0] == {"a"}


def test_rules_per_task() -> None:
    tasks = (_trials("always", "ppppp") + _trials("gone", "fffff") + _trials("wobbly", "pfppf")
             + _trials("new", "ppfpp") + _trials("never", "fffff") + _trials("unrun", "sssss"))
    policy = StatPolicy(baseline={"always": (10, 10), "gone": (10, 10), "wobbly": (9, 10), "never": (0, 5),
                                  "unrun": (3, 3)}, repeats=5)
    result = analyse(tasks, policy)
    want = {"always": TaskStatus.OK, "gone": TaskStatus.REGRESSION, "wobbly": TaskStatus.FLAKY,
            "new": TaskStatus.IMPROVEMENT, "never": TaskStatus.OK, "unrun": TaskStatus.NOT_RUN}
    assert {f.task_id: f.status for f in result.statistics.tasks} == want
    assert [r.task_id for r in result.regressions] == ["gone"] and result.regressions[0].reason == "gone r1"
    assert result.improvements == ["new"] and result.statistics.flaky == ["wobbly"]
    wobbly = next(f for f in result.statistics.tasks if f.task_id == "wobbly")
    assert (wobbly.passes, wobbly.trials, wobbly.states[1]) == (3, 5, "fail")
    assert wobbly.pass_at_k == 1.0 and wobbly.pass_hat_k == 0.0
    assert (wobbly.wilson_low, wobbly.wilson_high) == pytest.approx(stats.wilson(3, 5), abs=1e-6)


def test_quarantine_and_its_expiry() -> None:
    tasks = _trials("q", "fff") + _trials("ok", "ppp")
    entry = Quarantine(task="q", reason="upstream outage", expires=dt.date(2030, 1, 1))
    live = analyse(tasks, StatPolicy(baseline={"q": (3, 3), "ok": (3, 3)}, quarantine=[entry], repeats=3,
                                     today=dt.date(2029, 12, 31)))
    assert _status(live, "q") == TaskStatus.QUARANTINED and live.regressions == [] and live.warnings == []
    assert live.statistics.gated_rate == 1.0  # the quarantined task is left out of the pass rate
    old = analyse(tasks, StatPolicy(baseline={"q": (3, 3), "ok": (3, 3)}, quarantine=[entry], repeats=3,
                                    today=dt.date(2030, 1, 2)))
    assert _status(old, "q") == TaskStatus.REGRESSION
    assert old.warnings and "expired on 2030-01-01" in old.warnings[0]
    assert old.statistics.gated_rate == pytest.approx(0.5)


def test_threshold_on_the_lower_bound() -> None:
    tasks = _trials("a", "ppppp") + _trials("b", "ppppf")
    point = analyse(tasks, StatPolicy(repeats=5))
    lower = analyse(tasks, StatPolicy(repeats=5, threshold_on="lower"))
    assert point.statistics.gated_rate == pytest.approx(0.9)
    assert lower.statistics.gated_rate == pytest.approx(stats.wilson(9, 10)[0])
    assert lower.statistics.gated_rate < 0.9


def test_usage_budgets_and_usage_regression() -> None:
    tasks = _trials("a", "pp", tokens=1000) + _trials("b", "pp", tokens=1000)
    prices = {"m": {"input": 2.0, "output": 10.0}}
    result = analyse(tasks, StatPolicy(model="m", budgets=Budgets(max_tokens=5000, max_cost=0.01, prices=prices)))
    usage = result.statistics.usage
    assert (usage.tokens_in, usage.tokens_out, usage.llm_calls) == (4000, 2000, 4)
    assert usage.cost_usd == pytest.approx((4000 * 2.0 + 2000 * 10.0) / 1e6)
    assert usage.latency_median_s == pytest.approx(1.5) and usage.latency_p90_s == pytest.approx(2.0)
    assert any("token budget exceeded: 6000 tokens" in r for r in result.reasons)
    assert any("cost budget exceeded" in r for r in result.reasons)
    base = UsageFigures(trials=4, tokens_in=2000, tokens_out=1000, llm_calls=4, latency_median_s=1.5)
    warn = analyse(tasks, StatPolicy(budgets=Budgets(usage_regression_pct=50), baseline_usage=base))
    assert warn.reasons == [] and any("tokens per trial 1500 vs baseline 750" in w for w in warn.warnings)
    fail = analyse(tasks, StatPolicy(budgets=Budgets(usage_regression_pct=50, fail_on_usage_regression=True),
                                     baseline_usage=base))
    assert any("usage regression beyond 50%" in r for r in fail.reasons)
    within = analyse(tasks, StatPolicy(budgets=Budgets(usage_regression_pct=150), baseline_usage=base))
    assert within.reasons == [] and not any("usage regression" in w for w in within.warnings)
    unpriced = analyse(tasks, StatPolicy(model="other", budgets=Budgets(max_cost=1.0, prices=prices)))
    assert unpriced.statistics.usage.cost_usd is None and any("no cost could be estimated" in w
                                                                for w in unpriced.warnings)
