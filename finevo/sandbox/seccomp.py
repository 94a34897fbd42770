"""seccomp-bpf for one sandbox child: a small hand-assembled classic-BPF filter installed with
``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)`` through ctypes.

Why hand-assembled: the filter is a deny-list of ~70 system calls plus four argument checks; the
program is ~110 instructions built with :mod:`struct` in well under a millisecond. libseccomp's
Python binding is not on PyPI (it ships with the C library's distribution packages, and a
mismatch between the two breaks import), and an extra import in the child would cost more than
the assembly.

What the filter does (``SECCOMP_RET_KILL_PROCESS`` unless said otherwise):

* any architecture but the one this interpreter runs on, and on x86-64 the x32 ABI (bit 30 set);
* socket creation of every family (``socket``, ``socketpair``); ``execve`` / ``execveat``;
  ``ptrace``, ``process_vm_readv`` / ``writev``, ``kcmp``, ``move_pages`` / ``migrate_pages``,
  ``process_madvise`` / ``process_mrelease``; ``pidfd_open`` / ``pidfd_send_signal`` / ``pidfd_getfd``;
* ``setpgid`` / ``setsid`` (leaving the process group the supervisor kills), ``setpriority`` /
  ``ioprio_set`` (on other processes), ``unshare`` / ``setns`` / ``mount`` and every mount-API call,
  ``pivot_root`` / ``chroot``; ``clone`` with a namespace flag or ``CLONE_PARENT`` (a sibling
  outside the supervised tree); ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*``,
  ``keyctl`` / ``add_key`` / ``request_key``, ``open_by_handle_at`` / ``name_to_handle_at``, module
  and kexec calls; System V IPC and POSIX message queues (state that would outlive the run);
* ``prctl(PR_SET_PDEATHSIG)`` and ``prctl(PR_SET_DUMPABLE)``;
* ``kill`` / ``tkill`` / ``tgkill`` / ``rt_sigqueueinfo`` / ``rt_tgsigqueueinfo`` to any process
  but the child itself; to itself they are allowed, except ``SIGSYS`` (``EPERM``), so a tool
  cannot fake the seccomp kill the supervisor reports;
* ``clone`` / ``fork`` / ``vfork`` of a new process when the tool may create none (the default
  limit); a new thread then fails with ``EAGAIN``, as the process limit would answer it;
* ``clone3`` answers ``ENOSYS`` (its flags sit in memory a filter cannot read; the C library falls
  back to ``clone``, whose flags are checked).

Observability: ``SECCOMP_RET_KILL_PROCESS`` ends the whole process with ``SIGSYS``; the supervisor
reads that from the kernel's wait status -- a channel the tool cannot write -- and reports
"blocked" with layer ``seccomp``. A refusal therefore cannot be swallowed or hidden by the tool.
"""

from __future__ import annotations

import ctypes
import os
import platform
import signal
import struct
from dataclasses import dataclass

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SYS_SECCOMP = {"x86_64": 317, "aarch64": 277}
SECCOMP_GET_ACTION_AVAIL = 2
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
_EPERM, _EAGAIN, _ENOSYS = 1, 11, 38

_LD_W_ABS = 0x20
_JEQ = 0x15
_JSET = 0x45
_JGE = 0x35
_RET = 0x06
_JA = 0x05
_OFF_NR, _OFF_ARCH = 0, 4


def _arg_lo(i: int) -> int:
    return 16 + 8 * i  # low 32 bits of args[i] (little-endian); int arguments live there


CLONE_PARENT = 0x00008000
CLONE_THREAD = 0x00010000
CLONE_NS_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
                  | 0x40000000)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4

#: Per architecture: the audit arch value and the numbers of every call named above.
_ARCH: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (0xC000003E, {
        "socket": 41, "socketpair": 53, "execve": 59, "execveat": 322, "ptrace": 101,
        "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "move_pages": 279,
        "migrate_pages": 256, "process_madvise": 440, "process_mrelease": 448, "pidfd_open": 434,
        "pidfd_send_signal": 424, "pidfd_getfd": 438, "setpgid": 109, "setsid": 112,
        "setpriority": 141, "ioprio_set": 251, "unshare": 272, "setns": 308, "mount": 165,
        "umount2": 166, "pivot_root": 155, "chroot": 161, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 250, "add_key": 248,
        "request_key": 249, "open_by_handle_at": 304, "name_to_handle_at": 303,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "kexec_load": 246,
        "kexec_file_load": 320, "shmget": 29, "shmat": 30, "shmctl": 31, "semget": 64,
        "semop": 65, "semctl": 66, "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70,
        "msgctl": 71, "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242,
        "mq_timedreceive": 243, "mq_notify": 244, "mq_getsetattr": 245,
        # argument-checked
        "clone": 56, "clone3": 435, "fork": 57, "vfork": 58, "prctl": 157, "kill": 62, "tkill": 200, "tgkill": 234,
        "rt_sigqueueinfo": 129, "rt_tgsigqueueinfo": 297,
        # file metadata: a child that keeps uid 0 (or the gate's uid) owns the host's files, and
        # Landlock does not govern modes, owners, extended attributes or times
        "chmod": 90, "fchmod": 91, "fchmodat": 268, "fchmodat2": 452, "chown": 92, "fchown": 93,
        "lchown": 94, "fchownat": 260, "setxattr": 188, "lsetxattr": 189, "fsetxattr": 190,
        "removexattr": 197, "lremovexattr": 198, "fremovexattr": 199, "setxattrat": 463,
        "removexattrat": 466, "utime": 132, "utimes": 235, "utimensat": 280, "futimesat": 261,
        "mknod": 133, "mknodat": 259,
        # answered EPERM: reading extended attributes or watching files outside the workspace
        "getxattr": 191, "lgetxattr": 192, "fgetxattr": 193, "listxattr": 194, "llistxattr": 195,
        "flistxattr": 196, "getxattrat": 464, "listxattrat": 465, "inotify_init": 253,
        "inotify_init1": 294, "inotify_add_watch": 254, "fanotify_init": 300, "fanotify_mark": 301,
        # pid-checked: only the child itself (0 or its own pid)
        "prlimit64": 302, "sched_setparam": 142, "sched_setscheduler": 144, "sched_setaffinity": 203,
        "sched_setattr": 314, "get_robust_list": 274,
    }),
    "aarch64": (0xC00000B7, {
        "socket": 198, "socketpair": 199, "execve": 221, "execveat": 281, "ptrace": 117,
        "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272, "move_pages": 239,
        "migrate_pages": 238, "process_madvise": 440, "process_mrelease": 448, "pidfd_open": 434,
        "pidfd_send_signal": 424, "pidfd_getfd": 438, "setpgid": 154, "setsid": 157,
        "setpriority": 140, "ioprio_set": 30, "unshare": 97, "setns": 268, "mount": 40,
        "umount2": 39, "pivot_root": 41, "chroot": 51, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
        "io_uring_enter": 426, "io_uring_register": 427, "keyctl": 219, "add_key": 217,
        "request_key": 218, "open_by_handle_at": 265, "name_to_handle_at": 264,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "kexec_load": 104,
        "kexec_file_load": 294, "shmget": 194, "shmat": 196, "shmctl": 195, "semget": 190,
        "semop": 193, "semctl": 191, "semtimedop": 192, "msgget": 186, "msgsnd": 189,
        "msgrcv": 188, "msgctl": 187, "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182,
        "mq_timedreceive": 183, "mq_notify": 184, "mq_getsetattr": 185,
        "clone": 220, "clone3": 435, "prctl": 167, "kill": 129, "tkill": 130, "tgkill": 131,
        "rt_sigqueueinfo": 138, "rt_tgsigqueueinfo": 240,
        "fchmod": 52, "fchmodat": 53, "fchmodat2": 452, "fchownat": 54, "fchown": 55, "setxattr": 5,
        "lsetxattr": 6, "fsetxattr": 7, "removexattr": 14, "lremovexattr": 15, "fremovexattr": 16,
        "setxattrat": 463, "removexattrat": 466, "utimensat": 88, "mknodat": 33,
        "getxattr": 8, "lgetxattr": 9, "fgetxattr": 10, "listxattr": 11, "llistxattr": 12,
        "flistxattr": 13, "getxattrat": 464, "listxattrat": 465, "inotify_init1": 26,
        "inotify_add_watch": 27, "fanotify_init": 262, "fanotify_mark": 263,
        "prlimit64": 261, "sched_setparam": 118, "sched_setscheduler": 119, "sched_setaffinity": 122,
        "sched_setattr": 274, "get_robust_list": 100,
    }),
}
#: Calls that take another process's pid as their first argument: allowed on the child itself
#: (0 or its own pid), a kill otherwise (``prlimit64`` on the gate would cap its limits, on any
#: other process kill it through RLIMIT_CPU; the scheduler calls would starve it).
_PID_FIRST = ("prlimit64", "sched_setparam", "sched_setscheduler", "sched_setaffinity", "sched_setattr",
              "get_robust_list")
#: Calls answered ``EPERM`` instead of a kill: reads that reveal what Landlock hides (extended
#: attributes of files outside the workspace) or watch it (inotify, fanotify), which a library
#: might probe harmlessly.
_ERRNO_CALLS = ("getxattr", "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr",
                "getxattrat", "listxattrat", "inotify_init", "inotify_init1", "inotify_add_watch",
                "fanotify_init", "fanotify_mark")
_CHECKED = ("clone", "clone3", "fork", "vfork", "prctl", "kill", "tkill", "tgkill", "rt_sigqueueinfo",
            "rt_tgsigqueueinfo", *_PID_FIRST, *_ERRNO_CALLS)
#: Signal-sending calls: (argument holding the target process, argument holding the signal).
_SIGNAL_ARGS = {"kill": (0, 1), "tkill": (0, 1), "tgkill": (0, 2), "rt_sigqueueinfo": (0, 1),
                "rt_tgsigqueueinfo": (0, 2)}


def denied_calls(machine: str | None = None) -> list[str]:
    """Names of the calls the filter kills outright (for docs and tests)."""
    _, table = _ARCH[machine or platform.machine()]
    return sorted(name for name in table if name not in _CHECKED)


class _Asm:
    """A tiny classic-BPF assembler with forward labels (jump offsets are 8-bit)."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def ld(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((op, jt, jf, k))

    def ret(self, value: int) -> None:
        self.code.append((_RET, 0, 0, value))

    def skip(self, count: int) -> None:
        """Unconditional forward jump over ``count`` instructions."""
        self.code.append((_JA, 0, 0, count))

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, jt, jf, k) in enumerate(self.code):
            offsets = []
            for target in (jt, jf):
                if isinstance(target, str):
                    delta = self.labels[target] - index - 1
                    if not 0 <= delta <= 255:
                        raise ValueError(f"BPF jump to {target} out of range ({delta})")
                    offsets.append(delta)
                else:
                    offsets.append(target)
            out += struct.pack("=HBBI", op, offsets[0], offsets[1], k & 0xFFFFFFFF)
        return bytes(out)


def build_filter(self_pid: int, machine: str | None = None, *, allow_processes: bool = False) -> bytes:
    """The filter program for a child whose pid (as it sees itself) is ``self_pid``.

    ``allow_processes=False`` (a tool with no process or thread allowance, the default limit) kills
    on every ``clone`` / ``fork`` / ``vfork``: ``RLIMIT_NPROC`` does not hold for a child that keeps
    uid 0 (the kernel exempts root's user from it even without capabilities), so the filter is
    what makes "no new process" hold in every setting."""
    machine = machine or platform.machine()
    if machine not in _ARCH:
        raise OSError(f"no seccomp filter for architecture {machine}")
    audit_arch, table = _ARCH[machine]
    a = _Asm()
    a.ld(_OFF_ARCH)
    a.jump(_JEQ, audit_arch, 0, "kill")
    a.ld(_OFF_NR)
    if machine == "x86_64":
        a.jump(_JGE, 0x40000000, "kill", 0)  # x32 system calls
    # The deny list in blocks, each followed by its own kill (jump offsets are 8-bit).
    denied = [nr for name, nr in table.items() if name not in _CHECKED]
    for block, start in enumerate(range(0, len(denied), 100)):
        for nr in denied[start:start + 100]:
            a.jump(_JEQ, nr, f"deny_{block}", 0)
        a.skip(1)
        a.label(f"deny_{block}")
        a.ret(RET_KILL_PROCESS)
    for name in _ERRNO_CALLS:
        if name in table:
            a.jump(_JEQ, table[name], "eperm", 0)
    for name in _PID_FIRST:
        a.jump(_JEQ, table[name], "pid_first", 0)
    if not allow_processes:
        for name in ("fork", "vfork"):
            if name in table:
                a.jump(_JEQ, table[name], "kill", 0)
    a.jump(_JEQ, table["clone"], "clone" if allow_processes else "clone_none", 0)
    a.jump(_JEQ, table["clone3"], "enosys", 0)
    a.jump(_JEQ, table["prctl"], "prctl", 0)
    for name in _SIGNAL_ARGS:
        a.jump(_JEQ, table[name], f"sig_{name}", 0)
    a.ret(RET_ALLOW)
    a.label("clone")
    a.ld(_arg_lo(0))
    a.jump(_JSET, CLONE_NS_FLAGS | CLONE_PARENT, "kill", 0)
    a.ret(RET_ALLOW)
    if not allow_processes:
        # a thread fails softly (EAGAIN: "can't start new thread", as RLIMIT_NPROC would answer),
        # a new process is a kill
        a.label("clone_none")
        a.ld(_arg_lo(0))
        a.jump(_JSET, CLONE_THREAD, "eagain", "kill")
    a.label("prctl")
    a.ld(_arg_lo(0))
    a.jump(_JEQ, PR_SET_PDEATHSIG, "kill", 0)
    a.jump(_JEQ, PR_SET_DUMPABLE, "kill", 0)
    a.ret(RET_ALLOW)
    for name, (target, sig) in _SIGNAL_ARGS.items():
        a.label(f"sig_{name}")
        a.ld(_arg_lo(target))
        a.jump(_JEQ, self_pid & 0xFFFFFFFF, 0, "kill")
        a.ld(_arg_lo(sig))
        a.jump(_JEQ, int(signal.SIGSYS), "eperm", 0)
        a.ret(RET_ALLOW)
    a.label("pid_first")
    a.ld(_arg_lo(0))
    a.jump(_JEQ, 0, "allow", 0)
    a.jump(_JEQ, self_pid & 0xFFFFFFFF, "allow", "kill")
    a.label("allow")
    a.ret(RET_ALLOW)
    a.label("eperm")
    a.ret(RET_ERRNO | _EPERM)
    a.label("eagain")
    a.ret(RET_ERRNO | _EAGAIN)
    a.label("enosys")
    a.ret(RET_ERRNO | _ENOSYS)
    a.label("kill")
    a.ret(RET_KILL_PROCESS)
    return a.assemble()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


@dataclass
class SeccompReport:
    enforced: bool = False
    arch: str = ""
    instructions: int = 0
    processes: bool = False  # whether fork/clone of new processes and threads stays allowed
    error: str | None = None


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def available() -> bool:
    """Whether this kernel can install a filter that kills the whole process (probe, no change)."""
    machine = platform.machine()
    if machine not in _ARCH:
        return False
    action = ctypes.c_uint32(RET_KILL_PROCESS)
    fn = _libc().syscall
    fn.restype = ctypes.c_long
    return int(fn(ctypes.c_long(SYS_SECCOMP[machine]), ctypes.c_uint(SECCOMP_GET_ACTION_AVAIL),
                  ctypes.c_uint(0), ctypes.byref(action))) == 0


def install(report: SeccompReport, *, self_pid: int | None = None,
            allow_processes: bool = False) -> SeccompReport:
    """Install the filter on this process (needs ``no_new_privs``); never raises."""
    report.arch = platform.machine()
    report.processes = allow_processes
    try:
        program = build_filter(os.getpid() if self_pid is None else self_pid, report.arch,
                               allow_processes=allow_processes)
    except (OSError, ValueError) as exc:
        report.error = str(exc)
        return report
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    prctl = _libc().prctl
    if prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog),
             ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        report.error = f"seccomp filter refused: {os.strerror(ctypes.get_errno())}"
        return report
    report.enforced = True
    report.instructions = len(program) // 8
    return report
