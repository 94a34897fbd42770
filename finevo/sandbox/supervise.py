"""Supervisor side of one execution: watch a child, enforce the wall clock, cap its output, reap it.

:func:`supervise` is used by the warm worker (for the children it forks) and by the subprocess
backend (for the ``python -m finevo.sandbox.child`` processes it starts). It polls the child's
stdout, stderr, control pipe and -- where the kernel has them -- a pidfd, so it never blocks on a
child that closed its pipes, never hangs on an output flood, and always kills the child's whole
process group before returning. :func:`classify` turns the observations into an
:class:`~finevo.sandbox.api.ExecutionResult`.
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import json
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from finevo.sandbox.api import ExecutionResult, Limits

#: The control pipe carries the result value; it may be larger than stdout, but not unbounded.
CONTROL_CAP = 16 * 1024 * 1024
#: How long a child may take to reach the point where tool code starts (interpreter start-up and
#: pandas import in a cold child); the tool's own wall clock starts after that.
STARTUP_TIMEOUT_S = 120.0
_CHUNK = 65536


@dataclass
class Observation:
    """What the supervisor saw; the input of :func:`classify`."""

    pid: int = 0
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    control: bytearray = field(default_factory=bytearray)
    flooded: str | None = None          # which stream exceeded its cap
    timed_out: bool = False
    startup_timed_out: bool = False
    wait_status: int | None = None
    cpu_s: float = 0.0
    maxrss_kb: int = 0
    started_at: float | None = None
    finished_at: float = 0.0


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _pidfd(pid: int) -> int | None:
    opener: Callable[[int], int] | None = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return opener(pid)
    except OSError:
        return None


def supervise(pid: int, stdout_fd: int, stderr_fd: int, control_fd: int, limits: Limits,
              *, startup_timeout_s: float = STARTUP_TIMEOUT_S) -> Observation:
    """Watch child ``pid`` (leader of its own process group) until it ends; reap it.

    Closes the three read ends. The wall clock starts when the child reports ``started``.
    """
    obs = Observation(pid=pid)
    launched = time.monotonic()
    deadline = launched + startup_timeout_s
    streams = {stdout_fd: obs.stdout, stderr_fd: obs.stderr, control_fd: obs.control}
    caps = {stdout_fd: limits.output_bytes, stderr_fd: limits.output_bytes, control_fd: CONTROL_CAP}
    names = {stdout_fd: "stdout", stderr_fd: "stderr", control_fd: "control"}
    open_fds = set(streams)
    pidfd = _pidfd(pid)
    poller = select.poll()
    for fd in open_fds:
        poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
    if pidfd is not None:
        poller.register(pidfd, select.POLLIN)
    exited = False
    try:
        while True:
            if obs.started_at is None and b'"kind": "started"' in obs.control:
                obs.started_at = time.monotonic()
                deadline = obs.started_at + limits.timeout_s
            now = time.monotonic()
            if now >= deadline:
                obs.timed_out = obs.started_at is not None
                obs.startup_timed_out = obs.started_at is None
                break
            if exited and not open_fds:
                break
            wait_ms = int(min(deadline - now, 0.05 if pidfd is None or exited else 3600) * 1000) + 1
            for fd, _event in poller.poll(wait_ms):
                if fd == pidfd:
                    exited = True
                    poller.unregister(pidfd)
                    continue
                try:
                    chunk = os.read(fd, _CHUNK)
                except BlockingIOError:
                    continue
                if not chunk:
                    poller.unregister(fd)
                    open_fds.discard(fd)
                    continue
                buffer = streams[fd]
                room = caps[fd] - len(buffer)
                buffer += chunk[:max(room, 0)]
                if len(chunk) > room:
                    obs.flooded = names[fd]
            if obs.flooded:
                break
            if pidfd is None and not exited:
                exited = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
            if exited and open_fds:
                # The child is gone; anything still holding its pipes is a straggler in its group.
                _kill_group(pid)
                deadline = min(deadline, time.monotonic() + 2.0)
    finally:
        _kill_group(pid)
        _, status, usage = os.wait4(pid, 0)
        obs.wait_status = status
        obs.cpu_s = usage.ru_utime + usage.ru_stime
        obs.maxrss_kb = usage.ru_maxrss
        obs.finished_at = time.monotonic()
        if obs.started_at is None:
            obs.started_at = launched
        for fd in (stdout_fd, stderr_fd, control_fd):
            os.close(fd)
        if pidfd is not None:
            os.close(pidfd)
    return obs


def _records(control: bytes | bytearray) -> list[dict[str, Any]]:
    records = []
    for line in bytes(control).split(b"\n"):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            records.append({"kind": "garbage"})
            continue
        records.append(record if isinstance(record, dict) else {"kind": "garbage"})
    return records


def _text(data: bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


def classify(obs: Observation, limits: Limits) -> ExecutionResult:
    """Map what was observed to a status and the layer that stopped or contained the run."""
    records = _records(obs.control)
    started = next((r for r in records if r.get("kind") == "started"), None)
    refusals = [r for r in records if r.get("kind") == "refused"]
    results = [r for r in records if r.get("kind") == "result"]
    harness_errors = [r for r in records if r.get("kind") == "harness_error"]
    result = ExecutionResult(status="crashed", stdout=_text(obs.stdout), stderr=_text(obs.stderr),
                             duration_s=round(max(obs.finished_at - (obs.started_at or 0.0), 0.0), 6))
    result.details = {"pid": obs.pid, "cpu_s": round(obs.cpu_s, 4), "maxrss_kb": obs.maxrss_kb}
    if started is not None:
        result.details["confinement"] = {k: v for k, v in started.items() if k != "kind"}
    if refusals:
        result.details["refused"] = [f"{r.get('event')}: {r.get('detail')}" for r in refusals[:20]]

    status = obs.wait_status or 0
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    result.details["exit_code"] = exit_code
    result.details["signal"] = signal.Signals(signum).name if signum else None

    def stop(status_word: str, layer: str, message: str, rule: str | None = None) -> ExecutionResult:
        result.status = status_word  # type: ignore[assignment]
        result.layer = layer
        result.rule = rule
        result.error_message = message
        return result

    if obs.startup_timed_out:
        return stop("crashed", "harness", "the sandbox child did not start in time")
    if obs.timed_out:
        return stop("timeout", "timeout", f"wall-clock limit of {limits.timeout_s:g}s exceeded; "
                                          "process group killed")
    if obs.flooded in ("stdout", "stderr"):
        return stop("killed", "output-cap", f"{obs.flooded} exceeded {limits.output_bytes} bytes; "
                                            "output cut and process group killed")
    if obs.flooded == "control":
        return stop("killed", "output-cap", f"result exceeded {CONTROL_CAP} bytes")
    if refusals:
        first = refusals[0]
        event = str(first.get("event"))
        return stop("blocked", "audit-hook", f"refused at run time: {event}: {first.get('detail')}",
                    rule=event)
    if signum in (signal.SIGXCPU,) or (signum == signal.SIGKILL and obs.cpu_s >= limits.cpu_s - 0.5):
        return stop("killed", "rlimit-cpu", f"CPU limit of {limits.cpu_s}s exceeded")
    if signum == signal.SIGXFSZ:
        return stop("killed", "rlimit-fsize", f"file size limit of {limits.fsize_mb} MB exceeded")
    if signum is not None:
        return stop("crashed", "signal", f"the tool process died of {signal.Signals(signum).name}")
    if harness_errors:
        err = harness_errors[0]
        return stop("crashed", "harness", f"sandbox harness failed: {err.get('error_type')}: "
                                          f"{err.get('error_message')}")
    if len(results) != 1 or any(r.get("kind") == "garbage" for r in records):
        what = "no result" if not results else "a tampered result channel"
        return stop("crashed", "harness", f"the tool process exited (code {exit_code}) with {what}")
    record = results[0]
    outcome = record.get("outcome")
    if outcome == "ok":
        result.status = "ok"
        result.value = record.get("value")
        return result
    if outcome == "unserialisable":
        result.error_type = "ResultNotSerialisable"
        return stop("crashed", "result", str(record.get("error_message")))
    result.error_type = record.get("error_type")
    result.traceback = record.get("traceback")
    result.line = record.get("line")
    result.col = record.get("col")
    message = str(record.get("error_message"))
    result.error_message = message
    result.status = "exception"
    if record.get("memory_error"):
        return _with(result, "killed", "rlimit-as", message)
    if record.get("errno") == errno_mod.EFBIG:
        return _with(result, "killed", "rlimit-fsize", message)
    if (record.get("errno") == errno_mod.EAGAIN and result.error_type == "BlockingIOError") or \
            (result.error_type == "RuntimeError" and "can't start new thread" in message):
        return _with(result, "killed", "rlimit-nproc", message)
    if record.get("errno") == errno_mod.EMFILE:
        return _with(result, "killed", "rlimit-nofile", message)
    if record.get("recursion_error"):
        result.layer = "recursion-limit"
    return result


def _with(result: ExecutionResult, status: str, layer: str, message: str) -> ExecutionResult:
    result.status = status  # type: ignore[assignment]
    result.layer = layer
    result.error_message = message
    return result
