"""The containment self-test: before any tool is judged, prove that the kernel contains tool code.

Probe tools run with the static policy **and** the audit hook off
(:meth:`~finevo.sandbox.backends._BaseSandbox.run_kernel_only`), each trying one forbidden thing.
Whether the attempt failed is decided from outside the child wherever a trace would exist (the
canary's secret in anything the run returned, a file that appeared, a connection waiting on the
listener); which layer stopped it is what the supervisor observed (a seccomp kill from the wait
status, a Landlock refusal). Every canary is made so that only a kernel layer can refuse it: the
secret file is world-readable, the write target world-writable, ``/dev/shm`` is shared.

A probe is *contained* when the outside check holds and a kernel layer is named; the self-test is
``ok`` when every probe is contained. One probe per class of the design: a call no table names
(the allow-list), the times of a file the gate owns (ownership), the gate's own oracle (read
roots), the previous run's value in memory (a pristine fork: credited to the zygote), an error
the tool raises itself (verdicts from evidence) and a tool that drains the control channel and
spins (the supervisor's clock) -- the last two credited to the supervisor. It costs one warm
execution per probe (about a second in all).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import socket
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Protocol

from finevo.sandbox.api import ExecutionResult, Limits

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

#: The layers a probe's refusal can be credited to (the kernel's, never the policy's or the hook's).
KERNEL_LAYERS = frozenset({"landlock", "seccomp", "netns", "pidns", "mountns", "ipcns", "uid"})
PROBE_LIMITS = Limits(timeout_s=10.0, cpu_s=5, memory_mb=1024)


class KernelOnlySandbox(Protocol):
    def run_kernel_only(self, code: str, entry: str | None, args: JSONObject | None = None,
                        limits: Limits | None = None) -> ExecutionResult: ...


@dataclass
class ProbeResult:
    name: str
    contained: bool
    layer: str | None
    detail: str


@dataclass
class SelfTestReport:
    enabled: bool
    ok: bool | None
    duration_s: float
    reason: str
    probes: list[ProbeResult] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @property
    def escaped(self) -> list[ProbeResult]:
        return [p for p in self.probes if not (p.contained and p.layer)]


@dataclass
class _Scene:
    """The canaries of one self-test, all outside the sandbox."""

    root: str
    canary: str
    secret: str
    write_target: str
    shm_target: str
    listener: socket.socket
    gate_pid: int
    canary_mtime: int = 0
    planted: str = ""

    @classmethod
    def create(cls, base_dir: str | None) -> _Scene:
        root = tempfile.mkdtemp(prefix="finevo-selftest-", dir=base_dir or default_base_dir())
        os.chmod(root, 0o755)
        secret = f"FINEVO-SELFTEST-{secrets.token_hex(12)}"
        canary = os.path.join(root, "canary.txt")
        with open(canary, "w", encoding="ascii") as handle:
            handle.write(secret + "\n")
        os.chmod(canary, 0o644)  # readable by anyone: only Landlock can refuse the read
        drop = os.path.join(root, "drop")
        os.mkdir(drop)
        os.chmod(drop, 0o777)  # writable by anyone: only Landlock can refuse the write
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        tag = secrets.token_hex(6)
        return cls(root=root, canary=canary, secret=secret, write_target=os.path.join(drop, "out.txt"),
                   shm_target=f"/dev/shm/finevo-selftest-{tag}", listener=listener, gate_pid=os.getpid(),
                   canary_mtime=os.stat(canary).st_mtime_ns)

    def contacted(self) -> bool:
        """Whether anything connected to the listener (a pending connection waits in its backlog)."""
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, OSError):
            return False
        conn.close()
        return True

    def close(self) -> None:
        self.listener.close()
        with contextlib.suppress(OSError):
            os.unlink(self.shm_target)
        shutil.rmtree(self.root, ignore_errors=True)


def default_base_dir() -> str:
    """Where the canaries go by default: /var/tmp, which a warm worker does not replace with its
    private tmpfs (canaries in /tmp would be invisible to the child, proving nothing about Landlock)."""
    shared = "/var/tmp"
    return shared if os.path.isdir(shared) and os.access(shared, os.W_OK) else tempfile.gettempdir()


@dataclass(frozen=True)
class _Probe:
    name: str
    code: str
    args: Callable[[_Scene], JSONObject]
    #: The outside check: a reason the attempt succeeded, or None when nothing escaped.
    escaped: Callable[[_Scene, ExecutionResult], str | None]
    limits: Limits = PROBE_LIMITS
    #: Run a tool returning a fresh token (built from its reversed argument) just before the probe.
    plant: bool = False
    #: For a probe no kernel layer has anything to refuse in: the part of the design that holds when
    #: its outside check does (``supervisor``: the verdict or the clock is the supervisor's own;
    #: ``zygote``: the memory searched never held the value), credited as its layer.
    credit: str | None = None


def _texts(result: ExecutionResult) -> str:
    return " ".join(str(x) for x in (result.value, result.stdout, result.stderr, result.error_message,
                                     result.traceback))


def _leaked(scene: _Scene, result: ExecutionResult) -> str | None:
    return "the canary's secret came back" if scene.secret in _texts(result) else None


def _ran(_scene: _Scene, result: ExecutionResult) -> str | None:
    return "the call returned normally" if result.status == "ok" else None


PROBES: tuple[_Probe, ...] = (
    _Probe("read_outside", "def probe(path):\n    with open(path) as handle:\n        return handle.read()\n",
           lambda s: {"path": s.canary}, _leaked),
    _Probe("write_outside",
           "def probe(path):\n    with open(path, 'w') as handle:\n        handle.write('escaped')\n",
           lambda s: {"path": s.write_target},
           lambda s, _r: "the file was written" if os.path.lexists(s.write_target) else None),
    _Probe("connect_local",
           "import socket\n\ndef probe(port):\n    socket.create_connection(('127.0.0.1', port), timeout=2)\n",
           lambda s: {"port": s.listener.getsockname()[1]},
           lambda s, r: "the listener was contacted" if s.contacted() else _ran(s, r)),
    _Probe("signal_parent", "import os, signal\n\ndef probe(pid):\n    os.kill(pid, signal.SIGCONT)\n",
           lambda s: {"pid": s.gate_pid}, _ran),
    _Probe("exec_shell", "import os\n\ndef probe():\n    os.execv('/bin/sh', ['sh', '-c', 'exit 0'])\n",
           lambda s: {}, lambda _s, r: None if r.status == "blocked" else f"ended {r.status}, not refused"),
    _Probe("persist_dev_shm",
           "def probe(path):\n    with open(path, 'w') as handle:\n        handle.write('state')\n",
           lambda s: {"path": s.shm_target},
           lambda s, r: "the file was left in /dev/shm" if os.path.lexists(s.shm_target) else _ran(s, r)),
    _Probe("read_gate_environ",
           "def probe(pid):\n    with open(f'/proc/{pid}/environ', 'rb') as handle:\n"
           "        return len(handle.read())\n",
           lambda s: {"pid": s.gate_pid}, _ran),
    _Probe("leave_process_group", "import os\n\ndef probe():\n    os.setpgid(0, 0)\n",
           lambda s: {}, _ran),
    # one probe per class of the kernel layers' design
    # The allow-list: a call no table names is denied: a kernel's future call (number 1000), then
    # getpriority, which exists everywhere. Inside a container the first is refused (ENOSYS) by the
    # engine's own filter, whose answer takes precedence over the supervisor's notification; the
    # second the engine's default profile allows, so only the allow-list can refuse it.
    _Probe("unnamed_call",
           "import ctypes\n\ndef probe():\n    libc = ctypes.CDLL(None, use_errno=True)\n"
           "    return [libc.syscall(1000, 0, 0, 0), libc.getpriority(0, 0)]\n",
           lambda s: {}, lambda _s, r: _recorded_denial(r)),
    _Probe("own_file_times",  # ownership: times of a file the gate owns, which Landlock does not govern
           "import os\n\ndef probe(path):\n    os.utime(path, (0, 0))\n",
           lambda s: {"path": s.canary},
           lambda s, r: "the canary's times changed" if os.stat(s.canary).st_mtime_ns != s.canary_mtime
           else _ran(s, r)),
    _Probe("read_gate_package",  # read roots: the gate's own oracle, wherever it is installed
           "def probe(path):\n    with open(path) as handle:\n        return handle.read()\n",
           lambda s: {"path": _gate_file()},
           lambda s, r: "the gate's own code came back" if _gate_text() and _gate_text() in _texts(r) else None),
    _Probe("earlier_value",  # a pristine fork: nothing of the previous probe's run is in memory
           "import gc\n\ndef probe(prefix):\n    hits = []\n    for obj in gc.get_objects():\n"
           "        values = obj.values() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()\n"
           "        hits += [v for v in values if isinstance(v, str) and v.startswith(prefix)\n"
           "                 and len(v) > len(prefix)]\n"
           "    return hits[:3]\n",
           lambda s: {"prefix": "FINEVO-PLANT-"},
           lambda s, r: "the previous run's value was in memory" if s.planted and s.planted in _texts(r) else None,
           plant=True, credit="zygote"),
    _Probe("claimed_refusal",  # verdicts from evidence: an error the tool raises itself is not a block
           "def probe():\n    raise PermissionError(13, 'Permission denied: contained by Landlock')\n",
           lambda s: {}, lambda _s, r: f"taken as {r.status} by {r.layer}" if r.status == "blocked" else None,
           credit="supervisor"),
    _Probe("drain_clock",  # the clock is the supervisor's: swallowing the control records stops nothing
           "import os\n\ndef probe():\n    for path in ('/proc/self/fd/3', '/dev/fd/3'):\n        try:\n"
           "            os.read(os.open(path, os.O_RDONLY | os.O_NONBLOCK), 1 << 20)\n"
           "        except OSError:\n            pass\n    while True:\n        pass\n",
           lambda s: {}, lambda _s, r: None if r.status == "timeout" else f"ended {r.status}, not stopped by the clock",
           Limits(timeout_s=0.3, cpu_s=5, memory_mb=1024), credit="supervisor"),
)
_PLANT = "def plant(reversed):\n    value = reversed[::-1]\n    print(value)\n    return value\n"


def _recorded_denial(result: ExecutionResult) -> str | None:
    if result.status == "blocked" and result.layer == "seccomp" and result.details.get("evidence"):
        return None
    return f"ended {result.status}, not a denial the supervisor recorded"


def _gate_file() -> str:
    """A file of the gate's own package (its oracle), wherever it is installed; or a path that
    cannot exist when the gate is not installed here."""
    import importlib.util

    spec = importlib.util.find_spec("runner.judging.oracle") if importlib.util.find_spec("runner") else None
    return spec.origin if spec is not None and spec.origin else "/nonexistent-finevo-gate/oracle.py"


def _gate_text() -> str:
    try:
        with open(_gate_file(), encoding="utf-8") as handle:
            return handle.read(400)
    except OSError:
        return ""


def run_selftest(sandbox: KernelOnlySandbox,
                 base_dir: str | os.PathLike[str] | None = None) -> SelfTestReport:
    """Run every probe, with the canaries in a fresh directory under ``base_dir`` (default
    :func:`default_base_dir`); never raises (a probe that cannot run is reported as not contained)."""
    started = time.monotonic()
    try:
        scene = _Scene.create(os.fspath(base_dir) if base_dir is not None else None)
    except OSError as exc:
        return SelfTestReport(enabled=True, ok=False, duration_s=round(time.monotonic() - started, 3),
                              reason=f"could not set up the canaries: {exc}")
    results: list[ProbeResult] = []
    try:
        for probe in PROBES:
            try:
                if probe.plant:
                    scene.planted = f"FINEVO-PLANT-{secrets.token_hex(12)}"
                    sandbox.run_kernel_only(_PLANT, "plant", {"reversed": scene.planted[::-1]}, PROBE_LIMITS)
                result = sandbox.run_kernel_only(probe.code, "probe", probe.args(scene), probe.limits)
            except Exception as exc:  # the sandbox itself failed: not contained
                results.append(ProbeResult(probe.name, False, None, f"the probe could not run: {exc}"))
                continue
            escaped = probe.escaped(scene, result)
            # the probes are the gate's own code: a Landlock errno they raise is the kernel's answer
            # (for a tool's run the same errno is only a hint, never a verdict)
            hint = result.details.get("hint")
            layer = result.layer if result.layer in KERNEL_LAYERS else (hint if hint in KERNEL_LAYERS else None)
            layer = probe.credit or layer
            if layer is None and result.error_type == "FileNotFoundError" and scene.root.startswith("/tmp/"):
                layer = "mountns"  # the canaries sit in the host's /tmp, hidden by the worker's own
            detail = escaped or f"{result.status}: {(result.error_message or '').strip()[:160]}"
            # the same words for two identical runs: no random directory name, no process id
            detail = detail.replace(scene.root, "<canaries>").replace(scene.shm_target, "/dev/shm/<probe>")
            detail = detail.replace(f"/proc/{scene.gate_pid}/", "/proc/<gate>/")
            results.append(ProbeResult(probe.name, escaped is None, layer if escaped is None else None, detail))
    finally:
        scene.close()
    bad = [p.name for p in results if not (p.contained and p.layer)]
    reason = ("every forbidden attempt was refused by a kernel layer" if not bad else
              "not contained by a kernel layer: " + ", ".join(bad))
    return SelfTestReport(enabled=True, ok=not bad, duration_s=round(time.monotonic() - started, 3),
                          reason=reason, probes=results)
