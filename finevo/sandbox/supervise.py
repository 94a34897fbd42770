"""Supervisor side of one execution: watch a child, enforce the wall clock, cap its output, reap it.

:func:`supervise` is used by the warm worker (for the children it forks) and by the subprocess
backend (for the ``python -m finevo.sandbox.child`` processes it starts). It polls the child's
stdout, stderr, control pipe and -- where the kernel has them -- a pidfd, so it never blocks on a
child that closed its pipes, never hangs on an output flood, and always kills the child's whole
process group before returning. :func:`classify` turns the observations into an
:class:`~finevo.sandbox.api.ExecutionResult`.

Output is *truncated*, never a reason to stop a tool: stdout and stderr keep their first and last
``limits.output_bytes / 2`` bytes with ``[... N bytes cut ...]`` between them, and the pipes are
read (and the middle discarded) until the child closes them, so a tool that prints 10 MB runs to
its end. Only the control pipe has a hard cap (:data:`CONTROL_CAP`): a result larger than that is
refused by the child itself, so more than that is a hostile child, killed.

Everything on the control pipe is hostile (design as if the tool got past every other layer):
records are decoded strictly (UTF-8, no NaN or Infinity, no number beyond float range), bounded
(nesting depth and item count checked without recursion), and every field is type-checked before
it is used. Whatever arrives -- garbage bytes, a truncated record, two results, a forged record
that nests 990 levels -- the outcome is a failure of *that tool*, never an exception here.
"""

from __future__ import annotations

import contextlib
import errno as errno_mod
import json
import math
import os
import select
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from finevo.sandbox.api import ExecutionResult, Limits
from finevo.sandbox.normalize import MAX_DEPTH, MAX_ITEMS
from finevo.sandbox.protocol import RESULT_CAP

#: The control pipe carries the result value; it may be larger than stdout, but not unbounded.
CONTROL_CAP = RESULT_CAP + 1024 * 1024
#: How long a child may take to reach the point where tool code starts (interpreter start-up and
#: pandas import in a cold child); the tool's own wall clock starts after that.
STARTUP_TIMEOUT_S = 120.0
_CHUNK = 65536


class CappedOutput:
    """The first and last ``cap / 2`` bytes of a stream, and how many bytes were cut between them."""

    def __init__(self, cap: int) -> None:
        self.head_cap = max(cap, 0) // 2
        self.tail_cap = max(cap, 0) - self.head_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap:
            self.tail += chunk[-self.tail_cap:]
            excess = len(self.tail) - self.tail_cap
            if excess > 0:
                del self.tail[:excess]

    def render(self) -> tuple[bytearray, int]:
        """The kept text, at most ``cap`` bytes with the marker included, and the bytes cut."""
        kept = len(self.head) + len(self.tail)
        if kept == self.total:
            return self.head + self.tail, 0
        room = max(self.head_cap + self.tail_cap - len(_marker(self.total)), 0)
        head = self.head[:room // 2]
        tail = self.tail[len(self.tail) - min(room - len(head), len(self.tail)):]
        cut = self.total - len(head) - len(tail)
        return head + _marker(cut) + tail, cut


def _marker(cut: int) -> bytes:
    return f"\n[... {cut} bytes cut ...]\n".encode("ascii")


@dataclass
class Observation:
    """What the supervisor saw; the input of :func:`classify`."""

    pid: int = 0
    stdout: bytearray = field(default_factory=bytearray)
    stderr: bytearray = field(default_factory=bytearray)
    control: bytearray = field(default_factory=bytearray)
    cut: dict[str, int] = field(default_factory=dict)  # bytes cut from the middle of stdout/stderr
    flooded: str | None = None          # "control": the control pipe exceeded its cap; "disk": the workdir
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


#: How often the working directory's size is measured against ``Limits.disk_mb``, and how many
#: entries it may hold at most (a flood of empty files costs inodes, not bytes).
DISK_CHECK_S = 0.1
MAX_WORKDIR_ENTRIES = 20000


def workdir_usage(workdir: str, *, stop_above: int, max_entries: int = MAX_WORKDIR_ENTRIES) -> tuple[int, int]:
    """(bytes allocated, entries) under ``workdir``, walked iteratively without following links;
    the walk stops early once either bound is passed. Never raises: an entry that vanishes or
    cannot be read is skipped."""
    used = entries = 0
    stack = [workdir]
    while stack and used <= stop_above and entries <= max_entries:
        try:
            it = os.scandir(stack.pop())
        except OSError:
            continue
        with it:
            for entry in it:
                entries += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                used += st.st_blocks * 512
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                if used > stop_above or entries > max_entries:
                    break
    return used, entries


def supervise(pid: int, stdout_fd: int, stderr_fd: int, control_fd: int, limits: Limits,
              *, startup_timeout_s: float = STARTUP_TIMEOUT_S, workdir: str | None = None) -> Observation:
    """Watch child ``pid`` (leader of its own process group) until it ends; reap it.

    Closes the three read ends. The wall clock starts when the child reports ``started``. With
    ``workdir``, its size is measured every :data:`DISK_CHECK_S` and a child holding more than
    ``limits.disk_mb`` there (or more than :data:`MAX_WORKDIR_ENTRIES` entries) is killed.
    """
    disk_cap = int(limits.disk_mb) * 1024 * 1024
    next_disk_check = 0.0
    obs = Observation(pid=pid)
    launched = time.monotonic()
    deadline = launched + startup_timeout_s
    outputs = {stdout_fd: CappedOutput(limits.output_bytes), stderr_fd: CappedOutput(limits.output_bytes)}
    open_fds = {stdout_fd, stderr_fd, control_fd}
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
            if workdir is not None and not exited and now >= next_disk_check:
                used, entries = workdir_usage(workdir, stop_above=disk_cap)
                if used > disk_cap or entries > MAX_WORKDIR_ENTRIES:
                    obs.flooded = "disk"
                    break
                next_disk_check = now + DISK_CHECK_S
            idle_s = 0.05 if pidfd is None or exited else (DISK_CHECK_S if workdir is not None else 3600)
            wait_ms = int(min(deadline - now, idle_s) * 1000) + 1
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
                if fd != control_fd:
                    outputs[fd].feed(chunk)  # never a reason to stop: the middle is discarded
                    continue
                room = CONTROL_CAP - len(obs.control)
                obs.control += chunk[:max(room, 0)]
                if len(chunk) > room:
                    obs.flooded = "control"
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
        for name, fd in (("stdout", stdout_fd), ("stderr", stderr_fd)):
            rendered, cut = outputs[fd].render()
            setattr(obs, name, rendered)
            if cut:
                obs.cut[name] = cut
        for fd in (stdout_fd, stderr_fd, control_fd):
            os.close(fd)
        if pidfd is not None:
            os.close(pidfd)
    return obs


# --------------------------------------------------------------------------- reading the control pipe
class _Refused(ValueError):
    """A record the supervisor will not accept."""


def _finite_float(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):  # 1e999 parses to inf
        raise _Refused("a number beyond float range")
    return number


def _no_constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON")


def _clean_text(text: str) -> str:
    """``text`` as valid Unicode (lone surrogates from ``\\udXXX`` escapes become U+FFFD)."""
    if text.isascii():
        return text
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


def _bounded(value: Any) -> Any:
    """``value`` (fresh from json.loads) checked without recursion: depth, size, valid text."""
    budget = MAX_ITEMS + 16
    holder = [value]
    stack: list[tuple[Any, Any, Any, int]] = [(value, holder, 0, 0)]
    while stack:
        obj, parent, key, depth = stack.pop()
        budget -= 1
        if budget < 0:
            raise _Refused("too many values")
        if type(obj) is str:
            parent[key] = _clean_text(obj)
        elif type(obj) is list or type(obj) is dict:
            if depth > MAX_DEPTH + 2:  # the record itself and its "value" wrap the tool's value
                raise _Refused(f"nested more than {MAX_DEPTH} levels")
            if isinstance(obj, list):
                stack.extend((item, obj, i, depth + 1) for i, item in enumerate(obj))
            elif isinstance(obj, dict):
                cleaned = {_clean_text(k): v for k, v in obj.items()}
                if len(cleaned) != len(obj):
                    raise _Refused("two keys read alike")
                parent[key] = cleaned
                stack.extend((v, cleaned, k, depth + 1) for k, v in cleaned.items())
    return holder[0]


def decode_record(line: bytes) -> dict[str, Any] | None:
    """One control-pipe line as a record, or None when it is not a well-formed, bounded record."""
    try:
        record = json.loads(line.decode("utf-8"), parse_float=_finite_float,
                            parse_constant=_no_constant)
        record = _bounded(record)
    except (ValueError, RecursionError, MemoryError):  # UnicodeDecodeError is a ValueError
        return None
    if type(record) is not dict or type(record.get("kind")) is not str:
        return None
    return record


def _records(control: bytes | bytearray) -> list[dict[str, Any]]:
    records = []
    for line in bytes(control).split(b"\n"):
        if not line.strip():
            continue
        record = decode_record(line)
        records.append(record if record is not None else {"kind": "garbage"})
    return records


def _field_text(record: dict[str, Any], key: str, limit: int = 2000) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    text = value if type(value) is str else json.dumps(value)[:limit]
    return text[:limit]


def _field_int(record: dict[str, Any], key: str) -> int | None:
    value = record.get(key)
    return value if type(value) is int and -2**31 <= value < 2**31 else None


def _text(data: bytearray) -> str:
    return bytes(data).decode("utf-8", "replace")


def classify(obs: Observation, limits: Limits) -> ExecutionResult:
    """Map what was observed to a status and the layer that stopped or contained the run.

    Never raises: whatever the child sent, the outcome is an :class:`ExecutionResult` that fails
    the tool (``crashed``), so a hostile child can neither crash the worker nor pass as an
    infrastructure error."""
    try:
        return _classify(obs, limits)
    except Exception as exc:  # the boundary: a failure of this tool, not of the gate
        return ExecutionResult(status="crashed", layer="result", error_type="ResultUnreadable",
                               error_message=f"the sandbox could not read what the tool process sent "
                                             f"({type(exc).__name__})",
                               stdout=_text(obs.stdout), stderr=_text(obs.stderr),
                               details={"pid": obs.pid})


def _classify(obs: Observation, limits: Limits) -> ExecutionResult:
    records = _records(obs.control)
    started = next((r for r in records if r.get("kind") == "started"), None)
    refusals = [r for r in records if r.get("kind") == "refused"]
    results = [r for r in records if r.get("kind") == "result"]
    harness_errors = [r for r in records if r.get("kind") == "harness_error"]
    result = ExecutionResult(status="crashed", stdout=_text(obs.stdout), stderr=_text(obs.stderr),
                             duration_s=round(max(obs.finished_at - (obs.started_at or 0.0), 0.0), 6))
    result.details = {"pid": obs.pid, "cpu_s": round(obs.cpu_s, 4), "maxrss_kb": obs.maxrss_kb}
    if obs.cut:
        result.details["output_cut"] = dict(obs.cut)
    if started is not None:
        result.details["confinement"] = {k: v for k, v in started.items() if k != "kind"}
    if refusals:
        result.details["refused"] = [f"{_field_text(r, 'event', 200)}: {_field_text(r, 'detail', 500)}"
                                     for r in refusals[:20]]

    status = obs.wait_status or 0
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else None
    result.details["exit_code"] = exit_code
    result.details["signal"] = _signal_name(signum)

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
    if obs.flooded == "control":
        return stop("killed", "output-cap", f"the tool process sent more than {CONTROL_CAP} bytes on "
                                            "the result channel")
    if obs.flooded == "disk":
        return stop("killed", "disk-quota", f"the working directory grew past {limits.disk_mb} MB or "
                                            f"{MAX_WORKDIR_ENTRIES} entries; process group killed")
    if signum == signal.SIGSYS:  # the kernel's own report: a tool cannot send itself SIGSYS
        return stop("blocked", "seccomp", "contained by seccomp: the tool made a forbidden system call "
                                          "and the kernel killed it (SIGSYS)", rule="seccomp")
    if refusals:
        first = refusals[0]
        event = _field_text(first, "event", 200) or "?"
        return stop("blocked", "audit-hook", f"refused at run time: {event}: "
                                             f"{_field_text(first, 'detail', 500)}", rule=event)
    if signum in (signal.SIGXCPU,) or (signum == signal.SIGKILL and obs.cpu_s >= limits.cpu_s - 0.5):
        return stop("killed", "rlimit-cpu", f"CPU limit of {limits.cpu_s}s exceeded")
    if signum == signal.SIGXFSZ:
        return stop("killed", "rlimit-fsize", f"file size limit of {limits.fsize_mb} MB exceeded")
    if signum is not None:
        return stop("crashed", "signal", f"the tool process died of {_signal_name(signum)}")
    if harness_errors:
        err = harness_errors[0]
        return stop("crashed", "harness", f"sandbox harness failed: {_field_text(err, 'error_type', 200)}: "
                                          f"{_field_text(err, 'error_message')}")
    if len(results) != 1 or any(r.get("kind") == "garbage" for r in records):
        what = ("no result" if not results and not any(r.get("kind") == "garbage" for r in records)
                else "an unreadable result channel (garbage, a truncated or unbounded record, or "
                     "more than one result)")
        result.error_type = "ResultUnreadable" if what != "no result" else None
        return stop("crashed", "result" if result.error_type else "harness",
                    f"the tool process exited (code {exit_code}) with {what}")
    record = results[0]
    outcome = record.get("outcome")
    if outcome == "ok":
        result.status = "ok"
        result.value = record.get("value")
        return result
    if outcome == "unserialisable":
        error_type = _field_text(record, "error_type", 40)
        result.error_type = error_type if error_type in _RESULT_ERRORS else "ResultShape"
        return stop("crashed", "result", _field_text(record, "error_message") or "unreadable value")
    if outcome != "exception":
        result.error_type = "ResultUnreadable"
        return stop("crashed", "result", "the tool process sent a result record of no known kind")
    result.error_type = _field_text(record, "error_type", 200)
    result.traceback = _field_text(record, "traceback", 20000)
    result.line = _field_int(record, "line")
    result.col = _field_int(record, "col")
    message = _field_text(record, "error_message") or ""
    result.error_message = message
    result.status = "exception"
    errno = _field_int(record, "errno")
    if record.get("memory_error") is True:
        return _with(result, "killed", "rlimit-as", message)
    landlock = (started or {}).get("landlock")
    # Landlock answers EACCES (EPERM for a scoped signal, EXDEV for a link or rename across rules)
    if errno in (errno_mod.EACCES, errno_mod.EPERM, errno_mod.EXDEV) \
            and result.error_type in ("PermissionError", "OSError") \
            and isinstance(landlock, dict) and landlock.get("enforced") is True:
        result.rule = "landlock"
        return _with(result, "blocked", "landlock", f"contained by Landlock: {message}")
    if errno == errno_mod.EFBIG:
        return _with(result, "killed", "rlimit-fsize", message)
    if (errno == errno_mod.EAGAIN and result.error_type == "BlockingIOError") or \
            (result.error_type == "RuntimeError" and "can't start new thread" in message):
        return _with(result, "killed", "rlimit-nproc", message)
    if errno == errno_mod.EMFILE:
        return _with(result, "killed", "rlimit-nofile", message)
    if record.get("recursion_error") is True:
        result.layer = "recursion-limit"
    return result


#: The ways a return value can fail to cross the boundary (see finevo/sandbox/normalize.py).
_RESULT_ERRORS = frozenset({"ResultShape", "ResultNotFinite", "ResultTooDeep", "ResultTooLarge"})


def _signal_name(signum: int | None) -> str | None:
    if not signum:
        return None
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


def _with(result: ExecutionResult, status: str, layer: str, message: str) -> ExecutionResult:
    result.status = status  # type: ignore[assignment]
    result.layer = layer
    result.error_message = message
    return result
