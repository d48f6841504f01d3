//! `spindle distributed-shell`, YARN's classic example, on a real Spindle cluster:
//! the binary submits its own AM, which runs a shell command in N containers and
//! reports where each container's output is. Spindle's own clients only: these tests
//! need no Hadoop jars.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use spindle_integration::process::run_with_timeout;
use spindle_integration::{Cluster, HadoopConf, NodeManagerSpec, Standalone};

#[test]
fn distributed_shell_runs_a_command_in_every_container() {
    let cluster = Cluster::builder()
        .heartbeat_interval_ms(300)
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .nodemanager(NodeManagerSpec::new(4096, 4))
        .start_without_clients()
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
    // The client's last application report, from the RM.
    assert!(
        out.stdout
            .contains("ended: state FINISHED, final status SUCCEEDED"),
        "{out}"
    );
}

/// A container whose process reserves far more address space than its memory (as
/// JVMs do), run by the distributed shell on `spindle standalone`.
const LARGE_ADDRESS_SPACE: &str =
    "python3 -c 'import mmap, time; m = mmap.mmap(-1, 3 << 30); time.sleep(15)'";

fn standalone(site: &HadoopConf) -> Standalone {
    Standalone::start(site).unwrap_or_else(|e| panic!("standalone did not start: {e:#}"))
}

/// `spindle standalone` switches Hadoop's virtual-memory check off unless configured
/// (it kills JVMs such as Spark's AM): a process reserving 3 GB in a 256 MB container
/// runs to its end. Configured on, the same check kills it, so the defaults are what
/// let it run, and a configured value wins.
#[test]
fn standalone_lets_a_large_address_space_run_unless_the_vmem_check_is_configured() {
    let args = [
        "--num-containers",
        "1",
        "--container-memory",
        "256",
        "--command",
        LARGE_ADDRESS_SPACE,
    ];
    let timeout = Duration::from_secs(240);

    let defaults = standalone(&HadoopConf::new());
    let out = defaults
        .distributed_shell(&args, timeout)
        .expect("distributed-shell runs");
    assert!(
        out.success(),
        "with standalone's defaults the container runs to its end:\n{out}\n{}",
        defaults.log_tail()
    );
    drop(defaults);

    let mut site = HadoopConf::new();
    site.set("yarn.nodemanager.vmem-check-enabled", true);
    let checked = standalone(&site);
    assert!(
        !checked.stdout().contains("vmem-check-enabled"),
        "a configured key is not a standalone default:\n{}",
        checked.stdout()
    );
    let out = checked
        .distributed_shell(&args, timeout)
        .expect("distributed-shell runs");
    out.assert_exit_failure();
    // -103: YARN's KILLED_EXCEEDED_VMEM, for the container, not the AM.
    assert!(
        out.stdout.contains("exit -103")
            && out
                .stdout
                .contains("0 of 1 containers exited with status 0"),
        "the container should have been killed for its virtual memory:\n{out}\n{}",
        checked.log_tail()
    );
}
