"""What the static policy returns: a report of violations, each naming rule, line and column."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from finevo.policy.rules import Rule


class ViolationDict(TypedDict):
    """:meth:`Violation.to_dict`: one violation as written out."""

    rule: str
    message: str
    line: int
    col: int


class PolicyReportDict(TypedDict):
    """:meth:`PolicyReport.to_dict`: the report as written out."""

    filename: str
    allowed: bool
    violations: list[ViolationDict]


@dataclass(frozen=True)
class Violation:
    """One refused construct. ``line`` and ``col`` are 1-based (``col`` counts characters)."""

    rule: Rule
    message: str
    line: int
    col: int

    def to_dict(self) -> ViolationDict:
        return {"rule": str(self.rule), "message": self.message, "line": self.line, "col": self.col}

    def describe(self, filename: str = "<tool>") -> str:
        """One line, compiler style: ``tool.py:3:5: [forbidden-builtin] ...``."""
        return f"{filename}:{self.line}:{self.col}: [{self.rule}] {self.message}"


@dataclass(frozen=True)
class PolicyReport:
    """The verdict on one source text; violations are sorted by position."""

    violations: tuple[Violation, ...]
    filename: str = "<tool>"

    @property
    def allowed(self) -> bool:
        return not self.violations

    @property
    def first(self) -> Violation | None:
        return self.violations[0] if self.violations else None

    @property
    def rules(self) -> tuple[Rule, ...]:
        """The distinct rules violated, in order of first appearance."""
        return tuple(dict.fromkeys(v.rule for v in self.violations))

    def describe(self) -> str:
        """``allowed`` or one line per violation."""
        if self.allowed:
            return f"{self.filename}: allowed"
        return "\n".join(v.describe(self.filename) for v in self.violations)

    def to_dict(self) -> PolicyReportDict:
        return {"filename": self.filename, "allowed": self.allowed,
                "violations": [v.to_dict() for v in self.violations]}
