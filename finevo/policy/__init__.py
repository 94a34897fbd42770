"""Static security policy for generated tool code.

``check(code, filename=...) -> PolicyReport`` parses the source and walks its syntax tree; it
never scans string literals, comments or docstrings as text, and it never raises. Every
violation names a rule, a 1-based line and a 1-based column. The rules:

==========================  ===============================================================
rule                        refuses
==========================  ===============================================================
syntax-error                unparsable source, null bytes, lone surrogates
invalid-input / too-large   a non-text input / a source over ``MAX_SOURCE_CHARS``
too-complex                 nesting so deep the parser or the checker runs out of stack
encoding-declaration        a PEP 263 declaration other than utf-8 (``# coding: utf-7``)
bidi-control                Unicode bidirectional controls (Trojan Source)
non-ascii-identifier        identifiers with non-ASCII letters (``ｅval`` runs as ``eval``)
import-not-allowed          imports outside ``ALLOWED_IMPORTS``
import-star / relative-import  ``from x import *`` / ``from . import x``
submodule-not-allowed       routes such as ``numpy.ctypeslib``, ``pandas.io``, ``np.lib.format``
module-attribute            attributes naming a module on a chain that starts at an imported
                            module (``typing.sys``, ``json.codecs``), names of door modules
                            (``os``, ``sys``, ``ctypes``, ...) on any object, and yfinance
                            attributes other than Ticker / Tickers / download
dunder-name                 dunder names (``__import__``, ``__builtins__``), except reading
                            ``__name__`` and assigning ``__all__``; dunder definitions outside
                            a small set of special methods
dunder-attribute            every ``obj.__x__`` access, except ``super().__init__(...)`` and the
                            other special methods a tool may define, called at once
private-attribute           every ``obj._x`` access
forbidden-builtin           eval, exec, compile, open, getattr, setattr, delattr, globals,
                            locals, vars, dir, breakpoint, input, help, exit, quit,
                            memoryview, ... -- called, aliased, passed, stored or rebound
forbidden-attribute         frame/code introspection, string evaluators (``df.eval``,
                            ``df.query``, ``typing.get_type_hints``), os-level names;
                            ``hist`` / ``boxplot`` / ``query`` pass only as data fields
                            (assigned, indexed, iterated, measured -- never called or passed)
file-io                     ``read_*``, ``to_*`` writers, ``load``/``save``/``fromfile``/
                            ``memmap``/``tofile``/...; text writers (``to_csv``) only when
                            called with no path
module-value                a module used as a value (``m = pd``, ``f(np)``, ``r = np.random``):
                            modules are only reached as ``module.name``, so every route is checked
dynamic-type / metaclass    ``type`` with 3 arguments or as a value / ``metaclass=``
class-keyword               other class keywords
format-string               ``.format`` on a non-literal, templates with ``{0.attr}`` or
                            ``{0[key]}``, ``.format_map``
decorator                   decorators outside a small allowlist
dynamic-dispatch            pandas ``apply/agg/aggregate/transform`` with a computed name
module-mutation             assigning or deleting anything reached from an imported module
                            (``json.JSONEncoder.encode = f``), except ``pd.options`` with a
                            safe prefix
raw-memory                  ``np.ndarray`` / ``recarray`` / ``chararray`` other than as a type
                            (annotations, isinstance, comparisons): over a buffer, integers
                            become object pointers
import-rebound              an imported name bound to something else (``cast = f``): checks
                            that trust the import would apply to the tool's object
unbound-module-name         a module's name the tool never imports or binds (only globals
                            injected at run time could give it a value)
pandas-option               ``set_option``/``option_context`` with non-literal or unsafe keys
==========================  ===============================================================
"""

from __future__ import annotations

from finevo.policy.checker import check_source
from finevo.policy.report import PolicyReport, Violation
from finevo.policy.tables import ALLOWED_IMPORTS

__all__ = ["ALLOWED_IMPORTS", "PolicyReport", "Violation", "check"]


def check(code: str, *, filename: str = "<tool>") -> PolicyReport:
    """Judge ``code``; never raises (an analysis failure is itself a violation)."""
    try:
        found = check_source(code)
    except (RecursionError, MemoryError):
        found = [Violation("too-complex", "code is nested too deeply to analyse", 1, 1)]
    except Exception as exc:  # the policy must refuse, never crash
        found = [Violation("internal-error", f"the policy could not analyse this code "
                           f"({type(exc).__name__}); refused", 1, 1)]
    unique = sorted(set(found), key=lambda v: (v.line, v.col, v.rule, v.message))
    return PolicyReport(violations=tuple(unique), filename=filename)
