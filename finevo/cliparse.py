"""The argument-parsing conventions shared by ``finevo`` and ``finevo-verify``.

* No abbreviations: ``--onl`` is an error, never silently ``--only`` (a flag added later would
  change what an old abbreviation means).
* A usage error is one line on stderr and exit 2 (argparse alone prints the whole usage first), and
  says what to type instead: the flag or choice the typo most likely meant, and the help to read.

This module imports nothing but the standard library: it runs before every ``--help``.
"""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Iterable
from typing import Any, NoReturn

#: The usage-error exit code of both command lines (``runner.exitcodes.Exit.USAGE``).
EXIT_USAGE = 2

_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<value>[^']*)' \(choose from (?P<choices>.*)\)$")


def closest(word: str, candidates: Iterable[str]) -> str | None:
    """The candidate ``word`` most likely stands for: one it abbreviates, else the closest spelling."""
    options = sorted(set(candidates))
    prefixed = [c for c in options if word and c.startswith(word)]
    if len(prefixed) == 1:
        return prefixed[0]
    matches = difflib.get_close_matches(word, prefixed or options, n=1, cutoff=0.6)
    return matches[0] if matches else None


class UsageParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` without abbreviations whose errors are one line with a hint.

    Sub-parsers inherit the class (``add_parser`` uses the parent's), so every verb reads the same.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        hint = ""
        found = _INVALID_CHOICE.search(message)
        if found:
            guess = closest(found["value"], re.findall(r"'([^']*)'", found["choices"]))
            if guess:
                hint = f"; did you mean '{guess}'?"
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}{hint} (see {self.prog} --help)\n")


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:  # type: ignore[type-arg]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action
    return None


def selected_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The innermost (sub-)parser the parsed command line went through (``baseline update``...)."""
    current = parser
    while True:
        action = _subparsers(current)
        name = getattr(args, action.dest, None) if action is not None and action.dest else None
        if action is None or not isinstance(name, str) or name not in action.choices:
            return current
        current = action.choices[name]


def suggest_extras(parser: argparse.ArgumentParser, args: argparse.Namespace, extras: list[str]) -> NoReturn:
    """Report arguments no parser took, from the verb that got them, with the flag a typo meant."""
    verb = selected_parser(parser, args)
    known = [s for action in verb._actions for s in action.option_strings]
    hints: list[tuple[str, str]] = []
    for extra in extras:
        if extra.startswith("-") and extra != "-":
            flag = extra.split("=", 1)[0]
            guess = closest(flag, known)
            if guess and guess != flag:
                hints.append((flag, guess))
    text = f"unrecognized arguments: {' '.join(extras)}"
    if len(hints) == 1:
        text += f" (did you mean {hints[0][1]}? flags are never abbreviated)"
    elif hints:
        text += f" (did you mean {', '.join(f'{guess} for {flag}' for flag, guess in hints)}? " \
                "flags are never abbreviated)"
    verb.error(text)
