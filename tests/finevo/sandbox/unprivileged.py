"""Start a Python process as an unprivileged user (uid 65534, no capabilities) from a root test.

The interpreter used by the tests may live under a 0700 directory (``/root/.pyenv``). The command
then runs in a private mount namespace where each such directory is replaced by a 0755 tmpfs
holding only bind mounts of what the interpreter needs, so every path stays the same and nothing
grants the process extra rights. Needs root, util-linux ``unshare`` and ``setpriv``.
"""

from __future__ import annotations

import os
import shutil
import stat
import sys
import sysconfig
from pathlib import Path

import finevo

NOBODY = 65534
DROP = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--inh-caps=-all"]


def available() -> str | None:
    """None when an unprivileged process can be started here, else why not."""
    if os.geteuid() != 0:
        return "starting an unprivileged process needs root"
    if not (shutil.which("unshare") and shutil.which("setpriv")):
        return "needs util-linux unshare and setpriv"
    return None


def _blocking_dirs(paths: list[str]) -> dict[str, set[str]]:
    """Ancestors an unprivileged user cannot traverse -> the child names needed in them."""
    found: dict[str, set[str]] = {}
    for path in paths:
        parts = [p for p in os.path.realpath(path).split("/") if p]
        current = "/"
        for part in parts:
            if not os.stat(current).st_mode & stat.S_IXOTH:
                found.setdefault(current, set()).add(part)
                break
            current = os.path.join(current, part)
    return found


def unprivileged_command(python_args: list[str], tmp: Path) -> list[str]:
    """The command running ``python -I -B *python_args`` as uid 65534 without capabilities.

    ``tmp`` (made 0755 here) holds the wrapper script; the scripts named in ``python_args`` must
    be readable by others."""
    tmp.chmod(0o755)
    paths = sysconfig.get_paths()
    needed = [sys.executable, os.path.dirname(os.path.abspath(sys.executable)), sys.prefix, sys.base_prefix,
              paths["stdlib"], paths["platstdlib"], paths["purelib"], paths["platlib"],
              os.path.dirname(finevo.__file__)]
    marker = os.path.join(sys.prefix, "pyvenv.cfg")  # how a venv's python knows it is one
    if os.path.isfile(marker):
        needed.append(marker)
    blocking = _blocking_dirs(needed)
    # The interpreter as invoked: a venv's python finds its pyvenv.cfg (and so finevo) from this path.
    python = os.path.abspath(sys.executable)
    if not blocking:
        return [*DROP, python, "-I", "-B", *python_args]
    lines = ["set -e"]
    for i, (directory, names) in enumerate(sorted(blocking.items())):
        for name in sorted(names):
            inner = os.path.join(directory, name)
            is_dir = os.path.isdir(inner)
            if not os.stat(inner).st_mode & (stat.S_IXOTH if is_dir else stat.S_IROTH):
                raise OSError(f"{inner} is not {'traversable' if is_dir else 'readable'} either; "
                              "no non-root view can be built")
            lines += [f"stage=$(mktemp{' -d' if is_dir else ''})", f"mount --bind '{inner}' \"$stage\"",
                      f"echo \"$stage\" >> '{tmp}/stages{i}'"]
        lines.append(f"mount -t tmpfs -o mode=0755 tmpfs '{directory}'")
        for name in sorted(names):
            target = os.path.join(directory, name)
            lines += [f"{'mkdir' if os.path.isdir(target) else 'touch'} '{target}'",
                      f"mount --bind \"$(sed -n 1p '{tmp}/stages{i}')\" '{target}'",
                      f"sed -i 1d '{tmp}/stages{i}'"]
    lines.append('exec "$@"')
    wrapper = tmp / "view.sh"
    wrapper.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ["unshare", "--mount", "--propagation", "private", "sh", str(wrapper),
            *DROP, python, "-I", "-B", *python_args]
