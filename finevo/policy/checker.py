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
from collections.abc import Callable, Iterable

from finevo.policy import tables as T
from finevo.policy.bindings import Bindings
from finevo.policy.report import Violation
from finevo.policy.rules import Rule

_CODING_RE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


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
        tree = ast.parse(code, type_comments=False)
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


# --------------------------------------------------------------------------- text-level rules
def _position(code: str, index: int) -> tuple[int, int]:
    line = code.count("\n", 0, index) + 1
    col = index - (code.rfind("\n", 0, index) + 1) + 1
    return line, col


def _check_characters(code: str) -> list[Violation]:
    out: list[Violation] = []
    nul = code.find("\x00")
    if nul >= 0:
        out.append(Violation(Rule.SYNTAX_ERROR, "source contains a null byte", *_position(code, nul)))
    for i, ch in enumerate(code):
        if "\ud800" <= ch <= "\udfff":
            out.append(Violation(Rule.SYNTAX_ERROR, "source contains a lone surrogate (not valid UTF-8)",
                                 *_position(code, i)))
            break
        if ch in T.BIDI_CONTROLS:
            out.append(Violation(Rule.BIDI_CONTROL, f"bidirectional control character U+{ord(ch):04X} "
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
                out.append(Violation(Rule.ENCODING_DECLARATION,
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
                    Rule.NON_ASCII_IDENTIFIER,
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
_DUNDER_WORD = re.compile(r"(?<![A-Za-z0-9_])__[a-z0-9]+(?:_[a-z0-9]+)*__(?![A-Za-z0-9_])")
_MAX_FOLD = 10_000


def _dunder_in_text(text: str) -> str | None:
    """The first dunder identifier spelled in ``text`` (``__main__`` apart), or a raw-memory protocol
    name in any case and surroundings (``'x__ARRAY_INTERFACE__x'[1:-1].lower()``), or None."""
    for m in _DUNDER_WORD.finditer(text):
        if m.group(0) not in T.ALLOWED_DUNDER_STRINGS:
            return m.group(0)
    lowered = text.lower()
    return next((f"__{word}__" for word in T.RAW_MEMORY_PROTOCOL_WORDS if word in lowered), None)


def _fold_text(expr: ast.expr, memo: dict[int, str | None] | None = None) -> str | None:
    """The string a constant expression builds (``'__arr' + 'ay_interface__'``, ``'_' * 2``,
    ``''.join([...])``, an f-string of constants), or None when it is computed. ``memo`` keeps the
    fold of every link of an ``a + b + c`` chain, so folding each link costs one step."""
    memo = {} if memo is None else memo
    if id(expr) in memo:
        return memo[id(expr)]
    if isinstance(expr, ast.Constant):
        return expr.value if isinstance(expr.value, str) else None
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
        links: list[ast.BinOp] = []  # a + b + c nests to the left: walk it without recursion
        base: ast.expr = expr
        while isinstance(base, ast.BinOp) and isinstance(base.op, ast.Add) and id(base) not in memo:
            links.append(base)
            base = base.left
        folded = memo[id(base)] if id(base) in memo else _fold_text(base, memo)
        for link in reversed(links):
            part = _fold_text(link.right, memo) if folded is not None else None
            folded = folded + part if folded is not None and part is not None \
                and len(folded) + len(part) <= _MAX_FOLD else None
            memo[id(link)] = folded
        return folded
    if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Mult):
        text, times = (expr.left, expr.right) if isinstance(expr.right, ast.Constant) else (expr.right, expr.left)
        folded = _fold_text(text)
        count = times.value if isinstance(times, ast.Constant) else None
        if folded is not None and isinstance(count, int) and not isinstance(count, bool) \
                and count >= 0 and len(folded) * count <= _MAX_FOLD:
            return folded * count
        return None
    if isinstance(expr, ast.FormattedValue) and expr.format_spec is None and expr.conversion in (-1, 115):
        return _fold_text(expr.value)
    if isinstance(expr, ast.JoinedStr):
        parts = [_fold_text(v) for v in expr.values]
        return "".join(p for p in parts if p is not None) if all(p is not None for p in parts) else None
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and expr.func.attr == "join" \
            and len(expr.args) == 1 and isinstance(expr.args[0], (ast.List, ast.Tuple)) and not expr.keywords:
        sep = _fold_text(expr.func.value)
        items = [_fold_text(e) for e in expr.args[0].elts]
        if sep is not None and all(i is not None for i in items):
            return sep.join(i for i in items if i is not None)[:_MAX_FOLD]
    return None


def _chain_root(expr: ast.expr) -> ast.expr:
    """The object an attribute chain starts at (``np`` for ``np.linalg.norm``)."""
    while isinstance(expr, ast.Attribute):
        expr = expr.value
    return expr


# --------------------------------------------------------------------------- the AST walk
class _Checker(ast.NodeVisitor):
    def __init__(self, code: str, tree: ast.Module) -> None:
        self.code = code
        self.tree = tree
        self.lines = code.splitlines()
        self.violations: list[Violation] = []
        self.bindings = Bindings(tree)             # every name resolved to its scope, before any rule
        self.ok_nodes: set[int] = set()            # nodes an enclosing construct already vetted
        self.inner_attrs: set[int] = set()         # Attribute nodes inside a chain already routed
        self.module_steps: set[int] = set()        # Attribute nodes that are allowed submodules
        self.receivers: set[int] = set()           # Name nodes that are the object of an attribute
        self.compared: set[int] = set()            # nodes that are operands of a comparison
        self.module_children: set[int] = set()     # Attribute nodes whose receiver is a module
        self.class_depth = 0
        self.function_depth = 0
        self.parents: dict[int, ast.AST] = {}
        self.class_definitions: dict[str, ast.ClassDef] = {}
        self.docstrings: set[int] = set()          # string constants that are docstrings, never data
        self.text_expressions: list[ast.expr] = []  # BinOp / JoinedStr nodes, parents before children
        self._index(tree)
        self.class_statement_names = self.bindings.class_statement_names()

    def _index(self, tree: ast.Module) -> None:
        """One walk for each node's parent, the class statements and the docstrings."""
        stack: list[ast.AST] = [tree]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.ClassDef):
                self.class_definitions[node.name] = node
            elif isinstance(node, (ast.BinOp, ast.JoinedStr)):
                self.text_expressions.append(node)
            if isinstance(node, (ast.Module, ast.ClassDef, *_FUNCTION_NODES)) and node.body:
                first = node.body[0]
                if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                        and isinstance(first.value.value, str):
                    self.docstrings.add(id(first.value))
            for child in ast.iter_child_nodes(node):
                self.parents[id(child)] = node
                stack.append(child)

    def run(self) -> None:
        for conflict in self.bindings.conflicts:
            self._flag(conflict.rule, conflict.node, conflict.message, at_start=True)
        self._check_folded_texts()
        self.visit(self.tree)

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

    def _flag(self, rule: Rule, node: ast.AST, message: str, *, at_start: bool = False) -> None:
        line, col = self._col(node, at_start=at_start)
        self.violations.append(Violation(rule, message, line, col))

    def _is_builtin(self, node: ast.expr, names: frozenset[str]) -> bool:
        """``node`` surely names one of the builtins ``names`` (nothing can have rebound it)."""
        return self.bindings.surely_builtin(node, names)

    def _is_param(self, node: ast.expr) -> bool:
        return isinstance(node, ast.Name) and self.bindings.is_param(node)

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

    def _imported(self, node: ast.expr) -> str | None:
        """The import route the name ``node`` stands for in its scope, or None when it is not (only)
        that import."""
        return self.bindings.import_route(node) if isinstance(node, ast.Name) else None

    def _import_route_of_root(self, expr: ast.expr) -> str | None:
        """The import route the chain ``expr`` starts at, or None when it starts elsewhere."""
        root = _chain_root(expr)
        return self._imported(root)

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
                self._imported(func) == "typing.cast"
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

    # ------------------------------------------------------------------ calls
    # ------------------------------------------------------------------ strings
    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.docstrings:
            word = _dunder_in_text(node.value)
            if word is not None:
                self._flag(Rule.DUNDER_STRING, node, f"string data spells the dunder name '{word}': pandas "
                           "and numpy read labels and keys as attributes (a Series labelled "
                           "'__array_interface__' is raw memory)", at_start=True)

    def _check_folded_text(self, node: ast.expr, memo: dict[int, str | None] | None = None) -> None:
        folded = _fold_text(node, memo)
        word = _dunder_in_text(folded) if folded is not None else None
        if word is not None:
            self._flag(Rule.DUNDER_STRING, node, f"a string built from constants spells the dunder name "
                       f"'{word}'", at_start=True)

    def _check_folded_texts(self) -> None:
        """Strings built from constants (``+``, ``*``, f-strings): judged from the index, innermost
        first, so a long ``a + b + ...`` chain neither recurses nor folds twice."""
        memo: dict[int, str | None] = {}
        for node in reversed(self.text_expressions):
            self._check_folded_text(node, memo)

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


#: The attribute-name rules, in the order they are judged (the first that is concerned decides).
ATTRIBUTE_RULES: tuple[tuple[Rule, Callable[[_Checker, str, ast.AST], str | bool]], ...] = (
    (Rule.DUNDER_ATTRIBUTE, _Checker._attr_dunder),
    (Rule.PRIVATE_ATTRIBUTE, _Checker._attr_private),
    (Rule.FORBIDDEN_ATTRIBUTE, _Checker._attr_forbidden),
    (Rule.FILE_IO, _Checker._attr_file_io),
    (Rule.RAW_MEMORY, _Checker._attr_data),
    (Rule.RAW_MEMORY, _Checker._attr_raw_bytes),
    (Rule.RAW_MEMORY, _Checker._attr_cast),
    (Rule.DYNAMIC_TYPE, _Checker._attr_type),
    (Rule.RAW_MEMORY, _Checker._attr_raw_array_type),
    (Rule.DYNAMIC_DISPATCH, _Checker._attr_dispatch),
    (Rule.FORBIDDEN_ATTRIBUTE, _Checker._attr_obj),
    (Rule.FILE_IO, _Checker._attr_text_writer),
    (Rule.MODULE_ATTRIBUTE, _Checker._attr_door_module),
    (Rule.MODULE_ATTRIBUTE, _Checker._attr_module_name),
    (Rule.PANDAS_OPTION, _Checker._attr_option_setter),
)
