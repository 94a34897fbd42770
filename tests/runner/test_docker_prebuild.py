"""The docker tests' wait for ``.ci/run``'s background build of the test image (no engine needed).

A failed background build must fail the docker tests, never skip them; one that never started
(its Docker set-up failed, which ``scripts/test.sh`` retries) leaves the build to the fixture; and a
built one is handed over only as the outcome file says, the image itself being found by its content
key (``tests/runner/test_docker_launcher.py`` tests that key).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pytest

from runner.launcher import container as dl
from tests.support import docker_env as de


def _outcome(path: Path, **fields: object) -> Path:
    path.write_text(json.dumps({"started": 1.0, **fields}), encoding="utf-8")
    return path


def test_no_background_build_means_the_fixture_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(de.PREBUILD_ENV, raising=False)
    assert de.prebuilt(timeout=0.1) is None


def test_a_built_image_is_handed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _outcome(tmp_path / "build.json", status="built", image="sha256:abc", seconds=40.0)
    monkeypatch.setenv(de.PREBUILD_ENV, str(path))
    assert de.prebuilt(timeout=0.1) == {"started": 1.0, "status": "built", "image": "sha256:abc", "seconds": 40.0}


def test_a_build_that_never_started_leaves_it_to_the_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(de.PREBUILD_ENV, str(_outcome(tmp_path / "build.json", status="not-started")))
    assert de.prebuilt(timeout=0.1) is None


def test_a_failed_background_build_fails_loudly_with_its_error(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    path = _outcome(tmp_path / "build.json", status="failed", error="image build failed: no space left on device")
    monkeypatch.setenv(de.PREBUILD_ENV, str(path))
    with pytest.raises(pytest.fail.Exception, match="no space left on device"):
        de.prebuilt(timeout=0.1)


def test_the_fixture_waits_for_the_outcome_and_fails_when_none_comes(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "build.json"
    monkeypatch.setenv(de.PREBUILD_ENV, str(path))
    with pytest.raises(pytest.fail.Exception, match="background build"):
        de.prebuilt(timeout=0.3)
    # written while the fixture waits: taken as soon as it lands
    writer = threading.Timer(0.2, lambda: _outcome(path, status="built", image="sha256:abc"))
    writer.start()
    try:
        assert de.prebuilt(timeout=60)["image"] == "sha256:abc"  # type: ignore[index]
    finally:
        writer.join()


def test_prebuild_writes_a_failure_it_meets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise dl.LauncherError("cannot reach the Docker engine")

    monkeypatch.setattr(dl, "connect", refuse)
    result = tmp_path / "build.json"
    before = time.time()
    assert de.prebuild(result) == 1
    outcome = json.loads(result.read_text(encoding="utf-8"))
    assert outcome["status"] == "failed" and "cannot reach the Docker engine" in outcome["error"]
    assert outcome["started"] >= before - 1
    assert not result.with_name(result.name + ".partial").exists()


class _Image:
    def __init__(self, *layers: str) -> None:
        self.attrs = {"RootFS": {"Type": "layers", "Layers": list(layers)}}


def test_an_image_is_reused_only_on_the_base_it_was_built_on() -> None:
    base = _Image("sha256:base")
    assert de.built_on(_Image("sha256:base", "sha256:venv", "sha256:app"), base)
    assert not de.built_on(_Image("sha256:older-base", "sha256:venv", "sha256:app"), base)  # imported again
    assert not de.built_on(_Image("sha256:base"), _Image())  # a base that says nothing proves nothing
