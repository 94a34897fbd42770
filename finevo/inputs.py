"""Reading user-supplied input files with one-line errors that name the file (and line).

Every loader of tasks, payloads, predictions, baselines and tool files goes through here, so a
missing file, an unreadable one or a malformed JSON line always reads the same way:
``tasks.jsonl:7: malformed JSON: Expecting value (column 1)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from finevo.errors import InputError

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject


def read_text(path: str | Path, what: str = "file") -> str:
    """The file's UTF-8 text, or :class:`InputError` ("<path>: <what> not found" / "cannot read")."""
    path = Path(path)
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read {what}: {exc}") from None


def iter_jsonl(path: str | Path, what: str = "file") -> Iterator[tuple[int, str, JSONObject]]:
    """Yield ``(line number, "path:line", object)`` for each JSON object line of a JSON Lines file.

    Blank lines and lines starting with ``#`` are skipped; malformed JSON or a line that is not a
    JSON object raises :class:`InputError` naming ``path:line``.
    """
    path = Path(path)
    for lineno, line in enumerate(read_text(path, what).splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        where = f"{path}:{lineno}"
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputError(f"{where}: malformed JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(data, dict):
            raise InputError(f"{where}: expected a JSON object, got {type(data).__name__}")
        yield lineno, where, data


def read_json(path: str | Path, what: str = "file") -> Any:
    """The parsed JSON document, or :class:`InputError` naming ``path:line`` of the syntax error."""
    path = Path(path)
    try:
        return json.loads(read_text(path, what))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: malformed JSON in {what}: {exc.msg} (column {exc.colno})") from None
