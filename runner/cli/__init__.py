"""``finevo-verify``: argument parsing and dispatch to one module per verb.

Each verb module exposes ``register(subparsers) -> None`` (adding its parser and setting
``func`` on it) and its handler ``func(args) -> int`` returns an exit code from
:mod:`runner.exitcodes`. ``finevo-verify`` with no verb (or starting with a flag) means ``run``.

Start-up cost: building the parser imports every verb module, so a verb module imports at its top
only what its parser needs (argparse, paths, the error types, the exit codes). pandas, numpy,
jsonschema, the LLM client and the registry are imported inside the handlers that use them, which
keeps ``--help``, ``--version`` and every usage error free of third-party imports and within 0.1 s
(``scripts/bench_cli.py``; ``tests/test_startup.py`` derives the list of what must stay unloaded
from pyproject.toml).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback

from finevo.cliparse import UsageParser, suggest_extras
from finevo.errors import InputError
from runner.exitcodes import Exit

PROG = "finevo-verify"

#: verb -> module implementing it (imported when the parser is built).
VERB_MODULES: tuple[str, ...] = (
    "runner.cli.run",       # run (default), list
    "runner.cli.baseline",  # baseline update
    "runner.cli.results",   # diff, report, merge
    "runner.cli.oracle",    # oracle
    "runner.cli.data",      # data refresh | info
    "runner.cli.sandbox",   # sandbox check
    "runner.cli.docker",    # docker
)

#: The verb that a command line without one (or starting with a flag) means.
DEFAULT_VERB = "run"

DESCRIPTION = """\
CI regression gate for the finevo agent: runs the benchmark and security suites through the
agent, judges every task against a trusted oracle, compares with the baseline and writes
results.json, junit.xml and summary.md.

  finevo-verify --llm reference          the gate offline (bundled snapshot, gold answers)
  finevo-verify list                     the benchmark's tasks and queries
  finevo-verify VERB --help              one verb's flags"""


def _run_flags(parser: argparse.ArgumentParser) -> str:
    """The ``run`` verb's flags as help text: they are also the top level's (no verb means run)."""
    formatter = parser._get_formatter()
    title = f"{DEFAULT_VERB} flags (finevo-verify [{DEFAULT_VERB}] ...)"
    for group in parser._action_groups:
        actions = [a for a in group._group_actions if a.option_strings and a.dest != "help"]
        if not actions:
            continue
        formatter.start_section(title)
        title = f"{DEFAULT_VERB} flags: {group.title}"
        formatter.add_arguments(actions)
        formatter.end_section()
    return formatter.format_help().strip("\n")


class _VersionAction(argparse.Action):
    """``--version``: the installed package's version, read only when asked for."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            text = version("finevo")
        except PackageNotFoundError:  # run from a source tree that was never installed
            text = "unknown (not installed)"
        print(f"{PROG} {text}")
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(prog=PROG, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="verb", metavar="VERB", title="verbs")
    for name in VERB_MODULES:
        importlib.import_module(name).register(sub)
    run_parser = sub.choices.get(DEFAULT_VERB)
    if isinstance(run_parser, argparse.ArgumentParser):
        parser.epilog = _run_flags(run_parser) + "\n\nExit codes: 0 passed, 1 gate failed, 2 usage or input error, " \
            "3 no verdict, 130/143 interrupted."
    return parser


def debug_enabled() -> bool:
    """``FINEVO_DEBUG`` set to anything but empty / ``0``: print tracebacks of internal errors."""
    return os.environ.get("FINEVO_DEBUG", "").strip() not in ("", "0")


def parse(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)``, except that an unknown flag is reported by the verb that got it,
    with the flag it most likely meant (``--onl`` -> ``--only``). Exits 2 on any usage error."""
    args, extras = parser.parse_known_args(argv)
    if extras:
        suggest_extras(parser, args, extras)
    return args


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help", "--version")):
        argv.insert(0, DEFAULT_VERB)
    parser = build_parser()
    args = parse(parser, argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return int(Exit.USAGE)
    try:
        return int(func(args))
    except InputError as exc:
        print(f"{PROG}: error: {exc.message}", file=sys.stderr)
        return int(Exit.USAGE)
    except Exception as exc:  # a bug or unexpected trouble: no verdict (exit 3), never read as "gate failed"
        text = str(exc).strip().splitlines()
        print(f"{PROG}: internal error: {type(exc).__name__}: {text[0] if text else ''} "
              "(no verdict; set FINEVO_DEBUG=1 for the traceback)", file=sys.stderr)
        if debug_enabled():
            traceback.print_exc(file=sys.stderr)
        return int(Exit.NO_VERDICT)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
