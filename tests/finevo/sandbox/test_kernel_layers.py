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
from collections.abc import Iterator
from pathlib import Path

import pytest

from finevo.sandbox import Limits, confine, create_sandbox, landlock, seccomp
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
}
#: name -> arguments of a raw call answered EPERM (reads of what Landlock hides, file watches)
EPERM_CALLS: dict[str, str] = {
    "getxattr": "b'/nonexistent-finevo/x', b'user.x', 0, 0", "listxattr": "b'/nonexistent-finevo/x', 0, 0",
    "inotify_init1": "0",
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
    assert result.details["signal"] == "SIGSYS"


@pytest.mark.parametrize("option", sorted(PRCTL_DENIED))
def test_prctl_of_parent_death_signal_and_dumpability_is_a_seccomp_kill(box: WarmSandbox, option: str) -> None:
    result = box.run_kernel_only(_raw(NR["prctl"], PRCTL_DENIED[option] + ", 0, 0, 0"), "probe", {}, FAST)
    assert (result.status, result.layer) == ("blocked", "seccomp"), (option, result)


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
    assert (result.status, result.layer) == ("blocked", "landlock"), (attempt, result.status, result.error_message)
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
        checked = {"kill", "tgkill", "tkill", "rt_sigqueueinfo", "fork", "clone", *seccomp._PID_FIRST}
        present = set(seccomp._ARCH[machine][1])
        assert (set(DENIED_CALLS) & present) - checked <= set(seccomp.denied_calls(machine)) | {"mq_open"}
    assert landlock.handled_fs(1) == (1 << 13) - 1
    assert landlock.handled_fs(7) & landlock.FS_REFER and landlock.handled_fs(7) & landlock.FS_IOCTL_DEV
    assert not landlock.workdir_rights(7) & landlock.FS_EXECUTE
    assert not any(os.stat(d).st_mode & 0o002 for d in landlock.mapped_library_dirs())


@pytest.mark.parametrize("name", sorted(n for n in EPERM_CALLS if n in NR))
def test_extended_attributes_and_file_watches_are_refused(box: WarmSandbox, name: str) -> None:
    code = _raw(NR[name], EPERM_CALLS[name]).replace(
        "    return libc.syscall(", "    rc = libc.syscall(") + "    return -ctypes.get_errno() if rc < 0 else rc\n"
    result = box.run_kernel_only(code, "probe", {}, FAST)
    assert (result.status, result.value) == ("ok", -1), (name, result.status, result.value, result.error_message)


@pytest.mark.parametrize("target", ["0", "os.getpid()"])
def test_the_child_may_still_change_its_own_limits_and_scheduling(box: WarmSandbox, target: str) -> None:
    code = ("import os\nimport resource\n\n\ndef probe() -> int:\n"
            "    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n"
            f"    resource.prlimit({target}, resource.RLIMIT_NOFILE, (soft - 1, hard))\n"
            f"    os.sched_setaffinity({target}, os.sched_getaffinity(0))\n"
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
    assert (result.status, result.layer) == ("killed", "disk-quota"), (result.status, result.layer,
                                                                         result.error_message)


def test_a_tool_creating_a_flood_of_empty_files_is_stopped(box: WarmSandbox) -> None:
    code = ("def probe() -> int:\n"
            "    for i in range(200000):\n"
            "        open(f'e{i}', 'wb').close()\n"
            "    return i\n")
    result = box.run_kernel_only(code, "probe", {}, Limits(timeout_s=60.0, cpu_s=30, memory_mb=1024))
    assert (result.status, result.layer) == ("killed", "disk-quota"), (result.status, result.layer)


def test_workdir_usage_stops_counting_past_its_bound(tmp_path: Path) -> None:
    from finevo.sandbox.supervise import workdir_usage

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "big").write_bytes(b"x" * 300_000)
    (tmp_path / "link").symlink_to("/")
    used, entries = workdir_usage(str(tmp_path), stop_above=10**9)
    assert used >= 300_000 and entries == 3  # the symlink is counted, never followed
    assert workdir_usage(str(tmp_path), stop_above=10**9, max_entries=1)[1] == 2
