"""The static policy's rules: one enumeration, the single source the checker, the docs and the
tests derive from.

Each member's value is the rule id a violation carries (``import-not-allowed``); its
:attr:`Rule.explanation` is the one line the docs' rule table shows (docs/sandbox.md; rendered by
:func:`rules_table`, and a test keeps the page equal to it).
"""

from __future__ import annotations

from enum import StrEnum


class Rule(StrEnum):
    """A reason the policy refuses a construct (the value is the id shown in reports)."""

    SYNTAX_ERROR = "syntax-error"
    INVALID_INPUT = "invalid-input"
    TOO_LARGE = "too-large"
    TOO_COMPLEX = "too-complex"
    INTERNAL_ERROR = "internal-error"
    ENCODING_DECLARATION = "encoding-declaration"
    BIDI_CONTROL = "bidi-control"
    NON_ASCII_IDENTIFIER = "non-ascii-identifier"
    IMPORT_NOT_ALLOWED = "import-not-allowed"
    IMPORT_STAR = "import-star"
    RELATIVE_IMPORT = "relative-import"
    SUBMODULE_NOT_ALLOWED = "submodule-not-allowed"
    MODULE_ATTRIBUTE = "module-attribute"
    MODULE_VALUE = "module-value"
    MODULE_MUTATION = "module-mutation"
    UNBOUND_MODULE_NAME = "unbound-module-name"
    AMBIGUOUS_BINDING = "ambiguous-binding"
    IMPORT_REBOUND = "import-rebound"
    DUNDER_NAME = "dunder-name"
    DUNDER_ATTRIBUTE = "dunder-attribute"
    DUNDER_STRING = "dunder-string"
    PRIVATE_ATTRIBUTE = "private-attribute"
    FORBIDDEN_BUILTIN = "forbidden-builtin"
    FORBIDDEN_ATTRIBUTE = "forbidden-attribute"
    FILE_IO = "file-io"
    RAW_MEMORY = "raw-memory"
    DYNAMIC_TYPE = "dynamic-type"
    METACLASS = "metaclass"
    CLASS_KEYWORD = "class-keyword"
    FORMAT_STRING = "format-string"
    DECORATOR = "decorator"
    DYNAMIC_DISPATCH = "dynamic-dispatch"
    PANDAS_OPTION = "pandas-option"

    @property
    def explanation(self) -> str:
        """What the rule refuses, in one line."""
        return _EXPLANATIONS[self]


_EXPLANATIONS: dict[Rule, str] = {
    Rule.SYNTAX_ERROR: "unparsable source, null bytes, lone surrogates",
    Rule.INVALID_INPUT: "an input that is not text",
    Rule.TOO_LARGE: "a source over `MAX_SOURCE_CHARS` characters",
    Rule.TOO_COMPLEX: "nesting so deep the parser or the checker runs out of stack",
    Rule.INTERNAL_ERROR: "code the checker could not analyse (refused, never passed)",
    Rule.ENCODING_DECLARATION: "a PEP 263 declaration other than utf-8 (`# coding: utf-7`)",
    Rule.BIDI_CONTROL: "Unicode bidirectional controls (Trojan Source)",
    Rule.NON_ASCII_IDENTIFIER: "identifiers with non-ASCII letters (`ｅval` runs as `eval`)",
    Rule.IMPORT_NOT_ALLOWED: "imports outside `ALLOWED_IMPORTS`",
    Rule.IMPORT_STAR: "`from x import *` (the names it binds cannot be known)",
    Rule.RELATIVE_IMPORT: "`from . import x`",
    Rule.SUBMODULE_NOT_ALLOWED: "module routes such as `numpy.ctypeslib`, `pandas.io`, `pandas.core`, "
                                "`np.lib.format`, by import or by attribute",
    Rule.MODULE_ATTRIBUTE: "a module's name on a chain from an imported module (`typing.sys`), door "
                           "modules (`os`, `sys`, `ctypes`...) on any object, yfinance beyond "
                           "Ticker / Tickers / download, `np.test`",
    Rule.MODULE_VALUE: "a module used as a value (`m = pd`, `f(np)`, an import in a class body): "
                       "modules are only reached as `module.name`, so every route is checked",
    Rule.MODULE_MUTATION: "assigning or deleting anything reached from an imported module "
                          "(`json.JSONEncoder.encode = f`), pandas display/mode options apart",
    Rule.UNBOUND_MODULE_NAME: "a module's name the tool never binds (only injected globals could "
                              "give it a value)",
    Rule.AMBIGUOUS_BINDING: "a name bound to two different things in its scope (two imports of "
                            "different modules, one in a branch that never runs; two plain functions "
                            "of allowed modules apart), an import shadowing a door builtin, "
                            "`global`/`nonlocal` of an imported name",
    Rule.IMPORT_REBOUND: "an imported name bound any other way (`cast = f`, a loop or `match` capture) "
                         "in the import's scope or at module or class level, `= None` as an import "
                         "fallback apart (a function's own local only shadows it, like a parameter)",
    Rule.DUNDER_NAME: "dunder names (`__import__`, `__builtins__`) except reading `__name__` and "
                      "assigning `__all__`; dunder definitions outside a small set of special methods",
    Rule.DUNDER_ATTRIBUTE: "every `obj.__x__` access, except `super().__init__(...)` and the other "
                           "special methods a tool may define, called at once",
    Rule.DUNDER_STRING: "string data (also built from constants) spelling a dunder name other than "
                        "`'__main__'`, or a raw-memory protocol name in any case: pandas reads labels "
                        "as attributes",
    Rule.PRIVATE_ATTRIBUTE: "every `obj._x` access",
    Rule.FORBIDDEN_BUILTIN: "eval, exec, compile, open, getattr, setattr, vars, id, ... called, "
                            "aliased, passed, stored or rebound",
    Rule.FORBIDDEN_ATTRIBUTE: "frame / code introspection, string evaluators (`df.eval`, `df.query`, "
                              "`get_type_hints`), os-level names, `methodcaller`, "
                              "`catch_warnings(module=)`",
    Rule.FILE_IO: "`read_*`, `to_*` writers with a path, `load` / `save` / `memmap` / `tofile`, `to_xml`",
    Rule.RAW_MEMORY: "`np.ndarray` / `recarray` other than as a type, `.data`, `.tobytes()`, "
                     "`memoryview.cast`, `bytes(x)` of a non-literal",
    Rule.DYNAMIC_TYPE: "`type` with 3 arguments or as a value, metaclasses as values, positional "
                       "class patterns on classes that are not the tool's own",
    Rule.METACLASS: "`metaclass=` in a class statement",
    Rule.CLASS_KEYWORD: "other class keywords (arguments to `__init_subclass__`)",
    Rule.FORMAT_STRING: "`.format` on a non-literal, templates with `{0.attr}` or `{0[key]}`, "
                        "`.format_map`, computed pandas formatters",
    Rule.DECORATOR: "decorators outside a small allowlist (a decorator is a call)",
    Rule.DYNAMIC_DISPATCH: "pandas `apply/agg/aggregate/transform` (and `aggfunc=`) with a computed or "
                           "unsafe name, stored or used unbound",
    Rule.PANDAS_OPTION: "`set_option` / `option_context` with non-literal or unsafe keys",
}


def rules_table() -> str:
    """The Markdown table of every rule and its explanation (docs/sandbox.md's policy section holds it)."""
    rows = ["| rule | refuses |", "|---|---|"]
    rows += [f"| `{rule.value}` | {rule.explanation} |" for rule in Rule]
    return "\n".join(rows) + "\n"
