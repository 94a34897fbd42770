"""The statistical part of every report: repeats, intervals, flaky and quarantined tasks, usage, budgets.

Shown when it says something a single-sample run would not: more than one repeat, a flaky or
quarantined task, or budgets / a price table given. A plain ``--repeats 1`` run's reports are
therefore exactly what they were before repeats existed. Every id and reason goes through the
escaping layer of its medium (:mod:`runner.reports.escape`).
"""

from __future__ import annotations

from runner.reports.escape import log_text, md_inline, xml_text
from runner.reports.model import ResultsDocument
from runner.verdict.trials import Statistics, TaskFigures, TaskStatus, UsageFigures

_NOTED = (TaskStatus.FLAKY, TaskStatus.QUARANTINED)


def shown(doc: ResultsDocument) -> Statistics | None:
    st = doc.statistics
    if st is None:
        return None
    if st.repeats > 1 or st.flaky or st.quarantined or st.budgets is not None:
        return st
    return None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _secs(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _cost(u: UsageFigures) -> str:
    return "-" if u.cost_usd is None else f"${u.cost_usd:.4f}"


def _base(f: TaskFigures) -> str:
    return "-" if f.baseline_trials is None else f"{f.baseline_passes}/{f.baseline_trials}"


def usage_line(u: UsageFigures) -> str:
    return (f"{u.tokens_in} tokens in, {u.tokens_out} out, {u.llm_calls} LLM call(s), latency median "
            f"{_secs(u.latency_median_s)}s, p90 {_secs(u.latency_p90_s)}s, cost {_cost(u)}")


def markdown_lines(doc: ResultsDocument) -> list[str]:
    st = shown(doc)
    if st is None:
        return []
    o = st.overall
    lines = ["## Repeats and statistics", "",
             f"{st.repeats} repeat(s); regressions by a one-sided Fisher exact test at alpha {st.alpha:g} "
             + (f"shared by {st.family_tests} testable task(s) (Holm)" if st.correction == "holm"
                else "per task") +
             f" (or no pass where the baseline always passed); threshold on the {st.threshold_on} estimate.", "",
             f"Overall: {o.passes}/{o.trials} trials pass ({_pct(o.pass_rate)}, 95% Wilson "
             f"{_pct(o.wilson_low)}-{_pct(o.wilson_high)}), pass@{st.repeats} {_pct(o.pass_at_k)}, "
             f"pass^{st.repeats} {_pct(o.pass_hat_k)}.", ""]
    if st.flaky:
        lines += [f"**Flaky (reported, not gating):** {md_inline(', '.join(st.flaky), 2000)}", ""]
    if st.quarantined:
        lines += [f"**Quarantined (reported, never gating):** {md_inline(', '.join(st.quarantined), 2000)}", ""]
    rows = []
    for f in st.tasks:
        rows.append("| " + " | ".join([
            md_inline(f.task_id, 80), f.status.value, f"{f.passes}/{f.trials}",
            f"{_pct(f.wilson_low)}-{_pct(f.wilson_high)}", _pct(f.pass_at_k), _pct(f.pass_hat_k), _base(f),
            "-" if f.p_value is None else f"{f.p_value:.3g}", str(f.usage.tokens), _secs(f.usage.latency_median_s),
            _secs(f.usage.latency_p90_s)]) + " |")
    lines += ["| task | status | passes | 95% interval | pass@k | pass^k | baseline | p | tokens | "
              "median s | p90 s |", "|---|---|---|---|---|---|---|---|---|---|---|", *rows, "",
              f"Usage: {usage_line(st.usage)}."]
    b = st.baseline_usage
    if b is not None and b.trials:
        lines.append(f"Baseline usage per trial: {b.tokens / b.trials:.0f} tokens, median latency "
                     f"{_secs(b.latency_median_s)}s.")
    if st.budgets is not None:
        bud = st.budgets
        lines.append(f"Budgets: max tokens {bud.max_tokens if bud.max_tokens is not None else '-'}, max cost "
                     f"{'-' if bud.max_cost is None else f'${bud.max_cost:g}'}, usage regression "
                     f"{'-' if bud.usage_regression_pct is None else f'{bud.usage_regression_pct:g}%'}"
                     f"{' (fails the gate)' if bud.fail_on_usage_regression else ''}.")
    return lines


def console_lines(doc: ResultsDocument) -> list[str]:
    st = shown(doc)
    if st is None:
        return []
    o = st.overall
    out = [f"repeats {st.repeats}: {o.passes}/{o.trials} trials pass, 95% interval "
           f"{_pct(o.wilson_low)}-{_pct(o.wilson_high)}, pass@{st.repeats} {_pct(o.pass_at_k)}, "
           f"pass^{st.repeats} {_pct(o.pass_hat_k)}"]
    for f in st.tasks:
        if f.status in _NOTED:
            out.append(f"  {f.status.value}: {log_text(f.task_id, 100)} passed {f.passes}/{f.trials} "
                       f"(baseline {_base(f)}, p={'-' if f.p_value is None else f'{f.p_value:.3g}'})")
    out.append(f"usage: {usage_line(st.usage)}")
    return out


def junit_properties(doc: ResultsDocument) -> dict[str, str]:
    st = shown(doc)
    if st is None:
        return {}
    u = st.usage
    values = {"repeats": st.repeats, "alpha": st.alpha, "threshold_on": st.threshold_on,
              "gated_pass_rate": round(st.gated_rate, 6), "wilson_low": st.overall.wilson_low,
              "wilson_high": st.overall.wilson_high, "flaky": ",".join(st.flaky),
              "quarantined": ",".join(st.quarantined), "tokens_in": u.tokens_in, "tokens_out": u.tokens_out,
              "llm_calls": u.llm_calls, "latency_median_s": u.latency_median_s, "latency_p90_s": u.latency_p90_s,
              "cost_usd": u.cost_usd}
    return {k: xml_text("" if v is None else str(v), 2000) for k, v in values.items()}


def junit_notes(doc: ResultsDocument) -> dict[str, str]:
    """Task id -> why its non-passing trials are not failures (flaky / quarantined), for JUnit."""
    st = shown(doc)
    if st is None:
        return {}
    return {f.task_id: (f"{f.status.value}: passed {f.passes}/{f.trials} (baseline {_base(f)}); "
                        "reported, not gating") for f in st.tasks if f.status in _NOTED}


def case_name(task_id: str, repeat: int, repeats: int) -> str:
    return task_id if repeats <= 1 else f"{task_id} [repeat {repeat}/{repeats}]"
