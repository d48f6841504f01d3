//! `spindle`: the one binary.
//!
//! - `spindle resourcemanager` runs the RM where Hadoop's stood;
//! - `spindle nodemanager` runs the NM agent on a host;
//! - `spindle standalone` runs an RM and one NM in one process, with Hadoop's default
//!   addresses, so the stock `yarn` CLI finds it without any configuration.
//!
//! Configuration comes from `--conf DIR`, else `YARN_CONF_DIR`, else `HADOOP_CONF_DIR`,
//! like Hadoop's daemons.

mod bench_rpc_cmd;
mod bench_scheduler_cmd;
mod dag_cmd;
mod dag_sim_cmd;
mod sim_cmd;
mod worker_cmd;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use spindle_common::conf::Configuration;
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
    Resourcemanager(ConfArgs),
    /// Run a NodeManager.
    Nodemanager(ConfArgs),
    /// Run a ResourceManager and one NodeManager in this process.
    Standalone(ConfArgs),
    /// Run YARN's classic example: an AM that runs a shell command in N containers.
    DistributedShell {
        #[command(flatten)]
        conf: ConfArgs,
        #[command(flatten)]
        args: spindle_am::dshell::ClientArgs,
    },
    /// Simulate a cluster running a workload with the real scheduler core.
    Sim(sim_cmd::SimArgs),
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
    Rpc(bench_rpc_cmd::RpcBenchArgs),
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

impl ConfArgs {
    pub(crate) fn load(&self) -> Result<(Configuration, Option<PathBuf>), String> {
        let dir = Configuration::resolve_conf_dir(self.conf.clone());
        if let Some(d) = &dir {
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("SPINDLE_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
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
            Command::Standalone(args) => run_standalone(args).await.map(|()| 0),
            Command::Sim(args) => sim_cmd::run(args).await,
            Command::Bench(BenchCommand::Scheduler(args)) => bench_scheduler_cmd::run(args).await,
            Command::Bench(BenchCommand::Rpc(args)) => bench_rpc_cmd::run(args).await,
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

/// Waits for Ctrl-C or SIGTERM.
async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
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
}

async fn run_rm(args: ConfArgs) -> Result<(), String> {
    let (conf, dir) = args.load()?;
    let rm = spindle_rm::ResourceManager::start(&conf, dir)
        .await
        .map_err(|e| e.to_string())?;
    print_rm(&rm);
    shutdown_signal().await;
    info!("ResourceManager stopping");
    drop(rm);
    Ok(())
}

async fn run_nm(args: ConfArgs) -> Result<(), String> {
    let (conf, _dir) = args.load()?;
    let nm = spindle_nm::NodeManager::start(&conf)
        .await
        .map_err(|e| e.to_string())?;
    println!("NodeManager {} started", nm.node_id());
    run_nm_until_stopped(nm).await
}

async fn run_nm_until_stopped(nm: spindle_nm::NodeManagerHandle) -> Result<(), String> {
    let exit = tokio::select! {
        _ = shutdown_signal() => None,
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

async fn run_standalone(args: ConfArgs) -> Result<(), String> {
    let (conf, dir) = args.load()?;
    let rm = spindle_rm::ResourceManager::start(&conf, dir)
        .await
        .map_err(|e| e.to_string())?;
    print_rm(&rm);
    // The NM reaches the RM at the address the RM actually bound.
    let mut nm_conf = conf.clone();
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
    println!("NodeManager {} started", nm.node_id());
    println!("Spindle standalone is up: try `yarn node -list`.");
    let result = run_nm_until_stopped(nm).await;
    drop(rm);
    result
}
