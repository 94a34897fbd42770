"""Real canaries for sandbox tests: a secret in the parent's environment, a secret file outside
the sandbox, and a TCP listener on 127.0.0.1 that records every connection."""

from __future__ import annotations

import hashlib
import os
import secrets
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path

from finevo.sandbox import confine


@dataclass
class Listener:
    """Accepts and records connections on 127.0.0.1 (a contact proves a network escape)."""

    sock: socket.socket = field(default_factory=lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    contacts: list[tuple[str, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def start(self) -> None:
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.1)
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, addr = self.sock.accept()
            except (TimeoutError, OSError):
                continue
            self.contacts.append(addr)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sock.close()


@dataclass
class Canaries:
    secret_name: str
    secret_value: str
    canary_dir: Path
    canary_file: Path
    file_secret: str
    listener: Listener

    @classmethod
    def create(cls, base: Path) -> Canaries:
        canary_dir = base / f"canary-{secrets.token_hex(4)}"
        canary_dir.mkdir()
        file_secret = f"CANARY-FILE-SECRET-{secrets.token_hex(12)}"
        canary_file = canary_dir / "secret.txt"
        canary_file.write_text(f"header line\n{file_secret}\n", encoding="utf-8")
        listener = Listener()
        listener.start()
        return cls(secret_name=f"FINEVO_CANARY_KEY_{secrets.token_hex(6).upper()}",
                   secret_value=f"sk-canary-{secrets.token_hex(16)}", canary_dir=canary_dir,
                   canary_file=canary_file, file_secret=file_secret, listener=listener)

    def fingerprint(self) -> tuple[object, ...]:
        """What must never change: the file's bytes and mtime, and the directory's listing."""
        stat = self.canary_file.stat()
        digest = hashlib.sha256(self.canary_file.read_bytes()).hexdigest()
        return digest, stat.st_mtime_ns, stat.st_size, sorted(os.listdir(self.canary_dir))

    def substitutions(self) -> dict[str, object]:
        return {"canary_file": str(self.canary_file), "canary_dir": str(self.canary_dir),
                "host": "127.0.0.1", "port": self.listener.port, "secret_name": self.secret_name}

    def leaks(self, texts: list[str]) -> list[str]:
        """Which secrets appear in any of ``texts``."""
        found = []
        for label, secret in (("env key", self.secret_value), ("file secret", self.file_secret)):
            if any(secret in text for text in texts):
                found.append(label)
        return found


def group_members(pgid: int) -> list[int]:
    """Live (or unreaped) processes whose process group is ``pgid`` -- or whose pid is ``pgid``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if int(entry) == pgid or int(fields[2]) == pgid:
            found.append(int(entry))
    return found


def sandbox_processes() -> list[int]:
    """Pids of live processes running under a sandbox uid (there must be none between runs)."""
    found = []
    low, high = confine.UID_BASE, confine.UID_BASE + confine.UID_SPAN
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as handle:
                for line in handle:
                    if line.startswith("Uid:"):
                        uid = int(line.split()[1])
                        if low <= uid < high or uid == confine.NOBODY:
                            found.append(int(entry))
                        break
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return found
