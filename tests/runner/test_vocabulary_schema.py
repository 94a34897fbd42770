"""The results schema spells the same words as the enums (it is a file; this keeps it from drifting)."""

from __future__ import annotations

import argparse
from enum import StrEnum
from typing import Any

import pytest

from finevo.vocabulary import TASK_CATEGORIES, AgentMode, Category, Isolation, SandboxBackend, ToolSource, choices
from runner.cli import build_parser
from runner.records import PayloadState, SecurityState, TaskState
from runner.reports.document import schema
from runner.verdict.decide import VerdictStatus


def _resolve(root: dict[str, Any], node: Any) -> Any:
    """``node`` with its ``$ref`` followed (the schema is generated with shared definitions)."""
    while isinstance(node, dict) and "$ref" in node:
        node = root["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _at(path: str) -> Any:
    root: dict[str, Any] = schema()
    node: Any = root
    for key in path.split("/"):
        node = _resolve(root, node)
        if key == "enum" and "anyOf" in node:  # an optional value: its enum, then null
            options = [_resolve(root, o) for o in node["anyOf"]]
            return [w for o in options for w in o.get("enum", [])] + [None] * any(
                o.get("type") == "null" for o in options)
        node = node[key]
    return node


@pytest.mark.parametrize("path, words", [
    ("properties/config/properties/agent_mode/enum", choices(AgentMode)),
    ("properties/per_category/propertyNames/enum", choices(Category)),
    ("properties/tasks/items/properties/category/enum", tuple(c.value for c in TASK_CATEGORIES)),
    ("properties/tasks/items/properties/state/enum", choices(TaskState)),
    ("properties/tasks/items/properties/probes/items/properties/state/enum", choices(TaskState)),
    ("properties/tasks/items/properties/tool/properties/source/enum", choices(ToolSource)),
    ("properties/security/properties/tasks/items/properties/state/enum", choices(SecurityState)),
    ("properties/payloads/items/properties/state/enum", choices(PayloadState)),
    ("properties/verdict/properties/status/enum", choices(VerdictStatus)),
])
def test_schema_enums_are_the_vocabularies(path: str, words: tuple[str, ...]) -> None:
    assert tuple(_at(path)) == words


def test_schema_isolation_words_are_the_vocabulary() -> None:
    assert tuple(_at("properties/config/properties/isolation/enum")) == (*choices(Isolation), None)
    required = _at("properties/config/properties/require_isolation")
    options = required.get("anyOf", [required])
    assert [o.get("const", o.get("enum")) for o in options if o.get("type") != "null"] == [Isolation.KERNEL]
    assert _run_choices("--require-isolation") == (Isolation.KERNEL, "none")


def test_schema_sandbox_backends_are_the_vocabulary_or_none() -> None:
    assert tuple(_at("properties/config/properties/sandbox_backend/enum")) == (*choices(SandboxBackend), None)


def _run_choices(option: str) -> tuple[str, ...]:
    """The choices of ``option`` on the ``run`` verb."""
    parser = build_parser()
    verbs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    action = next(a for a in verbs.choices["run"]._actions if option in a.option_strings)
    assert action.choices is not None, option
    return tuple(action.choices)


@pytest.mark.parametrize("option, vocabulary", [
    ("--agent", AgentMode), ("--sandbox-backend", SandboxBackend), ("--category", Category),
])
def test_gate_cli_choices_come_from_the_enums(option: str, vocabulary: type[StrEnum]) -> None:
    assert _run_choices(option) == choices(vocabulary)
