"""What the judge reads in a final tool's source without running it.

The registry matches a later task to a stored tool by its signature (:mod:`finevo.registry.signature`)
and calls it with that task's arguments, so every parameter a tool declares is a promise: a later
task that passes ``trading_days=365`` to a volatility tool declaring ``trading_days: int = 252``
expects an answer annualised over 365. A tool whose body never reads such a parameter (it
hard-codes the default in its formula, or binds the name anew before reading it) answers every such
task with the default's figure, and no call with the task's own arguments can show it: the gate's
probes only move the parameters it knows by name (the task's arguments, the measure's optional
parameters of :func:`runner.judging.probes.optional_probes`). Reading the source can.

Left alone, because a reading of the task may ignore them: the task's own arguments (whole-history
RSI ignores ``days`` and is accepted; the probes judge what a tool does with them), ``*args`` and
``**kwargs``, and names starting with ``_`` (private by the usual rule: no caller passes them). A
function that reads its own ``locals()`` or ``vars()`` is not judged by this rule (it may read any
parameter by name).
"""

from __future__ import annotations

import ast
from collections.abc import Collection

from finevo.pysource import parse

#: Calls that read a function's parameters without naming them.
_READS_EVERY_NAME = frozenset({"locals", "vars"})


def unread_parameters(code: str, entry: str, own_args: Collection[str]) -> list[str]:
    """The parameters of top-level function ``entry`` in ``code`` that have a default, are not among
    ``own_args`` (the task's arguments) and that the function's body never reads, each in words
    (``trading_days (default 252)``); empty when there are none or the code does not parse."""
    try:
        tree = parse(code)
    except (SyntaxError, ValueError):
        return []
    found = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == entry]
    if not found:
        return []
    func = found[-1]
    if any(isinstance(node, ast.Name) and node.id in _READS_EVERY_NAME
           for stmt in func.body for node in ast.walk(stmt)):
        return []
    return [f"{name} (default {ast.unparse(default)})" for name, default in _defaulted(func.args)
            if name not in own_args and not name.startswith("_") and not _reads(func.body, name)]


def _reads(body: list[ast.stmt], name: str) -> bool:
    """Whether ``body`` reads the value ``name`` comes in with: a statement naming it before a plain
    assignment at the body's own level (not under an ``if`` or a loop) binds it anew."""
    for stmt in body:
        if any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(stmt)):
            return True
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return False
    return False


def _defaulted(args: ast.arguments) -> list[tuple[str, ast.expr]]:
    """``(name, default)`` of every parameter of ``args`` that has a default, in order."""
    positional = [*args.posonlyargs, *args.args]
    out = list(zip((p.arg for p in positional[len(positional) - len(args.defaults):]), args.defaults, strict=True))
    out += [(p.arg, d) for p, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is not None]
    return out
