//! `spindle distributed-shell`, YARN's classic example, on a real Spindle cluster:
//! the binary submits its own AM, which runs a shell command in N containers and
//! reports where each container's output is.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use spindle_integration::process::run_with_timeout;
use spindle_integration::{Cluster, HadoopClients, NodeManagerSpec};

#[test]
fn distributed_shell_runs_a_command_in_every_container() {
    let Some(clients) = HadoopClients::for_tests() else {
        return;
    };
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(300)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start(&clients)
        .expect("cluster starts");
    let mut cmd = Command::new(cluster.binary());
    cmd.arg("distributed-shell")
        .arg("--conf")
        .arg(cluster.conf_dir())
        .args(["--num-containers", "3", "--container-memory", "256"])
        .args(["--command", "echo hello from $CONTAINER_ID"]);
    let out = run_with_timeout(cmd, Duration::from_secs(180)).expect("distributed-shell runs");
    assert!(
        out.success(),
        "distributed-shell failed:\n{out}\n{}",
        cluster.log_report()
    );
    let locations: Vec<PathBuf> = out
        .stdout
        .lines()
        .filter_map(|l| l.split("output in ").nth(1))
        .map(|rest| PathBuf::from(rest.split_whitespace().next().unwrap_or_default()))
        .collect();
    assert_eq!(
        locations.len(),
        3,
        "one output location per container:\n{out}"
    );
    let mut found = 0;
    for path in &locations {
        // Locations on another node are relative to that node's log dirs.
        let candidates = [path.clone()].into_iter().chain(
            (0..cluster.nodemanagers().len())
                .map(|i| cluster.root().join(format!("nm-{i}/logs")).join(path)),
        );
        for candidate in candidates {
            if let Ok(text) = std::fs::read_to_string(&candidate) {
                assert!(
                    text.starts_with("hello from container_"),
                    "{candidate:?}: {text}"
                );
                found += 1;
                break;
            }
        }
    }
    assert_eq!(
        found, 3,
        "container outputs missing at {locations:?}\n{out}"
    );
    let status = cluster.yarn(["application", "-list", "-appStates", "FINISHED"]);
    status.assert_success();
    assert!(status.stdout.contains("SUCCEEDED"), "{status}");
}
