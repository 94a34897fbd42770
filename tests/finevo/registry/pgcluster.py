"""A throw-away PostgreSQL cluster for tests and benchmarks: no Docker, the system's own binaries.

``initdb`` makes a cluster in a fresh temporary directory, ``pg_ctl`` starts it on a free loopback
port (and a Unix socket inside that directory), with password authentication for every
connection; :meth:`PostgresCluster.stop` stops it and removes the directory. PostgreSQL refuses to
run as root, so when this process is root the server binaries run as the ``postgres`` user
(created by Debian's package) in a demoted child process.

Binaries: ``$FINEVO_PG_BINDIR`` (written by ``scripts/setup-postgres.sh``), else the newest
``/usr/lib/postgresql/<version>/bin`` (Debian's layout), else the directory of ``initdb`` on PATH.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

SERVER_USER = "postgres"
START_DEADLINE_S = 90.0


def find_bindir() -> tuple[Path | None, str]:
    """The directory holding ``initdb`` and ``pg_ctl``, or None and why not."""
    configured = os.environ.get("FINEVO_PG_BINDIR", "").strip()
    if configured:
        path = Path(configured)
        if (path / "initdb").is_file() and (path / "pg_ctl").is_file():
            return path, ""
        return None, f"FINEVO_PG_BINDIR={configured} holds no initdb/pg_ctl"
    candidates = sorted(Path("/usr/lib/postgresql").glob("*/bin"),
                        key=lambda p: int(p.parent.name) if p.parent.name.isdigit() else 0, reverse=True)
    for path in candidates:
        if (path / "initdb").is_file() and (path / "pg_ctl").is_file():
            return path, ""
    initdb = shutil.which("initdb")
    if initdb is not None and (Path(initdb).resolve().parent / "pg_ctl").is_file():
        return Path(initdb).resolve().parent, ""
    return None, ("no PostgreSQL server binaries (initdb, pg_ctl) found: run `bash scripts/setup-postgres.sh` "
                  "as root, or set FINEVO_PG_BINDIR")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresCluster:
    """One server, one superuser ``finevo`` with a random password."""

    def __init__(self, bindir: Path, *, durable: bool = False) -> None:
        self.bindir = bindir
        self.durable = durable  # tests turn fsync off (the server's own crash safety is not under test)
        self.user = "finevo"
        self.password = secrets.token_hex(12)
        self.port = 0
        # /tmp: reachable by the demoted server whatever TMPDIR is, and short enough for a socket path
        self.base = Path(tempfile.mkdtemp(prefix="finevo-pg-", dir="/tmp" if os.path.isdir("/tmp") else None))
        self.data = self.base / "data"
        self.sockets = self.base / "sockets"
        self.log = self.base / "server.log"
        self._demote = os.geteuid() == 0
        self._started = False

    # ---------------------------------------------------------------- process helpers
    def _run(self, *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
        kwargs: dict[str, object] = {}
        env = {"PATH": f"{self.bindir}:/usr/bin:/bin", "LC_ALL": "C", "LANG": "C"}
        if self._demote:
            account = pwd.getpwnam(SERVER_USER)
            kwargs = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
            env["HOME"] = str(self.base)
        return subprocess.run([str(self.bindir / args[0]), *args[1:]], capture_output=True, text=True,
                              env=env, cwd=self.base, timeout=timeout, check=False,
                              **kwargs)  # type: ignore[call-overload]

    def _check(self, proc: subprocess.CompletedProcess[str], what: str) -> None:
        if proc.returncode != 0:
            tail = ""
            with contextlib.suppress(OSError):
                tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
            raise RuntimeError(f"{what} failed (exit {proc.returncode}): {proc.stderr.strip()}\n{tail}")

    # ---------------------------------------------------------------- life cycle
    def start(self) -> PostgresCluster:
        self.sockets.mkdir()
        pwfile = self.base / "pwfile"
        pwfile.write_text(self.password + "\n")
        if self._demote:
            try:
                account = pwd.getpwnam(SERVER_USER)
            except KeyError:
                raise RuntimeError(f"running as root and there is no {SERVER_USER!r} user to run the server "
                                   "(Debian's postgresql package creates it)") from None
            for path in (self.base, self.sockets, pwfile):
                os.chown(path, account.pw_uid, account.pw_gid)
        os.chmod(self.base, 0o700)
        self._check(self._run("initdb", "-D", str(self.data), "-U", self.user, f"--pwfile={pwfile}",
                              "--auth=scram-sha-256", "-E", "UTF8", "--locale=C", "--no-instructions"), "initdb")
        pwfile.unlink()
        options = [f"-c unix_socket_directories={self.sockets}", "-c listen_addresses=127.0.0.1",
                   "-c max_connections=200"]
        if not self.durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        last = ""
        for _ in range(5):  # a free port can be taken between our probe and the server's bind
            self.port = free_port()
            proc = self._run("pg_ctl", "start", "-D", str(self.data), "-l", str(self.log), "-w",
                             "-t", str(int(START_DEADLINE_S)), "-o", " ".join([f"-p {self.port}", *options]))
            if proc.returncode == 0:
                self._started = True
                break
            last = proc.stderr.strip()
            log = self.log.read_text(errors="replace") if self.log.exists() else ""
            if "Address already in use" not in log:
                self._check(proc, "pg_ctl start")
        else:
            raise RuntimeError(f"pg_ctl start failed: no free port ({last})")
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """``pg_ctl start -w`` returns once the server accepts connections (it polls under its ``-t``
        deadline); one connection with the password proves the cluster is the one we made."""
        import psycopg

        with psycopg.connect(self.dsn("postgres"), connect_timeout=int(START_DEADLINE_S)):
            pass

    def stop(self) -> None:
        try:
            if self._started:
                self._run("pg_ctl", "stop", "-D", str(self.data), "-m", "fast", "-w", "-t", "60")
                self._started = False
        finally:
            shutil.rmtree(self.base, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- connections
    def dsn(self, dbname: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={self.user} password={self.password} dbname={dbname}"

    def url(self, dbname: str, *, password: str | None = None) -> str:
        return (f"postgresql+psycopg://{self.user}:{self.password if password is None else password}"
                f"@127.0.0.1:{self.port}/{dbname}")

    def create_database(self, name: str | None = None) -> str:
        """A new empty database; returns its name."""
        import psycopg

        name = name or f"t_{secrets.token_hex(6)}"
        with psycopg.connect(self.dsn("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # name: ours, hex only
        return name

    def execute_script(self, dbname: str, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.dsn(dbname), autocommit=True) as conn:
            conn.execute(sql.encode())
