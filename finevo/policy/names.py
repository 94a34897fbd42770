"""Checks of imports and names: what may be imported, which names may be read or bound."""

from __future__ import annotations

import ast

from finevo.policy import tables as T
from finevo.policy.attributes import AttributeChecks
from finevo.policy.rules import Rule
from finevo.policy.visitor import (
    _BUILTIN_NAMES,
    is_dunder,
)


class NameChecks(AttributeChecks):

    # ------------------------------------------------------------------ imports
    def _import_in_class_body(self, node: ast.Import | ast.ImportFrom) -> bool:
        if self.class_depth:
            self._flag(Rule.MODULE_VALUE, node, "an import in a class body makes the module an attribute "
                       "of the class (Box.np), a module value that escapes the route checks")
        return bool(self.class_depth)

    def _import_path_ok(self, parts: list[str], where: ast.AST) -> bool:
        """Every dotted step of an import's module path must be an allowed submodule (or a pass-through
        to one): ``pandas._libs.lib`` or ``numpy._core.multiarray`` are never imported."""
        for i in range(2, len(parts) + 1):
            route = ".".join(parts[:i])
            if route not in T.ALLOWED_SUBMODULES and route not in T.PASS_THROUGH:
                self._flag(Rule.SUBMODULE_NOT_ALLOWED, where, f"module route '{route}' is not allowed (only "
                           "the allowed submodules may be imported)")
                return False
        return True

    def visit_Import(self, node: ast.Import) -> None:
        if self._import_in_class_body(node):
            return
        for alias in node.names:
            where = alias if hasattr(alias, "lineno") else node
            parts = alias.name.split(".")
            if parts[0] not in T.ALLOWED_IMPORTS:
                self._flag(Rule.IMPORT_NOT_ALLOWED, where, f"import of '{alias.name}' is not allowed "
                           f"(allowed: {', '.join(sorted(T.ALLOWED_IMPORTS))})")
                continue
            if len(parts) > 1:
                before = len(self.violations)
                self._check_route(parts[:1], [(p, where) for p in parts[1:]])
                if len(self.violations) == before:
                    self._import_path_ok(parts, where)
                if len(self.violations) > before:
                    continue
                if ".".join(parts) in T.PASS_THROUGH:
                    self._flag(Rule.SUBMODULE_NOT_ALLOWED, where, f"import of '{alias.name}' is not allowed")
                    continue
            if alias.asname:
                self._check_import_name(alias.asname, where)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag(Rule.RELATIVE_IMPORT, node, "relative imports are not allowed")
            return
        module = node.module or ""
        if module == "__future__" or self._import_in_class_body(node):
            return
        parts = module.split(".")
        if parts[0] not in T.ALLOWED_IMPORTS:
            self._flag(Rule.IMPORT_NOT_ALLOWED, node, f"import from '{module}' is not allowed "
                       f"(allowed: {', '.join(sorted(T.ALLOWED_IMPORTS))})")
            return
        if not self._import_path_ok(parts, node):
            return
        for alias in node.names:
            where = alias if hasattr(alias, "lineno") else node
            if alias.name == "*":
                self._flag(Rule.IMPORT_STAR, where, f"'from {module} import *' is not allowed; import names explicitly")
                continue
            before = len(self.violations)
            steps = [(p, where) for p in parts[1:]] + [(alias.name, where)]
            self._check_route(parts[:1], steps)
            route = f"{module}.{alias.name}"
            if len(self.violations) == before and route in T.PASS_THROUGH:
                self._flag(Rule.SUBMODULE_NOT_ALLOWED, where, f"import of '{route}' is not allowed")
            if route not in T.ALLOWED_SUBMODULES and len(self.violations) == before:
                self.module_steps.discard(id(where))
                self._check_attribute_name(alias.name, where)
            if len(self.violations) == before:
                self._check_import_name(alias.asname or alias.name, where)

    def _check_import_name(self, name: str, where: ast.AST) -> None:
        if is_dunder(name):
            self._flag(Rule.DUNDER_NAME, where, f"dunder name '{name}' is not allowed")

    # ------------------------------------------------------------------ names
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        line_text = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
        segment = None if line_text.isascii() else ast.get_source_segment(self.code, node)
        if segment is not None and segment != name and not segment.isascii():
            self._flag(Rule.NON_ASCII_IDENTIFIER, node,
                       f"identifier '{segment}' is not ASCII (it runs as '{name}')")
        if is_dunder(name):
            if name == "__name__" and isinstance(node.ctx, ast.Load):
                return
            if name == "__all__" and isinstance(node.ctx, ast.Store) and not self.function_depth \
                    and not self.class_depth:
                return
            self._flag(Rule.DUNDER_NAME, node, f"dunder name '{name}' is not allowed")
            return
        route = self._imported(node)
        bound_locally = self._is_param(node) or route is not None
        if isinstance(node.ctx, ast.Load) and name not in self.bindings.bound_anywhere \
                and name not in _BUILTIN_NAMES \
                and (name in T.MODULE_NAMES or name in T.DOOR_MODULE_NAMES):
            # never imported or bound by the tool: only globals injected at run time could give it
            # a value (copied from a library's module namespace), so it is refused before it runs
            self._flag(Rule.UNBOUND_MODULE_NAME, node, f"'{name}' names a module the tool never imports")
        if isinstance(node.ctx, ast.Load) and route is not None and route.rsplit(".", 1)[-1] in T.RAW_ARRAY_TYPES \
                and not self._type_only_use(node):
            self._flag(Rule.RAW_MEMORY, node, f"'{name}' ({route}) may only name a type (annotations, isinstance, "
                       "comparisons): built over a buffer it turns integers into object pointers")
        if isinstance(node.ctx, ast.Load) and route is not None and id(node) not in self.receivers \
                and self._is_module_route(route) and not self._compared_with_none(node):
            self._flag_module_value(name, route, node)
        if name in T.FORBIDDEN_BUILTINS and not bound_locally:
            verb = "rebound" if not isinstance(node.ctx, ast.Load) else "used, called, aliased or passed"
            self._flag(Rule.FORBIDDEN_BUILTIN, node, f"builtin '{name}' cannot be {verb}")
        elif name == "type" and not bound_locally and id(node) not in self.ok_nodes:
            self._flag(Rule.DYNAMIC_TYPE, node, "'type' may only be called with exactly one argument "
                       "(never aliased, passed or used to build classes)")

    def _compared_with_none(self, node: ast.Name) -> bool:
        """``np is None`` / ``np is not None`` (after an ``except ImportError: np = None`` fallback):
        identity with None hands the module to nothing."""
        parent = self.parents.get(id(node))
        return isinstance(parent, ast.Compare) and len(parent.ops) == 1 \
            and isinstance(parent.ops[0], (ast.Is, ast.IsNot)) \
            and any(isinstance(o, ast.Constant) and o.value is None for o in (parent.left, *parent.comparators))

    def _check_binding(self, name: str | None, node: ast.AST) -> None:
        if not name:
            return
        if is_dunder(name):
            self._flag(Rule.DUNDER_NAME, node, f"dunder name '{name}' is not allowed")
        elif name in T.FORBIDDEN_BUILTINS or name == "type":
            self._flag(Rule.FORBIDDEN_BUILTIN, node, f"builtin '{name}' cannot be rebound")

    def visit_Global(self, node: ast.Global) -> None:
        for n in node.names:
            self._check_binding(n, node)

    def visit_Nonlocal(self, node: ast.Nonlocal) -> None:
        for n in node.names:
            self._check_binding(n, node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        self._check_binding(node.name, node)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        self._check_binding(node.name, node)
        self.generic_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> None:
        self._check_binding(node.name, node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> None:
        self._check_binding(node.rest, node)
        self.generic_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> None:
        for attr in node.kwd_attrs:
            if attr in T.CONTEXT_CHECKED_ATTRIBUTES:
                # allowed as obj.attr only in some uses (called, compared, self.data...); a class
                # pattern binds the value to a name, which is never such a use
                self._flag(Rule.FORBIDDEN_ATTRIBUTE, node, f"'{attr}' may not be read by a class pattern")
            self._check_attribute_name(attr, node)  # class patterns look attributes up by name
        if node.patterns and not self._safe_positional_class(node.cls):
            # Positional sub-patterns read the attributes the class's __match_args__ names, as
            # strings: a class built by any metaclass could name __globals__.
            self._flag(Rule.DYNAMIC_TYPE, node, "positional class patterns are only allowed on builtin "
                       "types and on classes the tool defines with a class statement")
        self.generic_visit(node)
