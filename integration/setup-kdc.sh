#!/usr/bin/env bash
# Installs what the Kerberos tests (integration/tests/kerberos_rpc.rs, integration/src/kdc.rs)
# run: MIT Kerberos's KDC and tools from Debian's packages `krb5-kdc`, `krb5-admin-server`
# (kadmin.local, kdb5_util) and `krb5-user` (kinit, klist), with apt-get, only when one is
# missing (needs root). The GSSAPI library itself (libgssapi-krb5-2) comes with them.
# Idempotent: a second run finds everything in place. Each test makes its own realm in a
# temporary directory; nothing here configures or starts a KDC, and /etc/krb5.conf is not read.
set -euo pipefail

say() { printf 'setup-kdc: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

programs=(/usr/sbin/krb5kdc /usr/sbin/kdb5_util /usr/sbin/kadmin.local /usr/bin/kinit /usr/bin/klist)
missing=()
for p in "${programs[@]}"; do
    [ -x "$p" ] || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
    say "MIT Kerberos found: krb5-kdc $(dpkg-query -W -f '${Version}' krb5-kdc 2>/dev/null || echo '(version unknown)')"
    exit 0
fi
command -v apt-get >/dev/null 2>&1 ||
    die "${missing[*]} missing and apt-get is not available: install MIT Kerberos by hand"
[ "$(id -u)" -eq 0 ] ||
    die "${missing[*]} missing; installing needs root (apt-get install krb5-kdc krb5-admin-server krb5-user)"
say "missing ${missing[*]}: installing krb5-kdc krb5-admin-server krb5-user with apt-get"
export DEBIAN_FRONTEND=noninteractive
# The packages' own set-up asks for a default realm; any answer will do, since the tests
# never read /etc/krb5.conf.
echo "krb5-config krb5-config/default_realm string SPINDLE.TEST" | debconf-set-selections 2>/dev/null || true
apt-get update -q >&2
apt-get install -y -q --no-install-recommends krb5-kdc krb5-admin-server krb5-user >&2 ||
    die "could not install MIT Kerberos with apt-get"
for p in "${programs[@]}"; do
    [ -x "$p" ] || die "MIT Kerberos was installed but $p is still missing"
done
say "MIT Kerberos installed: krb5-kdc $(dpkg-query -W -f '${Version}' krb5-kdc 2>/dev/null || echo '(version unknown)')"
