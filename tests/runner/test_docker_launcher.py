"""The launcher's decisions, without an engine: network, secrets, mounts, user, build context."""

from __future__ import annotations

import io
import os
import signal
import tarfile
import time
from pathlib import Path

import pytest

from runner.cli import build_parser, main
from runner.exitcodes import Exit
from runner.launcher import container as dl

# --------------------------------------------------------------------------- LLM mode / network

@pytest.mark.parametrize("args, env, expected", [
    (["run", "--llm", "reference"], {}, "reference"),
    (["run", "--llm=replay:c.jsonl"], {}, "replay:c.jsonl"),
    (["run"], {"FINEVO_LLM_PROVIDER": "predictions:p.jsonl"}, "predictions:p.jsonl"),
    (["run", "--llm", "live"], {"FINEVO_LLM_PROVIDER": "reference"}, "live"),
    (["run"], {}, None),
])
def test_llm_mode_flag_beats_environment(args: list[str], env: dict[str, str], expected: str | None) -> None:
    assert dl.llm_mode(args, env) == expected


@pytest.mark.parametrize("mode, offline", [
    ("reference", True), ("replay:x.jsonl", True), ("predictions:p.jsonl", True),
    ("live", False), (None, False), ("referencex", False), ("replay", False),
])
def test_only_offline_modes_lose_the_network(mode: str | None, offline: bool) -> None:
    assert dl.is_offline(mode) is offline


def test_image_default_command_runs_offline(tmp_path: Path) -> None:
    spec = dl.plan_run("img", [], tmp_path, dl.Host(env={}, cwd=tmp_path, uid=1000, gid=1000), timeout=None)
    assert spec.command is None
    assert spec.network_disabled


def test_live_run_keeps_the_network(tmp_path: Path) -> None:
    spec = dl.plan_run("img", ["run", "--llm", "live"], tmp_path,
                       dl.Host(env={}, cwd=tmp_path, uid=1000, gid=1000), timeout=None)
    assert not spec.network_disabled


# --------------------------------------------------------------------------- secrets

def test_only_llm_variables_pass_and_their_values_are_never_described(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-very-secret", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
           "FINEVO_LLM_MODEL": "m", "AWS_SECRET_ACCESS_KEY": "nope", "GITHUB_TOKEN": "nope",
           "OPENAI_ORG_SECRET": "nope", "PATH": "/usr/bin"}
    spec = dl.plan_run("img", ["run", "--llm", "live"], tmp_path,
                       dl.Host(env=env, cwd=tmp_path, uid=1000, gid=1000), timeout=None)
    assert set(spec.environment) == {"OPENAI_API_KEY", "OPENAI_BASE_URL", "FINEVO_LLM_MODEL", "HOME"}
    assert spec.environment["OPENAI_API_KEY"] == "sk-very-secret"
    line = spec.describe()
    assert "sk-very-secret" not in line and "127.0.0.1" not in line
    assert "OPENAI_API_KEY" in line


def test_offline_runs_get_no_api_keys(tmp_path: Path) -> None:
    env = {"OPENAI_API_KEY": "sk-very-secret", "FINEVO_LLM_API_KEY": "fk-secret", "FINEVO_LLM_MODEL": "m",
           "FINEVO_LLM_PROVIDER": "reference"}
    for args in ([], ["run"], ["run", "--llm", "replay:c.jsonl"], ["run", "--llm", "predictions:p.jsonl"]):
        spec = dl.plan_run("img", args, tmp_path, dl.Host(env=env, cwd=tmp_path, uid=0, gid=0), timeout=None)
        assert spec.network_disabled, args
        assert set(spec.environment) == {"FINEVO_LLM_MODEL", "FINEVO_LLM_PROVIDER", "HOME"}, args


# --------------------------------------------------------------------------- command and mounts

def test_out_is_pointed_at_the_volume_unless_given() -> None:
    assert dl.container_command(["run", "--llm", "reference"]) == ["run", "--llm", "reference", "--out", "/out"]
    assert dl.container_command(["--", "--llm", "reference"]) == ["run", "--llm", "reference", "--out", "/out"]
    assert dl.container_command(["run", "--out=/out/x"]) == ["run", "--out=/out/x"]
    assert dl.container_command(["data", "info"]) == ["data", "info"]
    assert dl.container_command([]) is None


def test_host_input_files_are_mounted_read_only_and_rewritten(tmp_path: Path) -> None:
    preds = tmp_path / "preds.jsonl"
    preds.write_text("{}\n")
    tasks = tmp_path / "t.jsonl"
    tasks.write_text("{}\n")
    args, mounts = dl.map_input_paths(
        ["run", "--llm", "predictions:preds.jsonl", "--tasks", str(tasks), "--baseline=t.jsonl",
         "--only", "preds.jsonl"], cwd=tmp_path)
    assert args[:3] == ["run", "--llm", "predictions:/in/0/preds.jsonl"]
    assert args[3:5] == ["--tasks", "/in/1/t.jsonl"]
    assert args[5] == "--baseline=/in/1/t.jsonl"        # same host file, same mount
    assert args[6:] == ["--only", "preds.jsonl"]         # not a path flag: untouched
    assert [(m.host, m.container, m.read_only) for m in mounts] == [
        (preds.resolve(), "/in/0/preds.jsonl", True), (tasks.resolve(), "/in/1/t.jsonl", True)]


def test_missing_host_paths_are_left_for_the_gate_to_report(tmp_path: Path) -> None:
    args, mounts = dl.map_input_paths(["run", "--llm", "replay:nope.jsonl", "--tasks", "none"], cwd=tmp_path)
    assert args == ["run", "--llm", "replay:nope.jsonl", "--tasks", "none"]
    assert mounts == []


# --------------------------------------------------------------------------- user / out dir

@pytest.mark.parametrize("uid, gid", [(1000, 100), (0, 0), (65534, 65534)])
def test_the_container_runs_as_the_caller_root_included(tmp_path: Path, uid: int, gid: int) -> None:
    spec = dl.plan_run("img", [], tmp_path, dl.Host(env={}, cwd=tmp_path, uid=uid, gid=gid), timeout=5.0)
    assert spec.user == f"{uid}:{gid}"
    assert spec.environment["HOME"] == "/tmp"  # the caller's uid has no home in the image
    assert f"user={uid}:{gid}" in spec.describe()


def test_the_out_dir_keeps_its_owner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chowned: list[object] = []
    monkeypatch.setattr("os.chown", lambda *args, **kwargs: chowned.append(args))
    monkeypatch.setattr("os.lchown", lambda *args, **kwargs: chowned.append(args))
    owner = (tmp_path.stat().st_uid, tmp_path.stat().st_gid)
    out = dl.prepare_out_dir(tmp_path / "reports" / "nested", user=f"{os.getuid()}:{os.getgid()}")
    assert out.is_dir() and chowned == []
    assert (out.stat().st_uid, out.stat().st_gid) == (os.getuid(), os.getgid())
    assert (tmp_path.stat().st_uid, tmp_path.stat().st_gid) == owner


def test_unwritable_out_dir_is_a_usage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(dl.LauncherError) as err:
        dl.prepare_out_dir(blocker / "reports", user="1000:1000")
    assert err.value.exit_code == Exit.USAGE


# --------------------------------------------------------------------------- build context

def _context(tmp_path: Path) -> Path:
    ctx = tmp_path / "ctx"
    (ctx / "finevo").mkdir(parents=True)
    (ctx / "tests").mkdir()
    (ctx / "Dockerfile").write_text("FROM scratch\n")
    (ctx / "pyproject.toml").write_text("[project]\nname='x'\n")
    (ctx / "finevo" / "a.py").write_text("A = 1\n")
    (ctx / "tests" / "test_a.py").write_text("assert True\n")
    (ctx / ".dockerignore").write_text("# comment\ntests\n")
    return ctx


def _names(fileobj) -> list[str]:
    with tarfile.open(fileobj=fileobj, mode="r") as tar:
        return sorted(m.name for m in tar.getmembers())


def test_context_honours_dockerignore_and_adds_the_wheelhouse(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    wheels = tmp_path / "wh"
    wheels.mkdir()
    (wheels / "x-1.0-py3-none-any.whl").write_bytes(b"PK")
    (wheels / "notes.txt").write_text("ignored")
    tar, _ = dl.build_context(dl.BuildSpec(context_dir=ctx, wheelhouse=wheels))
    assert _names(tar) == [".dockerignore", ".wheelhouse/x-1.0-py3-none-any.whl", "Dockerfile",
                           "finevo/a.py", "pyproject.toml"]


def test_context_hash_follows_content_and_build_args_only(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    _, first = dl.build_context(dl.BuildSpec(context_dir=ctx))
    (ctx / "finevo" / "a.py").touch()                       # mtime only
    _, same = dl.build_context(dl.BuildSpec(context_dir=ctx))
    (ctx / "tests" / "test_a.py").write_text("changed\n")   # ignored file
    _, ignored = dl.build_context(dl.BuildSpec(context_dir=ctx))
    _, other_base = dl.build_context(dl.BuildSpec(context_dir=ctx, base_image="b:1"))
    (ctx / "finevo" / "a.py").write_text("A = 2\n")
    _, edited = dl.build_context(dl.BuildSpec(context_dir=ctx))
    assert first == same == ignored
    assert len({first, other_base, edited}) == 3


def test_wheelhouse_without_wheels_is_a_usage_error(tmp_path: Path) -> None:
    ctx = _context(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(dl.LauncherError) as err:
        dl.build_context(dl.BuildSpec(context_dir=ctx, wheelhouse=empty))
    assert err.value.exit_code == Exit.USAGE


def test_build_args_name_the_wheelhouse_inside_the_context(tmp_path: Path) -> None:
    spec = dl.BuildSpec(context_dir=tmp_path, base_image="finevo-base:bookworm", wheelhouse=tmp_path,
                        build_args={"REVISION": "abc"})
    assert spec.all_build_args() == {"REVISION": "abc", "BASE_IMAGE": "finevo-base:bookworm",
                                     "WHEELHOUSE": ".wheelhouse"}


def test_repository_checkout_is_found_as_the_context() -> None:
    root = dl.find_context_dir(Path(__file__).resolve().parents[2])
    assert (root / "Dockerfile").is_file()
    with pytest.raises(dl.LauncherError):
        dl.find_context_dir(Path(__file__).resolve().parent)


# --------------------------------------------------------------------------- CLI

def test_cli_passes_gate_arguments_after_the_verb_or_double_dash() -> None:
    parser = build_parser()
    ns = parser.parse_args(["docker", "--build", "--timeout", "30", "run", "--llm", "reference", "--only", "a"])
    assert ns.build and ns.timeout == 30.0
    assert ns.gate_args == ["run", "--llm", "reference", "--only", "a"]
    ns = parser.parse_args(["docker", "--out", "r", "--", "--llm", "reference"])
    assert ns.gate_args == ["--", "--llm", "reference"] and ns.out == Path("r")


def test_unreachable_engine_is_one_line_and_exit_3(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path / 'no-engine.sock'}")
    code = main(["docker", "--out", str(tmp_path / "r"), "run", "--llm", "reference"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == Exit.NO_VERDICT
    assert len(err) == 1 and err[0].startswith("finevo-verify docker: cannot reach the Docker engine")


def test_stopper_escalates_to_kill_on_a_second_request() -> None:
    calls: list[str] = []

    class FakeContainer:
        def kill(self, signal: str) -> None:
            calls.append(signal)

        def wait(self, timeout: float) -> dict[str, int]:
            return {"StatusCode": 143}

    log = io.StringIO()
    stopper = dl._Stopper(FakeContainer(), grace=1.0, log=log.write)
    stopper.stop("received SIGINT", sig="SIGINT")
    stopper.stop("received SIGINT", sig="SIGINT")
    deadline = time.monotonic() + 5
    while len(calls) < 2 and time.monotonic() < deadline:  # the stopper works in threads
        time.sleep(0.01)
    assert sorted(calls) == ["SIGINT", "SIGKILL"]
    assert stopper.reason == "received SIGINT"
    assert "SIGKILL after 1s" in log.getvalue()


# --------------------------------------------------------------------------- run (fake engine)

class _FakeContainer:
    def __init__(self, code: int, start_error: Exception | None) -> None:
        self.id = "c0ffee" * 4
        self.short_id = self.id[:10]
        self.code = code
        self.start_error = start_error
        self.removed = False

    def start(self) -> None:
        if self.start_error is not None:
            raise self.start_error

    def wait(self, timeout: float | None = None) -> dict[str, int]:
        return {"StatusCode": self.code}

    def kill(self, signal: str) -> None:
        pass

    def remove(self, force: bool = False) -> None:
        self.removed = True


class _FakeClient:
    """Just the calls run_container makes: create, logs, and the container's own methods."""

    def __init__(self, code: int = 0, start_error: Exception | None = None) -> None:
        self.container = _FakeContainer(code, start_error)
        self.created: dict[str, object] = {}
        self.containers = self
        self.api = self

    def create(self, **kwargs: object) -> _FakeContainer:
        self.created = kwargs
        return self.container

    def logs(self, container_id: str, *, stdout: bool, stderr: bool, stream: bool, follow: bool):
        assert follow and stream and container_id == self.container.id
        return iter([b"out line\n"] if stdout else [b"err line\n"])


class _Bytes(io.BytesIO):
    pass


def _spec(tmp_path: Path, args: list[str]) -> dl.RunSpec:
    return dl.plan_run("img", args, tmp_path, dl.Host(env={}, cwd=tmp_path, uid=1000, gid=1000), timeout=None)


def test_streamed_output_names_host_paths_not_the_container_mounts(tmp_path: Path) -> None:
    preds = tmp_path / "in" / "preds.jsonl"
    preds.parent.mkdir()
    preds.write_text("{}\n")
    out = tmp_path / "reports"
    spec = dl.plan_run("img", ["run", "--llm", f"predictions:{preds}"], out,
                       dl.Host(env={}, cwd=tmp_path, uid=1000, gid=1000), timeout=None)
    sink = _Bytes()
    writer = dl.HostPaths(sink, dl.host_path_map(spec))
    text = (f"reports: /out/run-1\nloaded {spec.mounts[0].container} (3 lines)\n"
            "`finevo-verify baseline update /out/run-1/results.json`\n"
            "untouched: /outside /output/x /tmp/out/x ./out/x\nlast /out")
    for i in range(0, len(text), 7):                      # chunks split words and paths anywhere
        writer.write(text[i:i + 7].encode())
    writer.close()
    shown = sink.getvalue().decode()
    assert f"reports: {out}/run-1\n" in shown
    assert f"loaded {preds} (3 lines)" in shown
    assert f"`finevo-verify baseline update {out}/run-1/results.json`" in shown
    assert "untouched: /outside /output/x /tmp/out/x ./out/x\n" in shown
    assert shown.endswith(f"last {out}")


def test_run_returns_the_container_exit_code_streams_and_cleans_up(tmp_path: Path) -> None:
    client = _FakeClient(code=1)
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    out, err = _Bytes(), _Bytes()
    code = dl.run_container(client, _spec(tmp_path, ["run", "--llm", "reference"]),
                            dl.Console(stdout=out, stderr=err, log=lambda _t: None))
    assert code == 1
    assert out.getvalue() == b"out line\n" and err.getvalue() == b"err line\n"
    assert client.container.removed
    assert client.created["network_mode"] == "none" and client.created["init"] is True
    assert client.created["volumes"] == {str(tmp_path): {"bind": "/out", "mode": "rw"}}
    assert {sig: signal.getsignal(sig) for sig in before} == before   # handlers restored


def test_engine_failure_after_create_is_no_verdict_not_a_traceback(tmp_path: Path) -> None:
    from docker.errors import APIError

    client = _FakeClient(start_error=APIError("500 Server Error: driver failed\nsecond line"))
    with pytest.raises(dl.LauncherError) as err:
        dl.run_container(client, _spec(tmp_path, []), dl.Console(stdout=_Bytes(), stderr=_Bytes(), log=lambda _t: None))
    assert err.value.exit_code == Exit.NO_VERDICT
    assert err.value.message == f"container {client.container.short_id}: 500 Server Error: driver failed"
    assert client.container.removed


def test_the_commit_under_test_is_passed_to_the_container(tmp_path: Path) -> None:
    spec = dl.plan_run("img", ["run", "--llm", "reference"], tmp_path,
                       dl.Host(env={}, cwd=tmp_path, uid=1000, gid=1000, git_sha="0123abcd" * 5), timeout=None)
    assert spec.environment["FINEVO_GIT_SHA"] == "0123abcd" * 5
    assert "FINEVO_GIT_SHA" in spec.describe() and "0123abcd" not in spec.describe()
    bare = dl.plan_run("img", [], tmp_path, dl.Host(env={}, cwd=tmp_path, uid=1000, gid=1000), timeout=None)
    assert "FINEVO_GIT_SHA" not in bare.environment  # then the image's own REVISION stands


def test_host_git_sha_prefers_the_environment_then_git(tmp_path: Path) -> None:
    import shutil
    import subprocess

    assert dl.host_git_sha({"FINEVO_GIT_SHA": "feedface"}, tmp_path) == "feedface"
    assert dl.host_git_sha({"FINEVO_GIT_SHA": "unknown"}, None) is None
    assert dl.host_git_sha({}, tmp_path) is None  # not a checkout
    if shutil.which("git") is None:
        pytest.skip("no git on this machine")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert dl.host_git_sha({}, repo) == head and len(head) == 40


# --------------------------------------------------------------------------- build (fake engine)

class _FakeImage:
    def __init__(self, image_id: str, tags: list[str]) -> None:
        self.id = image_id
        self.tags = tags


class _FakeImages:
    def __init__(self, leftovers: list[_FakeImage]) -> None:
        self.leftovers = leftovers
        self.removed: list[str] = []
        self.filters: list[dict[str, str]] = []

    def list(self, all: bool = False, filters: dict[str, str] | None = None) -> list[_FakeImage]:
        self.filters.append(dict(filters or {}))
        return self.leftovers

    def remove(self, image: str, force: bool = False, noprune: bool = False) -> None:
        assert not noprune  # the builder stage's untagged parents go too
        self.removed.append(image)

    def get(self, tag: str) -> _FakeImage:
        return _FakeImage("final", [tag])


class _FakeBuildClient:
    def __init__(self, chunks: list[dict[str, str]]) -> None:
        self.chunks = chunks
        self.images = _FakeImages([_FakeImage("builder-stage", [])])
        self.api = self
        self.buildargs: dict[str, str] = {}

    def build(self, **kwargs: object):
        self.buildargs = dict(kwargs["buildargs"])  # type: ignore[arg-type]
        return iter(self.chunks)


def test_a_build_removes_its_own_builder_stage(tmp_path: Path) -> None:
    client = _FakeBuildClient([{"stream": "Step 1/2\n"}, {"stream": "Successfully built final\n"}])
    image = dl.build_image(client, dl.BuildSpec(context_dir=_context(tmp_path)), log=lambda _t: None)
    assert image.id == "final"
    build_id = client.buildargs[dl.BUILD_ID_ARG]
    assert build_id and client.images.filters == [{"label": f"{dl.BUILD_ID_LABEL}={build_id}"}]
    assert client.images.removed == ["builder-stage"]


def test_the_build_id_never_changes_the_context_hash(tmp_path: Path) -> None:
    spec = dl.BuildSpec(context_dir=_context(tmp_path))
    assert dl.BUILD_ID_ARG not in spec.all_build_args()
    assert dl.build_context(spec)[1] == dl.build_context(spec)[1]


@pytest.mark.parametrize("spec_kwargs, chunks, wanted", [
    ({}, [{"error": "pull access denied for python, repository does not exist or may require 'docker login'"}],
     ["--base-image", "scripts/setup-docker.sh", "--wheelhouse"]),
    ({}, [{"stream": "ERROR: Could not find a version that satisfies the requirement pandas==3.1.1\n"},
          {"error": "The command '/bin/sh -c pip install' returned a non-zero code: 1"}],
     ["Could not find a version", "--wheelhouse", "scripts/setup-docker.sh"]),
    ({"wheelhouse": "WH"}, [{"stream": "ERROR: No matching distribution found for numpy==2.4.6\n"},
                            {"error": "The command '/bin/sh -c pip install' returned a non-zero code: 1"}],
     ["numpy==2.4.6", "lacks a locked wheel", "--wheelhouse"]),
    ({}, [{"error": "COPY failed: file not found in build context"}], ["--base-image", "--wheelhouse"]),
], ids=["base-not-pullable", "index-unreachable", "wheelhouse-incomplete", "other"])
def test_a_failed_build_names_the_flags_that_fix_it(tmp_path: Path, spec_kwargs: dict[str, str],
                                                    chunks: list[dict[str, str]], wanted: list[str]) -> None:
    ctx = _context(tmp_path)
    kwargs: dict[str, object] = {}
    if "wheelhouse" in spec_kwargs:
        wheels = tmp_path / "wheels"
        wheels.mkdir()
        (wheels / "x-1-py3-none-any.whl").write_bytes(b"x")
        kwargs["wheelhouse"] = wheels
    client = _FakeBuildClient(chunks)
    with pytest.raises(dl.LauncherError) as err:
        dl.build_image(client, dl.BuildSpec(context_dir=ctx, **kwargs), log=lambda _t: None)  # type: ignore[arg-type]
    assert err.value.exit_code == Exit.NO_VERDICT
    message = err.value.message
    assert "\n" not in message and message.startswith("image build failed: ")
    for word in wanted:
        assert word in message, message
    assert client.images.removed == ["builder-stage"]  # a failed build leaves nothing behind either
