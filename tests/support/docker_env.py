"""Shared set-up for the tests that need a real Docker engine.

``scripts/setup-docker.sh`` prepares the engine, the debootstrap base image and the wheelhouse and
prints ``FINEVO_TEST_BASE_IMAGE`` / ``FINEVO_TEST_WHEELHOUSE``; without them the defaults it uses
are tried. The image is built once per session through the launcher (``FINEVO_TEST_IMAGE`` names
it, default ``finevo-verify:test``) and removed when the session ends, with nothing left behind:
the launcher removes each build's builder stage, :func:`remove_test_image` the image itself.

``.ci/run`` builds that image in the background as soon as the engine, the base image and the
wheelhouse are ready (``python -m tests.support.docker_env prebuild RESULT``, while lint and the rest
of the set-up run) and names the result file in ``FINEVO_TEST_IMAGE_BUILD``. The session fixture then
waits for that file: a failed background build fails every docker test (never a skip), and a
finished one is reused only through the launcher's content key (the hash of the build context and
the build arguments on the image's label), so an image built from any other tree is never taken,
and only on the base image it was built on (:func:`built_on`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from runner.launcher import container as dl

ROOT = Path(__file__).resolve().parents[2]
TEST_IMAGE = os.environ.get("FINEVO_TEST_IMAGE") or "finevo-verify:test"
#: The Dockerfile's label on its builder stage (the stage the legacy builder leaves dangling).
BUILDER_STAGE_LABEL = "org.finevo.stage=builder"
DEFAULT_BASE = "finevo-base:bookworm"
DEFAULT_WHEELHOUSE = Path("/var/cache/finevo/wheelhouse")
#: Names the JSON file where a background build of the test image (``.ci/run``) writes its outcome.
PREBUILD_ENV = "FINEVO_TEST_IMAGE_BUILD"
#: How long the fixture waits for that outcome (the build itself takes about a minute).
PREBUILD_WAIT = 900.0


def required() -> bool:
    return os.environ.get("FINEVO_REQUIRE_DOCKER") == "1"


def unavailable(message: str) -> None:
    """Skip, or fail when the docker tests are required (CI)."""
    if required():
        pytest.fail(message)
    pytest.skip(message)


def build_inputs(client: Any) -> tuple[str, Path]:
    """The base image and the wheelhouse to build the test image from, or skip/fail."""
    import docker

    base = os.environ.get("FINEVO_TEST_BASE_IMAGE") or DEFAULT_BASE
    wheelhouse = Path(os.environ.get("FINEVO_TEST_WHEELHOUSE") or DEFAULT_WHEELHOUSE)
    try:
        client.images.get(base)
    except docker.errors.ImageNotFound:
        unavailable(f"base image {base} missing: run `bash scripts/setup-docker.sh`")
    if not any(wheelhouse.glob("*.whl")):
        unavailable(f"wheelhouse {wheelhouse} missing or empty: run `bash scripts/setup-docker.sh`")
    return base, wheelhouse


def snapshot_context(dest: Path) -> Path:
    """A frozen copy of the build context (what ``.dockerignore`` keeps), so the sources cannot
    change under a session's builds while someone edits the checkout."""
    for rel in dl.context_files(ROOT):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / rel, target)
    return dest


def build_test_image(client: Any, context_dir: Path) -> tuple[Any, float]:
    """Build (or reuse) the test image from ``context_dir``; returns the image and the seconds it took.

    An image is reused when its content key (the hash of the build context, the wheelhouse and the
    build arguments) matches, and only when it was built on the base image there is now: the key
    names the base image, not its content, so one built on an earlier base of that name (a base image
    imported again) is removed and built anew."""
    base, wheelhouse = build_inputs(client)
    spec = dl.BuildSpec(context_dir=context_dir, tag=TEST_IMAGE, base_image=base, wheelhouse=wheelhouse,
                        build_args={"REVISION": "test"})
    started = time.monotonic()
    image = dl.build_image(client, spec, reuse=True, log=lambda _text: None)
    if not built_on(image, client.images.get(base)):
        client.images.remove(image.id, force=True, noprune=False)
        image = dl.build_image(client, spec, reuse=False, log=lambda _text: None)
    return image, time.monotonic() - started


def built_on(image: Any, base: Any) -> bool:
    """Whether ``image``'s layers start with ``base``'s (it was built FROM that very image)."""
    layers = image.attrs.get("RootFS", {}).get("Layers") or []
    base_layers = base.attrs.get("RootFS", {}).get("Layers") or []
    return bool(base_layers) and layers[:len(base_layers)] == base_layers


def prebuild(result: Path) -> int:
    """Build the test image from this checkout as the session fixture would (same context files,
    base image, wheelhouse and build arguments, so the same content key), and write the outcome to
    ``result`` in one step (``status`` built/failed, ``started`` in epoch seconds, the image id or
    the error). Exit status 0 when built."""
    started = time.time()
    outcome: dict[str, Any]
    try:
        client = dl.connect()
        try:
            with tempfile.TemporaryDirectory(prefix="finevo-prebuild-") as tmp:
                image, seconds = build_test_image(client, snapshot_context(Path(tmp) / "context"))
            outcome = {"status": "built", "image": image.id, "seconds": round(seconds, 1),
                       "context": (image.labels or {}).get(dl.CONTEXT_LABEL)}
        finally:
            client.close()
    except dl.LauncherError as exc:
        outcome = {"status": "failed", "error": exc.message}
    except (Exception, pytest.skip.Exception, pytest.fail.Exception) as exc:  # build_inputs skips/fails
        outcome = {"status": "failed", "error": getattr(exc, "msg", None) or f"{type(exc).__name__}: {exc}"}
    outcome["started"] = started
    partial = result.with_name(result.name + ".partial")
    partial.write_text(json.dumps(outcome), encoding="utf-8")
    partial.replace(result)
    return 0 if outcome["status"] == "built" else 1


def prebuilt(timeout: float = PREBUILD_WAIT) -> dict[str, Any] | None:
    """The outcome of the background build named by ``FINEVO_TEST_IMAGE_BUILD``, once it is written.

    None when no background build was started (the fixture builds), or when its starter recorded
    that it never ran (``status`` ``not-started``: the Docker set-up it waited for failed, and
    ``scripts/test.sh`` retries that). A failed build, or none finished within ``timeout``, fails
    the calling fixture, so every docker test fails with the builder's error.
    """
    name = os.environ.get(PREBUILD_ENV)
    if not name:
        return None
    path = Path(name)
    wait_for(path.is_file, timeout, f"the background build of {TEST_IMAGE} ({path})", interval=0.5)
    outcome: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    if outcome.get("status") == "not-started":
        return None
    if outcome.get("status") != "built":
        pytest.fail(f"the background build of {TEST_IMAGE} failed ({path}): {outcome.get('error')}", pytrace=False)
    return outcome


def remove_test_image(client: Any) -> None:
    """Remove the session's test image (its untagged parents go with it)."""
    import docker

    with contextlib.suppress(docker.errors.ImageNotFound):
        client.images.remove(TEST_IMAGE, force=True, noprune=False)


def builder_leftovers(client: Any, since: float) -> list[str]:
    """Untagged builder-stage images created at or after ``since`` (epoch seconds)."""
    from datetime import datetime

    found = []
    for image in client.images.list(all=True, filters={"label": BUILDER_STAGE_LABEL}):
        created = datetime.fromisoformat(image.attrs["Created"].split(".")[0].rstrip("Z") + "+00:00")
        if not image.tags and created.timestamp() >= since - 1:
            found.append(image.short_id)
    return found


def docker_cli(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str, interval: float = 0.2) -> None:
    """Poll ``predicate`` until it holds; fail naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    pytest.fail(f"timed out after {timeout:g}s waiting for {what}")


def finished_tasks(run_dir: Path) -> int:
    """How many task events the gate has flushed to ``events.jsonl`` so far."""
    events = run_dir / "events.jsonl"
    if not events.is_file():
        return 0
    count = 0
    for line in events.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            if json.loads(line).get("event") == "task":
                count += 1
        except json.JSONDecodeError:
            continue  # a line being written
    return count


def open_out_dir(path: Path) -> Path:
    """A reports directory any container user can write to (bind mounts keep host modes)."""
    path.mkdir(parents=True, exist_ok=True)
    path.chmod(0o777)
    return path


if __name__ == "__main__":  # python -m tests.support.docker_env prebuild RESULT (.ci/run, in the background)
    if len(sys.argv) != 3 or sys.argv[1] != "prebuild":
        sys.exit("usage: python -m tests.support.docker_env prebuild RESULT.json")
    sys.exit(prebuild(Path(sys.argv[2])))
