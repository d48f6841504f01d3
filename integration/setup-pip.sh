#!/usr/bin/env bash
# Installs one set of Python packages the integration tests use (a requirements file
# under integration/pip/<name>/, e.g. `web`) with pip into a cache directory, for tests to
# put on PYTHONPATH. Idempotent: a second run finds the packages in place and only prints
# the directory.
#
#   integration/setup-pip.sh <name>
#
# Cache directory: ${SPINDLE_PIP_CACHE:-~/.cache/spindle-python}/<name>/.
# The last line printed on stdout is the directory; progress goes to stderr.
set -euo pipefail

say() { printf 'setup-pip: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

[ $# -eq 1 ] || die "usage: $0 <name> (one of: $(ls "$(dirname "$0")/pip" | tr '\n' ' '))"
name="$1"
here="$(cd "$(dirname "$0")" && pwd)"
requirements="$here/pip/$name/requirements.txt"
[ -f "$requirements" ] || die "no requirements for '$name' ($requirements is missing)"

cache="${SPINDLE_PIP_CACHE:-$HOME/.cache/spindle-python}"
target="$cache/$name"
# The requirements' checksum marks a complete install: changed pins install again, an
# interrupted install (no marker) is redone.
stamp="$(sha256sum "$requirements" | cut -d' ' -f1)"
if [ -f "$target/.complete" ] && [ "$(cat "$target/.complete")" = "$stamp" ]; then
    say "$name packages already present in $target"
    printf '%s\n' "$target"
    exit 0
fi

python=""
for candidate in python3 python; do
    if command -v "$candidate" >/dev/null 2>&1; then
        python="$candidate"
        break
    fi
done
[ -n "$python" ] || die "python3 is required"
"$python" -m pip --version >/dev/null 2>&1 || die "pip is not available for $python (install python3-pip)"

mkdir -p "$cache"
scratch="$(mktemp -d "$cache/.$name.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
say "installing $name ($(grep -cv '^\s*\(#\|$\)' "$requirements") packages) into $target"
PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --disable-pip-version-check --no-input \
    --no-compile --target "$scratch" -r "$requirements" >&2 || die "pip could not install $requirements"
printf '%s\n' "$stamp" >"$scratch/.complete"
rm -rf "$target"
mv "$scratch" "$target"
trap - EXIT
say "installed $name into $target"
printf '%s\n' "$target"
