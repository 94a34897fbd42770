"""seccomp-bpf for one sandbox child: an allow-list filter, hand-assembled classic BPF, installed
with ``prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)`` through ctypes.

What is not named in :data:`RULES` is denied: a call added to the kernel after this table was
written, or an old interface nobody thought of, never reaches the kernel. The table is the one
place the policy lives -- every entry has an action and a reason -- and it was derived by tracing
what tools really call after the filter is installed (``scripts/trace_seccomp.py``: the benign
corpus, every reference tool's self-test, the payload corpus with the policy off), plus what the
interpreter needs on paths those runs did not take (threads, sleeping, writing in the working
directory, a MemoryError, a traceback).

Actions:

* ``allow`` -- the call is harmless for a tool whose files Landlock confines and whose resources
  rlimits cap;
* ``eperm`` -- refused with ``EPERM``: a library may probe it harmlessly (reading extended
  attributes, file watches), so it must fail softly;
* ``check`` -- allowed only with some arguments (``ioctl`` requests, ``fcntl`` commands, ``prctl``
  options, thread-only ``clone``, signals to the child itself, scheduling and limits of the child
  itself, ``sendmsg`` on the listener's hand-over descriptor only); other arguments are denied;
* everything else (and ``deny`` arguments): the deny action -- ``SECCOMP_RET_KILL_PROCESS``.

Architectures: any audit architecture but the interpreter's own (the i386 entry points on
x86-64) and, on x86-64, the x32 ABI (bit 30 of the number) are denied before the table is looked
at. ``clone3`` answers ``ENOSYS`` (its flags sit in memory a filter cannot read; the C library
falls back to ``clone``, whose flags are checked). Socket calls are denied for every family: no
tool needs one, and an ``AF_UNIX`` socket could reach the host's abstract sockets where no network
namespace exists. Pipes (``pipe``, ``pipe2``) are denied too: a tool has no process to talk to, and
every pipe takes the next number of an inode counter the whole host shares (pipefs), so one run
making pipes and another reading their numbers would be a channel from run to run, or beside it.

Why hand-assembled: libseccomp's Python binding is not on PyPI (it ships with the C library's
distribution packages, and a mismatch between the two breaks import), and assembling ~200
instructions with :mod:`struct` takes well under a millisecond.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import platform
import signal
import struct
from dataclasses import dataclass

from finevo.sandbox.syscalls import NUMBERS

PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2
SYS_SECCOMP = {"x86_64": NUMBERS["x86_64"]["seccomp"], "aarch64": NUMBERS["aarch64"]["seccomp"]}
SECCOMP_GET_ACTION_AVAIL = 2
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000
_EPERM, _EAGAIN, _ENOSYS = 1, 11, 38
AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}
X32_BIT = 0x40000000

_LD_W_ABS = 0x20
_JEQ = 0x15
_JSET = 0x45
_ALU_AND_K = 0x54
_JGE = 0x35
_RET = 0x06
_JA = 0x05
_OFF_NR, _OFF_ARCH = 0, 4


def _arg_lo(i: int) -> int:
    return 16 + 8 * i  # low 32 bits of args[i] (little-endian); every checked argument is a C int there


CLONE_PARENT = 0x00008000
CLONE_THREAD = 0x00010000
CLONE_NS_FLAGS = (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000
                  | 0x40000000)  # NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET
#: The bit of a futex operation that keeps it to the calling process's own address space.
FUTEX_PRIVATE_FLAG = 128
#: The bits of a futex operation that name the command (the private and clock flags masked off).
FUTEX_CMD_MASK = 0x7F
#: Futex commands let through (on private futexes): WAIT, WAKE, REQUEUE, CMP_REQUEUE, WAKE_OP,
#: WAIT_BITSET, WAKE_BITSET -- every lock of the interpreter, numpy and the C library. The
#: priority-inheritance commands (LOCK_PI, UNLOCK_PI, TRYLOCK_PI, the PI requeues, LOCK_PI2) answer
#: EPERM: they read the owner's thread id out of the lock word and answer ESRCH where no such thread
#: exists, which tells whether any process of the host holds an id; no Python lock uses them.
FUTEX_ALLOWED = (0, 1, 3, 4, 5, 9, 10)
#: madvise advice about the process's own memory only: NORMAL, WILLNEED, DONTNEED, FREE, DONTFORK,
#: DOFORK, MERGEABLE, UNMERGEABLE, HUGEPAGE, NOHUGEPAGE, DONTDUMP, DODUMP, WIPEONFORK, KEEPONFORK,
#: POPULATE_READ, POPULATE_WRITE, COLLAPSE. The rest answer EPERM (advice may fail; callers go on):
#: PAGEOUT and COLD evict a mapped file's pages from the host's page cache (a run writing zeros
#: there, another reading them back by its page faults), RANDOM and SEQUENTIAL switch the
#: readahead off that would blur which pages were cached, REMOVE punches holes, HWPOISON and
#: SOFT_OFFLINE are the administrator's.
MADVISE_ALLOWED = (0, 3, 4, 8, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 22, 23, 25)
PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4

ALLOW, EPERM, CHECK, ENOSYS = "allow", "eperm", "check", "enosys"


@dataclass(frozen=True)
class Rule:
    """One system call the filter names: what it does with it, and why."""

    name: str
    action: str  # ALLOW | EPERM | CHECK | ENOSYS
    reason: str


_FILES = "paths are Landlock's to confine; the call itself reaches no other process"
_MEM = "memory of the child itself; RLIMIT_AS caps it"
_SELF = "reads or changes only the calling process"

#: The table. Order matters only for speed: the hottest calls come first.
_RULES: tuple[Rule, ...] = (
    # -- I/O on descriptors the child holds (its pipes, files Landlock let it open)
    Rule("read", ALLOW, "reading its request, files and pipes it holds"),
    Rule("write", ALLOW, "stdout, stderr, the result record, files in the working directory"),
    Rule("sendmsg", CHECK, "handing the filter's listener to the supervisor, on HANDOVER_FD only: the "
                           "harness closes that descriptor before tool code, and RLIMIT_NOFILE keeps a tool "
                           "below its number, so a tool can never put a descriptor in flight"),
    Rule("futex", CHECK, "locks of the interpreter, numpy and the C library: the process's own only "
                         "(FUTEX_PRIVATE_FLAG); a shared futex in a file two runs map read-only would let "
                         "them wait for and wake each other, and reach the host's waiters on that file; "
                         "the priority-inheritance commands answer EPERM (FUTEX_ALLOWED)"),
    Rule("mmap", ALLOW, _MEM + "; mapping a file needs a descriptor Landlock granted"),
    Rule("munmap", ALLOW, _MEM),
    Rule("mremap", ALLOW, _MEM),
    Rule("mprotect", ALLOW, _MEM + " (loading an extension module)"),
    Rule("brk", ALLOW, _MEM),
    Rule("madvise", CHECK, _MEM + " (the allocator returning pages): advice on its own memory only "
                           "(MADVISE_ALLOWED); advice on a file's cached pages answers EPERM"),
    Rule("newfstatat", ALLOW, "stat of a path: the import system probes; metadata only"),
    Rule("fstat", ALLOW, "stat of a descriptor the child holds"),
    Rule("statx", ALLOW, "stat of a path (newer C libraries)"),
    Rule("lseek", ALLOW, "position in a file the child holds"),
    Rule("close", ALLOW, "closing its own descriptor"),
    Rule("openat", ALLOW, "opening a file: " + _FILES),
    Rule("pread64", ALLOW, "reading a file the child holds"),
    Rule("pwrite64", ALLOW, "writing a file the child holds (RLIMIT_FSIZE caps it)"),
    Rule("readv", ALLOW, "reading a file the child holds"),
    Rule("writev", ALLOW, "writing a file the child holds (RLIMIT_FSIZE caps it)"),
    Rule("getdents64", ALLOW, "listing a directory Landlock let it open"),
    Rule("readlinkat", ALLOW, "resolving a path (os.path.realpath, the import system)"),
    Rule("faccessat", ALLOW, "os.access: " + _FILES),
    Rule("faccessat2", ALLOW, "os.access (newer C libraries): " + _FILES),
    Rule("getcwd", ALLOW, "os.getcwd"),
    Rule("chdir", ALLOW, "moving inside what it may read; Landlock still decides every open"),
    Rule("fchdir", ALLOW, "as chdir"),
    Rule("dup", ALLOW, "copying its own descriptor (RLIMIT_NOFILE caps them)"),
    Rule("dup3", ALLOW, "copying its own descriptor"),
    Rule("mkdirat", ALLOW, "a directory in the working directory: " + _FILES),
    Rule("unlinkat", ALLOW, "removing a file of the working directory: " + _FILES),
    Rule("renameat", ALLOW, "renaming in the working directory: " + _FILES),
    Rule("renameat2", ALLOW, "renaming in the working directory: " + _FILES),
    Rule("symlinkat", ALLOW, "a link in the working directory (Landlock governs what it opens)"),
    Rule("linkat", ALLOW, "a hard link in the working directory (Landlock refuses one across rules)"),
    Rule("ftruncate", ALLOW, "shrinking or growing its own file (RLIMIT_FSIZE caps it)"),
    Rule("truncate", ALLOW, "as ftruncate, by path: " + _FILES),
    Rule("fsync", ALLOW, "flushing its own file"),
    Rule("fdatasync", ALLOW, "flushing its own file"),
    Rule("statfs", ALLOW, "os.statvfs: sizes of a file system, nothing of its content"),
    Rule("fstatfs", ALLOW, "as statfs, on a descriptor it holds"),
    Rule("umask", ALLOW, _SELF),
    Rule("poll", ALLOW, "waiting on its own descriptors"),
    Rule("ppoll", ALLOW, "waiting on its own descriptors"),
    Rule("pselect6", ALLOW, "waiting on its own descriptors (select)"),
    # -- time (the frozen clock is a library; these read the real clock of this machine)
    Rule("clock_gettime", CHECK, "time.monotonic / perf_counter when the vDSO falls back, time.process_time; "
                                 "a clock id that names another process's CPU clock answers EPERM (_CLOCK_FIRST)"),
    Rule("clock_getres", CHECK, "time.get_clock_info; as clock_gettime"),
    Rule("gettimeofday", ALLOW, "the C library's time of day when the vDSO falls back"),
    Rule("clock_nanosleep", CHECK, "time.sleep (the supervisor's wall clock bounds it); as clock_gettime"),
    Rule("nanosleep", ALLOW, "as clock_nanosleep"),
    # -- who am I
    Rule("getpid", ALLOW, _SELF), Rule("gettid", ALLOW, _SELF), Rule("getppid", ALLOW, _SELF),
    Rule("getuid", ALLOW, _SELF), Rule("geteuid", ALLOW, _SELF), Rule("getgid", ALLOW, _SELF),
    Rule("getegid", ALLOW, _SELF), Rule("getgroups", ALLOW, _SELF), Rule("getresuid", ALLOW, _SELF),
    Rule("getresgid", ALLOW, _SELF),
    Rule("getrusage", EPERM, "resource.getrusage: its page-fault counts tell which pages of a shared "
                             "file another run left cached, a channel between runs needing no clock; the "
                             "harness reads its usage before the filter, the supervisor from outside"),
    Rule("times", ALLOW, "os.times: its own usage"),
    Rule("uname", ALLOW, "platform and the C library read the kernel release"),
    Rule("sysinfo", ALLOW, "memory totals (numpy, os.sysconf); nothing per process"),
    Rule("getcpu", ALLOW, _SELF),
    Rule("sched_yield", ALLOW, _SELF),
    Rule("getrandom", ALLOW, "os.urandom, random and hash seeds"),
    # -- signals to itself
    Rule("rt_sigaction", ALLOW, "signal handlers of the child itself"),
    Rule("rt_sigprocmask", ALLOW, _SELF),
    Rule("rt_sigreturn", ALLOW, "returning from a signal handler"),
    Rule("sigaltstack", ALLOW, "the interpreter's fault handler stack"),
    Rule("rt_sigpending", ALLOW, _SELF),
    Rule("rt_sigsuspend", ALLOW, "signal.pause / sigsuspend"),
    Rule("rt_sigtimedwait", ALLOW, "signal.sigtimedwait"),
    Rule("restart_syscall", ALLOW, "the kernel restarting a call a signal interrupted"),
    Rule("setitimer", ALLOW, "signal.setitimer: signals to the child itself only"),
    Rule("getitimer", ALLOW, _SELF),
    # -- threads and exit
    Rule("set_robust_list", ALLOW, "a new thread registering its futex list"),
    Rule("set_tid_address", ALLOW, "a new thread's start"),
    Rule("rseq", ALLOW, "a new thread's restartable sequences (C library)"),
    Rule("exit", ALLOW, "a thread ending"),
    Rule("exit_group", ALLOW, "the child ending"),
    # -- checked arguments
    Rule("ioctl", CHECK, "only terminal probes and descriptor flags (isatty, FIONREAD, FIONBIO, "
                         "FIOCLEX): an inode-flag or device request would act on a file it owns"),
    Rule("fcntl", CHECK, "only descriptor flags and dup (no signals on I/O, no leases, no locks "
                         "that could stall the gate, no directory notifications)"),
    Rule("prctl", CHECK, "only reads of its own state and thread names; PR_SET_VMA answers EPERM"),
    Rule("clone", CHECK, "threads only (a new process only when the limits allow processes), "
                         "never with a namespace flag or CLONE_PARENT"),
    Rule("clone3", ENOSYS, "its flags sit in memory a filter cannot read: ENOSYS makes the C "
                           "library fall back to clone"),
    Rule("kill", CHECK, "to the child itself only, and never a signal only the kernel sends (SIGSYS, "
                        "SIGXCPU, SIGXFSZ: EPERM)"),
    Rule("tkill", CHECK, "as kill"), Rule("tgkill", CHECK, "as kill"),
    Rule("rt_sigqueueinfo", CHECK, "as kill"), Rule("rt_tgsigqueueinfo", CHECK, "as kill"),
    Rule("prlimit64", CHECK, "its own limits only (pid 0 or its own); setting one answers EPERM except "
                             "RLIMIT_NOFILE (the harness sets it last): a tool lowering its own CPU or "
                             "file-size limit would make the kernel's limit signal its claim"),
    Rule("sched_setaffinity", CHECK, "its own CPUs only"),
    Rule("get_robust_list", CHECK, "its own futex list only"),
    # Reads that take a pid: any other answers whether that process exists, its group, session and
    # scheduling, so a tool could list every process of the host (there is no PID namespace where
    # `unshare` is refused) and watch other runs start and end. Its own only (pid 0 or its own).
    # (A `stat` of /proc/<pid> still tells whether a process exists: Landlock does not govern stat,
    # and a path is not a syscall argument a filter can read; docs/sandbox.md says what that leaves.)
    Rule("getpgid", CHECK, "its own process group only (os.getpgrp / getpgid(0))"),
    Rule("getsid", CHECK, "its own session only"),
    Rule("sched_getaffinity", CHECK, "its own CPUs only (os.cpu_count, sched_getaffinity(0))"),
    Rule("sched_getparam", CHECK, "its own scheduling parameters only"),
    Rule("sched_getscheduler", CHECK, "its own scheduling policy only"),
    # -- refused softly: a library may probe them
    Rule("getxattr", EPERM, "reading extended attributes reveals what Landlock hides; probed by copy helpers"),
    Rule("lgetxattr", EPERM, "as getxattr"), Rule("fgetxattr", EPERM, "as getxattr"),
    Rule("listxattr", EPERM, "as getxattr"), Rule("llistxattr", EPERM, "as getxattr"),
    Rule("flistxattr", EPERM, "as getxattr"),
    Rule("inotify_init1", EPERM, "watching files outside the working directory"),
    Rule("sched_getattr", EPERM, "scheduling attributes: probed, never needed"),
    Rule("fadvise64", EPERM, "a caching hint: only a hint (nothing needs it), and POSIX_FADV_DONTNEED drops the "
                             "host's cached pages of a file every run reads (the gate's own modules, the standard "
                             "library): a lever on other runs' speed and a channel from one run to the next"),
)
#: x86-64 only: the old path-based entry points glibc and static code still use.
_LEGACY = tuple(Rule(name, ALLOW, reason) for name, reason in (
    ("open", "opening a file: " + _FILES), ("stat", "stat of a path"), ("lstat", "stat of a path"),
    ("access", "os.access"), ("readlink", "resolving a path"), ("dup2", "copying its own descriptor"),
    ("mkdir", "a directory: " + _FILES),
    ("rmdir", "removing a directory: " + _FILES), ("unlink", "removing a file: " + _FILES),
    ("rename", "renaming: " + _FILES), ("symlink", "a link (Landlock governs what it opens)"),
    ("link", "a hard link (Landlock refuses one across rules)"), ("select", "waiting on its descriptors"),
    ("time", "the time of day"), ("alarm", "a SIGALRM to itself"), ("pause", "waiting for a signal"),
    ("getpgrp", "its own process group"), ("getdents", "listing a directory"),
    ("getrlimit", "its own limits (read only)"),
))
RULES: tuple[Rule, ...] = (*_RULES, *_LEGACY)

#: ``ioctl`` requests allowed (terminal probes answer ENOTTY on the child's pipes; descriptor flags).
IOCTL_ALLOWED = {0x5401: "TCGETS (isatty)", 0x5413: "TIOCGWINSZ (terminal size)",
                 0x541B: "FIONREAD", 0x5421: "FIONBIO", 0x5450: "FIONCLEX", 0x5451: "FIOCLEX"}
#: ``fcntl`` commands allowed: F_DUPFD, F_GETFD, F_SETFD, F_GETFL, F_SETFL, F_DUPFD_CLOEXEC,
#: F_GETPIPE_SZ. Not F_SETOWN/F_SETSIG (a signal on I/O), F_SETLEASE, F_NOTIFY, locks.
FCNTL_ALLOWED = (0, 1, 2, 3, 4, 1030, 1032)
#: ``prctl`` options allowed: PR_GET_DUMPABLE, PR_SET_NAME, PR_GET_NAME, PR_GET_SECCOMP,
#: PR_CAPBSET_READ, PR_GET_TIMERSLACK, PR_GET_NO_NEW_PRIVS.
PRCTL_ALLOWED = (3, 15, 16, 21, 23, 30, 39)
#: ``prctl`` options answered EPERM: PR_SET_VMA (the C library names thread stacks with it).
PRCTL_EPERM = (0x53564D41,)
#: Signals only the kernel may send the child (a seccomp kill, the CPU and file-size limits): the
#: child sending one to itself gets EPERM, so a death by one of them is the kernel's doing.
KERNEL_SIGNALS = (signal.SIGSYS, signal.SIGXCPU, signal.SIGXFSZ)
#: Calls that take a pid first: allowed on the child itself (0 or its own pid) only.
_PID_FIRST = ("sched_setaffinity", "get_robust_list", "getpgid", "getsid", "sched_getaffinity", "sched_getparam",
              "sched_getscheduler")
#: Calls whose first argument is a clock id: the fixed clocks (0 and up: real time, monotonic, this
#: process's and this thread's CPU time...) pass; a negative id names a clock by pid, thread id or
#: descriptor (``(~pid << 3) | 2``...), any process's CPU time -- how much the router, another run or the
#: host's processes have worked, a wait on it, and whether a pid exists -- and answers EPERM.
_CLOCK_FIRST = ("clock_gettime", "clock_getres", "clock_nanosleep")
#: The one limit ``prlimit64`` may set (see its rule).
RLIMIT_NOFILE = 7
#: Signal-sending calls: (argument holding the target process, argument holding the signal).
_SIGNAL_ARGS = {"kill": (0, 1), "tkill": (0, 1), "tgkill": (0, 2), "rt_sigqueueinfo": (0, 1),
                "rt_tgsigqueueinfo": (0, 2)}
#: The one descriptor ``sendmsg`` may use: the harness's copy of its control socket, made for the
#: listener's hand-over and closed before tool code. It lies at or above every ``RLIMIT_NOFILE`` a
#: tool gets (the harness caps the limit at this number), so no ``dup``, ``open`` or ``pipe`` of
#: the tool can ever make a descriptor with this number: a tool cannot send descriptors at all (an
#: ``SCM_RIGHTS`` message puts them in flight, counted against its user, where enough of them would
#: make another child's hand-over fail).
HANDOVER_FD = 255
#: Calls allowed besides the table when the limits give the tool processes (``nproc`` > 0).
PROCESS_CALLS = ("wait4", "waitid")

#: Per architecture: the audit arch value and the call numbers (kept under this name for tools
#: that assemble their own filter, e.g. the test suite's unprivileged host).
_ARCH: dict[str, tuple[int, dict[str, int]]] = {m: (AUDIT_ARCH[m], NUMBERS[m]) for m in AUDIT_ARCH}


def rules_for(machine: str | None = None) -> list[Rule]:
    """The rules that exist on ``machine`` (x86-64 has old entry points aarch64 never had)."""
    numbers = NUMBERS[machine or platform.machine()]
    return [rule for rule in RULES if rule.name in numbers]


def allowed_calls(machine: str | None = None) -> list[str]:
    """Names of the calls the filter lets through (unconditionally or with checked arguments)."""
    return sorted(rule.name for rule in rules_for(machine) if rule.action in (ALLOW, CHECK))


def denied_calls(machine: str | None = None) -> list[str]:
    """Names of the known calls the filter denies outright (everything not in :data:`RULES`)."""
    named = {rule.name for rule in RULES}
    return sorted(name for name in NUMBERS[machine or platform.machine()] if name not in named)


def call_name(nr: int, machine: str | None = None) -> str:
    """The name of call ``nr`` (for the supervisor's record of a denial)."""
    for name, number in NUMBERS.get(machine or platform.machine(), {}).items():
        if number == nr:
            return name
    return f"syscall {nr}"


class _Asm:
    """A tiny classic-BPF assembler with forward labels (conditional offsets are 8-bit; ``goto``
    is an unconditional jump with a 32-bit offset)."""

    def __init__(self) -> None:
        self.code: list[tuple[int, str | int, str | int, int | str]] = []
        self.labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self.labels[name] = len(self.code)

    def ld(self, offset: int) -> None:
        self.code.append((_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, jt: str | int = 0, jf: str | int = 0) -> None:
        self.code.append((op, jt, jf, k))

    def and_(self, mask: int) -> None:
        """The accumulator ANDed with ``mask`` (a loaded argument reduced to some of its bits)."""
        self.code.append((_ALU_AND_K, 0, 0, mask))

    def ret(self, value: int) -> None:
        self.code.append((_RET, 0, 0, value))

    def skip(self, count: int) -> None:
        """Unconditional forward jump over ``count`` instructions."""
        self.code.append((_JA, 0, 0, count))

    def goto(self, label: str) -> None:
        self.code.append((_JA, 0, 0, label))

    def _offset(self, index: int, target: str | int, limit: int) -> int:
        if not isinstance(target, str):
            return target
        delta = self.labels[target] - index - 1
        if not 0 <= delta <= limit:
            raise ValueError(f"BPF jump to {target} out of range ({delta})")
        return delta

    def assemble(self) -> bytes:
        out = bytearray()
        for index, (op, jt, jf, k) in enumerate(self.code):
            if op == _JA:
                k = self._offset(index, k, 0xFFFFFFFF)
            out += struct.pack("=HBBI", op, self._offset(index, jt, 255), self._offset(index, jf, 255),
                               int(k) & 0xFFFFFFFF)
        return bytes(out)


def _allow_tree(a: _Asm, numbers: list[int], name: str) -> None:
    """A balanced search over the sorted allowed numbers (a handful of comparisons per call, not
    one per table entry): a leaf of up to four compares returns ALLOW on a match and goes on to
    the checked calls otherwise."""
    if len(numbers) <= 4:
        for nr in numbers:
            a.jump(_JEQ, nr, f"{name}_ok", 0)
        a.goto("checked")
        a.label(f"{name}_ok")
        a.ret(RET_ALLOW)
        return
    mid = len(numbers) // 2
    a.jump(_JGE, numbers[mid], 0, 1)
    a.goto(f"{name}_r")
    _allow_tree(a, numbers[:mid], f"{name}l")
    a.label(f"{name}_r")
    _allow_tree(a, numbers[mid:], f"{name}r")


def _dispatch(a: _Asm, numbers: dict[str, int], rules: list[Rule], allow_processes: bool) -> None:
    """The number comparisons: the allowed calls as a search tree, then a trampoline per checked
    or refused call to its handler."""
    allowed = {numbers[r.name] for r in rules if r.action == ALLOW}
    if allow_processes:
        allowed |= {numbers[n] for n in PROCESS_CALLS if n in numbers}
    _allow_tree(a, sorted(allowed), "t")
    a.label("checked")
    for rule in rules:
        if rule.action == ALLOW:
            continue
        handler = {EPERM: "eperm", ENOSYS: "enosys"}.get(rule.action, f"chk_{rule.name}")
        if rule.name in _PID_FIRST:
            handler = "pid_first"
        elif rule.name in _CLOCK_FIRST:
            handler = "clock_first"
        elif rule.name in _SIGNAL_ARGS:
            handler = f"sig_{rule.name}"
        a.jump(_JEQ, numbers[rule.name], 0, 1)
        a.goto(handler)
    a.goto("deny")


def _one_of(a: _Asm, arg: int, values: tuple[int, ...] | list[int], then: str, otherwise: str) -> None:
    a.ld(_arg_lo(arg))
    for value in values:
        a.jump(_JEQ, value, 0, 1)
        a.goto(then)
    a.goto(otherwise)


def _handlers(a: _Asm, self_pid: int, allow_processes: bool) -> None:
    a.label("chk_ioctl")
    _one_of(a, 1, list(IOCTL_ALLOWED), "allow", "deny")
    a.label("chk_fcntl")
    _one_of(a, 1, FCNTL_ALLOWED, "allow", "deny")
    a.label("chk_prctl")
    a.ld(_arg_lo(0))
    for value in PRCTL_EPERM:
        a.jump(_JEQ, value, 0, 1)
        a.goto("eperm")
    _one_of(a, 0, PRCTL_ALLOWED, "allow", "deny")
    a.label("chk_futex")
    a.ld(_arg_lo(1))
    a.jump(_JSET, FUTEX_PRIVATE_FLAG, 0, "deny")
    a.and_(FUTEX_CMD_MASK)
    for value in FUTEX_ALLOWED:
        a.jump(_JEQ, value, "allow", 0)
    a.goto("eperm")
    a.label("chk_madvise")
    _one_of(a, 2, MADVISE_ALLOWED, "allow", "eperm")
    a.label("chk_sendmsg")
    _one_of(a, 0, (HANDOVER_FD,), "allow", "deny")
    a.label("chk_clone")
    a.ld(_arg_lo(0))
    a.jump(_JSET, CLONE_NS_FLAGS | CLONE_PARENT, 0, 1)
    a.goto("deny")
    if allow_processes:
        # A new process's exit signal (the flags' low byte) is none or SIGCHLD: the kernel sends
        # it to the tool when that process ends, so any other would arrive as the kernel's own
        # signal (SIGXCPU read as "the CPU limit" after no CPU at all).
        a.and_(0xFF)
        a.jump(_JEQ, 0, "allow", 0)
        a.jump(_JEQ, int(signal.SIGCHLD), "allow", "deny")
    else:
        # a thread fails softly (EAGAIN: "can't start new thread", as RLIMIT_NPROC would answer
        # it), a new process is denied
        a.jump(_JSET, CLONE_THREAD, 0, 1)
        a.goto("eagain")
        a.goto("deny")
    for name, (target, sig) in _SIGNAL_ARGS.items():
        a.label(f"sig_{name}")
        a.ld(_arg_lo(target))
        a.jump(_JEQ, self_pid & 0xFFFFFFFF, 1, 0)
        a.goto("deny")
        a.ld(_arg_lo(sig))
        for kernel_only in KERNEL_SIGNALS:
            a.jump(_JEQ, int(kernel_only), 0, 1)
            a.goto("eperm")
        a.goto("allow")
    a.label("chk_prlimit64")
    a.ld(_arg_lo(0))
    a.jump(_JEQ, 0, "prl_own", 0)
    a.jump(_JEQ, self_pid & 0xFFFFFFFF, "prl_own", "deny")
    a.label("prl_own")
    a.ld(_arg_lo(2))  # new_limit: a NULL pointer (both halves zero) only reads
    a.jump(_JEQ, 0, 0, "prl_set")
    a.ld(_arg_lo(2) + 4)
    a.jump(_JEQ, 0, "allow", "prl_set")
    a.label("prl_set")
    a.ld(_arg_lo(1))
    a.jump(_JEQ, RLIMIT_NOFILE, "allow", "eperm")
    a.label("clock_first")
    a.ld(_arg_lo(0))
    a.jump(_JGE, 0x80000000, "eperm", "allow")  # a negative clockid_t (an int): a clock by pid or descriptor
    a.label("pid_first")
    a.ld(_arg_lo(0))
    a.jump(_JEQ, 0, "allow", 0)
    a.jump(_JEQ, self_pid & 0xFFFFFFFF, "allow", "deny")
    a.label("allow")
    a.ret(RET_ALLOW)
    a.label("eperm")
    a.ret(RET_ERRNO | _EPERM)
    a.label("eagain")
    a.ret(RET_ERRNO | _EAGAIN)
    a.label("enosys")
    a.ret(RET_ERRNO | _ENOSYS)


def build_filter(self_pid: int, machine: str | None = None, *, allow_processes: bool = False,
                 deny_action: int = RET_KILL_PROCESS) -> bytes:
    """The filter program for a child whose pid (as it sees itself) is ``self_pid``.

    ``allow_processes=False`` (a tool with no process or thread allowance, the default limit)
    denies every new process and answers a new thread ``EAGAIN``: ``RLIMIT_NPROC`` does not hold
    for a child that keeps uid 0 (the kernel exempts root's user from it even without
    capabilities), so the filter is what makes "no new process" hold in every setting.
    ``deny_action`` is what every call outside the table gets."""
    machine = machine or platform.machine()
    if machine not in AUDIT_ARCH:
        raise OSError(f"no seccomp filter for architecture {machine}")
    numbers = NUMBERS[machine]
    a = _Asm()
    a.ld(_OFF_ARCH)
    a.jump(_JEQ, AUDIT_ARCH[machine], 1, 0)
    a.goto("deny_arch")
    a.ld(_OFF_NR)
    if machine == "x86_64":  # x32 system calls
        a.jump(_JGE, X32_BIT, 0, 1)
        a.goto("deny_arch")
    _dispatch(a, numbers, rules_for(machine), allow_processes)
    _handlers(a, self_pid, allow_processes)
    a.label("deny")
    a.label("deny_arch")  # another ABI: the notification carries its audit arch
    a.ret(deny_action)
    return a.assemble()
#: Assembled programs by (machine, allow_processes, deny_action): the program for one pid and the
#: byte offsets of the instructions that hold the pid (see :func:`filter_for`).
_TEMPLATES: dict[tuple[str, bool, int], tuple[bytes, tuple[int, ...]]] = {}


def filter_for(self_pid: int, machine: str | None = None, *, allow_processes: bool = False,
               deny_action: int = RET_KILL_PROCESS) -> bytes:
    """:func:`build_filter`'s program, assembled once per process (the warm worker does it before
    it forks, so every child inherits it) and copied with ``self_pid`` written into the
    instructions that compare a pid: a child spends no time assembling ~400 instructions.

    The instructions that hold the pid are found by assembling for two pids and comparing: every
    other instruction is the same whatever the pid, so the copy equals ``build_filter(self_pid)``."""
    machine = machine or platform.machine()
    key = (machine, allow_processes, deny_action)
    found = _TEMPLATES.get(key)
    if found is None:
        one = build_filter(1, machine, allow_processes=allow_processes, deny_action=deny_action)
        two = build_filter(2, machine, allow_processes=allow_processes, deny_action=deny_action)
        slots = tuple(at for at in range(0, len(one), 8) if one[at:at + 8] != two[at:at + 8])
        if len(one) != len(two) or any(one[at:at + 4] != two[at:at + 4] for at in slots):
            raise ValueError("the filter's shape depends on the pid")  # pragma: no cover - a bug
        found = _TEMPLATES[key] = (one, slots)
    program, slots = found
    out = bytearray(program)
    for at in slots:
        struct.pack_into("=I", out, at + 4, self_pid & 0xFFFFFFFF)
    return bytes(out)


def prepare(machine: str | None = None) -> None:
    """Assemble every program a child may install (called in the warm worker before it forks)."""
    for allow_processes in (False, True):
        for action in (RET_KILL_PROCESS, RET_USER_NOTIF):
            with contextlib.suppress(OSError):  # another architecture: install() says so per child
                filter_for(0, machine, allow_processes=allow_processes, deny_action=action)


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


#: ``seccomp(2)`` operation and flag, and the action that hands a denied call to the supervisor.
SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
RET_USER_NOTIF = 0x7FC00000
#: ``SECCOMP_IOCTL_NOTIF_RECV`` = _IOWR('!', 0, struct seccomp_notif) and that struct's layout:
#: id u64, pid u32, flags u32, then seccomp_data (nr i32, arch u32, ip u64, args u64[6]).
NOTIF_RECV = 0xC0502100
_NOTIF = struct.Struct("=QIIiIQ6Q")


@dataclass
class SeccompReport:
    enforced: bool = False
    arch: str = ""
    instructions: int = 0
    processes: bool = False  # whether fork/clone of new processes and threads stays allowed
    #: True when a denied call is handed to the supervisor (a user notification: its own record
    #: of the denial) instead of killing the process with a signal the tool could also send.
    notify: bool = False
    error: str | None = None


_LIBC: list[ctypes.CDLL] = []


def _libc() -> ctypes.CDLL:
    if not _LIBC:
        _LIBC.append(ctypes.CDLL(None, use_errno=True))
    return _LIBC[0]


def _action_available(action: int) -> bool:
    machine = platform.machine()
    if machine not in AUDIT_ARCH:
        return False
    value = ctypes.c_uint32(action)
    fn = _libc().syscall
    fn.restype = ctypes.c_long
    return int(fn(ctypes.c_long(SYS_SECCOMP[machine]), ctypes.c_uint(SECCOMP_GET_ACTION_AVAIL),
                  ctypes.c_uint(0), ctypes.byref(value))) == 0


def available() -> bool:
    """Whether this kernel can install a filter that kills the whole process (probe, no change)."""
    return _action_available(RET_KILL_PROCESS)


def notify_available() -> bool:
    """Whether this kernel can hand denied calls to a supervisor (user notifications)."""
    return _action_available(RET_USER_NOTIF)


def install(report: SeccompReport, *, self_pid: int | None = None, allow_processes: bool = False,
            notify: bool = False) -> int | None:
    """Install the filter on this process (needs ``no_new_privs``); never raises.

    With ``notify`` (and a kernel that has user notifications), a denied call blocks and is
    handed to whoever holds the returned listener descriptor -- the caller passes it to the
    supervisor and closes its own copy before tool code runs. Otherwise (or when that fails) a
    denied call kills the process, and None is returned."""
    report.arch = platform.machine()
    report.processes = allow_processes
    use_notify = notify and notify_available()
    try:
        program = filter_for(os.getpid() if self_pid is None else self_pid, report.arch,
                             allow_processes=allow_processes,
                             deny_action=RET_USER_NOTIF if use_notify else RET_KILL_PROCESS)
    except (OSError, ValueError) as exc:
        report.error = str(exc)
        return None
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = _SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    listener: int | None = None
    if use_notify:
        fn = _libc().syscall
        fn.restype = ctypes.c_long
        fd = int(fn(ctypes.c_long(SYS_SECCOMP[report.arch]), ctypes.c_uint(SECCOMP_SET_MODE_FILTER),
                    ctypes.c_uint(SECCOMP_FILTER_FLAG_NEW_LISTENER), ctypes.byref(prog)))
        if fd < 0:
            report.error = f"seccomp filter refused: {os.strerror(ctypes.get_errno())}"
            return None
        listener = fd
        report.notify = True
    else:
        prctl = _libc().prctl
        if prctl(ctypes.c_int(PR_SET_SECCOMP), ctypes.c_ulong(SECCOMP_MODE_FILTER), ctypes.byref(prog),
                 ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
            report.error = f"seccomp filter refused: {os.strerror(ctypes.get_errno())}"
            return None
    report.enforced = True
    report.instructions = len(program) // 8
    return listener


def is_listener(fd: int) -> bool:
    """Whether ``fd`` is a seccomp notification listener (the kernel names its anonymous inode)."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}") == "anon_inode:seccomp notify"
    except OSError:
        return False


def receive_denial(listener: int) -> dict[str, object] | None:
    """Supervisor side: read one pending notification -- the denied call, as the kernel saw it."""
    import fcntl

    buffer = bytearray(_NOTIF.size)  # the kernel requires it zeroed
    try:
        fcntl.ioctl(listener, NOTIF_RECV, buffer, True)
    except OSError:
        return None
    _id, pid, _flags, nr, arch, _ip, *args = _NOTIF.unpack(bytes(buffer))
    machine = next((m for m, value in AUDIT_ARCH.items() if value == arch), None)
    return {"call": call_name(nr, machine) if machine else f"syscall {nr} (arch {arch:#x})", "nr": nr,
            "pid": pid, "args": [f"{value:#x}" for value in args]}
