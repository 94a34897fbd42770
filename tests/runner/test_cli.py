"""The CLI verbs: bad inputs exit 2 with one file:line line; report, merge, diff, baseline update."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from runner.cli import build_parser, main
from runner.cli.run import cmd_run
from runner.reports import document
from tests.runner.conftest import write_baseline_file, write_security_file
from tests.runner.fakes import DATA, TASKS, make_factory


def _run_args(tmp_path: Path, security_file: Path, baseline_file: Path, *extra: str) -> list[str]:
    # --worlds 0: what these verbs read and write does not depend on hidden worlds, and judging each
    # fake task in the default three was most of each run (tests/runner/test_worlds.py judges in them)
    return ["run", "--llm", "replay:x.jsonl", "--tasks", str(TASKS), "--security-tasks", str(security_file),
            "--baseline", str(baseline_file), "--no-payloads", "--data", str(DATA), "--out", str(tmp_path / "out"),
            "--worlds", "0", *extra]


def _gate(argv: list[str], behaviours: dict[str, str] | None = None) -> int:
    return cmd_run(build_parser().parse_args(argv), factory=make_factory(behaviours or {}))


def test_malformed_tasks_line_exits_2_naming_file_and_line(tmp_path, security_file, baseline_file, capsys) -> None:
    bad = tmp_path / "tasks.jsonl"
    lines = TASKS.read_text().splitlines()
    bad.write_text("\n".join([lines[0], "{broken", *lines[1:3]]) + "\n")
    argv = _run_args(tmp_path, security_file, baseline_file)
    argv[argv.index(str(TASKS))] = str(bad)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{bad}:2: malformed JSON" in err[0]
    assert not (tmp_path / "out").exists()


def test_duplicate_task_id_exits_2(tmp_path, security_file, baseline_file, capsys) -> None:
    bad = tmp_path / "tasks.jsonl"
    first = TASKS.read_text().splitlines()[0]
    bad.write_text(first + "\n" + first + "\n")
    argv = _run_args(tmp_path, security_file, baseline_file)
    argv[argv.index(str(TASKS))] = str(bad)
    assert main(argv) == 2
    assert "duplicate id 'fetch_001' (first on line 1)" in capsys.readouterr().err


@pytest.mark.parametrize("extra, message", [
    (["--only", "nope_001"], "unknown task id"),
])
def test_bad_flags_exit_2(tmp_path, security_file, baseline_file, capsys, extra, message) -> None:
    assert main(_run_args(tmp_path, security_file, baseline_file, *extra)) == 2
    assert message in capsys.readouterr().err


def test_invalid_baseline_exits_2(tmp_path, security_file, capsys) -> None:
    bad = tmp_path / "bad_baseline.json"
    bad.write_text('{"passing_tasks": [], "target_pass_rate": 0.8}')
    assert main(_run_args(tmp_path, security_file, bad)) == 2
    assert "names no tasks" in capsys.readouterr().err


def test_report_rerenders_from_results(tmp_path, security_file, baseline_file) -> None:
    assert _gate(_run_args(tmp_path, security_file, baseline_file, "--run-id", "a", "--only",
                           "fetch_001,calc_002,sec_001"), {"calc_002": "wrong"}) == 1
    run_dir = tmp_path / "out" / "a"
    original = document.load(run_dir / "results.json")
    (run_dir / "junit.xml").unlink()
    (run_dir / "summary.md").unlink()
    assert main(["report", str(run_dir / "results.json")]) == 1  # the document's own exit code
    assert document.load(run_dir / "results.json") == original
    assert "calc_002" in (run_dir / "junit.xml").read_text() and "calc_002" in (run_dir / "summary.md").read_text()


@pytest.mark.slow
def test_merge_of_shards_gives_one_verdict(tmp_path, security_file, baseline_file, capsys) -> None:
    only = ["--only", "fetch_001,fetch_002,calc_002,calc_004", "--no-self-check"]
    assert _gate(_run_args(tmp_path, security_file, baseline_file, "--run-id", "s1", "--shard", "1/2", *only),
                 {"fetch_002": "wrong"}) == 0  # shard 1 holds fetch_001 and calc_002 only
    assert _gate(_run_args(tmp_path, security_file, baseline_file, "--run-id", "s2", "--shard", "2/2", *only),
                 {"fetch_002": "wrong"}) == 1
    out = tmp_path / "merged"
    code = main(["merge", str(tmp_path / "out" / "s1" / "results.json"), str(tmp_path / "out" / "s2" / "results.json"),
                 "--out", str(out), "--run-id", "m"])
    assert code == 1
    doc = document.load(out / "m" / "results.json")
    assert [t.task_id for t in doc.tasks] == ["fetch_001", "fetch_002", "calc_002", "calc_004"]  # suite order
    assert [r.task_id for r in doc.regressions] == ["fetch_002"]
    assert doc.summary.passed == 3 and doc.summary.total == 4
    capsys.readouterr()
    assert main(["diff", str(tmp_path / "out" / "s2" / "results.json"), str(out / "m" / "results.json")]) == 0
    assert "2 task(s) changed state" in capsys.readouterr().out


def test_baseline_update_is_explicit_and_keeps_unrun_tasks(tmp_path, security_file, baseline_file, capsys) -> None:
    assert _gate(_run_args(tmp_path, security_file, baseline_file, "--run-id", "u", "--no-self-check", "--only",
                           "fetch_002,calc_004"), {"fetch_002": "wrong"}) == 1
    before = json.loads(baseline_file.read_text())
    assert main(["baseline", "update", str(tmp_path / "out" / "u" / "results.json"),
                 "--baseline", str(baseline_file)]) == 0
    after = json.loads(baseline_file.read_text())
    # Version 2: measured tasks get their passes and trials, unrun ones keep their (v1: 1 of 1) entry.
    assert after["version"] == 2
    assert after["tasks"] == {"fetch_001": {"passes": 1, "trials": 1}, "calc_002": {"passes": 1, "trials": 1},
                              "fetch_002": {"passes": 0, "trials": 1}, "calc_004": {"passes": 1, "trials": 1}}
    assert after["target_pass_rate"] == before["target_pass_rate"]
    assert "added: calc_004; removed: fetch_002" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["run", "--agent", "bogus"], "argument --agent: invalid choice: 'bogus'"),
    (["--task-timeout", "abc"], "argument --task-timeout: expected a number, got 'abc'"),
    (["baseline"], "the following arguments are required"),
    # flag values that need no input file are checked when the command line is read
    (["--shard", "3/2"], "argument --shard: need 1 <= K <= N, got '3/2'"),
    (["list", "--shard", "two"], "argument --shard: expected K/N"),
    (["--min-pass-rate", "2"], "argument --min-pass-rate: must be in [0, 1], got '2'"),
    (["--min-pass-rate", "nan"], "argument --min-pass-rate: must be in [0, 1]"),
    (["--task-timeout", "0"], "argument --task-timeout: must be a positive number of seconds"),
])
def test_usage_errors_are_one_line_and_exit_2(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert message in err[0] and err[0].startswith("finevo-verify")


@pytest.mark.parametrize("error, message, code, shown, gone", [
    # no LLM configured: a set-up error, exit 2
    ("ProviderNotConfigured", "--llm live needs an endpoint: set OPENAI_API_KEY or OPENAI_BASE_URL", 2,
     "needs an endpoint", "out/refused"),
    # a sandbox that cannot start: no verdict, exit 3 (not a usage error)
    ("SandboxUnavailable", "the warm sandbox worker did not start: fork failed", 3,
     "could not start: the warm sandbox worker did not start", "out"),
], ids=["no-llm", "no-sandbox"])
def test_a_session_that_cannot_open_exits_in_one_line_and_leaves_nothing(
        tmp_path, security_file, baseline_file, capsys, error, message, code, shown, gone) -> None:
    import finevo.errors

    def refuse(spec):
        raise getattr(finevo.errors, error)(message)

    # one task: the refusal comes before any task, and preparing all 20 (their probes) cost 7-15 s
    args = build_parser().parse_args(_run_args(tmp_path, security_file, baseline_file, "--run-id", "refused",
                                               "--only", "fetch_001"))
    assert cmd_run(args, factory=refuse) == code
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and shown in err[0], err
    assert not (tmp_path / gone).exists()


@pytest.mark.slow
def test_report_of_a_killed_run_rebuilt_from_events_exits_3(tmp_path, security_file, baseline_file, capsys) -> None:
    assert _gate(_run_args(tmp_path, security_file, baseline_file, "--run-id", "k", "--no-self-check", "--only",
                           "fetch_001,calc_002,sec_001")) == 0
    run_dir = tmp_path / "out" / "k"
    events = run_dir / "events.jsonl"
    lines = events.read_text().splitlines()
    events.write_text("\n".join(lines[:2]) + "\n")  # SIGKILL after the first task: no end event
    for name in ("results.json", "junit.xml", "summary.md"):
        (run_dir / name).unlink()
    capsys.readouterr()
    assert main(["report", str(events)]) == 3
    assert "verdict: partial (exit 3)" in capsys.readouterr().out
    doc = document.load(run_dir / "partial_k.json")
    assert [t.state for t in doc.tasks] == ["pass", "skipped"]


#: The merge tests' selection, cut into shards (shard 1/2 holds fetch_001 and calc_002).
SHARD_ONLY = ("--only", "fetch_001,fetch_002,calc_002,calc_004", "--no-self-check")
#: The merge tests read copies of one run per shard (``shard_runs``) on one worker: each used to run its
#: own shards, 17 fake runs for these 8 tests where 5 distinct shards serve them all.
_SHARDS = pytest.mark.xdist_group("cli-shard-runs")


@pytest.fixture(scope="module")
def shard_runs(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """``run("K/N")``: the results.json of that shard of the selection, run once per module."""
    root = tmp_path_factory.mktemp("shards")
    security, baseline = write_security_file(root), write_baseline_file(root)
    done: dict[str, Path] = {}

    def run(shard: str) -> Path:
        if shard not in done:
            run_id = f"s{shard.replace('/', 'of')}"
            _gate(_run_args(root, security, baseline, "--run-id", run_id, "--shard", shard, *SHARD_ONLY))
            done[shard] = root / "out" / run_id / "results.json"
        return done[shard]

    return run


def _shard_results(tmp_path: Path, shard_runs: Callable[[str], Path], *shards: str) -> list[Path]:
    """A copy of each shard's results.json under ``tmp_path`` (a shard given twice: two copies), for a
    test to merge or edit without touching the module's runs."""
    paths = []
    for i, shard in enumerate(shards):
        source = shard_runs(shard)
        copy = tmp_path / "shards" / str(i) / source.parent.name / "results.json"
        copy.parent.mkdir(parents=True)
        shutil.copyfile(source, copy)
        paths.append(copy)
    return paths


@pytest.mark.parametrize("shards, message", [
    (["1/2"], "incomplete set of shards: missing 2/2"),
    (["1/3", "3/3"], "incomplete set of shards: missing 2/3"),
    (["1/2", "1/2", "2/2"], "shard(s) 1/2 given more than once"),
    (["1/2", "2/3"], "shards of different splits (N = 2, 3)"),
])
@pytest.mark.slow
@_SHARDS
def test_merge_refuses_an_incomplete_or_mixed_set_of_shards(tmp_path, shard_runs, capsys, shards, message) -> None:
    paths = _shard_results(tmp_path, shard_runs, *shards)
    capsys.readouterr()
    assert main(["merge", *map(str, paths), "--out", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err
    assert not (tmp_path / "merged").exists()


@pytest.mark.parametrize("change, message", [
    ({"min_pass_rate": 0.9}, "disagree on min_pass_rate"),
    ({"baseline": {"path": "other.json", "passing_tasks": ["fetch_001"], "target_pass_rate": 0.5}},
     "disagree on the baseline"),
    ({"selection": {"only": ["fetch_001"], "category": None, "shard": "2/2"}}, "different selections"),
])
@pytest.mark.slow
@_SHARDS
def test_merge_refuses_shards_measured_against_different_things(tmp_path, shard_runs, capsys, change,
                                                               message) -> None:
    first, second = _shard_results(tmp_path, shard_runs, "1/2", "2/2")
    doc = document.load(second)
    cfg = doc.config.model_dump(mode="json")
    cfg.update(change)  # a shard really run with this setting: its figures agree with it
    second.write_text(document.dumps(document.reassemble(doc, config=cfg)))
    capsys.readouterr()
    assert main(["merge", str(first), str(second), "--out", str(tmp_path / "merged")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0], err


@pytest.mark.slow
@_SHARDS
def test_merge_restores_suite_order_whatever_the_input_order(tmp_path, shard_runs) -> None:
    paths = _shard_results(tmp_path, shard_runs, "3/3", "1/3", "2/3")
    assert main(["merge", *map(str, paths), "--out", str(tmp_path / "merged"), "--run-id", "m"]) == 0
    doc = document.load(tmp_path / "merged" / "m" / "results.json")
    assert [t.task_id for t in doc.tasks] == ["fetch_001", "fetch_002", "calc_002", "calc_004"]


@pytest.mark.slow
@pytest.mark.parametrize("llm", ["bogus", "replay:{tmp}/missing.jsonl", "predictions:{tmp}/bad.jsonl", "live"])
def test_invalid_llm_exits_2_in_one_line_and_leaves_no_directory(tmp_path, security_file, baseline_file, capsys,
                                                                monkeypatch, llm) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "FINEVO_LLM_API_KEY", "FINEVO_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "bad.jsonl").write_text('{"task_id": "fetch_001", "content": 3}\n')
    out = tmp_path / "fresh" / "out"
    # one task: the session is refused before any task, and preparing all 20 (their probes) cost 6-11 s
    argv = _run_args(tmp_path, security_file, baseline_file, "--run-id", "x", "--only", "fetch_001")
    argv[argv.index("replay:x.jsonl")] = llm.format(tmp=tmp_path)
    argv[argv.index(str(tmp_path / "out"))] = str(out)
    assert main(argv) == 2  # the real session: the spec and its file are checked for real
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("finevo-verify: error:"), err
    assert not (tmp_path / "fresh").exists()


@pytest.mark.parametrize("debug", ["", "1"])
def test_an_internal_error_is_one_line_and_exit_3(tmp_path, capsys, monkeypatch, debug) -> None:
    def broken(path):
        raise KeyError("verdict")

    monkeypatch.setattr("runner.reports.document.load", broken)
    monkeypatch.setenv("FINEVO_DEBUG", debug)
    assert main(["diff", str(tmp_path / "a.json"), str(tmp_path / "b.json")]) == 3
    err = capsys.readouterr().err
    first = err.splitlines()[0]
    assert first.startswith("finevo-verify: internal error: KeyError: 'verdict'") and "FINEVO_DEBUG" in first
    if debug:
        assert "Traceback (most recent call last)" in err
    else:
        assert len(err.strip().splitlines()) == 1


def test_a_gate_crash_through_the_cli_is_exit_3_with_one_line(tmp_path, security_file, baseline_file, capsys,
                                                             monkeypatch) -> None:
    monkeypatch.delenv("FINEVO_DEBUG", raising=False)

    def broken(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr("runner.gate.security_result", broken)
    # a benchmark task before the security task the crash comes in: its result is in the partial report
    assert _gate(_run_args(tmp_path, security_file, baseline_file, "--run-id", "c", "--no-self-check",
                           "--only", "fetch_001,sec_001")) == 3
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("finevo-verify: internal error: RuntimeError: boom (partial reports")
    partial = document.load(tmp_path / "out" / "c" / "partial_c.json")
    assert [(t.task_id, t.state) for t in partial.tasks] == [("fetch_001", "pass")]


def test_improvement_hint_names_the_real_results_path(tmp_path, security_file, baseline_file) -> None:
    out = tmp_path / "elsewhere"
    argv = _run_args(tmp_path, security_file, baseline_file, "--run-id", "h", "--no-self-check", "--only",
                     "fetch_001,calc_004")
    argv[argv.index(str(tmp_path / "out"))] = str(out)
    assert _gate(argv) == 0
    md = (out / "h" / "summary.md").read_text()
    assert f"`finevo-verify baseline update {out / 'h' / 'results.json'}`" in md
    assert "out/h/results.json" not in md.replace(str(out / "h"), "")


@pytest.mark.slow
def test_sandbox_backend_flag_reaches_the_run_and_its_record(tmp_path, capsys) -> None:
    argv = ["run", "--llm", "reference", "--only", "calc_002", "--security-tasks", "none", "--baseline", "none",
            "--no-payloads", "--no-self-check", "--min-pass-rate", "1", "--data", str(DATA),
            "--out", str(tmp_path / "out"), "--quiet",
            # no hidden worlds: what is asserted is the backend and the tool's answer, and with the
            # subprocess backend every world's re-run of every probe is a cold interpreter (100 s at load 10)
            "--worlds", "0"]
    assert main([*argv, "--run-id", "sub", "--sandbox-backend", "subprocess"]) == 0
    assert main([*argv, "--run-id", "warm"]) == 0
    sub = document.load(tmp_path / "out" / "sub" / "results.json")
    warm = document.load(tmp_path / "out" / "warm" / "results.json")
    assert sub.config.sandbox_backend == "subprocess" and warm.config.sandbox_backend == "warm"
    assert sub.config.sandbox_fallback is None
    # the same tool, run cold instead of forked from the warm worker, gives the same answer
    assert sub.tasks[0].state == "pass" and sub.tasks[0].actual == warm.tasks[0].actual


# --------------------------------------------------------------------------- help, usage errors
# (what --help and the usage errors import: tests/test_startup.py)


def _walk(parser, path=()):
    import argparse

    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _walk(sub, (*path, name))


def test_top_level_help_lists_every_verb_and_every_run_flag(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    parser = build_parser()
    verbs = {path[0]: sub for path, sub in _walk(parser) if len(path) == 1}
    assert set(verbs) >= {"run", "list", "docker"}
    for verb in verbs:
        assert f"\n    {verb} " in text or f"\n    {verb}\n" in text, verb
    run_flags = [s for a in verbs["run"]._actions for s in a.option_strings if s.startswith("--") and s != "--help"]
    assert run_flags
    for flag in run_flags:
        assert flag in text, flag


def test_no_parser_accepts_abbreviations() -> None:
    for path, parser in _walk(build_parser()):
        assert parser.allow_abbrev is False, " ".join(path) or "finevo-verify"


@pytest.mark.parametrize("argv, wanted", [
    (["--onl", "calc_001"], "did you mean --only?"),
    (["run", "--only", "calc_001", "--catgory", "fetch"], "did you mean --category?"),
    (["lst"], "did you mean 'list'?"),
    (["run", "--agent", "evolvng"], "did you mean 'evolving'?"),
])
def test_a_typo_is_an_error_that_names_what_to_type(argv, wanted, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and wanted in err[0], err
    assert "--help" in err[0]


@pytest.mark.slow
def test_bare_gate_without_an_endpoint_suggests_the_offline_reference_model(tmp_path, monkeypatch, capsys) -> None:
    for name in ("FINEVO_LLM_PROVIDER", "OPENAI_API_KEY", "OPENAI_BASE_URL", "FINEVO_LLM_API_KEY",
                 "FINEVO_LLM_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    # no verb, no --llm: live by default (one task: the endpoint is missed before any task is run,
    # and preparing all 20 cost 8 s)
    assert main(["--out", str(tmp_path / "out"), "--only", "fetch_001"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--llm reference" in err[0], err
    assert not (tmp_path / "out").exists()
