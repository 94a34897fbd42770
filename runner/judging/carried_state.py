"""Market data a tool keeps from one call to the next, read from its source.

Every judged call is a process of its own (:mod:`runner.judging.calls`), so a tool cannot tell its
calls apart -- and for the same reason no call can show what a tool keeps across calls: a cache of a
symbol's history, filled on the first call and never refreshed, answers every later call of a
long-lived process (a service that imports the registry's tools once) with the first call's data,
"latest" the first call's day forever. :func:`carried_state` finds the places such state lives:

* **module-level state written by a market reader** (a function that names ``yfinance`` or something
  imported from it, or calls such a function): a key, an attribute or a mutating method
  (``.update``, ``.append``, ``.setdefault``...) of a name bound at module level -- directly, through a
  local alias of it, or by an unbound call (``dict.setdefault(_CACHE, ...)``) --, a ``global`` rebound,
  a mutable default argument filled in, a class-level container every instance shares (``self.x[k]``
  of a class attribute, ``cls.x`` in a classmethod), the attributes of a module-level instance;
* **a reader memoised**: ``functools.cache``/``lru_cache`` (under any alias) as a decorator, or applied
  at import (``_closes = lru_cache(None)(_fetch)``);
* **state made at import**: a module-level binding whose value reads the market then (a call of a
  function that reads in its own body, not in a function it merely defines), a closure made by a
  call at import whose inner function stores into the maker's variables and reads the market (or
  wraps a reader handed to the maker: a hand-written memo), a generator of market data made at import.

State a function keeps for one call (a local dict, an instance built per call) is not carried, nor
is a memo of a function that never reads the market (a calendar rule, arithmetic), nor a factory
whose closure keeps only its arguments.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from finevo.pysource import defaulted, parameter_names, parse

#: The module every market read goes through (the shim a tool sees under this name).
_MARKET_MODULE = "yfinance"
#: Methods that store into the object they are called on.
_MUTATORS = frozenset({"update", "setdefault", "append", "extend", "insert", "add", "appendleft", "__setitem__"})
#: functools' memoisers, and the names a tool's own memo decorator is commonly given.
_MEMOISERS = frozenset({"cache", "lru_cache", "memoize", "memoise"})
#: Calls that build a mutable container (a default argument made of one is shared by every call).
_CONTAINERS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"})
#: Nodes whose bodies are scopes of their own (not run when the enclosing function runs).
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)

_Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class _Module:
    """What the rules read of a tool's module."""

    market: set[str]
    memoisers: set[str]
    functions: dict[str, _Function]
    readers: set[str]
    direct_readers: set[str]
    module_names: set[str]
    class_containers: set[str]
    singletons: set[str]
    methods: dict[int, str]


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
    classes = {c.name: c for c in tree.body if isinstance(c, ast.ClassDef)}
    module = _Module(
        market=market, memoisers=_memoiser_names(tree),
        functions={f.name: f for f in functions},
        readers=_readers(functions, market, own_body=False), direct_readers=_readers(functions, market, own_body=True),
        module_names=_module_names(tree), class_containers=_class_containers(classes),
        singletons=_singletons(tree, classes),
        methods={id(f): cls.name for cls in classes.values() for f in cls.body
                 if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))})
    for func in functions:
        if func.name in module.readers:
            found = _kept_by(func, module)
            if found:
                return found
    return _made_at_import(tree, module)


# --------------------------------------------------------------------------- what the module holds
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


def _memoiser_names(tree: ast.Module) -> set[str]:
    """The names a memoiser goes by here: functools' own (``cache``, ``lru_cache``, any alias of them)."""
    names = set(_MEMOISERS)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "functools":
            names |= {a.asname for a in node.names if a.asname and a.name in _MEMOISERS}
    return names


def _own_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of ``node``'s body that runs when it runs: nested functions, lambdas and classes left out."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, _SCOPES):
            yield child
            yield from _own_nodes(child)


def _called_name(node: ast.Call) -> str | None:
    """The name a call names: ``f`` of ``f(x)``, ``m`` of ``self.m(x)`` or ``cls.m(x)`` (a method of the
    module's own; ``d.get(k)`` names no function of the module), else None."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id in ("self", "cls"):
        return func.attr
    return None


def _readers(functions: list[_Function], market: set[str], *, own_body: bool) -> set[str]:
    """The names of the functions that read the market: naming a market name, or calling a reader, in
    their whole body (``own_body=False``: a function that defines a reader counts) or in the part that
    runs when they are called."""
    nodes = {f.name: list(_own_nodes(f)) if own_body else [n for s in f.body for n in ast.walk(s)]
             for f in functions}
    readers: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, body in nodes.items():
            if name not in readers and (
                    any(isinstance(n, ast.Name) and n.id in market for n in body)
                    or any(isinstance(n, ast.Call) and _called_name(n) in readers for n in body)):
                readers.add(name)
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


def _mutable(node: ast.expr, classes: dict[str, ast.ClassDef] | None = None) -> bool:
    """Whether ``node`` builds a mutable object: a container, or an instance of one of ``classes``."""
    if isinstance(node, (ast.Dict, ast.List, ast.Set)):
        return True
    name = _called_name(node) if isinstance(node, ast.Call) else None
    return name in _CONTAINERS or (classes is not None and name in classes)


def _class_containers(classes: dict[str, ast.ClassDef]) -> set[str]:
    """The attribute names a module-level class binds in its own body to a mutable object (one object
    every instance shares: ``self.cache[k] = v`` fills it for every later call)."""
    return {n.id for cls in classes.values() for stmt in cls.body
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None
            and _mutable(stmt.value, classes)
            for t in (stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target])
            for n in ast.walk(t) if isinstance(n, ast.Name)}


def _singletons(tree: ast.Module, classes: dict[str, ast.ClassDef]) -> set[str]:
    """The classes of the module with an instance made at import (``_MARKET = _Market()``): their
    methods' ``self`` is one object for every call."""
    return {name for stmt in tree.body if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None
            for node in ast.walk(stmt.value) if isinstance(node, ast.Call)
            for name in [_called_name(node)] if name in classes}


# --------------------------------------------------------------------------- state a reader writes
def _root(node: ast.expr) -> str | None:
    """The name an attribute or subscript chain starts from (``cache`` of ``cache[k].x``)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _first_attribute(node: ast.expr, owner: str | None) -> str | None:
    """``x`` of a chain starting ``owner.x`` (``self.cache[k]``), else None."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == owner:
            return node.attr
        node = node.value
    return None


def _stores(func: _Function) -> Iterator[tuple[ast.AST, ast.expr]]:
    """Each place in ``func`` that stores into an object (``x[k] = v``, ``x.a = v``, ``del x[k]``, a
    mutating method, an unbound one such as ``dict.setdefault(x, k, v)``), with the object's expression."""
    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, (ast.Subscript, ast.Attribute)) and isinstance(part.ctx, (ast.Store, ast.Del)):
                        yield node, part
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _MUTATORS:
            unbound = isinstance(node.func.value, ast.Name) and node.func.value.id in _CONTAINERS and node.args
            yield node, node.args[0] if unbound else node.func.value


def _kept_by(func: _Function, module: _Module) -> str | None:
    """What ``func`` (a market reader) keeps across calls, in words, or None."""
    for decorator in func.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        name = target.attr if isinstance(target, ast.Attribute) else target.id if isinstance(target, ast.Name) else ""
        if name in module.memoisers:
            return f"{func.name} (line {func.lineno}) is memoised with {ast.unparse(target)}"
    declared = {n for node in ast.walk(func) if isinstance(node, ast.Global) for n in node.names}
    for node in ast.walk(func):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id in declared:
            return f"global {node.id} rebound in {func.name} (line {node.lineno})"
    arguments = [*func.args.posonlyargs, *func.args.args]
    local = parameter_names(func.args) | {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
                                          and isinstance(n.ctx, ast.Store)}
    # a local bound to a module-level name is that object (``box = _CACHE; box[k] = v``)
    aliases = {t.id: node.value.id for node in ast.walk(func)
               if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
               and node.value.id in module.module_names and node.value.id not in local - declared
               for t in node.targets if isinstance(t, ast.Name)}
    shared = {name for name, _ in _defaulted_mutables(func)}
    owner = arguments[0].arg if arguments else None
    is_classmethod = any(isinstance(d, ast.Name) and d.id == "classmethod" for d in func.decorator_list)
    in_singleton = module.methods.get(id(func)) in module.singletons
    for node, stored in _stores(func):
        root, line = _root(stored), getattr(node, "lineno", func.lineno)
        where = f"in {func.name} (line {line})"
        if root in shared:
            return f"{func.name}'s default argument {root} filled (line {line})"
        if root in aliases:
            return f"module-level {aliases[root]} written through {root} {where}"
        if root is not None and root in module.module_names and (root not in local or root in declared):
            return f"module-level {root} written {where}"
        if owner is not None and root == owner and module.methods.get(id(func)) is not None:
            attribute = _first_attribute(stored, owner)
            if is_classmethod:
                return f"class-level {attribute} written {where}"
            rebound = isinstance(stored, ast.Attribute) and isinstance(stored.value, ast.Name)
            if attribute in module.class_containers and not rebound:  # ``self.x = ...`` makes the instance's own
                return f"class-level {attribute}, shared by every instance, written {where}"
            if in_singleton:
                return f"{attribute} of the instance made at import written {where}"
    return None


def _defaulted_mutables(func: _Function) -> list[tuple[str, ast.expr]]:
    """``(name, default)`` of the parameters of ``func`` whose default is a mutable container (one
    object shared by every call)."""
    return [(name, default) for name, default in defaulted(func.args) if _mutable(default)]


# --------------------------------------------------------------------------- state made at import
def _made_at_import(tree: ast.Module, module: _Module) -> str | None:
    """A module-level binding made by a call that keeps market data for every later call."""
    for stmt in tree.body:
        if not isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)) or stmt.value is None:
            continue
        for node in ast.walk(stmt.value):
            if isinstance(node, ast.Call):
                found = _call_at_import(node, module)
                if found:
                    return f"{found} (line {node.lineno})"
    return None


def _call_at_import(call: ast.Call, module: _Module) -> str | None:
    """What ``call``, made at import, keeps: market data read then, a memoised reader, a closure or a
    generator of market data; None for a call that keeps none."""
    func = call.func
    if any(isinstance(n, ast.Name) and n.id in module.market for n in ast.walk(func)):
        return "market data read at import"
    handed = [a.id for a in call.args if isinstance(a, ast.Name) and a.id in module.readers]
    memoiser = func.func if isinstance(func, ast.Call) else func
    if isinstance(memoiser, (ast.Name, ast.Attribute)) and handed and \
            (memoiser.id if isinstance(memoiser, ast.Name) else memoiser.attr) in module.memoisers:
        return f"{handed[0]} memoised at import with {ast.unparse(memoiser)}"
    name = _called_name(call)
    maker = module.functions.get(name) if name is not None else None
    if maker is None:
        return None
    if name in module.direct_readers:
        is_generator = any(isinstance(n, (ast.Yield, ast.YieldFrom)) for n in _own_nodes(maker))
        return f"a generator of market data made at import by {name}" if is_generator else \
            f"market data read at import by {name}"
    kept = _closure_state(maker)
    if kept is not None and (kept.name in module.readers or handed):
        return f"a closure made at import by {name} keeps state in {kept.name}"
    return None


def _closure_state(maker: _Function) -> _Function | None:
    """The function ``maker`` defines that stores into ``maker``'s own variables (a captured dict filled
    by key, a ``nonlocal`` rebound): state that lives as long as the closure does."""
    captured = {a.arg for a in [*maker.args.posonlyargs, *maker.args.args, *maker.args.kwonlyargs]} | \
        {n.id for n in _own_nodes(maker) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    inners = [n for n in ast.walk(maker) if n is not maker and isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for inner in inners:
        if any(isinstance(n, ast.Nonlocal) for n in ast.walk(inner)):
            return inner
        if any(_root(stored) in captured for _, stored in _stores(inner)):
            return inner
    return None
