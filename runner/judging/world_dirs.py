"""Where the hidden worlds of a run are written, and the removal of those a killed run left behind."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

_ROOT_PREFIX = "finevo-worlds-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def default_root_parent() -> str:
    """Where world snapshots are written: ``FINEVO_WORLDS_DIR``, else ``/var/tmp``, else the
    temporary directory. Not ``/tmp`` by preference: the warm sandbox worker may live in its own
    mount namespace with a private ``/tmp`` (mounted when it starts), and it must read the worlds
    this run writes after that; ``/var/tmp`` is the host's in every namespace."""
    configured = os.environ.get("FINEVO_WORLDS_DIR")
    if configured:
        return configured
    if os.path.isdir("/var/tmp") and os.access("/var/tmp", os.W_OK | os.X_OK):
        return "/var/tmp"
    return tempfile.gettempdir()


def sweep_orphans(parent: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove the world directories of runs whose process is gone (killed before it could clean up:
    ``finevo-worlds-<pid>-*``); returns what was removed."""
    removed = []
    for path in Path(parent or default_root_parent()).glob(f"{_ROOT_PREFIX}*-*"):
        pid = path.name[len(_ROOT_PREFIX):].split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)) and path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
