"""All run-time settings of finevo, gathered in one place.

Precedence: an explicit override (a CLI flag) > a ``FINEVO_*`` environment variable > the
default. The LLM endpoint also honours the usual ``OPENAI_BASE_URL`` / ``OPENAI_API_KEY`` (after
their ``FINEVO_LLM_*`` counterparts). An invalid value raises one
:class:`~finevo.errors.InputError` line naming the flag or variable it came from.

==========================  =========================  ===========================================
setting                     environment variable       default
==========================  =========================  ===========================================
``llm`` (provider spec)     ``FINEVO_LLM_PROVIDER``    None (a :class:`~finevo.vocabulary.ProviderKind`
                                                       spec: ``live`` | ``replay:FILE`` | ...)
``base_url``                ``FINEVO_LLM_BASE_URL``,   None (the OpenAI API)
                            ``OPENAI_BASE_URL``
``api_key``                 ``FINEVO_LLM_API_KEY``,    None (never printed)
                            ``OPENAI_API_KEY``
``model``                   ``FINEVO_LLM_MODEL``       ``gpt-4o-mini``
``temperature``             ``FINEVO_LLM_TEMPERATURE`` 0.0
``timeout`` (s)             ``FINEVO_LLM_TIMEOUT``     60
``max_retries``             ``FINEVO_LLM_MAX_RETRIES`` 3
``record`` (cassette)       ``FINEVO_LLM_RECORD``      None
``registry_dir``            ``FINEVO_REGISTRY_DIR``    ``./.finevo/registry``
``registry_url``            ``FINEVO_REGISTRY_URL``    ``sqlite:///<registry_dir>/registry.db`` (any
                            (``--registry-url``)       SQLAlchemy URL, e.g. ``postgresql+psycopg://``;
                                                       its password is never printed)
``data_dir``                ``FINEVO_DATA``            :func:`finevo.paths.snapshot_dir`
``max_refinements``         ``FINEVO_MAX_REFINEMENTS`` 3
``agent_mode``              ``FINEVO_AGENT_MODE``      ``evolving`` (:class:`~finevo.vocabulary.AgentMode`)
``sandbox_backend``         ``FINEVO_SANDBOX_BACKEND`` ``warm`` (:class:`~finevo.vocabulary.SandboxBackend`)
==========================  =========================  ===========================================
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypedDict, TypeVar

from finevo.errors import InputError
from finevo.paths import snapshot_dir
from finevo.vocabulary import AgentMode, ProviderKind, SandboxBackend, choices, words

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_REGISTRY_DIR = "./.finevo/registry"

T = TypeVar("T")


class SettingsView(TypedDict):
    """:meth:`Settings.public_dict`: the settings as logs and reports show them (paths as text, the
    API key only as set / not set)."""

    llm: str | None
    base_url: str | None
    api_key_set: bool
    model: str
    temperature: float
    timeout: float
    max_retries: int
    record: str | None
    registry_dir: str
    registry_url: str
    data_dir: str
    max_refinements: int
    agent_mode: AgentMode
    sandbox_backend: SandboxBackend


@dataclass(frozen=True)
class Settings:
    llm: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    model: str = DEFAULT_MODEL
    temperature: float = 0.0
    timeout: float = 60.0
    max_retries: int = 3
    record: Path | None = None
    registry_dir: Path = Path(DEFAULT_REGISTRY_DIR)
    registry_url: str = ""
    data_dir: Path = Path(".")
    max_refinements: int = 3
    agent_mode: AgentMode = AgentMode.EVOLVING
    sandbox_backend: SandboxBackend = SandboxBackend.WARM

    def __repr__(self) -> str:
        parts = []
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "api_key":
                parts.append(f"api_key={'***' if value else None}")
            elif f.name == "registry_url":
                from finevo.registry.store import safe_url  # late: sqlalchemy only when shown

                parts.append(f"registry_url={safe_url(value) if value else value!r}")
            else:
                parts.append(f"{f.name}={value!r}")
        return f"Settings({', '.join(parts)})"

    __str__ = __repr__

    @property
    def registry_code_dir(self) -> Path:
        """Where the registry keeps tool code files."""
        return self.registry_dir / "tools"

    def public_dict(self) -> SettingsView:
        """A JSON-ready view for logs and reports; the API key only appears as set / not set, the
        registry URL without its password (as :meth:`__repr__` shows it)."""
        registry_url = self.registry_url
        if registry_url:
            from finevo.registry.store import safe_url  # late: sqlalchemy only when shown

            registry_url = safe_url(registry_url)
        return SettingsView(
            llm=self.llm, base_url=self.base_url, api_key_set=bool(self.api_key), model=self.model,
            temperature=self.temperature, timeout=self.timeout, max_retries=self.max_retries,
            record=str(self.record) if self.record is not None else None, registry_dir=str(self.registry_dir),
            registry_url=registry_url, data_dir=str(self.data_dir), max_refinements=self.max_refinements,
            agent_mode=self.agent_mode, sandbox_backend=self.sandbox_backend)

    @classmethod
    def from_env(cls, overrides: Mapping[str, Any] | None = None,
                 env: Mapping[str, str] | None = None) -> Settings:
        """Build settings from ``overrides`` (flag values; ``None`` means "not given"), then ``env``.

        ``env`` defaults to :data:`os.environ`. Unknown override keys are a programming error
        (:class:`TypeError`), not a user error.
        """
        env = os.environ if env is None else env
        given = {k: v for k, v in (overrides or {}).items() if v is not None}
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - known)
        if unknown:
            raise TypeError(f"unknown Settings override(s): {', '.join(unknown)}")
        src = _Source(given, env)

        registry_dir = src.get("registry_dir", ("FINEVO_REGISTRY_DIR",), _path, Path(DEFAULT_REGISTRY_DIR))
        registry_dir = registry_dir.expanduser().absolute()
        registry_url = src.get("registry_url", ("FINEVO_REGISTRY_URL",), _nonempty_str, "")
        if not registry_url:
            registry_url = f"sqlite:///{registry_dir / 'registry.db'}"

        return cls(
            llm=src.get("llm", ("FINEVO_LLM_PROVIDER",), _provider_spec, None),
            base_url=src.get("base_url", ("FINEVO_LLM_BASE_URL", "OPENAI_BASE_URL"), _url, None),
            api_key=src.get("api_key", ("FINEVO_LLM_API_KEY", "OPENAI_API_KEY"), _nonempty_str, None),
            model=src.get("model", ("FINEVO_LLM_MODEL",), _nonempty_str, DEFAULT_MODEL),
            temperature=src.get("temperature", ("FINEVO_LLM_TEMPERATURE",), _temperature, 0.0),
            timeout=src.get("timeout", ("FINEVO_LLM_TIMEOUT",), _positive_float, 60.0),
            max_retries=src.get("max_retries", ("FINEVO_LLM_MAX_RETRIES",), _nonneg_int, 3),
            record=src.get("record", ("FINEVO_LLM_RECORD",), _path, None),
            registry_dir=registry_dir,
            registry_url=registry_url,
            data_dir=src.get("data_dir", ("FINEVO_DATA",), _path, None) or snapshot_dir(),
            max_refinements=src.get("max_refinements", ("FINEVO_MAX_REFINEMENTS",), _nonneg_int, 3),
            agent_mode=src.get("agent_mode", ("FINEVO_AGENT_MODE",), _agent_mode, AgentMode.EVOLVING),
            sandbox_backend=src.get("sandbox_backend", ("FINEVO_SANDBOX_BACKEND",), _sandbox_backend,
                                    SandboxBackend.WARM),
        )


class _Source:
    def __init__(self, given: Mapping[str, Any], env: Mapping[str, str]) -> None:
        self.given = given
        self.env = env

    def get(self, key: str, env_names: tuple[str, ...], parse: Callable[[Any], T], default: T) -> T:
        if key in self.given:
            origin, raw = f"--{key.replace('_', '-')}", self.given[key]
        else:
            for name in env_names:
                value = self.env.get(name)
                if value is not None and value.strip() != "":
                    origin, raw = name, value
                    break
            else:
                return default
        try:
            return parse(raw)
        except (TypeError, ValueError) as exc:
            shown = "***" if key == "api_key" else repr(raw)
            raise InputError(f"invalid {origin}={shown}: {exc}") from None


# --------------------------------------------------------------------------- parsers
def _nonempty_str(raw: Any) -> str:
    text = str(raw).strip()
    if not text:
        raise ValueError("must not be empty")
    return text


def _path(raw: Any) -> Path:
    return Path(_nonempty_str(raw)).expanduser()


def _url(raw: Any) -> str:
    text = _nonempty_str(raw)
    if not text.startswith(("http://", "https://")):
        raise ValueError("expected an http:// or https:// URL")
    return text.rstrip("/")


def _float(raw: Any) -> float:
    if isinstance(raw, bool):
        raise ValueError("expected a number")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise ValueError("expected a number") from None
    if not math.isfinite(value):
        raise ValueError("expected a finite number")
    return value


def _temperature(raw: Any) -> float:
    value = _float(raw)
    if not 0.0 <= value <= 2.0:
        raise ValueError("expected a number between 0 and 2")
    return value


def _positive_float(raw: Any) -> float:
    value = _float(raw)
    if value <= 0:
        raise ValueError("expected a positive number of seconds")
    return value


def _nonneg_int(raw: Any) -> int:
    if isinstance(raw, bool):
        raise ValueError("expected a whole number >= 0")
    if isinstance(raw, int):
        value = raw
    else:
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ValueError("expected a whole number >= 0") from None
    if value < 0:
        raise ValueError("expected a whole number >= 0")
    return value


def env_whole_number(name: str, default: int, *, minimum: int = 0, env: Mapping[str, str] | None = None) -> int:
    """The whole number in environment variable ``name`` (``default`` when unset or blank); raises
    :class:`~finevo.errors.InputError` naming the variable for anything else or a value below ``minimum``."""
    text = (os.environ if env is None else env).get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"{name}: expected a whole number >= {minimum}, got {text!r}") from None
    if value < minimum:
        raise InputError(f"{name}: expected a whole number >= {minimum}, got {value}")
    return value


def _agent_mode(raw: Any) -> AgentMode:
    text = str(raw).strip()
    if text not in choices(AgentMode):
        raise ValueError(f"expected one of {words(AgentMode)}")
    return AgentMode(text)


def _sandbox_backend(raw: Any) -> SandboxBackend:
    text = str(raw).strip().lower()
    if text not in choices(SandboxBackend):
        raise ValueError(f"expected one of {words(SandboxBackend)}")
    return SandboxBackend(text)


def _provider_spec(raw: Any) -> str:
    """Validate the form of a provider spec (the file itself is checked when the provider opens)."""
    text = str(raw).strip()
    kind, sep, arg = text.partition(":")
    if kind not in choices(ProviderKind):
        raise ValueError(f"expected {ProviderKind.specs()}")
    if not ProviderKind(kind).takes_file:
        if sep:
            raise ValueError(f"'{kind}' takes no file (expected {ProviderKind.specs()})")
        return kind
    if not sep:
        raise ValueError(f"expected {ProviderKind.specs()}")
    if not arg.strip():
        raise ValueError(f"'{kind}:' needs a file, e.g. {kind}:path/to/file.jsonl")
    return f"{kind}:{arg.strip()}"
