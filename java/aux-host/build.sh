#!/usr/bin/env bash
# Builds Spindle's Java aux-service host: the NodeManager runs auxiliary services whose class
# is not native (e.g. Spark's YarnShuffleService) in one JVM with this host.
#
#   java/aux-host/build.sh [<dir>]
#
# <dir> defaults to ${SPINDLE_AUX_HOST_DIR:-~/.cache/spindle-aux-host}. It receives lib/ (the
# jars of pom.xml and their runtime dependencies, fetched with Maven's ordinary configuration;
# ~/.m2 is the download cache) and aux-host.jar (src/ compiled with javac against them). Point
# the NodeManager at <dir> with spindle.nodemanager.aux-services.java-host.dir or
# $SPINDLE_AUX_HOST_DIR, or install it as aux-host/ next to the spindle binary. Idempotent: an
# unchanged pom and source leave <dir> as it is. The last line on stdout is <dir>.
set -euo pipefail

say() { printf 'aux-host: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${SPINDLE_AUX_HOST_DIR:-$HOME/.cache/spindle-aux-host}}"
command -v javac >/dev/null 2>&1 || die "javac is missing: install a JDK (11 or later)"
command -v jar >/dev/null 2>&1 || die "jar is missing: install a JDK (11 or later)"
command -v mvn >/dev/null 2>&1 || die "mvn is missing: install Maven"

stamp="$(cat "$here/pom.xml" $(find "$here/src" -type f | sort) | sha256sum | cut -d' ' -f1)"
if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$stamp" ]; then
    say "already built in $out"
    printf '%s\n' "$out"
    exit 0
fi

mkdir -p "$(dirname "$out")"
scratch="$(mktemp -d "$(dirname "$out")/.aux-host.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT
say "copying the host's class path (pom.xml) into $scratch/lib"
mvn -q -B -f "$here/pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
    -DoutputDirectory="$scratch/lib" >&2 || die "mvn could not resolve $here/pom.xml"
mkdir -p "$scratch/classes"
say "compiling the host"
javac -nowarn --release 8 -encoding UTF-8 -cp "$scratch/lib/*" -d "$scratch/classes" \
    $(find "$here/src/main/java" -name '*.java') >&2 2> >(grep -v '^warning: \[options\]' >&2) \
    || die "javac failed"
cp -r "$here/src/main/resources/." "$scratch/classes/"
jar cf "$scratch/aux-host.jar" -C "$scratch/classes" . || die "jar failed"
rm -rf "$scratch/classes"
printf '%s\n' "$stamp" >"$scratch/.complete"
rm -rf "$out"
mv "$scratch" "$out"
trap - EXIT
say "built $out ($(ls "$out/lib" | wc -l) jars)"
printf '%s\n' "$out"
