"""``finevo-verify run --registry-url``: the agent under the gate learns into a registry database of the
operator's choice, still from an empty one unless --reuse-registry; the password is never printed."""

from __future__ import annotations

from pathlib import Path

import pytest

from finevo.registry import Registry, safe_url
from runner.cli import main
from runner.reports import document
from tests.runner.fakes import DATA


def _argv(tmp_path: Path, run_id: str, url: str, *extra: str) -> list[str]:
    return ["run", "--llm", "reference", "--only", "calc_002", "--security-tasks", "none", "--baseline", "none",
            "--no-payloads", "--no-self-check", "--worlds", "0", "--min-pass-rate", "1", "--data", str(DATA),
            "--out", str(tmp_path / "out"), "--run-id", run_id, "--registry-url", url, "--quiet", *extra]


@pytest.mark.slow
def test_the_gate_learns_into_the_given_registry_and_refuses_it_once_used(
        registry_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_argv(tmp_path, "first", registry_url)) == 0
    with Registry(registry_url) as reg:
        [tool] = reg.list()
        assert tool.status == "verified" and reg.read_code(tool).startswith(("def ", "import", "from", '"""'))
    assert not (tmp_path / "out" / "first" / "registry" / "registry.db").exists()
    capsys.readouterr()

    assert main(_argv(tmp_path, "second", registry_url)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{safe_url(registry_url)}: registry is not empty" in err
    if "@" in registry_url:
        password = registry_url.split("//", 1)[1].split("@", 1)[0].split(":", 1)[1]
        assert password not in err

    assert main(_argv(tmp_path, "third", registry_url, "--reuse-registry")) == 0
    third = document.load(tmp_path / "out" / "third" / "results.json")
    assert third.tasks[0].state == "pass"
    with Registry(registry_url) as reg:
        assert len(reg.list()) == 1  # the same tool, reused, not registered again


def test_one_database_cannot_serve_several_repeats(registry_url: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(_argv(tmp_path, "r", registry_url, "--repeats", "2")) == 2
    assert "--registry-url with --repeats 2" in capsys.readouterr().err
