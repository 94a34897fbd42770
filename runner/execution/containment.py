"""The gate proves its sandbox before it judges: layers, isolation level and the containment self-test.

:func:`prove` runs once per gate, right after the session's sandbox is open and before any task:

* ``layers`` -- what a real sandbox child reported after confining itself (``config.sandbox_layers``);
* ``isolation`` -- ``"kernel"`` when Landlock and seccomp confine every child *and* the self-test saw
  each forbidden attempt refused by a kernel layer, else ``"weak"``;
* ``selftest`` -- :func:`finevo.sandbox.selftest.run_selftest` (top-level ``containment_selftest``).

``--require-isolation kernel`` (or ``FINEVO_REQUIRE_ISOLATION=kernel``) turns a weak sandbox into
"no verdict" (exit 3) with a message naming what is missing and how to get it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from finevo.errors import InputError, SandboxUnavailable
from finevo.vocabulary import Isolation

if TYPE_CHECKING:  # the records (pydantic) load with the run, never for the CLI's help and usage errors
    from runner.records import ContainmentSelftest

#: Values of ``--require-isolation`` / ``FINEVO_REQUIRE_ISOLATION`` besides ``none`` (no requirement).
ISOLATION_LEVELS: tuple[str, ...] = (Isolation.KERNEL.value,)
NO_REQUIREMENT = "none"
REQUIRE_ENV = "FINEVO_REQUIRE_ISOLATION"


def require_isolation(flag: str | None, environ: dict[str, str] | None = None) -> str | None:
    """The requirement in force: the flag, else the environment variable, else none.

    ``none`` or an empty value switch a requirement from the environment off."""
    env = os.environ if environ is None else environ
    value = flag if flag is not None else env.get(REQUIRE_ENV)
    if value is None or value.strip().lower() in ("", NO_REQUIREMENT):
        return None
    value = value.strip().lower()
    if value not in ISOLATION_LEVELS:
        origin = "--require-isolation" if flag is not None else REQUIRE_ENV
        raise InputError(f"{origin}: unknown isolation level {value!r} "
                         f"(expected: {', '.join(ISOLATION_LEVELS)}, or {NO_REQUIREMENT})")
    return value


class IsolationUnavailable(SandboxUnavailable):
    """Kernel isolation was required and this host cannot provide it: the run has no verdict."""

    code = "isolation_unavailable"


@dataclass
class Containment:
    layers: dict[str, bool]
    isolation: str                       # an Isolation word
    require: str | None                  # "kernel" | None
    selftest: ContainmentSelftest
    missing: list[str] = field(default_factory=list)

    def failure(self) -> str | None:
        """Why the required isolation is not there (None when it is, or none is required)."""
        if self.require != Isolation.KERNEL or self.isolation == Isolation.KERNEL:
            return None
        reasons = list(self.missing)
        if self.selftest.enabled and not self.selftest.ok:
            reasons.append(f"containment self-test failed ({self.selftest.reason})")
        elif not self.selftest.enabled:
            reasons.append(f"containment self-test did not run ({self.selftest.reason})")
        return ("kernel isolation is required (--require-isolation kernel) but this host cannot provide it: "
                + "; ".join(reasons) + ". In Docker, run the image as documented (Landlock and seccomp "
                "work under Docker's default seccomp profile); never with --privileged or seccomp=unconfined.")

    def enforce(self) -> None:
        """Raise :class:`IsolationUnavailable` when the required isolation is missing."""
        failure = self.failure()
        if failure:
            raise IsolationUnavailable(failure)

    def console_lines(self) -> list[str]:
        on = [k for k in ("landlock", "seccomp", "caps_dropped", "pidns", "mountns", "netns", "ipcns", "uid", "rlimits",
                          "audit_hook", "policy") if self.layers.get(k)]
        off = [k for k in ("landlock", "seccomp", "pidns", "mountns", "netns", "ipcns", "uid")
               if k in self.layers and not self.layers[k]]
        label = "kernel isolation" if self.isolation == Isolation.KERNEL else "WEAK ISOLATION"
        lines = [f"sandbox: {label}; layers on: {', '.join(on) or 'none'}"
                 + (f"; off: {', '.join(off)}" if off else "")]
        if "uid" in self.layers and not self.layers["uid"]:
            lines.append("  the tool has no uid of its own (uid 0 without capabilities, or the gate's own uid): it "
                         "owns the gate's files; changing their modes, owners, times, attributes or inode flags "
                         "is refused by seccomp, writing them by Landlock")
        lines.append("containment self-test: " + selftest_text(self.selftest))
        for probe in self.selftest.probes:
            if not (probe.contained and probe.layer):
                lines.append(f"  NOT CONTAINED {probe.name}: {probe.detail}")
        return lines


def selftest_text(selftest: ContainmentSelftest) -> str:
    """One line about the self-test, for the console."""
    if not selftest.enabled:
        return f"not run ({selftest.reason})"
    probes = selftest.probes
    held = [p for p in probes if p.contained and p.layer]
    by_layer: dict[str, int] = {}
    for probe in held:
        by_layer[str(probe.layer)] = by_layer.get(str(probe.layer), 0) + 1
    layers = ", ".join(f"{k} {v}" for k, v in sorted(by_layer.items()))
    state = "ok" if selftest.ok else "FAILED"
    return (f"{state}, {len(held)}/{len(probes)} forbidden attempts refused by the kernel"
            + (f" ({layers})" if layers else "") + f" in {selftest.duration_s:.2f} s")


def prove(sandbox: Any, require: str | None, base_dir: str | os.PathLike[str] | None = None) -> Containment:
    """Layers, isolation level and the self-test of ``sandbox`` (never raises for a weak host; see
    :meth:`Containment.enforce`). The self-test's canaries go in a fresh directory under
    ``base_dir`` (the gate passes its run directory)."""
    from runner.records import ContainmentSelftest

    layers = dict(sandbox.layers()) if hasattr(sandbox, "layers") else {}
    if hasattr(sandbox, "run_kernel_only"):
        from finevo.sandbox.selftest import run_selftest

        # the sandbox's own report, as the results document records it
        selftest = ContainmentSelftest.model_validate(run_selftest(sandbox, base_dir), from_attributes=True)
    else:
        selftest = ContainmentSelftest(enabled=False, ok=None, duration_s=0.0,
                                       reason="this sandbox cannot run code with the policy off")
    if hasattr(sandbox, "isolation"):
        level, missing = sandbox.isolation()
    else:
        missing = [name for name in ("landlock", "seccomp") if not layers.get(name)]
        level = Isolation.KERNEL if not missing else Isolation.WEAK
    if level == Isolation.KERNEL and not selftest.ok:
        level = Isolation.WEAK
    return Containment(layers=layers, isolation=level, require=require, selftest=selftest, missing=list(missing))
