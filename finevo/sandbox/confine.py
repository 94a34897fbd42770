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
import socket
import stat
import struct
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

from finevo.sandbox import landlock, seccomp

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

CLONE_NEWUSER = 0x10000000
CLONE_NEWNET = 0x40000000
PR_SET_PDEATHSIG = 1
PR_GET_DUMPABLE = 3
PR_SET_DUMPABLE = 4
PR_SET_KEEPCAPS = 8
PR_SET_NO_NEW_PRIVS = 38
PR_CAPBSET_DROP = 24
PR_SET_SECUREBITS = 28
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4
#: SECBIT_NOROOT, SECBIT_NO_SETUID_FIXUP, SECBIT_KEEP_CAPS_LOCKED, SECBIT_NO_CAP_AMBIENT_RAISE and
#: their locks: uid 0 grants nothing on execve, and no capability can come back.
SECUREBITS_LOCKED_NOROOT = 0x1 | 0x2 | 0x4 | 0x8 | 0x20 | 0x40 | 0x80
#: The same without SECBIT_NO_SETUID_FIXUP: the uid change itself then clears every capability.
SECUREBITS_LOCKED_UID_CHANGE = 0x1 | 0x2 | 0x20 | 0x40 | 0x80
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
    caps_dropped: bool = False
    no_new_privs: bool = False
    non_dumpable: bool = False
    landlock: JSONObject = field(default_factory=dict)
    seccomp: JSONObject = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def record(self) -> JSONObject:
        """The fields the child reports to the supervisor in its "started" record."""
        return {"netns": self.netns, "uid": self.uid, "caps_dropped": self.caps_dropped,
                "no_new_privs": self.no_new_privs, "non_dumpable": self.non_dumpable,
                "landlock": self.landlock, "seccomp": self.seccomp, "notes": self.notes}


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


CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x8, 0x4000, 0x40000
#: Size of the private tmpfs on /tmp (every working directory of one warm worker lives there)
#: and on /dev/shm (no tool can write there: Landlock; the mount only hides the host's).
PRIVATE_TMP_MB = 512
PRIVATE_SHM_MB = 8


def _map_own_ids() -> bool:
    """In a fresh user namespace: map this process's uid and gid to themselves (nothing else), so
    files it creates keep its real ids; setgroups is denied, as an unprivileged map requires."""
    uid, gid = os.geteuid(), os.getegid()
    was_dumpable = dumpable()
    # A non-dumpable process's /proc/self files belong to root: the maps could not be written.
    # The worker has no child yet and holds no secret (its environment is the BLAS variables).
    _prctl(PR_SET_DUMPABLE, 1)
    try:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            with open(f"/proc/self/{name}", "w", encoding="ascii") as handle:
                handle.write(text)
    except OSError:
        return False
    finally:
        if was_dumpable == 0:
            _prctl(PR_SET_DUMPABLE, 0)
    return True


def _hides(mount_point: str, paths: list[str]) -> bool:
    """Whether a mount on ``mount_point`` would hide any of ``paths`` (resolved)."""
    prefix = mount_point.rstrip("/") + "/"
    return any(os.path.realpath(p) == mount_point or os.path.realpath(p).startswith(prefix) for p in paths)


def unshare_namespaces(keep_visible: list[str] | None = None) -> dict[str, bool]:
    """Move this process (the warm worker, before it forks any child) into new network, mount and
    IPC namespaces where the kernel allows it -- as root, or through a new user namespace -- and
    mount private, size-limited tmpfs instances on /tmp and /dev/shm in the new mount namespace.

    What it buys: the working directories of every run live in a bounded tmpfs that vanishes with
    the worker (nothing left on the host's /tmp if it is killed), the host's /tmp, /dev/shm,
    System V IPC objects and network are out of view. Refused (e.g. under Docker's default
    seccomp profile): falls back to what can be had; Landlock and seccomp do not depend on it.
    No tmpfs is mounted where it would hide one of ``keep_visible`` (the read roots and the
    snapshot: a checkout or a virtual environment under /tmp must stay importable).
    """
    got = {"netns": False, "mountns": False, "ipcns": False, "private_tmp": False, "userns": False}
    libc = _libc()
    if libc is None or not hasattr(libc, "unshare"):
        return got
    wanted = CLONE_NEWNET | CLONE_NEWNS | CLONE_NEWIPC
    if libc.unshare(wanted) == 0:
        pass
    elif os.geteuid() != 0 and libc.unshare(CLONE_NEWUSER | wanted) == 0:
        got["userns"] = True
        if not _map_own_ids():
            return dict(got, netns=True)  # unmapped: files on a new tmpfs could not be created
    else:
        got["netns"] = unshare_network()
        return got
    got.update(netns=True, mountns=True, ipcns=True)
    mount = libc.mount
    mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    if mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        return got
    flags = MS_NOSUID | MS_NODEV
    needed = list(keep_visible or [])
    if _hides("/tmp", needed) or _hides("/dev/shm", needed):
        return got  # the interpreter, the packages or the snapshot live there: keep the host's
    ok_tmp = mount(b"tmpfs", b"/tmp", b"tmpfs", flags, f"size={PRIVATE_TMP_MB}m,mode=1777".encode()) == 0
    ok_shm = mount(b"tmpfs", b"/dev/shm", b"tmpfs", flags | MS_NOEXEC,
                   f"size={PRIVATE_SHM_MB}m,mode=1777".encode()) == 0
    got["private_tmp"] = ok_tmp and ok_shm
    return got


#: Entries a per-run working directory may hold (a flood of empty files costs inodes, not bytes).
QUOTA_INODES = 20000
MNT_DETACH = 2


def mount_quota(workdir: str, disk_mb: int) -> bool:
    """Mount a tmpfs of ``disk_mb`` MB and :data:`QUOTA_INODES` inodes on ``workdir``: the kernel
    then enforces the run's byte and inode quota (ENOSPC), whatever paths the tool builds. Only
    in a mount namespace of the worker's own (else the mount would land in the host's); False
    when it cannot be had (no privilege: the supervisor's walk stays the quota)."""
    libc = _libc()
    if libc is None:
        return False
    mount = libc.mount
    mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
    options = f"size={max(1, int(disk_mb))}m,nr_inodes={QUOTA_INODES},mode=0700".encode()
    return int(mount(b"tmpfs", os.fsencode(workdir), b"tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options)) == 0


def unmount_quota(workdir: str) -> None:
    """Detach the run's tmpfs (if any): its content goes with it, however much the tool left."""
    libc = _libc()
    if libc is not None and is_mount_point(workdir):
        libc.umount2(os.fsencode(workdir), ctypes.c_int(MNT_DETACH))


def is_mount_point(path: str) -> bool:
    try:
        return os.stat(path).st_dev != os.stat(os.path.dirname(path.rstrip("/")) or "/").st_dev
    except OSError:
        return False


def _prctl(option: int, arg: int) -> bool:
    libc = _libc()
    if libc is None:
        return False
    return int(libc.prctl(option, ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0),
                          ctypes.c_ulong(0))) == 0


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


_LAST_CAP: list[int] = []


def last_capability() -> int:
    """The kernel's highest capability number (read once per process: the warm worker reads it
    before it forks); 63 when it cannot be read -- numbers past the kernel's last capability fail
    harmlessly (EINVAL) when dropped."""
    if not _LAST_CAP:
        try:
            with open("/proc/sys/kernel/cap_last_cap", encoding="ascii") as handle:
                _LAST_CAP.append(min(max(int(handle.read().strip()), 0), 63))
        except (OSError, ValueError):
            _LAST_CAP.append(63)
    return _LAST_CAP[0]


def drop_all_capabilities() -> bool:
    """Leave this process with no capability at all, for good: lock the securebits so that uid 0
    means nothing (no capabilities regained by root on execve or kept across a uid change), empty
    the bounding set, then clear the effective, permitted and inheritable sets. True when the
    three sets are empty afterwards."""
    libc = _libc()
    if libc is None:
        return False
    _prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_NOROOT)
    for cap in range(last_capability() + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    if libc.capset(ctypes.byref(header), ctypes.byref(data)) != 0:
        return False
    return capabilities_empty()


def capabilities_empty() -> bool:
    """Whether this process's effective, permitted and inheritable sets are all empty."""
    try:
        with open("/proc/self/status", encoding="ascii") as handle:
            values = {line.split(":")[0]: int(line.split()[1], 16) for line in handle
                      if line.startswith(("CapEff:", "CapPrm:", "CapInh:", "CapAmb:"))}
    except (OSError, ValueError, IndexError):
        return False
    return len(values) == 4 and not any(values.values())


def sandbox_uid_for(pid: int) -> int:
    return UID_BASE + pid % UID_SPAN


def drop_privileges(uid: int, *, workdir: str, keep_dac_read: bool, report: Confinement,
                    landlock_ok: bool = False) -> None:
    """Root only: leave the child no capability, and a uid of its own where that is safe.

    * Normally: setgroups/setgid/setuid to ``uid`` (``nobody`` where ``uid`` is not mapped in a
      user namespace), handing it ``workdir``; the uid change clears every capability.
    * ``keep_dac_read`` (the interpreter is not readable by other users, e.g. under a 0700 home)
      and Landlock available: the child stays uid 0 so it can still read the interpreter, but
      with every capability dropped and the securebits locked -- uid 0 then only means "owner" of
      root's files, and Landlock (applied next) is what limits reads to the allowlist and writes
      to the working directory. CAP_DAC_READ_SEARCH is never kept.
    * ``keep_dac_read`` without Landlock: the uid is dropped anyway (a lazy import outside the
      preloaded set may then fail; a note says so).
    """
    if os.geteuid() != 0:
        report.notes.append("not root: uid unchanged")
        # In a user namespace of its own (the unprivileged route to a network namespace) the
        # worker holds every capability *inside* that namespace: its children drop them.
        report.caps_dropped = capabilities_empty() or drop_all_capabilities()
        return
    if keep_dac_read and landlock_ok:
        os.chown(workdir, 0, 0)
        report.uid = 0
        report.caps_dropped = drop_all_capabilities()
        if not report.caps_dropped:
            raise OSError("cannot drop the capabilities of the sandbox child")
        report.notes.append("interpreter not readable by other users: uid 0 without capabilities, "
                            "reads limited by Landlock")
        return
    if keep_dac_read:
        report.notes.append("interpreter not readable by other users and no Landlock: lazy imports may fail")
    _prctl(PR_SET_SECUREBITS, SECUREBITS_LOCKED_UID_CHANGE)
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
    report.caps_dropped = capabilities_empty()


#: Signals the child may have queued (``RLIMIT_SIGPENDING``). The kernel counts queued signals per
#: *user*, against the limit of the process they are queued to: a child that queues real-time signals
#: to itself (the only process the filter lets it signal) under the host's default limit would hold
#: every slot its user has, and another process of that user (root, the gate) would get ``EAGAIN``
#: from ``sigqueue``. With this limit a child queues nothing once its user has this many pending.
SIGPENDING = 16


def set_limits(*, cpu_s: int, memory_mb: int, fsize_mb: int, nproc: int | None) -> None:
    """Resource limits; CPU counts from what this process has already used. ``RLIMIT_NOFILE`` is
    set apart, after the listener's hand-over (:func:`limit_files`): until then the soft limit is
    raised to the hard one, the hand-over's budget (see :func:`kernel_layers`). Queued signals
    (:data:`SIGPENDING`) are bounded too."""
    used = resource.getrusage(resource.RUSAGE_SELF)
    cpu_used = int(used.ru_utime + used.ru_stime)
    cpu = cpu_used + max(1, int(cpu_s))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    memory = int(memory_mb) * MB
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    fsize = int(fsize_mb) * MB
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_SIGPENDING, (SIGPENDING, SIGPENDING))
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if nproc is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def limit_files(nofile: int) -> int:
    """Set ``RLIMIT_NOFILE`` (soft and hard) to ``nofile``, capped at
    :data:`~finevo.sandbox.seccomp.HANDOVER_FD` so no descriptor the tool makes can take that
    number; returns the limit set. Through ``prlimit`` on itself, which the filter allows."""
    applied = max(0, min(int(nofile), seccomp.HANDOVER_FD))
    resource.prlimit(0, resource.RLIMIT_NOFILE, (applied, applied))
    return applied


def finish(report: Confinement, *, parent_pid: int | None) -> None:
    """After the uid change: no new privileges, non-dumpable, die with the parent."""
    report.no_new_privs = _prctl(PR_SET_NO_NEW_PRIVS, 1)
    report.non_dumpable = _prctl(PR_SET_DUMPABLE, 0)
    if parent_pid is not None:
        _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent_pid:  # the parent died before the signal was armed
            os._exit(70)
    os.environ.clear()


class HandoverFailed(OSError):
    """The seccomp listener could not be handed to the supervisor: the sandbox's failure, raised
    before any tool code (the supervisor reports it as such, never as the tool's)."""


def kernel_layers(report: Confinement, *, workdir: str, read_roots: list[str], nofile: int,
                  allow_processes: bool = False, control_fd: int | None = None) -> None:
    """Landlock, then seccomp (the last step before tool code: after it this process can no longer
    change its own confinement), then ``RLIMIT_NOFILE`` (``nofile``). Needs ``no_new_privs``
    (:func:`finish`). Each records what it enforced; a filter the kernel refuses is recorded, not
    raised, but a listener that cannot be handed over raises :class:`HandoverFailed`.

    With ``control_fd`` a socket (the supervisor's control channel), denied calls become user
    notifications: the filter's listener is sent to the supervisor over a copy of that socket at
    :data:`~finevo.sandbox.seccomp.HANDOVER_FD`, the only descriptor the filter lets ``sendmsg``
    use, and this process keeps neither. The kernel refuses to send a descriptor (``ETOOMANYREFS``)
    while the sender's user has more descriptors in flight than the sender's soft
    ``RLIMIT_NOFILE``; children that share a user with the worker (a non-root run, uid 0 without
    capabilities) share that count with everything else the user sends. So the hand-over is made
    with the soft limit at the hard one (:func:`set_limits`; thousands where the gate runs, against
    a few descriptors the worker has in flight at a time and none a tool can send), and the tool's
    own limit (64) is set only after it."""
    report.landlock = asdict(landlock.restrict(workdir=workdir, read_roots=read_roots,
                                               report=landlock.LandlockReport()))
    # made before the filter: wrapping a descriptor queries it (getsockopt), which the filter denies
    channel = _handover_channel(control_fd)
    filt = seccomp.SeccompReport()
    try:
        listener = seccomp.install(filt, allow_processes=allow_processes, notify=channel is not None)
        if listener is not None:
            assert channel is not None
            try:
                channel.sendmsg([b"\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", listener))])
            except OSError as exc:
                raise HandoverFailed(exc.errno, "the seccomp listener could not be handed to the supervisor: "
                                                f"{exc.strerror or exc}") from None
            finally:
                os.close(listener)
    finally:
        if channel is not None:
            channel.close()  # HANDOVER_FD: after this no descriptor of the child can send one
    report.seccomp = asdict(filt)
    limit_files(nofile)


def _handover_channel(fd: int | None) -> socket.socket | None:
    """A copy of the control socket ``fd`` at :data:`~finevo.sandbox.seccomp.HANDOVER_FD`, or None
    when ``fd`` is not a socket (then denied calls kill the child instead of notifying)."""
    if fd is None:
        return None
    try:
        if not stat.S_ISSOCK(os.fstat(fd).st_mode):
            return None
    except OSError:
        return None
    try:
        copy = os.dup2(fd, seccomp.HANDOVER_FD, inheritable=False)
    except OSError as exc:  # e.g. a hard RLIMIT_NOFILE at or below HANDOVER_FD
        raise HandoverFailed(exc.errno, f"no descriptor {seccomp.HANDOVER_FD} for the seccomp listener's "
                                        f"hand-over: {exc.strerror or exc}") from None
    return socket.socket(fileno=copy)


def kernel_support() -> JSONObject:
    """What this host's kernel offers the sandbox, probed without changing anything."""
    return {"landlock_abi": landlock.abi_version(), "seccomp": seccomp.available()}
