#!/usr/bin/env bash
# Prepare a machine with no access to any image registry to build the image and run the tests
# marked `docker`:
#
#   1. install Debian's docker.io and debootstrap when missing;
#   2. start dockerd when no engine answers (log: $FINEVO_CACHE/dockerd.log); if it refuses to
#      start, print the daemon's own error and exit non-zero;
#   3. build the base image finevo-base:bookworm with debootstrap from the machine's own Debian
#      mirror when it is absent (the rootfs tarball is cached, so a restarted engine re-imports it
#      in seconds): the stand-in for python:3.11-slim-bookworm when that cannot be pulled;
#   4. build the wheelhouse: one wheel for every line of requirements.lock and
#      requirements-build.lock, for the base image's own interpreter, hashes checked (reused while
#      the lock files and the interpreter are the same).
#
# The last lines on stdout are `export NAME=value` lines for the docker tests; `eval` them, or
# pass --env-file FILE to have them written there as well.
#
# Usage: bash scripts/setup-docker.sh [--env-file FILE] [--wheelhouse DIR]
#   --wheelhouse DIR   where to put the wheelhouse (default $FINEVO_CACHE/wheelhouse). For a plain
#                      `docker build --build-arg WHEELHOUSE=...` it must be inside the build
#                      context: `--wheelhouse .wheelhouse` (git-ignored) next to the Dockerfile.
# Env:   FINEVO_CACHE (default /var/cache/finevo), FINEVO_BASE_IMAGE (default finevo-base:bookworm),
#        PYTHON (the interpreter whose pip downloads the wheels, default python3),
#        FINEVO_DOCKER_WAIT (seconds to wait for dockerd, default 60).
set -Eeuo pipefail
SETUP_NAME=setup-docker
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${FINEVO_CACHE:-/var/cache/finevo}"
BASE_IMAGE="${FINEVO_BASE_IMAGE:-finevo-base:bookworm}"
WAIT_S="${FINEVO_DOCKER_WAIT:-60}"
SUITE="bookworm"
ENV_FILE=""
WHEELHOUSE="$CACHE/wheelhouse"

while [[ $# -gt 0 ]]; do
    case "$1" in
        --env-file) ENV_FILE="$2"; shift 2 ;;
        --wheelhouse) WHEELHOUSE="$2"; shift 2 ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        *) unknown_argument "$1" ;;
    esac
done

mkdir -p "$CACHE"

# --- 1. packages ------------------------------------------------------------------------------
missing=()
# docker.io brings both the daemon and the CLI (the set-up and the tests use both).
{ command -v dockerd && command -v docker; } >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if [[ ${#missing[@]} -gt 0 ]]; then
    apt_install "$CACHE/apt.log" "${missing[@]}"
fi

# --- 2. engine --------------------------------------------------------------------------------
engine_up() { docker info >/dev/null 2>&1; }

if ! engine_up; then
    DLOG="$CACHE/dockerd.log"
    log "starting dockerd (log: $DLOG)"
    # A stale pid file from a killed daemon makes the next one refuse to start.
    if [[ -f /var/run/docker.pid ]] && ! kill -0 "$(cat /var/run/docker.pid)" 2>/dev/null; then
        rm -f /var/run/docker.pid
    fi
    nohup dockerd >"$DLOG" 2>&1 </dev/null &
    DPID=$!
    deadline=$((SECONDS + WAIT_S))
    until engine_up; do
        if ! kill -0 "$DPID" 2>/dev/null; then
            printf '\n========== dockerd exited; its own log follows ==========\n' >&2
            tail -n 40 "$DLOG" >&2 || true
            printf '==========================================================\n' >&2
            die "dockerd refused to start (full log: $DLOG)"
        fi
        if (( SECONDS >= deadline )); then
            printf '\n========== dockerd did not answer within %ss ==========\n' "$WAIT_S" >&2
            tail -n 40 "$DLOG" >&2 || true
            die "dockerd is not answering (full log: $DLOG)"
        fi
        sleep 0.5
    done
    log "dockerd is up (pid $DPID)"
fi

# --- 3. base image ----------------------------------------------------------------------------
apt_mirror() {
    # The machine's own Debian mirror, read from its apt sources (deb822 first, then one-line).
    local uri=""
    if compgen -G "/etc/apt/sources.list.d/*.sources" >/dev/null; then
        uri="$(grep -h '^URIs:' /etc/apt/sources.list.d/*.sources \
               | awk '{print $2}' | grep -v -- '-security' | head -n1 || true)"
    fi
    if [[ -z "$uri" && -f /etc/apt/sources.list ]]; then
        uri="$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/) { print $i; exit } }' \
               /etc/apt/sources.list | grep -v -- '-security' | head -n1 || true)"
    fi
    [[ -n "$uri" ]] || die "no Debian mirror found in /etc/apt/sources.list{,.d/*.sources}"
    printf '%s\n' "$uri"
}

if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then
    log "base image $BASE_IMAGE present"
else
    TARBALL="$CACHE/rootfs-$SUITE.tar"
    if [[ ! -s "$TARBALL" ]]; then
        MIRROR="$(apt_mirror)"
        ROOTFS="$(mktemp -d "$CACHE/rootfs.XXXXXX")"
        trap 'rm -rf "$ROOTFS"' EXIT
        log "debootstrap $SUITE into $ROOTFS (a few minutes)"
        debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates \
            "$SUITE" "$ROOTFS" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
            || { tail -n 30 "$CACHE/debootstrap.log" >&2; die "debootstrap failed (log: $CACHE/debootstrap.log)"; }
        # Trim what an image never needs: apt lists/caches, docs, man pages, locales.
        rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
               "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/usr/share/doc/* \
               "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*
        find "$ROOTFS/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name 'locale.alias' \
            -exec rm -rf {} + 2>/dev/null || true
        tar -C "$ROOTFS" -c . >"$TARBALL.tmp"
        mv "$TARBALL.tmp" "$TARBALL"
        rm -rf "$ROOTFS"
        trap - EXIT
    else
        log "reusing cached rootfs $TARBALL"
    fi
    log "importing $TARBALL as $BASE_IMAGE"
    docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change 'CMD ["/usr/bin/python3"]' \
        "$TARBALL" "$BASE_IMAGE" >/dev/null
fi

# --- 4. wheelhouse ----------------------------------------------------------------------------
# Exactly the locked wheels (runtime + build backend; the project's own wheel is built from the
# source inside the image build), binary-only, for the base image's own interpreter (Debian's
# python3 is an older 3.11 patch release than the host's), each file's sha256 checked against the
# lock. The image build installs them with --require-hashes as well.
[[ "$WHEELHOUSE" = /* ]] || WHEELHOUSE="$PWD/$WHEELHOUSE"
LOCKS=("$REPO_ROOT/requirements.lock" "$REPO_ROOT/requirements-build.lock")
for lock in "${LOCKS[@]}"; do
    [[ -f "$lock" ]] || die "$lock missing (bash scripts/lock.sh writes it)"
done
TARGET="$(docker run --rm --network none "$BASE_IMAGE" python3 -c \
    'import platform, sys; print(platform.python_version(), platform.machine(), platform.libc_ver()[1])')" \
    || die "cannot run python3 in $BASE_IMAGE"
read -r PYVER ARCH GLIBC <<<"$TARGET"
PLATFORM="manylinux_${GLIBC/./_}_${ARCH}"
# This pip does not widen a manylinux tag to the older ones it implies: list them all.
PLATFORM_ARGS=()
for ((minor = ${GLIBC#*.}; minor >= 5; minor--)); do
    PLATFORM_ARGS+=(--platform "manylinux_2_${minor}_${ARCH}")
done
PLATFORM_ARGS+=(--platform "manylinux2014_${ARCH}" --platform "manylinux2010_${ARCH}" --platform "manylinux1_${ARCH}")
INPUTS_HASH="$( { printf '%s %s\n' "$PYVER" "$PLATFORM"; cat "${LOCKS[@]}"; } | sha256sum | cut -c1-16)"
if [[ -f "$WHEELHOUSE/.inputs-hash" && "$(cat "$WHEELHOUSE/.inputs-hash")" == "$INPUTS_HASH" ]]; then
    log "wheelhouse $WHEELHOUSE up to date ($INPUTS_HASH)"
else
    log "building wheelhouse $WHEELHOUSE for Python $PYVER on $PLATFORM ($INPUTS_HASH)"
    mkdir -p "$(dirname "$WHEELHOUSE")"
    TMPWH="$(mktemp -d "$(dirname "$WHEELHOUSE")/.wheelhouse.XXXXXX")"
    "${PYTHON:-python3}" -m pip download --quiet --dest "$TMPWH" --only-binary=:all: --require-hashes \
        --python-version "$PYVER" --implementation cp "${PLATFORM_ARGS[@]}" \
        -r "${LOCKS[0]}" -r "${LOCKS[1]}" >"$CACHE/wheelhouse.log" 2>&1 \
        || { tail -n 20 "$CACHE/wheelhouse.log" >&2; rm -rf "$TMPWH"; die "pip download failed (log: $CACHE/wheelhouse.log)"; }
    printf '%s\n' "$INPUTS_HASH" >"$TMPWH/.inputs-hash"
    chmod 0755 "$TMPWH"
    rm -rf "$WHEELHOUSE"
    mv "$TMPWH" "$WHEELHOUSE"
fi

# --- env for the tests ------------------------------------------------------------------------
log "ready"
emit_exports "export FINEVO_TEST_BASE_IMAGE=$BASE_IMAGE
export FINEVO_TEST_WHEELHOUSE=$WHEELHOUSE"
