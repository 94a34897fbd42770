"""Checks of calls: forbidden callables and keywords, formatters, aggregation and dispatch arguments."""

from __future__ import annotations

import ast

from finevo.policy import tables as T
from finevo.policy.names import NameChecks
from finevo.policy.rules import Rule
from finevo.policy.visitor import (
    _chain_root,
    _format_template_problem,
)


class CallChecks(NameChecks):

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "type" and not self._is_param(func):
            if len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
                self.ok_nodes.add(id(func))
                if id(node) not in self.compared:
                    # type(int) *is* type: kept or called, it builds classes (metaclasses,
                    # __match_args__ tricks) from plain strings that no attribute check sees.
                    self._flag(Rule.DYNAMIC_TYPE, node, "the result of type(x) may only be compared "
                               "(type(x) is float); use isinstance() otherwise")
            else:
                self.ok_nodes.add(id(func))
                self._flag(Rule.DYNAMIC_TYPE, node, "type() with more than one argument builds classes "
                           "dynamically; not allowed")
        elif isinstance(func, ast.Attribute):
            if func.attr in T.TEXT_WRITERS and self._text_writer_call_ok(node):
                self.ok_nodes.add(id(func))
            elif func.attr in T.OPTION_SETTERS:
                self.ok_nodes.add(id(func))
                self._check_option_call(node, func.attr)
            elif func.attr in T.DISPATCH_METHODS:
                self.ok_nodes.add(id(func))
                self._check_dispatch_call(node, func.attr)
            elif func.attr == "wraps":
                self._check_wraps_call(node)
        self._check_aggfunc_arguments(node)
        self._check_formatter_arguments(node)
        self._check_forbidden_keywords(node)
        if isinstance(func, ast.Attribute) and func.attr == "join":
            self._check_folded_text(node)
        if self.bindings.may_be_builtin(func, frozenset({"bytes", "bytearray"})) and len(node.args) == 1 \
                and not node.keywords \
                and not isinstance(node.args[0], ast.Constant):
            self._flag(Rule.RAW_MEMORY, node, f"'{func.id}(x)' copies any buffer, an object array's "  # type: ignore[attr-defined]
                       "addresses included; use a literal, or a string with an encoding")
        self.generic_visit(node)

    def _check_forbidden_keywords(self, node: ast.Call) -> None:
        """Keywords that hand a library call an object to rewrite (``catch_warnings(module=m)`` sets
        ``m.filters`` and ``m.showwarning``)."""
        route = self._dotted(node.func)
        for kw in node.keywords:
            if route is not None and kw.arg in T.FORBIDDEN_KEYWORDS.get(route, ()):
                self._flag(Rule.FORBIDDEN_ATTRIBUTE, kw.value, f"'{route}' with '{kw.arg}=' is not allowed: "
                           f"{T.FORBIDDEN_KEYWORDS_WHY[route]}")

    def _check_wraps_call(self, node: ast.Call) -> None:
        """``functools.wraps(f)`` only: its ``assigned`` / ``updated`` name attributes to copy
        (``updated=("__globals__",)`` merged another module's globals into the tool's)."""
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            self._flag(Rule.FORBIDDEN_ATTRIBUTE, node, "'wraps' takes exactly one function and no "
                       "assigned= / updated= (they copy attributes named by strings)")

    def _check_formatter_arguments(self, node: ast.Call) -> None:
        """pandas calls ``template.format(value)`` on formatter strings: the same rules as a
        literal ``.format`` template, and only functions, lambdas or such literals."""
        for kw in node.keywords:
            if kw.arg in T.FORMATTER_KEYWORDS:
                bad = self._formatter_problem(kw.value)
                if bad is not None:
                    self._flag(Rule.FORMAT_STRING, bad, f"'{kw.arg}' needs a function, a lambda or a plain "
                               "literal template (a computed template can reach attributes)")

    def _formatter_problem(self, expr: ast.expr) -> ast.expr | None:
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str) and _format_template_problem(expr.value) is not None:
                return expr
            return None if expr.value is None or isinstance(expr.value, str) else expr
        if isinstance(expr, ast.Lambda):
            return None
        if isinstance(expr, ast.Name):
            return None if self._callable_name(expr) else expr
        if isinstance(expr, ast.Attribute):
            if expr.attr == "format" and isinstance(expr.value, ast.Constant):
                return None  # '{:.2f}'.format: the template itself is checked as a format call
            return None if self._import_route_of_root(expr) else expr
        if isinstance(expr, (ast.List, ast.Tuple)):
            return next((b for b in map(self._formatter_problem, expr.elts) if b is not None), None)
        if isinstance(expr, ast.Dict):
            return next((b for b in map(self._formatter_problem, expr.values) if b is not None), None)
        return expr

    def _callable_name(self, expr: ast.Name) -> bool:
        """A function or class of the tool's own, an imported one, or a plain builtin function."""
        return self.bindings.is_callable_definition(expr) or self._is_builtin(expr, T.SAFE_CALLABLE_BUILTINS)

    @staticmethod
    def _called_name(node: ast.Call) -> str | None:
        func = node.func
        return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)

    def _check_aggfunc_arguments(self, node: ast.Call) -> None:
        """Functions named in ``aggfunc=`` (``pivot_table``, ``crosstab``, ``pd.NamedAgg``) are
        looked up with getattr like ``.agg``'s, so the same names only."""
        candidates = [kw.value for kw in node.keywords if kw.arg == "aggfunc"]
        name = self._called_name(node)
        if name == "NamedAgg":
            if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
                self._flag(Rule.DYNAMIC_DISPATCH, node, "'NamedAgg' with unpacked arguments is not allowed")
            elif len(node.args) < 2 and not any(k.arg == "aggfunc" for k in node.keywords):
                self._flag(Rule.DYNAMIC_DISPATCH, node, "'NamedAgg' needs its aggfunc written out")
        slot = T.AGGFUNC_POSITION.get(name or "")
        if slot is not None:
            on_module = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and self._imported(node.func.value) is not None
            slot += 1 if on_module and name == "pivot_table" else 0  # pd.pivot_table(data, ...)
            if len(node.args) > slot:
                self._flag(Rule.DYNAMIC_DISPATCH, node.args[slot], f"pass '{name}' its aggfunc by keyword "
                           "(aggfunc=...), so the function it names can be checked")
        if name == "NamedAgg" and len(node.args) > 1:
            candidates.append(node.args[1])
        for cand in candidates:
            bad = self._dispatch_problem(cand)
            if bad is not None:
                self._flag(Rule.DYNAMIC_DISPATCH, bad, "'aggfunc' needs a function, a lambda or one of the "
                           "named reductions (a computed name is looked up with getattr)")

    @staticmethod
    def _text_writer_call_ok(node: ast.Call) -> bool:
        if node.args:
            return False
        for kw in node.keywords:
            if kw.arg is None:
                return False
            if kw.arg in T.TEXT_WRITER_PATH_KEYWORDS and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is None):
                return False
        return True

    def _check_option_call(self, node: ast.Call, attr: str) -> None:
        if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            self._flag(Rule.PANDAS_OPTION, node, f"'{attr}' with unpacked arguments is not allowed")
            return
        keys = node.args if attr == "reset_option" else node.args[0::2]
        for key in keys:
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)
                    and key.value.startswith(T.SAFE_OPTION_PREFIXES)):
                self._flag(Rule.PANDAS_OPTION, key, f"'{attr}' option key must be a string literal starting "
                           f"with {', '.join(T.SAFE_OPTION_PREFIXES)} (plotting/io options load modules)")

    def _check_dispatch_call(self, node: ast.Call, attr: str) -> None:
        if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            self._flag(Rule.DYNAMIC_DISPATCH, node, f"'.{attr}' with unpacked arguments is not allowed")
            return
        candidates = node.args[:1] + [kw.value for kw in node.keywords if kw.arg == "func"]
        if attr in ("agg", "aggregate"):
            # named aggregation: .agg(out=("column", func)) or .agg(out=pd.NamedAgg(...)), written
            # out where they can be checked; a spec held in a variable could name anything
            for kw in node.keywords:
                if kw.arg in ("func", "axis", "engine", "engine_kwargs"):
                    continue
                if isinstance(kw.value, ast.Tuple) and len(kw.value.elts) == 2:
                    candidates.append(kw.value.elts[1])
                elif not (isinstance(kw.value, ast.Call) and self._called_name(kw.value) == "NamedAgg"):
                    self._flag(Rule.DYNAMIC_DISPATCH, kw.value, f"'.{attr}' named aggregation must be written "
                               "out: (column, function) or pd.NamedAgg(column, function)")
        for cand in candidates:
            bad = self._dispatch_problem(cand)
            if bad is not None:
                self._flag(Rule.DYNAMIC_DISPATCH, bad, f"'.{attr}' needs a function, a lambda or one of the "
                           "named reductions (a computed name is looked up with getattr)")

    def _dispatch_problem(self, expr: ast.expr) -> ast.expr | None:
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str) and expr.value not in T.SAFE_DISPATCH_NAMES:
                return expr
            return None
        if isinstance(expr, ast.Lambda):
            return None
        if isinstance(expr, ast.Name):
            if self._callable_name(expr):
                return None
            return expr
        if isinstance(expr, ast.Attribute):
            root = _chain_root(expr)
            if isinstance(root, ast.Name) and (self._callable_name(root) or self._imported(root)):
                return None
            return expr
        if isinstance(expr, (ast.List, ast.Tuple)):
            for e in expr.elts:
                bad = self._dispatch_problem(e)
                if bad is not None:
                    return bad
            return None
        if isinstance(expr, ast.Dict):
            for v in expr.values:
                bad = self._dispatch_problem(v)
                if bad is not None:
                    return bad
            return None
        if isinstance(expr, ast.Call) and self._dotted(expr.func) == "functools.partial":
            return None
        return expr
