"""The payload corpus: hostile tool code run straight in the sandbox, next to tripwires
(:class:`~runner.execution.canaries.Canaries`) that tell a contained payload from one that got out."""

from __future__ import annotations

import time
from typing import Any

from finevo.sandbox.api import Limits
from runner.execution.canaries import Canaries, shown
from runner.inputs.corpus import FORGED_VALUE, Payload
from runner.records import PayloadResult, PayloadState

#: Hostile payloads get a short leash: a spin or a sleep is stopped (and counted blocked) after this.
#: Every other payload of the corpus ends within a fifth of it (the slowest, a 400 MB result, in
#: about 0.2 s: the boundary refuses a container by its length, before copying it); each spinner
#: costs the run this much CPU, seven of them in the bundled corpus.
PAYLOAD_TIMEOUT_S = 0.5
#: Layers whose "blocked" is the gate's own decision: the static policy (before anything ran). Not
#: the audit hook: it runs in the tool's process and writes where the tool's code can, so its
#: refusal is a claim -- such a payload is at best *contained* (every canary intact).
_GATE_LAYERS = frozenset({"policy"})


def evidence(result: Any) -> str | None:
    """What the gate itself saw stop this run, or None: never a status the tool could claim (an
    exception it raised, a signal it sent itself)."""
    if result.status == "blocked" and result.layer in _GATE_LAYERS:
        return str(result.layer)
    found = (result.details or {}).get("evidence")
    return found if isinstance(found, str) and found else None


def run_payload(sandbox: Any, payload: Payload, canaries: Canaries) -> PayloadResult:
    before = canaries.contacted()
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
    breach = canaries.breach(shown(result.value, result.stdout, result.stderr, result.error_message,
                                   result.traceback), before)
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
