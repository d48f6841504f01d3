//! How the daemons report a `--conf` that is not a configuration directory.

use std::process::Command;

fn spindle() -> Command {
    Command::new(env!("CARGO_BIN_EXE_spindle"))
}

#[test]
fn a_file_given_as_the_configuration_directory_is_called_a_file() {
    let readme = concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md");
    for command in ["resourcemanager", "nodemanager", "standalone"] {
        let out = spindle()
            .args([command, "--conf", readme])
            .output()
            .expect("spindle runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{command}: {stderr}");
        assert!(
            stderr.contains("README.md is a file, not a directory"),
            "{command}: {stderr}"
        );
    }
}

#[test]
fn a_missing_configuration_directory_is_called_missing() {
    let out = spindle()
        .args(["resourcemanager", "--conf", "/nonexistent/spindle-conf"])
        .output()
        .expect("spindle runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains("configuration directory /nonexistent/spindle-conf does not exist"),
        "{stderr}"
    );
}
