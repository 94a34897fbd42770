from __future__ import annotations

from dataclasses import fields
from pathlib import Path

import pytest

from finevo.errors import InputError
from finevo.paths import snapshot_dir
from finevo.settings import Settings


def test_defaults_without_env_or_flags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    s = Settings.from_env({}, env={})
    assert s.llm is None and s.base_url is None and s.api_key is None
    assert s.model == "gpt-4o-mini"
    assert s.temperature == 0.0 and s.timeout == 60.0 and s.max_retries == 3
    assert s.max_refinements == 3 and s.agent_mode == "evolving"
    assert s.sandbox_backend == "warm"
    assert s.registry_dir == tmp_path / ".finevo" / "registry"
    assert s.registry_url == f"sqlite:///{tmp_path / '.finevo' / 'registry' / 'registry.db'}"
    assert s.data_dir == snapshot_dir()
    assert s.record is None


def test_flag_beats_finevo_env_beats_openai_env() -> None:
    env = {"FINEVO_LLM_BASE_URL": "http://finevo.local/v1", "OPENAI_BASE_URL": "http://openai.local/v1",
           "FINEVO_LLM_API_KEY": "k-finevo", "OPENAI_API_KEY": "k-openai", "FINEVO_LLM_MODEL": "qwen-plus"}
    s = Settings.from_env({}, env=env)
    assert s.base_url == "http://finevo.local/v1"
    assert s.api_key == "k-finevo"
    assert s.model == "qwen-plus"

    only_openai = Settings.from_env({}, env={"OPENAI_BASE_URL": "http://openai.local/v1/", "OPENAI_API_KEY": "k2"})
    assert only_openai.base_url == "http://openai.local/v1"
    assert only_openai.api_key == "k2"

    flagged = Settings.from_env({"model": "m-flag", "base_url": "http://flag/v1", "timeout": 5}, env=env)
    assert flagged.model == "m-flag" and flagged.base_url == "http://flag/v1" and flagged.timeout == 5.0


def test_none_override_means_not_given() -> None:
    s = Settings.from_env({"model": None, "timeout": None}, env={"FINEVO_LLM_MODEL": "from-env"})
    assert s.model == "from-env" and s.timeout == 60.0


def test_empty_env_value_is_ignored() -> None:
    s = Settings.from_env({}, env={"FINEVO_LLM_API_KEY": "", "OPENAI_API_KEY": "k"})
    assert s.api_key == "k"


def test_all_numeric_and_mode_settings_from_env(tmp_path: Path) -> None:
    env = {"FINEVO_LLM_TEMPERATURE": "0.7", "FINEVO_LLM_TIMEOUT": "2.5", "FINEVO_LLM_MAX_RETRIES": "0",
           "FINEVO_MAX_REFINEMENTS": "5", "FINEVO_AGENT_MODE": "memory_only",
           "FINEVO_REGISTRY_DIR": str(tmp_path / "reg"), "FINEVO_DATA": str(tmp_path / "snap"),
           "FINEVO_LLM_PROVIDER": "replay:cass.jsonl", "FINEVO_LLM_RECORD": str(tmp_path / "rec.jsonl")}
    s = Settings.from_env({}, env=env)
    assert (s.temperature, s.timeout, s.max_retries, s.max_refinements) == (0.7, 2.5, 0, 5)
    assert s.agent_mode == "memory_only"
    assert s.registry_dir == tmp_path / "reg"
    assert s.registry_code_dir == tmp_path / "reg" / "tools"
    assert s.registry_url.endswith(str(tmp_path / "reg" / "registry.db"))
    assert s.data_dir == tmp_path / "snap"
    assert s.llm == "replay:cass.jsonl"
    assert s.record == tmp_path / "rec.jsonl"


def test_sandbox_backend_flag_beats_env_beats_default() -> None:
    assert Settings.from_env({}, env={"FINEVO_SANDBOX_BACKEND": "subprocess"}).sandbox_backend == "subprocess"
    assert Settings.from_env({}, env={"FINEVO_SANDBOX_BACKEND": " Warm "}).sandbox_backend == "warm"
    flagged = Settings.from_env({"sandbox_backend": "warm"}, env={"FINEVO_SANDBOX_BACKEND": "subprocess"})
    assert flagged.sandbox_backend == "warm"
    assert flagged.public_dict()["sandbox_backend"] == "warm"
    with pytest.raises(InputError, match="--sandbox-backend"):
        Settings.from_env({"sandbox_backend": "docker"}, env={})


def test_registry_url_env_wins_over_dir() -> None:
    s = Settings.from_env({}, env={"FINEVO_REGISTRY_URL": "postgresql://u@h/db", "FINEVO_REGISTRY_DIR": "/x"})
    assert s.registry_url == "postgresql://u@h/db"


@pytest.mark.parametrize(("env", "needle"), [
    ({"FINEVO_LLM_TIMEOUT": "soon"}, "FINEVO_LLM_TIMEOUT"),
    ({"FINEVO_LLM_TIMEOUT": "0"}, "FINEVO_LLM_TIMEOUT"),
    ({"FINEVO_LLM_TEMPERATURE": "3"}, "FINEVO_LLM_TEMPERATURE"),
    ({"FINEVO_LLM_TEMPERATURE": "nan"}, "FINEVO_LLM_TEMPERATURE"),
    ({"FINEVO_LLM_MAX_RETRIES": "-1"}, "FINEVO_LLM_MAX_RETRIES"),
    ({"FINEVO_LLM_MAX_RETRIES": "2.5"}, "FINEVO_LLM_MAX_RETRIES"),
    ({"FINEVO_MAX_REFINEMENTS": "many"}, "FINEVO_MAX_REFINEMENTS"),
    ({"FINEVO_AGENT_MODE": "turbo"}, "FINEVO_AGENT_MODE"),
    ({"FINEVO_SANDBOX_BACKEND": "docker"}, "FINEVO_SANDBOX_BACKEND"),
    ({"FINEVO_LLM_PROVIDER": "replay:"}, "FINEVO_LLM_PROVIDER"),
    ({"FINEVO_LLM_PROVIDER": "magic"}, "FINEVO_LLM_PROVIDER"),
    ({"OPENAI_BASE_URL": "localhost:8000"}, "OPENAI_BASE_URL"),
])
def test_invalid_env_value_names_the_variable(env: dict[str, str], needle: str) -> None:
    with pytest.raises(InputError) as info:
        Settings.from_env({}, env=env)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_invalid_flag_value_names_the_flag() -> None:
    with pytest.raises(InputError, match="--max-refinements"):
        Settings.from_env({"max_refinements": -2}, env={})
    with pytest.raises(InputError, match="--timeout"):
        Settings.from_env({"timeout": True}, env={})


def test_unknown_override_is_a_programming_error() -> None:
    with pytest.raises(TypeError, match="modle"):
        Settings.from_env({"modle": "x"}, env={})


def test_api_key_never_shown() -> None:
    secret = "sk-very-secret-value"
    s = Settings.from_env({}, env={"OPENAI_API_KEY": secret})
    assert secret not in repr(s) and secret not in str(s)
    assert secret not in str(s.public_dict())
    assert s.public_dict()["api_key_set"] is True
    assert "api_key" not in s.public_dict()


def test_public_view_shows_every_setting_in_order() -> None:
    # the view is built field by field: a new setting must not be left out of it
    s = Settings(record=Path("/tmp/cassette.jsonl"), registry_dir=Path("reg"))
    view = s.public_dict()
    assert list(view) == ["api_key_set" if f.name == "api_key" else f.name for f in fields(Settings)]
    assert view["record"] == "/tmp/cassette.jsonl" and view["registry_dir"] == "reg"
    assert Settings().public_dict()["record"] is None


def test_invalid_api_key_error_does_not_echo_it() -> None:
    with pytest.raises(InputError) as info:
        Settings.from_env({"api_key": "   "}, env={})
    assert "--api-key" in str(info.value)


def test_registry_password_never_shown() -> None:
    s = Settings.from_env({}, env={"FINEVO_REGISTRY_URL": "postgresql+psycopg://finevo:pg-s3cret@db:5432/reg"})
    assert "pg-s3cret" not in repr(s) and "pg-s3cret" not in str(s.public_dict())
    assert s.public_dict()["registry_url"].startswith("postgresql+psycopg://finevo:")
