//! `spindle check-config` against Hadoop 3.3.4's own configuration: the
//! `*-default.xml` files its jars carry (from Maven, `integration/setup-maven.sh
//! mapreduce`), given as the site files of a configuration directory. Every key
//! is classified, none is unknown or refused (Hadoop's defaults are what
//! Spindle serves), the output is kept as a snapshot, and the catalog's copy of
//! Hadoop's key list is what `integration/check-config/hadoop-keys.py` makes of
//! these jars.

use std::path::Path;
use std::process::Command;

use expect_test::expect_file;
use spindle_integration::{spindle_binary, MavenJars};

const FILES: [(&str, &str, &str); 4] = [
    (
        "hadoop-common-3.3.4.jar",
        "core-default.xml",
        "core-site.xml",
    ),
    (
        "hadoop-yarn-common-3.3.4.jar",
        "yarn-default.xml",
        "yarn-site.xml",
    ),
    (
        "hadoop-mapreduce-client-core-3.3.4.jar",
        "mapred-default.xml",
        "mapred-site.xml",
    ),
    ("hadoop-hdfs-3.3.4.jar", "hdfs-default.xml", "hdfs-site.xml"),
];

/// One entry of a jar (python3's zipfile: the generator needs python3 anyway).
fn unzip(jar: &Path, entry: &str) -> Vec<u8> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; sys.stdout.buffer.write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
        ])
        .arg(jar)
        .arg(entry)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{entry} of {}", jar.display());
    out.stdout
}

#[test]
fn hadoops_defaults_are_classified_key_by_key() {
    let Some(jars) = MavenJars::for_tests("mapreduce", "hadoop-mapreduce-client-core") else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    for (jar, entry, site) in FILES {
        std::fs::write(dir.path().join(site), unzip(&jars.dir().join(jar), entry)).expect("write");
    }
    let out = Command::new(spindle_binary().expect("the spindle binary"))
        .args(["check-config", "--conf"])
        .arg(dir.path())
        .env("SPINDLE_LOG", "warn")
        .output()
        .expect("spindle runs");
    let text =
        String::from_utf8_lossy(&out.stdout).replace(&dir.path().display().to_string(), "<conf>");
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        !text.contains("UNKNOWN") && !text.contains("REFUSED"),
        "{text}"
    );
    assert!(
        text.ends_with("0 to look at (refused values, unknown keys, keys not built set away from Hadoop's default)\n"),
        "{text}"
    );
    expect_file!["snapshots/check-config-hadoop-3.3.4-defaults.txt"].assert_eq(&text);
}

#[test]
fn the_catalogs_key_list_is_what_the_jars_hold() {
    let Some(jars) = MavenJars::for_tests("mapreduce", "hadoop-mapreduce-client-core") else {
        return;
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new("python3")
        .arg(root.join("integration/check-config/hadoop-keys.py"))
        .arg(jars.dir())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let committed =
        std::fs::read_to_string(root.join("crates/common/src/conf/catalog/hadoop-3.3.4-keys.tsv"))
            .expect("the committed key list");
    assert!(
        String::from_utf8_lossy(&out.stdout) == committed,
        "crates/common/src/conf/catalog/hadoop-3.3.4-keys.tsv differs from what \
         integration/check-config/hadoop-keys.py makes of the jars: run it again"
    );
}
