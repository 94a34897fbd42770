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
import socket
import stat
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from finevo.normalize import MAX_DEPTH, MAX_ITEMS, REFUSALS
from finevo.sandbox import confine, seccomp
from finevo.sandbox.api import ExecutionResult, Limits
from finevo.sandbox.protocol import RESULT_CAP

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

#: The control pipe carries the result value; it may be larger than stdout, but not unbounded.
CONTROL_CAP = RESULT_CAP + 1024 * 1024
#: Records a run's control channel may carry: the harness's ``started``, the audit hook's
#: refusals, one result. A child sending more is hostile and is killed at once: decoding millions
#: of two-byte records would cost the supervisor seconds of CPU and gigabytes of memory after the
#: tool's own clock stopped, past the gate's deadline.
MAX_CONTROL_RECORDS = 10_000
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
    flooded: str | None = None          # "control": the control pipe exceeded its cap ("records": its
    #                                     record count); "disk": the workdir
    timed_out: bool = False
    startup_timed_out: bool = False
    wait_status: int | None = None
    cpu_s: float = 0.0
    maxrss_kb: int = 0
    started_at: float | None = None
    finished_at: float = 0.0
    #: The call the seccomp filter denied, as the kernel handed it to the supervisor (a user
    #: notification): the supervisor's own record, never something the child said.
    denial: JSONObject | None = None
    #: Whether the child's seccomp listener reached the supervisor (before its ``started`` record).
    listener_received: bool = False


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


#: Directories nested deeper than this in the working directory count as a flood: the walk keeps a
#: descriptor per level, and no tool needs so many.
MAX_WORKDIR_DEPTH = 128
_WALK_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def workdir_usage(workdir: str, *, stop_above: int, max_entries: int = MAX_WORKDIR_ENTRIES) -> tuple[int, int]:
    """(bytes allocated, entries) under ``workdir``, walked depth first through directory descriptors
    (never by path, so a tree nested past ``PATH_MAX`` is walked whole), without following links; the
    walk stops early once either bound is passed. Never raises: an entry that vanishes is skipped.
    What the walk cannot see counts as past the bound (``max_entries + 1`` entries): a directory it
    cannot open even as its owner (:func:`_open_dir`) or nested deeper than :data:`MAX_WORKDIR_DEPTH`."""
    walk = _Usage(stop_above, max_entries)
    try:
        top = os.open(workdir, _WALK_FLAGS)
    except OSError:
        return 0, 0
    stack = [top]
    try:
        pending = [walk.scan(top)]
        while stack and not walk.passed():
            if not pending[-1]:
                os.close(stack.pop())
                pending.pop()
                continue
            try:
                child = _open_dir(pending[-1].pop(), stack[-1])
            except OSError as exc:  # gone, or a link put in its place since the listing: not followed
                if exc.errno not in (errno_mod.ENOENT, errno_mod.ENOTDIR, errno_mod.ELOOP):
                    walk.blind()
                continue
            stack.append(child)
            if len(stack) - 1 > MAX_WORKDIR_DEPTH:  # the working directory itself is not nested
                walk.blind()
            pending.append(walk.scan(child))
        return walk.used, walk.entries
    finally:
        for fd in stack:
            os.close(fd)


def _open_dir(name: str, parent: int) -> int:
    """The directory ``name`` in ``parent``, opened for the walk. One the tool made without read or
    search permission for its owner (``mkdir(name, 0)``: its mode cannot change after, chmod is
    denied) is opened to the owner first, through a descriptor that pins it: the supervisor shares
    the child's uid where it is not root (the image), and a walk that could not look inside would
    report a quota the tool never reached. Root opens it as it is."""
    try:
        return os.open(name, _WALK_FLAGS, dir_fd=parent)
    except PermissionError:
        pass
    pinned = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        os.chmod(f"/proc/self/fd/{pinned}", stat.S_IRWXU)
        return os.open(f"/proc/self/fd/{pinned}", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    finally:
        os.close(pinned)


class _Usage:
    """What :func:`workdir_usage` has counted so far."""

    def __init__(self, stop_above: int, max_entries: int) -> None:
        self.used = self.entries = 0
        self.stop_above, self.max_entries = stop_above, max_entries
        #: Files of more than one name already counted: their blocks are counted once, so hard links
        #: to one small file do not add up to a quota the tool never used.
        self.linked: set[tuple[int, int]] = set()

    def passed(self) -> bool:
        return self.used > self.stop_above or self.entries > self.max_entries

    def blind(self) -> None:
        """Something the walk cannot see: past the bound."""
        self.entries = max(self.entries, self.max_entries + 1)

    def scan(self, fd: int) -> list[str]:
        """Count the entries of the directory ``fd`` (up to the bounds); its subdirectories' names."""
        subdirs: list[str] = []
        try:
            listing = os.scandir(fd)
        except OSError:  # removed while open: nothing in it
            return subdirs
        with listing:
            for entry in listing:
                self.entries += 1
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
                    if (st.st_dev, st.st_ino) in self.linked:
                        continue
                    self.linked.add((st.st_dev, st.st_ino))
                self.used += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    subdirs.append(entry.name)
                if self.passed():
                    break
        return subdirs


def socket_pair() -> tuple[int, int]:
    """``(supervisor's end, child's end)`` of a control channel: a Unix stream socket pair whose
    supervisor end only reads and whose child end only writes. Unlike a pipe, the child's end
    cannot be reopened for reading through ``/proc/self/fd``, so nothing in the child can read
    (and swallow) what it sent -- the ``started`` record, the filter's listener."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.shutdown(socket.SHUT_WR)
    theirs.shutdown(socket.SHUT_RD)
    return ours.detach(), theirs.detach()


#: Descriptors one read of the control channel accepts (more are closed by the kernel).
_MAX_FDS = 4


class _Control:
    """The supervisor's end of the control channel: the bytes, and the seccomp listener the child
    hands over before its ``started`` record (any other descriptor a child sends is closed)."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.listener: int | None = None
        self.sock: socket.socket | None = None
        try:
            if stat.S_ISSOCK(os.fstat(fd).st_mode):
                self.sock = socket.socket(fileno=fd)
        except OSError:
            self.sock = None

    def read(self, before_start: bool) -> bytes:
        if self.sock is None:
            return os.read(self.fd, _CHUNK)
        data, ancillary, _flags, _addr = self.sock.recvmsg(_CHUNK, socket.CMSG_SPACE(_MAX_FDS * 4),
                                                           socket.MSG_CMSG_CLOEXEC)
        for level, kind, payload in ancillary:
            if level != socket.SOL_SOCKET or kind != socket.SCM_RIGHTS:
                continue
            usable = len(payload) - len(payload) % 4
            for (fd,) in struct.iter_unpack("i", payload[:usable]):
                if self.listener is None and before_start and seccomp.is_listener(fd):
                    self.listener = fd
                else:
                    os.close(fd)
        return data

    def close(self) -> None:
        if self.sock is not None:
            self.sock.detach()
        os.close(self.fd)
        if self.listener is not None:
            os.close(self.listener)


@dataclass(frozen=True)
class Reaped:
    """A child's end as its parent collected it: the wait status, CPU seconds (user + system) and
    peak resident memory (kB). ``status`` None: the parent could not collect it."""

    status: int | None
    cpu_s: float
    maxrss_kb: int


def wait_child(pid: int) -> Reaped:
    """Reap ``pid``, a child of this process (blocking until it has exited)."""
    _, status, usage = os.wait4(pid, 0)
    return Reaped(status, usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def _exited(pid: int) -> bool:
    """Whether ``pid`` (not necessarily a child of this process) has exited: a zombie or gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            data = handle.read()
    except OSError:
        return True
    return data[data.rfind(b")") + 2:][:1] in (b"Z", b"X")


@dataclass(frozen=True)
class WatchedChild:
    """A child to supervise: its pid (the leader of its own process group) and the supervisor's
    read ends of its stdout, stderr and control channel."""

    pid: int
    stdout_fd: int
    stderr_fd: int
    control_fd: int


class _Watch:
    """One supervision: the poll loop's state (see :func:`supervise`)."""

    def __init__(self, child: WatchedChild, limits: Limits, startup_timeout_s: float, workdir: str | None,
                 reap: Callable[[int], Reaped] | None = None) -> None:
        pid, stdout_fd, stderr_fd, control_fd = child.pid, child.stdout_fd, child.stderr_fd, child.control_fd
        self.child = child
        self.reap = reap
        self.obs = Observation(pid=pid)
        self.limits = limits
        self.workdir = workdir
        self.disk_cap = int(limits.disk_mb) * 1024 * 1024
        self.next_disk_check = 0.0
        self.launched = time.monotonic()
        if startup_timeout_s <= 0:  # the clock starts now: nothing of the tool ran before
            self.obs.started_at = self.launched
            self.deadline = self.launched + limits.timeout_s
        else:
            self.deadline = self.launched + startup_timeout_s
        self.outputs = {stdout_fd: CappedOutput(limits.output_bytes),
                        stderr_fd: CappedOutput(limits.output_bytes)}
        # Never a blocking read: the child can open its own stdout pipe again for reading
        # (/proc/self/fd/1 is a pipe, which Landlock does not cover) and take back a byte between
        # the poll that saw it and the supervisor's read, which would then wait on an empty pipe
        # the tool keeps open -- the deadline, the disk quota and every other check with it.
        for fd in (stdout_fd, stderr_fd, control_fd):
            os.set_blocking(fd, False)
        self.control = _Control(control_fd)
        self.open_fds = {stdout_fd, stderr_fd, control_fd}
        self.pidfd = _pidfd(pid)
        self.poller = select.poll()
        for fd in self.open_fds:
            self.poller.register(fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        if self.pidfd is not None:
            self.poller.register(self.pidfd, select.POLLIN)
        self.exited = False
        self.kernel_quota = False  # the run's tmpfs, once seen mounted on the working directory
        self.listening = False
        self.stop = False
        self.start_checked = False
        self.control_records = 0

    def _note_start(self) -> None:
        if self.obs.started_at is None and b'"kind": "started"' in self.obs.control:
            self.obs.started_at = time.monotonic()
            self.deadline = min(self.obs.started_at + self.limits.timeout_s,
                                self.launched + STARTUP_TIMEOUT_S + self.limits.timeout_s)

    def _check_disk(self, now: float) -> None:
        if self.workdir is None or self.exited or now < self.next_disk_check:
            return
        if not self.kernel_quota:  # asked again until it is there: the child mounts it after the hand-over
            self.kernel_quota = confine.is_mount_point(self.workdir)  # the kernel's device numbers
        if self.kernel_quota:  # a tmpfs of the run's size: the kernel enforces it, nothing to walk
            return
        used, entries = workdir_usage(self.workdir, stop_above=self.disk_cap)
        if used > self.disk_cap or entries > MAX_WORKDIR_ENTRIES:
            self.obs.flooded = "disk"
            self.stop = True
        self.next_disk_check = now + DISK_CHECK_S

    def _on_listener(self, event: int) -> None:
        listener = self.control.listener
        assert listener is not None
        if event & select.POLLIN:
            denial = seccomp.receive_denial(listener)
            if denial is not None:
                self.obs.denial = denial
                self.stop = True
                return
        if event & (select.POLLHUP | select.POLLERR):
            self.poller.unregister(listener)
            self.listening = False

    def _on_fd(self, fd: int, event: int) -> None:
        if fd == self.pidfd:
            self.exited = True
            self.poller.unregister(fd)
            return
        if fd == self.control.listener:
            self._on_listener(event)
            return
        try:
            chunk = (self.control.read(b'"kind": "started"' not in self.obs.control)
                     if fd == self.control.fd else os.read(fd, _CHUNK))
        except BlockingIOError:
            return
        if not chunk:
            self.poller.unregister(fd)
            self.open_fds.discard(fd)
            return
        if fd != self.control.fd:
            self.outputs[fd].feed(chunk)  # never a reason to stop: the middle is discarded
            return
        room = CONTROL_CAP - len(self.obs.control)
        self.obs.control += chunk[:max(room, 0)]
        if len(chunk) > room:
            self.obs.flooded = "control"
            self.stop = True
        self.control_records += chunk.count(b"\n")
        if self.control_records > MAX_CONTROL_RECORDS:
            self.obs.flooded = self.obs.flooded or "records"
            self.stop = True
        if self.control.listener is not None and not self.listening:
            self.poller.register(self.control.listener, select.POLLIN | select.POLLHUP | select.POLLERR)
            self.listening = True
        if not self.start_checked and _STARTED in self.obs.control:
            self.start_checked = True
            if _expects_listener(_started_record(self.obs.control)) and self.control.listener is None:
                # The filter notifies, but no one here holds its listener: a denied call would
                # only fail with ENOSYS, unrecorded. The run is the sandbox's failure; stop it now.
                self.stop = True

    def _stopped(self) -> bool:
        return self.stop

    def loop(self) -> None:
        while not self.stop:
            self._note_start()
            now = time.monotonic()
            if now >= self.deadline:
                self.obs.timed_out = self.obs.started_at is not None
                self.obs.startup_timed_out = self.obs.started_at is None
                return
            if self.exited and not self.open_fds:
                return
            self._check_disk(now)
            if self._stopped():
                return
            idle_s = 0.05 if self.pidfd is None or self.exited else (
                DISK_CHECK_S if self.workdir is not None else 3600)
            for fd, event in self.poller.poll(int(min(self.deadline - now, idle_s) * 1000) + 1):
                self._on_fd(fd, event)
                if self._stopped():
                    return
            if self.pidfd is None and not self.exited:
                self.exited = (_exited(self.obs.pid) if self.reap is not None else
                               os.waitid(os.P_PID, self.obs.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None)
            if self.exited and self.open_fds:
                # The child is gone; anything still holding its pipes is a straggler in its group.
                _kill_group(self.obs.pid)
                self.deadline = min(self.deadline, time.monotonic() + 2.0)

    def finish(self) -> Observation:
        stdout_fd, stderr_fd = self.child.stdout_fd, self.child.stderr_fd
        obs = self.obs
        _kill_group(obs.pid)
        reaped = (self.reap or wait_child)(obs.pid)
        obs.wait_status = reaped.status
        obs.cpu_s = reaped.cpu_s
        obs.maxrss_kb = reaped.maxrss_kb
        obs.listener_received = self.control.listener is not None
        obs.finished_at = time.monotonic()
        if obs.started_at is None:
            obs.started_at = self.launched
        for name, fd in (("stdout", stdout_fd), ("stderr", stderr_fd)):
            rendered, cut = self.outputs[fd].render()
            setattr(obs, name, rendered)
            if cut:
                obs.cut[name] = cut
        for fd in (stdout_fd, stderr_fd):
            os.close(fd)
        self.control.close()
        if self.pidfd is not None:
            os.close(self.pidfd)
        return obs


def supervise(child: WatchedChild, limits: Limits, *, startup_timeout_s: float = STARTUP_TIMEOUT_S,
              workdir: str | None = None, reap: Callable[[int], Reaped] | None = None) -> Observation:
    """Watch ``child`` (leader of its own process group) until it ends; reap it.

    Closes the three read ends. The wall clock is the supervisor's: with ``startup_timeout_s``
    0 (a warm child, forked idle before its request) it starts at this call; otherwise (a cold
    child still importing pandas) when the child's ``started`` record arrives -- on a channel the
    child cannot read back -- and never later than ``startup_timeout_s`` after this call. With
    ``workdir``, its size is measured every :data:`DISK_CHECK_S` and a child holding more than
    ``limits.disk_mb`` there (or more than :data:`MAX_WORKDIR_ENTRIES` entries) is killed. A
    call the seccomp filter denies arrives as a notification on the listener the child sent
    over the control channel: recorded (``Observation.denial``) and the child killed. ``reap``
    collects the child once it is killed (default: :func:`wait_child`, for a child of this
    process; the warm worker's router supervises children of a zygote, which reaps them).
    """
    watch = _Watch(child, limits, startup_timeout_s, workdir, reap)
    try:
        watch.loop()
    finally:
        obs = watch.finish()
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


def decode_record(line: bytes) -> JSONObject | None:
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


_STARTED = b'"kind": "started"'


def _started_record(control: bytes | bytearray) -> JSONObject | None:
    """The ``started`` record on the control channel (sent by the harness before any tool code)."""
    for line in bytes(control).split(b"\n"):
        if _STARTED in line:
            record = decode_record(line)
            if record is not None and record.get("kind") == "started":
                return record
    return None


def _expects_listener(started: JSONObject | None) -> bool:
    """Whether the child's filter hands denied calls to a listener (``seccomp.notify``)."""
    filt = (started or {}).get("seccomp")
    return isinstance(filt, dict) and filt.get("notify") is True


#: The kinds of record the harness and the audit hook write; any other is garbage.
_KINDS = frozenset({"started", "refused", "result", "harness_error"})
#: Only the result record may be long (it holds the value, up to ``RESULT_CAP``); any other record
#: longer than this is garbage, never decoded.
_SMALL_RECORD = 8 * 1024
_RESULT_PREFIX = b'{"kind": "result", '


#: Values the records beside the result may hold in all (``started`` and the hook's refusals: a
#: dozen each, up to the record cap).
_VALUES_BESIDE_RESULT = 200_000


def _values(line: bytes) -> int:
    """How many JSON values ``line`` can hold at most: counted from its separators and openers
    (those inside strings too, so an upper bound), before any decoding. The channel's lines share
    one budget -- a result's worth and a little -- so 17 MB of ``{},{},...``, in one line or in a
    thousand records, is refused unread instead of costing seconds and a gigabyte to decode."""
    return line.count(b",") + line.count(b"[") + line.count(b"{")


def _records(control: bytes | bytearray) -> list[JSONObject]:
    """The control channel's records, decoded up to the first that is not well-formed (a
    ``garbage`` record then ends the list: the channel is unreadable, nothing after it counts)."""
    records = []
    # over the whole channel, not a line; a result's values count up to twice here (a list of a
    # million empty containers holds a million openers and a million commas)
    budget = 2 * MAX_ITEMS + _VALUES_BESIDE_RESULT
    for line in bytes(control).split(b"\n"):
        if not line.strip():
            continue
        record = None
        values = _values(line)
        budget -= values
        if (len(line) <= _SMALL_RECORD or line.startswith(_RESULT_PREFIX)) and budget >= 0:
            record = decode_record(line)
        if record is None or record.get("kind") not in _KINDS:
            records.append({"kind": "garbage"})
            break
        records.append(record)
    return records


def _field_text(record: JSONObject, key: str, limit: int = 2000) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    text = value if type(value) is str else json.dumps(value)[:limit]
    return text[:limit]


def _field_int(record: JSONObject, key: str) -> int | None:
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


@dataclass
class _Seen:
    """The control records and the wait status of one run, read once for the checks below."""

    records: list[JSONObject]
    started: JSONObject | None
    refusals: list[JSONObject]
    results: list[JSONObject]
    harness_errors: list[JSONObject]
    signum: int | None
    exit_code: int | None
    #: The harness's own failure before tool code: a ``harness_error`` record that no ``started``
    #: record precedes (the harness sends ``started`` before the tool's first line, so nothing the
    #: tool writes can come first).
    setup_error: JSONObject | None = None

    @classmethod
    def of(cls, obs: Observation) -> _Seen:
        records = _records(obs.control)
        started = next((r for r in records if r.get("kind") == "started"), None)
        # A refusal record counts only when the audit hook that writes it was installed (the
        # "started" record, sent before any tool code, says so): with the hook off, the tool is
        # the only one that could have written it.
        hooked = started is not None and started.get("audit_hook") is True
        status = obs.wait_status or 0
        setup_error = None
        for record in records:
            if record.get("kind") == "started":
                break
            if record.get("kind") == "harness_error":
                setup_error = record
                break
        return cls(records=records, started=started, setup_error=setup_error,
                   refusals=[r for r in records if r.get("kind") == "refused"] if hooked else [],
                   results=[r for r in records if r.get("kind") == "result"],
                   harness_errors=[r for r in records if r.get("kind") == "harness_error"],
                   signum=os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                   exit_code=os.WEXITSTATUS(status) if os.WIFEXITED(status) else None)


def _base_result(obs: Observation, seen: _Seen) -> ExecutionResult:
    result = ExecutionResult(status="crashed", stdout=_text(obs.stdout), stderr=_text(obs.stderr),
                             duration_s=round(max(obs.finished_at - (obs.started_at or 0.0), 0.0), 6))
    result.details = {"pid": obs.pid, "cpu_s": round(obs.cpu_s, 4), "maxrss_kb": obs.maxrss_kb,
                      "exit_code": seen.exit_code, "signal": _signal_name(seen.signum)}
    if obs.cut:
        result.details["output_cut"] = dict(obs.cut)
    if seen.started is not None:
        result.details["confinement"] = {k: v for k, v in seen.started.items() if k != "kind"}
    if seen.refusals:
        result.details["refused"] = [f"{_field_text(r, 'event', 200)}: {_field_text(r, 'detail', 500)}"
                                     for r in seen.refusals[:20]]
    return result


def _stop(result: ExecutionResult, status: str, layer: str, message: str, *, rule: str | None = None,
          evidence: str | None = None) -> ExecutionResult:
    """Set the outcome; ``evidence`` names what the supervisor itself observed (never a claim)."""
    result.status = status  # type: ignore[assignment]
    result.layer = layer
    result.rule = rule
    result.error_message = message
    if evidence:
        result.details["evidence"] = evidence
    return result


#: ``ExecutionResult.details`` key set when the sandbox, not the tool, failed the run (the backends
#: try once more on a fresh child, then raise :class:`~finevo.errors.SandboxUnavailable`).
SANDBOX_FAILURE = "sandbox_failure"


def _sandbox_failure(obs: Observation, seen: _Seen, result: ExecutionResult) -> ExecutionResult | None:
    """The sandbox could not run the tool as it must (evidence from before any tool code): the
    harness failed to confine the child (e.g. the seccomp listener's hand-over), or the filter
    notifies and its listener never reached the supervisor. Never the tool's result."""
    if seen.setup_error is not None:
        reason = (f"{_field_text(seen.setup_error, 'error_type', 200)}: "
                  f"{_field_text(seen.setup_error, 'error_message')}")
    elif _expects_listener(seen.started) and not obs.listener_received:
        reason = "the seccomp listener never reached the supervisor"
    else:
        return None
    result.details[SANDBOX_FAILURE] = True
    result.value = None
    return _stop(result, "crashed", "harness", f"the sandbox could not start the tool: {reason}")


def _supervisor_stops(obs: Observation, limits: Limits, seen: _Seen, result: ExecutionResult) -> ExecutionResult | None:
    """What the supervisor did itself: its clock, its caps, a denial the kernel handed to it."""
    if obs.startup_timed_out:
        return _stop(result, "crashed", "harness", "the sandbox child did not start in time")
    if obs.timed_out:
        return _stop(result, "timeout", "timeout", f"wall-clock limit of {limits.timeout_s:g}s exceeded; "
                                                   "process group killed", evidence="the supervisor's clock")
    if obs.flooded == "control":
        return _stop(result, "killed", "output-cap", f"the tool process sent more than {CONTROL_CAP} bytes "
                                                     "on the result channel", evidence="the supervisor's cap")
    if obs.flooded == "disk":
        return _stop(result, "killed", "disk-quota", f"the working directory grew past {limits.disk_mb} MB or "
                                                     f"{MAX_WORKDIR_ENTRIES} entries; process group killed",
                     evidence="the supervisor's measure of the working directory")
    if obs.denial is not None:
        call = _field_text(obs.denial, "call", 80) or "?"
        result.details["denied_call"] = dict(obs.denial)
        return _stop(result, "blocked", "seccomp", f"blocked by seccomp: the tool made a system call outside "
                                                   f"the allow-list ({call}); the supervisor killed it",
                     rule="seccomp", evidence=f"seccomp notification: {call}")
    if seen.refusals:
        first = seen.refusals[0]
        event = _field_text(first, "event", 200) or "?"
        return _stop(result, "blocked", "audit-hook", f"refused at run time: {event}: "
                                                      f"{_field_text(first, 'detail', 500)}", rule=event)
    if obs.flooded == "records":  # after the refusals: a tool refused again and again is still refused
        return _stop(result, "killed", "output-cap", f"the tool process sent more than {MAX_CONTROL_RECORDS} "
                                                     "records on the result channel", evidence="the supervisor's cap")
    return None


def _signal_stops(obs: Observation, limits: Limits, seen: _Seen, result: ExecutionResult) -> ExecutionResult | None:
    """A death by signal: a hint only (the tool may send itself any of these), except the CPU
    limit, which the supervisor checks against the child's own usage: a SIGKILL counts as the
    limit's only when the child used at least its soft limit of CPU (the kernel's SIGKILL comes at
    the hard limit, a second later); short of it, the tool may have killed itself to look stopped."""
    signum = seen.signum
    if signum is None:
        return None
    filtered = _kernel_signals_filtered(seen)
    # Under the filter the tool can neither send itself SIGXCPU nor lower its CPU limit nor give a
    # new process SIGXCPU as its exit signal; the CPU used must still show the limit was reached
    # (half of it at least: the reaped usage runs short of the kernel's own count under load).
    if (signum == signal.SIGXCPU and filtered and obs.cpu_s >= _CPU_SHARE_SEEN * limits.cpu_s) \
            or (signum == signal.SIGKILL and obs.cpu_s >= limits.cpu_s):
        return _stop(result, "killed", "rlimit-cpu", f"CPU limit of {limits.cpu_s}s exceeded",
                     evidence=f"the kernel's CPU-limit signal after {obs.cpu_s:.2f}s of CPU")
    if signum == signal.SIGXCPU:
        return _stop(result, "killed", "rlimit-cpu", f"CPU limit of {limits.cpu_s}s exceeded (SIGXCPU after "
                                                     f"{obs.cpu_s:.2f}s of CPU)")
    if signum == signal.SIGXFSZ:
        # Never evidence: CPython ignores SIGXFSZ (a write past the limit fails with EFBIG), so a
        # death by it means the tool restored the signal -- and then one byte written past the
        # limit's offset (a sparse seek) raises it on demand.
        return _stop(result, "killed", "rlimit-fsize", f"file size limit of {limits.fsize_mb} MB exceeded (SIGXFSZ)")
    if signum == signal.SIGSYS:
        return _stop(result, "crashed", "signal", "the tool process died of SIGSYS without a denial the "
                                                  "supervisor recorded (not a seccomp refusal)")
    return _stop(result, "crashed", "signal", f"the tool process died of {_signal_name(signum)}")


#: The share of its CPU limit a child's reaped usage must show for the kernel's SIGXCPU to be the
#: limit's evidence (the usage read at the reap runs short of the kernel's own count, by 2% on an
#: idle machine and more under load).
_CPU_SHARE_SEEN = 0.5


def _kernel_signals_filtered(seen: _Seen) -> bool:
    """Whether the child's seccomp filter refused it sending itself SIGXCPU / SIGXFSZ / SIGSYS
    (then a death by one of them is the kernel's doing)."""
    filt = ((seen.started or {}).get("seccomp") or {})
    return isinstance(filt, dict) and filt.get("enforced") is True


def _channel_trouble(obs: Observation, seen: _Seen, result: ExecutionResult) -> ExecutionResult | None:
    if seen.harness_errors:  # after "started" (one before it is the sandbox's failure, above):
        # the tool's code ran and could have written it -- the run is the tool's, in its words
        err = seen.harness_errors[0]
        return _stop(result, "crashed", "result", f"the tool process reported a harness failure after the tool "
                                                  f"started: {_field_text(err, 'error_type', 200)}: "
                                                  f"{_field_text(err, 'error_message')}")
    garbage = any(r.get("kind") == "garbage" for r in seen.records)
    if len(seen.results) == 1 and not garbage:
        return None
    if not seen.results and not garbage:  # the harness sends a result whatever the tool did, unless
        # the tool's code ended the process first (os._exit, a fatal error in its C code)
        return _stop(result, "crashed", "result", f"the tool process exited (code {seen.exit_code}) with no result")
    result.error_type = "ResultUnreadable"
    return _stop(result, "crashed", "result", f"the tool process exited (code {seen.exit_code}) with an unreadable "
                                              "result channel (garbage, a truncated or unbounded record, or more "
                                              "than one result)")


#: What an exception the tool raised suggests (by errno): (status, layer). Claims, not evidence:
#: the tool could raise any of them itself, so none is ever "blocked".
_ERRNO_HINTS = {errno_mod.EFBIG: ("killed", "rlimit-fsize"), errno_mod.EMFILE: ("killed", "rlimit-nofile")}


def _from_record(seen: _Seen, result: ExecutionResult) -> ExecutionResult:
    record = seen.results[0]
    outcome = record.get("outcome")
    if outcome == "ok":
        result.status = "ok"
        result.value = record.get("value")
        return result
    if outcome == "unserialisable":
        error_type = _field_text(record, "error_type", 40)
        result.error_type = error_type if error_type in REFUSALS else "ResultShape"
        return _stop(result, "crashed", "result", _field_text(record, "error_message") or "unreadable value")
    if outcome != "exception":
        result.error_type = "ResultUnreadable"
        return _stop(result, "crashed", "result", "the tool process sent a result record of no known kind")
    result.error_type = _field_text(record, "error_type", 200)
    result.traceback = _field_text(record, "traceback", 20000)
    result.line = _field_int(record, "line")
    result.col = _field_int(record, "col")
    message = _field_text(record, "error_message") or ""
    result.error_message = message
    result.status = "exception"
    errno = _field_int(record, "errno")
    landlock = (seen.started or {}).get("landlock")
    if errno in (errno_mod.EACCES, errno_mod.EPERM, errno_mod.EXDEV) \
            and isinstance(landlock, dict) and landlock.get("enforced") is True:
        # Landlock answers this way -- and so can the tool, by raising it: a plain failure of the
        # tool with a hint, never "blocked"
        result.details["hint"] = "landlock"
        return result
    if record.get("memory_error") is True:
        return _with(result, "killed", "rlimit-as", message)
    if errno in _ERRNO_HINTS:
        return _with(result, *_ERRNO_HINTS[errno], message)
    if (errno == errno_mod.EAGAIN and result.error_type == "BlockingIOError") or \
            (result.error_type == "RuntimeError" and "can't start new thread" in message):
        return _with(result, "killed", "rlimit-nproc", message)
    if record.get("recursion_error") is True:
        result.layer = "recursion-limit"
    return result


def _classify(obs: Observation, limits: Limits) -> ExecutionResult:
    seen = _Seen.of(obs)
    result = _base_result(obs, seen)
    return (_sandbox_failure(obs, seen, result) or _supervisor_stops(obs, limits, seen, result)
            or _signal_stops(obs, limits, seen, result)
            or _channel_trouble(obs, seen, result) or _from_record(seen, result))


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
