//! End to end: the distributed shell on Spindle's ResourceManager and
//! NodeManager, both in this process on 127.0.0.1 with ephemeral ports and
//! temporary directories.
//!
//! The client submits an ApplicationMaster whose command runs this test
//! executable (`current_exe()`) as `<exe> distributed-shell-am …`, just as
//! the `spindle` binary runs itself; so this file has its own `main`
//! (`harness = false`): with that subcommand it *is* the ApplicationMaster,
//! otherwise it runs the tests below and reports like the test harness.
//!
//! The path exercised: getNewApplication / submitApplication → the RM
//! allocates the AM container and launches it on the NM with an NMToken →
//! the NM runs the AM with its AMRMToken in `container_tokens` → the AM
//! registers (DIGEST-MD5 with the AMRMToken), asks for two containers,
//! starts them on the NM with the NMTokens and container tokens the RM
//! sent, collects their exit statuses and unregisters → the client sees
//! FINISHED / SUCCEEDED and the output files contain what `echo` printed.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use spindle_am::dshell::{self, AmArgs, ClientArgs, AM_SUBCOMMAND};
use spindle_am::{AppState, FinalStatus};
use spindle_common::conf::{keys, Configuration};
use spindle_nm::{NmConfig, NodeManager};
use spindle_rm::ResourceManager;

#[derive(Parser)]
struct AmCli {
    #[command(flatten)]
    args: AmArgs,
}

/// The ApplicationMaster, as `spindle distributed-shell-am` runs it.
fn run_am(argv: &[String]) -> ExitCode {
    init_logging();
    let cli = match AmCli::try_parse_from(argv.iter().skip(1)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    let conf = Configuration::with_defaults();
    match runtime.block_on(dshell::am_main(&cli.args, &conf)) {
        Ok(outcome) => ExitCode::from(outcome.exit_code()),
        Err(e) => {
            eprintln!("distributed shell ApplicationMaster failed: {e}");
            ExitCode::from(2)
        }
    }
}

fn init_logging() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("SPINDLE_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

type Test = fn() -> Result<(), String>;

const TESTS: &[(&str, Test)] = &[
    (
        "distributed_shell_runs_echo_in_two_containers",
        distributed_shell_runs_echo_in_two_containers,
    ),
    (
        "distributed_shell_reports_a_failing_command",
        distributed_shell_reports_a_failing_command,
    ),
];

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some(AM_SUBCOMMAND) {
        return run_am(&argv);
    }
    // Enough of the test harness's command line: `--list`, `--exact`,
    // `--ignored` (there are none), `--skip NAME`, name filters; other flags
    // are accepted and ignored, with the values of those that take one.
    let mut list = false;
    let mut exact = false;
    let mut only_ignored = false;
    let mut filters: Vec<String> = Vec::new();
    let mut skips: Vec<String> = Vec::new();
    let mut rest = argv.iter().skip(1);
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--list" => list = true,
            "--exact" => exact = true,
            "--ignored" => only_ignored = true,
            "--skip" => skips.extend(rest.next().cloned()),
            "--test-threads" | "--format" | "--color" | "--logfile" | "--shuffle-seed" | "-Z" => {
                rest.next();
            }
            a if a.starts_with('-') => {}
            a => filters.push(a.to_string()),
        }
    }
    let matches = |name: &str, pattern: &str| {
        if exact {
            name == pattern
        } else {
            name.contains(pattern)
        }
    };
    let selected: Vec<&(&str, Test)> = TESTS
        .iter()
        .filter(|_| !only_ignored)
        .filter(|(name, _)| filters.is_empty() || filters.iter().any(|f| matches(name, f)))
        .filter(|(name, _)| !skips.iter().any(|s| matches(name, s)))
        .collect();
    if list {
        for (name, _) in &selected {
            println!("{name}: test");
        }
        return ExitCode::SUCCESS;
    }
    println!("\nrunning {} tests", selected.len());
    let mut failed = Vec::new();
    for (name, test) in &selected {
        let outcome = std::panic::catch_unwind(test).unwrap_or_else(|panic| {
            Err(panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "the test panicked".to_string()))
        });
        match outcome {
            Ok(()) => println!("test {name} ... ok"),
            Err(e) => {
                println!("test {name} ... FAILED\n{e}");
                failed.push(*name);
            }
        }
    }
    let passed = selected.len() - failed.len();
    println!(
        "\ntest result: {}. {passed} passed; {} failed\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Every file under `dir` with its contents, for a failure report.
fn dump_dir(dir: &Path, out: &mut String) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            dump_dir(&path, out);
        } else {
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| format!("<{e}>"));
            let tail: String = text
                .lines()
                .rev()
                .take(60)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n");
            out.push_str(&format!("----- {}\n{tail}\n", path.display()));
        }
    }
}

/// Runs `body` against a fresh cluster in `root`; on failure, the error
/// carries the tails of the NodeManager's container logs.
fn with_cluster<F, Fut>(body: F) -> Result<(), String>
where
    F: FnOnce(Cluster) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    let tmp = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))?;
    let root = tmp.path().to_path_buf();
    let result = runtime.block_on(async {
        let cluster = Cluster::start(&root).await?;
        tokio::time::timeout(Duration::from_secs(240), body(cluster))
            .await
            .map_err(|_| "the test did not finish within 240 s".to_string())?
    });
    result.map_err(|e| {
        let mut report = String::new();
        dump_dir(&root.join("nm-logs"), &mut report);
        format!("{e}\nNodeManager logs:\n{report}")
    })
}

/// A ResourceManager and one NodeManager, in process.
struct Cluster {
    rm: ResourceManager,
    nm: spindle_nm::NodeManagerHandle,
    /// What a client on this cluster reads.
    conf: Configuration,
    log_dir: PathBuf,
}

impl Cluster {
    async fn start(root: &Path) -> Result<Cluster, String> {
        let mut conf = Configuration::with_defaults();
        for key in [
            keys::RM_ADDRESS,
            keys::RM_SCHEDULER_ADDRESS,
            keys::RM_RESOURCE_TRACKER_ADDRESS,
            keys::RM_ADMIN_ADDRESS,
            keys::RM_WEBAPP_ADDRESS,
        ] {
            conf.set(key, "127.0.0.1:0");
        }
        conf.set(keys::SCHEDULER_MINIMUM_ALLOCATION_MB, "128");
        conf.set(keys::SCHEDULER_MAXIMUM_ALLOCATION_MB, "4096");
        conf.set(keys::RM_AM_MAX_ATTEMPTS, "1");
        conf.set(keys::RM_NODEMANAGERS_HEARTBEAT_INTERVAL_MS, "100");
        let rm = ResourceManager::start(&conf, None)
            .await
            .map_err(|e| format!("the ResourceManager did not start: {e}"))?;
        let addrs = rm.addresses();
        conf.set(keys::RM_ADDRESS, addrs.client.to_string());
        conf.set(keys::RM_SCHEDULER_ADDRESS, addrs.scheduler.to_string());
        conf.set(
            keys::RM_RESOURCE_TRACKER_ADDRESS,
            addrs.resource_tracker.to_string(),
        );
        conf.set(
            "yarn.client.application-client-protocol.poll-interval-ms",
            "100",
        );

        let mut nm_conf = conf.clone();
        let log_dir = root.join("nm-logs");
        nm_conf.set(keys::NM_ADDRESS, "127.0.0.1:0");
        nm_conf.set(keys::NM_WEBAPP_ADDRESS, "127.0.0.1:0");
        nm_conf.set(
            keys::NM_LOCAL_DIRS,
            root.join("nm-local").display().to_string(),
        );
        nm_conf.set(keys::NM_LOG_DIRS, log_dir.display().to_string());
        nm_conf.set(keys::NM_RESOURCE_MEMORY_MB, "4096");
        nm_conf.set(keys::NM_RESOURCE_CPU_VCORES, "4");
        nm_conf.set(keys::NM_VMEM_CHECK_ENABLED, "false");
        nm_conf.set(keys::NM_PMEM_CHECK_ENABLED, "false");
        nm_conf.set(keys::NM_DISK_HEALTH_CHECKER_ENABLE, "false");
        nm_conf.set(keys::NM_CONTAINER_MONITOR_INTERVAL_MS, "200");
        nm_conf.set(keys::NM_SLEEP_DELAY_BEFORE_SIGKILL_MS, "250");
        let nm_cfg =
            NmConfig::from_conf(&nm_conf).map_err(|e| format!("NodeManager configuration: {e}"))?;
        let nm = NodeManager::start_with_config(nm_cfg)
            .await
            .map_err(|e| format!("the NodeManager did not start: {e}"))?;
        tokio::time::timeout(Duration::from_secs(30), nm.wait_registered())
            .await
            .map_err(|_| "the NodeManager did not register within 30 s".to_string())?
            .map_err(|e| format!("the NodeManager did not register: {e}"))?;
        Ok(Cluster {
            rm,
            nm,
            conf,
            log_dir,
        })
    }

    /// Stops the NodeManager (it must stop cleanly) and the ResourceManager.
    async fn stop(self) -> Result<(), String> {
        let stopped = self.nm.stop().await;
        drop(self.rm);
        if stopped.is_clean() {
            Ok(())
        } else {
            Err(format!("the NodeManager did not stop cleanly: {stopped}"))
        }
    }
}

fn client_args(num_containers: u32, command: &str) -> ClientArgs {
    ClientArgs {
        num_containers,
        command: command.to_string(),
        container_memory: 128,
        container_vcores: 1,
        master_memory: 256,
        master_vcores: 1,
        queue: "default".to_string(),
        name: "dshell-e2e".to_string(),
        priority: 0,
        timeout_secs: 180,
        poll_interval_ms: 200,
        am_heartbeat_ms: 100,
        am_executable: None,
    }
}

/// The per-container lines of the AM's report.
fn container_lines(diagnostics: &str) -> Vec<&str> {
    diagnostics
        .lines()
        .filter(|l| l.starts_with("container "))
        .collect()
}

fn distributed_shell_runs_echo_in_two_containers() -> Result<(), String> {
    with_cluster(|cluster| async move {
        let node = cluster.nm.node_id().clone();
        let app_root = cluster.log_dir.clone();
        let outcome = dshell::client_main(&client_args(2, "echo hello"), &cluster.conf).await;
        cluster.stop().await?;
        let outcome = outcome.map_err(|e| format!("the client failed: {e}"))?;
        if !outcome.succeeded() || outcome.exit_code() != 0 {
            return Err(format!(
                "the application ended {} / {}: {}",
                outcome.report.state, outcome.report.final_status, outcome.report.diagnostics
            ));
        }
        // One line per container, each on our node, exit 0, naming its
        // stdout file, which holds what the command printed.
        let lines = container_lines(&outcome.report.diagnostics);
        if lines.len() != 2 {
            return Err(format!(
                "expected two container lines in the diagnostics, got:\n{}",
                outcome.report.diagnostics
            ));
        }
        let app_dir = app_root.join(outcome.app.to_string());
        let expected = format!(" on node {node}: exit 0, output in ");
        for line in lines {
            let Some((_, path)) = line.split_once(&expected) else {
                return Err(format!("unexpected container line: {line}"));
            };
            let path = Path::new(path);
            if !path.starts_with(&app_dir) {
                return Err(format!(
                    "{} is not under {}",
                    path.display(),
                    app_dir.display()
                ));
            }
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            if text != "hello\n" {
                return Err(format!(
                    "{} holds {text:?}, not \"hello\\n\"",
                    path.display()
                ));
            }
        }
        if !outcome
            .report
            .diagnostics
            .contains("2 of 2 containers exited with status 0")
        {
            return Err(format!(
                "no summary line in: {}",
                outcome.report.diagnostics
            ));
        }
        Ok(())
    })
}

fn distributed_shell_reports_a_failing_command() -> Result<(), String> {
    with_cluster(|cluster| async move {
        let outcome = dshell::client_main(
            &client_args(1, "echo about to fail >&2; exit 3"),
            &cluster.conf,
        )
        .await;
        cluster.stop().await?;
        let outcome = outcome.map_err(|e| format!("the client failed: {e}"))?;
        let report = &outcome.report;
        if report.final_status != FinalStatus::Failed || !report.state.is_final() {
            return Err(format!(
                "expected a final state with final status FAILED, got {} / {}: {}",
                report.state, report.final_status, report.diagnostics
            ));
        }
        if outcome.exit_code() == 0 {
            return Err("a failed application must not give exit code 0".to_string());
        }
        let lines = container_lines(&report.diagnostics);
        if lines.len() != 1 || !lines[0].contains(": exit 3, output in ") {
            return Err(format!("unexpected report:\n{}", report.diagnostics));
        }
        if !report
            .diagnostics
            .contains("0 of 1 containers exited with status 0")
        {
            return Err(format!("no summary line in: {}", report.diagnostics));
        }
        // An AM that unregisters ends its application FINISHED whatever
        // final status it reports (Hadoop's RMAppImpl: RUNNING
        // --ATTEMPT_UNREGISTERED--> FINAL_SAVING --> FINISHING --> FINISHED);
        // FAILED and KILLED states are for applications whose attempts
        // failed or that were killed. `yarn application -status` shows
        // "State : FINISHED, Final-State : FAILED" for this one.
        if report.state != AppState::Finished {
            return Err(format!(
                "the application's state is {}, but an application whose AM unregistered \
                 (here with final status {}) must be FINISHED, as in Hadoop",
                report.state, report.final_status
            ));
        }
        Ok(())
    })
}
