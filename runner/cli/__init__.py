"""``finevo-verify``: argument parsing and dispatch to one module per verb.

Each verb module exposes ``register(subparsers) -> None`` (adding its parser and setting
``func`` on it) and its handler ``func(args) -> int`` returns an exit code from
:mod:`runner.exitcodes`. ``finevo-verify`` with no verb (or starting with a flag) means ``run``.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from typing import NoReturn

from finevo.errors import InputError
from runner.exitcodes import Exit

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


class _Parser(argparse.ArgumentParser):
    """Usage errors are one line on stderr and exit 2 (argparse alone prints the whole usage first).

    Sub-parsers inherit this class, so ``finevo-verify run --agent x`` reads the same way.
    """

    def error(self, message: str) -> NoReturn:
        self.exit(int(Exit.USAGE), f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="finevo-verify", description="CI regression gate for the finevo agent.")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    for name in VERB_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def debug_enabled() -> bool:
    """``FINEVO_DEBUG`` set to anything but empty / ``0``: print tracebacks of internal errors."""
    return os.environ.get("FINEVO_DEBUG", "").strip() not in ("", "0")


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or (argv[0].startswith("-") and argv[0] not in ("-h", "--help")):
        argv.insert(0, "run")
    parser = build_parser()
    args = parser.parse_args(argv)
    func = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return int(Exit.USAGE)
    try:
        return int(func(args))
    except InputError as exc:
        print(f"finevo-verify: error: {exc.message}", file=sys.stderr)
        return int(Exit.USAGE)
    except Exception as exc:  # a bug or unexpected trouble: no verdict (exit 3), never read as "gate failed"
        text = str(exc).strip().splitlines()
        print(f"finevo-verify: internal error: {type(exc).__name__}: {text[0] if text else ''} "
              "(no verdict; set FINEVO_DEBUG=1 for the traceback)", file=sys.stderr)
        if debug_enabled():
            traceback.print_exc(file=sys.stderr)
        return int(Exit.NO_VERDICT)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
