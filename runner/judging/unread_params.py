"""A parameter a tool declares and never reads, read from its source.

The registry matches a later task to a stored tool by its signature (:mod:`finevo.registry.signature`)
and calls it with that task's arguments, so every parameter a tool declares is a promise: a later
task that passes ``trading_days=365`` to a volatility tool declaring ``trading_days: int = 252``
expects an answer annualised over 365. A tool whose body never reads such a parameter answers every
such task with the default's figure, and no call with the task's own arguments can show it: the
gate's probes only move the parameters it knows by name (the task's arguments, the measure's
optional parameters of :func:`runner.judging.probes.optional_probes`).

Not a read: the name bound anew before it is read (at the body's own level), a comprehension, lambda
or inner function that binds the same name for itself, and the value handed on to a function of the
module that does not read it in turn (``_compute(..., price=price)`` into a ``price`` or a
``**options`` the helper never reads).

Left alone, because a reading of the task may ignore them and the probes judge them: the task's own
arguments (whole-history RSI ignores ``days`` and is accepted) and the measure's numeric options (a
daily volatility ignores ``periods_per_year``; :func:`runner.judging.probes.optional_probes` asks
it of a tool that declares it, against each reading). A measure's other parameters (a drawdown's
``sign``, a KDJ's ``smoothing``) no probe moves: the rule holds for them. Left alone too: ``*args`` and
``**kwargs``, and names starting with ``_`` (private by the usual rule: no caller passes them). A
function that reads its own ``locals()`` or ``vars()`` is not judged by this rule.
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator

from finevo.pysource import defaulted, parameter_names, parse

#: Calls that read a function's parameters without naming them.
_READS_EVERY_NAME = frozenset({"locals", "vars"})
#: How many functions deep a value handed on is followed.
_HANDED_ON_DEPTH = 3

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def unread_parameters(code: str, entry: str, own_args: Collection[str]) -> list[str]:
    """The parameters of top-level function ``entry`` in ``code`` that have a default, are not among
    ``own_args`` (the names the probes judge) and that the function never reads, each in words
    (``trading_days (default 252)``); empty when there are none or the code does not parse."""
    try:
        tree = parse(code)
    except (SyntaxError, ValueError):
        return []
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    func = functions.get(entry)
    if func is None:
        return []
    return [f"{name} (default {ast.unparse(default)})" for name, default in defaulted(func.args)
            if name not in own_args and not name.startswith("_") and not _reads(func, name, functions)]


def _reads(func: _Function, name: str, functions: dict[str, _Function], depth: int = 0) -> bool:
    """Whether ``func`` reads the value its parameter ``name`` comes in with (or, handed on to a function
    of the module, that function reads it)."""
    if any(isinstance(n, ast.Name) and n.id in _READS_EVERY_NAME for n in ast.walk(func)):
        return True
    loads = list(_loads(func.body, name))
    if not loads:
        return False
    handed = [_handed_to(call, load, functions) for call, load in loads]
    onward = [h for h in handed if h is not None]
    if depth >= _HANDED_ON_DEPTH or len(onward) < len(handed):
        return True  # read in place (or too deep to follow)
    return any(_reads(callee, param, functions, depth + 1) for callee, param in onward)


def _loads(body: list[ast.stmt], name: str) -> Iterator[tuple[ast.Call | None, ast.Name]]:
    """Each read of ``name``'s incoming value in ``body``, with the call it is an argument of (or None),
    until a plain assignment at the body's own level binds the name anew."""
    for stmt in body:
        found = list(_visible_loads(stmt, name, None))
        yield from found
        targets = stmt.targets if isinstance(stmt, ast.Assign) else \
            [stmt.target] if isinstance(stmt, ast.AnnAssign) and stmt.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return


def _binds(node: ast.AST, name: str) -> bool:
    """Whether ``node`` (a comprehension, a lambda, an inner function) binds ``name`` for itself."""
    if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        return any(isinstance(n, ast.Name) and n.id == name for g in node.generators for n in ast.walk(g.target))
    if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):
        return name in parameter_names(node.args)
    return False


def _visible_loads(node: ast.AST, name: str, call: ast.Call | None) -> Iterator[tuple[ast.Call | None, ast.Name]]:
    """The loads of ``name`` under ``node`` that see the enclosing function's binding, each with the call
    ``node`` is a direct argument of (``call``; None for anything else)."""
    if _binds(node, name):
        if isinstance(node, (ast.Lambda, ast.FunctionDef, ast.AsyncFunctionDef)):  # defaults run outside
            for default in [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]:
                yield from _visible_loads(default, name, None)
        return
    if isinstance(node, ast.Name):
        if node.id == name and isinstance(node.ctx, ast.Load):
            yield call, node
        return
    if isinstance(node, ast.Call):
        yield from _visible_loads(node.func, name, None)
        for value in [*node.args, *(k.value for k in node.keywords)]:
            yield from _visible_loads(value, name, node)
        return
    for child in ast.iter_child_nodes(node):
        yield from _visible_loads(child, name, None)


def _handed_to(call: ast.Call | None, load: ast.Name,
               functions: dict[str, _Function]) -> tuple[_Function, str] | None:
    """The module's function and its parameter that ``load`` is handed to as an argument of ``call``
    (``(helper, "price")``; ``(helper, "options")`` for a ``**options`` that takes it), or None when the
    value is read otherwise (an expression, a call of anything but a function of the module)."""
    if call is None or not isinstance(call.func, ast.Name) or call.func.id not in functions:
        return None
    callee = functions[call.func.id]
    args = callee.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]]
    named = positional + [a.arg for a in args.kwonlyargs]
    for keyword in call.keywords:
        if keyword.value is load and keyword.arg is not None:
            if keyword.arg in named:
                return callee, keyword.arg
            return (callee, args.kwarg.arg) if args.kwarg else None
    for index, value in enumerate(call.args):
        if value is load and not isinstance(value, ast.Starred):
            if index < len(positional):
                return callee, positional[index]
            return (callee, args.vararg.arg) if args.vararg else None
    return None
