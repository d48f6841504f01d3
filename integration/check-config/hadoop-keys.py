#!/usr/bin/env python3
"""Writes the key list `spindle check-config` knows Hadoop's keys by.

Reads the four `*-default.xml` files that Hadoop 3.3.4's jars carry (core, hdfs,
yarn, mapred) from a folder of jars (`integration/setup-maven.sh mapreduce`
copies them) and prints one line per property: the file, the key and its
default value, tab-separated, with backslash, tab and newline in values written
as \\\\, \\t and \\n. A key a file lists twice keeps its last value, as
Hadoop's Configuration does.

    integration/check-config/hadoop-keys.py "$(integration/setup-maven.sh mapreduce)" \
        > crates/common/src/conf/catalog/hadoop-3.3.4-keys.tsv

integration/tests/check_config.rs runs it and compares with the committed file.
"""
import sys
import zipfile
import xml.etree.ElementTree as ET
from pathlib import Path

VERSION = "3.3.4"
SOURCES = [
    ("core-default.xml", f"hadoop-common-{VERSION}.jar"),
    ("hdfs-default.xml", f"hadoop-hdfs-{VERSION}.jar"),
    ("yarn-default.xml", f"hadoop-yarn-common-{VERSION}.jar"),
    ("mapred-default.xml", f"hadoop-mapreduce-client-core-{VERSION}.jar"),
]


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n").replace("\r", "")


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    jars = Path(sys.argv[1])
    print(f"# Hadoop {VERSION}'s keys: file, key, default (written by integration/check-config/hadoop-keys.py)")
    for name, jar in SOURCES:
        path = jars / jar
        if not path.is_file():
            print(f"hadoop-keys.py: {path} is missing", file=sys.stderr)
            return 1
        with zipfile.ZipFile(path) as z:
            root = ET.fromstring(z.read(name))
        values = {}
        for prop in root.iter("property"):
            key = (prop.findtext("name") or "").strip()
            if not key:
                continue
            values[key] = prop.findtext("value") or ""
        for key, value in values.items():
            print(f"{name}\t{key}\t{escape(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
