"""The cold sandbox child: ``python -I -B -m finevo.sandbox.child`` once per execution.

The subprocess backend starts it in a new session with an empty environment (BLAS thread
variables only), the request on stdin and the control pipe on the descriptor named in the
request. It loads numpy/pandas and the snapshot, then confines itself exactly like a child of the
warm worker and runs the tool.
"""

from __future__ import annotations

import json
import os
import sys

from finevo.sandbox.preload import preload


def main() -> int:
    request = json.loads(sys.stdin.buffer.read())
    control_fd = int(request["control_fd"])
    parent = os.getppid()
    try:
        preload(request.get("snapshot_dir"))
    except BaseException as exc:  # the supervisor reports "crashed" with this text
        os.write(control_fd, (json.dumps({"kind": "harness_error", "error_type": type(exc).__name__,
                                          "error_message": str(exc)[:2000]}) + "\n").encode())
        return 71
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    from finevo.sandbox.guard import narrow_read_roots
    from finevo.sandbox.harness import enter_and_run

    roots = narrow_read_roots(request["read_roots"])  # what the loaded libraries need of site-packages
    enter_and_run(dict(request, parent_pid=parent, read_roots=roots), control_fd)


if __name__ == "__main__":
    sys.exit(main())
