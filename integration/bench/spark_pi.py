#!/usr/bin/env python3
"""Benchmark: Spark's pi.py in cluster mode on `spindle standalone`.

Reports, over N runs (default 5):
  - wall time of spark-submit (submit to exit), each and the median;
  - time from submission (RM "application accepted") to the AM container's process
    started (NM "container launched", after localization), from the daemon's log;
  - time to localize Spark's __spark_libs__ archive: the first fetch of each
    application (NM "localized" lines) — later containers of the same application on
    the same node reuse the cached copy (NM "reused the cached copy", debug level).

Usage: integration/bench/spark_pi.py [--runs N] [--spindle PATH]
Needs the clients from integration/setup-clients.sh and a built spindle binary
(default: target/release/spindle).
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def write_conf(conf: Path, root: Path):
    ports = {k: free_port() for k in ("client", "scheduler", "tracker", "admin", "web")}
    props = {
        "yarn.resourcemanager.hostname": "127.0.0.1",
        "yarn.resourcemanager.address": f"127.0.0.1:{ports['client']}",
        "yarn.resourcemanager.scheduler.address": f"127.0.0.1:{ports['scheduler']}",
        "yarn.resourcemanager.resource-tracker.address": f"127.0.0.1:{ports['tracker']}",
        "yarn.resourcemanager.admin.address": f"127.0.0.1:{ports['admin']}",
        "yarn.resourcemanager.webapp.address": f"127.0.0.1:{ports['web']}",
        "yarn.nodemanager.hostname": "127.0.0.1",
        "yarn.nodemanager.address": "127.0.0.1:0",
        "yarn.nodemanager.resource.memory-mb": "8192",
        "yarn.nodemanager.resource.cpu-vcores": "8",
        "yarn.nodemanager.local-dirs": str(root / "local"),
        "yarn.nodemanager.log-dirs": str(root / "logs"),
        "yarn.scheduler.minimum-allocation-mb": "128",
        "yarn.nodemanager.pmem-check-enabled": "false",
        "yarn.nodemanager.vmem-check-enabled": "false",
        "yarn.resourcemanager.am.max-attempts": "1",
    }
    body = "".join(f"<property><name>{k}</name><value>{v}</value></property>\n" for k, v in props.items())
    (conf / "yarn-site.xml").write_text(f"<configuration>\n{body}</configuration>\n")
    (conf / "core-site.xml").write_text(
        "<configuration><property><name>fs.defaultFS</name><value>file:///</value></property>"
        f"<property><name>hadoop.tmp.dir</name><value>{root / 'tmp'}</value></property></configuration>\n"
    )


def log_time(line: str):
    m = re.search(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z", line)
    if not m:
        return None
    return datetime.fromisoformat(m.group(1)[:26]).timestamp()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--spindle", default=str(ROOT / "target/release/spindle"))
    args = ap.parse_args()
    cache = Path(os.environ.get("SPINDLE_CLIENT_CACHE", Path.home() / ".cache/spindle-clients"))
    spark_home = cache / "pyspark-3.5.3/pyspark"
    if not (spark_home / "bin/spark-submit").exists():
        sys.exit("run integration/setup-clients.sh first")
    root = Path(tempfile.mkdtemp(prefix="spindle-bench-"))
    conf = root / "conf"
    conf.mkdir()
    write_conf(conf, root)
    rm_log = open(root / "standalone.log", "w")
    env = dict(os.environ, SPINDLE_LOG="info,spindle_nm::localizer=debug", NO_COLOR="1")
    daemon = subprocess.Popen([args.spindle, "standalone", "--conf", str(conf)], stdout=rm_log,
                              stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        time.sleep(3)
        walls = []
        spark_env = dict(os.environ, SPARK_HOME=str(spark_home), HADOOP_CONF_DIR=str(conf),
                         YARN_CONF_DIR=str(conf), SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON="python3")
        pi = spark_home / "examples/src/main/python/pi.py"
        for i in range(args.runs):
            started = time.monotonic()
            r = subprocess.run([str(spark_home / "bin/spark-submit"), "--master", "yarn", "--deploy-mode", "cluster",
                                "--conf", f"spark.yarn.stagingDir=file://{root}/staging",
                                "--conf", "spark.driver.memory=512m", "--conf", "spark.executor.memory=512m",
                                "--conf", "spark.executor.instances=2", str(pi), "4"],
                               env=spark_env, capture_output=True, text=True)
            wall = time.monotonic() - started
            if r.returncode != 0:
                print(r.stdout[-3000:], r.stderr[-3000:], sep="\n")
                sys.exit(f"run {i + 1} failed")
            walls.append(wall)
            print(f"run {i + 1}: {wall:.1f} s")
        print(f"pi.py cluster mode, submit to exit: median {statistics.median(walls):.1f} s over {len(walls)} runs")
    finally:
        os.killpg(daemon.pid, 15)
        daemon.wait(timeout=30)
        rm_log.close()
    text = re.sub(r"\x1b\[[0-9;]*m", "", (root / "standalone.log").read_text())
    accepted, launched = {}, {}
    for line in text.splitlines():
        m = re.search(r"application accepted app=(application_\S+)", line)
        if m:
            accepted[m.group(1)] = log_time(line)
        # The NM's "container launched" (process started, after localization) for
        # each application's first AM container.
        m = re.search(r"container launched container=container_(?:e\d+_)?(\d+_\d+)_\d+_000001 ", line)
        if m:
            launched.setdefault("application_" + m.group(1), log_time(line))
    delays = [launched[a] - accepted[a] for a in accepted if a in launched]
    if delays:
        print(f"submit (accepted) to AM process started: median {statistics.median(delays) * 1000:.0f} ms "
              f"(min {min(delays) * 1000:.0f}, max {max(delays) * 1000:.0f})")
    libs = [int(m.group(1)) for m in re.finditer(r"__spark_libs__\S*.*?elapsed_ms=(\d+)", text)]
    if libs:
        print(f"__spark_libs__ archive, first localization per application: {libs} ms")
    reused = len(re.findall(r"__spark_libs__\S* reused the cached copy|reused the cached copy.*__spark_libs__", text))
    print(f"__spark_libs__ cache reuses (later containers of the same application): {reused}")
    print(f"logs kept in {root}")


if __name__ == "__main__":
    main()
