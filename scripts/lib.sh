# Shared by the set-up scripts (sourced, never run): their messages, their Debian installs and the
# `export` lines they hand to the tests. Each script sets SETUP_NAME before sourcing this file.
#
#   log MSG...                 a progress line on stderr, prefixed [SETUP_NAME]
#   die MSG...                 an error line on stderr, exit 1
#   apt_install LOG PKG...     apt-get install PKG... (root only), its output in LOG; die with the
#                              log's tail when it fails
#   emit_exports TEXT          TEXT (`export NAME=value` lines) to stdout, and to ENV_FILE when set

log() { printf '[%s] %s\n' "$SETUP_NAME" "$*" >&2; }
die() { printf '\n[%s] ERROR: %s\n\n' "$SETUP_NAME" "$*" >&2; exit 1; }

apt_install() {
    local logfile="$1"; shift
    [[ $(id -u) -eq 0 ]] || die "need root to install $*"
    log "installing $*"
    mkdir -p "$(dirname "$logfile")"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@"; } >"$logfile" 2>&1 \
        || { tail -n 20 "$logfile" >&2; die "apt-get install $* failed (log: $logfile)"; }
}

emit_exports() {
    if [[ -n "${ENV_FILE:-}" ]]; then
        printf '%s\n' "$1" >"$ENV_FILE"
    fi
    printf '%s\n' "$1"
}

# Usage errors: an unknown argument names the script and exits 2 (as every CLI here).
unknown_argument() { printf '%s: unknown argument: %s\n' "$SETUP_NAME" "$1" >&2; exit 2; }
