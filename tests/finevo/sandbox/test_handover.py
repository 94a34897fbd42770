"""The seccomp listener's hand-over from a tool's child to its supervisor, whatever else is in flight.

A child hands the listener of its seccomp filter to the supervisor as ``SCM_RIGHTS`` over its
control socket. The kernel counts every descriptor in flight (sent, not yet received) against the
*sending user*, and refuses a sender whose user has more in flight than the sender's own
``RLIMIT_NOFILE`` (``ETOOMANYREFS``). Sandbox children share a user with each other and with the
worker where they keep its uid (a non-root run, or uid 0 without capabilities when the interpreter
is under a 0700 home), so a hand-over must not depend on what the worker's zygotes, other
sandboxes, other gates or a hostile tool have in flight. These tests put children in that setting
on purpose (``shared_uid``: uid 0 without capabilities when the tests run as root) and check that
every run still yields a result, that a tool cannot put descriptors in flight at all, and that a
hand-over that fails anyway is the sandbox's clear error -- never a result, never a pass.
"""

from __future__ import annotations

import array
import os
import platform
import resource
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from finevo.errors import SandboxUnavailable
from finevo.paths import snapshot_dir
from finevo.sandbox import Limits, confine, seccomp
from finevo.sandbox import backends as backends_module
from finevo.sandbox.backends import SubprocessSandbox, WarmSandbox
from finevo.sandbox.selftest import default_base_dir

SUPPORT = confine.kernel_support()
pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(SUPPORT["landlock_abi"] <= 0 or not SUPPORT["seccomp"],
                                 reason=f"this kernel lacks Landlock or seccomp: {SUPPORT}")]
LIMITS = Limits(timeout_s=30.0, cpu_s=20, memory_mb=1024)
PROBE = "def probe(n: int) -> int:\n    return n * 2\n"
_, NR = seccomp._ARCH.get(platform.machine(), (0, {}))
# The tests that put hundreds of descriptors in flight, and the one whose children may hold only
# 300, run one after another: the kernel counts descriptors in flight per *user*, machine-wide, so
# one test's 600 held descriptors would starve the other's small-budget probe on the next worker.
IN_FLIGHT = pytest.mark.xdist_group("descriptors-in-flight")


@pytest.fixture
def shared_uid(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children share a user with the worker and this process: as root, they keep uid 0 without
    capabilities (the setting of an interpreter under a 0700 home); unprivileged, they always do."""
    if os.geteuid() == 0:
        monkeypatch.setattr(backends_module.confine, "needs_dac_read", lambda _paths: True)


@pytest.fixture
def worlds() -> Iterator[list[str]]:
    """Eight copies of the bundled snapshot, siblings in one directory (as the gate's hidden worlds)."""
    base = Path(tempfile.mkdtemp(prefix="finevo-handover-", dir=default_base_dir()))
    try:
        os.chmod(base, 0o755)
        for index in range(8):
            shutil.copytree(snapshot_dir(), base / f"w{index}")
        yield [str(base / f"w{index}") for index in range(8)]
    finally:
        shutil.rmtree(base, ignore_errors=True)


class _InFlight:
    """Descriptors held in flight by this process's user: sent over a socket pair nobody reads."""

    def __init__(self, count: int) -> None:
        self.ours, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        null = os.open(os.devnull, os.O_RDONLY)
        try:
            while count > 0:
                batch = min(count, 250)
                self.ours.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [null] * batch))])
                count -= batch
        finally:
            os.close(null)

    def release(self) -> None:
        self.ours.close()
        self.theirs.close()  # the queue is purged: nothing stays in flight


def _assert_shared_uid(box: Any) -> None:
    box.layers()
    assert box.kernel_info["uid"] in (0, None, os.getuid()), box.kernel_info  # the worker's user


@pytest.mark.slow
def test_many_worlds_with_children_forked_ahead_never_starve_a_hand_over(shared_uid: None,
                                                                        worlds: list[str]) -> None:
    """Three sandboxes, each judging in eight worlds (a zygote per world, a child forked ahead in
    each): whatever they hold between runs, every run of every world yields its result."""
    parent = os.path.dirname(worlds[0])
    boxes = [WarmSandbox(snapshot_dir(), policy=True, extra_read_roots=[parent]) for _ in range(3)]
    try:
        _assert_shared_uid(boxes[0])
        for round_ in range(2):
            for number, box in enumerate(boxes):
                for index, world in enumerate(worlds):
                    result = box.run(PROBE, "probe", {"n": index}, LIMITS, snapshot_dir=world)
                    assert (result.status, result.value) == ("ok", 2 * index), (round_, number, world, result)
    finally:
        for box in boxes:
            box.close()


@pytest.mark.slow
@IN_FLIGHT
def test_a_hand_over_does_not_depend_on_descriptors_others_hold_in_flight(shared_uid: None) -> None:
    """Far more descriptors in flight for the children's user than a tool may open: runs still
    yield results, and a denied call is still the supervisor's own record (the listener arrived)."""
    with WarmSandbox(None, policy=False) as box:
        _assert_shared_uid(box)
        held = _InFlight(600)
        try:
            for n in range(3):
                result = box.run(PROBE, "probe", {"n": n}, LIMITS)
                assert (result.status, result.value) == ("ok", 2 * n), result
            denied = box.run_kernel_only(_raw_call("socket", "2, 1, 0"), "probe", {}, LIMITS)
            assert (denied.status, denied.layer) == ("blocked", "seccomp"), denied
            assert denied.details["evidence"] == "seccomp notification: socket"
        finally:
            held.release()


def _raw_call(name: str, args: str) -> str:
    return ("import ctypes\n\n\ndef probe() -> int:\n"
            f"    return ctypes.CDLL(None, use_errno=True).syscall({NR[name]}, {args})\n")


# --------------------------------------------------------------------------- the router drains at once
_PIDFD_GETFD = 438  # the same number on x86-64 and aarch64
_FIONREAD = 0x541B


def _queued(pid: int) -> dict[str, int]:
    """Bytes waiting unread in each socket ``pid`` holds, by descriptor (copies taken with ``pidfd_getfd``)."""
    import ctypes
    import fcntl
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = os.pidfd_open(pid)
    queued: dict[str, int] = {}
    try:
        for name in os.listdir(f"/proc/{pid}/fd"):
            try:
                link = os.readlink(f"/proc/{pid}/fd/{name}")
            except OSError:
                continue
            if not link.startswith("socket:"):
                continue
            fd = libc.syscall(_PIDFD_GETFD, pidfd, int(name), 0)
            if fd < 0:
                continue
            try:
                count = struct.unpack("i", fcntl.ioctl(fd, _FIONREAD, b"\0" * 4))[0]
            finally:
                os.close(fd)
            if count:
                queued[f"fd {name} ({link})"] = count
    finally:
        os.close(pidfd)
    return queued


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="reading another process's sockets needs CAP_SYS_PTRACE")
def test_the_router_leaves_nothing_in_flight_between_runs(worlds: list[str]) -> None:
    """After every run the worker's sockets hold nothing unread: the child forked ahead for the next
    run has been received, its descriptors are no longer in flight.

    The router forks that child *after* writing the run's reply, so the moment ``run`` returns says
    nothing: the fork may not have been asked for yet, or its reply may be on its way. A ``stats``
    round trip is answered only once the router has finished that refill and is back at its
    request channel, where it stays until the next request (zygotes and idle children send nothing
    unasked) -- so one look after it sees the steady state, on a machine of any speed."""
    parent = os.path.dirname(worlds[0])
    with WarmSandbox(snapshot_dir(), policy=True, extra_read_roots=[parent]) as box:
        pid = int(box.worker_info["pid"])
        for index, world in enumerate(worlds):
            result = box.run(PROBE, "probe", {"n": index}, LIMITS, snapshot_dir=world)
            assert result.status == "ok", result
            assert box.worker_rss_kb() > 0  # the router is idle again: its refill is done
            left = _queued(pid)
            assert not left, f"bytes left unread after the run in {world}: {left}"


# --------------------------------------------------------------------------- a tool sends none
@pytest.mark.slow
def test_a_tool_cannot_put_a_descriptor_in_flight(shared_uid: None) -> None:
    """``sendmsg`` is allowed on the hand-over descriptor only, which no tool can recreate (its
    number is above the tool's RLIMIT_NOFILE): sending a descriptor is a recorded seccomp denial."""
    probe = ("import fcntl, os, resource\n\n\ndef probe(fd: int) -> dict:\n    seen = {}\n"
             "    for name, make in (('dup2', lambda: os.dup2(3, fd)), ('F_DUPFD', lambda: fcntl.fcntl(3, 0, fd))):\n"
             "        try:\n            seen[name] = make()\n        except OSError as exc:\n"
             "            seen[name] = exc.errno\n"
             "    seen['nofile'] = list(resource.getrlimit(resource.RLIMIT_NOFILE))\n"
             "    try:\n        os.fstat(fd)\n        seen['open'] = True\n    except OSError:\n"
             "        seen['open'] = False\n    return seen\n")
    send = ("import ctypes, os, struct\n\n\ndef probe() -> int:\n"
            "    r = os.dup(1)\n    data = ctypes.create_string_buffer(b'\\n')\n"
            "    iov = ctypes.create_string_buffer(struct.pack('QQ', ctypes.addressof(data), 1))\n"
            "    cmsg = ctypes.create_string_buffer(struct.pack('QiiI', 20, 1, 1, r) + bytes(4))\n"
            "    msg = ctypes.create_string_buffer(struct.pack('QIxxxxQQQQixxxx', 0, 0, "
            "ctypes.addressof(iov), 1, ctypes.addressof(cmsg), 24, 0))\n"
            "    return ctypes.CDLL(None).sendmsg(3, msg, 0)\n")
    import errno

    for backend in (WarmSandbox, SubprocessSandbox):
        with backend(None, policy=False) as box:
            seen = box.run_kernel_only(probe, "probe", {"fd": seccomp.HANDOVER_FD}, LIMITS)
            assert seen.status == "ok", seen
            assert seen.value == {"dup2": errno.EBADF, "F_DUPFD": errno.EINVAL, "nofile": [64, 64], "open": False}
            sent = box.run_kernel_only(send, "probe", {}, LIMITS)
            assert (sent.status, sent.layer) == ("blocked", "seccomp"), sent
            assert sent.details["evidence"] == "seccomp notification: sendmsg"


# --------------------------------------------------------------------------- a failed hand-over is an error
@pytest.fixture
def small_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sandbox processes start with RLIMIT_NOFILE 300 (soft and hard): the children's hand-over
    budget, just above HANDOVER_FD."""
    real = subprocess.Popen

    def limited(*args: Any, **kwargs: Any) -> Any:
        kwargs["preexec_fn"] = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (300, 300))
        return real(*args, **kwargs)

    monkeypatch.setattr(backends_module.subprocess, "Popen", limited)


@pytest.mark.slow
@IN_FLIGHT
@pytest.mark.parametrize("backend", [WarmSandbox, SubprocessSandbox], ids=["warm", "subprocess"])
def test_a_hand_over_the_kernel_refuses_is_the_sandboxs_error_never_a_result(
        shared_uid: None, small_budget: None, backend: type[Any]) -> None:
    with backend(None, policy=True) as box:
        _assert_shared_uid(box)
        held = _InFlight(600)  # more than the children's budget of 300
        try:
            with pytest.raises(SandboxUnavailable) as raised:
                box.run(PROBE, "probe", {"n": 1}, LIMITS)
            assert "Too many references" in str(raised.value), raised.value
            assert "before the tool ran" in str(raised.value)
        finally:
            held.release()
        result = box.run(PROBE, "probe", {"n": 4}, LIMITS)  # nothing in flight: the sandbox recovers
        assert (result.status, result.value) == ("ok", 8), result


# --------------------------------------------------------------------------- what counts as the sandbox's failure
def _observed(*records: dict[str, Any], listener: bool = False) -> Any:
    import json

    from finevo.sandbox.supervise import Observation

    return Observation(pid=1, control=bytearray(b"".join(json.dumps(r).encode() + b"\n" for r in records)),
                       wait_status=71 << 8, listener_received=listener)


STARTED = {"kind": "started", "seccomp": {"enforced": True, "notify": True}, "audit_hook": True}
OK = {"kind": "result", "outcome": "ok", "value": 1}


@pytest.mark.parametrize(("records", "listener", "failed"), [
    ([{"kind": "harness_error", "error_type": "HandoverFailed", "error_message": "refused"}], False, True),
    ([STARTED, OK], False, True),  # the filter notifies, its listener never came
    ([STARTED, OK], True, False),
    ([{**STARTED, "seccomp": {"enforced": True, "notify": False}}, OK], False, False),
    # written by the tool after it started: a claim, the tool's own failure
    ([STARTED, {"kind": "harness_error", "error_type": "HandoverFailed", "error_message": "x"}], True, False),
], ids=["harness error before start", "no listener", "listener", "no notification", "forged after start"])
def test_only_evidence_from_before_the_tool_makes_a_run_the_sandboxs_failure(
        records: list[dict[str, Any]], listener: bool, failed: bool) -> None:
    from finevo.sandbox.supervise import SANDBOX_FAILURE, classify

    result = classify(_observed(*records, listener=listener), LIMITS)
    assert bool(result.details.get(SANDBOX_FAILURE)) is failed, result
    assert result.status != "ok" or not failed
    if records[-1].get("kind") == "harness_error" and not failed:  # not worded as the sandbox's
        assert result.layer != "harness" and "the tool started" in str(result.error_message), result


def test_a_descriptor_sent_after_the_start_is_closed_not_taken_for_the_listener() -> None:
    """The layer below the filter: whatever descriptor arrives once the tool may run is closed."""
    from finevo.sandbox.supervise import _Control

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    r, w = os.pipe()
    try:
        theirs.sendmsg([b"\n"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [r, w]))])
        control = _Control(ours.detach())
        assert control.read(before_start=False) == b"\n"
        assert control.listener is None
        control.close()
    finally:
        theirs.close()
        os.close(r)
        os.close(w)
