"""Parsing Python source into an AST, safe from any thread, and reading a function's parameters.

CPython 3.11 keeps the recursion depth of its AST-to-object conversion in per-interpreter state, so
two threads calling :func:`ast.parse` at once can fail with ``SystemError: AST constructor recursion
depth mismatch`` (seen under the gate's ``--jobs`` > 1, where the self-check's agent and the main
agent check and register code side by side). Every parse in the project goes through :func:`parse`,
which holds one lock for the conversion; a parse takes well under a millisecond for a tool.
"""

from __future__ import annotations

import ast
import threading

__all__ = ["defaulted", "parameter_names", "parse"]

_LOCK = threading.Lock()


def parse(source: str, *, type_comments: bool = False) -> ast.Module:
    """:func:`ast.parse` of ``source`` (raises :class:`SyntaxError` as it does), one thread at a time."""
    with _LOCK:
        return ast.parse(source, type_comments=type_comments)


def parameter_names(args: ast.arguments) -> set[str]:
    """Every name ``args`` binds: positional-only, positional, keyword-only, ``*args`` and ``**kwargs``."""
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, *([args.vararg] if args.vararg else []),
             *([args.kwarg] if args.kwarg else [])]
    return {a.arg for a in every}


def defaulted(args: ast.arguments) -> list[tuple[str, ast.expr]]:
    """``(name, default)`` of every parameter of ``args`` that has a default, in order."""
    positional = [*args.posonlyargs, *args.args]
    out = list(zip((p.arg for p in positional[len(positional) - len(args.defaults):]), args.defaults, strict=True))
    out += [(p.arg, d) for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return out
