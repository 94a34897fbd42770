"""The two sandbox backends behind :class:`~finevo.sandbox.api.Sandbox`.

* :class:`WarmSandbox` (default): one long-lived worker process with numpy, pandas, the snapshot
  and the replay shim loaded; it forks a fresh limited child per execution (~ms instead of the
  ~0.5 s of starting Python and importing pandas). Restarted if it dies; closed by :meth:`close`,
  by ``with``, or at interpreter exit.
* :class:`SubprocessSandbox`: a cold ``python -m finevo.sandbox.child`` per execution with the
  same confinement -- the fallback and the reference point.

Both check the code with the static policy first (a rejection never starts a process), are safe
to call from several threads (the warm worker serves one request at a time), and leave no
process, zombie or temporary directory behind.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from finevo.errors import SandboxUnavailable
from finevo.sandbox import confine, guard, protocol, workspace
from finevo.sandbox.api import ExecutionResult, Limits
from finevo.sandbox.preload import BLAS_ENV
from finevo.sandbox.supervise import SANDBOX_FAILURE, WatchedChild, classify, socket_pair, supervise
from finevo.vocabulary import Isolation, SandboxBackend, words

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

#: Seconds the parent waits for the warm worker beyond the tool's own wall-clock limit.
WORKER_GRACE_S = 30.0
WORKER_START_TIMEOUT_S = 180.0
_PROBE_CODE = "def probe() -> int:\n    return 1\n"


def _interpreter_paths() -> list[str]:
    """Files a sandbox child may still need to read after dropping root (lazy imports)."""
    import sysconfig

    import finevo

    return [os.path.realpath(sys.executable), os.path.join(os.path.dirname(os.__file__), "os.py"),
            sysconfig.get_paths()["purelib"], os.path.join(os.path.dirname(finevo.__file__), "__init__.py")]


def _python_command(module: str) -> list[str]:
    # -I: ignore PYTHON* variables and the user site; -B: write no bytecode anywhere.
    return [sys.executable, "-I", "-B", "-m", module]


#: Source texts the static policy allowed, most recently used last (see :func:`_policy_gate`).
_ALLOWED: collections.OrderedDict[str, None] = collections.OrderedDict()
_ALLOWED_MAX = 256
_allowed_lock = threading.Lock()


def _policy_gate(code: str) -> ExecutionResult | None:
    """Run the static policy; a blocked result, or None when the code may run.

    The policy is a pure function of the source text, and the gate runs one tool many times
    (the agent's checks, the judge's re-runs, probes and hidden worlds): a text the policy
    allowed is remembered (by the exact text, :data:`_ALLOWED_MAX` of them), so it is parsed
    and walked once. A refusal is never remembered: it is checked again every time (an
    analysis failure, e.g. out of memory, must not stick to a text)."""
    from finevo.policy import check

    with _allowed_lock:
        if code in _ALLOWED:
            _ALLOWED.move_to_end(code)
            return None
    report = check(code)
    if report.allowed:
        with _allowed_lock:
            _ALLOWED[code] = None
            while len(_ALLOWED) > _ALLOWED_MAX:
                _ALLOWED.popitem(last=False)
        return None
    first = report.first
    assert first is not None  # a refused report always names its first violation
    return ExecutionResult(status="blocked", layer="policy", rule=first.rule, line=first.line,
                           col=first.col, error_type="PolicyViolation", error_message=first.message,
                           details={"policy": report.to_dict()})


class _BaseSandbox:
    backend = "base"

    def __init__(self, snapshot_dir: str | os.PathLike[str] | None = None, *, policy: bool = True,
                 extra_read_roots: Sequence[str] = ()) -> None:
        self.snapshot_dir = os.path.abspath(os.fspath(snapshot_dir)) if snapshot_dir is not None else None
        self.policy = policy
        if policy:
            _policy_gate("")  # fail now, not at the first tool, if the policy cannot be loaded
        # The host holds the LLM key in its environment; a non-root run's children share its uid,
        # so its /proc/<pid>/environ and memory must not be readable by them.
        self.host_non_dumpable = confine.make_non_dumpable()
        root = os.geteuid() == 0
        extra = ([os.path.realpath(self.snapshot_dir)] if self.snapshot_dir else []) + list(extra_read_roots)
        self._settings: JSONObject = {
            "read_roots": guard.default_read_roots(extra),
            "keep_dac_read": root and confine.needs_dac_read(_interpreter_paths()),
            "drop_uid": root,
            "tool_imports": sorted(guard.TOOL_IMPORTS),
        }
        self._layers: dict[str, bool] | None = None
        #: What the layer probe's child reported about the kernel layers (filled by :meth:`layers`).
        self.kernel_info: JSONObject = {}
        self._closed = False

    # -- the interface ---------------------------------------------------------------------
    def run(self, code: str, entry: str | None, args: JSONObject | None = None,
            limits: Limits | None = None, *, snapshot_dir: str | os.PathLike[str] | None = None) -> ExecutionResult:
        """Run ``entry(**args)`` of ``code``; ``snapshot_dir`` replaces the sandbox's snapshot for this run."""
        if self._closed:
            raise SandboxUnavailable(f"the {self.backend} sandbox is closed")
        limits = limits or Limits()
        args = dict(args or {})
        try:
            json.dumps(args, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"sandbox arguments must be JSON-serialisable: {exc}") from None
        if self.policy:
            blocked = _policy_gate(code)
            if blocked is not None:
                return blocked
        request: JSONObject = {"code": code, "entry": entry, "args": args, "limits": asdict(limits)}
        if snapshot_dir is not None:
            request["snapshot_override"] = os.path.abspath(os.fspath(snapshot_dir))
        started = time.monotonic()
        result = self._execute_started(request, limits)
        result.details["wall_s"] = round(time.monotonic() - started, 6)
        result.details["backend"] = self.backend
        return result

    def run_kernel_only(self, code: str, entry: str | None, args: JSONObject | None = None,
                        limits: Limits | None = None, *,
                        snapshot_dir: str | os.PathLike[str] | None = None) -> ExecutionResult:
        """Run with the static policy *and* the audit hook off: only the kernel layers (Landlock,
        seccomp, namespaces, uid, rlimits) contain the code. For the containment self-test and
        ``sandbox check --no-policy``; the gate never judges a tool this way."""
        limits = limits or Limits()
        request: JSONObject = {"code": code, "entry": entry, "args": dict(args or {}),
                                   "limits": asdict(limits), "audit_hook": False}
        if snapshot_dir is not None:
            request["snapshot_override"] = os.path.abspath(os.fspath(snapshot_dir))
        started = time.monotonic()
        result = self._execute_started(request, limits)
        result.details["wall_s"] = round(time.monotonic() - started, 6)
        result.details["backend"] = self.backend
        result.details["policy"] = "off"
        return result

    def _execute_started(self, request: JSONObject, limits: Limits) -> ExecutionResult:
        """:meth:`_execute`, where a run the sandbox itself failed (``details["sandbox_failure"]``:
        its child could not be confined as it must, e.g. the seccomp listener's hand-over failed;
        decided from evidence sent before any tool code) is tried once more on a fresh child and
        then raises :class:`SandboxUnavailable`, an external error: never a result of the tool's."""
        result = self._execute(request, limits)
        if not result.details.get(SANDBOX_FAILURE):
            return result
        first = result.error_message
        result = self._execute(request, limits)
        if not result.details.get(SANDBOX_FAILURE):
            return result
        raise SandboxUnavailable(f"the {self.backend} sandbox failed twice before the tool ran: {first}; "
                                 f"then: {result.error_message}")

    def layers(self) -> dict[str, bool]:
        """Which containment layers are active here (probed once with a trivial tool).

        The kernel layers are read from what a real child reported after confining itself, never
        assumed from what the host could offer."""
        if self._layers is None:
            probe = self._execute_started({"code": _PROBE_CODE, "entry": "probe", "args": {},
                                           "limits": asdict(Limits(timeout_s=60.0))}, Limits(timeout_s=60.0))
            seen = probe.details.get("confinement", {}) if probe.ok else {}
            land = seen.get("landlock") or {}
            filt = seen.get("seccomp") or {}
            self.kernel_info = {"landlock_abi": int(land.get("abi") or 0),
                                "landlock_error": land.get("error"), "seccomp_error": filt.get("error"),
                                "seccomp_instructions": filt.get("instructions"), "uid": seen.get("uid")}
            self._layers = {
                "policy": self.policy,
                "landlock": bool(land.get("enforced")),
                "landlock_tcp": bool(land.get("tcp")),
                "landlock_scopes": bool(land.get("scoped_signals")),
                "seccomp": bool(filt.get("enforced")),
                "pidns": False,
                "mountns": bool(self._worker_namespaces().get("mountns")),
                "netns": bool(seen.get("netns")) or bool(self._worker_netns()),
                "ipcns": bool(self._worker_namespaces().get("ipcns")),
                "private_tmp": bool(self._worker_namespaces().get("private_tmp")),
                "uid": seen.get("uid") is not None and seen.get("uid") != 0,
                "caps_dropped": bool(seen.get("caps_dropped")),
                "rlimits": bool(seen),
                "rlimit_nproc": bool(seen.get("nproc_limited")),
                "audit_hook": bool(seen.get("audit_hook")),
                "process_group": True,
                "empty_env": True,
                "private_tmpdir": True,
                "no_new_privs": bool(seen.get("no_new_privs")),
                "non_dumpable": bool(seen.get("non_dumpable")),
                "host_non_dumpable": self.host_non_dumpable and self._worker_non_dumpable(),
            }
        return dict(self._layers)

    def isolation(self) -> tuple[str, list[str]]:
        """``("kernel", [])`` when Landlock and seccomp both confine every child, else
        ``("weak", [what is missing, and how to get it])``."""
        layers = self.layers()
        missing = []
        if not layers["landlock"]:
            missing.append("landlock (needs Linux >= 5.13 with Landlock enabled: lsm=...,landlock "
                           "on the kernel command line; in Docker it is available by default)")
        if not layers["seccomp"]:
            missing.append("seccomp (needs a Linux kernel built with CONFIG_SECCOMP_FILTER, on x86-64 "
                           "or aarch64)")
        return (Isolation.KERNEL.value if not missing else Isolation.WEAK.value), missing

    def close(self) -> None:
        self._closed = True

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called (then every run raises :class:`SandboxUnavailable`)."""
        return self._closed

    def __enter__(self) -> _BaseSandbox:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # -- backend hooks ---------------------------------------------------------------------
    def _execute(self, request: JSONObject, limits: Limits) -> ExecutionResult:
        raise NotImplementedError

    def _worker_netns(self) -> bool:
        return False

    def _worker_namespaces(self) -> dict[str, bool]:
        """The namespaces the process that forks the tools moved into (none for cold children)."""
        return {}

    def _worker_non_dumpable(self) -> bool:
        """Whether the process between the host and the tool (if any) is non-dumpable too."""
        return True


class SubprocessSandbox(_BaseSandbox):
    """A cold ``python -m finevo.sandbox.child`` per execution."""

    backend = SandboxBackend.SUBPROCESS.value

    def __init__(self, snapshot_dir: str | os.PathLike[str] | None = None, *, policy: bool = True,
                 extra_read_roots: Sequence[str] = ()) -> None:
        super().__init__(snapshot_dir, policy=policy, extra_read_roots=extra_read_roots)
        #: Process groups of the children running now (one per thread that runs a tool).
        self._running: set[int] = set()

    def close(self) -> None:
        """Refuse new runs and kill the children running now: a run in progress ends at once
        (killed, never a result of the tool's) instead of at its own timeout."""
        self._closed = True
        for pgid in list(self._running):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pgid, signal.SIGKILL)

    def _execute(self, request: JSONObject, limits: Limits) -> ExecutionResult:
        workdir = workspace.create()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        ctl_r, ctl_w = socket_pair()  # see forked.SpareChild: the child cannot read it back
        # The cold child preloads the run's own snapshot when one is given (no second load).
        child_request = dict(request, **self._settings, workdir=workdir, control_fd=ctl_w,
                             snapshot_dir=request.get("snapshot_override") or self.snapshot_dir, unshare_net=True)
        child_request.pop("snapshot_override", None)
        try:
            with tempfile.TemporaryFile() as request_file:
                request_file.write(json.dumps(child_request).encode("utf-8"))
                request_file.seek(0)
                try:
                    proc = subprocess.Popen(_python_command("finevo.sandbox.child"), stdin=request_file,
                                            stdout=out_w, stderr=err_w, pass_fds=(ctl_w,),
                                            env=dict(BLAS_ENV), cwd=workdir, start_new_session=True)
                finally:
                    for fd in (out_w, err_w, ctl_w):
                        os.close(fd)
            self._running.add(proc.pid)
            if self._closed:  # closed since run() began (during the policy check): stop it now
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            try:
                observation = supervise(WatchedChild(proc.pid, out_r, err_r, ctl_r), limits, workdir=workdir)
            finally:
                self._running.discard(proc.pid)
            # supervise() reaped the child; tell Popen so it never waits on a recycled pid.
            proc.returncode = observation.wait_status if observation.wait_status is not None else -1
            if self._closed:  # killed by close(): never a result of the tool's
                raise SandboxUnavailable(f"the {self.backend} sandbox was closed while the tool ran")
            return classify(observation, limits)
        except OSError:
            for fd in (out_r, err_r, ctl_r):
                with contextlib.suppress(OSError):
                    os.close(fd)
            raise
        finally:
            workspace.remove(workdir)


#: Warm workers one sandbox keeps at once for directories of other snapshots its own worker cannot
#: reach (under the private /tmp that worker mounted: :meth:`WarmSandbox._sees`).
MAX_OTHER_SNAPSHOTS = 4


class WarmSandbox(_BaseSandbox):
    """A long-lived worker with pandas and the snapshot loaded, forking one child per execution."""

    backend = SandboxBackend.WARM.value

    def __init__(self, snapshot_dir: str | os.PathLike[str] | None = None, *, policy: bool = True,
                 extra_read_roots: Sequence[str] = ()) -> None:
        super().__init__(snapshot_dir, policy=policy, extra_read_roots=extra_read_roots)
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self.worker_info: JSONObject = {}
        self.restarts = 0
        #: A warm sandbox per directory of other snapshots a run asked for (``snapshot_dir=`` of
        #: :meth:`run`) that this worker cannot reach (its private /tmp hides what the host created
        #: there after it started: :meth:`_sees`), least recently used first. The gate's hidden
        #: worlds (under /var/tmp) are served by this worker itself.
        self._others: dict[str, WarmSandbox] = {}
        self._extra_roots = list(extra_read_roots)
        self._real_roots = [os.path.realpath(root) for root in self._extra_roots]
        self._seen: dict[str, bool] = {}
        with self._lock:
            self._start()
        ref = weakref.ref(self)
        atexit.register(lambda: (lambda s: s.close() if s is not None else None)(ref()))

    def _start(self) -> None:
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 - the worker's stderr for its lifetime; closed in close()
        proc = subprocess.Popen(_python_command("finevo.sandbox.worker"), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=self._log, env=dict(BLAS_ENV), cwd="/",
                                start_new_session=True)
        self._proc = proc
        config = {"snapshot_dir": self.snapshot_dir, "unshare_net": True, **self._settings}
        try:
            assert proc.stdin is not None and proc.stdout is not None
            protocol.write_frame(proc.stdin.fileno(), config)
            ready = protocol.read_frame(proc.stdout.fileno(), time.monotonic() + WORKER_START_TIMEOUT_S)
        except (OSError, protocol.ChannelClosed, protocol.ChannelTimeout) as exc:
            detail = self._log_tail()
            self._stop_worker()
            raise SandboxUnavailable(f"the warm sandbox worker did not start: {exc}; {detail}") from None
        except BaseException:  # interrupted before its "ready": that frame would answer a request
            self._stop_worker()
            raise
        if ready.get("kind") != "ready":
            self._stop_worker()
            raise SandboxUnavailable(f"the warm sandbox worker failed to start: {ready.get('error')}")
        self.worker_info = ready

    def _log_tail(self) -> str:
        try:
            self._log.seek(0)
            return self._log.read().decode("utf-8", "replace")[-800:].strip() or "no output"
        except (OSError, ValueError, AttributeError):
            return "no output"

    def _stop_worker(self, *, graceful: bool = False) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if graceful and proc.stdin is not None:
                proc.stdin.close()  # EOF: the worker leaves its loop and exits
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=5.0)
            if proc.poll() is None:
                proc.kill()  # its children die with it (parent-death signal)
                proc.wait()
            if proc.returncode != 0:  # killed or crashed: its working directories are left behind
                workspace.sweep_stale(self.worker_info.get("tmpdir"))
        finally:
            for stream in (proc.stdin, proc.stdout):
                try:
                    if stream is not None:
                        stream.close()
                except OSError:
                    pass
            if self._log is not None:
                self._log.close()
                self._log = None

    def _execute(self, request: JSONObject, limits: Limits) -> ExecutionResult:
        """Send one request; a dead worker is restarted and the request retried once.

        The worker runs as root outside the tool's reach, so its death is infrastructure trouble,
        never the tool's doing: a second failure raises :class:`SandboxUnavailable` (an external
        error), not a "crashed" result that would be blamed on the tool.
        """
        override = request.get("snapshot_override")
        if override and override != self.snapshot_dir and not self._sees(override):
            return self._other(override)._execute(request, limits)
        with self._lock:
            for attempt in (1, 2):
                if self._closed:
                    raise SandboxUnavailable("the warm sandbox is closed")
                if self._proc is None or self._proc.poll() is not None:
                    self._stop_worker()
                    self.restarts += 1
                    self._start()
                    if self.closed:  # closed while the worker started: a kill may have missed it
                        self._stop_worker()
                        raise SandboxUnavailable("the warm sandbox is closed")
                proc = self._proc
                assert proc is not None and proc.stdin is not None and proc.stdout is not None
                deadline = time.monotonic() + limits.timeout_s + WORKER_GRACE_S
                try:
                    protocol.write_frame(proc.stdin.fileno(), request)
                    reply = protocol.read_frame(proc.stdout.fileno(), deadline)
                except (OSError, protocol.ChannelClosed, protocol.ChannelTimeout) as exc:
                    detail = self._log_tail()
                    self._stop_worker()
                    if attempt == 2 or isinstance(exc, protocol.ChannelTimeout):
                        raise SandboxUnavailable(f"the warm sandbox worker failed: {type(exc).__name__}: "
                                                 f"{exc}; {detail}") from None
                    continue
                except BaseException:  # interrupted between request and reply (KeyboardInterrupt):
                    self._stop_worker()  # that reply would otherwise answer the next request
                    raise
                return ExecutionResult(**reply)
        raise AssertionError("unreachable")  # pragma: no cover

    def _sees(self, snapshot_dir: str) -> bool:
        """Whether this worker can serve ``snapshot_dir`` itself: a directory under one of its extra
        read roots, or any directory its mount namespace shows (not under the private /tmp or
        /dev/shm it mounted when it started, which hide what the host created there since). It
        loads that snapshot in a world zygote of its own, whose children may read that directory
        and none of its siblings nor the worker's own snapshot (``finevo.sandbox.worker``): the
        gate's hidden worlds (under /var/tmp) cost no worker of their own.

        Answered once per directory (resolving paths costs a ``lstat`` per component, and the
        judge asks for every run in a hidden world)."""
        seen = self._seen.get(snapshot_dir)
        if seen is None:
            real = os.path.realpath(snapshot_dir)
            hidden = ("/tmp", "/dev/shm") if self._worker_namespaces().get("private_tmp") else ()
            seen = self._seen[snapshot_dir] = any(real.startswith(root + os.sep) for root in self._real_roots) \
                or not any(real == mount or real.startswith(mount + os.sep) for mount in hidden)
        return seen

    def _other(self, snapshot_dir: str) -> WarmSandbox:
        """The warm sandbox serving ``snapshot_dir`` and its sibling snapshots where this worker
        cannot (:meth:`_sees`: a directory under its private /tmp): one worker per directory of
        snapshots, started on first use and switching between them per run; the least recently
        used beyond :data:`MAX_OTHER_SNAPSHOTS` is closed."""
        parent = os.path.dirname(os.path.abspath(snapshot_dir))
        with self._lock:
            if self._closed:
                raise SandboxUnavailable("the warm sandbox is closed")
            other = self._others.pop(parent, None)
            if other is None:
                other = WarmSandbox(snapshot_dir, policy=self.policy, extra_read_roots=[parent])
            self._others[parent] = other
            stale = list(self._others)[:-MAX_OTHER_SNAPSHOTS]
            dropped = [self._others.pop(key) for key in stale]
        for sandbox in dropped:
            sandbox.close()
        return other

    def _worker_netns(self) -> bool:
        return bool(self.worker_info.get("netns"))

    def _worker_namespaces(self) -> dict[str, bool]:
        return dict(self.worker_info.get("namespaces") or {})

    def _worker_non_dumpable(self) -> bool:
        return bool(self.worker_info.get("non_dumpable"))

    def worker_rss_kb(self) -> int:
        """Resident memory of the worker process right now (kB)."""
        with self._lock:
            proc = self._proc
            if proc is None or proc.stdin is None or proc.stdout is None:
                return 0
            try:
                protocol.write_frame(proc.stdin.fileno(), {"op": "stats"})
                return int(protocol.read_frame(proc.stdout.fileno(), time.monotonic() + 30.0)["rss_kb"])
            except BaseException:  # no reply left behind to answer the next request
                self._stop_worker()
                raise

    def close(self) -> None:
        """Stop the worker and every other world's worker. Never waits for a run in progress
        (the gate closes a sandbox to abandon an overdue run or on an interrupt): the worker is
        killed first, so that run ends at once with :class:`SandboxUnavailable`."""
        if not self._lock.acquire(blocking=False):
            self._closed = True  # a run holds the lock: it may start no other attempt
            proc = self._proc
            if proc is not None:
                with contextlib.suppress(OSError):
                    proc.kill()  # its children die with it (parent-death signal)
            self._lock.acquire()
        try:
            self._closed = True
            self._stop_worker(graceful=True)
            others, self._others = list(self._others.values()), {}
        finally:
            self._lock.release()
        for other in others:
            other.close()


def create_sandbox(snapshot_dir: str | os.PathLike[str] | None = None,
                   backend: str = SandboxBackend.WARM, policy: bool = True) -> WarmSandbox | SubprocessSandbox:
    """The sandbox every caller uses: ``backend`` is a :class:`SandboxBackend` (``warm`` by default)."""
    if backend == SandboxBackend.WARM:
        return WarmSandbox(snapshot_dir, policy=policy)
    if backend == SandboxBackend.SUBPROCESS:
        return SubprocessSandbox(snapshot_dir, policy=policy)
    raise ValueError(f"unknown sandbox backend {backend!r} (expected {words(SandboxBackend)})")
