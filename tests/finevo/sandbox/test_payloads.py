"""Every hostile payload is blocked or contained with every canary intact -- and the run-time
layers alone (policy disabled) still keep every canary intact.

The result value is a canary only with the policy on: with it off, tool code shares its process
with the harness and can write its own result record to the control pipe (pay_102). That forges
nothing the tool could not return anyway, and a refusal already reported stays reported."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from finevo.corpus import Payload, load_payloads
from finevo.sandbox import Limits, create_sandbox
from finevo.sandbox.backends import WarmSandbox

from .canaries import Canaries, group_members

PAYLOADS: list[Payload] = load_payloads()
LIMITS = Limits(timeout_s=8.0, cpu_s=3, memory_mb=1024, output_bytes=65536)
#: The value every forge_result payload tries to pass off as its result.
FORGED_VALUE = 123.45
pytestmark = pytest.mark.timeout(900)


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


def _run_and_check(sandbox: WarmSandbox, payload: Payload, canaries: Canaries) -> object:
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


@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.id for p in PAYLOADS])
def test_payload_is_blocked_or_contained(guarded: WarmSandbox, payload: Payload,
                                         canaries: Canaries) -> None:
    result = _run_and_check(guarded, payload, canaries)
    if payload.expect == "policy":
        assert result.status == "blocked" and result.layer == "policy", \
            f"{payload.id}: expected the policy to block it, got {result.status}/{result.layer}"
        assert result.rule and result.line, f"{payload.id}: a policy block names rule and line"
    if payload.canary == "forge_result":
        assert not (result.status == "ok" and result.value == FORGED_VALUE), \
            f"{payload.id}: the forged value was taken as the result"


@pytest.mark.slow
@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.id for p in PAYLOADS])
def test_runtime_layers_alone_keep_canaries_intact(runtime_only: WarmSandbox, payload: Payload,
                                                   canaries: Canaries) -> None:
    _run_and_check(runtime_only, payload, canaries)
