"""A non-root host keeps its API key out of reach of the tools it runs.

When the gate runs without root (the container's user), sandbox children share its uid. The key
then lives in the *initial* environment of the gate process, which ``/proc/<pid>/environ`` shows
to any same-uid process while the gate is dumpable -- ``os.environ[...] = ...`` after start never
reaches that file, so this test starts a real process with the key in its initial environment.

Set-up (needs root, ``unshare`` and ``setpriv``): the host runs as uid 65534 with no capabilities,
started through the very interpreter running the tests (``sys.executable``, never its resolved
target: in a virtual environment that target is the base interpreter, which has not got finevo
installed). What that interpreter needs -- the environment's own directory (``pyvenv.cfg``, its
``bin``), the base interpreter and standard library, the site-packages and the finevo sources --
may live under a 0700 directory (``/root/.pyenv``, a venv under ``/root``); the host then runs
in a private mount namespace where each such directory is replaced by a 0755 tmpfs holding only
bind mounts of what is needed from it, so every path stays the same and nothing grants the host
extra rights. A probe process (also uid 65534, no capabilities) reads the host's environ before and after
the sandbox is created: before, it must see the key (the probe works); after, it must be refused.
The tool, run with the policy off, tries /proc of its parent and grandparent, fork, posix_spawn and
``_posixsubprocess.fork_exec``; the key must never appear and no process may be created.
"""

from __future__ import annotations

import json
import os
import secrets
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from .unprivileged import DROP, unprivileged_command

pytestmark = [pytest.mark.timeout(300),
              pytest.mark.skipif(os.geteuid() != 0, reason="starting a non-root host needs root"),
              pytest.mark.skipif(not (shutil.which("unshare") and shutil.which("setpriv")),
                                 reason="needs util-linux unshare and setpriv")]

KEY_NAME = "OPENAI_API_KEY"

HOST = r'''
import json, sys
from finevo.sandbox import Limits, confine, create_sandbox

backend = sys.argv[1]
print(json.dumps({"stage": "before", "dumpable": confine.dumpable()}), flush=True)
sys.stdin.readline()
TOOL = """
import json
import os


def probe(pids: list) -> str:
    seen = {}
    for pid in [os.getppid(), *pids]:
        try:
            with open(f"/proc/{pid}/environ", "rb") as handle:
                seen[f"read {pid}"] = handle.read().decode("latin-1")
        except BaseException as exc:
            seen[f"read {pid}"] = f"refused: {type(exc).__name__}"
    try:
        child = os.fork()
        if child == 0:
            os._exit(0)
        seen["fork"] = f"created {child}"
    except BaseException as exc:
        seen["fork"] = f"refused: {type(exc).__name__}"
    try:
        seen["posix_spawn"] = f"created {os.posix_spawn('/bin/true', ['/bin/true'], {})}"
    except BaseException as exc:
        seen["posix_spawn"] = f"refused: {type(exc).__name__}"
    try:
        import _posixsubprocess
        r, w = os.dup(0), os.dup(1)  # pipes are denied too (a host-wide counter): any two descriptors
        pid = _posixsubprocess.fork_exec([b"/bin/true"], [b"/bin/true"], True, (), None, None, -1, -1, -1,
                                         -1, -1, -1, r, w, True, False, 0, None, None, None, -1, None, False)
        seen["fork_exec"] = f"created {pid}"
    except BaseException as exc:
        seen["fork_exec"] = f"refused: {type(exc).__name__}"
    print(json.dumps(seen))
    return json.dumps(seen)
"""
with create_sandbox(None, backend=backend, policy=False) as box:
    worker = getattr(box, "worker_info", {}).get("pid")
    import os
    # the tool's parent and grandparent: worker and host, or (subprocess backend) host and its parent
    chain = [worker, os.getpid()] if worker else [os.getpid(), os.getppid()]
    result = box.run(TOOL, "probe", {"pids": chain}, Limits(timeout_s=30.0, cpu_s=10))
    print(json.dumps({"stage": "after", "pid": os.getpid(), "worker": worker, "chain": chain,
                      "dumpable": confine.dumpable(),
                      "layers": box.layers(), "result": result.to_dict()}, default=str), flush=True)
    sys.stdin.readline()
'''


def _host_command(backend: str, tmp: Path) -> list[str]:
    script = tmp / "host.py"
    script.write_text(HOST, encoding="utf-8")
    script.chmod(0o644)
    tmp.chmod(0o755)
    return unprivileged_command([str(script), backend], tmp)


def _read_line(proc: subprocess.Popen[str], deadline: float) -> dict:
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if ready:
            line = proc.stdout.readline()
            if not line:
                break
            return json.loads(line)
    proc.kill()
    raise AssertionError(f"the host said nothing: {proc.stderr.read() if proc.stderr else ''}")


def _probe(pid: int) -> subprocess.CompletedProcess[str]:
    """Read /proc/<pid>/environ as uid 65534 without any capability."""
    return subprocess.run([*DROP, "cat", f"/proc/{pid}/environ"], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["warm", "subprocess"])
def test_non_root_host_environment_is_out_of_reach(backend: str) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="finevo-host-"))  # pytest's own temp tree is 0700
    try:
        _run_host(backend, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_host(backend: str, tmp: Path) -> None:
    key = f"sk-fake-{secrets.token_hex(16)}"
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp", KEY_NAME: key}
    proc = subprocess.Popen(_host_command(backend, tmp), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd="/")
    deadline = time.monotonic() + 240
    try:
        before = _read_line(proc, deadline)
        host_pid = proc.pid  # unshare, sh and setpriv exec in place: same pid
        # the probe works: a dumpable same-uid process's initial environment shows the key
        assert before["dumpable"] == 1
        seen = _probe(host_pid)
        assert key in seen.stdout, f"the probe could not read a dumpable host: {seen.stderr}"
        proc.stdin.write("go\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        after = _read_line(proc, deadline)
        for pid in [host_pid, after["worker"]]:
            if pid:
                seen = _probe(pid)
                assert seen.returncode != 0 and key not in seen.stdout, f"read /proc/{pid}/environ"
                assert "Permission denied" in seen.stderr
        assert after["pid"] == host_pid and after["dumpable"] == 0
        assert after["layers"]["host_non_dumpable"] is True
        assert after["layers"]["uid"] is False  # really the non-root path
        result = after["result"]
        texts = json.dumps(result)
        assert key not in texts
        assert result["status"] == "blocked" and result["layer"] in ("audit-hook", "seccomp"), result
        if result["layer"] == "seccomp":
            # _posixsubprocess.fork_exec raises no audit event: the kernel killed the tool at the
            # clone, before the tool could print what it tried
            assert not result["stdout"].strip() or "created" not in result["stdout"], result
        else:
            attempts = json.loads(result["stdout"].strip().splitlines()[-1])
            assert attempts and all(v.startswith("refused") for v in attempts.values()), attempts
            assert set(attempts) >= {"fork", "posix_spawn", "fork_exec"}
            assert {f"read {pid}" for pid in after["chain"]} <= set(attempts)
        proc.stdin.write("done\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        assert proc.wait(timeout=max(1.0, deadline - time.monotonic())) == 0, proc.stderr.read()  # type: ignore[union-attr]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
