"""The kernel layers one by one, with the policy and the audit hook off (``run_kernel_only``).

Each forbidden system call is made raw (``syscall(2)`` through ctypes, so no library wrapper can
fail first) and must end the tool with a seccomp kill the supervisor reports; each file-system
attempt must be refused by Landlock, whatever the file permissions allow.
"""

from __future__ import annotations

import os
import platform
import shutil
import signal
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from finevo.sandbox import ExecutionResult, Limits, confine, create_sandbox, landlock, seccomp
from finevo.sandbox.backends import WarmSandbox
from finevo.sandbox.selftest import default_base_dir

SUPPORT = confine.kernel_support()
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(SUPPORT["landlock_abi"] <= 0 or not SUPPORT["seccomp"],
                                 reason=f"this kernel lacks Landlock or seccomp: {SUPPORT}")]
FAST = Limits(timeout_s=10.0, cpu_s=5, memory_mb=1024)
_, NR = seccomp._ARCH.get(platform.machine(), (0, {}))

#: name -> arguments of a raw call that must be killed (the child's own pid is {self}, its parent {parent})
DENIED_CALLS: dict[str, str] = {
    "socket": "2, 1, 0", "socketpair": "1, 1, 0, 0", "execve": "b'/bin/sh', 0, 0",
    "execveat": "-100, b'/bin/sh', 0, 0, 0",
    "ptrace": "16, {parent}, 0, 0", "process_vm_readv": "{parent}, 0, 0, 0, 0, 0",
    "process_vm_writev": "{parent}, 0, 0, 0, 0, 0", "pidfd_open": "{parent}, 0",
    "pidfd_send_signal": "3, 15, 0, 0", "pidfd_getfd": "3, 0, 0", "setpgid": "0, 0", "setsid": "",
    "unshare": "0x10000000", "setns": "3, 0", "mount": "b'none', b'/tmp', b'tmpfs', 0, 0",
    "bpf": "0, 0, 0", "perf_event_open": "0, 0, -1, -1, 0", "userfaultfd": "0",
    "io_uring_setup": "8, 0", "io_uring_enter": "3, 1, 0, 0, 0, 0", "io_uring_register": "3, 0, 0, 0",
    "keyctl": "0, -3, 0, 0, 0", "open_by_handle_at": "-100, 0, 0", "shmget": "0, 4096, 0o1600",
    "mq_open": "b'/x', 0o100, 0o600, 0", "kill": "{parent}, 0", "tgkill": "{parent}, {parent}, 0",
    "tkill": "{parent}, 0", "rt_sigqueueinfo": "{parent}, 15, 0", "fork": "", "clone": "17, 0, 0, 0, 0",
    # a pipe's inode number comes from a counter the whole host shares: a channel from run to run
    "pipe2": "0, 0", "pipe": "0",
    # file metadata (a child keeping uid 0, or the gate's uid, owns the host's files)
    "chmod": "b'/nonexistent-finevo/x', 0o4755", "fchmodat": "-100, b'/nonexistent-finevo/x', 0o666, 0",
    "fchmod": "0, 0o666", "chown": "b'/nonexistent-finevo/x', 0, 0",
    "fchownat": "-100, b'/nonexistent-finevo/x', 0, 0, 0",
    "setxattr": "b'/nonexistent-finevo/x', b'user.x', b'1', 1, 0",
    "removexattr": "b'/nonexistent-finevo/x', b'user.x'",
    "utimensat": "-100, b'/nonexistent-finevo/x', 0, 0", "mknodat": "-100, b'/nonexistent-finevo/fifo', 0o10600, 0",
    # another process's limits and scheduling
    "prlimit64": "{parent}, 0, 0, 0", "sched_setaffinity": "{parent}, 0, 0",
    "sched_setscheduler": "{parent}, 5, 0", "get_robust_list": "{parent}, 0, 0",
    # another process's group, session and scheduling: whether it exists at all (listing the host's processes)
    "getpgid": "{parent}", "getsid": "{parent}", "sched_getaffinity": "{parent}, 128, 0",
    "sched_getparam": "{parent}, 0", "sched_getscheduler": "{parent}",
}
#: name -> arguments of a raw call answered EPERM (reads of what Landlock hides, file watches)
EPERM_CALLS: dict[str, str] = {
    "getxattr": "b'/nonexistent-finevo/x', b'user.x', 0, 0", "listxattr": "b'/nonexistent-finevo/x', 0, 0",
    "inotify_init1": "0", "fadvise64": "0, 0, 0, 4",
}
PRCTL_DENIED = {"PR_SET_PDEATHSIG": "1, 0", "PR_SET_DUMPABLE": "4, 1"}


@pytest.fixture(scope="module")
def box() -> Iterator[WarmSandbox]:
    with create_sandbox(None, backend="warm", policy=False) as sandbox:
        yield sandbox  # type: ignore[misc]


def _raw(nr: int, args: str) -> str:
    return ("import ctypes\nimport os\n\n\ndef probe() -> int:\n"
            "    libc = ctypes.CDLL(None, use_errno=True)\n"
            "    parent = os.getppid()\n"
            f"    return libc.syscall({nr}{', ' if args else ''}{args.format(self='os.getpid()', parent='parent')})\n")


@pytest.mark.parametrize("name", sorted(n for n in DENIED_CALLS if n in NR))
def test_each_forbidden_system_call_is_a_seccomp_kill(box: WarmSandbox, name: str) -> None:
    result = box.run_kernel_only(_raw(NR[name], DENIED_CALLS[name]), "probe", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "seccomp"), (name, result.status, result.layer,
                                                                     result.error_message)
    # the supervisor's own record of the denial (a seccomp user notification), not a signal
    assert result.details["evidence"] == f"seccomp notification: {name}", result.details
    assert result.details["denied_call"]["call"] == name


#: Calls the allow-list denies only because of an argument: (call, arguments, what it would do).
ARGUMENT_DENIED = [
    ("ioctl", "0, 0x40086602, 0", "FS_IOC_SETFLAGS: inode flags of a file the child owns"),
    ("ioctl", "0, 0x5412, 0", "TIOCSTI: typing into a terminal"),
    ("fcntl", "1, 8, {self}", "F_SETOWN: a signal on I/O"),
    ("fcntl", "1, 1024, 1", "F_SETLEASE: a lease on a file it owns"),
    ("fcntl", "1, 1026, 0x80000001", "F_NOTIFY: directory notifications"),
    ("prctl", "35, 0, 0, 0, 0", "PR_SET_MM: rewriting its own memory map description"),
    ("prctl", "0x59616d61, -1, 0, 0, 0", "PR_SET_PTRACER: letting any process trace it"),
    ("sendmsg", "3, 0, 0", "a message on its control channel, which could carry descriptors"),
    ("futex", "0, 1, 1, 0, 0, 0", "FUTEX_WAKE without the private flag: waiters of any process on a shared file"),
    ("futex", "0, 0, 0, 0, 0, 0", "FUTEX_WAIT without the private flag: waiting for another run's wake"),
]
#: Calls no table ever named (new or obscure interfaces): denied by construction.
UNNAMED = {"memfd_create": "b'x', 0", "timer_create": "0, 0, 0", "eventfd2": "0, 0",
           "membarrier": "0, 0, 0", "mseal": "0, 0, 0", "lsm_list_modules": "0, 0, 0",
           "futex_waitv": "0, 0, 0, 0, 0", "landlock_create_ruleset": "0, 0, 1",
           "seccomp": "1, 0, 0", "sendfile": "1, 0, 0, 1", "splice": "0, 0, 1, 0, 1, 0"}


@pytest.mark.parametrize(("name", "args", "why"), ARGUMENT_DENIED)
def test_an_argument_outside_the_checked_set_is_denied(box: WarmSandbox, name: str, args: str, why: str) -> None:
    result = box.run_kernel_only(_raw(NR[name], args), "probe", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "seccomp"), (why, result.status, result.error_message)


def test_a_private_futex_is_the_process_own_and_allowed(box: WarmSandbox) -> None:
    """FUTEX_WAKE_PRIVATE (the flag every lock of the interpreter and the C library sets), on no address
    and waking nobody: the filter lets it through to the kernel."""
    result = box.run_kernel_only(_raw(NR["futex"], "0, 129, 1, 0, 0, 0"), "probe", {}, FAST)
    assert result.status == "ok" and result.value in (0, -1), (result.status, result.value, result.error_message)


def test_no_clock_of_another_process_is_read_nor_waited_on(box: WarmSandbox) -> None:
    """A negative clock id names a process's CPU clock by its pid (``(~pid << 3) | 2``): how much the
    router, another run or any process of the host has worked, a wait until it works more, and
    whether the pid exists. Those answer EPERM; the fixed clocks, this process's CPU time and sleeping
    go through."""
    code = ("import ctypes\nimport os\nimport time\n\n\ndef probe() -> dict:\n"
            "    libc = ctypes.CDLL(None, use_errno=True)\n"
            "    spec = (ctypes.c_long * 2)()\n"
            "    out = {}\n"
            "    for pid in (1, os.getppid(), os.getpid(), 0x3FFFF0):\n"
            "        clock = ((~pid) << 3) | 2\n"
            f"        for name, nr in (('get', {NR['clock_gettime']}), ('res', {NR['clock_getres']})):\n"
            "            rc = libc.syscall(nr, clock, ctypes.byref(spec))\n"
            "            out[f'{name}:{pid}'] = ctypes.get_errno() if rc < 0 else rc\n"
            "        spec[0], spec[1] = 0, 1000\n"
            f"        rc = libc.syscall({NR['clock_nanosleep']}, clock, 0, ctypes.byref(spec), None)\n"
            "        out[f'sleep:{pid}'] = ctypes.get_errno() if rc < 0 else rc\n"
            "    start = time.process_time()\n    time.sleep(0.01)\n"
            "    out['fixed'] = [time.monotonic() > 0, time.process_time() >= start, time.thread_time() >= 0]\n"
            "    return out\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert result.status == "ok", (result.status, result.layer, result.error_message)
    value = dict(result.value)
    assert value.pop("fixed") == [True, True, True]
    assert set(value.values()) == {1}, value  # EPERM, whether the pid exists or not


def test_a_priority_inheriting_futex_tells_no_thread_id_of_the_host(box: WarmSandbox) -> None:
    """FUTEX_LOCK_PI (and its kin) read the owner's thread id out of the lock word: the kernel answers
    ESRCH where no thread holds that id, so a tool could probe the host's ids without /proc. Those
    commands answer EPERM whatever the word holds; the interpreter's own locks go through."""
    code = ("import ctypes\nimport os\nimport threading\n\n\ndef probe() -> dict:\n"
            "    libc = ctypes.CDLL(None, use_errno=True)\n"
            "    out = {}\n"
            "    for owner in (1, os.getpid(), 0x3FFFFFF0):\n"
            "        for op in (6, 8, 13):\n"
            "            word = ctypes.c_uint32(owner)\n"
            f"            rc = libc.syscall({NR['futex']}, ctypes.byref(word), op | 128, 0, 0, 0, 0)\n"
            "            out[f'{op}:{owner}'] = ctypes.get_errno() if rc < 0 else rc\n"
            "    lock = threading.Condition()\n"
            "    with lock:\n        lock.wait(0.01)\n"
            "    return out\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert result.status == "ok", (result.status, result.layer, result.error_message)
    assert set(result.value.values()) == {1}, result.value  # EPERM for every owner, found or not


def test_advice_on_cached_file_pages_and_the_fault_counts_are_refused_softly(box: WarmSandbox) -> None:
    """A run could evict a shared file's pages (MADV_PAGEOUT, MADV_COLD) and a later run find out which
    by its page faults (readahead off by MADV_RANDOM, counted by getrusage): a channel between runs --
    from a hidden world to the visible one -- that needs no clock. That advice and getrusage answer
    EPERM; advice on the process's own memory goes through."""
    code = ("import ctypes\nimport mmap\n\n\ndef probe() -> dict:\n"
            "    libc = ctypes.CDLL(None, use_errno=True)\n"
            "    own = mmap.mmap(-1, 1 << 16)\n"
            "    out = {}\n"
            "    for advice in (0, 1, 2, 3, 4, 8, 9, 20, 21):\n"
            "        try:\n            own.madvise(advice)\n            out[str(advice)] = 0\n"
            "        except OSError as exc:\n            out[str(advice)] = exc.errno\n"
            f"    rc = libc.syscall({NR['getrusage']}, 0, 0)\n"
            "    out['getrusage'] = ctypes.get_errno() if rc < 0 else rc\n"
            "    return out\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert result.status == "ok", result
    refused = {key for key, errno in result.value.items() if errno == 1}  # EPERM
    assert refused == {"1", "2", "9", "20", "21", "getrusage"}, result.value
    assert all(result.value[key] == 0 for key in ("0", "3", "4")), result.value  # (8: EINVAL on a shared map)


@pytest.mark.parametrize("name", sorted(n for n in UNNAMED if n in NR))
def test_a_call_the_table_does_not_name_is_denied(box: WarmSandbox, name: str) -> None:
    result = box.run_kernel_only(_raw(NR[name], UNNAMED[name]), "probe", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "seccomp"), (name, result.status, result.error_message)


@pytest.mark.parametrize("nr", [470, 511, 1000])
def test_a_number_beyond_every_known_call_is_denied(box: WarmSandbox, nr: int) -> None:
    result = box.run_kernel_only(_raw(nr, "0, 0, 0"), "probe", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "seccomp"), (nr, result.status, result.error_message)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the x32 and i386 entry points exist on x86-64")
@pytest.mark.parametrize("entry", ["x32", "i386"])
def test_the_other_abis_are_refused(box: WarmSandbox, entry: str) -> None:
    if entry == "x32":  # getpid through the x32 numbering (bit 30 set)
        code = _raw(0x40000000 | NR["getpid"], "")
    else:  # getpid (20) through int 0x80: mov eax, 20; int 0x80; ret -- in an executable page
        code = ("import ctypes\nimport mmap\n\n\ndef probe() -> int:\n"
                "    page = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)\n"
                "    page.write(bytes.fromhex('b814000000cd80c3'))\n"
                "    address = ctypes.addressof(ctypes.c_char.from_buffer(page))\n"
                "    return ctypes.CFUNCTYPE(ctypes.c_int)(address)()\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "seccomp"), (entry, result.status, result.error_message)


def test_the_allow_list_is_one_table_with_a_reason_per_entry() -> None:
    names = [rule.name for rule in seccomp.RULES]
    assert len(names) == len(set(names))
    assert all(rule.reason.strip() and rule.action in ("allow", "eperm", "check", "enosys") for rule in seccomp.RULES)
    for machine in ("x86_64", "aarch64"):
        allowed = set(seccomp.allowed_calls(machine))
        assert not allowed & set(seccomp.denied_calls(machine))
        # nothing that reaches another process, the kernel's objects or another namespace
        assert not allowed & {"socket", "socketpair", "execve", "ptrace", "process_vm_readv", "unshare", "setns",
                              "mount", "bpf", "io_uring_setup", "memfd_create", "timer_create", "chmod",
                              "fchmod", "fchown", "setxattr", "utimensat", "pidfd_open", "userfaultfd"}
    assert all(rule.name in seccomp.NUMBERS["x86_64"] for rule in seccomp.RULES)


@pytest.mark.parametrize("option", sorted(PRCTL_DENIED))
def test_prctl_of_parent_death_signal_and_dumpability_is_a_seccomp_kill(box: WarmSandbox, option: str) -> None:
    result = box.run_kernel_only(_raw(NR["prctl"], PRCTL_DENIED[option] + ", 0, 0, 0"), "probe", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "seccomp"), (option, result)


FORGED_CLAIMS = {
    # the signal RLIMIT_CPU sends, sent by the tool itself without using its CPU time
    "own_sigxcpu": "import os, signal\n\n\ndef probe() -> None:\n    os.kill(os.getpid(), signal.SIGXCPU)\n",
    "permission_error": "def probe() -> None:\n    raise PermissionError(13, 'Permission denied (Landlock)')\n",
    # the signal the CPU rlimit's hard limit sends, sent by the tool itself just short of its CPU
    # limit (CLAIM_LIMITS: 2 s), where the supervisor once took it for the kernel's
    "own_sigkill_near_cpu_limit": "import os, signal, time\n\n\ndef probe() -> None:\n"
                                  "    while time.process_time() < 1.7:\n        pass\n"
                                  "    os.kill(os.getpid(), signal.SIGKILL)\n",
    "forged_refusal": "import os\n\n\ndef probe() -> None:\n"
                      "    os.write(3, b'{\"kind\": \"refused\", \"event\": \"open\", \"detail\": \"x\"}\\n')\n"
                      "    raise SystemExit(3)\n",
}


CLAIM_LIMITS = {"own_sigkill_near_cpu_limit": Limits(timeout_s=60.0, cpu_s=2, memory_mb=1024)}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in CLAIM_LIMITS else n
                                  for n in sorted(FORGED_CLAIMS)])  # a claim near the CPU limit spins 1.7 s
def test_a_status_the_tool_claims_is_never_blocked_or_contained(box: WarmSandbox, name: str) -> None:
    result = box.run_kernel_only(FORGED_CLAIMS[name], "probe", {}, CLAIM_LIMITS.get(name, FAST))
    assert result.status != "blocked" and result.layer not in ("seccomp", "landlock", "audit-hook"), (name, result)
    assert "evidence" not in result.details, (name, result.details)


def test_the_control_channel_cannot_be_read_back_by_the_tool(box: WarmSandbox) -> None:
    code = ("import os\n\n\ndef probe() -> list:\n    seen = []\n"
            "    for path in ('/proc/self/fd/3', '/dev/fd/3'):\n"
            "        try:\n            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)\n"
            "        except OSError as exc:\n            seen.append(exc.errno)\n            continue\n"
            "        try:\n            seen.append(os.read(fd, 4096).decode())\n"
            "        except OSError as exc:\n            seen.append(exc.errno)\n"
            "    try:\n        seen.append(os.read(3, 4096).decode())\n"
            "    except OSError as exc:\n        seen.append(exc.errno)\n"
            "    return seen\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert result.status == "ok", result
    assert not any(isinstance(item, str) and item for item in result.value), result.value


@pytest.mark.slow
def test_the_clock_starts_at_the_hand_over_not_on_a_record(box: WarmSandbox) -> None:
    # the tool drains whatever it can reach on its descriptors, then spins: the time limit holds
    code = ("import os\n\n\ndef probe() -> None:\n    for fd in range(3, 64):\n"
            "        try:\n            os.set_blocking(fd, False)\n            os.read(fd, 1 << 20)\n"
            "        except OSError:\n            pass\n    while True:\n        pass\n")
    result = box.run_kernel_only(code, "probe", {}, Limits(timeout_s=2.0, cpu_s=30, memory_mb=1024))
    assert (result.status, result.layer) == ("timeout", "timeout"), result
    assert result.details["evidence"] == "the supervisor's clock"


def test_signals_to_itself_stay_allowed_but_a_forged_sigsys_is_refused(box: WarmSandbox) -> None:
    code = ("import os\nimport signal\n\n\ndef probe() -> str:\n"
            "    signal.signal(signal.SIGUSR1, lambda *_: None)\n"
            "    os.kill(os.getpid(), signal.SIGUSR1)\n"
            "    try:\n        os.kill(os.getpid(), signal.SIGSYS)\n"
            "    except PermissionError:\n        return 'refused'\n    return 'sent'\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert result.status == "ok" and result.value == "refused", result
    assert signal.SIGSYS  # the supervisor alone reports a seccomp kill


def test_a_thread_fails_softly_and_allowed_work_still_runs(box: WarmSandbox) -> None:
    code = ("import threading\nimport numpy as np\nimport pandas as pd\n\n\ndef probe() -> float:\n"
            "    try:\n        threading.Thread(target=print).start()\n    except RuntimeError:\n"
            "        pass\n"
            "    frame = pd.DataFrame({'a': np.arange(30.0)})\n"
            "    return float(frame['a'].rolling(5).mean().ewm(span=3).mean().iloc[-1])\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert result.status == "ok" and isinstance(result.value, float), result


@pytest.fixture
def outside() -> Iterator[Path]:
    # world-readable and -writable, not under /tmp (the worker's private /tmp would hide it):
    # only Landlock can refuse what the probes try here
    root = Path(tempfile.mkdtemp(prefix="finevo-landlock-", dir=default_base_dir()))
    root.chmod(0o777)
    (root / "secret.txt").write_text("LANDLOCK-SECRET\n")
    (root / "secret.txt").chmod(0o666)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("attempt", [
    "open(f'{root}/secret.txt').read()",
    "open(f'{root}/secret.txt', 'a').write('x')",
    "open(f'{root}/new.txt', 'w').write('x')",
    "os.listdir(root)",
    "os.symlink(f'{root}/secret.txt', 'link') or open('link').read()",
    "os.link(f'{root}/secret.txt', 'hard')",
    "os.rename(f'{root}/secret.txt', 'moved')",
    "os.mkdir(f'{root}/d')",
    "open('/dev/shm/finevo-landlock-test', 'w')",
    "open(sysconfig.get_paths()['purelib'] + '/finevo_landlock_test.pth', 'w')",
    "open(f'/proc/{os.getppid()}/environ', 'rb').read()",
])
def test_landlock_refuses_whatever_the_permissions_allow(box: WarmSandbox, outside: Path, attempt: str) -> None:
    code = (f"import os\nimport sysconfig\n\n\ndef probe(root: str) -> object:\n    return {attempt}\n")
    result = box.run_kernel_only(code, "probe", {"root": str(outside)}, FAST)
    # Landlock refuses with an errno the tool could also raise itself: a plain failure of the
    # tool with a hint, never "blocked" -- the files below are the evidence
    assert (result.status, result.layer, result.details.get("hint")) == ("exception", None, "landlock"), \
        (attempt, result.status, result.error_message)
    assert sorted(os.listdir(outside)) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "LANDLOCK-SECRET\n"
    assert not Path("/dev/shm/finevo-landlock-test").exists()


def test_the_working_directory_stays_fully_usable(box: WarmSandbox) -> None:
    code = ("import os\n\n\ndef probe() -> list:\n    os.mkdir('d')\n"
            "    with open('d/a.txt', 'w') as handle:\n        handle.write('x')\n"
            "    os.rename('d/a.txt', 'b.txt')\n    os.symlink('b.txt', 'c')\n"
            "    with open('c') as handle:\n        text = handle.read()\n"
            "    os.remove('b.txt')\n    return sorted(os.listdir('.')) + [text]\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert result.status == "ok" and result.value == ["c", "d", "x"], result


def test_filter_and_ruleset_shapes() -> None:
    with pytest.raises(OSError, match="no seccomp filter"):
        seccomp.build_filter(1, "sparc64")
    for machine in ("x86_64", "aarch64"):
        program = seccomp.build_filter(1234, machine)
        assert len(program) % 8 == 0 and len(program) // 8 < 4096
        checked = {"kill", "tgkill", "tkill", "rt_sigqueueinfo", "fork", "clone", "prlimit64", *seccomp._PID_FIRST}
        present = set(seccomp._ARCH[machine][1])
        assert (set(DENIED_CALLS) & present) - checked <= set(seccomp.denied_calls(machine)) | {"mq_open"}
    assert landlock.handled_fs(1) == (1 << 13) - 1
    assert landlock.handled_fs(7) & landlock.FS_REFER and landlock.handled_fs(7) & landlock.FS_IOCTL_DEV
    assert not landlock.workdir_rights(7) & landlock.FS_EXECUTE
    assert not any(os.stat(d).st_mode & 0o002 for d in landlock.mapped_library_dirs())


@pytest.mark.parametrize("machine", ["x86_64", "aarch64"])
def test_the_filter_assembled_once_is_the_filter_of_each_pid(machine: str) -> None:
    """A child installs a copy of the program assembled in the worker with its own pid written in:
    byte for byte the program assembled for that pid."""
    for allow_processes in (False, True):
        for action in (seccomp.RET_KILL_PROCESS, seccomp.RET_USER_NOTIF):
            for pid in (0, 1, 2, 3, 255, 256, 40000, 65537, 4194303, 2**31 - 1):
                assert seccomp.filter_for(pid, machine, allow_processes=allow_processes, deny_action=action) \
                    == seccomp.build_filter(pid, machine, allow_processes=allow_processes, deny_action=action), \
                    (pid, allow_processes, action)


@pytest.mark.parametrize("name", sorted(n for n in EPERM_CALLS if n in NR))
def test_extended_attributes_and_file_watches_are_refused(box: WarmSandbox, name: str) -> None:
    code = _raw(NR[name], EPERM_CALLS[name]).replace(
        "    return libc.syscall(", "    rc = libc.syscall(") + "    return -ctypes.get_errno() if rc < 0 else rc\n"
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert (result.status, result.value) == ("ok", -1), (name, result.status, result.value, result.error_message)


@pytest.mark.parametrize("target", ["0", "os.getpid()"])
def test_the_child_may_still_read_and_change_its_own_limits_and_scheduling(box: WarmSandbox, target: str) -> None:
    code = ("import os\nimport resource\n\n\ndef probe() -> int:\n"
            "    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            f"    resource.prlimit({target}, resource.RLIMIT_NOFILE, (soft - 1, hard))\n"
            f"    os.sched_setaffinity({target}, os.sched_getaffinity({target}))\n"
            f"    assert os.getpgid({target}) == os.getpid() and os.getsid({target}) > 0 and os.cpu_count()\n"
            f"    assert os.sched_getscheduler({target}) == os.SCHED_OTHER\n"
            f"    assert os.sched_getparam({target}).sched_priority == 0\n"
            "    return resource.getrlimit(resource.RLIMIT_NOFILE)[0] - soft\n")
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert (result.status, result.value) == ("ok", -1), (result.status, result.error_message)


def test_a_tool_filling_its_working_directory_is_stopped_by_the_disk_quota(box: WarmSandbox) -> None:
    code = ("def probe() -> int:\n"
            "    block = b'x' * (1 << 20)\n"
            "    for i in range(4096):\n"
            "        with open(f'f{i}.bin', 'wb') as fh:\n"
            "            for _ in range(4):\n"
            "                fh.write(block)\n"
            "    return i\n")
    result = box.run_kernel_only(code, "probe", {}, Limits(timeout_s=60.0, cpu_s=30, memory_mb=1024, disk_mb=64))
    _assert_quota_held(result)


def test_a_tool_creating_a_flood_of_empty_files_is_stopped(box: WarmSandbox) -> None:
    code = ("def probe() -> int:\n"
            "    for i in range(200000):\n"
            "        open(f'e{i}', 'wb').close()\n"
            "    return i\n")
    result = box.run_kernel_only(code, "probe", {}, Limits(timeout_s=60.0, cpu_s=30, memory_mb=1024))
    _assert_quota_held(result)


def _assert_quota_held(result: ExecutionResult) -> None:
    """A tmpfs of the run's size where the worker has a mount namespace (the kernel answers
    ENOSPC: bytes and inodes), else the supervisor's walk of the working directory."""
    notes = result.details.get("confinement", {}).get("notes", [])
    if "quota: tmpfs" in notes:
        assert (result.status, result.error_type) == ("exception", "OSError"), result
        assert "No space left on device" in (result.error_message or ""), result
    else:
        assert (result.status, result.layer) == ("killed", "disk-quota"), (result.status, result.layer)


def test_the_quota_is_the_kernels_where_a_mount_namespace_exists(box: WarmSandbox) -> None:
    # beyond PATH_MAX, where a walk by path could not follow
    code = ("import os\n\n\ndef probe() -> int:\n    depth = 0\n    while depth < 400:\n"
            "        os.mkdir('d' * 200)\n        os.chdir('d' * 200)\n        depth += 1\n"
            "    block = b'x' * (1 << 20)\n    for i in range(64):\n"
            "        with open(f'f{i}', 'wb') as fh:\n            for _ in range(4):\n                fh.write(block)\n"
            "    return depth\n")
    result = box.run_kernel_only(code, "probe", {}, Limits(timeout_s=60.0, cpu_s=30, memory_mb=1024, disk_mb=16))
    if "quota: tmpfs" not in result.details.get("confinement", {}).get("notes", []):
        pytest.skip("no mount namespace for a per-run tmpfs in this setting")
    assert (result.status, result.error_type) == ("exception", "OSError"), result


def test_the_walk_holds_the_quota_beyond_path_max_where_no_mount_namespace_exists() -> None:
    """The cold backend's working directory is no tmpfs of its own: the supervisor's walk is the quota,
    and it follows a tree nested past PATH_MAX (a walk by path would count none of it)."""
    from finevo.sandbox.backends import SubprocessSandbox

    # 32 MB against a quota of 16, then time for the walk to see them (it looks every 0.1 s)
    code = ("import os\nimport time\n\n\ndef probe() -> int:\n    for _ in range(18):\n"
            "        os.mkdir('d' * 250)\n        os.chdir('d' * 250)\n"
            "    block = b'x' * (1 << 20)\n    for i in range(8):\n"
            "        with open(f'f{i}', 'wb') as fh:\n            for _ in range(4):\n                fh.write(block)\n"
            "    time.sleep(20)\n    return i\n")
    with SubprocessSandbox(None, policy=False) as cold:
        result = cold.run_kernel_only(code, "probe", {}, Limits(timeout_s=60.0, cpu_s=30, memory_mb=1024, disk_mb=16))
    _assert_quota_held(result)


def test_workdir_usage_stops_counting_past_its_bound(tmp_path: Path) -> None:
    from finevo.sandbox.supervise import workdir_usage

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "big").write_bytes(b"x" * 300_000)
    (tmp_path / "link").symlink_to("/")
    used, entries = workdir_usage(str(tmp_path), stop_above=10**9)
    assert used >= 300_000 and entries == 3  # the symlink is counted, never followed
    assert workdir_usage(str(tmp_path), stop_above=10**9, max_entries=1)[1] == 2


#: Takes back each byte it writes to stdout, through a read end of its own (/proc/self/fd/1 reopened),
#: for a few seconds, then sleeps: a supervisor whose read came after a theft would wait in read() on an
#: empty pipe, its clock stopped, for as long as the tool lives.
STEALS_ITS_OUTPUT = """import os
import time


def probe() -> int:
    back = os.open("/proc/self/fd/1", os.O_RDONLY | os.O_NONBLOCK)
    start, taken = time.monotonic(), 0
    while time.monotonic() - start < 4.0:
        os.write(1, b"x")
        try:
            taken += len(os.read(back, 1))
        except BlockingIOError:
            pass
    time.sleep(60)
    return taken
"""


@pytest.mark.parametrize("backend", ["warm", "subprocess"])
def test_output_taken_back_from_the_pipe_never_stops_the_supervisors_clock(box: WarmSandbox, backend: str) -> None:
    """The tool races the supervisor for the bytes of its own stdout. The supervisor's reads never
    block, so its deadline holds: the run ends a timeout near its 6 s limit, not when the tool wakes a
    minute later (nor as a worker failure)."""
    from finevo.sandbox.backends import SubprocessSandbox

    limits = Limits(timeout_s=6.0, cpu_s=30, memory_mb=1024)
    started = time.monotonic()
    if backend == "warm":
        result = box.run_kernel_only(STEALS_ITS_OUTPUT, "probe", {}, limits)
    else:
        with SubprocessSandbox(None, policy=False) as cold:
            result = cold.run_kernel_only(STEALS_ITS_OUTPUT, "probe", {}, limits)
    took = time.monotonic() - started
    assert result.status == "timeout", (result.status, result.layer, result.error_message)
    assert took < 40.0, took  # the tool sleeps 60 s after its 4 s of racing


def test_workdir_usage_counts_a_file_of_many_names_once(tmp_path: Path) -> None:
    """Hard links are names of one file: forty of them to 1 MB are 1 MB used, not 41 (a tool could
    otherwise earn a disk-quota kill, evidence of the supervisor's own, with 1 MB)."""
    from finevo.sandbox.supervise import workdir_usage

    (tmp_path / "f").write_bytes(b"x" * (1 << 20))
    for i in range(40):
        os.link(tmp_path / "f", tmp_path / f"l{i}")
    used, entries = workdir_usage(str(tmp_path), stop_above=10**9)
    assert (1 << 20) <= used < 2 * (1 << 20) and entries == 41


def test_a_directory_made_without_permissions_is_walked_by_its_owner() -> None:
    """``mkdir(name, 0)`` makes a directory even its owner cannot list. Where the supervisor is not root
    (the image) it shares the tool's uid: it opens such a directory to itself and counts what is in
    it, rather than report the quota passed. Run here as an unprivileged uid in a fork."""
    from finevo.sandbox.supervise import workdir_usage

    if os.geteuid() != 0:
        pytest.skip("needs root to become another uid for the walk")
    top = Path(tempfile.mkdtemp(prefix="finevo-walk-"))  # under the shared temp dir: the other uid reaches it
    os.chown(top, 65534, 65534)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: uid 65534, no capability
        code = 1
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            (top / "open").mkdir()
            (top / "open" / "data").write_bytes(b"x" * (1 << 20))
            os.mkdir(top / "closed", 0)
            used, entries = workdir_usage(str(top), stop_above=10**9)
            os.write(write, f"{used} {entries}".encode())
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    answer = os.read(read, 100).decode()
    os.close(read)
    _, status = os.waitpid(pid, 0)
    shutil.rmtree(top)
    assert os.waitstatus_to_exitcode(status) == 0 and answer, answer
    used, entries = map(int, answer.split())
    assert entries == 3 and (1 << 20) <= used < 2 << 20, (used, entries)  # never "past the bound"


def test_names_and_depth_the_kernel_holds_are_no_disk_quota_kill(box: WarmSandbox) -> None:
    """7 MB behind 12 hard links (91 MB counted by name against a quota of 64), then 130 empty
    directories nested (past the walk's depth): far under the run's tmpfs. The supervisor's walk once
    counted each link's blocks again, and walked even where the run's tmpfs holds the quota (it looked
    for the mount before the child made it), so both were reported as killed by the disk quota, which
    they never reached."""
    code = ("import os\nimport time\n\n\ndef probe() -> int:\n"
            "    with open('f', 'wb') as fh:\n        fh.write(b'x' * (7 << 20))\n"
            "    for i in range(12):\n        os.link('f', f'l{i}')\n"
            "    time.sleep(1)\n"
            "    for _ in range(130):\n        os.mkdir('d')\n        os.chdir('d')\n"
            "    time.sleep(1)\n    return len(os.listdir('.'))\n")
    result = box.run_kernel_only(code, "probe", {}, Limits(timeout_s=60.0, cpu_s=30, memory_mb=1024, disk_mb=64))
    if "quota: tmpfs" in result.details.get("confinement", {}).get("notes", []):
        assert (result.status, result.value) == ("ok", 0), (result.status, result.layer, result.error_message)
    else:  # the walk is the quota: the links count once; a tree past its depth is what it cannot see
        assert result.layer == "disk-quota" and result.status == "killed", result


def _nested(top: Path, names: list[str]) -> int:
    """Directories ``names`` nested under ``top`` through descriptors (a path past PATH_MAX cannot be
    opened whole); the descriptor of the innermost, to write in."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for name in names:
        os.mkdir(name, dir_fd=fd)
        inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = inner
    return fd


def test_workdir_usage_walks_a_tree_nested_past_path_max(tmp_path: Path) -> None:
    """Files 18 directories of 250 characters deep (4,518 characters, past PATH_MAX) count: a walk by
    path cannot open that directory and would count none of them, and the quota with it."""
    from finevo.sandbox.supervise import workdir_usage

    fd = _nested(tmp_path, ["d" * 250] * 18)
    try:
        for i in range(4):
            out = os.open(f"f{i}", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd)
            os.write(out, b"x" * 1_000_000)
            os.close(out)
    finally:
        os.close(fd)
    used, entries = workdir_usage(str(tmp_path), stop_above=10**10)
    assert used >= 4_000_000 and entries == 18 + 4
    assert workdir_usage(str(tmp_path), stop_above=1_000_000)[0] > 1_000_000  # past the bound: it stops


def test_workdir_usage_takes_what_it_cannot_walk_for_a_flood(tmp_path: Path) -> None:
    """Directories nested deeper than the walk holds descriptors for count as past the entry bound."""
    from finevo.sandbox.supervise import MAX_WORKDIR_DEPTH, workdir_usage

    os.close(_nested(tmp_path, ["a"] * MAX_WORKDIR_DEPTH))
    assert workdir_usage(str(tmp_path), stop_above=10**10, max_entries=10**6)[1] == MAX_WORKDIR_DEPTH
    os.close(_nested(tmp_path, ["b"] * (MAX_WORKDIR_DEPTH + 1)))
    assert workdir_usage(str(tmp_path), stop_above=10**10, max_entries=10**6)[1] > 10**6
