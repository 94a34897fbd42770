"""One execution in a child forked from the warm worker (which already holds pandas and the shim)."""

from __future__ import annotations

import os
import sys
from typing import Any

from finevo.sandbox import harness, workspace
from finevo.sandbox.api import Limits
from finevo.sandbox.supervise import classify, supervise

#: The control pipe's descriptor number inside the child.
CONTROL_FD = 3


def run_forked(request: dict[str, Any], settings: dict[str, Any]) -> dict[str, Any]:
    """Fork a fresh limited child for ``request``, supervise it, clean up; return the result dict."""
    limits = Limits(**request["limits"])
    workdir = workspace.create()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    ctl_r, ctl_w = os.pipe()
    child_request = dict(request, workdir=workdir, parent_pid=os.getpid(), **settings)
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
            os.closerange(CONTROL_FD + 1, 65536)
            harness.enter_and_run(child_request, CONTROL_FD)
        finally:
            os._exit(70)
    try:
        try:
            os.setpgid(pid, pid)
        except (PermissionError, ProcessLookupError):
            pass  # the child already did it (or exec'd / exited)
        for fd in (out_w, err_w, ctl_w):
            os.close(fd)
        observation = supervise(pid, out_r, err_r, ctl_r, limits)
        return classify(observation, limits).to_dict()
    finally:
        workspace.remove(workdir)
