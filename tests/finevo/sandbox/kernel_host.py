"""A sandbox host for the kernel-corpus tests, run as its own process in each setting.

``python kernel_host.py`` reads one JSON request on stdin::

    {"refuse_unshare": bool, "policy": "on"|"off", "backend": "warm",
     "limits": {...}, "payloads": [{"id": ..., "code": ..., "entry": ..., "args": {...}}, ...]}

With ``refuse_unshare`` it first installs a seccomp filter on itself that makes ``unshare(2)``,
``setns(2)`` and a namespace-creating ``clone(2)`` fail with EPERM -- what Docker's default profile
does -- so the sandbox it then creates (and its warm worker, which inherits the filter) cannot have
namespaces. It prints one JSON line with the sandbox's layers, then one per payload, then ``done``.
With ``"policy": "off"`` every payload runs with the static policy and the audit hook off
(``run_kernel_only``): only the kernel layers contain it.
"""

from __future__ import annotations

import ctypes
import json
import sys
from typing import Any

CAP = 20000


def refuse_unshare() -> None:
    from finevo.sandbox import seccomp

    machine = seccomp.platform.machine()
    audit_arch, table = seccomp._ARCH[machine]
    a = seccomp._Asm()
    a.ld(seccomp._OFF_ARCH)
    a.jump(seccomp._JEQ, audit_arch, 0, "allow")
    a.ld(seccomp._OFF_NR)
    a.jump(seccomp._JEQ, table["unshare"], "eperm", 0)
    a.jump(seccomp._JEQ, table["setns"], "eperm", 0)
    a.jump(seccomp._JEQ, table["clone3"], "enosys", 0)
    a.jump(seccomp._JEQ, table["clone"], 0, "allow")
    a.ld(seccomp._arg_lo(0))
    a.jump(seccomp._JSET, seccomp.CLONE_NS_FLAGS, "eperm", "allow")
    a.label("eperm")
    a.ret(seccomp.RET_ERRNO | 1)
    a.label("enosys")
    a.ret(seccomp.RET_ERRNO | 38)
    a.label("allow")
    a.ret(seccomp.RET_ALLOW)
    program = a.assemble()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:
        raise OSError("no_new_privs refused")
    buffer = ctypes.create_string_buffer(program, len(program))
    prog = seccomp._SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    if libc.prctl(seccomp.PR_SET_SECCOMP, seccomp.SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(f"seccomp refused: {ctypes.get_errno()}")


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(record, default=repr) + "\n")
    sys.stdout.flush()


def main() -> int:
    request = json.loads(sys.stdin.read())
    if request.get("refuse_unshare"):
        refuse_unshare()
        libc = ctypes.CDLL(None, use_errno=True)
        assert libc.unshare(0x10000000 | 0x40000000) != 0, "the unshare refusal did not take effect"
    from finevo.sandbox import Limits, create_sandbox

    limits = Limits(**request["limits"])
    policy_on = request.get("policy") == "on"
    with create_sandbox(None, backend=request.get("backend", "warm"), policy=policy_on) as box:
        level, missing = box.isolation()
        _emit({"kind": "layers", "layers": box.layers(), "isolation": level, "missing": missing,
               "kernel": box.kernel_info})
        for payload in request["payloads"]:
            run = box.run if policy_on else box.run_kernel_only
            try:
                result = run(payload["code"], payload.get("entry"), payload.get("args") or {}, limits)
            except Exception as exc:
                _emit({"kind": "result", "id": payload["id"], "status": "sandbox-error", "layer": None,
                       "texts": [f"{type(exc).__name__}: {exc}"]})
                continue
            texts = [repr(result.value)[:CAP], result.stdout[:CAP], result.stderr[:CAP],
                     (result.error_message or "")[:CAP], (result.traceback or "")[:CAP]]
            _emit({"kind": "result", "id": payload["id"], "status": result.status, "layer": result.layer,
                   "rule": result.rule, "evidence": result.details.get("evidence"),
                   "hint": result.details.get("hint"),
                   "value": result.value if isinstance(result.value, (int, float)) else None,
                   "error": (result.error_message or "")[:300], "texts": texts,
                   "pid": result.details.get("pid"), "restarts": getattr(box, "restarts", 0)})
    _emit({"kind": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
