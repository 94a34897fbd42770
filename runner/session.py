"""One agent session for the gate: settings, LLM provider, registry, sandbox and agent, built together
and closed together.

The gate never constructs these pieces itself; it asks a :data:`SessionFactory` for a session.
:func:`default_session` wires the real finevo components; tests pass a factory of their own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Protocol


@dataclass(frozen=True)
class SessionSpec:
    """What a session is made of (all paths absolute)."""

    llm: str                                  # live | replay:FILE | predictions:FILE | reference
    registry_dir: Path
    data_dir: Path
    agent_mode: str = "evolving"
    max_refinements: int | None = None
    model: str | None = None
    temperature: float | None = None
    record: Path | None = None
    #: The security tasks file (the reference provider answers security tasks from it).
    security_path: Path | None = None
    #: An LLM provider object to use instead of ``llm`` (the self-check's null model).
    provider: Any = None
    label: str = "main"


class AgentLike(Protocol):
    def solve(self, task: Any, deadline: float | None = None) -> Any: ...


@dataclass
class Session:
    agent: AgentLike
    sandbox: Any
    info: dict[str, Any] = field(default_factory=dict)
    registry_empty: bool = True
    closers: list[Callable[[], None]] = field(default_factory=list)

    def interrupt(self) -> None:
        """Stop whatever runs now: closing the sandbox kills its worker processes."""
        try:
            self.sandbox.close()
        except Exception:  # best effort while aborting
            pass

    def close(self) -> None:
        for close in reversed(self.closers):
            try:
                close()
            except Exception:
                pass
        self.closers.clear()


SessionFactory = Callable[[SessionSpec], Session]


def default_session(spec: SessionSpec) -> Session:
    """Wire the real finevo agent (imported lazily: ``list``/``report`` never need it)."""
    from finevo.agent.agent import Agent
    from finevo.llm.providers import make_provider
    from finevo.registry import Registry
    from finevo.sandbox import create_sandbox
    from finevo.settings import Settings

    registry_dir = Path(spec.registry_dir)
    settings = Settings.from_env({
        "llm": spec.llm if spec.provider is None else None, "model": spec.model, "temperature": spec.temperature,
        "record": spec.record, "registry_dir": registry_dir,
        "registry_url": f"sqlite:///{registry_dir / 'registry.db'}", "data_dir": spec.data_dir,
        "max_refinements": spec.max_refinements, "agent_mode": spec.agent_mode,
    })
    closers: list[Callable[[], None]] = []
    try:  # a piece that fails to open closes the ones opened before it
        provider = spec.provider if spec.provider is not None else make_provider(
            spec.llm, settings, security_tasks=spec.security_path)
        close_provider = getattr(provider, "close", None)  # not every provider holds a connection
        if close_provider is not None:
            closers.append(close_provider)
        registry_dir.mkdir(parents=True, exist_ok=True)
        registry = Registry(settings.registry_url, settings.registry_code_dir)  # reconciles on open
        closers.append(registry.close)
        empty = registry.is_empty()
        sandbox = create_sandbox(spec.data_dir, backend="warm")
        closers.append(sandbox.close)
        agent = Agent(settings, provider, sandbox, registry, spec.agent_mode)
        closers.append(agent.close)
        info = {"provider": provider.name, "model": settings.model, "temperature": settings.temperature,
                "max_refinements": settings.max_refinements, "sandbox_layers": dict(sandbox.layers())}
    except BaseException:
        Session(agent=None, sandbox=None, closers=closers).close()  # type: ignore[arg-type]
        raise
    return Session(agent=agent, sandbox=sandbox, info=info, registry_empty=empty, closers=closers)
