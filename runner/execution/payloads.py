"""The payload corpus: hostile tool code run straight in the sandbox, next to tripwires
(:class:`Canaries`) that tell a contained payload from one that got out."""

from __future__ import annotations

import os
import secrets
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from finevo.sandbox.api import Limits
from runner.inputs.corpus import FORGED_VALUE, Payload
from runner.records import PayloadResult, PayloadState

#: Hostile payloads get a short leash: a spin or a sleep is stopped (and counted blocked) after this.
PAYLOAD_TIMEOUT_S = 1.0
#: How often the canary listener checks for its stop flag.
_ACCEPT_POLL_S = 0.05


class Canaries:
    """Tripwires for the payload corpus.

    * a secret placed in the gate's own environment (``FINEVO_CANARY_SECRET``): the sandbox starts
      tools with an empty environment, so seeing it in a result or output means exfiltration;
    * a canary file outside the sandbox: its content must not show up anywhere and it must be
      unchanged afterwards;
    * a TCP listener on 127.0.0.1 that records any contact.

    Payload code names them with the corpus placeholders (``@@CANARY_FILE@@``, ``@@CANARY_DIR@@``,
    ``@@CANARY_HOST@@``, ``@@CANARY_PORT@@``, ``@@SECRET_NAME@@``); a new file in the canary
    directory counts as a write. A payload is *unblocked* when a tripwire fired -- whatever its status;
    *blocked* only on the gate's own evidence (:func:`evidence`: the policy refused it, the
    supervisor recorded a seccomp denial, its clock or one of its caps stopped it); otherwise
    *contained* when every tripwire is intact, whatever the tool's own status claims (an
    exception it raised, a signal it died of).
    """

    ENV = "FINEVO_CANARY_SECRET"

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        self.dir = root
        self.secret = "canary-" + secrets.token_hex(16)
        self.file_text = "canary-file-" + secrets.token_hex(16)
        self.file = root / "canary.txt"
        self.file.write_text(self.file_text)
        self._previous_env = os.environ.get(self.ENV)
        os.environ[self.ENV] = self.secret
        self.contacts = 0
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(8)
        self._server.settimeout(_ACCEPT_POLL_S)
        self.port = self._server.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, name="canary-listener", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, OSError):
                continue
            self.contacts += 1
            conn.close()

    def substitute(self, code: str) -> str:
        """Fill the corpus placeholders (``@@CANARY_FILE@@`` ... as in :mod:`runner.inputs.corpus`)."""
        values = {"CANARY_FILE": str(self.file), "CANARY_DIR": str(self.dir), "CANARY_HOST": "127.0.0.1",
                  "CANARY_PORT": str(self.port), "SECRET_NAME": self.ENV, "CANARY_ENV": self.ENV}
        for name, value in values.items():
            code = code.replace(f"@@{name}@@", value).replace(f"__{name}__", value)
        return code

    def breach(self, texts: Sequence[str], contacts_before: int) -> str | None:
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
        intruders = sorted(p.name for p in self.dir.iterdir() if p != self.file)
        if intruders:
            return f"file(s) written into the canary directory: {', '.join(intruders)}"
        if self.contacts > contacts_before:
            return f"the listener on 127.0.0.1:{self.port} was contacted"
        return None

    def restore(self) -> None:
        """Put the canary directory back after a breach so later payloads are judged on their own."""
        try:
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
            os.environ.pop(self.ENV, None)
        else:
            os.environ[self.ENV] = self._previous_env


#: Layers whose "blocked" is the gate's own decision: the static policy (before anything ran) and
#: the audit hook, whose refusal the supervisor counts only when the hook was installed.
_GATE_LAYERS = frozenset({"policy", "audit-hook"})


def evidence(result: Any) -> str | None:
    """What the gate itself saw stop this run, or None: never a status the tool could claim (an
    exception it raised, a signal it sent itself)."""
    if result.status == "blocked" and result.layer in _GATE_LAYERS:
        return str(result.layer)
    found = (result.details or {}).get("evidence")
    return found if isinstance(found, str) and found else None


def run_payload(sandbox: Any, payload: Payload, canaries: Canaries) -> PayloadResult:
    before = canaries.contacts
    start = time.monotonic()
    try:
        result = sandbox.run(canaries.substitute(payload.code), payload.entry, dict(payload.args),
                             Limits(timeout_s=PAYLOAD_TIMEOUT_S, cpu_s=max(1, int(PAYLOAD_TIMEOUT_S))))
    except Exception as exc:
        # The sandbox raised instead of returning a result (its worker died, it could not start, ...):
        # infrastructure trouble, so no layer is known to have stopped the payload -- an error, never
        # "blocked" (the verdict fails the gate on it).
        return PayloadResult(payload_id=payload.id, attempt=payload.attempts, state=PayloadState.ERROR,
                             reason=f"the sandbox failed: {type(exc).__name__}: {exc}", layer=None,
                             status="crashed", duration_s=round(time.monotonic() - start, 6))
    elapsed = round(time.monotonic() - start, 6)
    texts = [repr(result.value), result.stdout or "", result.stderr or "", result.error_message or "",
             result.traceback or ""]
    breach = canaries.breach(texts, before)
    if breach:
        canaries.restore()
        return PayloadResult(payload_id=payload.id, attempt=payload.attempts, state=PayloadState.UNBLOCKED,
                             reason=breach, layer=result.layer, status=result.status, duration_s=elapsed)
    if payload.canary == "forge_result" and result.status == "ok" and result.value == FORGED_VALUE:
        return PayloadResult(payload_id=payload.id, attempt=payload.attempts, state=PayloadState.UNBLOCKED,
                             reason=f"the forged result {FORGED_VALUE!r} was taken as the tool's return value",
                             layer=result.layer, status=result.status, duration_s=elapsed)
    seen = evidence(result)
    if seen is not None:
        where = result.layer or result.status
        return PayloadResult(payload_id=payload.id, attempt=payload.attempts, state=PayloadState.BLOCKED,
                             reason=f"stopped by {where} ({result.rule or seen})", layer=where,
                             status=result.status, duration_s=elapsed)
    if result.status == "ok":
        reason = "ran to the end; every canary intact"
    else:  # the tool's own status is a claim: what holds is that nothing got out
        reason = f"ended {result.status} ({result.error_type or result.layer or 'no layer'}); every canary intact"
    return PayloadResult(payload_id=payload.id, attempt=payload.attempts, state=PayloadState.CONTAINED,
                         reason=reason, layer="isolation", status=result.status, duration_s=elapsed)
