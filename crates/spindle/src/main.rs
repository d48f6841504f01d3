//! `spindle`: the one binary.
//!
//! - `spindle resourcemanager` runs the RM where Hadoop's stood;
//! - `spindle nodemanager` runs the NM agent on a host;
//! - `spindle proxyserver` runs the web proxy on `yarn.web-proxy.address`;
//! - `spindle standalone` runs an RM and one NM in one process, on Hadoop's default
//!   ports, so the stock `yarn` CLI finds it without any configuration; unless
//!   configured otherwise it listens on loopback only, switches the virtual-memory
//!   check off, keeps its applications across restarts and aggregates finished
//!   applications' logs (see [`STANDALONE_DEFAULTS`]).
//!
//! Configuration comes from `--conf DIR`, else `YARN_CONF_DIR`, else `HADOOP_CONF_DIR`,
//! like Hadoop's daemons.

mod bench_rpc_cmd;
mod bench_scheduler_cmd;
mod check_config_cmd;
mod dag_cmd;
mod dag_sim_cmd;
mod proxyserver_cmd;
mod rm_sim_cmd;
mod sim_cmd;
mod worker_cmd;

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use spindle_common::conf::refuse::{self, Daemon};
use spindle_common::conf::{Configuration, BUILTIN_CORE_DEFAULTS, BUILTIN_YARN_DEFAULTS};
use tracing::info;

#[derive(Parser)]
#[command(
    name = "spindle",
    version,
    about = "A ResourceManager for Hadoop YARN clusters"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the ResourceManager.
    Resourcemanager(RmArgs),
    /// Run a NodeManager.
    Nodemanager(ConfArgs),
    /// Run the web proxy on yarn.web-proxy.address (Hadoop's `yarn proxyserver`).
    Proxyserver(ConfArgs),
    /// Run a ResourceManager and one NodeManager in this process.
    Standalone(ConfArgs),
    /// Check a Hadoop configuration directory: what Spindle does with each key
    /// (served, differs, refused, another program's, not built, unknown).
    /// Exits 1 when a daemon would refuse to start.
    CheckConfig(check_config_cmd::CheckConfigArgs),
    /// Run YARN's classic example: an AM that runs a shell command in N containers.
    DistributedShell {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: spindle_am::dshell::ClientArgs,
    },
    /// Simulate a cluster running a workload with the real scheduler core.
    Sim(sim_cmd::SimArgs),
    /// Run the whole ResourceManager (state, store, restarts, failovers) under
    /// a deterministic simulation with faults, over one seed or many.
    RmSim(rm_sim_cmd::RmSimArgs),
    /// Benchmarks: the scheduler core, or a real ResourceManager over IPC.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// The MR3-style DAG ApplicationMaster: sessions, DAG submission, status, simulation.
    #[command(subcommand)]
    Dag(DagCommand),
    /// A DAG ContainerWorker (started by the DAG AM in a YARN container, not by hand).
    #[command(hide = true)]
    Worker(worker_cmd::WorkerArgs),
    /// The distributed shell's ApplicationMaster (started by YARN, not by hand).
    #[command(name = "distributed-shell-am", hide = true)]
    DistributedShellAm {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: spindle_am::dshell::AmArgs,
    },
}

#[derive(Subcommand)]
enum BenchCommand {
    /// Decision throughput of the scheduler core (no I/O).
    Scheduler(bench_scheduler_cmd::SchedulerBenchArgs),
    /// Simulated NodeManagers and ApplicationMasters against a real ResourceManager.
    Rpc(Box<bench_rpc_cmd::RpcBenchArgs>),
}

#[derive(Subcommand)]
enum DagCommand {
    #[command(flatten)]
    Am(dag_cmd::DagAmCommand),
    /// Reproduce the MR3 seed's task-scheduling experiments (1, 2) and run the elastic
    /// autoscaling and recycling scenario (3) on the DAG cores in simulation.
    Sim(dag_sim_cmd::DagSimArgs),
}

#[derive(clap::Args)]
pub(crate) struct ConfArgs {
    /// Directory with core-site.xml, yarn-site.xml and capacity-scheduler.xml.
    #[arg(long = "conf", value_name = "DIR")]
    conf: Option<PathBuf>,
}

#[derive(clap::Args)]
struct RmArgs {
    #[command(flatten)]
    conf: ConfArgs,
    /// Wipe the state store (`spindle.resourcemanager.state-store.path`) and exit,
    /// like `yarn resourcemanager -format-state-store`.
    #[arg(long = "format-state-store")]
    format_state_store: bool,
}

impl ConfArgs {
    pub(crate) fn load(&self) -> Result<(Configuration, Option<PathBuf>), String> {
        let dir = Configuration::resolve_conf_dir(self.conf.clone());
        if let Some(d) = &dir {
            if d.is_file() {
                return Err(format!(
                    "configuration directory {} is a file, not a directory (give the directory holding yarn-site.xml)",
                    d.display()
                ));
            }
            if !d.is_dir() {
                return Err(format!(
                    "configuration directory {} does not exist",
                    d.display()
                ));
            }
        }
        let conf = Configuration::load(dir.as_deref()).map_err(|e| e.to_string())?;
        Ok((conf, dir))
    }
}

/// Logs to stderr with the filter of `SPINDLE_LOG` (else `default`), which
/// the web servers' `/logLevel` can change at run time.
fn init_logging(default: &str) {
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::EnvFilter;
    let wanted = std::env::var("SPINDLE_LOG").unwrap_or_default();
    let (directives, filter) = match EnvFilter::try_new(&wanted) {
        Ok(f) if !wanted.trim().is_empty() => (wanted, f),
        _ => (default.to_string(), EnvFilter::new(default)),
    };
    let (filter, handle) = tracing_subscriber::reload::Layer::new(filter);
    tracing_subscriber::registry()
        .with(filter)
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                // Colours only for a person watching: not in a log file or a pipe.
                .with_ansi(std::io::stderr().is_terminal()),
        )
        .init();
    spindle_web::log_level::install(
        &directives,
        Box::new(move |d| {
            let f = EnvFilter::try_new(d).map_err(|e| e.to_string())?;
            handle.reload(f).map_err(|e| e.to_string())
        }),
    );
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The simulation runs the RM's state thousands of times over: its logs
    // only when asked for (SPINDLE_LOG).
    init_logging(if matches!(cli.command, Command::RmSim(_)) {
        "off"
    } else {
        "info"
    });
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("spindle: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        match cli.command {
            Command::Resourcemanager(args) => run_rm(args).await.map(|()| 0),
            Command::Nodemanager(args) => run_nm(args).await.map(|()| 0),
            Command::Proxyserver(args) => proxyserver_cmd::run(args).await.map(|()| 0),
            Command::Standalone(args) => run_standalone(args).await.map(|()| 0),
            Command::CheckConfig(args) => check_config_cmd::run(args),
            Command::Sim(args) => sim_cmd::run(args).await,
            Command::RmSim(args) => rm_sim_cmd::run_cmd(args),
            Command::Bench(BenchCommand::Scheduler(args)) => bench_scheduler_cmd::run(args).await,
            Command::Bench(BenchCommand::Rpc(args)) => bench_rpc_cmd::run(*args).await,
            Command::Dag(DagCommand::Am(command)) => dag_cmd::run(command).await,
            Command::Dag(DagCommand::Sim(args)) => dag_sim_cmd::run(args).await,
            Command::Worker(args) => worker_cmd::run(args).await,
            Command::DistributedShell { conf, args } => {
                let (conf, _) = conf.load()?;
                let outcome = spindle_am::dshell::client_main(&args, &conf)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(outcome.exit_code())
            }
            Command::DistributedShellAm { conf, args } => {
                let (conf, _) = conf.load()?;
                let outcome = spindle_am::dshell::am_main(&args, &conf)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(outcome.exit_code())
            }
        }
    });
    match result {
        Ok(code) => ExitCode::from(code),
        Err(msg) => {
            eprintln!("spindle: {msg}");
            ExitCode::FAILURE
        }
    }
}

/// Ctrl-C and SIGTERM, caught from the moment this is made: a daemon makes
/// it before it starts, so a signal that arrives while it starts stops it
/// cleanly once it is up, instead of killing the process with the default
/// action.
struct Shutdown {
    #[cfg(unix)]
    signals: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Shutdown {
    fn catch() -> Shutdown {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let signals = match (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
            ) {
                (Ok(int), Ok(term)) => Some((int, term)),
                _ => None,
            };
            Shutdown { signals }
        }
        #[cfg(not(unix))]
        {
            Shutdown {}
        }
    }

    /// Waits for Ctrl-C or SIGTERM (received since [`Shutdown::catch`]).
    async fn wait(&mut self) {
        #[cfg(unix)]
        if let Some((int, term)) = &mut self.signals {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn print_rm(rm: &spindle_rm::ResourceManager) {
    let a = rm.addresses();
    println!(
        "ResourceManager client address (yarn.resourcemanager.address): {}",
        a.client
    );
    println!(
        "ResourceManager scheduler address (yarn.resourcemanager.scheduler.address): {}",
        a.scheduler
    );
    println!(
        "ResourceManager resource-tracker address (yarn.resourcemanager.resource-tracker.address): {}",
        a.resource_tracker
    );
    println!(
        "ResourceManager admin address (yarn.resourcemanager.admin.address): {}",
        a.admin
    );
    println!(
        "ResourceManager web address (yarn.resourcemanager.webapp.address): http://{}/",
        a.webapp
    );
    if let Some(ha) = rm.control().ha() {
        let how = if ha.automatic_failover && ha.embedded {
            "it is active while it holds the leader election's lock on ZooKeeper \
             (hadoop.zk.address)"
                .to_string()
        } else {
            format!(
                "`yarn rmadmin -transitionToActive{} {}` makes it active",
                if ha.automatic_failover {
                    " --forcemanual"
                } else {
                    ""
                },
                ha.rm_id
            )
        };
        println!(
            "ResourceManager {} of {} (yarn.resourcemanager.ha.rm-ids) is {}: {how}",
            ha.rm_id,
            ha.rm_ids.join(","),
            rm.service_state(),
        );
    }
}

async fn run_rm(args: RmArgs) -> Result<(), String> {
    let mut shutdown = Shutdown::catch();
    let (conf, dir) = args.conf.load()?;
    if args.format_state_store {
        println!("{}", spindle_rm::store::format_configured(&conf)?);
        return Ok(());
    }
    warn_not_acted_on(&conf);
    let rm = spindle_rm::ResourceManager::start(&conf, dir)
        .await
        .map_err(|e| e.to_string())?;
    print_rm(&rm);
    shutdown.wait().await;
    info!("ResourceManager stopping");
    drop(rm);
    Ok(())
}

/// Logs each key of the site files that Spindle will not act on as asked
/// (not built and set away from Hadoop's default, or unknown).
fn warn_not_acted_on(conf: &Configuration) {
    for line in spindle_common::conf::catalog::warnings(conf) {
        tracing::warn!("{line}");
    }
}

/// Hadoop's NodeManager also sees `mapred-site.xml` once MapReduce's shuffle
/// is loaded (its `JobConf` adds `mapred-default.xml` and `mapred-site.xml` as
/// default resources, after `yarn-site.xml`), so the shuffle's keys
/// (`mapreduce.shuffle.*`) may be set there: the NodeManager layers the file
/// of its configuration directory over the rest likewise.
fn with_mapred_site(
    mut conf: Configuration,
    dir: Option<&std::path::Path>,
) -> Result<Configuration, String> {
    if let Some(path) = dir
        .map(|d| d.join("mapred-site.xml"))
        .filter(|p| p.is_file())
    {
        conf.add_resource(&path).map_err(|e| e.to_string())?;
    }
    Ok(conf)
}

/// A NodeManager's configuration: the site files with `mapred-site.xml`
/// (the shuffle's keys) and `hadoop-policy.xml` (service-level ACLs).
fn nm_conf(conf: Configuration, dir: Option<&std::path::Path>) -> Result<Configuration, String> {
    let conf = with_mapred_site(conf, dir)?;
    spindle_common::security::service_acl::with_policy_file(&conf, dir)
}

async fn run_nm(args: ConfArgs) -> Result<(), String> {
    let shutdown = Shutdown::catch();
    let (conf, dir) = args.load()?;
    let conf = nm_conf(conf, dir.as_deref())?;
    warn_not_acted_on(&conf);
    let nm = spindle_nm::NodeManager::start(&conf)
        .await
        .map_err(|e| e.to_string())?;
    print_nm(&nm);
    run_nm_until_stopped(nm, shutdown).await
}

fn print_nm(nm: &spindle_nm::NodeManagerHandle) {
    println!("NodeManager {} started", nm.node_id());
    println!(
        "NodeManager web address (yarn.nodemanager.webapp.address): http://{}/",
        nm.http_address()
    );
}

async fn run_nm_until_stopped(
    nm: spindle_nm::NodeManagerHandle,
    mut shutdown: Shutdown,
) -> Result<(), String> {
    let exit = tokio::select! {
        _ = shutdown.wait() => None,
        exit = nm.wait() => Some(exit),
    };
    let exit = match exit {
        Some(exit) => exit,
        None => {
            info!("NodeManager stopping");
            nm.stop().await
        }
    };
    if exit.is_clean() {
        Ok(())
    } else {
        Err(format!("NodeManager ended: {exit}"))
    }
}

/// What `spindle standalone` sets when the configuration leaves it (and the keys
/// listed beside it) at Hadoop's defaults: the key, the value, and the keys whose
/// setting also counts as configuring it. `spindle resourcemanager` and
/// `spindle nodemanager` keep Hadoop's defaults.
///
/// - Hadoop's virtual-memory check (on, at 2.1 times a container's memory) kills
///   JVMs, whose reserved address space is far larger than what they use: Spark's AM
///   among them. Hadoop's own single-node guides switch it off too.
/// - RM restart recovery is on (`yarn.resourcemanager.recovery.enabled`): the
///   applications of a standalone cluster outlive its restarts, in the embedded
///   store at `spindle.resourcemanager.state-store.path`.
/// - Standalone has no authentication, so it listens on loopback only: every RM
///   address follows `yarn.resourcemanager.hostname` and the NM's follows
///   `yarn.nodemanager.hostname` unless set themselves.
/// - Log aggregation is on (`yarn.log-aggregation-enable`): a finished
///   application's logs go to `yarn.nodemanager.remote-app-log-dir` (`/tmp/logs`
///   on `fs.defaultFS`, the local file system unless configured), where the stock
///   `yarn logs -applicationId` reads them. The node keeps its own copies, and the
///   application's directories, for ten minutes more
///   (`yarn.nodemanager.delete.debug-delay-sec`), so the paths the distributed
///   shell prints can still be opened.
/// - MapReduce's shuffle runs (`yarn.nodemanager.aux-services=mapreduce_shuffle`
///   with Hadoop's `ShuffleHandler` class, which selects the native shuffle, on
///   `mapreduce.shuffle.port`, 13562), as Hadoop's single-node guide sets it, so
///   `yarn jar hadoop-mapreduce-examples-*.jar` jobs run; on loopback like the rest
///   unless the node's host or bind host says otherwise.
pub(crate) const STANDALONE_DEFAULTS: [(&str, &str, &[&str]); 9] = [
    ("yarn.nodemanager.vmem-check-enabled", "false", &[]),
    // Before the node's host name below: a host name the site sets counts, not this one.
    (
        "spindle.shuffle.bind-host",
        "127.0.0.1",
        &["yarn.nodemanager.hostname", "yarn.nodemanager.bind-host"],
    ),
    (
        "yarn.resourcemanager.hostname",
        "127.0.0.1",
        &["yarn.resourcemanager.bind-host"],
    ),
    (
        "yarn.nodemanager.hostname",
        "127.0.0.1",
        &["yarn.nodemanager.bind-host"],
    ),
    ("yarn.resourcemanager.recovery.enabled", "true", &[]),
    ("yarn.log-aggregation-enable", "true", &[]),
    ("yarn.nodemanager.delete.debug-delay-sec", "600", &[]),
    ("yarn.nodemanager.aux-services", "mapreduce_shuffle", &[]),
    (
        "yarn.nodemanager.aux-services.mapreduce_shuffle.class",
        "org.apache.hadoop.mapred.ShuffleHandler",
        &[],
    ),
];

/// Whether `key` has a value from a site file or code, not only a built-in default.
fn configured(conf: &Configuration, key: &str) -> bool {
    conf.origin_of(key).is_some_and(|o| {
        o.resource() != BUILTIN_YARN_DEFAULTS && o.resource() != BUILTIN_CORE_DEFAULTS
    })
}

/// Applies [`STANDALONE_DEFAULTS`] where the configuration does not decide, and
/// returns what it set, as `key=value`.
pub(crate) fn apply_standalone_defaults(conf: &mut Configuration) -> Vec<String> {
    let mut applied = Vec::new();
    for (key, value, also) in STANDALONE_DEFAULTS {
        if configured(conf, key) || also.iter().any(|k| configured(conf, k)) {
            continue;
        }
        conf.set(key, value);
        applied.push(format!("{key}={value}"));
    }
    applied
}

async fn run_standalone(args: ConfArgs) -> Result<(), String> {
    let shutdown = Shutdown::catch();
    let (mut conf, dir) = args.load()?;
    // Both daemons' refusals in one answer, before either starts (the
    // NodeManager's view includes mapred-site.xml).
    refuse::check(
        &with_mapred_site(conf.clone(), dir.as_deref())?,
        &[Daemon::ResourceManager, Daemon::NodeManager],
        "standalone cluster",
    )
    .map_err(|e| e.to_string())?;
    warn_not_acted_on(&conf);
    let applied = apply_standalone_defaults(&mut conf);
    if !applied.is_empty() {
        println!(
            "standalone defaults: {} (set a key in yarn-site.xml to change it)",
            applied.join(", ")
        );
    }
    let rm = spindle_rm::ResourceManager::start(&conf, dir.clone())
        .await
        .map_err(|e| e.to_string())?;
    print_rm(&rm);
    if rm.addresses().client.ip().is_loopback() {
        println!(
            "Listening on loopback only: standalone has no authentication. To serve other hosts set \
             yarn.resourcemanager.hostname and yarn.nodemanager.hostname (or their bind-host keys)."
        );
    }
    // The NM reaches the RM at the address the RM actually bound; it reads
    // what `spindle nodemanager` reads (mapred-site.xml, hadoop-policy.xml).
    let mut nm_conf = nm_conf(conf.clone(), dir.as_deref())?;
    let tracker = rm.addresses().resource_tracker;
    let tracker_host = if tracker.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        tracker.ip().to_string()
    };
    nm_conf.set(
        "yarn.resourcemanager.resource-tracker.address",
        format!("{tracker_host}:{}", tracker.port()),
    );
    let nm = spindle_nm::NodeManager::start(&nm_conf)
        .await
        .map_err(|e| e.to_string())?;
    print_nm(&nm);
    println!("Spindle standalone is up: try `yarn node -list`.");
    let result = run_nm_until_stopped(nm, shutdown).await;
    drop(rm);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conf_with(site: &str) -> Configuration {
        let mut conf = Configuration::with_defaults();
        conf.add_resource_str(
            "yarn-site.xml",
            &format!("<configuration>{site}</configuration>"),
        )
        .expect("valid xml");
        conf
    }

    fn property(key: &str, value: &str) -> String {
        format!("<property><name>{key}</name><value>{value}</value></property>")
    }

    #[test]
    fn standalone_defaults_apply_where_the_configuration_does_not_decide() {
        let mut conf = conf_with("");
        assert_eq!(
            apply_standalone_defaults(&mut conf),
            [
                "yarn.nodemanager.vmem-check-enabled=false",
                "spindle.shuffle.bind-host=127.0.0.1",
                "yarn.resourcemanager.hostname=127.0.0.1",
                "yarn.nodemanager.hostname=127.0.0.1",
                "yarn.resourcemanager.recovery.enabled=true",
                "yarn.log-aggregation-enable=true",
                "yarn.nodemanager.delete.debug-delay-sec=600",
                "yarn.nodemanager.aux-services=mapreduce_shuffle",
                "yarn.nodemanager.aux-services.mapreduce_shuffle.class=\
                 org.apache.hadoop.mapred.ShuffleHandler",
            ]
        );
        assert!(conf
            .get_bool("yarn.resourcemanager.recovery.enabled")
            .expect("a boolean"));
        assert!(!conf
            .get_bool("yarn.nodemanager.vmem-check-enabled")
            .expect("a boolean"));
        // Every RM address follows the host name.
        assert_eq!(
            conf.get("yarn.resourcemanager.address").as_deref(),
            Some("127.0.0.1:8032")
        );
        assert_eq!(
            conf.get("yarn.resourcemanager.scheduler.address")
                .as_deref(),
            Some("127.0.0.1:8030")
        );
    }

    #[test]
    fn configured_values_win_over_standalone_defaults() {
        let mut conf = conf_with(&format!(
            "{}{}{}{}{}{}{}{}",
            property("yarn.nodemanager.vmem-check-enabled", "true"),
            property("yarn.resourcemanager.bind-host", "0.0.0.0"),
            property("yarn.nodemanager.hostname", "0.0.0.0"),
            property("yarn.resourcemanager.recovery.enabled", "false"),
            property("yarn.log-aggregation-enable", "false"),
            property("yarn.nodemanager.delete.debug-delay-sec", "0"),
            property("yarn.nodemanager.aux-services", "spark_shuffle"),
            property(
                "yarn.nodemanager.aux-services.mapreduce_shuffle.class",
                "org.apache.hadoop.mapred.ShuffleHandler"
            ),
        ));
        let applied = apply_standalone_defaults(&mut conf);
        assert!(applied.is_empty(), "{applied:?}");
        assert!(!conf
            .get_bool("yarn.resourcemanager.recovery.enabled")
            .expect("a boolean"));
        assert!(conf
            .get_bool("yarn.nodemanager.vmem-check-enabled")
            .expect("a boolean"));
        assert_eq!(
            conf.get("yarn.resourcemanager.address").as_deref(),
            Some("0.0.0.0:8032")
        );
    }
}
