#!/usr/bin/env bash
# Installs the real Hadoop 3.3.4 client (the `yarn` CLI classes) that the integration
# tests drive against Spindle:
#   * a Java 17 runtime and compiler, from Debian's packages, only if `java`/`javac` are missing;
#   * pyspark 3.5.3 from PyPI into a private cache directory. Its pyspark/jars/ folder holds
#     hadoop-client-api-3.3.4.jar and hadoop-client-runtime-3.3.4.jar, which carry the YARN
#     CLIs, plus the logging jars they need.
#   * the ZooKeeper server jars, through integration/setup-maven.sh zookeeper (Maven);
#   * the HDFS minicluster jars, through integration/setup-maven.sh hdfs (Maven);
#   * Hadoop MapReduce 3.3.4 (client, AM, examples), through integration/setup-maven.sh
#     mapreduce (Maven);
#   * the NodeManager's Java aux-service host, through java/aux-host/build.sh (Maven, javac);
#   * Hadoop's own ResourceManager and NodeManager jars, through integration/setup-maven.sh
#     yarn-server (Maven), for the mixed-cluster tests and integration/bin/hadoop-yarn;
#   * Chromium and playwright-core for the browser test, through integration/setup-browser.sh;
#   * MIT Kerberos's KDC and tools for the Kerberos tests, through integration/setup-kdc.sh.
# Idempotent: a second run finds everything in place and only prints the jar directory.
#
# Cache directory: $SPINDLE_CLIENT_CACHE, default ~/.cache/spindle-clients.
# The last line printed on stdout is the jar directory; progress goes to stderr.
set -euo pipefail

PYSPARK_VERSION=3.5.3
HADOOP_VERSION=3.3.4

say() { printf 'setup-clients: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

cache="${SPINDLE_CLIENT_CACHE:-$HOME/.cache/spindle-clients}"
target="$cache/pyspark-$PYSPARK_VERSION"
jars="$target/pyspark/jars"
# A jar directory of one's own (SPINDLE_CLIENT_JARS, as integration/bin/yarn and the
# tests read it) is used as it is: it must hold the two client jars.
if [ -n "${SPINDLE_CLIENT_JARS:-}" ]; then
    jars="$SPINDLE_CLIENT_JARS"
fi

have_jars() {
    [ -f "$jars/hadoop-client-api-$HADOOP_VERSION.jar" ] &&
        [ -f "$jars/hadoop-client-runtime-$HADOOP_VERSION.jar" ]
}

# --- Java -------------------------------------------------------------------------------
# The CLI needs `java`; the tests compile two small Java programs, so they need `javac` too.
if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1; then
    say "java found: $(command -v java) ($(java -version 2>&1 | head -n 1))"
else
    command -v apt-get >/dev/null 2>&1 ||
        die "java/javac are missing and apt-get is not available: install a Java 17 JDK by hand"
    if [ "$(id -u)" -ne 0 ]; then
        die "java/javac are missing; installing them needs root (apt-get install openjdk-17-jdk-headless)"
    fi
    say "java/javac missing: installing a JDK with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >&2
    if ! apt-get install -y -q --no-install-recommends openjdk-17-jdk-headless >&2; then
        say "openjdk-17-jdk-headless is not available, trying default-jdk-headless"
        apt-get install -y -q --no-install-recommends default-jdk-headless >&2 ||
            die "could not install a JDK with apt-get"
    fi
    command -v java >/dev/null 2>&1 || die "a JDK was installed but \`java\` is still not on PATH"
    command -v javac >/dev/null 2>&1 || die "a JDK was installed but \`javac\` is still not on PATH"
    say "java installed: $(java -version 2>&1 | head -n 1)"
fi

# --- Hadoop client jars (from pyspark) --------------------------------------------------
if have_jars; then
    say "Hadoop $HADOOP_VERSION client jars already present in $jars"
elif [ -n "${SPINDLE_CLIENT_JARS:-}" ]; then
    die "SPINDLE_CLIENT_JARS=$SPINDLE_CLIENT_JARS does not hold hadoop-client-api-$HADOOP_VERSION.jar and hadoop-client-runtime-$HADOOP_VERSION.jar (unset it to install them)"
else
    python=""
    for candidate in python3 python; do
        if command -v "$candidate" >/dev/null 2>&1; then
            python="$candidate"
            break
        fi
    done
    [ -n "$python" ] || die "python3 is required to install pyspark with pip"
    "$python" -m pip --version >/dev/null 2>&1 ||
        die "pip is not available for $python (install python3-pip)"

    say "installing pyspark==$PYSPARK_VERSION into $target (a ~317 MB download, this takes a few minutes)"
    mkdir -p "$cache"
    # Install into a scratch directory first, so an interrupted run never leaves a half
    # populated cache that looks complete.
    scratch="$(mktemp -d "$cache/.pyspark-install.XXXXXX")"
    trap 'rm -rf "$scratch"' EXIT
    # --no-deps: py4j is only needed by PySpark itself, not by the Java CLIs.
    # --no-cache-dir: the install is the cache; pip's own would be a second ~318 MB copy.
    # PIP_ROOT_USER_ACTION: CI runs as root on a throwaway machine; the install goes to
    # a private folder, so pip's warning about root installs does not apply.
    PIP_ROOT_USER_ACTION=ignore "$python" -m pip install --disable-pip-version-check --no-input --no-deps --no-compile --no-cache-dir \
        --target "$scratch" "pyspark==$PYSPARK_VERSION" >&2 ||
        die "pip install pyspark==$PYSPARK_VERSION failed"
    [ -f "$scratch/pyspark/jars/hadoop-client-api-$HADOOP_VERSION.jar" ] ||
        die "pyspark $PYSPARK_VERSION did not ship hadoop-client-api-$HADOOP_VERSION.jar"
    rm -rf "$target"
    mv "$scratch" "$target"
    trap - EXIT
    have_jars || die "jars missing from $jars after installation"
    say "installed $(find "$jars" -name '*.jar' | wc -l) jars into $jars"
fi

# --- Maven-provided servers -------------------------------------------------------------
# The ZooKeeper server the RM HA tests start (integration/src/zookeeper.rs).
bash "$(dirname "${BASH_SOURCE[0]}")/setup-maven.sh" zookeeper >/dev/null
# A real HDFS (MiniDFSCluster) for the HDFS tests and integration/bin/hdfs.
bash "$(dirname "${BASH_SOURCE[0]}")/setup-maven.sh" hdfs >/dev/null
# Hadoop MapReduce (integration/bin/mapred, the MapReduce AM and tasks on Spindle's NMs).
bash "$(dirname "${BASH_SOURCE[0]}")/setup-maven.sh" mapreduce >/dev/null
# The NodeManager's host of Java auxiliary services (~/.cache/spindle-aux-host).
bash "$(dirname "${BASH_SOURCE[0]}")/../java/aux-host/build.sh" >/dev/null
# Spark's external shuffle service for YARN (integration/tests/spark_shuffle_service.rs).
bash "$(dirname "${BASH_SOURCE[0]}")/setup-maven.sh" spark_shuffle >/dev/null
# Hadoop's RM and NM for the mixed clusters (integration/src/hadoop_yarn.rs).
bash "$(dirname "${BASH_SOURCE[0]}")/setup-maven.sh" yarn-server >/dev/null
# --- Python clients of the web surface (integration/pip/web) ---------------------------
bash "$(dirname "${BASH_SOURCE[0]}")/setup-pip.sh" web >/dev/null
# --- Chromium and playwright-core for the web UI's browser test (integration/browser) --
bash "$(dirname "${BASH_SOURCE[0]}")/setup-browser.sh" >/dev/null
# --- MIT Kerberos (krb5-kdc) for the Kerberos tests (integration/src/kdc.rs) -------------
bash "$(dirname "${BASH_SOURCE[0]}")/setup-kdc.sh" >/dev/null

printf '%s\n' "$jars"
