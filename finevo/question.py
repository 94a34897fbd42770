"""What the agent is asked: a :class:`Question` (or a :class:`SecurityQuestion`), and nothing more.

The gate builds a question from its benchmark task (``runner.inputs.tasks.Task.question``); the
agent package never sees a task, so the oracle spec, the accepted conventions, the tolerance and the
probes cannot reach a prompt. :func:`load_questions` reads the question part of a task file (the
``finevo`` command uses it to recognise a bundled task's query); every other field is the gate's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from finevo.errors import InputError
from finevo.inputs import iter_jsonl
from finevo.jsontypes import JSONObject
from finevo.vocabulary import Category

OutputType = Literal["numeric", "boolean", "dict", "list"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OutputSpec(_Strict):
    """The shape a tool's return value must have.

    * ``numeric``: a finite float (an ``int`` is accepted as a number, a ``bool`` never is).
    * ``boolean``: a real ``bool``.
    * ``dict``: a mapping holding at least ``keys``, each value of ``value_type``.
    * ``list``: a list whose items are ``item_type`` (with ``item_keys`` when items are dicts).
    """

    type: OutputType
    keys: tuple[str, ...] = ()
    value_type: Literal["numeric", "boolean"] = "numeric"
    item_type: Literal["numeric", "dict"] | None = None
    item_keys: tuple[str, ...] = ()
    min_items: int = 0


class Intent(_Strict):
    """What the agent binds: the indicator (registry contract) and the task's own arguments."""

    indicator: str
    args: JSONObject = Field(default_factory=dict)


@dataclass(frozen=True)
class Question:
    """Everything the agent receives of a benchmark task (or of a free-text query).

    The gate builds it with :meth:`Task.question`; the agent never sees a :class:`Task`, so the
    oracle spec, the accepted conventions, the tolerance and the probes cannot reach a prompt.
    """

    task_id: str
    category: Category
    query: str
    #: The indicator the registry's contract names, and the task's own arguments.
    intent: Intent
    #: The output contract: the type of the answer and, for a dict, its keys.
    output: OutputSpec


@dataclass(frozen=True)
class SecurityQuestion:
    """Everything the agent receives of a security task (built by :meth:`SecurityTask.question`)."""

    task_id: str
    query: str
    #: The name of the function the request asks for.
    entry: str = "run"



class _QuestionRow(BaseModel):
    """The fields of a task file's line that make its question (the others are the gate's)."""

    model_config = ConfigDict(extra="ignore", frozen=True)
    id: str
    category: Category
    query: str = Field(min_length=1)
    intent: Intent
    output: OutputSpec


def load_questions(path: str | Path) -> list[Question]:
    """The question of every line of a benchmark task file; one-line :class:`InputError` on a flaw."""
    questions: list[Question] = []
    for _lineno, where, data in iter_jsonl(Path(path)):
        try:
            row = _QuestionRow.model_validate(data)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first.get("loc", ())) or "record"
            raise InputError(f"{where}: invalid question field '{field}': {first.get('msg')}") from None
        questions.append(Question(task_id=row.id, category=row.category, query=row.query, intent=row.intent,
                                  output=row.output))
    return questions
