"""Repeats through the gate with the fake agent: K=1 is today's gate exactly, every repeat starts
from an empty registry, and shards x repeats merge to the verdict of one process."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from runner.cli import build_parser, main
from runner.cli.run import cmd_run
from runner.execution.session import Session, SessionSpec
from runner.records import TaskResult, TaskState
from runner.reports import document
from runner.verdict.decide import VerdictOptions, compute_verdict
from tests.runner.fakes import DATA, TASKS, make_factory

ONLY = "fetch_001,fetch_002,fetch_003,calc_001,calc_002,calc_003,comp_001"


def _args(tmp_path: Path, security_file: Path, baseline_file: Path, run_id: str, *extra: str) -> list[str]:
    return ["run", "--llm", "replay:x.jsonl", "--tasks", str(TASKS), "--security-tasks", str(security_file),
            "--baseline", str(baseline_file), "--no-payloads", "--data", str(DATA), "--out", str(tmp_path / "out"),
            "--run-id", run_id, "--only", ONLY, "--quiet",
            # no hidden worlds: repeats, their merge and their statistics do not depend on them, and
            # judging every fake task of every repeat in the default three was most of each run
            "--worlds", "0", *extra]


def _by_repeat(per_repeat: dict[int, dict[str, str]], log: list[SessionSpec] | None = None) -> Any:
    """A fake factory whose behaviours depend on the repeat (read from the session's registry dir)."""
    def factory(spec: SessionSpec) -> Session:
        if log is not None:
            log.append(spec)
        name = Path(spec.registry_dir).name
        repeat = int(name.removeprefix("registry-r")) if name.startswith("registry-r") else 1
        inner = make_factory(per_repeat.get(repeat, {}))
        return inner(spec)  # type: ignore[no-any-return]
    return factory


def _load(tmp_path: Path, run_id: str) -> Any:
    return document.load(tmp_path / "out" / run_id / "results.json")


@pytest.mark.slow
def test_repeats_1_is_the_gate_without_the_flag(tmp_path, security_file, baseline_file) -> None:
    behaviours = {"fetch_002": "wrong", "calc_001": "pass", "calc_003": "error"}
    parser = build_parser()
    a = cmd_run(parser.parse_args(_args(tmp_path, security_file, baseline_file, "plain")),
                factory=make_factory(behaviours))
    b = cmd_run(parser.parse_args(_args(tmp_path, security_file, baseline_file, "k1", "--repeats", "1")),
                factory=make_factory(behaviours))
    plain, k1 = _load(tmp_path, "plain"), _load(tmp_path, "k1")
    assert a == b == 1
    assert plain.verdict.model_dump() == k1.verdict.model_dump()
    assert [(t.task_id, t.state, t.reason) for t in plain.tasks] == [(t.task_id, t.state, t.reason) for t in k1.tasks]
    assert [r.model_dump() for r in plain.regressions] == [r.model_dump() for r in k1.regressions]
    assert [r.task_id for r in plain.regressions] == ["fetch_002"]
    assert plain.summary == k1.summary and plain.improvements == k1.improvements


def test_with_one_repeat_the_statistical_verdict_is_the_old_rule(tmp_path) -> None:
    """Any states against any version 1 baseline: regressions are exactly the baseline tasks that ran
    and did not pass, improvements the passing tasks outside it, the pass rate passed / total."""
    rng = random.Random(14)
    ids = [f"calc_{i:03d}" for i in range(1, 13)]
    for _ in range(300):
        states = [rng.choice(list(TaskState)) for _ in ids]
        tasks = [TaskResult(t, "calculation", "q", s, f"why {t}") for t, s in zip(ids, states, strict=True)]
        baseline = rng.sample(ids, rng.randint(0, len(ids)))
        v = compute_verdict(tasks, [], [], VerdictOptions(baseline_passing=baseline, min_pass_rate=rng.random()))
        ran = {t.task_id: t for t in tasks if t.state != TaskState.SKIPPED}
        old = [{"task_id": b, "state": ran[b].state, "reason": ran[b].reason}
               for b in baseline if b in ran and ran[b].state != TaskState.PASS]
        assert sorted((r.task_id, r.state, r.reason) for r in v.regressions) == sorted(
            (r["task_id"], r["state"], r["reason"]) for r in old)
        assert v.improvements == [t.task_id for t in tasks if t.state == TaskState.PASS and t.task_id not in baseline]
        passed = sum(1 for s in states if s == TaskState.PASS)
        assert v.pass_rate == round(passed / len(ids), 6)
        assert (v.statistics is not None and v.statistics.flaky == [])
        old_fail = bool(old) or passed / len(ids) < v.min_pass_rate
        assert (v.verdict.exit_code == 1) == old_fail


#: Labels of the lanes' sessions (``judge``, ``judge-2``, ... -- a sandbox per core -- and ``payloads``).
LANE_LABELS = ("judge", "payloads")


@pytest.mark.slow
def test_each_repeat_starts_from_an_empty_registry_of_its_own(tmp_path, security_file, baseline_file) -> None:
    log: list[SessionSpec] = []
    code = cmd_run(build_parser().parse_args(_args(tmp_path, security_file, baseline_file, "r3", "--repeats", "3")),
                   factory=_by_repeat({}, log))
    doc = _load(tmp_path, "r3")
    # (with --jobs > 1 a judging and a payload lane open sessions too: sandboxes, not registries of the run)
    dirs = [Path(s.registry_dir).name for s in log
            if (s.provider is None or "registry-r" in str(s.registry_dir))
            and s.label.partition("-")[0] not in LANE_LABELS]
    assert dirs[:3] == ["registry", "registry-r2", "registry-r3"]
    n = len(ONLY.split(","))
    assert [t.repeat for t in doc.tasks] == [1] * n + [2] * n + [3] * n
    assert code == 0 and doc.statistics is not None and doc.statistics.repeats == 3
    assert all(f.trials == 3 and f.passes == 3 and f.pass_hat_k == 1.0 for f in doc.statistics.tasks)
    assert doc.config.repeats == 3
    # the event log alone rebuilds every repeat (a killed run's reports come from it)
    assert main(["report", str(tmp_path / "out" / "r3" / "events.jsonl"), "--out", str(tmp_path / "rebuilt")]) == 0
    rebuilt = document.load(tmp_path / "rebuilt" / "results.json")
    def rows(d: Any) -> list[tuple[str, int, str]]:
        return [(t.task_id, t.repeat, t.state.value) for t in d.tasks]
    assert rows(rebuilt) == rows(doc)
    assert rebuilt.statistics == doc.statistics


@pytest.mark.slow
def test_flaky_and_regressed_tasks_over_repeats(tmp_path, security_file, baseline_file) -> None:
    per_repeat = {1: {"fetch_002": "wrong"}, 2: {"fetch_002": "wrong", "calc_002": "wrong"},
                  3: {"fetch_002": "error", "calc_002": "wrong"}}
    code = cmd_run(build_parser().parse_args(_args(tmp_path, security_file, baseline_file, "f", "--repeats", "3")),
                   factory=_by_repeat(per_repeat))
    doc = _load(tmp_path, "f")
    status = {f.task_id: f.status.value for f in doc.statistics.tasks}
    assert status["fetch_002"] == "regression" and status["calc_002"] == "flaky"
    assert [r.task_id for r in doc.regressions] == ["fetch_002"] and code == 1
    assert doc.statistics.flaky == ["calc_002"]
    md = (tmp_path / "out" / "f" / "summary.md").read_text()
    assert "**Flaky (reported, not gating):** calc\\_002" in md or "**Flaky (reported, not gating):** calc_002" in md
    assert "## Repeats and statistics" in md
    import xml.etree.ElementTree as ET

    cases = {c.get("name"): c for c in ET.parse(tmp_path / "out" / "f" / "junit.xml").iter("testcase")}
    flaky_fail = cases["calc_002 [repeat 2/3]"]
    assert flaky_fail.find("failure") is None and "flaky" in (flaky_fail.find("skipped").get("message") or "")
    assert cases["fetch_002 [repeat 1/3]"].find("failure") is not None
    props = {p.get("name"): p.get("value") for p in ET.parse(tmp_path / "out" / "f" / "junit.xml").iter("property")}
    assert props["repeats"] == "3" and props["flaky"] == "calc_002" and int(props["tokens_in"]) > 0


@pytest.mark.slow
def test_shards_times_repeats_merge_to_the_verdict_of_one_process(tmp_path, security_file, baseline_file,
                                                                   capsys) -> None:
    per_repeat = {1: {"fetch_002": "wrong"}, 2: {"fetch_002": "wrong", "calc_002": "wrong"},
                  3: {"fetch_002": "wrong", "calc_002": "error", "calc_003": "wrong"}}
    parser = build_parser()
    one = cmd_run(parser.parse_args(_args(tmp_path, security_file, baseline_file, "one", "--repeats", "3")),
                  factory=_by_repeat(per_repeat))
    for k in (1, 2, 3):
        cmd_run(parser.parse_args(_args(tmp_path, security_file, baseline_file, f"s{k}", "--repeats", "3",
                                        "--shard", f"{k}/3")), factory=_by_repeat(per_repeat))
    out = tmp_path / "out"
    merged_code = main(["merge", *(str(out / f"s{k}" / "results.json") for k in (3, 1, 2)), "--out",
                        str(tmp_path / "merged"), "--run-id", "m"])
    single, merged = _load(tmp_path, "one"), document.load(tmp_path / "merged" / "m" / "results.json")
    assert merged_code == one == 1
    assert merged.verdict.status == single.verdict.status and merged.verdict.reasons == single.verdict.reasons
    assert [r.model_dump() for r in merged.regressions] == [r.model_dump() for r in single.regressions]
    assert [(t.task_id, t.repeat, t.state) for t in merged.tasks] == [(t.task_id, t.repeat, t.state)
                                                                       for t in single.tasks]

    def figures(doc: Any) -> Any:
        return [f.model_dump(exclude={"usage"}) for f in doc.statistics.tasks]
    assert figures(merged) == figures(single)
    assert merged.statistics.overall == single.statistics.overall
    # one shard's repeats given twice is refused
    again = main(["merge", str(out / "s1" / "results.json"), str(out / "s1" / "results.json"), "--out",
                  str(tmp_path / "m2")])
    assert again == 2 and "given more than once" in capsys.readouterr().err


def test_bad_repeat_flags_exit_2(tmp_path, security_file, baseline_file, capsys) -> None:
    def code(*extra: str) -> int:
        try:
            return main(_args(tmp_path, security_file, baseline_file, "bad", *extra))
        except SystemExit as exc:  # argparse's own refusal
            return int(exc.code or 0)
    for extra in (["--repeats", "0"], ["--alpha", "1.5"], ["--threshold-on", "mean"],
                  ["--fail-on-usage-regression"]):
        assert code(*extra) == 2, extra
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"m": {"input": -1, "output": 2}}))
    assert code("--price-table", str(prices)) == 2
    assert f"{prices}: model 'm': 'input' must be a non-negative number" in capsys.readouterr().err


def test_an_interrupted_repeated_run_fills_every_unrun_trial_as_skipped() -> None:
    from runner.reports.rebuild import fill_skipped

    planned = [["calc_001", "calculation", "q1"], ["calc_002", "calculation", "q2"]]
    done = [TaskResult("calc_001", "calculation", "q1", "pass", "ok"),
            TaskResult("calc_002", "calculation", "q2", "fail", "bad"),
            TaskResult("calc_001", "calculation", "q1", "pass", "ok", repeat=2)]
    rows = fill_skipped(planned, done, "not run: interrupted", repeats=2)
    assert [(t.task_id, t.repeat, t.state.value) for t in rows] == [
        ("calc_001", 1, "pass"), ("calc_002", 1, "fail"), ("calc_001", 2, "pass"), ("calc_002", 2, "skipped")]
    v = compute_verdict(rows, [], [],
                        VerdictOptions(baseline_passing=["calc_002"], min_pass_rate=0.0, partial_signal=2))
    assert v.verdict.status == "partial" and v.regressions == []
