"""One agent session for the gate: settings, LLM provider, registry, sandbox and agent, built together
and closed together.

The gate never constructs these pieces itself; it asks a :data:`SessionFactory` for a session.
:func:`default_session` wires the real finevo components; tests pass a factory of their own.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from finevo.vocabulary import AgentMode, ProviderKind, SandboxBackend

if TYPE_CHECKING:
    from finevo.question import Question, SecurityQuestion


@dataclass(frozen=True)
class SessionSpec:
    """What a session is made of (all paths absolute)."""

    llm: str                                  # live | replay:FILE | predictions:FILE | reference
    registry_dir: Path
    data_dir: Path
    agent_mode: str = AgentMode.EVOLVING
    max_refinements: int | None = None
    model: str | None = None
    temperature: float | None = None
    record: Path | None = None
    #: The security tasks file (the reference provider answers security tasks from it).
    security_path: Path | None = None
    #: An LLM provider object to use instead of ``llm`` (the self-check's null model).
    provider: Any = None
    label: str = "main"
    #: ``warm`` | ``subprocess``; None: ``FINEVO_SANDBOX_BACKEND``, else warm.
    sandbox_backend: str | None = None
    #: The registry's database (None: a SQLite file in ``registry_dir``).
    registry_url: str | None = None
    #: The security tasks' own canaries (:meth:`runner.execution.canaries.Canaries.values`): filled
    #: into the hostile code the reference model answers with.
    security_canaries: dict[str, str] | None = None
    #: The run's warm sandboxes, handed on from a closed session to the next (None: each session
    #: starts its own and closes it).
    sandboxes: SandboxPool | None = None


class AgentLike(Protocol):
    def solve(self, question: Question | SecurityQuestion, deadline: float | None = None) -> Any: ...


@dataclass(frozen=True)
class SessionInfo:
    """What a session really uses (results.json's config records it)."""

    #: The provider's name (``none`` for the static agent).
    provider: str
    #: The model asked (None unless a live model).
    model: str | None
    temperature: float | None
    max_refinements: int | None
    sandbox_backend: str | None = None
    #: Each containment layer of the sandbox and whether it is active.
    sandbox_layers: dict[str, bool] = field(default_factory=dict)
    #: Why the configured sandbox backend was replaced, when it was.
    sandbox_fallback: str | None = None


@dataclass
class Session:
    agent: AgentLike
    sandbox: Any
    #: None: a session that does not say (the run's configuration stands for it).
    info: SessionInfo | None = None
    registry_empty: bool = True
    closers: list[Callable[[], None]] = field(default_factory=list)

    def interrupt(self) -> None:
        """Stop whatever runs now: closing the sandbox kills its worker processes."""
        with contextlib.suppress(Exception):  # best effort while aborting
            self.sandbox.close()

    def close(self) -> None:
        for close in reversed(self.closers):
            with contextlib.suppress(Exception):
                close()
        self.closers.clear()


SessionFactory = Callable[[SessionSpec], Session]


def default_session(spec: SessionSpec) -> Session:
    """Wire the real finevo agent (imported lazily: ``list``/``report`` never need it).

    The static agent answers from the registry alone: it gets no LLM provider, so it needs no
    endpoint. The sandbox is the configured backend; a warm worker that cannot start falls back
    to the subprocess backend with a one-line notice on stderr. ``info`` says which backend and
    which model (the configured one only for a live model) the session really uses.
    """
    from finevo.agent.agent import Agent
    from finevo.llm.providers import make_provider
    from finevo.registry import Registry
    from finevo.settings import Settings
    from runner.inputs.tasks import security_answers

    registry_dir = Path(spec.registry_dir)
    settings = Settings.from_env({
        "llm": spec.llm if spec.provider is None else None, "model": spec.model, "temperature": spec.temperature,
        "record": spec.record, "registry_dir": registry_dir,
        "registry_url": spec.registry_url or f"sqlite:///{registry_dir / 'registry.db'}", "data_dir": spec.data_dir,
        "max_refinements": spec.max_refinements, "agent_mode": spec.agent_mode,
        "sandbox_backend": spec.sandbox_backend,
    })
    closers: list[Callable[[], None]] = []
    try:  # a piece that fails to open closes the ones opened before it
        if spec.provider is not None:
            provider = spec.provider
        elif settings.agent_mode == AgentMode.STATIC:
            provider = None  # registry only: never asks a model
        else:
            provider = make_provider(spec.llm, settings, security_answers=security_answers(spec.security_path,
                                                                                    spec.security_canaries))
        close_provider = getattr(provider, "close", None)  # not every provider holds a connection
        if close_provider is not None:
            closers.append(close_provider)
        registry_dir.mkdir(parents=True, exist_ok=True)
        registry = Registry(settings.registry_url, settings.registry_code_dir)  # refuses an old or foreign schema
        closers.append(registry.close)
        empty = registry.is_empty()
        sandbox, fallback = pooled_sandbox(spec, settings.sandbox_backend, closers)
        agent = Agent(settings, provider, sandbox, registry, spec.agent_mode)
        closers.append(agent.close)
        info = SessionInfo(provider=provider.name if provider is not None else "none",
                           model=session_model(provider, settings), temperature=settings.temperature,
                           max_refinements=settings.max_refinements, sandbox_backend=sandbox.backend,
                           sandbox_layers=dict(sandbox.layers()), sandbox_fallback=fallback)
    except BaseException:
        Session(agent=None, sandbox=None, closers=closers).close()  # type: ignore[arg-type]
        raise
    return Session(agent=agent, sandbox=sandbox, info=info, registry_empty=empty, closers=closers)


def pooled_sandbox(spec: SessionSpec, backend: str, closers: list[Callable[[], None]]) -> tuple[Any, str | None]:
    """The session's sandbox (from ``spec.sandboxes`` when the run has a pool, else a new one) and
    why the warm worker was replaced; its closer (back to the pool, or closed) joins ``closers``."""
    pool = spec.sandboxes
    if pool is None:
        sandbox, fallback = open_sandbox(spec.data_dir, backend)
        closers.append(sandbox.close)
        return sandbox, fallback
    sandbox, fallback = pool.open(spec.data_dir, backend)
    closers.append(lambda: pool.give_back(spec.data_dir, backend, sandbox, fallback))
    return sandbox, fallback


class SandboxPool:
    """The warm sandboxes of one gate run, handed from session to session.

    Starting a warm worker costs about a second of CPU (Python, numpy, pandas, the snapshot). A
    worker keeps nothing of the runs it served that a later run could see -- every tool's child
    is forked from a zygote that never read a request -- so a session that closes gives its
    sandbox back here, and the next session that needs one of the same snapshot and backend
    (the self-check's runs after the judging lane's) takes it instead of starting another.
    :meth:`prewarm` starts workers ahead, in parallel (the lanes' beside the main session's).
    A sandbox that was closed (an interrupt kills its worker) is never handed on; :meth:`close`
    closes every sandbox still here."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[tuple[tuple[str | None, str], Any, str | None]] = []
        self._pending: list[tuple[tuple[str | None, str], Future[tuple[Any, str | None]]]] = []
        self._closed = False

    @staticmethod
    def _key(data_dir: Path | str | None, backend: str) -> tuple[str | None, str]:
        return (str(Path(data_dir).absolute()) if data_dir is not None else None, str(backend))

    def prewarm(self, data_dir: Path | str | None, backend: str, count: int) -> None:
        """Start ``count`` sandboxes now, each in a thread of its own (taken by :meth:`open`)."""
        key = self._key(data_dir, backend)
        for _ in range(count):
            future: Future[tuple[Any, str | None]] = Future()

            def start(future: Future[tuple[Any, str | None]] = future) -> None:
                try:
                    future.set_result(open_sandbox(data_dir, backend))
                except BaseException as exc:  # handed to the session that takes it (or dropped)
                    future.set_exception(exc)

            with self._lock:
                self._pending.append((key, future))
            threading.Thread(target=start, name="sandbox-prewarm", daemon=True).start()

    def open(self, data_dir: Path | str | None, backend: str) -> tuple[Any, str | None]:
        """An idle sandbox of ``data_dir`` and ``backend``, else one being started, else a new one."""
        key = self._key(data_dir, backend)
        while True:
            with self._lock:
                for index, (found, sandbox, fallback) in enumerate(self._idle):
                    if found == key and not _is_closed(sandbox):
                        del self._idle[index]
                        return sandbox, fallback
                starting = next((f for k, f in self._pending if k == key), None)
                if starting is not None:
                    self._pending = [(k, f) for k, f in self._pending if f is not starting]
            if starting is None:
                return open_sandbox(data_dir, backend)
            with contextlib.suppress(Exception):  # a worker that did not start: the next, or a new one
                return starting.result()

    def give_back(self, data_dir: Path | str | None, backend: str, sandbox: Any, fallback: str | None) -> None:
        """A closing session's sandbox: kept for the next session, or closed when the pool is."""
        with self._lock:
            if not self._closed and not _is_closed(sandbox):
                self._idle.append((self._key(data_dir, backend), sandbox, fallback))
                return
        sandbox.close()

    def close(self) -> None:
        """Close every sandbox here, and those still starting once they have started."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            pending, self._pending = self._pending, []
        for _key, sandbox, _fallback in idle:
            with contextlib.suppress(Exception):
                sandbox.close()
        for _key, future in pending:
            with contextlib.suppress(Exception):
                future.result()[0].close()


def _is_closed(sandbox: Any) -> bool:
    return bool(getattr(sandbox, "closed", False))


def open_sandbox(data_dir: Path | str | None, backend: str, *,
                 stderr: TextIO | None = None) -> tuple[Any, str | None]:
    """The sandbox of ``backend``, and why the warm worker was replaced (None when it was not).

    Only the warm backend falls back: a worker that cannot start (``SandboxUnavailable``, or the
    operating system refusing the process) leaves the subprocess backend, which starts one cold
    child per execution with the same confinement -- slower, not weaker.
    """
    from finevo.errors import SandboxUnavailable
    from finevo.sandbox import create_sandbox

    try:
        return create_sandbox(data_dir, backend=backend), None
    except (SandboxUnavailable, OSError) as exc:
        if backend != SandboxBackend.WARM:
            raise
        reason = " ".join(str(exc).split())[:300] or type(exc).__name__
    print(f"finevo-verify: the warm sandbox worker could not start ({reason}); "
          "using the subprocess backend", file=stderr or sys.stderr, flush=True)
    return create_sandbox(data_dir, backend=SandboxBackend.SUBPROCESS), reason


def session_model(provider: Any, settings: Any) -> str | None:
    """The model a session's answers come from, as reports should name it.

    A live model (``live``, ``live+record``) is the configured model. Any other provider is no
    model of ours: the predictions file (``predictions:<file name>``), the model(s) the replayed
    cassette was recorded with, or the provider's own name (``reference``). No provider: None.
    """
    if provider is None:
        return None
    from finevo.llm.providers import PredictionsProvider, RecordingProvider, ReplayProvider

    name = str(getattr(provider, "name", "") or "")
    if name == ProviderKind.LIVE or isinstance(provider, RecordingProvider):
        return str(settings.model)
    if isinstance(provider, PredictionsProvider):
        return f"{ProviderKind.PREDICTIONS}:{Path(provider.path).name}"
    if isinstance(provider, ReplayProvider):
        path = Path(provider.cassette.path)
        models = provider.cassette.models()
        if settings.model in models:
            return str(settings.model)  # the model every replayed request names
        return ", ".join(sorted(models)) if models else f"{ProviderKind.REPLAY}:{path.name}"
    return name or None
