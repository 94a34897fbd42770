"""The private, per-execution working directory of a sandbox child: created, removed, swept.

* :func:`create` makes ``<tmp>/finevo-sbx-<pid>-<start>-<pidns>-<random>``: the name records the
  process that owns it (its pid, its start time in clock ticks since boot, and its PID
  namespace), so a later run can tell a directory whose owner died (killed worker, killed gate)
  from one that another gate running on the same machine is still using.
* :func:`remove` deletes a tree whatever the tool left in it, without recursion and without ever
  following a symbolic link: an explicit stack of names, ``openat``-relative operations with
  ``O_NOFOLLOW`` and at most two descriptors open at a time, climbing back through ``..`` only
  after checking it is the very directory it came from (device and inode). A 100 000-level
  tree, read-only files, directories with mode 000, names the tool swapped for symlinks: all
  removed, nothing outside touched, never an exception.
* :func:`sweep_stale` removes the directories whose owner is dead -- and only those: a
  directory of a live process (ours or another gate's), of another PID namespace, or in an older
  or foreign naming scheme is left alone. It runs once per process, at the first :func:`create`,
  and after a warm worker was killed.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import secrets
import stat
import sys
import tempfile
import threading

PREFIX = "finevo-sbx-"
_NAME = re.compile(r"^finevo-sbx-(\d+)-(\d+)-(\d+)-[A-Za-z0-9_]+$")
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_PATH = getattr(os, "O_PATH", 0)
#: Passes over a tree before giving up (a process still writing into it, e.g. a dying child).
_PASSES = 5

_swept: set[int] = set()  # pids of the processes that have swept already (fork-safe)
_sweep_lock = threading.Lock()


# --------------------------------------------------------------------------- who owns a directory
def _start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot), or None if there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return int(fields[19])  # field 22 of the whole line; fields[0] is field 3 (state)


def _pid_namespace() -> int:
    try:
        link = os.readlink("/proc/self/ns/pid")
    except OSError:
        return 0
    match = re.search(r"\[(\d+)\]", link)
    return int(match.group(1)) if match else 0


def owner_tag() -> str:
    """``<pid>-<start ticks>-<pid namespace>`` of this process."""
    pid = os.getpid()
    try:
        ticks = _start_ticks(pid) or 0
    except OSError:
        ticks = 0
    return f"{pid}-{ticks}-{_pid_namespace()}"


def owner_is_dead(name: str) -> bool:
    """Whether the directory called ``name`` belongs to a process that no longer exists.

    False whenever that cannot be known for sure (another naming scheme, another PID namespace,
    an unreadable ``/proc``)."""
    match = _NAME.match(name)
    if match is None:
        return False
    pid, ticks, namespace = (int(group) for group in match.groups())
    if ticks == 0 or namespace == 0 or namespace != _pid_namespace():
        return False
    try:
        current = _start_ticks(pid)
    except (OSError, ValueError, IndexError):
        return False
    return current is None or current != ticks  # gone, or the pid now names another process


# --------------------------------------------------------------------------- create / sweep
_OWNER: list[str] = []  # the owner tag inherited from a long-lived ancestor (set_owner)


def set_owner() -> None:
    """Name the working directories this process and its forks create after *this* process (the
    warm worker): its short-lived forks (one per request) come and go, while the directories are
    its until it dies. Also counts as this process's sweep (done now)."""
    sweep_stale(once=True)
    _OWNER[:] = [owner_tag()]


def create() -> str:
    """A fresh 0700 directory owned by this process (the child hands it to its sandbox uid), named from
    the kernel's randomness at each call: ``tempfile``'s names come from a generator whose state every
    fork of the worker inherits, so a tool could read it and name the directories of the runs after
    its own."""
    if not _OWNER:
        sweep_stale(once=True)
    prefix = os.path.join(tempfile.gettempdir(), f"{PREFIX}{_OWNER[0] if _OWNER else owner_tag()}-")
    while True:
        path = prefix + secrets.token_hex(8)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        return path


def sweep_stale(directory: str | None = None, *, once: bool = False) -> list[str]:
    """Remove every working directory in ``directory`` (the temp dir) whose owner is dead.

    With ``once``, only the first call in a process does anything. Returns the paths removed."""
    pid = os.getpid()
    with _sweep_lock:
        if once and pid in _swept:
            return []
        _swept.add(pid)
    root = directory or tempfile.gettempdir()
    removed: list[str] = []
    try:
        names = [n for n in os.listdir(root) if n.startswith(PREFIX)]
    except OSError:
        return removed
    for name in names:
        if owner_is_dead(name) and remove(os.path.join(root, name)):
            removed.append(os.path.join(root, name))
    return removed


# --------------------------------------------------------------------------- remove
def _identity(fd: int) -> tuple[int, int]:
    info = os.fstat(fd)
    return info.st_dev, info.st_ino


def _open_dir(parent_fd: int, name: str) -> int | None:
    """Open directory ``name`` under ``parent_fd`` without following a link, making it usable
    (u+rwx) for its owner; None when it is gone or is not a directory."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except PermissionError:
        if not _O_PATH:
            return None
        # mode 000 (or 100...): reach the inode itself, without following, and give its owner rwx
        try:
            handle = os.open(name, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                             dir_fd=parent_fd)
        except OSError:
            return None
        try:
            os.chmod(f"/proc/self/fd/{handle}", 0o700)
        except OSError:
            return None
        finally:
            os.close(handle)
        try:
            fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
        except OSError:
            return None
    except OSError:  # ENOENT, ENOTDIR, ELOOP (a symlink): not a directory to descend into
        return None
    try:
        mode = os.fstat(fd).st_mode
        if mode & 0o700 != 0o700:
            os.fchmod(fd, stat.S_IMODE(mode) | 0o700)
    except OSError:
        pass
    return fd


def _clear_files(fd: int) -> list[str]:
    """Unlink every non-directory entry of ``fd``; return the names of its subdirectories."""
    subdirs: list[str] = []
    try:
        with os.scandir(fd) as entries:
            listing = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError:
        return subdirs
    for name, is_dir in listing:
        if is_dir:
            subdirs.append(name)
            continue
        try:
            os.unlink(name, dir_fd=fd)
        except IsADirectoryError:
            subdirs.append(name)
        except OSError:
            pass
    return subdirs


def _remove_tree(parent_fd: int, name: str) -> None:
    """Remove directory ``name`` under ``parent_fd`` and everything in it (iteratively)."""
    fd = _open_dir(parent_fd, name)
    if fd is None:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=parent_fd)  # a file or a link where a directory was
        return
    top = os.dup(parent_fd)
    idents = [_identity(top), _identity(fd)]  # the path of directories from the top down
    os.close(top)
    names = [name]                              # names[i]: name of level i+1 inside level i
    pending = [_clear_files(fd)]                 # subdirectories still to remove, per level
    current = fd
    try:
        while names:
            if pending[-1]:
                child = pending[-1].pop()
                child_fd = _open_dir(current, child)
                if child_fd is None:
                    with contextlib.suppress(OSError):
                        os.unlink(child, dir_fd=current)
                    continue
                os.close(current)
                current = child_fd
                names.append(child)
                idents.append(_identity(current))
                pending.append(_clear_files(current))
                continue
            # this level is empty: climb back and remove it
            up = os.open("..", _DIR_FLAGS, dir_fd=current)
            if _identity(up) != idents[-2]:
                os.close(up)
                raise OSError(errno.EXDEV, "a directory was moved during removal")
            os.close(current)
            current = up
            done = names.pop()
            idents.pop()
            pending.pop()
            if not names:
                break
            try:
                os.rmdir(done, dir_fd=current)
            except OSError as exc:
                if exc.errno in (errno.ENOTEMPTY, errno.EEXIST):
                    pending[-1].append(done)  # something new appeared: the next pass takes it
                    raise
    finally:
        os.close(current)
    os.rmdir(name, dir_fd=parent_fd)


def remove(path: str) -> bool:
    """Delete the directory ``path`` and whatever the tool left in it; True when it is gone.

    Never raises (a failure is written to stderr); never follows a symbolic link."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    problem: BaseException | None = None
    for _ in range(_PASSES):
        try:
            parent_fd = os.open(parent or "/", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            problem = exc
            break
        try:
            _remove_tree(parent_fd, name)
        except FileNotFoundError:
            return True
        except OSError as exc:
            problem = exc
            if exc.errno == errno.EXDEV:
                break
        else:
            return True
        finally:
            os.close(parent_fd)
    if not os.path.lexists(path):
        return True
    sys.stderr.write(f"finevo sandbox: could not remove {path}: {problem}\n")
    return False
