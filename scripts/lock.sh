#!/usr/bin/env bash
# Regenerate the hash-pinned lock files the image is built from:
#
#   requirements.lock         the runtime dependencies ([project] dependencies in pyproject.toml), with
#                             the `postgres` extra (the image's agent can use a PostgreSQL registry)
#   requirements-build.lock   the build backend ([build-system] requires), to build the project wheel
#
# Both are resolved for the image's interpreter, CPython 3.11 on linux x86_64 (manylinux_2_28, the
# glibc of Debian bookworm), wheels only, with the sha256 of every file of each pinned release.
# pyproject.toml keeps the version ranges; these files are what `docker build` and
# scripts/setup-docker.sh install (pip --require-hashes). Run after changing a dependency:
#
#   bash scripts/lock.sh            (needs uv: `pip install uv`)
#
# Env: UV (the uv command, default: uv on PATH, else .venv/bin/uv).
set -euo pipefail
cd "$(dirname "$0")/.."

UV="${UV:-}"
if [[ -z "$UV" ]]; then
    if command -v uv >/dev/null 2>&1; then UV=uv
    elif [[ -x .venv/bin/uv ]]; then UV=.venv/bin/uv
    else echo "lock.sh: uv not found: install it with 'pip install uv' (or set UV=/path/to/uv)" >&2; exit 2
    fi
fi

COMMON=(--generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28
        --only-binary :all: --custom-compile-command "bash scripts/lock.sh" --quiet)

"$UV" pip compile pyproject.toml --extra postgres "${COMMON[@]}" --output-file requirements.lock

python3 -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"]))' \
    | "$UV" pip compile - "${COMMON[@]}" --output-file requirements-build.lock

echo "lock.sh: wrote requirements.lock ($(grep -c '==' requirements.lock) pins) and" \
     "requirements-build.lock ($(grep -c '==' requirements-build.lock) pins)"
