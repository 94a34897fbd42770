"""The closed sets of words finevo and its gate share, each defined once as a :class:`~enum.StrEnum`.

A member *is* its word: it compares equal to the plain string, formats and JSON-serialises as it,
so records, reports and command lines keep the plain words while the code names the members.
Command-line choices and help text are derived from these enums (:func:`choices`, :func:`words`),
never spelled again. This module imports nothing of ours (``runner`` and every ``finevo`` package
may use it), and nothing heavy: ``--help`` stays fast.
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["TASK_CATEGORIES", "AgentMode", "Category", "Isolation", "ProviderKind", "SandboxBackend",
           "ToolSource", "choices", "words"]


class AgentMode(StrEnum):
    """How the agent gets a tool for a task."""

    #: Reuse a verified tool when one fits, otherwise synthesise, refine and register one.
    EVOLVING = "evolving"
    #: Registry only: never calls the model; a task no stored tool fits fails.
    STATIC = "static"
    #: Synthesise and refine like ``evolving``, into a private in-memory registry: nothing persists.
    MEMORY_ONLY = "memory_only"


class SandboxBackend(StrEnum):
    """Where tool code runs."""

    #: A preloaded worker forks one confined child per execution (the default, fast path).
    WARM = "warm"
    #: A fresh interpreter per execution (slower; no state shared between executions).
    SUBPROCESS = "subprocess"


class Isolation(StrEnum):
    """How strongly the sandbox confines tool code (``--require-isolation`` can demand ``kernel``)."""

    #: Landlock and seccomp confine every child, and the containment self-test saw each forbidden
    #: attempt refused by a kernel layer.
    KERNEL = "kernel"
    #: Anything less: reported everywhere as "weak isolation".
    WEAK = "weak"


class Category(StrEnum):
    """The benchmark's categories, in report order (the order of this enum is the order of every report)."""

    FETCH = "fetch"
    CALCULATION = "calculation"
    COMPOSITE = "composite"
    #: The hostile requests and payloads: never a benchmark task's category.
    SECURITY = "security"


#: The categories a benchmark task may have (every category but ``security``), in report order.
TASK_CATEGORIES: tuple[Category, ...] = tuple(c for c in Category if c is not Category.SECURITY)


class ToolSource(StrEnum):
    """Where the tool that answered a task came from (``Outcome.tool_source``)."""

    CREATED = "created"
    REUSED = "reused"
    REFINED = "refined"
    #: The code the model wrote was stopped by the policy or the sandbox.
    BLOCKED = "blocked"
    #: The model declined to write code.
    REFUSED = "refused"
    #: No tool was reached (an error before any code existed).
    NONE = "none"


class ProviderKind(StrEnum):
    """The kinds of LLM provider; a spec is the kind, plus ``:FILE`` for the kinds that read one."""

    #: Chat completions over HTTP against any OpenAI-compatible endpoint.
    LIVE = "live"
    #: Answers recorded in a cassette (``replay:FILE``).
    REPLAY = "replay"
    #: Answers given per task in a predictions file (``predictions:FILE``).
    PREDICTIONS = "predictions"
    #: The benchmark's reference tools (and the hostile code of the security tasks); offline.
    REFERENCE = "reference"

    @property
    def takes_file(self) -> bool:
        return self in (ProviderKind.REPLAY, ProviderKind.PREDICTIONS)

    @property
    def spec(self) -> str:
        """How the kind is written on a command line: ``live``, ``replay:FILE``, ..."""
        return f"{self.value}:FILE" if self.takes_file else self.value

    @classmethod
    def specs(cls) -> str:
        """``live | replay:FILE | predictions:FILE | reference``, for help and error messages."""
        return " | ".join(kind.spec for kind in cls)


def choices(vocabulary: type[StrEnum]) -> tuple[str, ...]:
    """The words of ``vocabulary`` in definition order, for ``argparse`` ``choices``."""
    return tuple(member.value for member in vocabulary)


def words(vocabulary: type[StrEnum], *, last: str = "or") -> str:
    """``evolving, static or memory_only``: the words of ``vocabulary`` for help and error text."""
    names = choices(vocabulary)
    if len(names) < 2:
        return "".join(names)
    return f"{', '.join(names[:-1])} {last} {names[-1]}"
