#!/usr/bin/env bash
# Prepare a machine to run the tests marked `postgres` (the registry on a real PostgreSQL server):
#
#   1. install Debian's postgresql when no server binaries (initdb, pg_ctl) are present (needs
#      root), without the package's default cluster: the tests start a throw-away cluster of their
#      own in a temporary directory on a free loopback port, as the `postgres` user the package
#      creates (PostgreSQL refuses to run as root);
#   2. print the directory of the server binaries.
#
# The last line on stdout is an `export NAME=value` line for the tests; `eval` it, or pass
# --env-file FILE to have it written there as well.
#
# Usage: bash scripts/setup-postgres.sh [--env-file FILE]
# Env:   FINEVO_CACHE (default /var/cache/finevo: the apt log goes there).
set -Eeuo pipefail
SETUP_NAME=setup-postgres
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CACHE="${FINEVO_CACHE:-/var/cache/finevo}"
ENV_FILE=""

while [[ $# -gt 0 ]]; do
    case "$1" in
        --env-file) ENV_FILE="$2"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) unknown_argument "$1" ;;
    esac
done

bindir() {  # the newest Debian server binaries (/usr/lib/postgresql/<version>/bin)
    local dir
    dir="$(find /usr/lib/postgresql -mindepth 2 -maxdepth 2 -name bin -type d 2>/dev/null | sort -V | tail -n1)"
    [[ -n "$dir" && -x "$dir/initdb" && -x "$dir/pg_ctl" ]] && printf '%s\n' "$dir"
}

# --- 1. packages ------------------------------------------------------------------------------
if ! BINDIR="$(bindir)"; then
    [[ $(id -u) -eq 0 ]] || die "need root to install postgresql (no /usr/lib/postgresql/<version>/bin/initdb)"
    mkdir -p /etc/postgresql-common
    # no default cluster (and no server left running): the tests make their own
    if [[ ! -f /etc/postgresql-common/createcluster.conf ]]; then
        printf 'create_main_cluster = false\n' >/etc/postgresql-common/createcluster.conf
    fi
    apt_install "$CACHE/apt-postgres.log" postgresql
    BINDIR="$(bindir)" || die "postgresql installed but no /usr/lib/postgresql/<version>/bin/initdb"
fi
if [[ $(id -u) -eq 0 ]] && ! id postgres >/dev/null 2>&1; then
    die "running as root and there is no 'postgres' user to run the test server (Debian's package creates it)"
fi

# --- 2. env for the tests ---------------------------------------------------------------------
log "ready: $("$BINDIR/postgres" --version)"
emit_exports "export FINEVO_PG_BINDIR=$BINDIR"
