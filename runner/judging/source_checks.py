"""What the judge reads in a final tool's source without running it: what no call can show.

**A parameter declared and never read.** The registry matches a later task to a stored tool by its
signature (:mod:`finevo.registry.signature`) and calls it with that task's arguments, so every
parameter a tool declares is a promise: a later task that passes ``trading_days=365`` to a
volatility tool declaring ``trading_days: int = 252`` expects an answer annualised over 365. A tool
whose body never reads such a parameter (it hard-codes the default in its formula, or binds the
name anew before reading it) answers every such task with the default's figure, and no call with the
task's own arguments can show it: the gate's probes only move the parameters it knows by name (the
task's arguments, the measure's optional parameters of :func:`runner.judging.probes.optional_probes`).
Left alone, because a reading of the task may ignore them: the task's own arguments (whole-history
RSI ignores ``days`` and is accepted; the probes judge what a tool does with them), ``*args`` and
``**kwargs``, and names starting with ``_`` (private by the usual rule: no caller passes them). A
function that reads its own ``locals()`` or ``vars()`` is not judged by this rule.

**Market data kept from one call to the next.** Every judged call is a process of its own
(:mod:`runner.judging.calls`), so a tool cannot tell its calls apart -- and for the same reason no
call can show what a tool keeps across calls: a module-level cache of a symbol's history, filled on
the first call and never refreshed, answers every later call of a long-lived process (a service
that imports the registry's tools once) with the first call's data, "latest" the first call's day
forever. :func:`carried_state` finds such state in the source: a function that reads the market (names
``yfinance`` or something imported from it, or calls such a function) and writes into a name bound
at module level (a dict filled by key, an attribute set, ``.update``/``.append``/``.setdefault``...),
rebinds one through ``global``, fills a mutable default argument, or is memoised
(``functools.cache``/``lru_cache``); and market data read at import (a module-level name bound to a
call that reads it). State a function keeps for one call (a local dict, an instance built per call) is not carried,
nor is a memo of a function that never reads the market (a calendar rule, arithmetic).
"""

from __future__ import annotations

import ast
from collections.abc import Collection, Iterator

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


#: The module every market read goes through (the shim a tool sees under this name).
_MARKET_MODULE = "yfinance"
#: Methods that store into the object they are called on.
_MUTATORS = frozenset({"update", "setdefault", "append", "extend", "insert", "add", "appendleft", "__setitem__"})
#: Decorators that keep a function's results across calls (by their last dotted part).
_MEMOISERS = frozenset({"cache", "lru_cache", "memoize", "memoise"})
#: Calls that build a mutable container (a default argument made of one is shared by every call).
_CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"})

_Function = ast.FunctionDef | ast.AsyncFunctionDef


def carried_state(code: str) -> str | None:
    """Where ``code`` keeps market data from one call to the next, in words naming the line (the first
    place found), or None when it keeps none or does not parse."""
    try:
        tree = parse(code)
    except (SyntaxError, ValueError):
        return None
    market = _market_names(tree)
    if not market:
        return None
    functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    readers = _readers(functions, market)
    module_names = _module_names(tree)
    shared = _class_containers(tree)
    for func in functions:
        if func.name in readers:
            found = _kept_by(func, module_names, shared)
            if found:
                return found
    return _read_at_import(tree, market | readers)


def _market_names(tree: ast.Module) -> set[str]:
    """The names ``code`` binds to the market module or to something imported from it."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names
                      if a.name.split(".")[0] == _MARKET_MODULE}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == _MARKET_MODULE:
            names |= {a.asname or a.name for a in node.names}
    return names


def _called_name(node: ast.Call) -> str | None:
    """The name a call names: ``f`` of ``f(x)``, ``m`` of ``self.m(x)`` or ``cls.m(x)`` (a method of the
    module's own; ``d.get(k)`` names no function of the module), else None."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return func.attr
    return None


def _readers(functions: list[_Function], market: set[str]) -> set[str]:
    """The names of the functions that read the market: naming a market name, or calling a reader."""
    readers: set[str] = set()
    changed = True
    while changed:
        changed = False
        for func in functions:
            if func.name in readers:
                continue
            nodes = [n for stmt in func.body for n in ast.walk(stmt)]
            if any(isinstance(n, ast.Name) and n.id in market for n in nodes) or \
                    any(isinstance(n, ast.Call) and _called_name(n) in readers for n in nodes):
                readers.add(func.name)
                changed = True
    return readers


def _module_names(tree: ast.Module) -> set[str]:
    """The names bound at module level other than by an import (data, classes, functions)."""
    names: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(stmt.name)
        elif isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def _class_containers(tree: ast.Module) -> set[str]:
    """The attribute names that a module-level class binds in its own body to a mutable container (one
    object every instance shares: ``self.cache[k] = v`` fills it for every later call)."""
    return {n.id for cls in tree.body if isinstance(cls, ast.ClassDef) for stmt in cls.body
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None and _mutable(stmt.value)
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
            for n in ast.walk(t) if isinstance(n, ast.Name)}


def _mutable(node: ast.expr) -> bool:
    return isinstance(node, (ast.Dict, ast.List, ast.Set)) or \
        (isinstance(node, ast.Call) and _called_name(node) in _CONTAINERS)


def _self_attribute(node: ast.expr, owner: str | None) -> str | None:
    """``x`` of a chain starting ``owner.x`` (``self.cache[k]``), else None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == owner:
            return node.attr
        node = node.value
    return None


def _root(node: ast.expr) -> str | None:
    """The name an attribute or subscript chain starts from (``cache`` of ``cache[k].x``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _stores(func: _Function) -> Iterator[tuple[ast.AST, ast.expr]]:
    """Each place in ``func`` that stores into an object (``x[k] = v``, ``x.a = v``, ``del x[k]``, a
    mutating method), with the expression of the object stored into."""
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, (ast.Subscript, ast.Attribute)) and isinstance(part.ctx, (ast.Store, ast.Del)):
                        yield node, part
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            yield node, node.func.value


def _kept_by(func: _Function, module_names: set[str], class_containers: set[str]) -> str | None:
    """What ``func`` (a market reader) keeps across calls, in words, or None."""
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name in _MEMOISERS:
            return f"{func.name} (line {func.lineno}) is memoised with {ast.unparse(target)}"
    declared = {n for node in ast.walk(func) if isinstance(node, ast.Global) for n in node.names}
    arguments = [*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs, *
                 ([func.args.vararg] if func.args.vararg else []), *([func.args.kwarg] if func.args.kwarg else [])]
    local = {a.arg for a in arguments} | {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
                                          and isinstance(n.ctx, ast.Store)}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in declared:
            return f"global {node.id} rebound in {func.name} (line {node.lineno})"
    shared = _mutable_defaults(func)
    owner = arguments[0].arg if arguments else None
    for node, stored in _stores(func):
        root, line = _root(stored), getattr(node, "lineno", func.lineno)
        if root in shared:
            return f"{func.name}'s default argument {root} filled (line {line})"
        if root is not None and root in module_names and (root not in local or root in declared):
            return f"module-level {root} written in {func.name} (line {line})"
        attribute = _self_attribute(stored, owner)
        if attribute in class_containers:
            return f"class-level {attribute}, shared by every instance, written in {func.name} (line {line})"
    return None


def _mutable_defaults(func: _Function) -> set[str]:
    """The parameters of ``func`` whose default is a mutable container (one object shared by every call)."""
    return {name for name, default in _defaulted(func.args) if _mutable(default)}


def _read_at_import(tree: ast.Module, readers: set[str]) -> str | None:
    """A module-level binding whose value reads the market when the module is imported (a call of a market
    name or of a reader: ``_SPY = yf.Ticker("SPY").history(...)``), kept for every call; a call made for
    its effect alone keeps nothing."""
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or stmt.value is None:
            continue
        for node in ast.walk(stmt.value):
            if isinstance(node, ast.Call) and any(isinstance(n, ast.Name) and n.id in readers
                                                  for n in ast.walk(node.func)):
                return f"market data read at import (line {node.lineno})"
    return None
