#!/usr/bin/env bash
# Copies the jars of one Java component the integration tests run (a pom under
# integration/maven/<name>/, e.g. `zookeeper`) and its runtime dependencies into a cache
# directory, with Maven's ordinary configuration (its local repository ~/.m2 is the download
# cache). Idempotent: a second run finds the jars in place and only prints the directory.
#
#   integration/setup-maven.sh <name>
#
# Cache directory: ${SPINDLE_MAVEN_CACHE:-~/.cache/spindle-maven}/<name>/.
# The last line printed on stdout is the jar directory; progress goes to stderr.
set -euo pipefail

say() { printf 'setup-maven: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

[ $# -eq 1 ] || die "usage: $0 <name> (one of: $(ls "$(dirname "$0")/maven" | tr '\n' ' '))"
name="$1"
here="$(cd "$(dirname "$0")" && pwd)"
pom="$here/maven/$name/pom.xml"
[ -f "$pom" ] || die "no pom for '$name' ($pom is missing)"

cache="${SPINDLE_MAVEN_CACHE:-$HOME/.cache/spindle-maven}"
target="$cache/$name"
# The pom's checksum marks a complete copy: a changed pom (a new version) copies again, an
# interrupted copy (no marker) is redone.
stamp="$(sha256sum "$pom" | cut -d' ' -f1)"
if [ -f "$target/.complete" ] && [ "$(cat "$target/.complete")" = "$stamp" ]; then
    say "$name jars already present in $target"
    printf '%s\n' "$target"
    exit 0
fi

command -v java >/dev/null 2>&1 || die "java is missing (integration/setup-clients.sh installs one)"
if ! command -v mvn >/dev/null 2>&1; then
    command -v apt-get >/dev/null 2>&1 || die "mvn is missing and apt-get is not available: install Maven by hand"
    [ "$(id -u)" -eq 0 ] || die "mvn is missing; installing it needs root (apt-get install maven)"
    say "mvn missing: installing Maven with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    apt-get install -y -q --no-install-recommends maven >&2 || die "could not install Maven with apt-get"
fi

mkdir -p "$cache"
scratch="$(mktemp -d "$cache/.$name.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
say "copying $name and its runtime dependencies into $target"
mvn -q -B -f "$pom" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$scratch" >&2 || die "mvn could not resolve $pom"
[ -n "$(find "$scratch" -name '*.jar' -print -quit)" ] || die "mvn copied no jar for $name"
printf '%s\n' "$stamp" >"$scratch/.complete"
rm -rf "$target"
mv "$scratch" "$target"
trap - EXIT
say "$(find "$target" -name '*.jar' | wc -l) jars in $target"
printf '%s\n' "$target"
