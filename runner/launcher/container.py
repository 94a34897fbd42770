"""Run the gate in a fresh container through the Docker SDK (``finevo-verify docker``).

One job: build the image when asked (or when it is missing), run ``finevo-verify`` in a new
container with the reports directory bind-mounted at ``/out``, stream its output live, enforce a
wall-clock limit, turn Ctrl+C / SIGTERM into a container stop (the gate then writes partial
reports), remove the container and hand back its exit code.

Decisions
* **Build context.** The repository (minus ``.dockerignore``) is packed here, deterministically
  (sorted, mtime 0, root-owned), plus an optional wheelhouse under ``.wheelhouse/``; the SHA-256
  of that tar and the build arguments is stored on the image as the label
  :data:`CONTEXT_LABEL`, so callers can skip a build whose result already exists.
* **User.** The container runs as the caller's ``uid:gid``, root included, so the reports on the
  host belong to the caller and the caller's directory is never chowned (the image's own user,
  uid :data:`IMAGE_UID`, is only the default of a bare ``docker run``). ``HOME`` is ``/tmp``: the
  caller's uid has no home in the image.
* **Host paths.** The gate prints the container's paths (``/out/<run_id>``, ``/in/...``); the
  launcher rewrites them in the streamed output to the host paths they are mounted from.
* **Build leftovers.** The legacy builder (the SDK's) keeps each multi-stage build's builder stage
  as a dangling image of several hundred MB. The Dockerfile labels that stage with a per-build id
  (:data:`BUILD_ID_ARG`) and the launcher removes exactly that image after the build.
* **Hints.** A build that fails to pull the base image or to download a dependency says which
  flags fix it (``--base-image``, ``--wheelhouse``) and how to make their inputs offline.
* **Network.** Offline LLM modes (``reference``, ``replay:FILE``, ``predictions:FILE``) run with
  ``--network none``; only ``live`` (or an unknown mode) gets the default network.
* **Secrets.** Only ``FINEVO_LLM_*``, ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` are passed in, and
  only their names are ever printed; the API keys (:data:`SECRET_NAMES`) not at all to offline modes.
  ``FINEVO_REQUIRE_ISOLATION`` passes too when set (the image requires kernel isolation by default).
  The container runs under Docker's default seccomp profile, where Landlock and seccomp -- the
  sandbox's kernel layers -- both work: no extra privilege or profile is asked for.
* **Commit.** The image has no git: ``FINEVO_GIT_SHA`` is set to the host checkout's
  ``git rev-parse HEAD`` (or the host's own ``FINEVO_GIT_SHA``) so results.json records the commit;
  without either, the image's build-time ``REVISION`` stands.
* **Input files.** Host paths given to ``--tasks``, ``--baseline``, ``--data`` or an LLM mode
  (``replay:FILE`` / ``predictions:FILE``) are bind-mounted read-only under ``/in`` and the
  arguments rewritten, so ``finevo-verify docker run --llm predictions:preds.jsonl`` just works.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import tempfile
import threading
import uuid
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any, NotRequired, Protocol, TypedDict

from runner.exitcodes import Exit
from runner.launcher.defaults import DEFAULT_IMAGE, DEFAULT_STOP_GRACE

CONTEXT_LABEL = "org.finevo.context-sha256"
LAUNCHER_LABEL = "org.finevo.launcher"
IMAGE_UID = 10001
IMAGE_GID = 10001
CONTAINER_OUT = "/out"
CONTAINER_IN = "/in"
WHEELHOUSE_IN_CONTEXT = ".wheelhouse"
#: Build argument naming one build; the Dockerfile labels its builder stage with it.
BUILD_ID_ARG = "FINEVO_BUILD_ID"
BUILD_ID_LABEL = "org.finevo.build-id"
#: What scripts/setup-docker.sh builds when no registry is reachable, and where it puts the wheels.
OFFLINE_BASE_IMAGE = "finevo-base:bookworm"
OFFLINE_WHEELHOUSE = "/var/cache/finevo/wheelhouse"

OFFLINE_MODES = ("reference",)
OFFLINE_PREFIXES = ("replay:", "predictions:")
PASSTHROUGH_PREFIXES = ("FINEVO_LLM_",)
PASSTHROUGH_NAMES = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "FINEVO_REQUIRE_ISOLATION")
#: Credentials: passed only to runs that may call an LLM endpoint (never to offline modes).
SECRET_NAMES = ("OPENAI_API_KEY", "FINEVO_LLM_API_KEY")
#: Gate flags whose value is a host path the container must see.
PATH_FLAGS = ("--tasks", "--baseline", "--data", "--security-tasks", "--payloads")
LLM_FLAG = "--llm"


#: The container's /tmp (every sandbox working directory): a tmpfs whose size and inode count
#: the kernel enforces, where the image has no mount namespace for a tmpfs per run.
TMP_TMPFS = "rw,nosuid,nodev,size=1g,nr_inodes=200000,mode=1777"


def log_to_stderr(text: str) -> None:
    """The default log: the launcher's own lines and the build output go to stderr, unbuffered."""
    sys.stderr.write(text)
    sys.stderr.flush()


class LauncherError(Exception):
    """A launcher failure with the exit code it maps to; ``message`` is one line."""

    def __init__(self, message: str, exit_code: int = int(Exit.NO_VERDICT)) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


# ---------------------------------------------------------------------------------------------
# Engine


def connect(ping_timeout: float = 10.0) -> Any:
    """A Docker client whose engine has answered a ping; :class:`LauncherError` (exit 3) otherwise.

    The client itself has no request timeout: builds and runs take as long as they take (the
    wall-clock limit is enforced separately).
    """
    try:
        import docker
    except ImportError:
        raise LauncherError("the Docker SDK is not installed: the launcher is an extra, "
                            "pip install 'finevo[docker]'", int(Exit.USAGE)) from None
    try:
        probe = docker.from_env(timeout=int(ping_timeout))
        try:
            probe.ping()
        finally:
            probe.close()
        return docker.from_env(timeout=None)
    except Exception as exc:  # the SDK raises several unrelated types for "no engine"
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LauncherError(f"cannot reach the Docker engine: {reason} (start one, e.g. "
                            "`bash scripts/setup-docker.sh`, or point DOCKER_HOST at it)") from exc


# ---------------------------------------------------------------------------------------------
# Build


@dataclass(frozen=True)
class BuildSpec:
    """What to build: the context directory, the tag and the build arguments."""

    context_dir: Path
    tag: str = DEFAULT_IMAGE
    base_image: str | None = None
    wheelhouse: Path | None = None
    build_args: Mapping[str, str] = field(default_factory=dict)

    def all_build_args(self) -> dict[str, str]:
        args = dict(self.build_args)
        if self.base_image:
            args["BASE_IMAGE"] = self.base_image
        if self.wheelhouse is not None:
            args["WHEELHOUSE"] = WHEELHOUSE_IN_CONTEXT
        return args


def find_context_dir(start: Path | None = None) -> Path:
    """The checkout holding the Dockerfile: ``start`` (or the cwd) or the source tree of this package."""
    candidates = [start] if start is not None else [Path.cwd(), Path(__file__).resolve().parents[2]]
    for candidate in candidates:
        if candidate is not None and (candidate / "Dockerfile").is_file() and (candidate / "pyproject.toml").is_file():
            return candidate.resolve()
    where = start if start is not None else "the current directory or the package source tree"
    raise LauncherError(f"no Dockerfile next to a pyproject.toml in {where}; pass --context DIR",
                        int(Exit.USAGE))


def _dockerignore_patterns(context_dir: Path) -> list[str]:
    path = context_dir / ".dockerignore"
    if not path.is_file():
        return []
    patterns = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            patterns.append(line)
    return patterns


def context_files(context_dir: Path) -> list[str]:
    """Files (relative, POSIX, sorted) that ``.dockerignore`` keeps, without any local wheelhouse."""
    from docker.utils.build import exclude_paths

    patterns = [*_dockerignore_patterns(context_dir), WHEELHOUSE_IN_CONTEXT]
    kept = exclude_paths(str(context_dir), patterns, dockerfile="Dockerfile")
    files = [p for p in kept if (context_dir / p).is_file() and not (context_dir / p).is_symlink()]
    return sorted(Path(p).as_posix() for p in files)


def _add_file(tar: tarfile.TarFile, source: Path, arcname: str, digest: Any) -> None:
    data = source.read_bytes()
    info = tarfile.TarInfo(arcname)
    info.size = len(data)
    info.mode = 0o755 if os.access(source, os.X_OK) else 0o644
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    tar.addfile(info, io.BytesIO(data))
    digest.update(arcname.encode() + b"\0" + hashlib.sha256(data).digest())


def build_context(spec: BuildSpec) -> tuple[IO[bytes], str]:
    """Pack the build context; return the tar (rewound) and its content hash (hex).

    The hash covers every file's path and bytes and the build arguments, nothing else (no
    timestamps), so the same sources always give the same hash.
    """
    digest = hashlib.sha256()
    fileobj: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=64 * 1024 * 1024)  # noqa: SIM115
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for rel in context_files(spec.context_dir):
            _add_file(tar, spec.context_dir / rel, rel, digest)
        if spec.wheelhouse is not None:
            wheelhouse = spec.wheelhouse
            if not wheelhouse.is_dir():
                raise LauncherError(f"--wheelhouse {wheelhouse}: not a directory", int(Exit.USAGE))
            wheels = sorted(p for p in wheelhouse.iterdir() if p.is_file() and p.suffix == ".whl")
            if not wheels:
                raise LauncherError(f"--wheelhouse {wheelhouse}: no .whl files in it", int(Exit.USAGE))
            for wheel in wheels:
                _add_file(tar, wheel, f"{WHEELHOUSE_IN_CONTEXT}/{wheel.name}", digest)
    digest.update(json.dumps(spec.all_build_args(), sort_keys=True).encode())
    fileobj.seek(0)
    return fileobj, digest.hexdigest()


def find_built_image(client: Any, context_hash: str) -> Any | None:
    """An image already built from exactly this context, if the engine has one."""
    images = client.images.list(filters={"label": f"{CONTEXT_LABEL}={context_hash}"})
    return images[0] if images else None


_PULL_FAILURE = re.compile(r"pull access denied|manifest unknown|manifest for .* not found|repository does not "
                           r"exist|registry-\d|docker\.io|dial tcp|no such host|i/o timeout|TLS handshake|"
                           r"failed to resolve|unauthorized", re.IGNORECASE)
_INDEX_FAILURE = re.compile(r"No matching distribution|Could not find a version|NewConnectionError|"
                            r"Network is unreachable|Temporary failure in name resolution|Max retries exceeded|"
                            r"ProxyError|SSLError|ConnectTimeout|ReadTimeout", re.IGNORECASE)


def build_hint(spec: BuildSpec, failure: str) -> str:
    """What to type to get past a failed build, judged from the builder's output ``failure``."""
    base = spec.base_image or "python:3.11-slim-bookworm (the Dockerfile's default)"
    offline = (f"`bash scripts/setup-docker.sh` builds a base image ({OFFLINE_BASE_IMAGE}) from the machine's "
               f"Debian mirror and a wheelhouse ({OFFLINE_WHEELHOUSE})")
    if _INDEX_FAILURE.search(failure):
        if spec.wheelhouse is not None:
            return (f"the wheelhouse {spec.wheelhouse} lacks a locked wheel: rebuild it from requirements.lock "
                    f"with `bash scripts/setup-docker.sh --wheelhouse {spec.wheelhouse}`")
        return (f"the package index cannot be reached: build offline with --wheelhouse DIR; {offline}, "
                f"then pass --base-image {OFFLINE_BASE_IMAGE} --wheelhouse {OFFLINE_WHEELHOUSE}")
    if _PULL_FAILURE.search(failure):
        return (f"the base image {base} cannot be pulled: pass --base-image IMAGE (any local Debian-like image "
                f"with python3 >= 3.11 and venv); {offline}, then pass --base-image {OFFLINE_BASE_IMAGE} "
                f"--wheelhouse {OFFLINE_WHEELHOUSE}")
    return (f"without registry or package-index access: {offline}, then pass --base-image {OFFLINE_BASE_IMAGE} "
            f"--wheelhouse {OFFLINE_WHEELHOUSE}")


def remove_build_leftovers(client: Any, build_id: str) -> None:
    """Remove the builder-stage image(s) that the build ``build_id`` left dangling (best effort)."""
    try:
        for leftover in client.images.list(all=True, filters={"label": f"{BUILD_ID_LABEL}={build_id}"}):
            if not leftover.tags:
                client.images.remove(leftover.id, force=True, noprune=False)
    except Exception:  # an engine hiccup here must not turn a good build into a failure
        pass


def build_image(client: Any, spec: BuildSpec, *, reuse: bool = False,
                log: Callable[[str], None] | None = None) -> Any:
    """Build ``spec`` and tag it ``spec.tag``; with ``reuse``, retag an identical earlier build.

    Build output is streamed to ``log`` (stderr by default). A failed build raises
    :class:`LauncherError` (exit 3) carrying the builder's own error line and the flags that fix it.
    The builder stage's image is removed afterwards, whether the build passed or failed.
    """
    emit = log or log_to_stderr
    context, context_hash = build_context(spec)
    build_id = uuid.uuid4().hex
    recent: deque[str] = deque(maxlen=40)
    try:
        if reuse:
            existing = find_built_image(client, context_hash)
            if existing is not None:
                from docker.utils import parse_repository_tag

                repo, tag = parse_repository_tag(spec.tag)
                existing.tag(repo, tag or "latest")
                emit(f"image {spec.tag} is up to date (context {context_hash[:12]})\n")
                return existing
        emit(f"building {spec.tag} (context {context_hash[:12]})\n")
        stream = client.api.build(
            fileobj=context, custom_context=True, tag=spec.tag,
            buildargs={**spec.all_build_args(), BUILD_ID_ARG: build_id},
            labels={CONTEXT_LABEL: context_hash}, rm=True, forcerm=True, pull=False, decode=True,
        )
        for chunk in stream:
            if "error" in chunk:
                detail = str(chunk.get("error", "")).strip().splitlines()
                raise LauncherError(_build_failure(spec, detail[-1] if detail else "unknown error", recent))
            text = chunk.get("stream")
            if text:
                recent.extend(line for line in str(text).splitlines() if line.strip())
                emit(text)
    except LauncherError:
        raise
    except Exception as exc:
        raise LauncherError(_build_failure(spec, str(exc).strip().splitlines()[0] if str(exc).strip()
                                           else type(exc).__name__, recent)) from exc
    finally:
        context.close()
        remove_build_leftovers(client, build_id)
    return client.images.get(spec.tag)


def _build_failure(spec: BuildSpec, error: str, recent: deque[str]) -> str:
    """One line: the builder's error, the tool's own reason when it printed one, and the fix."""
    reason = next((line.strip() for line in reversed(recent) if line.lstrip().startswith("ERROR")), "")
    text = f"image build failed: {error}"
    if reason and reason not in error:
        text += f" ({reason})"
    return f"{text}; {build_hint(spec, error + chr(10) + chr(10).join(recent))}"


# ---------------------------------------------------------------------------------------------
# Run plan (pure functions: unit-tested without an engine)


def llm_mode(gate_args: Sequence[str], env: Mapping[str, str]) -> str | None:
    """The LLM mode the gate will use: ``--llm`` wins over ``FINEVO_LLM_PROVIDER``."""
    mode: str | None = None
    args = list(gate_args)
    for i, arg in enumerate(args):
        if arg == LLM_FLAG and i + 1 < len(args):
            mode = args[i + 1]
        elif arg.startswith(LLM_FLAG + "="):
            mode = arg.split("=", 1)[1]
    if mode is None:
        mode = env.get("FINEVO_LLM_PROVIDER") or None
    return mode


def is_offline(mode: str | None) -> bool:
    """True when the mode never needs the network (it then runs under ``--network none``)."""
    if mode is None:
        return False
    return mode in OFFLINE_MODES or mode.startswith(OFFLINE_PREFIXES)


def passthrough_env(env: Mapping[str, str], *, offline: bool = False) -> dict[str, str]:
    """The LLM variables the gate may need, and nothing else; no credentials when ``offline``."""
    return {k: v for k, v in env.items()
            if (k.startswith(PASSTHROUGH_PREFIXES) or k in PASSTHROUGH_NAMES)
            and not (offline and k in SECRET_NAMES)}


@dataclass(frozen=True)
class Mount:
    host: Path
    container: str
    read_only: bool = True


def map_input_paths(gate_args: Sequence[str], cwd: Path) -> tuple[list[str], list[Mount]]:
    """Rewrite host paths in the gate arguments to read-only mounts under ``/in``.

    Arguments that name no existing host path are left alone (the gate reports them).
    """
    out: list[str] = []
    mounts: list[Mount] = []
    by_host: dict[Path, str] = {}

    def mapped(raw: str) -> str:
        host = (cwd / raw).resolve() if not os.path.isabs(raw) else Path(raw).resolve()
        if not host.exists():
            return raw
        if host not in by_host:
            target = f"{CONTAINER_IN}/{len(by_host)}/{host.name}"
            by_host[host] = target
            mounts.append(Mount(host=host, container=target))
        return by_host[host]

    def mapped_mode(mode: str) -> str:
        for prefix in OFFLINE_PREFIXES:
            if mode.startswith(prefix):
                return prefix + mapped(mode[len(prefix):])
        return mode

    args = list(gate_args)
    i = 0
    while i < len(args):
        arg = args[i]
        flag, eq, value = arg.partition("=")
        if eq and flag in PATH_FLAGS:
            out.append(f"{flag}={mapped(value)}")
        elif eq and flag == LLM_FLAG:
            out.append(f"{flag}={mapped_mode(value)}")
        elif arg in PATH_FLAGS and i + 1 < len(args):
            out += [arg, mapped(args[i + 1])]
            i += 1
        elif arg == LLM_FLAG and i + 1 < len(args):
            out += [arg, mapped_mode(args[i + 1])]
            i += 1
        else:
            out.append(arg)
        i += 1
    return out, mounts


def container_command(gate_args: Sequence[str]) -> list[str] | None:
    """The container's command: ``None`` keeps the image's default (the reference run)."""
    args = list(gate_args)
    if args and args[0] == "--":
        args = args[1:]
    if not args:
        return None
    if not any(a == "--out" or a.startswith("--out=") for a in args):
        if args[0].startswith("-"):
            args.insert(0, "run")
        if args[0] == "run":
            args += ["--out", CONTAINER_OUT]
    return args


def container_user(host_uid: int, host_gid: int) -> str:
    """``uid:gid`` for the container: the caller's, so that what it writes belongs to the caller."""
    return f"{host_uid}:{host_gid}"


def prepare_out_dir(out_dir: Path, *, user: str | None = None) -> Path:
    """Create the reports directory (as the caller: it is the caller's), never changing its owner.

    ``user`` is the container's ``uid:gid``; only the caller's own is checked here (``os.access``).
    """
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise LauncherError(f"--out {out_dir}: {exc.strerror}", int(Exit.USAGE)) from exc
    if user in (None, f"{os.getuid()}:{os.getgid()}") and not os.access(out_dir, os.W_OK | os.X_OK):
        raise LauncherError(f"--out {out_dir}: not writable", int(Exit.USAGE))
    return out_dir.resolve()


@dataclass(frozen=True)
class RunSpec:
    image: str
    command: list[str] | None
    out_dir: Path
    user: str
    network_disabled: bool
    environment: dict[str, str]
    mounts: list[Mount]
    timeout: float | None = None
    stop_grace: float = DEFAULT_STOP_GRACE

    def describe(self) -> str:
        """One line for the console: never any variable's value."""
        env = ",".join(sorted(self.environment)) or "none"
        net = "none" if self.network_disabled else "default"
        cmd = " ".join(self.command) if self.command else "(image default)"
        mounts = "".join(f" {m.host}:{m.container}:{'ro' if m.read_only else 'rw'}" for m in self.mounts)
        return (f"docker: image={self.image} user={self.user} network={net} "
                f"out={self.out_dir}:{CONTAINER_OUT}{mounts} env=[{env}] cmd={cmd}")


def host_git_sha(env: Mapping[str, str], checkout: Path | None) -> str | None:
    """The commit under test on the host: ``FINEVO_GIT_SHA`` when set, else ``git rev-parse HEAD`` in
    ``checkout``; ``None`` when neither gives one (no git, not a checkout)."""
    value = env.get("FINEVO_GIT_SHA", "").strip()
    if value and value.lower() not in ("unknown", "none", "null"):
        return value
    if checkout is None:
        return None
    try:
        proc = subprocess.run(["git", "-C", str(checkout), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    sha = proc.stdout.strip()
    return sha if proc.returncode == 0 and sha else None


@dataclass(frozen=True)
class Host:
    """The caller's side of a run, as the container is planned from it: its environment (``env``:
    the LLM variables passed in), working directory (``cwd``: relative input paths), ``uid`` and
    ``gid`` (the container's user) and the commit under test (``git_sha``, see :func:`host_git_sha`,
    passed as ``FINEVO_GIT_SHA``)."""

    env: Mapping[str, str]
    cwd: Path
    uid: int
    gid: int
    git_sha: str | None = None

    @classmethod
    def current(cls, checkout: Path | None) -> Host:
        """This process: its environment, directory, uid and gid; the commit of ``checkout``."""
        return cls(env=os.environ, cwd=Path.cwd(), uid=os.getuid(), gid=os.getgid(),
                   git_sha=host_git_sha(os.environ, checkout))


def plan_run(image: str, gate_args: Sequence[str], out_dir: Path, host: Host, *, timeout: float | None,
             stop_grace: float = DEFAULT_STOP_GRACE) -> RunSpec:
    """Everything about the container to start, decided without touching the engine."""
    args, mounts = map_input_paths(gate_args, host.cwd)
    command = container_command(args)
    mode = llm_mode(args, host.env) if command is not None else "reference"
    offline = is_offline(mode)
    environment = passthrough_env(host.env, offline=offline)
    if host.git_sha:
        environment["FINEVO_GIT_SHA"] = host.git_sha
    user = container_user(host.uid, host.gid)
    environment["HOME"] = "/tmp"  # the caller's uid has no home in the image
    return RunSpec(image=image, command=command, out_dir=out_dir, user=user,
                   network_disabled=offline, environment=environment, mounts=mounts,
                   timeout=timeout, stop_grace=stop_grace)


# ---------------------------------------------------------------------------------------------
# Run


class _Stopper:
    """Stops the container at most once per escalation step, from any thread."""

    def __init__(self, container: Any, grace: float, log: Callable[[str], None]) -> None:
        self._container = container
        self._grace = grace
        self._log = log
        self._lock = threading.Lock()
        self._signalled = False
        self.reason: str | None = None

    def stop(self, reason: str, sig: str = "SIGTERM") -> None:
        with self._lock:
            if self._signalled:
                escalate = True
            else:
                self._signalled = True
                self.reason = reason
                escalate = False
        if escalate:
            self._log(f"docker: {reason}; killing the container\n")
            threading.Thread(target=self._kill, args=("SIGKILL",), daemon=True).start()
            return
        self._log(f"docker: {reason}; sending {sig} to the container (SIGKILL after {self._grace:g}s)\n")
        threading.Thread(target=self._stop, args=(sig,), daemon=True).start()

    def _kill(self, sig: str) -> None:
        with contextlib.suppress(Exception):  # already gone
            self._container.kill(signal=sig)

    def _stop(self, sig: str) -> None:
        self._kill(sig)
        try:
            self._container.wait(timeout=self._grace)
        except Exception:
            self._kill("SIGKILL")


class ByteSink(Protocol):
    def write(self, chunk: bytes, /) -> int: ...

    def flush(self) -> None: ...


class HostPaths:
    """Writes the container's output to ``sink`` with its mount points replaced by the host paths
    they come from (``/out/<run_id>`` -> ``/home/me/reports/<run_id>``).

    A path is never split across two writes: output is passed on up to its last whitespace, the
    rest (a word still being written) waits for the next chunk or :meth:`close`.
    """

    def __init__(self, sink: ByteSink, mapping: Mapping[str, Path]) -> None:
        self._sink = sink
        self._map = {container.encode(): str(host).encode() for container, host in mapping.items()}
        keys = sorted(self._map, key=len, reverse=True)
        self._pattern = re.compile(rb"(?<![\w.~/-])(" + b"|".join(re.escape(k) for k in keys) + rb")(?![\w.~-])"
                                   ) if keys else None
        self._pending = b""

    def _rewrite(self, data: bytes) -> bytes:
        if self._pattern is None:
            return data
        return self._pattern.sub(lambda m: self._map[m.group(1)], data)

    def write(self, chunk: bytes) -> int:
        data = self._pending + chunk
        cut = max(data.rfind(b" "), data.rfind(b"\n"), data.rfind(b"\t"), data.rfind(b"\r")) + 1
        self._pending = data[cut:]
        if cut:
            self._sink.write(self._rewrite(data[:cut]))
            self._sink.flush()
        return len(chunk)

    def flush(self) -> None:
        """Nothing to do: complete words are written as they come (see :meth:`close`)."""

    def close(self) -> None:
        if self._pending:
            self._sink.write(self._rewrite(self._pending))
            self._pending = b""
        self._sink.flush()


def host_path_map(spec: RunSpec) -> dict[str, Path]:
    """Container path -> host path, for every mount of the run."""
    mapping = {CONTAINER_OUT: spec.out_dir}
    mapping.update({mount.container: mount.host for mount in spec.mounts})
    return mapping


def _pump(chunks: Iterator[bytes], sink: ByteSink) -> None:
    for chunk in chunks:
        sink.write(chunk)
        sink.flush()


def _stream(client: Any, container: Any, stdout: ByteSink, stderr: ByteSink) -> None:
    """Copy the container's stdout and stderr live until it exits.

    ``logs(follow=True)`` is used rather than ``attach`` because the SDK lifts the socket timeout
    for it: a gate that is quiet for a while must not break the stream.
    """
    err_chunks = client.api.logs(container.id, stdout=False, stderr=True, stream=True, follow=True)
    err_thread = threading.Thread(target=_pump, args=(err_chunks, stderr), daemon=True)
    err_thread.start()
    _pump(client.api.logs(container.id, stdout=True, stderr=False, stream=True, follow=True), stdout)
    err_thread.join(timeout=10)


@dataclass(frozen=True)
class Console:
    """Where a run's output goes: the container's ``stdout`` and ``stderr`` (default: this
    process's) and the launcher's own lines (``log``, default: :func:`log_to_stderr`)."""

    stdout: ByteSink | None = None
    stderr: ByteSink | None = None
    log: Callable[[str], None] | None = None


class _CreateArgs(TypedDict):
    """The keyword arguments of docker's ``containers.create`` the launcher passes."""

    image: str
    command: list[str] | None
    detach: bool
    init: bool
    environment: dict[str, str]
    volumes: dict[str, dict[str, str]]
    labels: dict[str, str]
    stop_signal: str
    tmpfs: dict[str, str]
    user: NotRequired[str]
    network_mode: NotRequired[str]


def run_container(client: Any, spec: RunSpec, console: Console | None = None, *, handle_signals: bool = True,
                  on_start: Callable[[Any], None] | None = None) -> int:
    """Run the gate container to completion; return its exit code.

    ``on_start`` receives the started container (tests use it to stop it mid-run).
    """
    console = console if console is not None else Console()
    paths = host_path_map(spec)
    out_stream = HostPaths(console.stdout or sys.stdout.buffer, paths)
    err_stream = HostPaths(console.stderr or sys.stderr.buffer, paths)
    emit = console.log or log_to_stderr
    volumes = {str(spec.out_dir): {"bind": CONTAINER_OUT, "mode": "rw"}}
    for mount in spec.mounts:
        volumes[str(mount.host)] = {"bind": mount.container, "mode": "ro" if mount.read_only else "rw"}
    kwargs = _CreateArgs(
        image=spec.image, command=spec.command, detach=True, init=True, environment=spec.environment,
        volumes=volumes, labels={LAUNCHER_LABEL: "1"}, stop_signal="SIGTERM",
        # the sandbox's working directories live in /tmp: bytes and inodes bounded by the kernel
        tmpfs={"/tmp": TMP_TMPFS},
    )
    if spec.user is not None:
        kwargs["user"] = spec.user
    if spec.network_disabled:
        kwargs["network_mode"] = "none"
    try:
        container = client.containers.create(**kwargs)
    except Exception as exc:
        raise LauncherError(f"cannot create the container: {exc}") from exc

    stopper = _Stopper(container, spec.stop_grace, emit)
    previous: dict[signal.Signals, Any] = {}
    timer: threading.Timer | None = None
    try:
        if handle_signals and threading.current_thread() is threading.main_thread():
            def forward(signum: int, _frame: FrameType | None) -> None:
                name = signal.Signals(signum).name
                stopper.stop(f"received {name}", sig=name)

            for sig in (signal.SIGINT, signal.SIGTERM):
                previous[sig] = signal.signal(sig, forward)
        container.start()
        if on_start is not None:
            on_start(container)
        if spec.timeout is not None:
            timer = threading.Timer(spec.timeout, stopper.stop,
                                    args=(f"wall-clock limit of {spec.timeout:g}s reached",))
            timer.daemon = True
            timer.start()
        try:
            _stream(client, container, out_stream, err_stream)
        finally:
            out_stream.close()
            err_stream.close()
        status = container.wait()
        code = int(status.get("StatusCode", int(Exit.NO_VERDICT)))
        if stopper.reason is not None:
            emit(f"docker: container stopped ({stopper.reason}); exit code {code}\n")
        return code
    except Exception as exc:  # the engine failed or went away: no verdict, never a bare traceback (exit 1)
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LauncherError(f"container {container.short_id}: {reason}") from exc
    finally:
        if timer is not None:
            timer.cancel()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        with contextlib.suppress(Exception):
            container.remove(force=True)


# ---------------------------------------------------------------------------------------------
# The verb


@dataclass(frozen=True)
class LaunchOptions:
    gate_args: list[str]
    image: str = DEFAULT_IMAGE
    build: bool = False
    base_image: str | None = None
    wheelhouse: Path | None = None
    context_dir: Path | None = None
    out_dir: Path = Path("reports")
    timeout: float | None = None
    stop_grace: float = DEFAULT_STOP_GRACE
    build_args: Mapping[str, str] = field(default_factory=dict)


def launch(options: LaunchOptions) -> int:
    """``finevo-verify docker``: build if needed, run, return the container's exit code."""
    log: Callable[[str], None] = log_to_stderr
    try:
        client = connect()
        try:
            image = None if options.build else _existing_image(client, options.image)
            if image is None:
                spec = BuildSpec(context_dir=find_context_dir(options.context_dir), tag=options.image,
                                 base_image=options.base_image, wheelhouse=options.wheelhouse,
                                 build_args=options.build_args)
                image = build_image(client, spec, log=log)
            try:
                checkout: Path | None = find_context_dir(options.context_dir)
            except LauncherError:
                checkout = Path.cwd()
            run = plan_run(options.image, options.gate_args, options.out_dir.absolute(), Host.current(checkout),
                           timeout=options.timeout, stop_grace=options.stop_grace)
            prepare_out_dir(run.out_dir, user=run.user)
            log(run.describe() + "\n")
            return run_container(client, run, Console(log=log))
        finally:
            client.close()
    except LauncherError as exc:
        print(f"finevo-verify docker: {exc.message}", file=sys.stderr)
        return exc.exit_code


def _existing_image(client: Any, tag: str) -> Any | None:
    import docker

    try:
        return client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.DockerException as exc:
        raise LauncherError(f"cannot inspect image {tag}: {exc}") from exc
