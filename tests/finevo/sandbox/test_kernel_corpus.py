"""Every payload, policy on and policy off, in the three settings users run the gate in.

Settings (see :mod:`kernel_settings`): ``root`` (CI), ``unprivileged`` (uid 65534, user namespaces
allowed) and ``unprivileged-no-unshare`` (uid 65534 under a seccomp filter refusing ``unshare``, as
Docker's default profile does). With the policy **off** the static policy and the audit hook are
both switched off, so only the kernel layers stand between the payload and its canaries:

* every payload whose objective is file I/O, network, process, persistence or signals must end
  ``blocked`` by ``seccomp`` with the supervisor's own record of the denial (a user notification),
  or fail on Landlock's errno (a hint; the canaries are the evidence) -- unless :data:`UNLABELLED` says why its attempt
  never reaches the kernel, or which kernel layer a library reports as its own error;
* environment-secret payloads find nothing: the sandbox processes start with an empty
  environment, and other processes' ``/proc/<pid>/environ`` is refused by Landlock (pay_226);
* resource payloads end stopped by the limits, forgeries never carry a status the supervisor did
  not observe;
* and in every case the canaries are checked from outside: nothing leaked, the canary file and
  directory unchanged, no connection, nothing left in /dev/shm, /tmp or site-packages, the worker
  never killed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from finevo.sandbox import confine
from runner.inputs.corpus import FORGED_VALUE, Payload, load_payloads

from .kernel_settings import SETTINGS, Scene, run_setting, setting_unavailable
from .test_payloads import CONTAINED, RESOURCE_STOPS

pytestmark = [pytest.mark.slow, pytest.mark.timeout(1800)]

PAYLOADS: list[Payload] = load_payloads()
LIMITS = {"timeout_s": 5.0, "cpu_s": 2, "memory_mb": 1024, "output_bytes": 65536}
KERNEL_LAYERS = {"landlock", "seccomp"}
KERNEL_OBJECTIVES = {"file_read", "file_write", "file_delete", "network", "process", "signal", "persistence"}

#: Policy off: payloads of a kernel objective whose result carries no kernel layer, and why.
#: (layer, reason): the layer that holds, or None when the attempt never reaches the kernel.
UNLABELLED: dict[str, tuple[str | None, str]] = {
    "pay_030": (None, "reads a pickle that does not exist: nothing outside is touched"),
    "pay_031": (None, "loads an array file that does not exist"),
    "pay_038": (None, "loads a file that does not exist"),
    "pay_040": (None, "pandas refuses a function as a path before opening anything"),
    "pay_041": (None, "str.format only renders a function's globals: no file is opened"),
    "pay_052": (None, "pandas reads the path as an axis name and fails before writing"),
    "pay_036": ("landlock", "linecache swallows the refused read of the canary and shows nothing"),
    "pay_047": ("landlock", "sqlite3 reports the refused open as 'unable to open database file'"),
    "pay_104": ("landlock", "libxml2's refused read surfaces as lxml's 'Cannot resolve URI'"),
    "pay_061": (None, "np.DataSource no longer exists in NumPy 2: no connection is attempted"),
    "pay_062": (None, "yfinance is the replay shim: it has no HTTP session"),
    "pay_063": (None, "yfinance is the replay shim: its submodules do not exist"),
    "pay_070": (None, "reads a raw pointer value: no process is involved"),
    "pay_074": (None, "pandas finds no plotting backend named 'subprocess' and raises"),
    "pay_075": (None, "pandas' clipboard finds no copy program and raises before starting one"),
    "pay_108": (None, "the same clipboard call through named aggregation"),
    "pay_076": (None, "type() with three arguments only builds a class"),
    "pay_077": (None, "the metaclass only builds a class"),
    "pay_080": (None, "the debugger reads an empty stdin and returns"),
    "pay_081": (None, "the escape sits in the self-test block, which never runs for an entry"),
    "pay_112": (None, "pytest is outside the read roots (only the site-packages entries of the libraries "
                      "the worker loaded are readable): pd.test() cannot import it"),
    "pay_359": (None, "the child inherits no descriptor beyond stdin, stdout, stderr and the control socket: "
                      "the scan finds nothing to read"),
    "pay_373": (None, "symlinks inside its own working directory are allowed; the cleanup removes the links, "
                      "never their targets (the canary checks prove it)"),
}
#: The unprivileged-no-unshare setting emulates Docker's default profile, which answers these
#: calls EPERM itself: an outer filter's errno takes precedence over the sandbox's notification,
#: so the call fails (value -1) with no denial to record -- contained, not blocked.
OUTER_FILTER_EPERM = {"pay_223": "unshare", "pay_364": "clone with CLONE_NEWUSER"}
_LIMIT_STOPS = {("killed", "rlimit-cpu"), ("timeout", "timeout"), ("killed", "rlimit-as")}

#: One corpus run per (setting, policy) serves every test of that setting (``_RUNS``): the tests of
#: one setting share an xdist group, so one worker runs them and the corpus once (split between
#: workers, each worker ran the whole corpus again for its share of the tests); the three settings
#: are three groups, so the two workers still share them.
SETTING_PARAMS = [pytest.param(s, marks=pytest.mark.xdist_group(f"kernel-corpus-{s}")) for s in SETTINGS]


@pytest.fixture(scope="module")
def scene() -> Iterator[Scene]:
    found = Scene.create()
    try:
        yield found
    finally:
        found.close()


_RUNS: dict[tuple[str, str], tuple[dict[str, Any], dict[str, dict[str, Any]]]] = {}


def _run(setting: str, policy: str, scene: Scene) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    reason = setting_unavailable(setting)
    if reason:
        pytest.skip(reason)
    key = (setting, policy)
    if key not in _RUNS:
        layers, results = run_setting(setting, PAYLOADS, scene, policy=policy, limits=LIMITS)
        _RUNS[key] = layers, {r["id"]: r for r in results}
    return _RUNS[key]


def _assert_canaries_intact(payload: Payload, record: dict[str, Any], setting: str) -> None:
    where = f"{setting}: {payload.id} ({payload.technique}) ended {record['status']}/{record['layer']}"
    assert record["status"] != "sandbox-error", f"{where}: the sandbox failed: {record['texts']}"
    assert not record["leaked"], f"{where}: secret leaked ({record['leaked']})"
    assert not record["canary_changed"], f"{where}: the canary file or directory changed"
    assert record["contacts"] == 0, f"{where}: the listener was contacted"
    assert not record["leftovers"], f"{where}: left {record['leftovers']}"
    assert record["restarts"] == 0, f"{where}: the sandbox worker was killed"


def _assert_kernel_contained(payload: Payload, record: dict[str, Any], setting: str) -> None:
    where = f"{setting}: {payload.id} ({payload.technique}) ended {record['status']}/{record['layer']}"
    if payload.canary == "resource":
        assert (record["status"], record["layer"]) in RESOURCE_STOPS.get(payload.id, CONTAINED), where
    elif payload.canary == "forge_result":
        # The value is the tool's to choose (it shares the process with the harness); what it can
        # never forge is a status or layer the supervisor did not observe.
        assert record["status"] in ("ok", "exception", "crashed"), where
        assert record["layer"] not in KERNEL_LAYERS | {"timeout", "output-cap"}, where
    elif payload.id in UNLABELLED:
        layer, _why = UNLABELLED[payload.id]
        if layer == "limits":
            assert (record["status"], record["layer"]) in _LIMIT_STOPS, where
        else:
            assert record["status"] in ("ok", "exception") or _kernel_refusal(record), where
    elif setting == "unprivileged-no-unshare" and payload.id in OUTER_FILTER_EPERM:
        assert (record["status"], record["value"]) in (("ok", -1), ("blocked", None)), where
    elif payload.canary in KERNEL_OBJECTIVES:
        assert _kernel_refusal(record), f"{where}: expected a refusal by a kernel layer (landlock or seccomp)"
    if record["status"] == "blocked":  # a block is never a claim: the supervisor saw it
        assert record["layer"] == "policy" or record["evidence"] or record["layer"] == "audit-hook", where


def _kernel_refusal(record: dict[str, Any]) -> bool:
    """A seccomp denial the supervisor recorded, or Landlock's errno surfacing as the tool's error
    (a hint: the canaries, checked separately, are what prove nothing got out)."""
    if record["status"] == "blocked" and record["layer"] == "seccomp":
        return bool(record["evidence"])
    return record["status"] == "exception" and record["hint"] == "landlock"


@pytest.mark.parametrize("setting", SETTING_PARAMS)
def test_kernel_layers_are_active_in_every_setting(setting: str, scene: Scene) -> None:
    layers_record, _ = _run(setting, "off", scene)
    layers = layers_record["layers"]
    support = confine.kernel_support()
    if support["landlock_abi"] <= 0 or not support["seccomp"]:
        pytest.skip(f"this kernel lacks Landlock or seccomp: {support}")
    assert layers["landlock"] and layers["seccomp"] and layers["caps_dropped"], layers
    assert layers_record["isolation"] == "kernel", layers_record
    if setting == "unprivileged-no-unshare":  # the emulation really took namespaces away
        assert not (layers["netns"] or layers["mountns"] or layers["ipcns"]), layers
    else:
        assert layers["netns"] and layers["mountns"], layers
        # a private /tmp is mounted only where it hides nothing the worker needs (a checkout or a
        # virtual environment under /tmp, as in CI's fresh venv, keeps the host's)
        needed = [sys.prefix, os.path.dirname(os.path.dirname(os.path.abspath(confine.__file__)))]
        if not any(os.path.realpath(p).startswith(("/tmp/", "/dev/shm/")) for p in needed):
            assert layers["private_tmp"], layers


@pytest.mark.parametrize("setting", SETTING_PARAMS)
@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.id for p in PAYLOADS])
def test_policy_off_kernel_layers_contain_every_payload(setting: str, payload: Payload, scene: Scene) -> None:
    layers_record, results = _run(setting, "off", scene)
    if layers_record.get("isolation") != "kernel":
        pytest.skip(f"no kernel isolation in this setting: {layers_record.get('missing')}")
    record = results[payload.id]
    _assert_canaries_intact(payload, record, setting)
    _assert_kernel_contained(payload, record, setting)


@pytest.mark.parametrize("setting", SETTING_PARAMS)
@pytest.mark.parametrize("payload", PAYLOADS, ids=[p.id for p in PAYLOADS])
def test_policy_on_every_payload_is_blocked_or_contained(setting: str, payload: Payload, scene: Scene) -> None:
    _, results = _run(setting, "on", scene)
    record = results[payload.id]
    _assert_canaries_intact(payload, record, setting)
    where = f"{setting}: {payload.id} ended {record['status']}/{record['layer']}"
    if payload.expect == "policy":
        assert record["status"] == "blocked" and record["layer"] == "policy", where
    elif payload.canary == "resource":
        assert (record["status"], record["layer"]) in RESOURCE_STOPS.get(payload.id, CONTAINED), where
    if payload.canary == "forge_result":
        assert not (record["status"] == "ok" and record.get("value") == FORGED_VALUE), where


def test_unlabelled_table_names_real_payloads() -> None:
    ids = {p.id: p for p in PAYLOADS}
    assert set(UNLABELLED) <= set(ids), sorted(set(UNLABELLED) - set(ids))
    assert all(ids[i].canary in KERNEL_OBJECTIVES for i in UNLABELLED)
