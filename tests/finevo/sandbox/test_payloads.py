"""Every hostile payload is blocked or contained with every canary intact -- and the run-time
layers alone (policy disabled) still keep every canary intact.

Canaries alone cannot show that a resource attack was stopped (a CPU spin leaves no trace), so
resource payloads must also end killed or contained by the layer expected for them, and with the
policy off every process payload must be refused by the audit hook, killed by seccomp (a new
process when the tool has no process allowance, an exec, ...) or fail on the process limit.

The result value is a canary only with the policy on: with it off, tool code shares its process
with the harness and can write its own result record to the control pipe (pay_102). That forges
nothing the tool could not return anyway, and a refusal already reported stays reported."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from finevo.sandbox import ExecutionResult, Limits, create_sandbox
from finevo.sandbox.backends import WarmSandbox
from runner.inputs.corpus import FORGED_VALUE, Payload, load_payloads

from .canaries import Canaries, group_members

PAYLOADS: list[Payload] = load_payloads()
#: The kernel corpus's limits (tests/finevo/sandbox/test_kernel_corpus.py runs every payload under them in
#: three settings, policy on and off): which limit stops a payload may differ under load, and every such
#: pair is accepted below, so the limits' size is no bet on the machine's speed. At 8 s and 3 s of CPU the
#: thirteen runs that end on a limit cost 90 s of the module's 115 s in the whole suite.
LIMITS = Limits(timeout_s=5.0, cpu_s=2, memory_mb=1024, output_bytes=65536)
pytestmark = pytest.mark.timeout(900)

#: How each resource payload must end: the (status, layer) pairs it may end with. Where two layers
#: can win the race (a bigint power runs out of CPU or of memory first; on a loaded machine the
#: wall clock can beat the CPU limit), each is listed.
_CPU = {("killed", "rlimit-cpu"), ("timeout", "timeout")}
RESOURCE_STOPS: dict[str, set[tuple[str, str | None]]] = {
    "pay_083": _CPU,                                                        # CPU spin
    "pay_084": {("killed", "rlimit-as")},                                   # list of 10**10 items
    # An ever-growing bytearray writes every page it gets (50 MB a step, 1 GB before the address-space
    # limit): with both cores busy and memory bandwidth shared that work has outrun 2 s of CPU. Either
    # limit contains it; pay_084, pay_086 and pay_093 still pin the address-space limit on its own.
    "pay_085": _CPU | {("killed", "rlimit-as")},
    "pay_086": {("killed", "rlimit-as")},                                   # 10 GB string
    "pay_087": {("exception", "recursion-limit")},                          # unbounded recursion
    "pay_088": _CPU,                                   # stdout flood: output cut, the clock ends it
    "pay_089": {("exception", None)},                  # 100 MB message: cut to 2000 characters
    "pay_090": _CPU,                                                        # busy wait for an hour
    "pay_091": _CPU | {("killed", "rlimit-as")},                            # 10 ** (10 ** 10)
    "pay_092": _CPU,                                                        # regex backtracking
    "pay_093": {("killed", "rlimit-as")},                                   # decimal at MAX_PREC
    "pay_094": _CPU | {("killed", "rlimit-as")},                            # list(itertools.count())
    "pay_095": _CPU | {("crashed", "result"), ("killed", "rlimit-as")},  # a result too large to send
    "pay_378": {("crashed", "result")},              # nested 100,000 deep: refused past 64 levels
    "pay_379": {("crashed", "result")},              # a list containing itself: refused, not encoded
    "pay_380": {("crashed", "result")},              # an endless iterator: no JSON form, not drained
}
#: Any other resource payload must end stopped by one of the containment layers.
CONTAINED: set[tuple[str, str | None]] = {
    ("killed", layer) for layer in ("rlimit-cpu", "rlimit-as", "rlimit-fsize", "rlimit-nproc",
                                    "rlimit-nofile", "output-cap")
} | {("timeout", "timeout"), ("exception", "recursion-limit"), ("blocked", "audit-hook"),
     ("blocked", "seccomp"), ("blocked", "landlock")}
#: With the policy off, a process payload must be refused by the audit hook or fail on the
#: process limit -- except those that attempt no process at run time at all.
PROCESS_STOPS: set[tuple[str, str | None]] = {("blocked", "audit-hook"), ("killed", "rlimit-nproc"),
                                              ("blocked", "seccomp")}
NO_PROCESS_AT_RUN_TIME: dict[str, str] = {
    "pay_070": "reads a raw pointer through ndarray.ctypes (a policy-level route, no process)",
    "pay_075": "pandas' clipboard finds no copy program and raises before starting one",
    "pay_108": "the same clipboard call, reached through named aggregation",
    "pay_076": "type() with three arguments only builds a class",
    "pay_077": "the metaclass only builds a class",
    "pay_081": "the escape sits in the self-test block, which never runs for an entry",
}


@pytest.fixture(scope="module")
def canaries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Canaries]:
    found = Canaries.create(tmp_path_factory.mktemp("outside-sandbox"))
    os.environ[found.secret_name] = found.secret_value  # in the *parent's* environment
    try:
        yield found
    finally:
        os.environ.pop(found.secret_name, None)
        found.listener.close()


@pytest.fixture(scope="module")
def guarded() -> Iterator[WarmSandbox]:
    with create_sandbox(None, backend="warm", policy=True) as sandbox:
        yield sandbox  # type: ignore[misc]


@pytest.fixture(scope="module")
def runtime_only() -> Iterator[WarmSandbox]:
    with create_sandbox(None, backend="warm", policy=False) as sandbox:
        yield sandbox  # type: ignore[misc]


def _run_and_check(sandbox: WarmSandbox, payload: Payload, canaries: Canaries) -> ExecutionResult:
    before = canaries.fingerprint()
    contacts = len(canaries.listener.contacts)
    code = payload.materialise(**canaries.substitutions())  # type: ignore[arg-type]
    result = sandbox.run(code, payload.entry, dict(payload.args), LIMITS)
    texts = [repr(result.value), result.stdout, result.stderr, result.error_message or "",
             result.traceback or ""]
    where = f"{payload.id} ({payload.technique}): status={result.status} layer={result.layer}"
    assert not canaries.leaks(texts), f"{where}: secret leaked: {canaries.leaks(texts)}"
    assert canaries.canary_file.exists(), f"{where}: canary file deleted"
    assert canaries.fingerprint() == before, f"{where}: canary file or directory changed"
    assert len(canaries.listener.contacts) == contacts, f"{where}: the listener was contacted"
    if result.details.get("pid"):
        assert group_members(result.details["pid"]) == [], f"{where}: processes left behind"
    assert os.environ.get(canaries.secret_name) == canaries.secret_value
    return result


def _assert_resource_stopped(payload: Payload, result: ExecutionResult) -> None:
    where = f"{payload.id} ({payload.technique}): status={result.status} layer={result.layer}"
    assert result.status != "ok", f"{where}: the resource attack was not stopped"
    assert (result.status, result.layer) in RESOURCE_STOPS.get(payload.id, CONTAINED), where
    assert len(result.stdout) <= LIMITS.output_bytes and len(result.stderr) <= LIMITS.output_bytes, where
    assert len(result.error_message or "") <= 2000, f"{where}: the error message was not capped"


def _assert_process_stopped(payload: Payload, result: ExecutionResult) -> None:
    where = f"{payload.id} ({payload.technique}): status={result.status} layer={result.layer}"
    if payload.id in NO_PROCESS_AT_RUN_TIME:
        return  # no process is left behind (checked for every payload) and none was attempted
    assert (result.status, result.layer) in PROCESS_STOPS, f"{where}: the process attempt was not stopped"


#: The resource payloads the policy lets through run until a limit stops them (2 s of CPU, a 5 s
#: timeout, the output cap): 2-5 s each on a loaded machine. They are slow, the plain CPU spin too; the
#: inner loop (`-m "not slow"`) keeps the runtime CPU limit with test_backends.py's test_cpu_limit[warm]
#: (1 s of CPU).
RUNS_TO_A_LIMIT = {p.id for p in PAYLOADS if p.canary == "resource" and p.expect == "runtime"}


@pytest.mark.parametrize("payload", [pytest.param(p, marks=pytest.mark.slow) if p.id in RUNS_TO_A_LIMIT else p
                                     for p in PAYLOADS], ids=[p.id for p in PAYLOADS])
def test_payload_is_blocked_or_contained(guarded: WarmSandbox, payload: Payload,
                                         canaries: Canaries) -> None:
    result = _run_and_check(guarded, payload, canaries)
    if payload.expect == "policy":
        assert result.status == "blocked" and result.layer == "policy", \
            f"{payload.id}: expected the policy to block it, got {result.status}/{result.layer}"
        assert result.rule and result.line, f"{payload.id}: a policy block names rule and line"
    elif payload.canary == "resource":
        _assert_resource_stopped(payload, result)
    if payload.canary == "forge_result":
        assert not (result.status == "ok" and result.value == FORGED_VALUE), \
            f"{payload.id}: the forged value was taken as the result"


@pytest.mark.slow
@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.id for p in PAYLOADS])
def test_runtime_layers_alone_keep_canaries_intact(runtime_only: WarmSandbox, payload: Payload,
                                                   canaries: Canaries) -> None:
    result = _run_and_check(runtime_only, payload, canaries)
    if payload.canary == "resource":
        _assert_resource_stopped(payload, result)
    elif payload.canary == "process":
        _assert_process_stopped(payload, result)


def test_every_listed_payload_exists() -> None:
    ids = {p.id for p in PAYLOADS}
    listed = set(RESOURCE_STOPS) | set(NO_PROCESS_AT_RUN_TIME)
    assert listed <= ids, f"listed but not in the corpus: {sorted(listed - ids)}"
    assert all(p.canary == "resource" for p in PAYLOADS if p.id in RESOURCE_STOPS)
    assert all(p.canary == "process" for p in PAYLOADS if p.id in NO_PROCESS_AT_RUN_TIME)
