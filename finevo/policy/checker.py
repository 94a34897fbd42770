"""The AST walk behind :func:`finevo.policy.check`.

The checker never looks inside string literals, comments or docstrings as text; it judges the
syntax tree (plus the token stream for identifier spelling and the PEP 263 declaration).
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import string
import tokenize
from collections import Counter
from collections.abc import Iterable

from finevo.policy import tables as T
from finevo.policy.report import Violation

_CODING_RE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def check_source(code: object) -> list[Violation]:
    """All violations of ``code`` (unsorted, may hold duplicates)."""
    if not isinstance(code, str):
        return [Violation("invalid-input", f"source must be text, got {type(code).__name__}", 1, 1)]
    if len(code) > T.MAX_SOURCE_CHARS:
        return [Violation("too-large", f"source has {len(code)} characters; the limit is "
                          f"{T.MAX_SOURCE_CHARS}", 1, 1)]
    found: list[Violation] = []
    found += _check_characters(code)
    if found:  # null bytes / lone surrogates / bidi controls: do not parse further
        return found
    found += _check_encoding_declaration(code)
    try:
        tree = ast.parse(code, type_comments=False)
    except SyntaxError as exc:
        line = exc.lineno or 1
        col = exc.offset or 1
        return [*found, Violation("syntax-error", f"syntax error: {exc.msg}", line, max(col, 1))]
    except ValueError as exc:  # e.g. a source the compiler refuses outright
        return [*found, Violation("syntax-error", f"syntax error: {exc}", 1, 1)]
    found += _check_identifier_spelling(code)
    checker = _Checker(code, tree)
    checker.run()
    return found + checker.violations


# --------------------------------------------------------------------------- text-level rules
def _position(code: str, index: int) -> tuple[int, int]:
    line = code.count("\n", 0, index) + 1
    col = index - (code.rfind("\n", 0, index) + 1) + 1
    return line, col


def _check_characters(code: str) -> list[Violation]:
    out: list[Violation] = []
    nul = code.find("\x00")
    if nul >= 0:
        out.append(Violation("syntax-error", "source contains a null byte", *_position(code, nul)))
    for i, ch in enumerate(code):
        if "\ud800" <= ch <= "\udfff":
            out.append(Violation("syntax-error", "source contains a lone surrogate (not valid UTF-8)",
                                 *_position(code, i)))
            break
        if ch in T.BIDI_CONTROLS:
            out.append(Violation("bidi-control", f"bidirectional control character U+{ord(ch):04X} "
                                 "can make code read differently from how it runs", *_position(code, i)))
            break
    return out


def _check_encoding_declaration(code: str) -> list[Violation]:
    out: list[Violation] = []
    for lineno, line in enumerate(code.splitlines()[:2], start=1):
        m = _CODING_RE.match(line)
        if m:
            enc = m.group(1).lower().replace("_", "-")
            if enc not in T.UTF8_NAMES and not enc.startswith("utf-8-"):
                out.append(Violation("encoding-declaration",
                                     f"encoding declaration '{m.group(1)}': only utf-8 source is allowed",
                                     lineno, m.start(1) + 1))
            break
        if line.strip() and not line.lstrip().startswith("#"):
            break
    return out


def _check_identifier_spelling(code: str) -> list[Violation]:
    out: list[Violation] = []
    try:
        for tok in tokenize.generate_tokens(io.StringIO(code).readline):
            if tok.type == tokenize.NAME and not tok.string.isascii():
                out.append(Violation(
                    "non-ascii-identifier",
                    f"identifier '{tok.string}' is not ASCII (look-alike letters normalise to other names)",
                    tok.start[0], tok.start[1] + 1))
    except (tokenize.TokenError, SyntaxError):
        pass
    return out


def _format_template_problem(template: str) -> str | None:
    """Why a literal ``str.format`` template is refused, or None when it is plain."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        return f"invalid format template: {exc}"
    for _literal, field, spec, _conv in parsed:
        if field is not None and ("." in field or "[" in field):
            return f"format field '{{{field}}}' reaches into attributes or items"
        if spec and "{" in spec:
            inner = _format_template_problem(spec)
            if inner:
                return inner
    return None


_BUILTIN_NAMES: frozenset[str] = frozenset(dir(builtins))


def _chain_root(expr: ast.expr) -> ast.expr:
    """The object an attribute chain starts at (``np`` for ``np.linalg.norm``)."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr


def _binding_sites(tree: ast.Module) -> Iterable[tuple[str, ast.AST, str]]:
    """Every place the tool binds a name: (name, node, kind), kind one of ``import``, ``param``,
    ``class`` or ``other`` (assignment, def, loop, with, except, walrus, global, match capture)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                yield alias.asname or alias.name.split(".")[0], node, "import"
        elif isinstance(node, ast.arg):
            yield node.arg, node, "param"
        elif isinstance(node, ast.ClassDef):
            yield node.name, node, "class"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            yield node.id, node, "other"
        elif isinstance(node, _FUNCTION_NODES):
            yield node.name, node, "other"
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            for name in node.names:
                yield name, node, "other"
        elif isinstance(node, (ast.MatchAs, ast.MatchStar, ast.ExceptHandler)) and node.name:
            yield node.name, node, "other"
        elif isinstance(node, ast.MatchMapping) and node.rest:
            yield node.rest, node, "other"


# --------------------------------------------------------------------------- the AST walk
class _Checker(ast.NodeVisitor):
    def __init__(self, code: str, tree: ast.Module) -> None:
        self.code = code
        self.tree = tree
        self.lines = code.splitlines()
        self.violations: list[Violation] = []
        self.aliases: dict[str, str] = {}          # name bound by an allowed import -> dotted route
        self.param_scopes: list[frozenset[str]] = []
        self.ok_nodes: set[int] = set()            # nodes an enclosing construct already vetted
        self.inner_attrs: set[int] = set()         # Attribute nodes inside a chain already routed
        self.module_steps: set[int] = set()        # Attribute nodes that are allowed submodules
        self.receivers: set[int] = set()           # Name nodes that are the object of an attribute
        self.compared: set[int] = set()            # nodes that are operands of a comparison
        self.module_children: set[int] = set()     # Attribute nodes whose receiver is a module
        self.class_depth = 0
        self.function_depth = 0
        self.callable_names = self._callable_names(tree)
        self.parents: dict[int, ast.AST] = {
            id(child): parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
        self.binding_sites = list(_binding_sites(tree))
        self.imported_names = frozenset(name for name, _node, kind in self.binding_sites if kind == "import")
        # every name the tool binds anywhere (so a builtin of that name may not be the builtin)
        self.rebound = frozenset(name for name, _node, _kind in self.binding_sites)
        self.module_bound = self._names_bound_to_module_members(tree)
        self.class_statement_names = self._names_bound_only_by_class_statements()
        self.class_definitions = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}

    def run(self) -> None:
        self.visit(self.tree)
        self._check_import_rebinding()

    # ------------------------------------------------------------------ helpers
    def _col(self, node: ast.AST, *, at_start: bool = False) -> tuple[int, int]:
        line = getattr(node, "lineno", 1) or 1
        col0 = getattr(node, "col_offset", 0) or 0
        if not at_start and isinstance(node, ast.Attribute) and node.end_lineno \
                and node.end_col_offset is not None:
            # point at the attribute name itself, not at the start of the whole chain
            line, col0 = node.end_lineno, node.end_col_offset - len(node.attr.encode("utf-8"))
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        chars = len(text.encode("utf-8")[:col0].decode("utf-8", errors="replace"))
        return line, chars + 1

    def _flag(self, rule: str, node: ast.AST, message: str, *, at_start: bool = False) -> None:
        line, col = self._col(node, at_start=at_start)
        self.violations.append(Violation(rule, message, line, col))

    def _is_param(self, name: str) -> bool:
        return any(name in scope for scope in self.param_scopes)

    @staticmethod
    def _callable_names(tree: ast.Module) -> frozenset[str]:
        """Names bound *only* by def/class, a lambda assignment or an import."""
        good: Counter[str] = Counter()
        total: Counter[str] = Counter()
        for node in ast.walk(tree):
            if isinstance(node, (*_FUNCTION_NODES, ast.ClassDef)):
                good[node.name] += 1
                total[node.name] += 1
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                for a in node.names:
                    bound = a.asname or a.name.split(".")[0]
                    good[bound] += 1
                    total[bound] += 1
            elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Lambda) \
                    and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                good[node.targets[0].id] += 1
            elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                total[node.id] += 1
            elif isinstance(node, ast.arg):
                total[node.arg] += 1
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                for n in node.names:
                    total[n] += 2
        return frozenset(n for n, c in good.items() if c >= total[n])

    def _names_bound_only_by_class_statements(self) -> frozenset[str]:
        """Names of classes the tool defines once and never rebinds (their __match_args__ can only
        come from the class body, where dunder names are refused, or from @dataclass fields)."""
        kinds: dict[str, list[str]] = {}
        for name, _node, kind in self.binding_sites:
            kinds.setdefault(name, []).append(kind)
        return frozenset(name for name, seen in kinds.items() if seen == ["class"])

    def _names_bound_to_module_members(self, tree: ast.Module) -> frozenset[str]:
        """Names assigned something reached from an import (``C = json.JSONEncoder``): storing an
        attribute through them changes the library, like storing through the route itself."""
        bound: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets, value = node.targets, node.value
            elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
                targets, value = [node.target], node.value
            else:
                continue
            root = _chain_root(value)
            if isinstance(root, ast.Name) and root.id in self.imported_names:
                bound.update(t.id for t in targets if isinstance(t, ast.Name))
        return frozenset(bound)

    def _is_builtin(self, node: ast.expr, names: frozenset[str]) -> bool:
        return isinstance(node, ast.Name) and node.id in names and node.id not in self.rebound

    def _inert_use(self, node: ast.Attribute) -> bool:
        """Whether the value of ``node`` cannot be called or reach tool code, were it a bound method:
        assigned or deleted, indexed, an attribute of it read, iterated, tested for truth, or the
        sole argument of an inert builtin. (Not compared: ``==`` and ``in`` hand it to a tool
        class's ``__eq__`` / ``__contains__``.)"""
        if isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        parent = self.parents.get(id(node))
        if isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
            return True
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.comprehension)) and parent.iter is node:
            return True
        if isinstance(parent, ast.Call) and parent.args == [node] and not parent.keywords \
                and self._is_builtin(parent.func, T.INERT_BUILTINS):
            return True
        tested: ast.AST = node  # only its truth is used, also through ``and`` / ``or`` chains
        while isinstance(parent, ast.BoolOp):
            tested, parent = parent, self.parents.get(id(parent))
        if isinstance(parent, (ast.If, ast.While, ast.IfExp, ast.Assert)) and parent.test is tested:
            return True
        return isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not)

    def _imported(self, name: str) -> str | None:
        """The import route ``name`` stands for here, or None when it is not (or no longer) the
        import: a parameter shadows it; other rebinding is refused (import-rebound)."""
        return None if self._is_param(name) else self.aliases.get(name)

    def _check_import_rebinding(self) -> None:
        """An imported name may not be bound any other way: the checks that trust an import
        (typing.cast, module routes, options) would then apply to whatever the tool put there.
        A parameter may shadow it (those checks look the parameter up first)."""
        for name, node, kind in self.binding_sites:
            if name in self.imported_names and kind in ("class", "other"):
                self._flag("import-rebound", node, f"'{name}' is an imported name; binding it to "
                           "something else is not allowed", at_start=True)

    def _import_route_of_root(self, expr: ast.expr) -> str | None:
        """The import route the chain ``expr`` starts at, or None when it starts elsewhere."""
        root = _chain_root(expr)
        return self._imported(root.id) if isinstance(root, ast.Name) else None

    def _rooted_at(self, node: ast.Attribute, module: str) -> bool:
        return (self._import_route_of_root(node) or "").split(".")[0] == module

    def _type_attribute_ok(self, node: ast.Attribute) -> bool:
        parent = self.parents.get(id(node))
        if isinstance(parent, ast.Compare):
            return True
        if not isinstance(parent, ast.Call):
            return False
        if parent.func is node:  # x.dtype.type(3): converting a value, never (name, bases, namespace)
            return len(parent.args) < 3 and not parent.keywords \
                and not any(isinstance(a, ast.Starred) for a in parent.args)
        func = parent.func
        return node in parent.args and (
            self._is_builtin(func, T.TYPE_TEST_BUILTINS)
            or (isinstance(func, ast.Attribute) and func.attr == "issubdtype" and self._rooted_at(func, "numpy")))

    def _safe_positional_class(self, cls: ast.expr, seen: frozenset[str] = frozenset()) -> bool:
        """A builtin type, or a class of the tool's whose bases are all such classes (a base built
        by a metaclass could carry a __match_args__ naming dunders)."""
        if self._is_builtin(cls, T.BUILTIN_TYPE_NAMES | {"bytearray", "object"}):
            return True
        if not (isinstance(cls, ast.Name) and cls.id in self.class_statement_names) or cls.id in seen:
            return False
        definition = self.class_definitions[cls.id]
        return all(self._safe_positional_class(base, seen | {cls.id}) for base in definition.bases)

    def _type_only_use(self, node: ast.expr) -> bool:
        """Whether ``node`` is only used as a type: inside an annotation, as the class argument of
        isinstance / issubclass, or as a comparison operand -- never called, subclassed or kept."""
        child: ast.AST = node
        parent = self.parents.get(id(child))
        while isinstance(parent, (ast.Tuple, ast.Subscript, ast.BinOp, ast.Attribute, ast.List)):
            child, parent = parent, self.parents.get(id(parent))
        if isinstance(parent, ast.arg) and parent.annotation is child:
            return True
        if isinstance(parent, (*_FUNCTION_NODES,)) and parent.returns is child:
            return True
        if isinstance(parent, ast.AnnAssign) and parent.annotation is child:
            return True
        if isinstance(parent, ast.Compare):
            return True
        if not isinstance(parent, ast.Call):
            return False
        func = parent.func
        if parent.args and parent.args[0] is child and (  # typing.cast(np.ndarray, value)
                (isinstance(func, ast.Name) and self._imported(func.id) == "typing.cast")
                or (isinstance(func, ast.Attribute) and func.attr == "cast" and self._rooted_at(func, "typing"))):
            return True
        return (len(parent.args) == 2 and parent.args[1] is child
                and self._is_builtin(func, T.TYPE_TEST_BUILTINS))

    def _super_special_call(self, node: ast.Attribute) -> bool:
        """``super().__init__(...)`` and the other special methods a tool may define, called at once.

        It runs the base class's implementation of an operation the tool can already perform
        directly (``Base(...)``, ``repr()``, ``==``, ``len()``, ``[]``, ...); nothing is read off
        the method object, which is never stored."""
        receiver = node.value
        parent = self.parents.get(id(node))
        return (node.attr in T.ALLOWED_DUNDER_METHODS and isinstance(receiver, ast.Call)
                and self._is_builtin(receiver.func, frozenset({"super"}))
                and not receiver.args and not receiver.keywords
                and isinstance(parent, ast.Call) and parent.func is node)

    def _route_of(self, node: ast.expr) -> tuple[list[str], list[tuple[str, ast.Attribute]]] | None:
        """For a chain rooted at an imported name: (base route parts, [(attr, node), ...])."""
        attrs: list[tuple[str, ast.Attribute]] = []
        cur = node
        while isinstance(cur, ast.Attribute):
            attrs.append((cur.attr, cur))
            cur = cur.value
        if isinstance(cur, ast.Name) and cur.id in self.aliases and not self._is_param(cur.id):
            attrs.reverse()
            return self.aliases[cur.id].split("."), attrs
        return None

    def _dotted(self, node: ast.expr) -> str | None:
        if isinstance(node, ast.Name):
            return self.aliases.get(node.id)
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
                    self._flag("module-attribute", node,
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
                self._flag("submodule-not-allowed", node,
                           f"module route '{route}' is not allowed (it leads to file, process or "
                           "interpreter internals)")
                return
            if name in T.MODULE_RUNNERS:
                self._flag("module-attribute", node, f"'{route}' is not available to tools: "
                           f"{T.MODULE_RUNNERS[name]}")
            return  # an ordinary attribute of an allowed module
        route = ".".join(parts)
        if route in T.PASS_THROUGH:
            last = list(steps)[-1][1] if steps else None
            if last is not None:
                self._flag("submodule-not-allowed", last,
                           f"module route '{route}' is only allowed on the way to "
                           + ", ".join(sorted(m for m in T.ALLOWED_SUBMODULES if m.startswith(route + "."))))

    @staticmethod
    def _is_module_route(route: str) -> bool:
        return route in T.ALLOWED_IMPORTS or route in T.ALLOWED_SUBMODULES or route in T.PASS_THROUGH

    def _flag_module_value(self, shown: str, route: str, node: ast.AST) -> None:
        self._flag("module-value", node, f"module '{shown}' ({route}) may only be used as '{shown}.name'; "
                   "a module stored, passed or returned escapes the route checks", at_start=True)

    def _check_attribute_name(self, name: str, node: ast.AST) -> None:
        if is_dunder(name):
            self._flag("dunder-attribute", node, f"dunder attribute '{name}' is not allowed")
        elif name.startswith("_"):
            self._flag("private-attribute", node, f"private attribute '{name}' is not allowed")
        elif name in T.FORBIDDEN_ATTRIBUTES:
            if name in T.INERT_USE_ATTRIBUTES:
                if isinstance(node, ast.Attribute) and id(node) not in self.module_children \
                        and self._inert_use(node):
                    return
                self._flag("forbidden-attribute", node, f"attribute '{name}' is not allowed: "
                           f"{T.FORBIDDEN_ATTRIBUTES[name]} (as a data field it may be assigned, "
                           "indexed, iterated or measured, but not called, stored, passed or returned)")
                return
            self._flag("forbidden-attribute", node, f"attribute '{name}' is not allowed: "
                       f"{T.FORBIDDEN_ATTRIBUTES[name]}")
        elif name.startswith("read_") or name in T.FILE_IO_ATTRIBUTES:
            self._flag("file-io", node, f"'{name}' reads or writes files or the network")
        elif name.startswith("to_") and name not in T.SAFE_CONVERSIONS and name not in T.TEXT_WRITERS:
            self._flag("file-io", node, f"'{name}' writes to a file or an external store")
        elif name == "data" and not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)):
            self._flag("raw-memory", node, "'.data' may only be assigned, never read: ndarray.data is a "
                       "memoryview over raw memory (copying object pointers without reference counts)")
        elif name in T.RAW_BYTES_METHODS:
            self._flag("raw-memory", node, f"'.{name}' is not allowed: an object array's bytes are "
                       "object addresses")
        elif name == "cast" and isinstance(node, ast.Attribute) and not self._rooted_at(node, "typing"):
            self._flag("raw-memory", node, "'.cast' is only allowed as typing.cast: memoryview.cast "
                       "reinterprets raw bytes (object pointers included)")
        elif name == "type" and isinstance(node, ast.Attribute) and not self._type_attribute_ok(node):
            self._flag("dynamic-type", node, "'.type' may only be called with a value, compared or "
                       "tested (isinstance, issubclass, np.issubdtype): a dtype's type may be a "
                       "metaclass, which builds classes with dunder keys from plain strings")
        elif name in T.RAW_ARRAY_TYPES:
            if not (isinstance(node, ast.Attribute) and self._type_only_use(node)):
                self._flag("raw-memory", node, f"'{name}' may only name a type (annotations, isinstance, "
                           "comparisons): built over a buffer it turns integers into object pointers")
        elif name in T.DISPATCH_METHODS and id(node) not in self.ok_nodes:
            self._flag("dynamic-dispatch", node, f"'.{name}' may only be called directly: stored, passed "
                       "or used unbound, the names it dispatches escape the check")
        elif name == "obj" and not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)):
            self._flag("forbidden-attribute", node, "attribute 'obj' may only be assigned, never read "
                       "(AttributeError.obj hands back the object, e.g. a module)")
        elif name in T.TEXT_WRITERS and id(node) not in self.ok_nodes:
            self._flag("file-io", node, f"'{name}' may only be called directly, without a path "
                       "or buffer (it then returns text)")
        elif name in T.DOOR_MODULE_NAMES and id(node) not in self.module_steps:
            self._flag("module-attribute", node, f"attribute '{name}' names the module '{name}', "
                       "which tools may not reach (on any object)")
        elif name in T.MODULE_NAMES and id(node) in self.module_children and id(node) not in self.module_steps:
            self._flag("module-attribute", node, f"attribute '{name}' names the module '{name}', "
                       "which tools may not reach")
        elif name in T.OPTION_SETTERS and id(node) not in self.ok_nodes:
            self._flag("pandas-option", node, f"'{name}' may only be called directly with literal "
                       f"option keys starting with {', '.join(T.SAFE_OPTION_PREFIXES)}")

    # ------------------------------------------------------------------ imports
    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            where = alias if hasattr(alias, "lineno") else node
            parts = alias.name.split(".")
            if parts[0] not in T.ALLOWED_IMPORTS:
                self._flag("import-not-allowed", where, f"import of '{alias.name}' is not allowed "
                           f"(allowed: {', '.join(sorted(T.ALLOWED_IMPORTS))})")
                continue
            if len(parts) > 1:
                before = len(self.violations)
                self._check_route(parts[:1], [(p, where) for p in parts[1:]])
                if len(self.violations) > before:
                    continue
                if ".".join(parts) in T.PASS_THROUGH:
                    self._flag("submodule-not-allowed", where, f"import of '{alias.name}' is not allowed")
                    continue
            if alias.asname:
                self._bind_import(alias.asname, alias.name, where)
            else:
                self.aliases[parts[0]] = parts[0]

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            self._flag("relative-import", node, "relative imports are not allowed")
            return
        module = node.module or ""
        if module == "__future__":
            return
        parts = module.split(".")
        if parts[0] not in T.ALLOWED_IMPORTS:
            self._flag("import-not-allowed", node, f"import from '{module}' is not allowed "
                       f"(allowed: {', '.join(sorted(T.ALLOWED_IMPORTS))})")
            return
        for alias in node.names:
            where = alias if hasattr(alias, "lineno") else node
            if alias.name == "*":
                self._flag("import-star", where, f"'from {module} import *' is not allowed; import names explicitly")
                continue
            before = len(self.violations)
            steps = [(p, where) for p in parts[1:]] + [(alias.name, where)]
            self._check_route(parts[:1], steps)
            route = f"{module}.{alias.name}"
            if len(self.violations) == before and route in T.PASS_THROUGH:
                self._flag("submodule-not-allowed", where, f"import of '{route}' is not allowed")
            if route not in T.ALLOWED_SUBMODULES and len(self.violations) == before:
                self.module_steps.discard(id(where))
                self._check_attribute_name(alias.name, where)
            if len(self.violations) == before:
                self._bind_import(alias.asname or alias.name, route, where)

    def _bind_import(self, name: str, route: str, where: ast.AST) -> None:
        if is_dunder(name):
            self._flag("dunder-name", where, f"dunder name '{name}' is not allowed")
            return
        self.aliases[name] = route

    # ------------------------------------------------------------------ names
    def visit_Name(self, node: ast.Name) -> None:
        name = node.id
        line_text = self.lines[node.lineno - 1] if 0 < node.lineno <= len(self.lines) else ""
        segment = None if line_text.isascii() else ast.get_source_segment(self.code, node)
        if segment is not None and segment != name and not segment.isascii():
            self._flag("non-ascii-identifier", node,
                       f"identifier '{segment}' is not ASCII (it runs as '{name}')")
        if is_dunder(name):
            if name == "__name__" and isinstance(node.ctx, ast.Load):
                return
            if name == "__all__" and isinstance(node.ctx, ast.Store) and not self.function_depth \
                    and not self.class_depth:
                return
            self._flag("dunder-name", node, f"dunder name '{name}' is not allowed")
            return
        bound_locally = self._is_param(name) or name in self.aliases
        if isinstance(node.ctx, ast.Load) and name not in self.rebound and name not in _BUILTIN_NAMES \
                and (name in T.MODULE_NAMES or name in T.DOOR_MODULE_NAMES):
            # never imported or bound by the tool: only globals injected at run time could give it
            # a value (copied from a library's module namespace), so it is refused before it runs
            self._flag("unbound-module-name", node, f"'{name}' names a module the tool never imports")
        if isinstance(node.ctx, ast.Load) and name in self.aliases and not self._is_param(name) \
                and id(node) not in self.receivers and self._is_module_route(self.aliases[name]):
            self._flag_module_value(name, self.aliases[name], node)
        if name in T.FORBIDDEN_BUILTINS and not bound_locally:
            verb = "rebound" if not isinstance(node.ctx, ast.Load) else "used, called, aliased or passed"
            self._flag("forbidden-builtin", node, f"builtin '{name}' cannot be {verb}")
        elif name == "type" and not bound_locally and id(node) not in self.ok_nodes:
            self._flag("dynamic-type", node, "'type' may only be called with exactly one argument "
                       "(never aliased, passed or used to build classes)")

    def _check_binding(self, name: str | None, node: ast.AST) -> None:
        if not name:
            return
        if is_dunder(name):
            self._flag("dunder-name", node, f"dunder name '{name}' is not allowed")
        elif name in T.FORBIDDEN_BUILTINS or name == "type":
            self._flag("forbidden-builtin", node, f"builtin '{name}' cannot be rebound")

    def visit_Global(self, node: ast.Global) -> None:
        for n in node.names:
            self._check_binding(n, node)

    visit_Nonlocal = visit_Global  # type: ignore[assignment]

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
                self._flag("forbidden-attribute", node, f"'{attr}' may not be read by a class pattern")
            self._check_attribute_name(attr, node)  # class patterns look attributes up by name
        if node.patterns and not self._safe_positional_class(node.cls):
            # Positional sub-patterns read the attributes the class's __match_args__ names, as
            # strings: a class built by any metaclass could name __globals__.
            self._flag("dynamic-type", node, "positional class patterns are only allowed on builtin "
                       "types and on classes the tool defines with a class statement")
        self.generic_visit(node)

    # ------------------------------------------------------------------ attributes
    def visit_Attribute(self, node: ast.Attribute) -> None:
        if id(node) not in self.inner_attrs:
            cur = node.value
            while isinstance(cur, ast.Attribute):
                self.inner_attrs.add(id(cur))
                cur = cur.value
            routed = self._route_of(node)
            root = _chain_root(node)
            if routed is None and isinstance(node.ctx, (ast.Store, ast.Del)) and isinstance(root, ast.Name) \
                    and root.id in self.module_bound and not self._is_param(root.id):
                self._flag("module-mutation", node, f"'{root.id}' holds something of an imported module; "
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
        self._flag("module-mutation", node, f"'{route}' belongs to an imported module; assigning or "
                   "deleting it is not allowed", at_start=True)

    def _check_format(self, node: ast.Attribute) -> None:
        recv = node.value
        if not (isinstance(recv, ast.Constant) and isinstance(recv.value, str)):
            self._flag("format-string", node, f"'.{node.attr}' is only allowed on a string literal "
                       "(a computed template can reach attributes)")
            return
        if node.attr == "format_map":
            self._flag("format-string", node, "'.format_map' is not allowed; use '.format' or an f-string")
            return
        problem = _format_template_problem(recv.value)
        if problem:
            self._flag("format-string", node, problem)

    # ------------------------------------------------------------------ calls
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

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "type" and not self._is_param("type") \
                and "type" not in self.aliases:
            if len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
                self.ok_nodes.add(id(func))
                if id(node) not in self.compared:
                    # type(int) *is* type: kept or called, it builds classes (metaclasses,
                    # __match_args__ tricks) from plain strings that no attribute check sees.
                    self._flag("dynamic-type", node, "the result of type(x) may only be compared "
                               "(type(x) is float); use isinstance() otherwise")
            else:
                self.ok_nodes.add(id(func))
                self._flag("dynamic-type", node, "type() with more than one argument builds classes "
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
        if self._is_builtin(func, frozenset({"bytes", "bytearray"})) and len(node.args) == 1 and not node.keywords \
                and not isinstance(node.args[0], ast.Constant):
            self._flag("raw-memory", node, f"'{func.id}(x)' copies any buffer, an object array's "  # type: ignore[attr-defined]
                       "addresses included; use a literal, or a string with an encoding")
        self.generic_visit(node)

    def _check_wraps_call(self, node: ast.Call) -> None:
        """``functools.wraps(f)`` only: its ``assigned`` / ``updated`` name attributes to copy
        (``updated=("__globals__",)`` merged another module's globals into the tool's)."""
        if len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            self._flag("forbidden-attribute", node, "'wraps' takes exactly one function and no "
                       "assigned= / updated= (they copy attributes named by strings)")

    def _check_formatter_arguments(self, node: ast.Call) -> None:
        """pandas calls ``template.format(value)`` on formatter strings: the same rules as a
        literal ``.format`` template, and only functions, lambdas or such literals."""
        for kw in node.keywords:
            if kw.arg in T.FORMATTER_KEYWORDS:
                bad = self._formatter_problem(kw.value)
                if bad is not None:
                    self._flag("format-string", bad, f"'{kw.arg}' needs a function, a lambda or a plain "
                               "literal template (a computed template can reach attributes)")

    def _formatter_problem(self, expr: ast.expr) -> ast.expr | None:
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str) and _format_template_problem(expr.value) is not None:
                return expr
            return None if expr.value is None or isinstance(expr.value, str) else expr
        if isinstance(expr, ast.Lambda):
            return None
        if isinstance(expr, ast.Name):
            return None if expr.id in self.callable_names or expr.id in T.SAFE_CALLABLE_BUILTINS else expr
        if isinstance(expr, ast.Attribute):
            if expr.attr == "format" and isinstance(expr.value, ast.Constant):
                return None  # '{:.2f}'.format: the template itself is checked as a format call
            return None if self._import_route_of_root(expr) else expr
        if isinstance(expr, (ast.List, ast.Tuple)):
            return next((b for b in map(self._formatter_problem, expr.elts) if b is not None), None)
        if isinstance(expr, ast.Dict):
            return next((b for b in map(self._formatter_problem, expr.values) if b is not None), None)
        return expr

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
                self._flag("dynamic-dispatch", node, "'NamedAgg' with unpacked arguments is not allowed")
            elif len(node.args) < 2 and not any(k.arg == "aggfunc" for k in node.keywords):
                self._flag("dynamic-dispatch", node, "'NamedAgg' needs its aggfunc written out")
        slot = T.AGGFUNC_POSITION.get(name or "")
        if slot is not None:
            on_module = isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                and self._imported(node.func.value.id) is not None
            slot += 1 if on_module and name == "pivot_table" else 0  # pd.pivot_table(data, ...)
            if len(node.args) > slot:
                self._flag("dynamic-dispatch", node.args[slot], f"pass '{name}' its aggfunc by keyword "
                           "(aggfunc=...), so the function it names can be checked")
        if name == "NamedAgg" and len(node.args) > 1:
            candidates.append(node.args[1])
        for cand in candidates:
            bad = self._dispatch_problem(cand)
            if bad is not None:
                self._flag("dynamic-dispatch", bad, "'aggfunc' needs a function, a lambda or one of the "
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
            self._flag("pandas-option", node, f"'{attr}' with unpacked arguments is not allowed")
            return
        keys = node.args if attr == "reset_option" else node.args[0::2]
        for key in keys:
            if not (isinstance(key, ast.Constant) and isinstance(key.value, str)
                    and key.value.startswith(T.SAFE_OPTION_PREFIXES)):
                self._flag("pandas-option", key, f"'{attr}' option key must be a string literal starting "
                           f"with {', '.join(T.SAFE_OPTION_PREFIXES)} (plotting/io options load modules)")

    def _check_dispatch_call(self, node: ast.Call, attr: str) -> None:
        if any(kw.arg is None for kw in node.keywords) or any(isinstance(a, ast.Starred) for a in node.args):
            self._flag("dynamic-dispatch", node, f"'.{attr}' with unpacked arguments is not allowed")
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
                    self._flag("dynamic-dispatch", kw.value, f"'.{attr}' named aggregation must be written "
                               "out: (column, function) or pd.NamedAgg(column, function)")
        for cand in candidates:
            bad = self._dispatch_problem(cand)
            if bad is not None:
                self._flag("dynamic-dispatch", bad, f"'.{attr}' needs a function, a lambda or one of the "
                           "named reductions (a computed name is looked up with getattr)")

    def _dispatch_problem(self, expr: ast.expr) -> ast.expr | None:
        if isinstance(expr, ast.Constant):
            if isinstance(expr.value, str) and expr.value not in T.SAFE_DISPATCH_NAMES:
                return expr
            return None
        if isinstance(expr, ast.Lambda):
            return None
        if isinstance(expr, ast.Name):
            if expr.id in self.callable_names or expr.id in T.SAFE_CALLABLE_BUILTINS:
                return None
            return expr
        if isinstance(expr, ast.Attribute):
            root = _chain_root(expr)
            if isinstance(root, ast.Name) and (root.id in self.callable_names or self._imported(root.id)):
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

    # ------------------------------------------------------------------ definitions
    def _visit_arguments_outside(self, args: ast.arguments) -> None:
        for d in [*args.defaults, *[d for d in args.kw_defaults if d is not None]]:
            self.visit(d)
        for a in [*args.posonlyargs, *args.args, *args.kwonlyargs,
                  *[x for x in (args.vararg, args.kwarg) if x is not None]]:
            if is_dunder(a.arg):
                self._flag("dunder-name", a, f"dunder parameter name '{a.arg}' is not allowed")
            if a.annotation is not None:
                self.visit(a.annotation)

    @staticmethod
    def _param_names(args: ast.arguments) -> frozenset[str]:
        names = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
        names += [x.arg for x in (args.vararg, args.kwarg) if x is not None]
        return frozenset(names)

    def _visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if is_dunder(node.name):
            if not (self.class_depth and node.name in T.ALLOWED_DUNDER_METHODS):
                self._flag("dunder-name", node, f"defining '{node.name}' is not allowed")
        elif node.name in T.FORBIDDEN_BUILTINS or node.name == "type":
            self._flag("forbidden-builtin", node, f"builtin '{node.name}' cannot be redefined")
        for dec in node.decorator_list:
            self._check_decorator(dec)
            self.visit(dec)
        self._visit_arguments_outside(node.args)
        if node.returns is not None:
            self.visit(node.returns)
        saved_class = self.class_depth
        self.class_depth = 0
        self.function_depth += 1
        self.param_scopes.append(self._param_names(node.args))
        for stmt in node.body:
            self.visit(stmt)
        self.param_scopes.pop()
        self.function_depth -= 1
        self.class_depth = saved_class

    visit_FunctionDef = _visit_function
    visit_AsyncFunctionDef = _visit_function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._visit_arguments_outside(node.args)
        self.param_scopes.append(self._param_names(node.args))
        self.visit(node.body)
        self.param_scopes.pop()

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if is_dunder(node.name):
            self._flag("dunder-name", node, f"class name '{node.name}' is not allowed")
        elif node.name in T.FORBIDDEN_BUILTINS or node.name == "type":
            self._flag("forbidden-builtin", node, f"builtin '{node.name}' cannot be redefined")
        for kw in node.keywords:
            if kw.arg == "metaclass":
                self._flag("metaclass", kw, "metaclass= is not allowed")
            else:
                self._flag("class-keyword", kw if kw.arg else node,
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
        ok = bool((isinstance(target, ast.Name) and target.id in T.SAFE_DECORATOR_BUILTINS
                   and target.id not in self.aliases and not self._is_param(target.id))
                  or self._dotted(target) in T.SAFE_DECORATOR_ROUTES
                  or (isinstance(target, ast.Attribute) and target.attr in ("setter", "getter", "deleter")
                      and isinstance(target.value, ast.Name) and self.class_depth))
        if ok and isinstance(dec, ast.Call):
            plain = all(isinstance(a, (ast.Constant, ast.Name)) for a in dec.args) and all(
                kw.arg is not None and isinstance(kw.value, (ast.Constant, ast.Name)) for kw in dec.keywords)
            ok = plain
        if not ok:
            self._flag("decorator", dec, "decorator not allowed (allowed: "
                       + ", ".join(sorted(T.SAFE_DECORATOR_BUILTINS | T.SAFE_DECORATOR_ROUTES))
                       + ", with literal arguments)", at_start=True)

    # ------------------------------------------------------------------ misc
    def visit_keyword(self, node: ast.keyword) -> None:
        self.generic_visit(node)
