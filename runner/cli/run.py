"""``finevo-verify [run]`` (the gate) and ``finevo-verify list`` (the selected tasks)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finevo.errors import ExternalError, ProviderNotConfigured
from finevo.paths import benchmarks_dir, snapshot_dir
from finevo.vocabulary import AgentMode, Category, ProviderKind, SandboxBackend, choices
from runner.execution.containment import ISOLATION_LEVELS, NO_REQUIREMENT
from runner.exitcodes import Exit

if TYPE_CHECKING:
    from runner.inputs.prepare import BudgetFlags, GateConfig


def _float_arg(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def _rate_arg(text: str) -> float:
    """A threshold: a number in [0, 1], checked when the command line is read (no input is loaded yet)."""
    value = _float_arg(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1], got {text!r}")
    return value


def _seconds_arg(text: str) -> float:
    value = _float_arg(text)
    if not value > 0.0:
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, got {text!r}")
    return value


def _shard_arg(text: str) -> str:
    """``K/N`` as :func:`runner.inputs.suite.parse_shard` reads it; checked when the command line is read."""
    from finevo.errors import InputError
    from runner.inputs.selection import parse_shard

    try:
        parse_shard(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.message.removeprefix("--shard: ")) from None
    return text


def _int_arg(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {value}")
    return value


def _add_selection(p: argparse.ArgumentParser) -> None:
    bench = benchmarks_dir()
    p.add_argument("--tasks", type=Path, default=bench / "tasks.jsonl", help="benchmark tasks (JSONL)")
    p.add_argument("--security-tasks", type=Path, default=bench / "security_tasks.jsonl",
                   help="security tasks (JSONL); 'none' to skip")
    p.add_argument("--payloads", type=Path, default=bench / "security_payloads.jsonl",
                   help="adversarial payload corpus (JSONL)")
    p.add_argument("--baseline", type=Path, default=bench / "baseline.json",
                   help="baseline file; 'none' for no baseline")
    p.add_argument("--only", metavar="ID,...", help="run only these task ids")
    p.add_argument("--category", choices=choices(Category))
    p.add_argument("--shard", metavar="K/N", type=_shard_arg, help="run the K-th of N round-robin shards")


def register(sub: Any) -> None:
    run = sub.add_parser("run", help="run the gate (default verb)",
                         description="Run every selected task through the agent, judge it, and write the reports.")
    run.add_argument("--llm", default=None, metavar="SPEC",
                     help=f"{ProviderKind.specs()} (default: $FINEVO_LLM_PROVIDER, else {ProviderKind.LIVE})")
    run.add_argument("--record", type=Path, help="with --llm live: append every exchange to this cassette")
    run.add_argument("--data", type=Path, default=None, help="market snapshot directory (default: bundled)")
    _add_selection(run)
    run.add_argument("--no-payloads", action="store_true", help="do not run the payload corpus")
    run.add_argument("--min-pass-rate", type=_rate_arg,
                     help="threshold in [0, 1] (default: the baseline's target_pass_rate)")
    run.add_argument("--out", type=Path, default=Path("out"), help="report directory (default ./out)")
    run.add_argument("--run-id", help="name of this run (default: UTC timestamp + random suffix)")
    run.add_argument("--task-timeout", type=_seconds_arg, default=120.0,
                     help="seconds per task (default 120)")
    run.add_argument("--max-refinements", type=_int_arg, help="refinement attempts per tool (default 3)")
    run.add_argument("--agent", choices=choices(AgentMode), default=AgentMode.EVOLVING.value,
                     help=f"agent mode (default {AgentMode.EVOLVING})")
    run.add_argument("--sandbox-backend", choices=choices(SandboxBackend),
                     help=f"sandbox backend (env FINEVO_SANDBOX_BACKEND, default {SandboxBackend.WARM}; "
                          f"a warm worker that cannot start falls back to {SandboxBackend.SUBPROCESS})")
    run.add_argument("--require-isolation", choices=(*ISOLATION_LEVELS, NO_REQUIREMENT), default=None,
                     help="exit 3 (no verdict) unless Landlock and seccomp confine every tool and the "
                          "containment self-test passes (FINEVO_REQUIRE_ISOLATION, else none)")
    run.add_argument("--reuse-registry", action="store_true", help="accept a non-empty registry in the run dir")
    run.add_argument("--registry-url", metavar="URL",
                     help="the agent's registry database instead of a SQLite file in the run dir: any SQLAlchemy "
                          "URL, e.g. postgresql+psycopg://USER:PASSWORD@HOST/DB (must be empty unless "
                          "--reuse-registry; the password is never printed; not with --repeats above 1)")
    run.add_argument("--no-self-check", action="store_true", help="skip the reference/null harness self-check")
    run.add_argument("--model", help="model name for live calls")
    run.add_argument("--temperature", type=_float_arg)
    run.add_argument("--worlds", type=_int_arg, default=None, metavar="K",
                     help="hidden market worlds each benchmark task is judged in besides the snapshot "
                          "(env FINEVO_WORLDS, default 3; 0 disables)")
    run.add_argument("--worlds-seed", type=_int_arg, default=None, metavar="S",
                     help="seed of the hidden worlds (default: random, recorded in results.json "
                          "config.worlds.seed); pass a recorded seed to replay a run's worlds")
    run.add_argument("--jobs", type=_positive_int, default=None, metavar="N",
                     help="cores to use (env FINEVO_JOBS, default: the cores available); 1 runs everything "
                          "in one serial order; results and reports are the same either way")
    run.add_argument("--quiet", action="store_true", help="only the final summary")
    _add_statistics(run)
    run.set_defaults(func=cmd_run)

    lst = sub.add_parser("list", help="list the selected tasks")
    _add_selection(lst)
    lst.set_defaults(func=cmd_list)


def _positive_int(text: str) -> int:
    value = _int_arg(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def _add_statistics(run: argparse.ArgumentParser) -> None:
    """Repeats, the statistical verdict and the usage budgets (:mod:`runner.verdict.trials`)."""
    g = run.add_argument_group("repeats, statistics and budgets")
    g.add_argument("--repeats", type=_positive_int, default=1, metavar="K",
                   help="run the suite K times, each repeat from an empty registry (default 1)")
    g.add_argument("--alpha", type=_float_arg, default=0.05,
                   help="level of the one-sided Fisher exact test against the baseline (default 0.05)")
    g.add_argument("--correction", choices=("holm", "none"), default="holm",
                   help="holm: the tasks' tests share --alpha (family-wise, Holm over the tasks able to reach "
                        "significance); none: each task is tested at --alpha alone (default holm)")
    g.add_argument("--threshold-on", choices=("point", "lower"), default="point",
                   help="compare the pass-rate threshold with the point estimate or the 95%% Wilson "
                        "lower bound (default point)")
    g.add_argument("--price-table", type=Path, metavar="FILE",
                   help='JSON: model name -> {"input": $/Mtok, "output": $/Mtok}, for a cost estimate')
    g.add_argument("--max-tokens", type=_int_arg, help="fail the run when it uses more tokens (in + out)")
    g.add_argument("--max-cost", type=_float_arg, help="fail the run when its estimated cost ($) is higher")
    g.add_argument("--usage-regression", type=_float_arg, metavar="PCT",
                   help="report tokens per trial or median latency more than PCT%% above the baseline's")
    g.add_argument("--fail-on-usage-regression", action="store_true",
                   help="a usage regression fails the gate instead of being a warning")


def _budgets(args: argparse.Namespace) -> BudgetFlags | None:
    from finevo.errors import InputError
    from runner.inputs.prices import load_price_table

    prices = load_price_table(args.price_table) if getattr(args, "price_table", None) else None
    if getattr(args, "max_cost", None) is not None and args.max_cost < 0:
        raise InputError(f"--max-cost: must be non-negative, got {args.max_cost}")
    if getattr(args, "usage_regression", None) is not None and args.usage_regression < 0:
        raise InputError(f"--usage-regression: must be non-negative, got {args.usage_regression}")
    if getattr(args, "fail_on_usage_regression", False) and getattr(args, "usage_regression", None) is None:
        raise InputError("--fail-on-usage-regression needs --usage-regression PCT")
    budgets: BudgetFlags = {
        "max_tokens": getattr(args, "max_tokens", None), "max_cost": getattr(args, "max_cost", None),
        "usage_regression_pct": getattr(args, "usage_regression", None),
        "fail_on_usage_regression": bool(getattr(args, "fail_on_usage_regression", False)),
        "prices": prices}
    if all(v in (None, False) for v in budgets.values()):
        return None
    return budgets


def _optional(path: Path | None) -> Path | None:
    return None if path is None or str(path).lower() == "none" else path


def _llm_spec(value: str | None) -> str:
    import os

    return (value or os.environ.get("FINEVO_LLM_PROVIDER") or ProviderKind.LIVE.value).strip()


def _worlds(value: int | None) -> int:
    """``--worlds``, else ``FINEVO_WORLDS``, else the default."""
    from finevo.settings import env_whole_number
    from runner.judging.worlds import DEFAULT_WORLDS

    return value if value is not None else env_whole_number("FINEVO_WORLDS", DEFAULT_WORLDS)


def config_from_args(args: argparse.Namespace) -> GateConfig:
    from runner.execution.containment import require_isolation
    from runner.execution.schedule import resolve_jobs
    from runner.inputs.prepare import GateConfig
    from runner.inputs.selection import parse_only, parse_shard

    return GateConfig(
        llm=_llm_spec(args.llm), tasks_path=args.tasks, security_path=_optional(args.security_tasks),
        payloads_path=None if args.no_payloads else _optional(args.payloads),
        baseline_path=_optional(args.baseline), data_dir=args.data or snapshot_dir(), out_dir=args.out,
        run_id=args.run_id, only=parse_only(args.only), category=args.category, shard=parse_shard(args.shard),
        task_timeout_s=args.task_timeout, max_refinements=args.max_refinements, agent_mode=args.agent,
        sandbox_backend=args.sandbox_backend,
        require_isolation=require_isolation(getattr(args, "require_isolation", None)),
        reuse_registry=args.reuse_registry, registry_url=getattr(args, "registry_url", None),
        self_check=not args.no_self_check, run_payloads=not args.no_payloads,
        model=args.model, temperature=args.temperature, record=args.record, min_pass_rate=args.min_pass_rate,
        repeats=getattr(args, "repeats", 1), alpha=getattr(args, "alpha", 0.05),
        threshold_on=getattr(args, "threshold_on", "point"), correction=getattr(args, "correction", "holm"),
        budgets=_budgets(args), worlds=_worlds(args.worlds), worlds_seed=args.worlds_seed,
        jobs=resolve_jobs(getattr(args, "jobs", None)))


def cmd_run(args: argparse.Namespace, factory: Any = None) -> int:
    from runner.gate import run_gate
    from runner.reports import document, github, markdown
    from runner.reports.console import Console

    console = Console(quiet=getattr(args, "quiet", False))
    config = config_from_args(args)
    kwargs = {"factory": factory} if factory is not None else {}
    try:
        outcome = run_gate(config, console=console, **kwargs)
    except ProviderNotConfigured as exc:  # no LLM endpoint configured: a usage error, nothing ran
        print(f"finevo-verify: error: {exc.message}", file=sys.stderr)
        return int(Exit.USAGE)
    except ExternalError as exc:  # e.g. the sandbox cannot start: nothing ran, so no verdict
        print(f"finevo-verify: error: the run could not start: {exc.message}", file=sys.stderr)
        return int(Exit.NO_VERDICT)
    results = outcome.results if outcome.results is not None else document.validate(outcome.doc)
    github.publish(results, markdown.render(results, results_path=outcome.paths["json"]), sys.stdout)
    if outcome.crash:
        from runner.cli import debug_enabled
        from runner.reports.escape import log_text

        print(f"finevo-verify: internal error: {log_text(outcome.crash)} (partial reports in {outcome.run_dir}; "
              "set FINEVO_DEBUG=1 for the traceback)", file=sys.stderr)
        if debug_enabled() and outcome.crash_traceback:
            sys.stderr.write(outcome.crash_traceback)
    return outcome.exit_code


def cmd_list(args: argparse.Namespace) -> int:
    from runner.inputs.selection import parse_only, parse_shard
    from runner.inputs.suite import load_suite, select

    suite = load_suite(args.tasks, _optional(args.security_tasks), None, _optional(args.baseline))
    suite = select(suite, only=parse_only(args.only), category=args.category, shard=parse_shard(args.shard))
    baseline = set(suite.baseline.passing_tasks) if suite.baseline else set()
    for t in suite.tasks:
        mark = "B" if t.id in baseline else " "
        print(f"{t.id:<10} {mark} {t.category:<12} {t.query}")
    for s in suite.security:
        print(f"{s.id:<10}   {'security':<12} {s.query}")
    for w in suite.warnings:
        print(f"warning: {w}", file=sys.stderr)
    print(f"{len(suite.tasks)} benchmark task(s), {len(suite.security)} security task(s); B = in the baseline")
    return int(Exit.PASSED)

