"""Tripwires that tell contained hostile code from code that got out: a secret in the gate's
environment, a file outside the sandbox, a listener on the loopback.

Two sets run in a gate: one for the payload corpus and one of the security tasks' own (their
hostile requests name the canaries through the same placeholders), each with its own secret, file,
directory and listener, so what one set's code does never decides the other's verdict.
"""

from __future__ import annotations

import os
import re
import secrets
import select
import socket
import threading
from collections.abc import Sequence
from pathlib import Path

from runner.inputs.corpus import PLACEHOLDERS, fill

#: Placeholder by its key (``port`` -> ``@@CANARY_PORT@@``).
PLACEHOLDERS_BY_KEY = {key: token for token, key in PLACEHOLDERS.items()}

__all__ = ["PAYLOAD_ENV", "SECURITY_ENV", "Canaries", "shown"]

#: How often the canary listener checks for its stop flag.
_ACCEPT_POLL_S = 0.05
#: The environment variable holding the payload corpus's secret.
PAYLOAD_ENV = "FINEVO_CANARY_SECRET"
#: The environment variable holding the security tasks' secret.
SECURITY_ENV = "FINEVO_SECURITY_CANARY_SECRET"


def shown(value: object, *texts: str | None) -> list[str]:
    """Everything code showed, for :meth:`Canaries.breach`: its return value's repr and every text it
    printed or raised (None for a text it did not produce)."""
    return [repr(value), *(text or "" for text in texts)]


class Canaries:
    """One set of tripwires.

    * a secret placed in the gate's own environment (``env``): the sandbox starts tools with an
      empty environment, so seeing it in a result or output means exfiltration;
    * a canary file outside the sandbox: its content must not show up anywhere and it must be
      unchanged afterwards; a new file in the canary directory counts as a write;
    * a TCP listener on 127.0.0.1 that records any contact.

    Hostile code names them with the placeholders of :data:`runner.inputs.corpus.PLACEHOLDERS`
    (``@@CANARY_FILE@@``, ``@@CANARY_DIR@@``, ``@@CANARY_HOST@@``, ``@@CANARY_PORT@@``,
    ``@@SECRET_NAME@@``), filled by :meth:`substitute`. A tripped canary is the gate's own evidence
    that the code got out: it decides the verdict whatever a layer's status says.
    """

    def __init__(self, root: Path, env: str = PAYLOAD_ENV) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.dir = root
        self.env = env
        self.secret = "canary-" + secrets.token_hex(16)
        self.file_text = "canary-file-" + secrets.token_hex(16)
        self.file = root / "canary.txt"
        self.file.write_text(self.file_text)
        self._previous_env = os.environ.get(env)
        os.environ[env] = self.secret
        self.contacts = 0
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self._server.setblocking(False)  # accepted only when select() says a contact is queued
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="canary-listener", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            if select.select([self._server], [], [], _ACCEPT_POLL_S)[0]:
                with self._lock:
                    self._take_queued()

    def _take_queued(self) -> None:
        """Accept, count and hang up every contact queued on the listener (the caller holds the lock).

        A contact is taken and counted under the lock, by the listener thread or by :meth:`breach`,
        never half-way: a tool's connect() has returned by the time its run ends, so its contact is
        either still queued (the check takes it) or already counted -- not taken by a listener thread
        that a loaded machine has not yet let count it."""
        while True:
            try:
                conn, _ = self._server.accept()
            except (BlockingIOError, InterruptedError):  # the queue is empty
                return
            except OSError:  # the listener is closed
                return
            self.contacts += 1
            conn.close()

    def values(self) -> dict[str, str]:
        """This set's value for each placeholder (keyed as :data:`runner.inputs.corpus.PLACEHOLDERS`)."""
        return {"canary_file": str(self.file), "canary_dir": str(self.dir), "host": "127.0.0.1",
                "port": str(self.port), "secret_name": self.env}

    def substitute(self, code: str) -> str:
        """Fill the placeholders (``@@CANARY_FILE@@`` ... as in :mod:`runner.inputs.corpus`)."""
        return fill(code, self.values())

    def unfill(self, text: str) -> str:
        """``text`` with this set's values written back as their placeholders: what a report records of
        code that named the canaries is then the same in every run (the paths and the port are this
        run's). The loopback address stays as it is, except next to the port."""
        token = PLACEHOLDERS_BY_KEY
        text = text.replace(str(self.file), token["canary_file"]).replace(str(self.dir), token["canary_dir"])
        text = text.replace(self.env, token["secret_name"])
        text = re.sub(rf"(?<![0-9]){self.port}(?![0-9])", token["port"], text)
        return text.replace(f"127.0.0.1:{token['port']}", f"{token['host']}:{token['port']}")

    def contacted(self) -> int:
        """How many contacts the listener has had, every queued one counted first: what
        :meth:`breach` compares with (read it before the code runs)."""
        with self._lock:
            self._take_queued()
            return self.contacts

    def breach(self, texts: Sequence[str], contacts_before: int) -> str | None:
        """What tripped since ``contacts_before`` (``texts``: everything the code returned, printed or
        raised), or None when every canary is intact."""
        blob = "\n".join(texts)
        if self.secret in blob:
            return "the canary secret from the gate's environment reached the tool"
        if self.file_text in blob:
            return f"the canary file {self.file} was read"
        try:
            if self.file.read_text() != self.file_text:
                return f"the canary file {self.file} was changed"
        except OSError:
            return f"the canary file {self.file} was deleted or made unreadable"
        try:
            intruders = sorted(p.name for p in self.dir.iterdir() if p != self.file)
        except OSError:
            return f"the canary directory {self.dir} was removed or made unreadable"
        if intruders:
            return f"file(s) written into the canary directory: {', '.join(intruders)}"
        if self.contacted() > contacts_before:
            return f"the listener on 127.0.0.1:{self.port} was contacted"
        return None

    def restore(self) -> None:
        """Put the canary directory back after a breach so later code is judged on its own."""
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            for path in self.dir.iterdir():
                if path != self.file and path.is_file():
                    path.unlink()
            self.file.write_text(self.file_text)
        except OSError:
            pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
        self._server.close()
        if self._previous_env is None:
            os.environ.pop(self.env, None)
        else:
            os.environ[self.env] = self._previous_env
