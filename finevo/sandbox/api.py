"""The one small interface every sandbox backend implements.

``Sandbox.run(code, entry, args, limits) -> ExecutionResult``

* ``code`` is the whole tool module as text; it is checked by the static policy first (a
  rejection never starts a process: ``status == "blocked"``, ``layer == "policy"``).
* ``entry`` is the public function to call with ``**args`` (JSON-serialisable). With
  ``entry=None`` the module's ``if __name__ == "__main__":`` self-test block runs instead; that
  block *never* runs when ``entry`` is given.
* The value comes back over a channel the tool cannot forge (never stdout markers), normalised to
  plain JSON in the child (:mod:`finevo.normalize`; what cannot be is a ``crashed`` result
  with ``layer == "result"``); stdout/stderr are captured and truncated to ``limits.output_bytes``
  (first and last part kept, ``details["output_cut"]`` says how much was cut).
* Inside the sandbox ``import yfinance`` is the replay shim over the snapshot the sandbox was
  built with, and the clock reads the snapshot's as-of date. ``snapshot_dir`` given to one run
  replaces that snapshot (and its as-of date) for that run only: the gate judges a tool in other
  market worlds through the same sandbox. Each run is its own child, forked from a state that
  never held another run's code, arguments, value or output, nor another world's data (the warm
  backend forks tools only from per-world zygotes that never read a request); a run with
  ``snapshot_dir`` may read that directory only, not its siblings.
* The outcome's words come from the supervisor's own evidence: ``blocked`` only when the policy
  or the audit hook refused the code or the supervisor recorded a seccomp denial
  (``details["evidence"]``); an error the tool raised (a ``PermissionError`` Landlock answered
  with, or one it raised itself) is ``exception`` with at most ``details["hint"]``. The wall
  clock is the supervisor's.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from finevo.jsontypes import JSONObject

ExecStatus = Literal[
    "ok",         # the entry (or self-test) returned; ``value`` holds the result
    "exception",  # the tool raised; ``error_type`` / ``error_message`` / ``traceback`` say what
    "blocked",    # refused before or during execution by a security layer (``layer``, ``rule``)
    "timeout",    # wall-clock limit hit; the whole process group was killed
    "killed",     # a resource limit killed it (CPU, memory, file size, processes, result-channel flood)
    "crashed",    # the child died without a result (signal, invalid result, harness trouble)
]


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 30.0
    cpu_s: int = 20
    memory_mb: int = 1536
    fsize_mb: int = 8
    nproc: int = 0          # extra processes/threads the tool may create (0 = none)
    nofile: int = 64
    output_bytes: int = 65536
    #: What the working directory may hold (bytes of every file in it, MB); RLIMIT_FSIZE caps one
    #: file, this caps them all, so a tool writing many files cannot fill the host's disk.
    disk_mb: int = 256


@dataclass
class ExecutionResult:
    status: ExecStatus
    value: Any = None
    error_type: str | None = None
    error_message: str | None = None
    traceback: str | None = None
    stdout: str = ""
    stderr: str = ""
    duration_s: float = 0.0
    #: Which layer stopped or contained the run: "policy", "audit-hook", "rlimit-cpu",
    #: "rlimit-as", "rlimit-fsize", "rlimit-nproc", "timeout", "output-cap", "netns", ...
    layer: str | None = None
    rule: str | None = None
    line: int | None = None
    col: int | None = None
    details: JSONObject = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def to_dict(self) -> JSONObject:
        return asdict(self)


class Sandbox(Protocol):
    def run(self, code: str, entry: str | None, args: JSONObject | None = None,
            limits: Limits | None = None, *, snapshot_dir: str | None = None) -> ExecutionResult: ...

    def layers(self) -> dict[str, bool]:
        """Which containment layers are active on this platform (reported at start-up)."""
        ...

    def close(self) -> None: ...
