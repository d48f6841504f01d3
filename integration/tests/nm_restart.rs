//! NodeManager recovery (issue S9) on a real Spindle cluster: the NodeManager
//! process is killed with SIGKILL while an application's containers run and
//! started again on the same dirs with `yarn.nodemanager.recovery.enabled`;
//! it takes its running containers back and the application finishes. Spindle's
//! own client (`spindle distributed-shell`): no Hadoop jars needed.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use spindle_integration::process::run_with_timeout;
use spindle_integration::{Cluster, NodeManagerSpec};

const TIMEOUT: Duration = Duration::from_secs(120);

/// How many containers the NodeManager has recorded as running in its recovery dir
/// `recovery`: launched (their pid files written), so that a node started again on
/// the same dirs reacquires them. One record per container, `containers/<id>`,
/// replaced atomically (through `<id>.tmp`) as the container's phase changes.
fn containers_recorded_running(recovery: &Path) -> usize {
    let Ok(records) = std::fs::read_dir(recovery.join("containers")) else {
        return 0;
    };
    records
        .filter_map(|r| r.ok())
        .filter(|r| {
            let name = r.file_name().to_string_lossy().into_owned();
            name.starts_with("container_") && !name.contains('.')
        })
        .filter(|r| {
            std::fs::read_to_string(r.path())
                .is_ok_and(|text| text.lines().any(|l| l == "phase running"))
        })
        .count()
}

#[test]
fn a_killed_node_manager_restarted_with_recovery_takes_its_containers_back() {
    let recovery = tempfile::tempdir().expect("tempdir");
    let mut spec = NodeManagerSpec::new(4096, 4);
    spec.properties
        .set("yarn.nodemanager.recovery.enabled", true)
        .set("yarn.nodemanager.recovery.dir", recovery.path().display());
    let mut cluster = Cluster::builder()
        .heartbeat_interval_ms(300)
        .nodemanager(spec)
        .start_without_clients()
        .expect("cluster starts");

    // An AM and two containers that run for a while, then succeed.
    let mut cmd = Command::new(cluster.binary());
    cmd.arg("distributed-shell")
        .arg("--conf")
        .arg(cluster.conf_dir())
        .args(["--num-containers", "2", "--container-memory", "256"])
        .args(["--command", "sleep 12; echo done"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let client = std::thread::spawn(move || run_with_timeout(cmd, Duration::from_secs(240)));

    // Once the node has recorded the AM and its two containers as running, kill it.
    let deadline = Instant::now() + TIMEOUT;
    while containers_recorded_running(recovery.path()) < 3 {
        assert!(
            Instant::now() < deadline,
            "the AM and its two containers did not start:\n{}",
            cluster.log_report()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    cluster
        .kill_nodemanager(0)
        .expect("kill -9 of the NodeManager");
    cluster
        .restart_nodemanager(0, TIMEOUT)
        .expect("the NodeManager starts again");

    let out = client
        .join()
        .expect("client thread")
        .expect("distributed-shell runs");
    assert!(
        out.success(),
        "distributed-shell failed:\n{out}\n{}",
        cluster.log_report()
    );
    assert!(
        out.stdout
            .contains("ended: state FINISHED, final status SUCCEEDED"),
        "{out}\n{}",
        cluster.log_report()
    );
    let log = std::fs::read_to_string(cluster.root().join("logs/nm-0-1.stderr"))
        .expect("the restarted NodeManager's log");
    assert!(log.contains("reacquired a running container"), "{log}");
}
