"""Each vocabulary is one enum: settings, the task loader and the command line take their words from it."""

from __future__ import annotations

import argparse
import json
from enum import StrEnum
from pathlib import Path

import pytest

from finevo.cli import build_parser
from finevo.errors import InputError
from finevo.settings import Settings
from finevo.vocabulary import (
    TASK_CATEGORIES,
    AgentMode,
    Category,
    ProviderKind,
    SandboxBackend,
    ToolSource,
    choices,
    words,
)
from runner.inputs.tasks import load_tasks

VOCABULARIES: list[type[StrEnum]] = [AgentMode, SandboxBackend, Category, ToolSource, ProviderKind]


@pytest.mark.parametrize("vocabulary", VOCABULARIES, ids=lambda v: v.__name__)
def test_members_are_their_words(vocabulary: type[StrEnum]) -> None:
    for member in vocabulary:
        assert member == member.value and f"{member}" == member.value
        assert json.loads(json.dumps({"k": member})) == {"k": member.value}
        assert vocabulary(member.value) is member
    assert choices(vocabulary) == tuple(m.value for m in vocabulary)
    assert len(set(choices(vocabulary))) == len(vocabulary)


def test_words_for_messages() -> None:
    assert words(SandboxBackend) == "warm or subprocess"
    text = words(AgentMode)
    assert all(m.value in text for m in AgentMode) and text.endswith(f"or {list(AgentMode)[-1].value}")


def test_task_categories_are_every_category_but_security_in_order() -> None:
    assert Category.SECURITY not in TASK_CATEGORIES
    assert list(TASK_CATEGORIES) == [c for c in Category if c is not Category.SECURITY]


def test_provider_specs_name_the_file_kinds() -> None:
    for kind in ProviderKind:
        assert (kind.spec == f"{kind.value}:FILE") is kind.takes_file
        assert kind.spec in ProviderKind.specs()


@pytest.mark.parametrize("mode", list(AgentMode))
def test_settings_take_every_agent_mode_and_give_the_member(mode: AgentMode) -> None:
    s = Settings.from_env({}, env={"FINEVO_AGENT_MODE": mode.value})
    assert s.agent_mode is mode


@pytest.mark.parametrize("backend", list(SandboxBackend))
def test_settings_take_every_backend_and_give_the_member(backend: SandboxBackend) -> None:
    s = Settings.from_env({"sandbox_backend": backend.value.upper()}, env={})
    assert s.sandbox_backend is backend


def test_settings_refusals_list_the_vocabulary() -> None:
    with pytest.raises(InputError) as mode:
        Settings.from_env({}, env={"FINEVO_AGENT_MODE": "greedy"})
    assert "FINEVO_AGENT_MODE" in str(mode.value) and words(AgentMode) in str(mode.value)
    with pytest.raises(InputError) as backend:
        Settings.from_env({}, env={"FINEVO_SANDBOX_BACKEND": "docker"})
    assert words(SandboxBackend) in str(backend.value)


@pytest.mark.parametrize("spec, accepted", [
    ("live", "live"), (" reference ", "reference"), ("replay: a.jsonl", "replay:a.jsonl"),
    ("predictions:p.jsonl", "predictions:p.jsonl"),
    ("replay", None), ("predictions:", None), ("live:x.jsonl", None), ("reference:r", None), ("gpt", None),
])
def test_provider_specs_follow_the_kinds(spec: str, accepted: str | None) -> None:
    if accepted is not None:
        assert Settings.from_env({"llm": spec}, env={}).llm == accepted
    else:
        with pytest.raises(InputError, match=r"^invalid --llm=.*(file|FILE)"):
            Settings.from_env({"llm": spec}, env={})


def _choices(parser: argparse.ArgumentParser, verb: str, option: str) -> tuple[str, ...] | None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                if name == verb:
                    for opt in sub._actions:
                        if option in opt.option_strings:
                            return tuple(opt.choices) if opt.choices is not None else None
    raise AssertionError(f"no option {option} on {verb}")


def test_the_cli_choices_come_from_the_enums() -> None:
    parser = build_parser()
    assert _choices(parser, "solve", "--agent") == choices(AgentMode)
    assert _choices(parser, "solve", "--sandbox-backend") == choices(SandboxBackend)


def test_a_benchmark_task_cannot_have_the_security_category(tmp_path: Path) -> None:
    from finevo.paths import benchmarks_dir

    line = next(ln for ln in (benchmarks_dir() / "tasks.jsonl").read_text(encoding="utf-8").splitlines()
                if ln.strip().startswith("{"))
    task = json.loads(line)
    task["category"] = Category.SECURITY.value
    path = tmp_path / "tasks.jsonl"
    path.write_text(json.dumps(task) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"tasks\.jsonl:1: .*category"):
        load_tasks(path)
    task["category"] = TASK_CATEGORIES[-1].value
    path.write_text(json.dumps(task) + "\n", encoding="utf-8")
    assert load_tasks(path)[0].category is TASK_CATEGORIES[-1]
