"""Repeats and the statistical verdict end to end: the real CLI, the agent and a scripted
OpenAI-compatible server over real HTTP that answers a chosen task right with a chosen probability.

One task per run and no refinement, so each repeat asks the server exactly once for that task and
the seeded draws decide each repeat's outcome.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from runner.cli import main
from runner.reports import document
from tests.support.scripted_llm import ChanceModel, RecordedRequest, ScriptedLLMServer

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
REFERENCE = BENCH / "reference"
TASK = "calc_002"
_TASK_LINE = re.compile(r"^Task: (?P<query>.+)$", re.MULTILINE)
#: No hidden worlds: the statistics, quarantine, budgets, replay and shards of repeats do not depend on
#: them (a wrong reply here has no code at all), and judging each repeat in the default three worlds was
#: most of every run (tests/runner/test_repeats.py does the same; worlds are test_worlds.py's).
NO_WORLDS = ("--worlds", "0")


def _by_query() -> dict[str, str]:
    rows = [json.loads(x) for x in (BENCH / "tasks.jsonl").read_text(encoding="utf-8").splitlines() if x.strip()]
    return {r["query"]: r["id"] for r in rows}


BY_QUERY = _by_query()


def task_of(request: RecordedRequest) -> str | None:
    for message in request.messages:
        if message.get("role") == "user":
            match = _TASK_LINE.search(str(message.get("content") or ""))
            if match:
                return BY_QUERY.get(match.group("query").strip())
    return None


def correct(task_id: str) -> str | None:
    path = REFERENCE / f"{task_id}.py"
    if not path.is_file():
        return None
    return f"Here is the tool.\n\n```python\n{path.read_text(encoding='utf-8').rstrip()}\n```\n"


def _baseline(tmp_path: Path, **extra: Any) -> Path:
    path = tmp_path / "baseline.json"
    data = {"version": 2, "tasks": {TASK: {"passes": 7, "trials": 10}}, "target_pass_rate": 0.0, **extra}
    path.write_text(json.dumps(data))
    return path


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: ChanceModel, run_id: str, *extra: str,
         only: str = TASK) -> tuple[int, Any]:
    with ScriptedLLMServer(handler=model) as srv:
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "GITHUB_STEP_SUMMARY", "GITHUB_OUTPUT"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("FINEVO_LLM_BASE_URL", srv.base_url)
        monkeypatch.setenv("FINEVO_LLM_API_KEY", "k-test")
        monkeypatch.setenv("NO_COLOR", "1")
        code = main(["run", "--llm", "live", "--only", only, "--no-payloads", "--no-self-check",
                     "--security-tasks", "none", "--max-refinements", "0", "--out", str(tmp_path / "out"),
                     "--run-id", run_id, "--quiet", *NO_WORLDS, *extra])
    return code, document.load(tmp_path / "out" / run_id / "results.json")


def _figures(doc: Any, task: str = TASK) -> Any:
    assert doc.statistics is not None
    return next(t for t in doc.statistics.tasks if t.task_id == task)


@pytest.mark.slow
def test_a_70_percent_task_passing_3_of_5_against_7_of_10_is_flaky_not_a_regression(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ChanceModel(task_of, correct, {TASK: 0.7}, seed=ChanceModel.seed_for(0.7, 5, 3))
    code, doc = _run(tmp_path, monkeypatch, model, "k5", "--repeats", "5", "--baseline", str(_baseline(tmp_path)))
    assert model.draws[TASK].count(True) == 3 and len(model.draws[TASK]) == 5
    fig = _figures(doc)
    assert (fig.passes, fig.trials) == (3, 5)
    assert fig.status == "flaky" and fig.p_value is not None and fig.p_value > 0.05
    assert doc.regressions == [] and doc.statistics.flaky == [TASK]
    assert code == 0, doc.verdict.reasons
    assert [t.repeat for t in doc.tasks] == [1, 2, 3, 4, 5]


@pytest.mark.slow
def test_a_task_passing_0_of_10_against_7_of_10_is_a_regression(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    model = ChanceModel(task_of, correct, {TASK: 0.0}, seed=1)
    code, doc = _run(tmp_path, monkeypatch, model, "k10", "--repeats", "10", "--baseline",
                     str(_baseline(tmp_path)))
    fig = _figures(doc)
    assert (fig.passes, fig.trials) == (0, 10)
    assert fig.status == "regression" and fig.p_value is not None and fig.p_value < 0.05
    assert [r.task_id for r in doc.regressions] == [TASK] and doc.regressions[0].trials == 10
    assert code == 1


@pytest.mark.slow
def test_a_quarantined_task_never_fails_the_gate_and_an_expired_one_does(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {"task": TASK, "reason": "provider outage", "expires": "2999-01-01"}
    baseline = _baseline(tmp_path, quarantine=[entry])
    code, doc = _run(tmp_path, monkeypatch, ChanceModel(task_of, correct, {TASK: 0.0}), "q", "--repeats", "3",
                     "--baseline", str(baseline), "--min-pass-rate", "0.9")
    assert code == 0, doc.verdict.reasons
    assert doc.statistics.quarantined == [TASK] and doc.regressions == []
    expired = _baseline(tmp_path, quarantine=[{**entry, "expires": "2001-01-01"}])
    # 0 of 6 against 7 of 10 is significant (p = 84/8008); 0 of 3 would not be (p = 20/286).
    code, doc = _run(tmp_path, monkeypatch, ChanceModel(task_of, correct, {TASK: 0.0}), "q-old", "--repeats", "6",
                     "--baseline", str(expired))
    assert code == 1 and [r.task_id for r in doc.regressions] == [TASK]
    assert any("quarantine of calc_002 expired on 2001-01-01" in w for w in doc.verdict.warnings)


@pytest.mark.slow
def test_budgets_fail_the_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"gpt-4o-mini": {"input": 1000.0, "output": 1000.0}}))
    model = ChanceModel(task_of, correct)
    code, doc = _run(tmp_path, monkeypatch, model, "tok", "--repeats", "2", "--baseline", str(_baseline(tmp_path)),
                     "--max-tokens", "10")
    assert code == 1 and any("token budget exceeded" in r for r in doc.verdict.reasons)
    used = doc.statistics.usage
    assert used.tokens_in + used.tokens_out > 10 and used.llm_calls == 2
    code, doc = _run(tmp_path, monkeypatch, model, "cost", "--baseline", str(_baseline(tmp_path)),
                     "--price-table", str(prices), "--max-cost", "0.01", "--model", "gpt-4o-mini")
    assert doc.statistics.usage.cost_usd is not None and doc.statistics.usage.cost_usd > 0.01
    assert code == 1 and any("cost budget exceeded" in r for r in doc.verdict.reasons)
    code, doc = _run(tmp_path, monkeypatch, model, "roomy", "--baseline", str(_baseline(tmp_path)),
                     "--price-table", str(prices), "--max-cost", "1000", "--max-tokens", "10000000",
                     "--model", "gpt-4o-mini")
    assert code == 0, doc.verdict.reasons


@pytest.mark.slow
def test_recorded_repeats_replay_repeat_by_repeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = ChanceModel(task_of, correct, {TASK: 0.5}, seed=ChanceModel.seed_for(0.5, 4, 2))
    cassette = tmp_path / "cassette.jsonl"
    _, live = _run(tmp_path, monkeypatch, model, "rec", "--repeats", "4", "--record", str(cassette),
                   "--baseline", str(_baseline(tmp_path)))
    states = [t.state for t in live.tasks]
    assert sorted(states) == ["fail", "fail", "pass", "pass"]
    monkeypatch.delenv("FINEVO_LLM_BASE_URL")
    monkeypatch.delenv("FINEVO_LLM_API_KEY")
    code = main(["run", "--llm", f"replay:{cassette}", "--only", TASK, "--no-payloads", "--no-self-check",
                 "--security-tasks", "none", "--max-refinements", "0", "--out", str(tmp_path / "out"),
                 "--run-id", "rep", "--quiet", "--repeats", "4", "--baseline", str(_baseline(tmp_path)),
          *NO_WORLDS])
    replay = document.load(tmp_path / "out" / "rep" / "results.json")
    assert [t.state for t in replay.tasks] == states  # each repeat gets its own recorded reply, in order
    assert code == (1 if live.regressions else 0)


@pytest.mark.slow
def test_predictions_answer_per_repeat(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    preds = tmp_path / "predictions.jsonl"
    right = correct(TASK)
    preds.write_text("\n".join(json.dumps(x) for x in (
        {"task_id": TASK, "repeat": 1, "content": right},
        {"task_id": TASK, "repeat": 2, "content": ChanceModel.WRONG},
        {"task_id": TASK, "content": right})) + "\n")
    main(["run", "--llm", f"predictions:{preds}", "--only", TASK, "--no-payloads", "--no-self-check",
          "--security-tasks", "none", "--max-refinements", "0", "--out", str(tmp_path / "out"),
          "--run-id", "p", "--quiet", "--repeats", "3", "--baseline", str(_baseline(tmp_path)),
          *NO_WORLDS])
    doc = document.load(tmp_path / "out" / "p" / "results.json")
    assert [(t.repeat, t.state.value) for t in doc.tasks] == [(1, "pass"), (2, "fail"), (3, "pass")]


@pytest.mark.slow
def test_shards_times_repeats_over_http_merge_to_the_verdict_of_one_process(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    only = "fetch_001,calc_002,calc_007"
    # calc_002 broken: 0 of 6 against 7 of 10 (p = 0.0105, under 0.05 / 2: calc_007's test could reach
    # significance too, so two tasks share alpha); calc_007 4 of 10 before, always now: flaky.
    chances = {"calc_002": 0.0, "calc_007": 1.0, "fetch_001": 1.0}
    baseline = tmp_path / "b.json"
    baseline.write_text(json.dumps({"version": 2, "target_pass_rate": 0.5, "tasks": {
        "calc_002": {"passes": 7, "trials": 10}, "fetch_001": {"passes": 10, "trials": 10},
        "calc_007": {"passes": 4, "trials": 10}}}))
    one_code, one = _run(tmp_path, monkeypatch, ChanceModel(task_of, correct, chances), "one", "--repeats", "6",
                         "--baseline", str(baseline), only=only)
    for k in (1, 2):
        _run(tmp_path, monkeypatch, ChanceModel(task_of, correct, chances), f"s{k}", "--repeats", "6",
             "--shard", f"{k}/2", "--baseline", str(baseline), only=only)
    out = tmp_path / "out"
    code = main(["merge", str(out / "s2" / "results.json"), str(out / "s1" / "results.json"), "--out",
                 str(tmp_path / "merged"), "--run-id", "m"])
    merged = document.load(tmp_path / "merged" / "m" / "results.json")
    assert code == one_code == 1
    assert [r.task_id for r in merged.regressions] == [r.task_id for r in one.regressions] == ["calc_002"]
    assert merged.verdict.reasons == one.verdict.reasons
    assert ([(f.task_id, f.status, f.passes, f.trials, f.p_value) for f in merged.statistics.tasks]
            == [(f.task_id, f.status, f.passes, f.trials, f.p_value) for f in one.statistics.tasks])
    assert merged.improvements == one.improvements
    assert merged.statistics.flaky == one.statistics.flaky == ["calc_007"]
