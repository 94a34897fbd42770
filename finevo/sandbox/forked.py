"""Executions in children forked from a world zygote of the warm worker (pandas, the shim and one
snapshot already loaded).

Two halves, in two processes:

* :func:`fork_spare` runs in the **world zygote**, a process that never reads a request: it forks a
  child *before* any request exists for it. The child sets up its process group and descriptors,
  then waits on a private pipe for its request. The zygote hands the supervisor's ends of the
  child's pipes to the router (over its socket) and keeps no copy.
* :class:`SpareChild` is the **router's** handle on such a child: it hands the request over,
  supervises the run (the wall clock, the output caps, the seccomp listener, the process group),
  and asks the zygote -- the child's parent -- to reap it and report its wait status and usage.

Forking therefore happens in the zygote while the router is busy elsewhere (between requests),
never on a request's critical path, and no process that ever held a request forks a tool.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from finevo.sandbox import confine, harness, workspace
from finevo.sandbox.api import Limits
from finevo.sandbox.supervise import Reaped, WatchedChild, classify, socket_pair, supervise

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

#: Descriptor numbers inside the child.
CONTROL_FD = 3
REQUEST_FD = 4


def _read_all(fd: int) -> bytes:
    chunks: list[bytes] = []
    while True:
        chunk = os.read(fd, 1 << 20)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def fork_spare(settings: JSONObject) -> tuple[int, list[int], str]:
    """Fork one child that waits for its request (in a world zygote).

    Returns its pid, the supervisor's descriptors ``[stdout, stderr, control, request]`` (read
    ends of the first three, the write end of the request pipe) -- the caller hands them on and
    closes its copies -- and the child's working directory."""
    workdir = workspace.create()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    # The control channel is a socket pair, not a pipe: what the child writes arrives only at
    # the supervisor's end, and its own end cannot be reopened for reading (/proc/self/fd/N
    # of a socket does not open), so no descriptor in the child reads the control stream.
    ctl_r, ctl_w = socket_pair()
    req_r, req_w = os.pipe()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    pid = os.fork()
    if pid == 0:  # child: never returns
        try:
            os.setpgid(0, 0)
            null = os.open(os.devnull, os.O_RDONLY)
            os.dup2(null, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.dup2(ctl_w, CONTROL_FD)
            os.dup2(req_r, REQUEST_FD)
            os.closerange(REQUEST_FD + 1, 65536)  # the zygote's socket and every other pipe
            raw = _read_all(REQUEST_FD)
            os.close(REQUEST_FD)
            if not raw:  # the worker went away before sending anything
                os._exit(0)
            request = dict(json.loads(raw), **settings, workdir=workdir, parent_pid=os.getppid())
            harness.enter_and_run(request, CONTROL_FD)
        finally:
            os._exit(70)
    with contextlib.suppress(PermissionError, ProcessLookupError):  # the child did it already
        os.setpgid(pid, pid)
    for fd in (out_w, err_w, ctl_w, req_r):
        os.close(fd)
    return pid, [out_r, err_r, ctl_r, req_w], workdir


class SpareChild:
    """The router's handle on a forked child waiting for one request; used once."""

    def __init__(self, pid: int, fds: list[int], workdir: str) -> None:
        self.pid = pid
        out_r, err_r, ctl_r, req_w = fds
        self.workdir = workdir
        self._fds = (out_r, err_r, ctl_r)
        self._request_fd: int | None = req_w

    def run(self, request: JSONObject, reap: Callable[[int], Reaped]) -> JSONObject:
        """Hand the request to the child, supervise it, have ``reap`` collect it (its parent does),
        and return the result as a dict."""
        limits = Limits(**request["limits"])
        assert self._request_fd is not None
        try:
            data = memoryview(json.dumps(request).encode("utf-8"))
            while data:
                data = data[os.write(self._request_fd, data):]
        except BrokenPipeError:
            pass  # the child died; supervise() reports it
        finally:
            os.close(self._request_fd)
            self._request_fd = None
        out_r, err_r, ctl_r = self._fds
        # The clock is the supervisor's and starts now: the child was forked idle and runs
        # nothing of the tool before this hand-over.
        return classify(supervise(WatchedChild(self.pid, out_r, err_r, ctl_r), limits, workdir=self.workdir,
                                  startup_timeout_s=0.0, reap=reap), limits).to_dict()

    def discard(self) -> None:
        """Release an unused spare (worker shutdown): EOF makes it exit (its parent reaps it)."""
        if self._request_fd is not None:
            os.close(self._request_fd)
            self._request_fd = None
            for fd in self._fds:
                os.close(fd)
        self.cleanup()

    def cleanup(self) -> None:
        confine.unmount_quota(self.workdir)  # a per-run tmpfs: its content goes in one call
        workspace.remove(self.workdir)
