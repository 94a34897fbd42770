"""The gate proves its sandbox before it judges (runner/execution/containment.py, finevo/sandbox/selftest.py)."""

from __future__ import annotations

import io
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from finevo.errors import InputError
from finevo.sandbox import ExecutionResult, Limits, confine, create_sandbox
from finevo.sandbox.backends import WarmSandbox
from finevo.sandbox.selftest import PROBES, default_base_dir, run_selftest
from runner.execution.containment import IsolationUnavailable, prove, require_isolation
from runner.exitcodes import Exit
from runner.gate import run_gate
from runner.reports import document
from runner.reports.console import Console
from tests.runner.fakes import make_factory

pytestmark = pytest.mark.timeout(300)
SUPPORT = confine.kernel_support()
KERNEL = SUPPORT["landlock_abi"] > 0 and SUPPORT["seccomp"]


# --------------------------------------------------------------------------- the requirement
@pytest.mark.parametrize("flag,env,expected", [
    (None, {}, None), ("kernel", {}, "kernel"), (None, {"FINEVO_REQUIRE_ISOLATION": "kernel"}, "kernel"),
    ("none", {"FINEVO_REQUIRE_ISOLATION": "kernel"}, None), (None, {"FINEVO_REQUIRE_ISOLATION": " KERNEL "}, "kernel"),
    (None, {"FINEVO_REQUIRE_ISOLATION": ""}, None),
])
def test_requirement_comes_from_the_flag_then_the_environment(flag: str | None, env: dict[str, str],
                                                              expected: str | None) -> None:
    assert require_isolation(flag, env) == expected


def test_unknown_requirement_is_an_input_error_naming_its_origin() -> None:
    with pytest.raises(InputError, match="FINEVO_REQUIRE_ISOLATION: unknown isolation level 'strong'"):
        require_isolation(None, {"FINEVO_REQUIRE_ISOLATION": "strong"})


# --------------------------------------------------------------------------- a real sandbox
@pytest.fixture(scope="module")
def warm() -> Iterator[WarmSandbox]:
    with create_sandbox(None, backend="warm") as box:
        yield box  # type: ignore[misc]


@pytest.mark.slow
@pytest.mark.skipif(not KERNEL, reason=f"this kernel lacks Landlock or seccomp: {SUPPORT}")
def test_every_probe_is_refused_by_a_named_kernel_layer(warm: WarmSandbox) -> None:
    # the canaries go into a directory of this test's own under /var/tmp (the default base, which the
    # warm worker's private /tmp would hide): other self-tests running beside it on other workers
    # plant theirs in /var/tmp at the same time, so only this directory can say what was left behind
    base = Path(tempfile.mkdtemp(prefix="finevo-containment-", dir=default_base_dir()))
    try:
        report = run_selftest(warm, base_dir=base)
        left = list(base.iterdir())
    finally:
        shutil.rmtree(base, ignore_errors=True)
    assert report.ok is True, report
    assert [p.name for p in report.probes] == [p.name for p in PROBES]
    assert all(p.contained and p.layer in ("landlock", "seccomp", "supervisor", "zygote")
               for p in report.probes), report.probes
    layers = {p.name: p.layer for p in report.probes}
    assert layers["exec_shell"] == layers["connect_local"] == layers["signal_parent"] == "seccomp"
    assert layers["unnamed_call"] == layers["own_file_times"] == "seccomp"
    assert layers["read_gate_package"] == "landlock" and layers["earlier_value"] == "zygote"
    assert layers["claimed_refusal"] == layers["drain_clock"] == "supervisor"
    assert layers["read_outside"] == layers["write_outside"] == layers["persist_dev_shm"] == "landlock"
    assert report.duration_s < 30  # a figure, not a benchmark: scripts/bench_sandbox.py measures it
    assert not left, "the canaries were left behind"


@pytest.mark.slow
@pytest.mark.skipif(not KERNEL, reason=f"this kernel lacks Landlock or seccomp: {SUPPORT}")
def test_prove_on_a_confined_sandbox_is_kernel_isolation(warm: WarmSandbox) -> None:
    found = prove(warm, "kernel")
    assert found.isolation == "kernel" and found.failure() is None
    found.enforce()  # does not raise
    assert found.isolation == "kernel" and found.require == "kernel"
    assert found.layers["landlock"] and found.layers["seccomp"]
    assert any("kernel isolation" in line for line in found.console_lines())


# --------------------------------------------------------------------------- weak sandboxes
class _Silent:
    """A "sandbox" whose runs all return normally: every forbidden attempt would have worked."""

    def __init__(self, leak: bool = False) -> None:
        self.leak = leak

    def run_kernel_only(self, code: str, entry: str | None, args: dict[str, Any] | None = None,
                        limits: Limits | None = None) -> ExecutionResult:
        args = args or {}
        if self.leak and "path" in args and "open(path)" in code:
            return ExecutionResult(status="ok", value=Path(args["path"]).read_text())
        return ExecutionResult(status="ok", value=None)

    def layers(self) -> dict[str, bool]:
        return {"policy": True, "landlock": False, "seccomp": False}


def test_selftest_fails_when_attempts_are_not_refused() -> None:
    report = run_selftest(_Silent(leak=True))
    assert report.ok is False
    by_name = {p.name: p for p in report.probes}
    assert by_name["read_outside"].contained is False
    assert "secret came back" in by_name["read_outside"].detail
    assert by_name["exec_shell"].contained is False and by_name["exec_shell"].layer is None
    assert "read_outside" in report.reason and "exec_shell" in report.reason


def test_weak_sandbox_fails_the_requirement_naming_what_is_missing() -> None:
    found = prove(_Silent(), "kernel")
    assert found.isolation == "weak"
    message = found.failure() or ""
    assert "landlock" in message and "seccomp" in message and "self-test failed" in message
    assert "--privileged" in message  # says what not to do, too
    with pytest.raises(IsolationUnavailable):
        found.enforce()
    assert prove(_Silent(), None).failure() is None  # not required: only labelled
    assert any("WEAK ISOLATION" in line for line in prove(_Silent(), None).console_lines())


def test_gate_without_kernel_isolation_exits_3_when_required(make_config: Any) -> None:
    out = io.StringIO()
    with pytest.raises(IsolationUnavailable, match="landlock"):
        run_gate(make_config(require_isolation="kernel"), factory=make_factory({}, "pass", None),
                 console=Console(out, colour=False))
    assert "WEAK ISOLATION" in out.getvalue()


@pytest.mark.slow
def test_gate_records_weak_isolation_in_every_report(make_config: Any) -> None:
    out = io.StringIO()
    result = run_gate(make_config(), factory=make_factory({}, "pass", None), console=Console(out, colour=False))
    doc = document.load(result.run_dir / "results.json").to_json_dict()  # validates against the schema
    assert doc["config"]["isolation"] == "weak" and doc["config"]["require_isolation"] is None
    assert doc["containment_selftest"]["enabled"] is False and doc["containment_selftest"]["ok"] is None
    assert "weak isolation" in (result.run_dir / "summary.md").read_text().lower()
    assert "WEAK ISOLATION" in out.getvalue()


def test_cli_exits_3_with_one_line_naming_the_missing_layer(make_config: Any, monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from runner.cli import run as run_cli

    config = make_config(require_isolation="kernel")
    monkeypatch.setattr(run_cli, "config_from_args", lambda _args: config)
    code = run_cli.cmd_run(type("Args", (), {"quiet": True})(), factory=make_factory({}, "pass", None))
    err = capsys.readouterr().err
    assert code == Exit.NO_VERDICT
    assert "could not start" in err and "landlock" in err
    assert not (Path(config.out_dir) / "r1").exists()  # nothing ran, nothing is left behind


def test_env_requirement_reaches_the_gate_config(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.cli import build_parser
    from runner.cli.run import config_from_args

    monkeypatch.setenv("FINEVO_REQUIRE_ISOLATION", "kernel")
    args = build_parser().parse_args(["run", "--llm", "reference"])
    assert config_from_args(args).require_isolation == "kernel"
    args = build_parser().parse_args(["run", "--llm", "reference", "--require-isolation", "none"])
    assert config_from_args(args).require_isolation is None
    assert os.environ["FINEVO_REQUIRE_ISOLATION"] == "kernel"
