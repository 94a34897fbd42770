"""The image against a real Docker engine: built offline from the debootstrap base and the
wheelhouse, run with ``--network none`` through the docker CLI and through the launcher (SDK).

Set-up: ``bash scripts/setup-docker.sh`` (engine, base image, wheelhouse). Skipped without an
engine unless ``FINEVO_REQUIRE_DOCKER=1``.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, Failure, JUnitXml

from runner.cli import main
from runner.inputs.corpus import load_payloads
from runner.launcher import container as dl
from runner.reports import document
from tests.support import docker_env as de

# One worker builds the image once and runs every test on it (pytest-xdist --dist loadgroup).
pytestmark = [pytest.mark.docker, pytest.mark.slow, pytest.mark.timeout(900), pytest.mark.xdist_group("docker-image")]

ROOT = Path(__file__).resolve().parents[2]
BASELINE = json.loads((ROOT / "benchmarks" / "baseline.json").read_text(encoding="utf-8"))
FAIL_TASK = "fetch_001"
SIZE_LIMIT = 300 * 1000 * 1000  # `docker image ls` counts MB of 10^6 bytes


@pytest.fixture(scope="session")
def client() -> Iterator[Any]:
    try:
        engine = dl.connect()
    except dl.LauncherError as exc:
        de.unavailable(exc.message)
    yield engine
    engine.close()


@pytest.fixture(scope="session")
def context_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return de.snapshot_context(tmp_path_factory.mktemp("context"))


@pytest.fixture(scope="session")
def prebuilt() -> dict[str, Any] | None:
    """.ci/run's background build of the image (waited for; a failed one fails here), or None."""
    return de.prebuilt()


@pytest.fixture(scope="session")
def build_started(prebuilt: dict[str, Any] | None) -> float:
    now = time.time()
    return min(now, float(prebuilt["started"])) if prebuilt else now


@pytest.fixture(scope="session")
def image(client: Any, context_dir: Path, build_started: float, prebuilt: dict[str, Any] | None) -> Iterator[Any]:
    # reuse=True: an image whose content key (this tree's context and build arguments) matches is
    # retagged, the background build's included; anything else is built here.
    built, seconds = de.build_test_image(client, context_dir)
    how = "the background build reused" if prebuilt and built.id == prebuilt["image"] else "built here"
    print(f"\n[docker] image {de.TEST_IMAGE}: {built.attrs['Size'] / 1e6:.0f} MB, ready in {seconds:.1f}s ({how})")
    yield built
    de.remove_test_image(client)


def _reports(run_dir: Path) -> tuple[dict[str, Any], JUnitXml, str]:
    doc = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    document.validate(doc, source=str(run_dir / "results.json"))
    return doc, JUnitXml.fromfile(str(run_dir / "junit.xml")), (run_dir / "summary.md").read_text(encoding="utf-8")


def _junit_case(xml: JUnitXml, name: str) -> Any:
    for suite in xml:
        for case in suite:
            if case.name == name or name in (case.classname or "") + case.name:
                return case
    raise AssertionError(f"{name} not in junit.xml")


# --------------------------------------------------------------------------- the image itself

def test_image_is_lean_non_root_and_labelled(image: Any) -> None:
    config = image.attrs["Config"]
    assert config["User"] == f"{dl.IMAGE_UID}:{dl.IMAGE_GID}"
    assert config["Entrypoint"] == ["finevo-verify"]
    assert config["Cmd"][:3] == ["run", "--llm", "reference"]
    assert "/out" in (config.get("Volumes") or {})
    labels = config["Labels"]
    for key in ("source", "revision", "version", "created"):
        assert f"org.opencontainers.image.{key}" in labels
    assert labels["org.opencontainers.image.revision"] == "test"
    assert labels[dl.CONTEXT_LABEL]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env["FINEVO_BENCHMARKS"] == "/opt/finevo/benchmarks"
    assert env["FINEVO_GIT_SHA"] == "test"  # the image has no git: REVISION is the commit it records
    assert not any(name.startswith(("OPENAI_", "FINEVO_LLM_")) for name in env)
    assert image.attrs["Size"] < SIZE_LIMIT, f"image is {image.attrs['Size'] / 1e6:.0f} MB"


def test_image_holds_the_suite_and_an_empty_registry(image: Any) -> None:
    proc = de.docker_cli("run", "--rm", "--network", "none", "--entrypoint", "sh", de.TEST_IMAGE, "-c",
                         "ls /opt/finevo/benchmarks; test ! -e \"$FINEVO_REGISTRY_DIR\" && echo no-registry; "
                         "python3 -c 'import finevo, runner' && finevo-verify --help >/dev/null && echo cli-ok")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.split()
    assert {"tasks.jsonl", "baseline.json", "data", "reference", "no-registry", "cli-ok"} <= set(lines)


def test_the_build_leaves_no_builder_stage_behind(image: Any, client: Any, build_started: float) -> None:
    assert de.builder_leftovers(client, build_started) == []


def test_the_image_holds_exactly_the_locked_dependencies(image: Any) -> None:
    locked = {}
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        name, eq, rest = line.partition("==")
        if eq and not line.startswith((" ", "#")):
            locked[_canonical(name)] = rest.split()[0].rstrip("\\").strip()
    proc = de.docker_cli("run", "--rm", "--network", "none", "--entrypoint", "python3", de.TEST_IMAGE, "-c",
                         "import json, importlib.metadata as m; "
                         "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    assert proc.returncode == 0, proc.stderr
    installed = {_canonical(k): v for k, v in json.loads(proc.stdout).items()}
    assert locked and {k: installed.get(k) for k in locked} == locked
    # nothing unlocked besides the project itself (the installer is removed from the image)
    assert set(installed) - set(locked) == {"finevo"}


def _canonical(name: str) -> str:
    import re

    return re.sub(r"[-_.]+", "-", name).lower().strip()


def test_rebuild_with_same_sources_is_reused(client: Any, image: Any, context_dir: Path) -> None:
    base, wheelhouse = de.build_inputs(client)
    spec = dl.BuildSpec(context_dir=context_dir, tag=de.TEST_IMAGE, base_image=base, wheelhouse=wheelhouse,
                        build_args={"REVISION": "test"})
    log: list[str] = []
    again = dl.build_image(client, spec, reuse=True, log=log.append)
    assert again.id == image.id
    assert log and "is up to date" in log[0] and not any(line.startswith("building") for line in log)


# --------------------------------------------------------------------------- docker CLI

def test_reference_run_passes_offline_and_reports_belong_to_the_image_user(image: Any, tmp_path: Path) -> None:
    out = de.open_out_dir(tmp_path / "out")
    started = time.monotonic()
    proc = de.docker_cli("run", "--rm", "--init", "--network", "none", "-v", f"{out}:/out", de.TEST_IMAGE,
                         "run", "--llm", "reference", "--out", "/out", "--run-id", "ref")
    elapsed = time.monotonic() - started
    print(f"\n[docker] reference suite in a container: {elapsed:.1f}s")
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    run_dir = out / "ref"
    doc, xml, summary = _reports(run_dir)
    assert doc["verdict"]["status"] == "passed" and doc["partial"] is False
    assert doc["config"]["llm"] == "reference"
    assert doc["config"]["git_sha"] == "test"  # REVISION, baked in as FINEVO_GIT_SHA
    # the image requires kernel isolation, and gets it under Docker's default seccomp profile
    assert doc["config"]["require_isolation"] == "kernel" and doc["config"]["isolation"] == "kernel"
    assert doc["config"]["sandbox_layers"]["landlock"] and doc["config"]["sandbox_layers"]["seccomp"]
    assert doc["containment_selftest"]["ok"] is True
    assert "Isolation: **kernel** (required: kernel)" in summary
    assert "PASSED" in summary
    assert sum(len(list(suite)) for suite in xml) >= len(doc["tasks"])
    for path in (run_dir, run_dir / "results.json", run_dir / "junit.xml", run_dir / "summary.md"):
        assert path.stat().st_uid == dl.IMAGE_UID, path


KERNEL_PROBES = {
    # only Landlock can refuse this: /etc/passwd is world-readable
    "read": ("def steal() -> str:\n    with open('/etc/passwd') as handle:\n        return handle.read()\n",
             "landlock"),
    "exec": ("import os\n\ndef steal() -> None:\n    os.execv('/bin/sh', ['sh', '-c', 'true'])\n", "seccomp"),
    "socket": ("import socket\n\ndef steal() -> None:\n    socket.socket(socket.AF_UNIX).connect('/x')\n", "seccomp"),
}


@pytest.mark.parametrize("probe", sorted(KERNEL_PROBES))
def test_kernel_layers_are_active_inside_the_container(image: Any, tmp_path: Path, probe: str) -> None:
    # The image as documented (its own user, Docker's default seccomp profile), the policy and the
    # audit hook off: only the kernel layers stand between the probe and what it tries.
    code, layer = KERNEL_PROBES[probe]
    tool = tmp_path / "in" / "probe.py"
    tool.parent.mkdir(parents=True)
    tool.write_text(code, encoding="utf-8")
    tool.parent.chmod(0o755)
    tool.chmod(0o644)
    proc = de.docker_cli("run", "--rm", "--init", "--network", "none", "-v", f"{tool.parent}:/in:ro",
                         de.TEST_IMAGE, "sandbox", "check", "/in/probe.py", "--run", "steal", "--no-policy")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    verdict = json.loads(proc.stdout)
    assert verdict["policy"] == "off" and verdict["isolation"] == "kernel", verdict
    layers = verdict["layers"]
    assert layers["landlock"] and layers["seccomp"] and layers["caps_dropped"] and not layers["netns"], layers
    run = verdict["run"]
    if layer == "landlock":
        # A refused open is the tool's own exception: Landlock's errno is a hint, never a verdict
        # (a tool can raise the same error itself); what holds is that nothing was read.
        assert (run["status"], run["error_type"], run["hint"]) == ("exception", "PermissionError", "landlock"), run
    else:  # the supervisor's record of the seccomp denial: evidence the tool cannot fake
        assert run["status"] == "blocked" and run["layer"] == layer and run["evidence"], run
    assert "root:x:0:0" not in proc.stdout


#: Run inside the image: every payload of the corpus with the policy off (the kernel layers alone),
#: judged by the gate's own tripwires (runner.execution.payloads: the secret in the gate's
#: environment, a canary file and directory, a listener on 127.0.0.1). One JSON line a payload.
CORPUS_OFF = """
import dataclasses, json, tempfile
from pathlib import Path

from finevo.sandbox import create_sandbox
from finevo.sandbox.selftest import default_base_dir
from runner.execution.canaries import Canaries
from runner.execution.payloads import run_payload
from runner.inputs.corpus import load_payloads


class KernelOnly:
    def __init__(self, box):
        self.box = box

    def run(self, code, entry, args=None, limits=None, **_):
        return self.box.run_kernel_only(code, entry, args or {}, limits)


canaries = Canaries(Path(tempfile.mkdtemp(dir=default_base_dir())) / "canary")
with create_sandbox(None, backend="warm") as box:
    print(json.dumps({"layers": box.layers()}), flush=True)
    for payload in load_payloads():
        result = run_payload(KernelOnly(box), payload, canaries)
        print(json.dumps({k: str(v) for k, v in dataclasses.asdict(result).items()}), flush=True)
canaries.close()
"""


def test_policy_off_the_kernel_layers_contain_every_payload_inside_the_image(image: Any, tmp_path: Path) -> None:
    # The image as documented (its own user, Docker's default seccomp profile, no network): the
    # fourth setting of the corpus, beside root, unprivileged and unprivileged-no-unshare on the host.
    script = tmp_path / "scripts" / "corpus_off.py"
    script.parent.mkdir()
    script.write_text(CORPUS_OFF, encoding="utf-8")
    script.parent.chmod(0o755)
    script.chmod(0o644)
    proc = de.docker_cli("run", "--rm", "--init", "--network", "none", "-v", f"{script.parent}:/scripts:ro",
                         "--entrypoint", "/opt/venv/bin/python", de.TEST_IMAGE, "/scripts/corpus_off.py",
                         timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    layers = lines[0]["layers"]
    assert layers["landlock"] and layers["seccomp"], layers
    results = lines[1:]
    assert [r["payload_id"] for r in results] == [p.id for p in load_payloads()]
    # With the policy off the tool shares its process with the harness, so the value it returns is
    # its own to choose (a forged value is no breach there, as on the host); every tripwire must hold.
    forges = {p.id for p in load_payloads() if p.canary == "forge_result"}
    failed = [(r["payload_id"], r["state"], r["reason"]) for r in results
              if r["state"] not in ("blocked", "contained")
              and not (r["payload_id"] in forges and r["reason"].startswith("the forged result"))]
    assert not failed, failed
    assert "seccomp" in {r["layer"] for r in results if r["state"] == "blocked"}   # refused on evidence, not idle


def _wrong_prediction(preds: Path) -> Path:
    """A predictions file whose tool for the baseline task FAIL_TASK is off by a factor of two."""
    assert BASELINE["tasks"][FAIL_TASK]["passes"] > 0
    gold = (ROOT / "benchmarks" / "reference" / f"{FAIL_TASK}.py").read_text(encoding="utf-8")
    wrong = gold.replace("return value", "return value * 2.0")
    assert wrong != gold
    preds.parent.mkdir(parents=True, exist_ok=True)
    preds.write_text(json.dumps({"task_id": FAIL_TASK, "content": f"```python\n{wrong}\n```"}) + "\n")
    return preds


def test_failing_baseline_task_exits_1_with_the_regression_in_every_report(image: Any, tmp_path: Path) -> None:
    preds = _wrong_prediction(tmp_path / "in" / "preds.jsonl")
    out = de.open_out_dir(tmp_path / "out")
    proc = de.docker_cli("run", "--rm", "--init", "--network", "none", "-v", f"{out}:/out",
                         "-v", f"{preds.parent}:/in:ro", de.TEST_IMAGE,
                         "run", "--llm", "predictions:/in/preds.jsonl", "--only", FAIL_TASK, "--no-payloads",
                         "--no-self-check", "--out", "/out", "--run-id", "bad")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    doc, xml, summary = _reports(out / "bad")
    assert doc["verdict"]["status"] == "failed"
    assert [r["task_id"] for r in doc["regressions"]] == [FAIL_TASK]
    case = _junit_case(xml, FAIL_TASK)
    assert any(isinstance(r, (Failure, Error)) for r in case.result)
    regressions = summary.split("## Regressions", 1)[1]
    assert FAIL_TASK in regressions.split("\n## ", 1)[0]


def test_docker_stop_mid_run_exits_143_with_partial_reports(image: Any, client: Any, tmp_path: Path) -> None:
    out = de.open_out_dir(tmp_path / "out")
    name = f"finevo-stop-{os.getpid()}"
    started = de.docker_cli("run", "-d", "--init", "--network", "none", "--name", name, "-v", f"{out}:/out",
                            de.TEST_IMAGE, "run", "--llm", "reference", "--out", "/out", "--run-id", "stop",
                            "--no-self-check")
    assert started.returncode == 0, started.stderr
    try:
        de.wait_for(lambda: de.finished_tasks(out / "stop") >= 2, 300, "two finished tasks")
        stop = de.docker_cli("stop", "--time", "60", name)
        assert stop.returncode == 0, stop.stderr
        waited = de.docker_cli("wait", name)
        assert waited.stdout.strip() == "143", de.docker_cli("logs", name).stderr[-2000:]
    finally:
        de.docker_cli("rm", "-f", name)
    run_dir = out / "stop"
    partial = json.loads((run_dir / "partial_stop.json").read_text(encoding="utf-8"))
    document.validate(partial, source="partial_stop.json")
    assert partial["partial"] is True and partial["verdict"]["exit_code"] == 143
    assert (run_dir / "partial_stop.xml").is_file() and (run_dir / "partial_stop.md").is_file()
    assert not (run_dir / "results.json").exists()
    done = [t for t in partial["tasks"] if t["state"] != "skipped"]
    assert len(done) >= 2


# --------------------------------------------------------------------------- launcher (SDK)

def _plan(out: Path, gate_args: list[str], timeout: float | None = None) -> dl.RunSpec:
    host = dl.Host(env={"OPENAI_API_KEY": "sk-never-printed", "PATH": "/x"}, cwd=out.parent, uid=os.getuid(),
                   gid=os.getgid())
    return dl.plan_run(de.TEST_IMAGE, gate_args, out, host, timeout=timeout, stop_grace=60)


class _Sink:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, chunk: bytes) -> int:
        self.data += chunk
        return len(chunk)

    def flush(self) -> None:
        pass


def test_launcher_runs_offline_streams_output_and_removes_the_container(image: Any, client: Any,
                                                                          tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = _plan(out, ["run", "--llm", "reference", "--only", "fetch_002,calc_002", "--no-payloads",
                       "--run-id", "sdk"])
    assert spec.network_disabled
    dl.prepare_out_dir(out, user=spec.user)
    seen: dict[str, Any] = {}
    stdout, stderr, log = _Sink(), _Sink(), []
    code = dl.run_container(client, spec, dl.Console(stdout=stdout, stderr=stderr, log=log.append),
                            handle_signals=False,
                            on_start=lambda c: seen.update(id=c.id, attrs=client.api.inspect_container(c.id)))
    text = (stdout.data + stderr.data).decode(errors="replace")
    assert code == 0, text[-2000:]
    assert "fetch_002" in text                                      # streamed live output
    assert "sk-never-printed" not in text + "".join(log)
    host_config = seen["attrs"]["HostConfig"]
    assert host_config["NetworkMode"] == "none"
    assert client.containers.list(all=True, filters={"id": seen["id"]}) == []   # removed
    doc, _, _ = _reports(out / "sdk")
    assert [t["task_id"] for t in doc["tasks"]] == ["fetch_002", "calc_002"]
    assert seen["attrs"]["Config"]["User"] == f"{os.getuid()}:{os.getgid()}"   # the caller, root included
    for path in (out, out / "sdk", out / "sdk" / "results.json"):
        assert (path.stat().st_uid, path.stat().st_gid) == (os.getuid(), os.getgid()), path
    assert f"{out}/sdk" in text and "/out/" not in text.replace(str(out), "HOST")   # host paths, not the mount


def test_launcher_forwards_sigterm_as_a_stop(image: Any, client: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    spec = _plan(out, ["run", "--llm", "reference", "--no-self-check", "--run-id", "term"])
    dl.prepare_out_dir(out, user=spec.user)
    # The watcher signals this very process: it must never outlive the run (a container that ended
    # early would otherwise leave it to kill whatever test runs next), and a signal racing the end
    # of the run meets a harmless handler of the test's own instead of the default (terminate).
    done = threading.Event()
    lock = threading.Lock()
    stray: list[int] = []

    def stop_after_two_tasks(_container: Any) -> None:
        def watch() -> None:
            deadline = time.monotonic() + 300
            while not done.is_set() and time.monotonic() < deadline and de.finished_tasks(out / "term") < 2:
                done.wait(0.2)
            with lock:
                if not done.is_set():
                    os.kill(os.getpid(), signal.SIGTERM)   # as if the launcher itself were terminated
        threading.Thread(target=watch, daemon=True).start()

    log: list[str] = []
    outer = signal.signal(signal.SIGTERM, lambda signum, _frame: stray.append(signum))
    try:
        before = signal.getsignal(signal.SIGTERM)
        code = dl.run_container(client, spec, dl.Console(stdout=_Sink(), stderr=_Sink(), log=log.append),
                                on_start=stop_after_two_tasks)
        assert signal.getsignal(signal.SIGTERM) is before  # handler restored, not left pointing at us
    finally:
        with lock:
            done.set()
        signal.signal(signal.SIGTERM, outer)
    assert code == 143, "".join(log)
    assert any("received SIGTERM" in line for line in log)
    assert not stray, "the SIGTERM reached the test, not the launcher"
    partial = json.loads((out / "term" / "partial_term.json").read_text(encoding="utf-8"))
    assert partial["partial"] is True


def test_launcher_verb_exits_1_on_a_regression_with_the_host_file_mounted(
        image: Any, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    # The whole verb, as a user types it: existing image, host predictions file, ./out mounted.
    preds = _wrong_prediction(tmp_path / "preds.jsonl")
    out = tmp_path / "out"
    code = main(["docker", "--image", de.TEST_IMAGE, "--out", str(out), "run", "--llm", f"predictions:{preds}",
                 "--only", FAIL_TASK, "--no-payloads", "--no-self-check", "--run-id", "verb"])
    captured = capfd.readouterr()
    assert code == 1, captured.err[-2000:]
    assert "network=none" in captured.err and FAIL_TASK in captured.out + captured.err
    # the gate's own lines (not the launcher's `docker: ... cmd=...`, which shows the container's command)
    shown = "\n".join(line for line in (captured.out + captured.err).splitlines() if not line.startswith("docker:"))
    assert f"reports: {out}/verb" in shown, shown[-2000:]
    assert "/out/" not in shown.replace(str(out), "HOST") and "/in/" not in shown, shown[-2000:]
    doc, xml, _ = _reports(out / "verb")
    assert [r["task_id"] for r in doc["regressions"]] == [FAIL_TASK]
    assert any(isinstance(r, (Failure, Error)) for r in _junit_case(xml, FAIL_TASK).result)


HANGING_TOOL = """```python
def net_income(symbol: str, year: int | None = None, quarter: int | None = None) -> float:
    \"\"\"Never returns: the task outlives any wall-clock limit.\"\"\"
    total = 0
    while True:
        total += 1


if __name__ == "__main__":
    print(net_income("AAPL"))
```"""


def test_launcher_wall_clock_limit_stops_the_container(image: Any, client: Any, tmp_path: Path) -> None:
    preds = tmp_path / "hang.jsonl"
    preds.write_text(json.dumps({"task_id": FAIL_TASK, "content": HANGING_TOOL}) + "\n")
    out = tmp_path / "out"
    spec = _plan(out, ["run", "--llm", f"predictions:{preds}", "--only", FAIL_TASK, "--no-self-check",
                       "--no-payloads", "--task-timeout", "600", "--run-id", "slow"], timeout=10)
    assert [m.host for m in spec.mounts] == [preds]            # the host file reaches the container
    dl.prepare_out_dir(out, user=spec.user)
    log: list[str] = []
    clock: dict[str, float] = {}

    def gate_started(_container: Any) -> None:
        # The limit's clock starts when on_start returns: wait until the gate has written its start
        # event (its SIGTERM handler is in place by then), however slowly a loaded machine starts it.
        de.wait_for(lambda: (out / "slow" / "events.jsonl").is_file(), 300, "the gate's start event")
        clock["started"] = time.monotonic()

    code = dl.run_container(client, spec, dl.Console(stdout=_Sink(), stderr=_Sink(), log=log.append),
                            handle_signals=False, on_start=gate_started)
    assert code == 143, "".join(log)
    assert time.monotonic() - clock["started"] < 10 + 60 + 10   # limit + stop grace + removal
    assert any("wall-clock limit of 10s reached" in line for line in log)
    partial = json.loads((out / "slow" / "partial_slow.json").read_text(encoding="utf-8"))
    assert partial["partial"] is True
