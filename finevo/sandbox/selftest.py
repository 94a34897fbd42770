"""The containment self-test: before any tool is judged, prove that the kernel contains tool code.

Probe tools run with the static policy **and** the audit hook off
(:meth:`~finevo.sandbox.backends._BaseSandbox.run_kernel_only`), each trying one forbidden thing.
Whether the attempt failed is decided from outside the child wherever a trace would exist (the
canary's secret in anything the run returned, a file that appeared, a connection waiting on the
listener); which layer stopped it is what the supervisor observed (a seccomp kill from the wait
status, a Landlock refusal). Every canary is made so that only a kernel layer can refuse it: the
secret file is world-readable, the write target world-writable, ``/dev/shm`` is shared.

A probe is *contained* when the outside check holds and a kernel layer is named; the self-test is
``ok`` when every probe is contained. It costs one warm execution per probe (~0.1 s in all).
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
from typing import Any, Protocol

from finevo.sandbox.api import ExecutionResult, Limits

#: The layers a probe's refusal can be credited to (the kernel's, never the policy's or the hook's).
KERNEL_LAYERS = frozenset({"landlock", "seccomp", "netns", "pidns", "mountns", "ipcns", "uid"})
PROBE_LIMITS = Limits(timeout_s=10.0, cpu_s=5, memory_mb=1024)


class KernelOnlySandbox(Protocol):
    def run_kernel_only(self, code: str, entry: str | None, args: dict[str, Any] | None = None,
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

    def to_dict(self) -> dict[str, Any]:
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
                   shm_target=f"/dev/shm/finevo-selftest-{tag}", listener=listener, gate_pid=os.getpid())

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
    args: Callable[[_Scene], dict[str, Any]]
    #: The outside check: a reason the attempt succeeded, or None when nothing escaped.
    escaped: Callable[[_Scene, ExecutionResult], str | None]


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
)


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
                result = sandbox.run_kernel_only(probe.code, "probe", probe.args(scene), PROBE_LIMITS)
            except Exception as exc:  # the sandbox itself failed: not contained
                results.append(ProbeResult(probe.name, False, None, f"the probe could not run: {exc}"))
                continue
            escaped = probe.escaped(scene, result)
            layer = result.layer if result.layer in KERNEL_LAYERS else None
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
