"""Atomic file writes: a temp file in the target's directory, fsync, then rename over the target.

A reader never sees a half-written report, code file or snapshot file, and a process killed
mid-write leaves at most a temp file named ``<prefix>...<suffix>`` behind.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write(path: str | Path, data: str | bytes, *, prefix: str | None = None,
                 suffix: str = ".tmp", mode: int = 0o644) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(prefix=prefix if prefix is not None else f".{path.name}.", suffix=suffix,
                               dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(blob)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
