"""Run payloads through :mod:`kernel_host` in one of the three settings and check canaries outside.

Settings: ``root`` (the host runs as root, as CI does), ``unprivileged`` (uid 65534, no
capabilities; user namespaces allowed) and ``unprivileged-no-unshare`` (the same, started under a
seccomp filter that refuses ``unshare(2)``, as Docker's default profile does).

The canaries are made so that only a kernel layer can protect them from the host's uid: the secret
file is world-readable and -writable, its directory world-writable, the secret sits in the host's
*initial* environment (so ``/proc/<host>/environ`` shows it), and a TCP listener waits on
127.0.0.1. Outside traces checked after every payload: the secret in anything returned, the file's
bytes and the directory's listing, a connection to the listener, files left in ``/dev/shm``,
``/tmp`` or site-packages, and a dead host or worker.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from finevo.sandbox.selftest import default_base_dir
from runner.inputs.corpus import Payload

from .unprivileged import available, unprivileged_command

SETTINGS = ("root", "unprivileged", "unprivileged-no-unshare")
HOST_SCRIPT = Path(__file__).with_name("kernel_host.py")


def setting_unavailable(setting: str) -> str | None:
    if setting == "root":
        return None if os.geteuid() == 0 else "the root setting needs root"
    return available()


@dataclass
class Scene:
    root: Path
    canary_file: Path
    secret_file_text: str
    secret_env_name: str
    secret_env_value: str
    listener: socket.socket
    leftovers: list[Path] = field(default_factory=list)

    @classmethod
    def create(cls) -> Scene:
        # not under /tmp: a warm worker with a mount namespace has a private /tmp, where the
        # canaries would be invisible (nothing proved about Landlock)
        root = Path(tempfile.mkdtemp(prefix="finevo-kcorpus-", dir=default_base_dir()))
        root.chmod(0o755)
        canary_dir = root / "canary"
        canary_dir.mkdir()
        canary_dir.chmod(0o777)
        text = f"KERNEL-CANARY-{secrets.token_hex(12)}"
        canary = canary_dir / "secret.txt"
        canary.write_text(f"header\n{text}\n", encoding="utf-8")
        canary.chmod(0o666)
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.bind(("127.0.0.1", 0))
        listener.listen(64)
        listener.setblocking(False)
        purelib = Path(sysconfig.get_paths()["purelib"])
        leftovers = [Path("/dev/shm/finevo-pay-208"), Path("/dev/shm/finevo-pay-210"),
                     Path("/tmp/finevo-pay-209"), Path("/tmp/owned"), purelib / "finevo_pay_212.pth"]
        return cls(root=root, canary_file=canary, secret_file_text=text,
                   secret_env_name=f"FINEVO_KCANARY_{secrets.token_hex(4).upper()}",
                   secret_env_value=f"sk-kernel-canary-{secrets.token_hex(16)}", listener=listener,
                   leftovers=leftovers)

    def fingerprint(self) -> tuple[Any, ...]:
        data = self.canary_file.read_bytes()
        st = self.canary_file.stat()
        return hashlib.sha256(data).hexdigest(), st.st_mtime_ns, sorted(os.listdir(self.canary_file.parent))

    def substitutions(self) -> dict[str, Any]:
        return {"canary_file": str(self.canary_file), "canary_dir": str(self.canary_file.parent),
                "host": "127.0.0.1", "port": self.listener.getsockname()[1], "secret_name": self.secret_env_name}

    def contacts(self) -> int:
        count = 0
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, OSError):
                return count
            conn.close()
            count += 1

    def close(self) -> None:
        self.listener.close()
        for path in self.leftovers:
            if path.exists():
                path.unlink()
        shutil.rmtree(self.root, ignore_errors=True)


def run_setting(setting: str, payloads: list[Payload], scene: Scene, *, policy: str,
                limits: dict[str, Any], timeout_s: float = 1500.0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Run ``payloads`` one at a time in a host of ``setting``; return its layers record and one
    result per payload, each with the outside checks done right after that payload."""
    workdir = Path(tempfile.mkdtemp(prefix="finevo-khost-"))
    try:
        script = workdir / "kernel_host.py"
        shutil.copyfile(HOST_SCRIPT, script)
        script.chmod(0o644)
        workdir.chmod(0o755)
        if setting == "root":
            command = [sys.executable, "-I", "-B", str(script)]
        else:
            command = unprivileged_command([str(script)], workdir)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), scene.secret_env_name: scene.secret_env_value}
        request = {"refuse_unshare": setting == "unprivileged-no-unshare", "policy": policy, "limits": limits,
                   "payloads": [{"id": p.id, "entry": p.entry, "args": p.args,
                                 "code": p.materialise(**scene.substitutions())} for p in payloads]}
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, cwd=str(workdir), text=True)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(request))
        proc.stdin.close()
        layers: dict[str, Any] = {}
        results: list[dict[str, Any]] = []
        before = scene.fingerprint()
        for line in proc.stdout:
            record = json.loads(line)
            if record["kind"] == "layers":
                layers = record
            elif record["kind"] == "result":
                record["contacts"] = scene.contacts()
                after = scene.fingerprint()
                record["canary_changed"] = after != before
                before = after
                record["leftovers"] = [str(p) for p in scene.leftovers if p.exists()]
                for path in scene.leftovers:
                    if path.exists():
                        path.unlink()
                texts = " ".join(record.get("texts") or [])
                record["leaked"] = [label for label, secret in (("env", scene.secret_env_value),
                                                                ("file", scene.secret_file_text)) if secret in texts]
                results.append(record)
            elif record["kind"] == "done":
                break
        proc.wait(timeout=timeout_s)
        stderr = proc.stderr.read() if proc.stderr else ""
        if proc.returncode != 0:
            raise AssertionError(f"the {setting} host failed (exit {proc.returncode}): {stderr[-2000:]}")
        return layers, results
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
