"""Child side of one execution: confine the process, install the guard, run the tool, report.

The result travels as one JSON record on the control pipe (fd held by the supervisor), serialised
here by the harness from the entry's return value -- never parsed from the tool's stdout. Status
words such as timeout / killed are decided by the supervisor from what it observes, not from
anything the child says.
"""

from __future__ import annotations

import builtins
import linecache
import os
import sys
import traceback
import types
from typing import TYPE_CHECKING, NoReturn

from finevo.market import frozen_clock
from finevo.normalize import TOOL, ResultRefused, normalize
from finevo.sandbox import confine, guard, landlock
from finevo.sandbox.protocol import RESULT_CAP, sealed_dumps

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

_MAX_MESSAGE = 2000
_MAX_TB_FRAMES = 20
_write = os.write


def send(fd: int, record: JSONObject) -> None:
    """Write one newline-terminated JSON record to the control pipe."""
    _write_all(fd, (sealed_dumps(record) + "\n").encode("ascii"))


def send_result(fd: int, record: JSONObject) -> None:
    """Send the result record; one too large for the supervisor to accept is replaced by a failure."""
    try:
        data = (sealed_dumps(record) + "\n").encode("ascii")
    except (TypeError, ValueError, RecursionError) as exc:  # to_plain() let through what JSON refuses
        data = None
        record = _refused("ResultShape", f"the return value cannot be encoded: {_safe_str(exc)}")
    except MemoryError:
        data = None
        record = _refused("ResultTooLarge", "the return value is too large to encode")
    if data is not None and len(data) > RESULT_CAP:
        data = None
        record = _refused("ResultTooLarge", f"the return value takes more than {RESULT_CAP} bytes as JSON")
    if data is None:
        data = (sealed_dumps(record) + "\n").encode("ascii")
    _write_all(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = _write(fd, view)
        view = view[written:]


def _safe_str(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # a hostile __str__
        text = f"<unprintable {type(exc).__name__}>"
    return text[:_MAX_MESSAGE]


def _tool_traceback(exc: BaseException) -> str:
    """The traceback, trimmed to frames of the tool's own code."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == guard.TOOL_FILENAME]
    if len(frames) > _MAX_TB_FRAMES:
        frames = frames[:3] + frames[-(_MAX_TB_FRAMES - 3):]
    lines = ["Traceback (most recent call last):\n"] if frames else []
    lines += traceback.format_list(frames)
    lines.append(f"{type(exc).__name__}: {_safe_str(exc)}\n")
    return "".join(lines)


def _exception_record(exc: BaseException) -> JSONObject:
    record: JSONObject = {
        "kind": "result", "outcome": "exception", "error_type": type(exc).__name__,
        "error_message": _safe_str(exc), "traceback": _tool_traceback(exc),
        "memory_error": isinstance(exc, MemoryError),
        "recursion_error": isinstance(exc, RecursionError),
        "refusal": isinstance(exc, guard.SandboxRefusal),
        "errno": exc.errno if isinstance(exc, OSError) and isinstance(exc.errno, int) else None,
    }
    if isinstance(exc, SyntaxError) and exc.filename == guard.TOOL_FILENAME:
        record["line"], record["col"] = exc.lineno, exc.offset
    return record


def execute(code: str, entry: str | None, args: JSONObject) -> JSONObject:
    """Run the tool module and build the result record (never raises)."""
    reserve = bytearray(256 * 1024)  # released on MemoryError so reporting still works
    linecache.cache[guard.TOOL_FILENAME] = (len(code), None, code.splitlines(True), guard.TOOL_FILENAME)
    name = "__main__" if entry is None else "tool"
    module = types.ModuleType(name)
    module.__dict__["__builtins__"] = builtins
    sys.modules[name] = module
    try:
        compiled = compile(code, guard.TOOL_FILENAME, "exec", dont_inherit=True)
        exec(compiled, module.__dict__)
        if entry is None:
            value = None
        else:
            function = module.__dict__.get(entry)
            if not callable(function):
                return {"kind": "result", "outcome": "exception", "error_type": "EntryNotFound",
                        "error_message": f"the tool defines no function {entry!r}", "traceback": None,
                        "memory_error": False, "recursion_error": False, "refusal": False,
                        "errno": None}
            value = function(**args)
    except SystemExit as exc:
        if entry is None and exc.code in (None, 0):
            return {"kind": "result", "outcome": "ok", "value": None}
        return _exception_record(exc)
    except BaseException as exc:  # every tool failure is reported, never raised
        del reserve
        return _exception_record(exc)
    # The boundary: numpy / pandas values become plain JSON by one set of rules (normalize.py).
    try:
        value = normalize(value, TOOL)
    except ResultRefused as exc:
        return _refused(exc.error_type, exc.message)
    except BaseException as exc:  # MemoryError, or a value stranger than foreseen
        del reserve
        return _refused("ResultShape", f"the return value could not be read: {type(exc).__name__}")
    return {"kind": "result", "outcome": "ok", "value": value}


def _refused(error_type: str, message: str) -> JSONObject:
    """The record of a return value that cannot cross the boundary (a failure of the tool)."""
    return {"kind": "result", "outcome": "unserialisable", "error_type": error_type,
            "error_message": message[:_MAX_MESSAGE]}


def enter_and_run(request: JSONObject, ctl_fd: int) -> NoReturn:
    """Confine this (already separate, own-group) process, then run the tool; never returns."""
    status = 0
    frozen_clock.restart()  # the run starts at the as-of moment, however long its zygote has lived
    try:
        report = confine.Confinement()
        if request.get("unshare_net"):
            report.netns = confine.unshare_network()
        limits = request["limits"]
        if request.get("private_mounts"):  # the worker's own mount namespace: a kernel-enforced quota
            report.notes.append("quota: tmpfs" if confine.mount_quota(request["workdir"], limits["disk_mb"])
                                else "quota: walk")
        os.chdir(request["workdir"])
        if os.geteuid() != 0 or request.get("drop_uid"):  # non-root: drops userns capabilities
            confine.drop_privileges(confine.sandbox_uid_for(os.getpid()), workdir=request["workdir"],
                                    keep_dac_read=bool(request.get("keep_dac_read")), report=report,
                                    landlock_ok=landlock.abi_version() > 0)
        dedicated_uid = report.uid not in (None, 0, confine.NOBODY)
        # RLIMIT_NPROC counts every process of the child's real uid. With a uid of its own the
        # child may have exactly 1 + nproc. Sharing a uid (a non-root run, e.g. the container's
        # user) the count includes the gate's own processes, so only "none at all" can be exact:
        # a limit of 0 makes every fork, clone and thread start of the tool fail.
        extra = int(limits["nproc"])
        nproc = 1 + extra if dedicated_uid else (0 if extra == 0 else None)
        confine.set_limits(cpu_s=limits["cpu_s"], memory_mb=limits["memory_mb"],
                           fsize_mb=limits["fsize_mb"], nproc=nproc)
        confine.finish(report, parent_pid=request.get("parent_pid"))
        zone = frozen_clock.zone_for_c()
        if zone:  # the environment is empty now; C code converting to local time keeps the as-of zone
            os.putenv("TZ", zone)
        import tempfile

        tempfile.tempdir = request["workdir"]
        confine.kernel_layers(report, workdir=request["workdir"], read_roots=request["read_roots"],
                              nofile=limits["nofile"], allow_processes=extra > 0, control_fd=ctl_fd)
        if request.get("audit_hook", True):
            guard.install(workdir=request["workdir"], read_roots=request["read_roots"], report_fd=ctl_fd,
                          tool_imports=request.get("tool_imports") or guard.TOOL_IMPORTS)
        send(ctl_fd, {"kind": "started", **report.record(), "nproc_limited": nproc is not None,
                      "audit_hook": bool(request.get("audit_hook", True))})
        record = execute(request["code"], request.get("entry"), dict(request.get("args") or {}))
        send_result(ctl_fd, record)
    except BaseException as exc:  # harness trouble: tell the supervisor, then exit
        status = 71
        try:  # noqa: SIM105 - after the tool ran, no module global is trusted on the exit path
            send(ctl_fd, {"kind": "harness_error", "error_type": type(exc).__name__,
                          "error_message": _safe_str(exc)})
        except BaseException:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:  # noqa: SIM105 - as above
                stream.flush()
            except BaseException:
                pass
        os._exit(status)
