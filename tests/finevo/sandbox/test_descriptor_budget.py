"""A child's hand-over of its seccomp listener does not depend on what other processes have in flight.

The kernel refuses to pass a descriptor over a Unix socket (``ETOOMANYREFS``) when the *sender's
user* already has more descriptors in flight -- sent, not yet received -- than the sender's
``RLIMIT_NOFILE``. A child that keeps uid 0 (the interpreter is not readable by other users, e.g. a
virtual environment under a 0700 directory) or shares the gate's uid (a non-root run) shares that
count with every other process of the user on the machine: another gate run, a daemon, a tool that
sent itself descriptors. The hand-over must still work, whatever that count is.
"""

from __future__ import annotations

import array
import os
import socket
from collections.abc import Iterator

import pytest

from finevo.sandbox import Limits, confine, create_sandbox

SUPPORT = confine.kernel_support()
pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(os.geteuid() != 0, reason="the uid-0 child exists only in a root run"),
              pytest.mark.skipif(SUPPORT["landlock_abi"] <= 0 or not SUPPORT["seccomp"],
                                 reason=f"this kernel lacks Landlock or seccomp: {SUPPORT}")]

#: Well above a child's RLIMIT_NOFILE (64 by default): what a busy user can have in flight.
IN_FLIGHT = 400


@pytest.fixture
def descriptors_in_flight() -> Iterator[int]:
    """Root sends ``IN_FLIGHT`` descriptors into a socket nobody reads, for the test's duration."""
    sender, receiver = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
    sent = 0
    try:
        fds = array.array("i", [sender.fileno()] * 100)
        while sent < IN_FLIGHT:
            sender.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, fds)])
            sent += len(fds)
        yield sent
    finally:
        sender.close()
        receiver.close()  # the kernel's collector frees what was in flight


def test_the_listener_reaches_the_supervisor_with_root_descriptors_in_flight(
        monkeypatch: pytest.MonkeyPatch, descriptors_in_flight: int) -> None:
    # the child keeps uid 0, as it does when the interpreter is not readable by other users
    monkeypatch.setattr(confine, "needs_dac_read", lambda paths: True)
    with create_sandbox(None, backend="warm") as box:
        assert box._settings["keep_dac_read"] is True
        result = box.run_kernel_only("def run(n):\n    return n + 1\n", "run", {"n": 41},
                                     Limits(timeout_s=20.0, cpu_s=5, memory_mb=1024))
    assert (result.status, result.value) == ("ok", 42), result
    assert descriptors_in_flight >= IN_FLIGHT


def test_the_tool_still_gets_the_descriptor_limit_it_was_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(confine, "needs_dac_read", lambda paths: True)
    code = ("import resource\n\ndef run():\n"
            "    return list(resource.getrlimit(resource.RLIMIT_NOFILE))\n")
    with create_sandbox(None, backend="warm") as box:
        result = box.run_kernel_only(code, "run", {}, Limits(timeout_s=20.0, cpu_s=5, memory_mb=1024, nofile=48))
    assert (result.status, result.value) == ("ok", [48, 48]), result
