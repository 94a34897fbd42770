"""``events.jsonl``: the run's append-only log, flushed after every task.

One JSON object per line with an ``event`` field:

* ``start``: run id, config as used, baseline, the planned tasks / security tasks / payloads;
* ``task`` / ``security`` / ``payload``: one finished record each;
* ``selfcheck``: the harness self-check summary;
* ``end``: how the run ended (``signal`` set when interrupted).

A run killed with SIGKILL loses at most the task in flight; :func:`read_events` tolerates a
truncated last line, and ``finevo-verify report events.jsonl`` rebuilds every report from it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any

from finevo.errors import InputError
from finevo.jsontypes import JSONObject


class EventLog:
    """Append-only JSONL writer; every :meth:`emit` reaches the disk before it returns."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh: IO[str] | None = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def emit(self, event: str, **fields: Any) -> None:
        if self._fh is None:
            raise RuntimeError(f"{self.path}: event log already closed")
        # Imported here, not at the top: reading an event log (`report`) and `--help` need no numpy.
        from finevo.normalize import RECORD, normalize

        line = json.dumps(normalize({"event": event, **fields}, RECORD), sort_keys=True, allow_nan=False)
        self._fh.write(line + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def __enter__(self) -> EventLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(path: str | Path) -> list[JSONObject]:
    """Read an event log; a torn last line (the process was killed mid-write) is dropped."""
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError:
        raise InputError(f"{path}: events file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read events: {exc}") from None
    events: list[JSONObject] = []
    for lineno, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            if lineno == len(lines):
                break  # torn final write
            raise InputError(f"{path}:{lineno}: malformed event: {exc.msg}") from None
        if not isinstance(data, dict) or "event" not in data:
            raise InputError(f"{path}:{lineno}: not an event object")
        events.append(data)
    if not events or events[0].get("event") != "start":
        raise InputError(f"{path}: no 'start' event: not a finevo-verify events file")
    return events
