"""``finevo-verify sandbox check``: JSON verdict and exit codes (tests of runner/cli/sandbox.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.cli import main

pytestmark = pytest.mark.timeout(300)
GOOD = ("import pandas as pd\n\n\ndef mean_of(n: int) -> float:\n    print('computing')\n"
        "    return float(pd.Series(range(n)).mean())\n")


def _write(tmp_path: Path, code: str) -> str:
    path = tmp_path / "tool.py"
    path.write_text(code, encoding="utf-8")
    return str(path)


@pytest.mark.slow
def test_allowed_and_run_cleanly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sandbox", "check", _write(tmp_path, GOOD), "--run", "mean_of", "--args", '{"n": 5}',
                 "--backend", "subprocess"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 0
    assert verdict["allowed"] is True and verdict["run"]["status"] == "ok"
    assert verdict["run"]["value"] == 2.0 and verdict["run"]["stdout"] == "computing\n"
    assert verdict["layers"]["audit_hook"] is True


@pytest.mark.slow
def test_blocked_names_rule_line_col(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sandbox", "check", _write(tmp_path, "x = 1\nimport subprocess\n")])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 1
    assert verdict["verdict"] == "blocked" and verdict["line"] == 2 and verdict["rule"]
    assert "run" not in verdict


@pytest.mark.slow
def test_contained_run_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spin = "def spin() -> int:\n    n = 0\n    while True:\n        n += 1\n"
    code = main(["sandbox", "check", _write(tmp_path, spin), "--run", "spin", "--timeout", "0.5"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 1
    assert verdict["run"]["status"] == "timeout" and verdict["run"]["layer"] == "timeout"


def test_missing_file_and_bad_args_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "check", str(tmp_path / "absent.py")]) == 2
    assert "absent.py: file not found" in capsys.readouterr().err
    assert main(["sandbox", "check", _write(tmp_path, GOOD), "--run", "mean_of", "--args", "{nope"]) == 2
    err = capsys.readouterr().err
    assert "--args: malformed JSON" in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_no_policy_runs_a_blocked_file_with_the_kernel_layers_alone(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import shutil
    import tempfile

    from finevo.sandbox import confine
    from finevo.sandbox.selftest import default_base_dir

    # not under /tmp: the warm worker's private /tmp would hide it (proving nothing about Landlock)
    outside = Path(tempfile.mkdtemp(prefix="finevo-cli-test-", dir=default_base_dir()))
    try:
        secret = outside / "secret.txt"
        secret.write_text("KERNEL-ONLY-SECRET\n")
        secret.chmod(0o644)
        hostile = f"def steal() -> str:\n    return open({str(secret)!r}).read()\n"
        path = _write(tmp_path, hostile)
        assert main(["sandbox", "check", path]) == 1  # the policy blocks it...
        assert json.loads(capsys.readouterr().out)["policy"] == "on"
        code = main(["sandbox", "check", path, "--run", "steal", "--no-policy"])  # ...which --no-policy skips
        verdict = json.loads(capsys.readouterr().out)
        assert verdict["policy"] == "off" and verdict["allowed"] is False and "run" in verdict
        assert "KERNEL-ONLY-SECRET" not in json.dumps(verdict)
        support = confine.kernel_support()
        if support["landlock_abi"] > 0 and support["seccomp"]:
            assert code == 1 and verdict["isolation"] == "kernel"
            # Landlock's refusal reaches the tool as an error it could also raise itself: the run
            # fails with a hint, and the secret staying out of the verdict is the evidence
            assert verdict["run"]["status"] == "exception" and verdict["run"]["hint"] == "landlock", verdict
    finally:
        shutil.rmtree(outside)


def test_no_policy_needs_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "check", _write(tmp_path, GOOD), "--no-policy"]) == 2
    assert "--no-policy needs --run ENTRY" in capsys.readouterr().err
