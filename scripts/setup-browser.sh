#!/usr/bin/env bash
# Prepare a machine to run the tests marked `browser` (report.html in a real headless Chromium):
#
#   1. install Debian's chromium (and chromium-driver) when no browser is at $FINEVO_CHROMIUM;
#   2. check that Playwright (a dev extra: pip install -e '.[dev]') starts that browser and opens
#      a page, offline: no browser is downloaded, Playwright drives the system's Chromium through
#      its executable path. If it does not start, print the browser's own error and exit non-zero.
#
# The last lines on stdout are `export NAME=value` lines for the browser tests; `eval` them, or
# pass --env-file FILE to have them written there as well.
#
# Usage: bash scripts/setup-browser.sh [--env-file FILE]
# Env:   FINEVO_CHROMIUM (default /usr/bin/chromium), FINEVO_CACHE (default /var/cache/finevo: apt log),
#        PYTHON (the interpreter with Playwright installed, default python3).
set -Eeuo pipefail
SETUP_NAME=setup-browser
# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CHROMIUM="${FINEVO_CHROMIUM:-/usr/bin/chromium}"
CACHE="${FINEVO_CACHE:-/var/cache/finevo}"
ENV_FILE=""

while [[ $# -gt 0 ]]; do
    case "$1" in
        --env-file) ENV_FILE="$2"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) unknown_argument "$1" ;;
    esac
done

mkdir -p "$CACHE"

# --- 1. the browser ---------------------------------------------------------------------------
if [[ ! -x "$CHROMIUM" ]]; then
    [[ "$CHROMIUM" == /usr/bin/chromium ]] || die "FINEVO_CHROMIUM=$CHROMIUM is not an executable"
    apt_install "$CACHE/apt-browser.log" chromium chromium-driver
fi
log "$("$CHROMIUM" --version 2>/dev/null || echo "$CHROMIUM")"

# --- 2. Playwright drives it ------------------------------------------------------------------
"${PYTHON:-python3}" - "$CHROMIUM" <<'PY' || die "Playwright cannot drive $CHROMIUM (see above)"
import sys
try:
    from playwright.sync_api import sync_playwright
except ImportError as exc:
    sys.exit(f"Playwright is not installed ({exc}): pip install -e '.[dev]'")
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path=sys.argv[1], args=["--no-sandbox"])
    page = browser.new_page()
    page.set_content("<p id=ok>ok</p>")
    assert page.inner_text("#ok") == "ok"
    browser.close()
PY

# --- env for the tests ------------------------------------------------------------------------
log "ready"
emit_exports "export FINEVO_CHROMIUM=$CHROMIUM"
