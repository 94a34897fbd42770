"""Static security policy for generated tool code.

``check(code, filename=...) -> PolicyReport`` parses the source and walks its syntax tree; it
never scans string literals, comments or docstrings as text, and it never raises. Every
violation names a :class:`Rule`, a 1-based line and a 1-based column. The rules, each with its
one-line explanation, are the members of :class:`finevo.policy.rules.Rule` (docs/sandbox.md's policy
section shows :func:`finevo.policy.rules.rules_table`, and a test keeps the two equal).

Before any rule is judged, :mod:`finevo.policy.bindings` resolves every name to what it is bound
to in its scope (imports in any branch, parameters, ``match`` captures, walrus, comprehension and
loop targets, ``global`` / ``nonlocal``); a name bound to two different things is refused.
"""

from __future__ import annotations

from finevo.policy.checker import check_source
from finevo.policy.report import PolicyReport, Violation
from finevo.policy.rules import Rule, rules_table
from finevo.policy.tables import ALLOWED_IMPORTS

__all__ = ["ALLOWED_IMPORTS", "PolicyReport", "Rule", "Violation", "check", "rules_table"]


def check(code: str, *, filename: str = "<tool>") -> PolicyReport:
    """Judge ``code``; never raises (an analysis failure is itself a violation)."""
    try:
        found = check_source(code)
    except (RecursionError, MemoryError):
        found = [Violation(Rule.TOO_COMPLEX, "code is nested too deeply to analyse", 1, 1)]
    except Exception as exc:  # the policy must refuse, never crash
        found = [Violation(Rule.INTERNAL_ERROR, f"the policy could not analyse this code "
                           f"({type(exc).__name__}); refused", 1, 1)]
    unique = sorted(set(found), key=lambda v: (v.line, v.col, v.rule, v.message))
    return PolicyReport(violations=tuple(unique), filename=filename)
