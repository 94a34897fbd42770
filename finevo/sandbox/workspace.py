"""The private, per-execution working directory of a sandbox child."""

from __future__ import annotations

import os
import shutil
import tempfile


def create() -> str:
    """A fresh 0700 directory; the child hands it to its sandbox uid before dropping root."""
    return tempfile.mkdtemp(prefix="finevo-sbx-")


def remove(path: str) -> None:
    """Delete the directory and whatever the tool left in it (read-only files included)."""
    def _force(func, target, _exc):  # type: ignore[no-untyped-def]
        try:
            os.chmod(target, 0o700)
            func(target)
        except OSError:
            pass

    shutil.rmtree(path, onerror=_force)
