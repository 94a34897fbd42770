"""Running the suite K times (``--repeats K``): each repeat from an empty registry of its own.

Repeat 1 uses the run's registry (``<run>/registry``), exactly as a run without repeats; repeat r >= 2
opens a new session on ``<run>/registry-r<r>``, so tools created in one repeat are reused later in
that repeat only. The LLM provider is shared by every repeat: a cassette (``--llm replay:FILE``)
then serves each request's recorded replies in order, repeat after repeat, as ``--record`` wrote them;
a predictions file is told the current repeat (its lines may carry a ``repeat`` field).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from runner.execution.deadline import TaskRunner
from runner.execution.session import SessionFactory, SessionSpec


class _SharedProvider:
    """The first repeat's provider for the later repeats: never closed by them (the first session owns it)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "shared")

    def complete(self, request: Any, *, timeout: float | None = None) -> Any:
        return self.inner.complete(request, timeout=timeout)

    def __getattr__(self, name: str) -> Any:
        if name == "close":
            raise AttributeError(name)
        return getattr(self.inner, name)


class Repeats:
    """The task runner of each repeat (repeat 1: the run's own runner, kept open to the end)."""

    def __init__(self, factory: SessionFactory, spec: Callable[..., SessionSpec], first: TaskRunner,
                 run_dir: Path) -> None:
        self.factory = factory
        self.spec = spec
        self.first = first
        self.run_dir = run_dir
        self.current: TaskRunner | None = None

    def _provider(self) -> Any:
        agent = getattr(self.first.session, "agent", None)
        return getattr(agent, "provider", None)

    def runner_for(self, repeat: int) -> TaskRunner:
        provider = self._provider()
        if provider is not None and hasattr(provider, "repeat"):
            provider.repeat = repeat  # a predictions file answers per repeat
        if repeat == 1:
            return self.first
        self.close()
        spec = self.spec(registry_dir=self.run_dir / f"registry-r{repeat}")
        if provider is not None:
            spec = replace(spec, provider=_SharedProvider(provider))
        self.current = TaskRunner(self.first.factory, spec, self.first.interrupts, self.first.timeout_s)
        return self.current

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None
