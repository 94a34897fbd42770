"""Checks of attribute access: module routes, attribute names, mutation of modules, str.format."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable

from finevo.policy import tables as T
from finevo.policy.rules import Rule
from finevo.policy.visitor import (
    CheckerBase,
    _chain_root,
    _format_template_problem,
    is_dunder,
)


class AttributeChecks(CheckerBase):

    def _route_of(self, node: ast.expr) -> tuple[list[str], list[tuple[str, ast.Attribute]]] | None:
        """For a chain rooted at an imported name: (base route parts, [(attr, node), ...])."""
        attrs: list[tuple[str, ast.Attribute]] = []
        cur = node
        while isinstance(cur, ast.Attribute):
            attrs.append((cur.attr, cur))
            cur = cur.value
        route = self._imported(cur)
        if route is not None:
            attrs.reverse()
            return route.split("."), attrs
        return None

    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self._imported(node)
        r = self._route_of(node)
        if r is None:
            return None
        return ".".join(r[0] + [a for a, _ in r[1]])

    def _check_route(self, base: list[str], steps: Iterable[tuple[str, ast.AST]]) -> None:
        """Walk a dotted route through module objects; refuse denied submodules."""
        parts = list(base)
        for name, node in steps:
            parent = ".".join(parts)
            parts.append(name)
            route = ".".join(parts)
            if self._is_module_route(parent) or parent == "yfinance":
                self.module_children.add(id(node))
            if parent == "yfinance":
                if name not in T.YFINANCE_ATTRIBUTES and not is_dunder(name):
                    self._flag(Rule.MODULE_ATTRIBUTE, node,
                               f"'yfinance.{name}' is not available to tools (only "
                               f"{', '.join(sorted(T.YFINANCE_ATTRIBUTES))})")
                return
            parent_is_module = (parent in T.ALLOWED_IMPORTS or parent in T.ALLOWED_SUBMODULES
                                or parent in T.PASS_THROUGH)
            if not parent_is_module:
                return
            if route in T.ALLOWED_SUBMODULES:
                self.module_steps.add(id(node))
                continue
            if route in T.PASS_THROUGH:
                self.module_steps.add(id(node))
                continue  # the next step must land on an allowed submodule (checked below)
            if parent in T.PASS_THROUGH or name in T.KNOWN_SUBMODULES.get(parent, ()):
                self._flag(Rule.SUBMODULE_NOT_ALLOWED, node,
                           f"module route '{route}' is not allowed (it leads to file, process or "
                           "interpreter internals)")
                return
            if name in T.MODULE_RUNNERS:
                self._flag(Rule.MODULE_ATTRIBUTE, node, f"'{route}' is not available to tools: "
                           f"{T.MODULE_RUNNERS[name]}")
            return  # an ordinary attribute of an allowed module
        route = ".".join(parts)
        if route in T.PASS_THROUGH:
            walked = list(steps)
            last = walked[-1][1] if walked else None
            if last is not None:
                self._flag(Rule.SUBMODULE_NOT_ALLOWED, last,
                           f"module route '{route}' is only allowed on the way to "
                           + ", ".join(sorted(m for m in T.ALLOWED_SUBMODULES if m.startswith(route + "."))))

    @staticmethod
    def _is_module_route(route: str) -> bool:
        return route in T.ALLOWED_IMPORTS or route in T.ALLOWED_SUBMODULES or route in T.PASS_THROUGH

    def _flag_module_value(self, shown: str, route: str, node: ast.AST) -> None:
        self._flag(Rule.MODULE_VALUE, node, f"module '{shown}' ({route}) may only be used as '{shown}.name'; "
                   "a module stored, passed or returned escapes the route checks", at_start=True)

    # ------------------------------------------------------------------ attribute-name rules
    # One small judge per rule, tried in the order of ATTRIBUTE_RULES (below the class): each
    # returns False when the name is none of its business, True when the name is allowed as used
    # here (no later judge is asked), or the message of a refusal under its rule.
    def _check_attribute_name(self, name: str, node: ast.AST) -> None:
        for rule, judge in ATTRIBUTE_RULES:
            verdict = judge(self, name, node)
            if verdict is False:
                continue
            if isinstance(verdict, str):
                self._flag(rule, node, verdict)
            return

    @staticmethod
    def _stored(node: ast.AST) -> bool:
        return isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)

    def _attr_dunder(self, name: str, node: ast.AST) -> str | bool:
        return is_dunder(name) and f"dunder attribute '{name}' is not allowed"

    def _attr_private(self, name: str, node: ast.AST) -> str | bool:
        return name.startswith("_") and f"private attribute '{name}' is not allowed"

    def _attr_forbidden(self, name: str, node: ast.AST) -> str | bool:
        if name not in T.FORBIDDEN_ATTRIBUTES:
            return False
        why = T.FORBIDDEN_ATTRIBUTES[name]
        if name not in T.INERT_USE_ATTRIBUTES:
            return f"attribute '{name}' is not allowed: {why}"
        if isinstance(node, ast.Attribute) and id(node) not in self.module_children and self._inert_use(node):
            return True
        return (f"attribute '{name}' is not allowed: {why} (as a data field it may be assigned, indexed, "
                "iterated or measured, but not called, stored, passed or returned)")

    def _attr_file_io(self, name: str, node: ast.AST) -> str | bool:
        if name.startswith("read_") or name in T.FILE_IO_ATTRIBUTES:
            return f"'{name}' reads or writes files or the network"
        if name.startswith("to_") and name not in T.SAFE_CONVERSIONS and name not in T.TEXT_WRITERS:
            return f"'{name}' writes to a file or an external store"
        return False

    def _attr_data(self, name: str, node: ast.AST) -> str | bool:
        return name == "data" and not self._stored(node) and (
            "'.data' may only be assigned, never read: ndarray.data is a memoryview over raw memory "
            "(copying object pointers without reference counts)")

    def _attr_raw_bytes(self, name: str, node: ast.AST) -> str | bool:
        return name in T.RAW_BYTES_METHODS and f"'.{name}' is not allowed: an object array's bytes are object addresses"

    def _attr_cast(self, name: str, node: ast.AST) -> str | bool:
        return name == "cast" and isinstance(node, ast.Attribute) and not self._rooted_at(node, "typing") and (
            "'.cast' is only allowed as typing.cast: memoryview.cast reinterprets raw bytes (object pointers "
            "included)")

    def _attr_type(self, name: str, node: ast.AST) -> str | bool:
        return name == "type" and isinstance(node, ast.Attribute) and not self._type_attribute_ok(node) and (
            "'.type' may only be called with a value, compared or tested (isinstance, issubclass, "
            "np.issubdtype): a dtype's type may be a metaclass, which builds classes with dunder keys from "
            "plain strings")

    def _attr_raw_array_type(self, name: str, node: ast.AST) -> str | bool:
        if name not in T.RAW_ARRAY_TYPES:
            return False
        if isinstance(node, ast.alias):
            return True  # ``from numpy import ndarray``: each use of the name is judged (visit_Name)
        return (isinstance(node, ast.Attribute) and self._type_only_use(node)) or (
            f"'{name}' may only name a type (annotations, isinstance, comparisons): built over a buffer it "
            "turns integers into object pointers")

    def _attr_dispatch(self, name: str, node: ast.AST) -> str | bool:
        return name in T.DISPATCH_METHODS and id(node) not in self.ok_nodes and (
            f"'.{name}' may only be called directly: stored, passed or used unbound, the names it "
            "dispatches escape the check")

    def _attr_obj(self, name: str, node: ast.AST) -> str | bool:
        return name == "obj" and not self._stored(node) and (
            "attribute 'obj' may only be assigned, never read (AttributeError.obj hands back the object, "
            "e.g. a module)")

    def _attr_text_writer(self, name: str, node: ast.AST) -> str | bool:
        return name in T.TEXT_WRITERS and id(node) not in self.ok_nodes and (
            f"'{name}' may only be called directly, without a path or buffer (it then returns text)")

    def _attr_door_module(self, name: str, node: ast.AST) -> str | bool:
        return name in T.DOOR_MODULE_NAMES and id(node) not in self.module_steps and (
            f"attribute '{name}' names the module '{name}', which tools may not reach (on any object)")

    def _attr_module_name(self, name: str, node: ast.AST) -> str | bool:
        return name in T.MODULE_NAMES and id(node) in self.module_children and id(node) not in self.module_steps \
            and f"attribute '{name}' names the module '{name}', which tools may not reach"

    def _attr_option_setter(self, name: str, node: ast.AST) -> str | bool:
        return name in T.OPTION_SETTERS and id(node) not in self.ok_nodes and (
            f"'{name}' may only be called directly with literal option keys starting with "
            f"{', '.join(T.SAFE_OPTION_PREFIXES)}")

    # ------------------------------------------------------------------ attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if id(node) not in self.inner_attrs:
            cur = node.value
            while isinstance(cur, ast.Attribute):
                self.inner_attrs.add(id(cur))
                cur = cur.value
            routed = self._route_of(node)
            root = _chain_root(node)
            if routed is None and isinstance(node.ctx, (ast.Store, ast.Del)) \
                    and self.bindings.may_hold_member(node.value):
                held = f"'{root.id}'" if isinstance(root, ast.Name) else "this object"
                self._flag(Rule.MODULE_MUTATION, node, f"{held} holds something of an imported module; "
                           "assigning or deleting its attributes is not allowed", at_start=True)
            if routed is not None:
                # a chain that starts at an imported module: every step may be a module
                self.module_children.update(id(step) for _, step in routed[1])
                self._check_route(routed[0], routed[1])
                if isinstance(node.ctx, (ast.Store, ast.Del)):
                    self._check_module_mutation(".".join(routed[0] + [a for a, _ in routed[1]]), node)
                if id(node) in self.module_steps:  # the whole chain is a module, used as a value
                    steps = [a for a, _ in routed[1]]
                    root = _chain_root(node)
                    shown = ".".join([root.id, *steps]) if isinstance(root, ast.Name) else steps[-1]
                    self._flag_module_value(shown, ".".join(routed[0] + steps), node)
        if isinstance(node.value, ast.Name):
            self.receivers.add(id(node.value))
        if node.attr in ("format", "format_map"):
            self._check_format(node)
        elif not (is_dunder(node.attr) and self._super_special_call(node)):
            self._check_attribute_name(node.attr, node)
        self.generic_visit(node)

    def _check_module_mutation(self, route: str, node: ast.Attribute) -> None:
        """Assigning or deleting anything reached from an imported module changes code the harness
        shares with the tool (``json.JSONEncoder.encode = f`` rewrote the result channel); only
        pandas options with a safe prefix may be set (``pd.options.mode.chained_assignment``)."""
        option = route.removeprefix("pandas.options.")
        if option != route and option.startswith(T.SAFE_OPTION_PREFIXES):
            return
        self._flag(Rule.MODULE_MUTATION, node, f"'{route}' belongs to an imported module; assigning or "
                   "deleting it is not allowed", at_start=True)

    def _check_format(self, node: ast.Attribute) -> None:
        recv = node.value
        if not (isinstance(recv, ast.Constant) and isinstance(recv.value, str)):
            self._flag(Rule.FORMAT_STRING, node, f"'.{node.attr}' is only allowed on a string literal "
                       "(a computed template can reach attributes)")
            return
        if node.attr == "format_map":
            self._flag(Rule.FORMAT_STRING, node, "'.format_map' is not allowed; use '.format' or an f-string")
            return
        problem = _format_template_problem(recv.value)
        if problem:
            self._flag(Rule.FORMAT_STRING, node, problem)


ATTRIBUTE_RULES: tuple[tuple[Rule, Callable[[AttributeChecks, str, ast.AST], str | bool]], ...] = (
    (Rule.DUNDER_ATTRIBUTE, AttributeChecks._attr_dunder),
    (Rule.PRIVATE_ATTRIBUTE, AttributeChecks._attr_private),
    (Rule.FORBIDDEN_ATTRIBUTE, AttributeChecks._attr_forbidden),
    (Rule.FILE_IO, AttributeChecks._attr_file_io),
    (Rule.RAW_MEMORY, AttributeChecks._attr_data),
    (Rule.RAW_MEMORY, AttributeChecks._attr_raw_bytes),
    (Rule.RAW_MEMORY, AttributeChecks._attr_cast),
    (Rule.DYNAMIC_TYPE, AttributeChecks._attr_type),
    (Rule.RAW_MEMORY, AttributeChecks._attr_raw_array_type),
    (Rule.DYNAMIC_DISPATCH, AttributeChecks._attr_dispatch),
    (Rule.FORBIDDEN_ATTRIBUTE, AttributeChecks._attr_obj),
    (Rule.FILE_IO, AttributeChecks._attr_text_writer),
    (Rule.MODULE_ATTRIBUTE, AttributeChecks._attr_door_module),
    (Rule.MODULE_ATTRIBUTE, AttributeChecks._attr_module_name),
    (Rule.PANDAS_OPTION, AttributeChecks._attr_option_setter),
)
