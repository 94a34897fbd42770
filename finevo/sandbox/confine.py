"""Operating-system confinement of one sandbox child (run in the child, before tool code).

Order matters: new network namespace (needs privilege), resource limits, then -- when running as
root -- drop to a dedicated unprivileged uid/gid (so file permissions apply, ``RLIMIT_NPROC``
counts only this child, and other processes' ``/proc/<pid>/environ`` are out of reach), then
``no_new_privs``, non-dumpable and parent-death signal, and finally an empty environment.

The host side (the process that creates a sandbox, and the warm worker) makes itself
non-dumpable with :func:`make_non_dumpable`: when the gate runs without root, its sandbox children
share its uid, and a dumpable process's ``/proc/<pid>/environ`` (the LLM API key) and memory are
readable by any process of the same uid. A non-dumpable process's ``/proc/<pid>`` files belong to
root and pass only the ptrace access check, which a same-uid process without ``CAP_SYS_PTRACE``
fails.

Linux-only pieces go through ``libc`` with ctypes; each reports whether it took effect so the
sandbox can say which layers are active on this platform instead of failing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
import signal
import stat
from dataclasses import dataclass, field

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_KEEPCAPS = 8
PR_SET_NO_NEW_PRIVS = 38
CAP_DAC_READ_SEARCH = 2
_LINUX_CAPABILITY_VERSION_3 = 0x20080522

#: Dedicated uids for sandbox children: one per child (base + pid % span), so RLIMIT_NPROC
#: counts exactly that child's processes. Kept below 65536 to fit common user-namespace maps.
UID_BASE = 40000
UID_SPAN = 20000
NOBODY = 65534
MB = 1024 * 1024


@dataclass
class Confinement:
    """What actually took effect in this child (reported back as ``details['layers']``)."""

    netns: bool = False
    uid: int | None = None
    dac_read_kept: bool = False
    no_new_privs: bool = False
    non_dumpable: bool = False
    notes: list[str] = field(default_factory=list)


_LIBC: list[ctypes.CDLL | None] = []


def _libc() -> ctypes.CDLL | None:
    """libc, loaded once per process (the warm worker loads it before forking children)."""
    if not _LIBC:
        handle = None
        for name in ("libc.so.6", ctypes.util.find_library("c")):
            if not name:
                continue
            try:
                handle = ctypes.CDLL(name, use_errno=True)
                break
            except OSError:
                continue
        _LIBC.append(handle)
    return _LIBC[0]


def unshare_network() -> bool:
    """Move this process into a fresh, empty network namespace (loopback down, no routes)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "unshare"):
        return False
    if libc.unshare(CLONE_NEWNET) == 0:
        return True
    # unprivileged: a user namespace makes the network namespace possible
    return os.geteuid() != 0 and libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0


def _prctl(option: int, arg: int) -> bool:
    libc = _libc()
    if libc is None:
        return False
    return bool(libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                           ctypes.c_ulong(0)) == 0)


def make_non_dumpable() -> bool:
    """Make *this* process non-dumpable (its environment and memory out of reach of same-uid
    processes); True when it took effect. Inherited across fork, reset by execve."""
    return _prctl(PR_SET_DUMPABLE, 0) and dumpable() == 0


def dumpable() -> int | None:
    """This process's dumpable flag (0 = not dumpable), or None where it cannot be read."""
    libc = _libc()
    if libc is None:
        return None
    value = libc.prctl(PR_GET_DUMPABLE, ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0),
                       ctypes.c_ulong(0))
    return None if value < 0 else int(value)


def _world_readable_chain(path: str) -> bool:
    """True when an unprivileged user can traverse to ``path`` and read it."""
    path = os.path.realpath(path)
    current = "/"
    for part in [p for p in path.split("/") if p]:
        try:
            mode = os.stat(current).st_mode
        except OSError:
            return False
        if not mode & stat.S_IXOTH:
            return False
        current = os.path.join(current, part)
    try:
        mode = os.stat(current).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_IROTH)


def needs_dac_read(paths: list[str]) -> bool:
    """Whether an unprivileged child could not read the interpreter / libraries it needs."""
    return not all(_world_readable_chain(p) for p in paths)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _keep_only_dac_read() -> bool:
    libc = _libc()
    if libc is None:
        return False
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    bit = 1 << CAP_DAC_READ_SEARCH
    data[0].effective = bit
    data[0].permitted = bit
    data[0].inheritable = 0
    return bool(libc.capset(ctypes.byref(header), ctypes.byref(data)) == 0)


def sandbox_uid_for(pid: int) -> int:
    return UID_BASE + pid % UID_SPAN


def drop_privileges(uid: int, *, workdir: str, keep_dac_read: bool, report: Confinement) -> None:
    """setgroups/setgid/setuid to ``uid`` (root only), handing it ``workdir``; optionally keep
    CAP_DAC_READ_SEARCH. Falls back to ``nobody`` where ``uid`` is not mapped (user namespaces).

    CAP_DAC_READ_SEARCH is kept only when the interpreter itself is not readable by others
    (e.g. installed under a 0700 home directory); the audit hook's read allowlist then is the
    read boundary, while writes stay under file permissions.
    """
    if os.geteuid() != 0:
        report.notes.append("not root: uid unchanged")
        return
    if keep_dac_read:
        _prctl(PR_SET_KEEPCAPS, 1)
    for candidate in (uid, NOBODY):
        try:
            os.setgroups([])
            os.setgid(candidate)
            os.chown(workdir, candidate, candidate)
            os.setuid(candidate)
        except OSError as exc:
            report.notes.append(f"setuid({candidate}) failed: {exc.strerror}")
            continue
        report.uid = candidate
        break
    if report.uid is None:
        raise OSError("cannot drop root privileges for the sandbox child")
    if keep_dac_read:
        report.dac_read_kept = _keep_only_dac_read()
        if not report.dac_read_kept:
            report.notes.append("capset failed: libraries outside world-readable paths may not load")
        _prctl(PR_SET_KEEPCAPS, 0)


def set_limits(*, cpu_s: int, memory_mb: int, fsize_mb: int, nofile: int,
               nproc: int | None) -> None:
    """Resource limits; CPU counts from what this process has already used."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu_used = int(used.ru_utime + used.ru_stime)
    cpu = cpu_used + max(1, int(cpu_s))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(memory_mb) * MB
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    fsize = int(fsize_mb) * MB
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def finish(report: Confinement, *, parent_pid: int | None) -> None:
    """After the uid change: no new privileges, non-dumpable, die with the parent."""
    report.no_new_privs = _prctl(PR_SET_NO_NEW_PRIVS, 1)
    report.non_dumpable = _prctl(PR_SET_DUMPABLE, 0)
    if parent_pid is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent_pid:  # the parent died before the signal was armed
            os._exit(70)
    os.environ.clear()
