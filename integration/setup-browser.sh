#!/usr/bin/env bash
# Installs what the web UI's browser test (integration/tests/web_ui.rs) drives:
#   * Debian's `chromium` and `chromium-driver`, with apt-get, only when /usr/bin/chromium
#     or chromedriver is missing (needs root);
#   * `playwright-core` from the npm registry into integration/browser/node_modules, as
#     pinned by integration/browser/package-lock.json (`npm ci`). playwright-core never
#     downloads a browser: the test script launches /usr/bin/chromium.
# Idempotent: a second run finds both in place and only prints the browser folder.
#
# The last line printed on stdout is the folder holding the node script (ui-check.mjs);
# progress goes to stderr.
set -euo pipefail

say() { printf 'setup-browser: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
browser="$here/browser"
chromium="${SPINDLE_CHROMIUM:-/usr/bin/chromium}"

# --- Chromium ----------------------------------------------------------------------------
if [ -x "$chromium" ] && command -v chromedriver >/dev/null 2>&1; then
    say "chromium found: $chromium ($("$chromium" --version 2>/dev/null || echo 'version unknown'))"
else
    command -v apt-get >/dev/null 2>&1 ||
        die "$chromium is missing and apt-get is not available: install Chromium by hand"
    [ "$(id -u)" -eq 0 ] ||
        die "$chromium is missing; installing it needs root (apt-get install chromium chromium-driver)"
    say "chromium or chromedriver missing: installing chromium and chromium-driver with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends chromium chromium-driver >&2 ||
        die "could not install chromium with apt-get"
    [ -x "$chromium" ] || die "chromium was installed but $chromium is still missing"
    say "chromium installed: $("$chromium" --version 2>/dev/null || true)"
fi

# --- playwright-core ---------------------------------------------------------------------
command -v npm >/dev/null 2>&1 || die "npm is required to install playwright-core (install Node.js)"
lock="$browser/package-lock.json"
stamp_file="$browser/node_modules/.spindle-complete"
stamp="$(sha256sum "$lock" | cut -d' ' -f1)"
if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
    say "playwright-core already present in $browser/node_modules"
else
    say "installing playwright-core into $browser/node_modules (npm ci)"
    # PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD: never fetch a browser of playwright's own.
    (cd "$browser" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund >&2) ||
        die "npm ci failed in $browser"
    printf '%s\n' "$stamp" >"$stamp_file"
fi

printf '%s\n' "$browser"
