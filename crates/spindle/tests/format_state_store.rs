//! `spindle resourcemanager --format-state-store`, as README documents it:
//! the store named by the configuration is wiped and the command exits
//! without serving.

use std::process::Command;

#[test]
fn format_state_store_wipes_the_configured_store_and_exits() {
    let dir = tempfile::tempdir().expect("temp dir");
    let store = dir.path().join("rmstore").join("spindle.redb");
    std::fs::create_dir_all(store.parent().expect("parent")).expect("mkdir");
    std::fs::write(&store, b"an earlier store").expect("write");
    std::fs::write(
        dir.path().join("yarn-site.xml"),
        format!(
            "<configuration>\
             <property><name>yarn.resourcemanager.recovery.enabled</name><value>true</value></property>\
             <property><name>spindle.resourcemanager.state-store.path</name><value>{}</value></property>\
             </configuration>",
            store.display()
        ),
    )
    .expect("yarn-site.xml");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_spindle"))
            .args(["resourcemanager", "--format-state-store", "--conf"])
            .arg(dir.path())
            .output()
            .expect("spindle runs")
    };
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains(&format!("state store {} wiped", store.display())),
        "{stdout}"
    );
    assert!(!store.exists(), "the store file is gone");
    // Again: nothing to wipe, said so.
    let out = run();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("did not exist"), "{stdout}");
}
