"""The policy's pre-pass: every name binding of a tool, resolved to its scope before any rule is
judged.

Python decides what a name means by scope, not by the order a checker happens to visit code in:
an import inside ``if False:``, ``except ImportError:``, ``if TYPE_CHECKING:`` or an uncalled
function binds its name just as much as one on the first line, ``match`` captures, the walrus,
comprehension and loop targets, ``with ... as``, ``except ... as``, ``del`` and parameters bind
names too, and ``global`` / ``nonlocal`` move a binding into another scope. This module walks the
tree once, records each binding in the scope that owns it (:class:`Scope`), remembers the scope
each name is *used* in, and answers the checker's questions per use site (:class:`Bindings`):
which import a name stands for, whether it is a parameter, whether it can only be a builtin.

It also finds the bindings no rule can judge soundly: a name bound to two different modules in
one scope, an import that shadows a builtin the policy refuses (where the import does not run,
the name is the builtin), an imported name rebound any other way, or reached through
``global`` / ``nonlocal``.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum

from finevo.policy import tables as T
from finevo.policy.rules import Rule

_BUILTIN_NAMES: frozenset[str] = frozenset(dir(builtins))

#: Builtins an import may not shadow: the policy refuses them as names, or trusts that a name is
#: not them, so a shadowing import that never runs would hand the checked code the builtin itself.
SHADOW_PROTECTED: frozenset[str] = T.FORBIDDEN_BUILTINS | {"type", "bytes", "bytearray", "super", "object"}


class Kind(StrEnum):
    """How a name is bound."""

    IMPORT = "import"
    PARAM = "parameter"
    DEF = "def"
    CLASS = "class"
    ASSIGN = "assignment"
    LOOP = "for target"
    WITH = "with target"
    EXCEPT = "except target"
    MATCH = "match capture"
    WALRUS = "walrus"
    COMPREHENSION = "comprehension target"
    DELETE = "del"


class ScopeKind(StrEnum):
    MODULE = "module"
    FUNCTION = "function"
    LAMBDA = "lambda"
    CLASS = "class"
    COMPREHENSION = "comprehension"


@dataclass(frozen=True)
class Binding:
    """One place a name is bound. ``route`` is the dotted import route for imports; ``value`` the
    expression whose result the name receives (an assignment's value, a loop's or comprehension's
    iterable, a ``with`` item, a ``match`` subject), when there is one."""

    name: str
    kind: Kind
    node: ast.AST
    route: str | None = None
    value: ast.expr | None = None

    @property
    def is_none_fallback(self) -> bool:
        """``name = None`` (the ``except ImportError: np = None`` fallback): harmless next to an import."""
        return self.kind is Kind.ASSIGN and isinstance(self.value, ast.Constant) and self.value.value is None


@dataclass(eq=False)
class Scope:
    kind: ScopeKind
    node: ast.AST
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    declared_global: dict[str, ast.AST] = field(default_factory=dict)
    declared_nonlocal: dict[str, ast.AST] = field(default_factory=dict)
    redirect: dict[str, Scope] = field(default_factory=dict)

    def bind(self, binding: Binding) -> None:
        self.bindings.setdefault(binding.name, []).append(binding)

    @property
    def is_function_like(self) -> bool:
        return self.kind in (ScopeKind.FUNCTION, ScopeKind.LAMBDA)


@dataclass(frozen=True)
class Conflict:
    """A binding no rule can judge soundly; the checker reports it as a violation."""

    rule: Rule
    node: ast.AST
    message: str


class _Builder(ast.NodeVisitor):
    """Walks the tree once, creating scopes and recording bindings and use sites."""

    def __init__(self, tree: ast.Module) -> None:
        self.module = Scope(ScopeKind.MODULE, tree, None)
        self.scope = self.module
        self.scopes: list[Scope] = [self.module]
        self.scope_of: dict[int, Scope] = {}
        self.context: tuple[Kind, ast.expr | None] = (Kind.ASSIGN, None)
        self.subjects: list[ast.expr] = []

    # -- helpers
    def _enter(self, kind: ScopeKind, node: ast.AST) -> Scope:
        new = Scope(kind, node, self.scope)
        self.scopes.append(new)
        self.scope = new
        return new

    def _leave(self, previous: Scope) -> None:
        self.scope = previous

    def _bind(self, name: str, kind: Kind, node: ast.AST, *, route: str | None = None,
              value: ast.expr | None = None, scope: Scope | None = None) -> None:
        (scope or self.scope).bind(Binding(name, kind, node, route, value))

    def _targets(self, targets: list[ast.expr], kind: Kind, value: ast.expr | None) -> None:
        saved = self.context
        self.context = (kind, value)
        for t in targets:
            self.visit(t)
        self.context = saved

    def _arguments_outside(self, args: ast.arguments) -> None:
        for d in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            self.visit(d)
        for a in _all_args(args):
            if a.annotation is not None:
                self.visit(a.annotation)

    def _bind_params(self, args: ast.arguments) -> None:
        for a in _all_args(args):
            self._bind(a.arg, Kind.PARAM, a)

    # -- names
    def visit_Name(self, node: ast.Name) -> None:
        self.scope_of[id(node)] = self.scope
        if isinstance(node.ctx, ast.Store):
            kind, value = self.context
            self._bind(node.id, kind, node, value=value)
        elif isinstance(node.ctx, ast.Del):
            self._bind(node.id, Kind.DELETE, node)

    # -- statements that bind
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            where = alias if hasattr(alias, "lineno") else node
            if alias.asname:
                self._bind(alias.asname, Kind.IMPORT, where, route=alias.name)
            else:
                top = alias.name.split(".")[0]
                self._bind(top, Kind.IMPORT, where, route=top)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = ("." * node.level) + (node.module or "")
        for alias in node.names:
            if alias.name == "*":
                continue  # refused by the import-star rule
            where = alias if hasattr(alias, "lineno") else node
            self._bind(alias.asname or alias.name, Kind.IMPORT, where, route=f"{module}.{alias.name}")

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        self._targets(node.targets, Kind.ASSIGN, node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.annotation)
        self._targets([node.target], Kind.ASSIGN, node.value)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self._targets([node.target], Kind.ASSIGN, node.value)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.visit(node.iter)
        self._targets([node.target], Kind.LOOP, node.iter)
        for stmt in [*node.body, *node.orelse]:
            self.visit(stmt)

    visit_AsyncFor = visit_For

    def visit_With(self, node: ast.With | ast.AsyncWith) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._targets([item.optional_vars], Kind.WITH, item.context_expr)
        for stmt in node.body:
            self.visit(stmt)

    visit_AsyncWith = visit_With

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name:
            self._bind(node.name, Kind.EXCEPT, node)
        for stmt in node.body:
            self.visit(stmt)

    def visit_Global(self, node: ast.Global) -> None:
        for name in node.names:
            self.scope.declared_global[name] = node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for name in node.names:
            self.scope.declared_nonlocal[name] = node

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        target_scope = self.scope
        while target_scope.kind is ScopeKind.COMPREHENSION and target_scope.parent is not None:
            target_scope = target_scope.parent  # PEP 572: the walrus binds in the enclosing scope
        self.scope_of[id(node.target)] = target_scope
        self._bind(node.target.id, Kind.WALRUS, node.target, value=node.value, scope=target_scope)

    # -- match
    def visit_Match(self, node: ast.Match) -> None:
        self.visit(node.subject)
        self.subjects.append(node.subject)
        for case in node.cases:
            self.visit(case.pattern)
            if case.guard is not None:
                self.visit(case.guard)
            for stmt in case.body:
                self.visit(stmt)
        self.subjects.pop()

    def _capture(self, name: str | None, node: ast.AST) -> None:
        if name:
            self._bind(name, Kind.MATCH, node, value=self.subjects[-1] if self.subjects else None)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._capture(node.name, node)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._capture(node.name, node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._capture(node.rest, node)
        self.generic_visit(node)

    # -- scopes
    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for dec in node.decorator_list:
            self.visit(dec)
        self._arguments_outside(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        self._bind(node.name, Kind.DEF, node)
        outer = self.scope
        self._enter(ScopeKind.FUNCTION, node)
        self._bind_params(node.args)
        for stmt in node.body:
            self.visit(stmt)
        self._leave(outer)

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._arguments_outside(node.args)
        outer = self.scope
        self._enter(ScopeKind.LAMBDA, node)
        self._bind_params(node.args)
        self.visit(node.body)
        self._leave(outer)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for dec in node.decorator_list:
            self.visit(dec)
        for base in node.bases:
            self.visit(base)
        for kw in node.keywords:
            self.visit(kw.value)
        outer = self.scope
        self._enter(ScopeKind.CLASS, node)
        for stmt in node.body:
            self.visit(stmt)
        self._leave(outer)
        self._bind(node.name, Kind.CLASS, node)

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp) -> None:
        generators = node.generators
        self.visit(generators[0].iter)  # evaluated in the enclosing scope
        outer = self.scope
        self._enter(ScopeKind.COMPREHENSION, node)
        for i, gen in enumerate(generators):
            if i:
                self.visit(gen.iter)
            self._targets([gen.target], Kind.COMPREHENSION, gen.iter)
            for cond in gen.ifs:
                self.visit(cond)
        if isinstance(node, ast.DictComp):
            self.visit(node.key)
            self.visit(node.value)
        else:
            self.visit(node.elt)
        self._leave(outer)

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_GeneratorExp = _comprehension
    visit_DictComp = _comprehension


#: Import routes the checker trusts by name (a call, a decorator, a keyword check depends on them).
TRUSTED_ROUTES: frozenset[str] = (T.SAFE_DECORATOR_ROUTES | frozenset(T.FORBIDDEN_KEYWORDS)
                                  | {"typing.cast", "functools.partial", "functools.wraps"})


def _plain_attribute_route(route: str | None) -> bool:
    """A route naming an ordinary function or class of an allowed module (``numpy.trapz``): never a
    module, a raw array type or a route the checker trusts by name. Two such imports under one name
    (``from numpy import trapezoid`` / ``except ImportError: from numpy import trapz as trapezoid``)
    leave nothing for a rule to misjudge: the name is checked as a plain callable either way."""
    if route is None:
        return False
    parts = route.split(".")
    parent, last = ".".join(parts[:-1]), parts[-1]
    return (len(parts) > 1 and parts[0] in T.ALLOWED_IMPORTS and route not in TRUSTED_ROUTES
            and route not in T.ALLOWED_SUBMODULES and route not in T.PASS_THROUGH
            and last not in T.KNOWN_SUBMODULES.get(parent, ()) and last not in T.MODULE_NAMES
            and last not in T.DOOR_MODULE_NAMES and last not in T.RAW_ARRAY_TYPES
            and not last.startswith("_") and parent not in T.KNOWN_SUBMODULES.get(parts[0], ()))


def _all_args(args: ast.arguments) -> list[ast.arg]:
    found = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    found += [x for x in (args.vararg, args.kwarg) if x is not None]
    return found


def _enclosing_function(scope: Scope | None) -> Scope | None:
    while scope is not None and not scope.is_function_like:
        scope = scope.parent
    return scope


class Bindings:
    """Every binding of one tool, by scope, and the answers the checker needs per use site."""

    def __init__(self, tree: ast.Module) -> None:
        builder = _Builder(tree)
        builder.visit(tree)
        self.module = builder.module
        self.scopes = builder.scopes
        self._scope_of = builder.scope_of
        self.conflicts: list[Conflict] = []
        self._place_declared_names()
        self.all: list[Binding] = [b for s in self.scopes for bs in s.bindings.values() for b in bs]
        self.bound_anywhere: frozenset[str] = frozenset(b.name for b in self.all)
        self.imported_anywhere: frozenset[str] = frozenset(b.name for b in self.all if b.kind is Kind.IMPORT)
        self._find_conflicts()
        self._holding: dict[int, bool] = {}

    # ------------------------------------------------------------------ global / nonlocal
    def _place_declared_names(self) -> None:
        """Move bindings of ``global`` / ``nonlocal`` names to the scope that owns them."""
        for scope in self.scopes:
            for name, decl in scope.declared_global.items():
                self._redirect(scope, name, self.module, decl)
            for name, decl in scope.declared_nonlocal.items():
                owner = _enclosing_function(scope.parent)
                while owner is not None and name not in owner.bindings and name not in owner.declared_nonlocal:
                    owner = _enclosing_function(owner.parent)
                if owner is None:
                    self.conflicts.append(Conflict(Rule.AMBIGUOUS_BINDING, decl, f"nonlocal '{name}' has no "
                                                   "binding in an enclosing function"))
                    owner = self.module
                self._redirect(scope, name, owner, decl)

    def _redirect(self, scope: Scope, name: str, owner: Scope, decl: ast.AST) -> None:
        while name in owner.redirect:  # nonlocal of a name the owner itself declared global
            owner = owner.redirect[name]
        scope.redirect[name] = owner
        for b in scope.bindings.pop(name, []):
            owner.bind(b)
        if any(b.kind is Kind.IMPORT for b in owner.bindings.get(name, [])) or name in self._imports_in(owner):
            self.conflicts.append(Conflict(Rule.AMBIGUOUS_BINDING, decl, f"'{name}' is an imported name; "
                                           "declaring it global or nonlocal lets a function rebind it"))

    @staticmethod
    def _imports_in(scope: Scope) -> set[str]:
        return {n for n, bs in scope.bindings.items() if any(b.kind is Kind.IMPORT for b in bs)}

    # ------------------------------------------------------------------ conflicts
    def _find_conflicts(self) -> None:
        for scope in self.scopes:
            for name, found in scope.bindings.items():
                routes = {b.route for b in found if b.kind is Kind.IMPORT}
                if len(routes) > 1 and not all(_plain_attribute_route(r) for r in routes):
                    first = next(b for b in found if b.kind is Kind.IMPORT)
                    for b in found:
                        if b.kind is Kind.IMPORT and b.route != first.route:
                            self.conflicts.append(Conflict(
                                Rule.AMBIGUOUS_BINDING, b.node,
                                f"'{name}' is imported as '{first.route}' and as '{b.route}' in the same "
                                "scope: which one it is depends on which branch runs"))
        for scope in self.scopes:
            imported_here = self._imports_in(scope)
            for name, found in scope.bindings.items():
                for b in found:
                    if b.kind is Kind.IMPORT and name in SHADOW_PROTECTED:
                        self.conflicts.append(Conflict(
                            Rule.AMBIGUOUS_BINDING, b.node,
                            f"importing a name that shadows the builtin '{name}' is not allowed: where the "
                            "import does not run, the name is the builtin (use the module's attribute instead)"))
                    elif b.kind not in (Kind.IMPORT, Kind.PARAM) and not b.is_none_fallback \
                            and self._rebinds_an_import(scope, name, imported_here):
                        self.conflicts.append(Conflict(
                            Rule.IMPORT_REBOUND, b.node,
                            f"'{name}' is an imported name; binding it as a {b.kind} is not allowed "
                            "(only '= None' as an import fallback)"))

    def _rebinds_an_import(self, scope: Scope, name: str, imported_here: set[str]) -> bool:
        """A non-import binding of an imported name is refused in the scope of the import, and in
        module and class scopes wherever the import is (a binding there that has not run falls
        through to the enclosing or global name). A function's own local of that name only shadows
        it there, like a parameter: every use in the function resolves to the local."""
        if name not in self.imported_anywhere:
            return False
        return name in imported_here or scope.kind in (ScopeKind.MODULE, ScopeKind.CLASS)

    # ------------------------------------------------------------------ per use site
    def scope_of(self, node: ast.Name) -> Scope:
        return self._scope_of.get(id(node), self.module)

    def owner(self, node: ast.Name) -> Scope | None:
        """The scope whose binding ``node`` reads, or None when it can only be a builtin (or a
        global injected at run time)."""
        scope: Scope | None = self.scope_of(node)
        first = True
        name = node.id
        while scope is not None:
            if name in scope.redirect:
                return scope.redirect[name]
            if name in scope.bindings and (first or scope.kind is not ScopeKind.CLASS):
                return scope
            first = False
            scope = scope.parent
        return None

    def bindings_of(self, node: ast.Name) -> list[Binding]:
        owner = self.owner(node)
        return owner.bindings.get(node.id, []) if owner is not None else []

    def import_route(self, node: ast.Name) -> str | None:
        """The import route ``node`` stands for, or None when it is not (only) that import."""
        found = [b for b in self.bindings_of(node) if not b.is_none_fallback]
        if not found or any(b.kind is not Kind.IMPORT for b in found):
            return None
        routes = {b.route for b in found}
        return found[0].route if len(routes) == 1 else None

    def is_param(self, node: ast.Name) -> bool:
        return any(b.kind is Kind.PARAM for b in self.bindings_of(node))

    def surely_builtin(self, node: ast.expr, names: frozenset[str] | None = None) -> bool:
        """``node`` names a builtin and nothing in the tool can have rebound it."""
        return isinstance(node, ast.Name) and (names is None or node.id in names) \
            and node.id in _BUILTIN_NAMES and self.owner(node) is None

    def may_be_builtin(self, node: ast.expr, names: frozenset[str]) -> bool:
        """``node`` may be one of the builtins ``names`` at run time: not bound at all, or bound only at
        module or class level, where a binding that has not run (a dead branch, a later line) falls
        through to the builtin."""
        if not (isinstance(node, ast.Name) and node.id in names):
            return False
        owner = self.owner(node)
        return owner is None or owner.kind in (ScopeKind.MODULE, ScopeKind.CLASS)

    def is_callable_definition(self, node: ast.Name) -> bool:
        """Bound only by def / class, an import, or the assignment of a lambda, in its scope."""
        found = self.bindings_of(node)
        return bool(found) and all(
            b.kind in (Kind.DEF, Kind.CLASS, Kind.IMPORT) or (b.kind is Kind.ASSIGN and isinstance(b.value, ast.Lambda)
                                                             and isinstance(b.node, ast.Name))
            for b in found)

    def class_statement_names(self) -> frozenset[str]:
        """Names bound exactly once, by a class statement, anywhere in the tool."""
        kinds: dict[str, list[Kind]] = {}
        for b in self.all:
            kinds.setdefault(b.name, []).append(b.kind)
        return frozenset(n for n, ks in kinds.items() if ks == [Kind.CLASS])

    def holds_module_member(self, node: ast.Name) -> bool:
        """Whether a binding of ``node`` may give it something reached from an imported module
        (``C = json.JSONEncoder``, ``for C in (json.JSONEncoder,)``, ``case C:`` on such a subject):
        storing an attribute through it changes the library."""
        return any(b.kind is Kind.IMPORT or (b.value is not None and self._may_hold_member(b.value))
                   for b in self.bindings_of(node) if b.kind not in (Kind.PARAM, Kind.DEF, Kind.CLASS))

    def may_hold_member(self, expr: ast.expr) -> bool:
        """Whether ``expr`` may evaluate to something reached from an imported module: a name that
        holds one, an item of a container or a conditional holding one, ``next(iter([...]))``..."""
        return self._may_hold_member(expr)

    def _may_hold_member(self, expr: ast.expr) -> bool:
        key = id(expr)
        if key not in self._holding:
            self._holding[key] = False  # cycles (x = x.y) end here
            self._holding[key] = any(self._is_member_chain(e) for e in _value_parts(expr))
        return self._holding[key]

    def _is_member_chain(self, expr: ast.expr) -> bool:
        root = expr
        while isinstance(root, (ast.Attribute, ast.Subscript)):
            root = root.value
        if not isinstance(root, ast.Name):
            return False
        return self.import_route(root) is not None or self.holds_module_member(root)


def _value_parts(expr: ast.expr) -> Iterator[ast.expr]:
    """The sub-expressions whose value ``expr`` may hand on unchanged (containers, conditionals,
    ``or``, a walrus, starred items, arguments of builtins that return an item of their input)."""
    if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
        for e in expr.elts:
            yield from _value_parts(e)
    elif isinstance(expr, ast.Dict):
        for v in expr.values:
            yield from _value_parts(v)
    elif isinstance(expr, ast.IfExp):
        yield from _value_parts(expr.body)
        yield from _value_parts(expr.orelse)
    elif isinstance(expr, ast.BoolOp):
        for v in expr.values:
            yield from _value_parts(v)
    elif isinstance(expr, (ast.NamedExpr, ast.Starred, ast.Subscript)):
        yield from _value_parts(expr.value)
    elif isinstance(expr, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
        yield from _value_parts(expr.elt)
    elif isinstance(expr, ast.DictComp):
        yield from _value_parts(expr.value)
    elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id in _PASS_ON_BUILTINS:
        for a in expr.args:
            yield from _value_parts(a)
    else:
        yield expr


#: Builtins whose result is (an item of) their argument: ``next(iter([json.JSONEncoder]))``.
_PASS_ON_BUILTINS: frozenset[str] = frozenset({
    "next", "iter", "list", "tuple", "set", "frozenset", "dict", "max", "min", "sorted", "reversed",
    "enumerate", "zip", "filter", "map",
})
