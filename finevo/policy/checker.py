"""The AST walk behind :func:`finevo.policy.check`.

The checker never looks inside string literals, comments or docstrings as text; it judges the
syntax tree (plus the token stream for identifier spelling and the PEP 263 declaration).
"""

from __future__ import annotations

import ast

from finevo.policy import tables as T
from finevo.policy.calls import CallChecks
from finevo.policy.report import Violation
from finevo.policy.rules import Rule
from finevo.policy.visitor import (
    _check_characters,
    _check_encoding_declaration,
    _check_identifier_spelling,
    _dunder_in_text,
    is_dunder,
)
from finevo.pysource import parse


def check_source(code: object) -> list[Violation]:
    """All violations of ``code`` (unsorted, may hold duplicates)."""
    if not isinstance(code, str):
        return [Violation(Rule.INVALID_INPUT, f"source must be text, got {type(code).__name__}", 1, 1)]
    if len(code) > T.MAX_SOURCE_CHARS:
        return [Violation(Rule.TOO_LARGE, f"source has {len(code)} characters; the limit is "
                          f"{T.MAX_SOURCE_CHARS}", 1, 1)]
    found: list[Violation] = []
    found += _check_characters(code)
    if found:  # null bytes / lone surrogates / bidi controls: do not parse further
        return found
    found += _check_encoding_declaration(code)
    try:
        tree = parse(code, type_comments=False)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        return [*found, Violation(Rule.SYNTAX_ERROR, f"syntax error: {exc.msg}", line, max(col, 1))]
    except ValueError as exc:  # e.g. a source the compiler refuses outright
        return [*found, Violation(Rule.SYNTAX_ERROR, f"syntax error: {exc}", 1, 1)]
    found += _check_identifier_spelling(code)
    checker = _Checker(code, tree)
    checker.run()
    return found + checker.violations


class _Checker(CallChecks):
    """The whole walk: the groups of checks (visitor, attributes, names, calls) and the rest."""

    def run(self) -> None:
        for conflict in self.bindings.conflicts:
            self._flag(conflict.rule, conflict.node, conflict.message, at_start=True)
        self._check_folded_texts()
        self.visit(self.tree)

    # ------------------------------------------------------------------ calls
    # ------------------------------------------------------------------ strings
    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.docstrings:
            word = _dunder_in_text(node.value)
            if word is not None:
                self._flag(Rule.DUNDER_STRING, node, f"string data spells the dunder name '{word}': pandas "
                           "and numpy read labels and keys as attributes (a Series labelled "
                           "'__array_interface__' is raw memory)", at_start=True)



    def visit_Compare(self, node: ast.Compare) -> None:
        # type(x) may be an operand only where its comparison runs no tool code: ``is`` / ``is not``
        # (identity), or ``==`` / ``!=`` between type-like operands. Against a tool's object,
        # ``==`` and ``in`` call that object's __eq__ / __contains__ with the metaclass ``type``.
        operands = [node.left, *node.comparators]
        if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops) or (
                all(isinstance(op, (ast.Eq, ast.NotEq)) for op in node.ops)
                and all(self._type_like(o) for o in operands)):
            self.compared.update(id(o) for o in operands)
        self.generic_visit(node)

    def _type_like(self, node: ast.expr) -> bool:
        """``type(...)``, a builtin type's name, or a name reached from an imported module."""
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "type":
            return True
        if self._is_builtin(node, T.BUILTIN_TYPE_NAMES):
            return True
        return self._import_route_of_root(node) is not None

    # ------------------------------------------------------------------ definitions
    def _visit_arguments_outside(self, args: ast.arguments) -> None:
        for d in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            self.visit(d)
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                  *[x for x in (args.vararg, args.kwarg) if x is not None]]:
            if is_dunder(a.arg):
                self._flag(Rule.DUNDER_NAME, a, f"dunder parameter name '{a.arg}' is not allowed")
            if a.annotation is not None:
                self.visit(a.annotation)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if is_dunder(node.name):
            if not (self.class_depth and node.name in T.ALLOWED_DUNDER_METHODS):
                self._flag(Rule.DUNDER_NAME, node, f"defining '{node.name}' is not allowed")
        elif node.name in T.FORBIDDEN_BUILTINS or node.name == "type":
            self._flag(Rule.FORBIDDEN_BUILTIN, node, f"builtin '{node.name}' cannot be redefined")
        for dec in node.decorator_list:
            self._check_decorator(dec)
            self.visit(dec)
        self._visit_arguments_outside(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        saved_class = self.class_depth
        self.class_depth = 0
        self.function_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.function_depth -= 1
        self.class_depth = saved_class

    visit_FunctionDef = _visit_function

    visit_AsyncFunctionDef = _visit_function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_arguments_outside(node.args)
        self.visit(node.body)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if is_dunder(node.name):
            self._flag(Rule.DUNDER_NAME, node, f"class name '{node.name}' is not allowed")
        elif node.name in T.FORBIDDEN_BUILTINS or node.name == "type":
            self._flag(Rule.FORBIDDEN_BUILTIN, node, f"builtin '{node.name}' cannot be redefined")
        for kw in node.keywords:
            if kw.arg == "metaclass":
                self._flag(Rule.METACLASS, kw, "metaclass= is not allowed")
            else:
                self._flag(Rule.CLASS_KEYWORD, kw if kw.arg else node,
                           "class keywords (arguments to __init_subclass__) are not allowed")
        for dec in node.decorator_list:
            self._check_decorator(dec)
            self.visit(dec)
        for base in node.bases:
            self.visit(base)
        for kw in node.keywords:
            self.visit(kw.value)
        self.class_depth += 1
        for stmt in node.body:
            self.visit(stmt)
        self.class_depth -= 1

    def _check_decorator(self, dec: ast.expr) -> None:
        target = dec.func if isinstance(dec, ast.Call) else dec
        ok = (self._is_builtin(target, T.SAFE_DECORATOR_BUILTINS)
              or self._dotted(target) in T.SAFE_DECORATOR_ROUTES
              or (isinstance(target, ast.Attribute) and target.attr in ("setter", "getter", "deleter")
                  and isinstance(target.value, ast.Name) and bool(self.class_depth)))
        if ok and isinstance(dec, ast.Call):
            plain = all(isinstance(a, (ast.Constant, ast.Name)) for a in dec.args) and all(
                kw.arg is not None and isinstance(kw.value, (ast.Constant, ast.Name)) for kw in dec.keywords)
            ok = plain
        if not ok:
            self._flag(Rule.DECORATOR, dec, "decorator not allowed (allowed: "
                       + ", ".join(sorted(T.SAFE_DECORATOR_BUILTINS | T.SAFE_DECORATOR_ROUTES))
                       + ", with literal arguments)", at_start=True)

    # ------------------------------------------------------------------ misc
    def visit_keyword(self, node: ast.keyword) -> None:
        self.generic_visit(node)
