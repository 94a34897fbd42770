"""The policy walk's shared state and helpers: what every group of checks reads.

Module-level helpers (text folding, dunder names) and :class:`CheckerBase`, the node visitor's
state (bindings, parents, vetted nodes) and the small questions every check asks of a node.
"""

from __future__ import annotations

import ast
import builtins
import io
import re
import string
import tokenize

from finevo.policy import tables as T
from finevo.policy.bindings import Bindings
from finevo.policy.report import Violation
from finevo.policy.rules import Rule

_CODING_RE = re.compile(r"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")



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




class CheckerBase(ast.NodeVisitor):

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
