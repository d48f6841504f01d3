//! `spindle check-config` on the repository's example configurations: every
//! key classified, the output kept as a snapshot (`UPDATE_EXPECT=1 cargo
//! test -p spindle --test check_config` rewrites the snapshots after a
//! deliberate change), and the exit status 1 exactly when a daemon would
//! refuse to start. Hadoop's own `*-default.xml` files are checked in
//! `integration/tests/check_config.rs` (they come from Maven).

use std::path::{Path, PathBuf};
use std::process::Command;

use expect_test::expect_file;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `spindle check-config --conf dir`: its exit code and its output, with
/// the directory shown as `<conf>`.
fn check_config(dir: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .args(["check-config", "--conf"])
        .arg(dir)
        .env("SPINDLE_LOG", "warn")
        .output()
        .expect("spindle runs");
    let text = String::from_utf8_lossy(&out.stdout).replace(&dir.display().to_string(), "<conf>");
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_example_configuration_is_served() {
    let (code, text) = check_config(&repo().join("conf"));
    assert_eq!(code, 0, "{text}");
    assert!(
        !text.contains("UNKNOWN") && !text.contains("REFUSED"),
        "{text}"
    );
    expect_file!["snapshots/check-config-conf.txt"].assert_eq(&text);
}

#[test]
fn the_secure_example_is_refused_key_by_key() {
    let (code, text) = check_config(&repo().join("conf/examples/secure"));
    assert_eq!(code, 1, "{text}");
    for key in [
        "hadoop.security.authentication",
        "hadoop.rpc.protection",
        "hadoop.http.authentication.type",
        "hadoop.zk.auth",
        "yarn.http.policy",
        "yarn.nodemanager.runtime.linux.allowed-runtimes",
    ] {
        assert!(
            text.lines()
                .any(|l| l.contains(&format!(" {key} = ")) && l.contains("REFUSED")),
            "{key}:\n{text}"
        );
    }
    assert!(
        text.contains("did you mean yarn.resourcemanager.address?"),
        "{text}"
    );
    expect_file!["snapshots/check-config-secure.txt"].assert_eq(&text);
}

/// The example queue files: the three-level capacity tree and the fair
/// scheduler's allocation file, each with the keys a shop might carry over
/// from Hadoop 3.4 and its preemption settings.
#[test]
fn queue_files_are_read_as_the_resourcemanager_reads_them() {
    let examples = repo().join("conf/examples");
    let capacity = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        examples.join("capacity-scheduler-three-level.xml"),
        capacity.path().join("capacity-scheduler.xml"),
    )
    .expect("copy");
    // Capacity keys may sit in yarn-site.xml too: some Spindle does not act on yet.
    std::fs::write(
        capacity.path().join("yarn-site.xml"),
        "<configuration>\
         <property><name>yarn.scheduler.capacity.root.prod.disable_preemption</name>\
         <value>true</value></property>\
         <property><name>yarn.scheduler.capacity.root.dev.accessible-node-labels.gpu.capacity</name>\
         <value>50</value></property>\
         <property><name>yarn.scheduler.capacity.root.dev.auto-create-child-queue.enabled</name>\
         <value>true</value></property>\
         <property><name>yarn.scheduler.capacity.root.dev.maximum-capcity</name>\
         <value>50</value></property>\
         </configuration>",
    )
    .expect("yarn-site");
    let (code, text) = check_config(capacity.path());
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("did you mean yarn.scheduler.capacity.root.dev.maximum-capacity?"),
        "{text}"
    );
    assert!(
        text.contains("scheduler: capacity scheduler, its queues load: root, "),
        "{text}"
    );
    expect_file!["snapshots/check-config-capacity.txt"].assert_eq(&text);

    let fair = tempfile::tempdir().expect("tempdir");
    let allocations = std::fs::read_to_string(examples.join("fair-scheduler.xml"))
        .expect("the example allocation file")
        .replace(
            "</allocations>",
            "  <defaultFairSharePreemptionTimeout>60</defaultFairSharePreemptionTimeout>\n\
             </allocations>",
        );
    std::fs::write(fair.path().join("fair-scheduler.xml"), allocations).expect("write");
    std::fs::write(
        fair.path().join("yarn-site.xml"),
        "<configuration><property><name>yarn.resourcemanager.scheduler.class</name>\
         <value>org.apache.hadoop.yarn.server.resourcemanager.scheduler.fair.FairScheduler</value>\
         </property></configuration>",
    )
    .expect("yarn-site");
    let (code, text) = check_config(fair.path());
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("scheduler: fair scheduler, its queues load: "),
        "{text}"
    );
    assert!(
        text.contains("<defaultFairSharePreemptionTimeout>: not built"),
        "{text}"
    );
    expect_file!["snapshots/check-config-fair.txt"].assert_eq(&text);

    // A capacity given as a weight is refused, as the RM refuses the file.
    std::fs::write(
        capacity.path().join("capacity-scheduler.xml"),
        "<configuration>\
         <property><name>yarn.scheduler.capacity.root.queues</name><value>a,b</value></property>\
         <property><name>yarn.scheduler.capacity.root.a.capacity</name><value>2w</value></property>\
         <property><name>yarn.scheduler.capacity.root.b.capacity</name><value>1w</value></property>\
         </configuration>",
    )
    .expect("capacity-scheduler");
    let (code, text) = check_config(capacity.path());
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains("yarn.scheduler.capacity.root.a.capacity = \"2w\": REFUSED"),
        "{text}"
    );
    assert!(
        text.contains("scheduler: capacity scheduler: the ResourceManager will not start"),
        "{text}"
    );
}

#[test]
fn without_a_directory_there_is_nothing_to_check() {
    let out = Command::new(env!("CARGO_BIN_EXE_spindle"))
        .arg("check-config")
        .env_remove("YARN_CONF_DIR")
        .env_remove("HADOOP_CONF_DIR")
        .output()
        .expect("spindle runs");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("No configuration directory"));
}
