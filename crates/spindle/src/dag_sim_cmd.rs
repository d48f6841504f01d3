//! `spindle dag sim`: the MR3 seed's task-scheduling experiments, run on the
//! pure DAG cores in simulation (crates/sim, module `dagsim`).
//!
//! Standard output is deterministic (same options, same bytes); the wall time
//! of a run and the paths written go to standard error only.

use std::path::PathBuf;

use spindle_sim::dagsim::{run_experiment, Experiment, ExperimentOptions, TaskQueueScheme};

/// Arguments of `spindle dag sim`.
#[derive(clap::Args)]
pub struct DagSimArgs {
    /// Which experiment of the seed: 1 (every client submits the same 17
    /// queries in its own order) or 2 (every client submits its own query 10
    /// times).
    #[arg(long, value_name = "1|2")]
    experiment: u8,
    /// Print one JSON object: per scheme combination the total time, the
    /// completion time of every client, mean turnaround, and the seed's
    /// claims with whether they held.
    #[arg(long)]
    json: bool,
    /// Write the per-client progress chart (dag-sim-experiment-N.svg) here.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Seed of the DAG shapes, task times and experiment 1's query orders.
    #[arg(long, default_value_t = spindle_sim::DEFAULT_SEED)]
    seed: u64,
    /// The short form (fewer clients or runs, 4 workers x 4 slots) used in CI.
    #[arg(long)]
    short: bool,
    /// mr3.taskattempt.queue.scheme for every run: indexed (MR3's default;
    /// tasks whose whole input is available jump ahead) or basic (strict
    /// priority order).
    #[arg(
        long = "taskattempt-queue-scheme",
        default_value = "indexed",
        value_name = "indexed|basic"
    )]
    taskattempt_queue_scheme: String,
    /// Check every core's invariants after every step (slow; use with --short).
    #[arg(long = "check-invariants")]
    check_invariants: bool,
}

fn options(args: &DagSimArgs) -> Result<ExperimentOptions, String> {
    let experiment = Experiment::from_number(args.experiment).map_err(|e| e.to_string())?;
    let mut opts = if args.short {
        ExperimentOptions::short(experiment)
    } else {
        ExperimentOptions::full(experiment)
    };
    opts.seed = args.seed;
    opts.check_invariants = args.check_invariants;
    opts.task_queue_scheme = args
        .taskattempt_queue_scheme
        .parse::<TaskQueueScheme>()
        .map_err(|e| e.to_string())?;
    Ok(opts)
}

pub async fn run(args: DagSimArgs) -> Result<u8, String> {
    let opts = options(&args)?;
    // The simulation is CPU-bound and synchronous: keep it off the async workers.
    tokio::task::spawn_blocking(move || run_blocking(&args, &opts))
        .await
        .map_err(|e| format!("the simulation thread failed: {e}"))?
}

fn run_blocking(args: &DagSimArgs, opts: &ExperimentOptions) -> Result<u8, String> {
    let started = std::time::Instant::now();
    let report = run_experiment(opts).map_err(|e| e.to_string())?;
    if args.json {
        print!("{}", report.to_json());
    } else {
        print!("{}", report.tables());
    }
    if let Some(dir) = &args.svg {
        let path = report.write_svg(dir).map_err(|e| e.to_string())?;
        eprintln!("wrote {}", path.display());
    }
    eprintln!("wall time: {:.1} s", started.elapsed().as_secs_f64());
    Ok(0)
}
