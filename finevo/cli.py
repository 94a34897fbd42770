"""``finevo``: solve one query with the evolving agent, and look after its tool registry.

::

    finevo solve "Calculate AMZN MACD(12,26,9)" [--llm SPEC] [--data DIR] [--agent MODE]
                 [--max-refinements N] [--registry-dir DIR] [--model NAME] [--record FILE]
                 [--timeout S] [--json]
    finevo registry [--registry-dir DIR] [--registry-url URL] list [--json]
    finevo registry [--registry-dir DIR] [--registry-url URL] show NAME [--version V]
    finevo registry [--registry-dir DIR] [--registry-url URL] clear [--yes]
    finevo registry [--registry-dir DIR] [--registry-url URL] migrate [--drop-missing]

``--registry-dir`` and ``--registry-url`` may also follow the action (``finevo registry list
--registry-dir DIR``). ``--registry-url`` (env ``FINEVO_REGISTRY_URL``) is any SQLAlchemy URL, e.g.
``postgresql+psycopg://USER:PASSWORD@HOST:5432/DB``; messages show it with the password masked.

Exit codes: 0 ok; 1 the agent failed (its own failure: bad code, refinements exhausted, no tool
in static mode); 2 usage or input error (no LLM configured included); 3 external error (LLM API,
cassette miss, deadline).

A query that is word for word a benchmark query is solved as that task (its id, intent and output
contract), so ``--llm reference`` answers it offline with the gold tool.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finevo.cliparse import UsageParser, suggest_extras
from finevo.errors import AgentFailure, ExternalError, InputError, ProviderNotConfigured
from finevo.vocabulary import AgentMode, ProviderKind, SandboxBackend, choices

if TYPE_CHECKING:
    from finevo.outcome import Outcome
    from finevo.question import Question

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_EXTERNAL = 0, 1, 2, 3
REGISTRY_URL_HELP = ("registry database, any SQLAlchemy URL, e.g. postgresql+psycopg://USER:PASSWORD@HOST/DB "
                     "(env FINEVO_REGISTRY_URL; default: sqlite:///<registry dir>/registry.db)")

#: Intent arguments that name market symbols (one, or a list).
SYMBOL_ARGS = ("symbol", "symbols")


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog="finevo", description="An evolving financial agent that writes, "
                         "verifies, refines and reuses its own tools.",
                         epilog='Example: finevo solve "Calculate AMZN MACD(12,26,9)" --llm reference '
                                "(the reference model answers the benchmark's queries: finevo-verify list)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    solve = sub.add_parser("solve", help="answer one query")
    solve.add_argument("query", help='e.g. "Calculate AAPL RSI-14 over last 30 days"')
    solve.add_argument("--llm", help=f"{ProviderKind.specs()} (env FINEVO_LLM_PROVIDER)")
    solve.add_argument("--data", type=Path, help="market snapshot directory (default: the bundled snapshot)")
    solve.add_argument("--agent", choices=choices(AgentMode), help="agent mode")
    solve.add_argument("--max-refinements", type=int, metavar="N", help="refinement attempts after the first")
    solve.add_argument("--registry-dir", type=Path, help="registry directory (env FINEVO_REGISTRY_DIR)")
    solve.add_argument("--registry-url", metavar="URL", help=REGISTRY_URL_HELP)
    solve.add_argument("--model", help="model name (env FINEVO_LLM_MODEL)")
    solve.add_argument("--record", type=Path, metavar="FILE", help="append LLM exchanges to this cassette (live)")
    solve.add_argument("--sandbox-backend", choices=choices(SandboxBackend),
                       help=f"sandbox backend (env FINEVO_SANDBOX_BACKEND, default {SandboxBackend.WARM})")
    solve.add_argument("--timeout", type=float, metavar="S", help="wall-clock deadline for the whole query")
    solve.add_argument("--json", action="store_true", help="print the full outcome as JSON")
    solve.set_defaults(func=cmd_solve)

    reg = sub.add_parser("registry", help="list, show, deprecate or clear registered tools; migrate a registry")
    reg.add_argument("--registry-dir", type=Path, help="registry directory (env FINEVO_REGISTRY_DIR)")
    reg.add_argument("--registry-url", metavar="URL", help=REGISTRY_URL_HELP)
    # the same option after the action (`finevo registry list --registry-dir DIR`); SUPPRESS keeps
    # an action without it from overwriting a value given before the action
    where = UsageParser(add_help=False)
    where.add_argument("--registry-dir", type=Path, default=argparse.SUPPRESS,
                       help="registry directory (env FINEVO_REGISTRY_DIR)")
    where.add_argument("--registry-url", metavar="URL", default=argparse.SUPPRESS, help=REGISTRY_URL_HELP)
    rsub = reg.add_subparsers(dest="registry_command", metavar="ACTION")
    rlist = rsub.add_parser("list", parents=[where], help="every tool, newest version first")
    rlist.add_argument("--json", action="store_true")
    rlist.set_defaults(func=cmd_registry_list)
    show = rsub.add_parser("show", parents=[where], help="one tool's record and code")
    show.add_argument("name")
    show.add_argument("--version", help="a version such as 1.0.2 (default: the newest)")
    show.set_defaults(func=cmd_registry_show)
    deprecate = rsub.add_parser("deprecate", parents=[where],
                                help="retire one tool version: it stays on record but is never reused")
    deprecate.add_argument("name")
    deprecate.add_argument("--version", help="a version such as 1.0.2 (default: the newest)")
    deprecate.set_defaults(func=cmd_registry_deprecate)
    clear = rsub.add_parser("clear", parents=[where], help="delete every tool, trace and code file")
    clear.add_argument("--yes", action="store_true", help="really delete (required)")
    clear.set_defaults(func=cmd_registry_clear)
    migrate = rsub.add_parser("migrate", parents=[where],
                              help="upgrade the registry's schema to this release (says from which revision)")
    migrate.add_argument("--drop-missing", action="store_true",
                         help="drop tools whose code file is missing (a release 0.1.0 registry; default: refuse)")
    migrate.set_defaults(func=cmd_registry_migrate)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        suggest_extras(parser, args, extras)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    try:
        return int(func(args))
    except (InputError, ProviderNotConfigured) as exc:  # nothing ran: a usage error, as in finevo-verify
        print(f"finevo: error: {exc.message}", file=sys.stderr)
        return EXIT_USAGE
    except ExternalError as exc:
        print(f"finevo: {exc.code}: {exc.message}", file=sys.stderr)
        return EXIT_EXTERNAL
    except AgentFailure as exc:
        print(f"finevo: {exc.code}: {exc.message}", file=sys.stderr)
        return EXIT_FAILED


# --------------------------------------------------------------------------- helpers
def _settings(args: argparse.Namespace) -> Any:
    from finevo.settings import Settings

    overrides = {
        "llm": getattr(args, "llm", None),
        "data_dir": getattr(args, "data", None),
        "agent_mode": getattr(args, "agent", None),
        "max_refinements": getattr(args, "max_refinements", None),
        "registry_dir": getattr(args, "registry_dir", None),
        "registry_url": getattr(args, "registry_url", None),
        "model": getattr(args, "model", None),
        "record": getattr(args, "record", None),
        "sandbox_backend": getattr(args, "sandbox_backend", None),
    }
    return Settings.from_env(overrides)


def _open_registry(settings: Any) -> Any:
    from finevo.registry import Registry

    return Registry(settings.registry_url, settings.registry_code_dir)  # refuses an old or foreign schema


def exit_code(outcome: Outcome) -> int:
    """0 when the outcome holds an answer, 1 for the agent's own failure, 3 for an external one."""
    if outcome.error is None:
        return EXIT_OK
    if isinstance(outcome.error, ExternalError):
        return EXIT_EXTERNAL
    return EXIT_FAILED


def benchmark_question_for(query: str) -> Question | None:
    """The question of the bundled benchmark task whose query is ``query`` (spaces normalised), if any."""
    from finevo.paths import benchmarks_dir
    from finevo.question import load_questions

    path = benchmarks_dir() / "tasks.jsonl"
    if not path.exists():
        return None
    wanted = " ".join(query.split())
    for question in load_questions(path):
        if " ".join(question.query.split()) == wanted:
            return question
    return None


def question_symbols(question: Question) -> list[str]:
    """The market symbols a question's arguments name, in order."""
    found: list[str] = []
    for name in SYMBOL_ARGS:
        value = question.intent.args.get(name)
        for symbol in [value] if isinstance(value, str) else list(value or []):
            if str(symbol) not in found:
                found.append(str(symbol))
    return found


def check_symbols(question: Question, data_dir: Path) -> None:
    """A symbol the snapshot does not hold is named, with the ones it does, before anything runs."""
    from finevo.market.snapshot import Snapshot

    available = Snapshot(data_dir).symbols()
    missing = [s for s in question_symbols(question) if s not in available]
    if missing:
        names = ", ".join(missing)
        raise InputError(
            f"{'symbol' if len(missing) == 1 else 'symbols'} {names} not in the market snapshot {data_dir} "
            f"(it holds {', '.join(available)}): ask about one of those, or record a snapshot that has "
            f"{names} (finevo-verify data refresh --out DIR --symbols {' '.join(missing)}) and pass --data DIR")


def check_reference_query(spec: str | None, bundled: Question | None, query: str) -> None:
    """The reference model only knows the benchmark's own queries (its gold tools): say so up front."""
    if bundled is None and (spec or "").strip() == ProviderKind.REFERENCE:
        raise InputError(
            f"the reference model only answers the benchmark's own queries, word for word, and {query!r} "
            "is not one of them: see them with `finevo-verify list`, or use another model "
            "(--llm live with FINEVO_LLM_API_KEY, --llm replay:FILE or --llm predictions:FILE)")


def format_outcome(outcome: Outcome) -> str:
    """What a person wants to read: the value, then how it was obtained."""
    lines: list[str] = []
    if outcome.error is None:
        lines.append(json.dumps(outcome.value, ensure_ascii=False) if not isinstance(outcome.value, float)
                     else repr(outcome.value))
    else:
        lines.append(f"no answer: {outcome.error.code}: {outcome.error.message}")
    if outcome.tool_name:
        tool = f"{outcome.tool_name}"
        if outcome.tool_version:
            tool += f" v{outcome.tool_version}"
        if outcome.tool_hash:
            tool += f" [{outcome.tool_hash[:8]}]"
        lines.append(f"tool:    {tool}, {outcome.tool_source}, {outcome.refinements} refinement(s)")
    else:
        lines.append(f"tool:    none ({outcome.tool_source})")
    if outcome.blocked_by:
        lines.append(f"blocked: {outcome.blocked_by}")
    u = outcome.usage
    lines.append(f"llm:     {u.calls} call(s), {u.prompt_tokens}+{u.completion_tokens} tokens, {u.latency_s:.2f}s")
    stages = ", ".join(f"{k} {v:.2f}s" for k, v in outcome.timings.items() if k != "total")
    lines.append(f"time:    {outcome.timings.get('total', 0.0):.2f}s (stage reached: {outcome.stage}"
                 + (f"; {stages}" if stages else "") + ")")
    return "\n".join(lines)


# --------------------------------------------------------------------------- solve
def cmd_solve(args: argparse.Namespace) -> int:
    # the flags first, before the agent (pandas, the LLM client, the registry) is imported
    if not args.query.strip():
        raise InputError("the query is empty")
    if args.timeout is not None and not args.timeout > 0:
        raise InputError(f"invalid --timeout={args.timeout}: expected a positive number of seconds")
    settings = _settings(args)
    from finevo.agent.intent import question_for_query

    bundled = benchmark_question_for(args.query)
    question = bundled or question_for_query(args.query)
    if not Path(settings.data_dir).is_dir():
        raise InputError(f"market snapshot directory not found: {settings.data_dir}")
    check_symbols(question, Path(settings.data_dir))
    if settings.agent_mode != AgentMode.STATIC:
        check_reference_query(settings.llm, bundled, args.query)
    from finevo.agent.agent import Agent  # pandas, the LLM client, the registry: only once the input is sound

    provider = None
    if settings.agent_mode != AgentMode.STATIC:
        from finevo.llm.providers import make_provider

        provider = make_provider(settings.llm, settings)
    registry = _open_registry(settings) if settings.agent_mode != AgentMode.MEMORY_ONLY else None
    from finevo.sandbox import create_sandbox

    sandbox = create_sandbox(settings.data_dir, backend=settings.sandbox_backend)
    agent = Agent(settings, provider, sandbox, registry, settings.agent_mode)
    try:
        deadline = time.monotonic() + args.timeout if args.timeout is not None else None
        outcome = agent.solve(question, deadline)
    finally:
        agent.close()
        sandbox.close()
        for thing in (provider, registry):
            close = getattr(thing, "close", None)
            if callable(close):
                close()
    if args.json:
        from finevo.normalize import RECORD, normalize  # numpy and pandas: only when needed

        print(json.dumps(normalize(outcome.to_dict(), RECORD), indent=2, ensure_ascii=False, allow_nan=False))
    else:
        print(format_outcome(outcome))
    return exit_code(outcome)


# --------------------------------------------------------------------------- registry
def cmd_registry_list(args: argparse.Namespace) -> int:
    registry = _open_registry(_settings(args))
    try:
        tools = list(registry.list())
    finally:
        _close(registry)
    rows = [{"name": t.name, "version": t.version, "status": t.status, "indicator": t.indicator,
             "output_type": t.output_type, "category": t.category, "hash": t.content_hash[:8],
             "params": [p["name"] for p in (t.signature or {}).get("params", [])],
             "parent_id": t.parent_id, "id": t.id, "created_at": str(t.created_at)} for t in tools]
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    if not rows:
        print("registry is empty")
        return EXIT_OK
    header = ("NAME", "VERSION", "STATUS", "OUTPUT", "HASH", "PARAMS")
    table = [header] + [(r["name"], r["version"], r["status"], r["output_type"], r["hash"], ",".join(r["params"]))
                        for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=False)).rstrip())
    return EXIT_OK


def _named_tool(registry: Any, args: argparse.Namespace) -> Any:
    """The tool ``args.name`` at ``args.version`` (default: its newest), or an input error."""
    tool = registry.get(args.name, args.version)
    if tool is None:
        what = f"{args.name} v{args.version}" if args.version else args.name
        raise InputError(f"no tool {what} in the registry at {registry_location(registry)}")
    return tool


def _check_version_flag(args: argparse.Namespace) -> None:
    if args.version is not None:
        from finevo.registry import parse_version

        try:
            parse_version(args.version)
        except ValueError as exc:
            raise InputError(f"invalid --version={args.version!r}: {exc}") from None


def cmd_registry_show(args: argparse.Namespace) -> int:
    _check_version_flag(args)
    registry = _open_registry(_settings(args))
    try:
        tool = _named_tool(registry, args)
        code = registry.read_code(tool)
    finally:
        _close(registry)
    print(f"name:      {tool.name}")
    print(f"version:   {tool.version}")
    print(f"status:    {tool.status}")
    print(f"contract:  {tool.indicator} -> {tool.output_type} ({tool.category})")
    params = ", ".join(p["name"] for p in (tool.signature or {}).get("params", []))
    print(f"signature: {(tool.signature or {}).get('function', tool.name)}({params})")
    print(f"hash:      {tool.content_hash}")
    print(f"parent:    {tool.parent_id if tool.parent_id is not None else '-'}")
    print(f"created:   {tool.created_at}")
    print()
    print(code.rstrip("\n"))
    return EXIT_OK


def cmd_registry_deprecate(args: argparse.Namespace) -> int:
    """Retire a tool version (e.g. one found wrong after it was verified): the row, its code and
    its traces stay for the record, but retrieval only ever offers verified tools."""
    _check_version_flag(args)
    registry = _open_registry(_settings(args))
    try:
        tool = _named_tool(registry, args)
        before = tool.status
        try:
            registry.set_status(tool, "deprecated")
        except ValueError as exc:  # deprecated is final: nothing leaves it
            raise InputError(str(exc)) from None
    finally:
        _close(registry)
    print(f"{tool.name} v{tool.version}: {before} -> deprecated")
    return EXIT_OK


def cmd_registry_clear(args: argparse.Namespace) -> int:
    registry = _open_registry(_settings(args))
    try:
        count = len(list(registry.list()))
        if not args.yes:
            raise InputError(f"refusing to delete {count} tool(s) without --yes")
        registry.clear()
    finally:
        _close(registry)
    print(f"removed {count} tool(s)")
    return EXIT_OK


def cmd_registry_migrate(args: argparse.Namespace) -> int:
    """Upgrade the registry's schema to this release, in one transaction; prints from which revision to which."""
    from finevo.registry import migrate_registry, safe_url

    settings = _settings(args)
    result = migrate_registry(settings.registry_url, settings.registry_code_dir, drop_missing=args.drop_missing)
    where = safe_url(settings.registry_url)
    for tool in result.dropped:
        print(f"dropped {tool}: its code file was missing")
    if not result.changed:
        print(f"registry at {where} is already at {result.after}: nothing to do")
    else:
        print(f"migrated registry at {where} from {result.before.label} to {result.after}")
    return EXIT_OK


def registry_location(registry: Any) -> str:
    """Where the registry lives, for messages (a password in its URL is masked)."""
    return str(registry.display_url)


def _close(thing: Any) -> None:
    close = getattr(thing, "close", None)
    if callable(close):
        close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
