//! `spindle dag sim`: the MR3 seeds' experiments, run on the pure DAG cores
//! in simulation (crates/sim, module `dagsim`): the task-scheduling
//! experiments 1 and 2, and the elastic scenario (3) that drives the
//! autoscaler and the container scheduler's recycling.
//!
//! Standard output is deterministic (same options, same bytes); the wall time
//! of a run and the paths written go to standard error only.

use std::path::PathBuf;

use spindle_sim::dagsim::{
    run_elastic, run_experiment, ElasticOptions, Experiment, ExperimentOptions, TaskQueueScheme,
};

/// Arguments of `spindle dag sim`.
#[derive(clap::Args)]
pub struct DagSimArgs {
    /// Which experiment: 1 (every client submits the same 17 queries in its
    /// own order), 2 (every client submits its own query 10 times), or 3 /
    /// elastic (autoscaling and container recycling on a cluster whose nodes
    /// come and go).
    #[arg(long, value_name = "1|2|3|elastic")]
    experiment: String,
    /// Print one JSON object: experiments 1 and 2 give per scheme combination
    /// the total time, the completion time of every client, mean turnaround,
    /// and the seed's claims; elastic gives per run the scale-outs and
    /// scale-ins, peak and final workers and nodes, node-seconds, DAG
    /// completion times and worker migrations.
    #[arg(long)]
    json: bool,
    /// Write the chart here: dag-sim-experiment-N.svg (per-client progress)
    /// or dag-sim-elastic.svg (workers, nodes and memory usage over time).
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Seed of the DAG shapes, task times and the clients' query orders.
    #[arg(long, default_value_t = spindle_sim::DEFAULT_SEED)]
    seed: u64,
    /// The short form used in CI (fewer clients and DAGs, a smaller cluster).
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
    /// Check every core's invariants after every input (slow; use with --short).
    #[arg(long = "check-invariants")]
    check_invariants: bool,
}

/// What to run.
enum Run {
    Experiment(ExperimentOptions),
    Elastic(ElasticOptions),
}

fn options(args: &DagSimArgs) -> Result<Run, String> {
    let task_queue_scheme = args
        .taskattempt_queue_scheme
        .parse::<TaskQueueScheme>()
        .map_err(|e| e.to_string())?;
    match args.experiment.trim() {
        "3" | "elastic" => {
            let mut opts = if args.short {
                ElasticOptions::short()
            } else {
                ElasticOptions::full()
            };
            opts.seed = args.seed;
            opts.check_invariants = args.check_invariants;
            opts.task_queue_scheme = task_queue_scheme;
            Ok(Run::Elastic(opts))
        }
        other => {
            let n: u8 = other
                .parse()
                .map_err(|_| format!("--experiment {other:?}: expected 1, 2, 3 or elastic"))?;
            let experiment = Experiment::from_number(n)
                .map_err(|_| format!("--experiment {n}: expected 1, 2, 3 or elastic"))?;
            let mut opts = if args.short {
                ExperimentOptions::short(experiment)
            } else {
                ExperimentOptions::full(experiment)
            };
            opts.seed = args.seed;
            opts.check_invariants = args.check_invariants;
            opts.task_queue_scheme = task_queue_scheme;
            Ok(Run::Experiment(opts))
        }
    }
}

pub async fn run(args: DagSimArgs) -> Result<u8, String> {
    let run = options(&args)?;
    // The simulation is CPU-bound and synchronous: keep it off the async workers.
    tokio::task::spawn_blocking(move || run_blocking(&args, &run))
        .await
        .map_err(|e| format!("the simulation thread failed: {e}"))?
}

fn run_blocking(args: &DagSimArgs, run: &Run) -> Result<u8, String> {
    let started = std::time::Instant::now();
    let written = match run {
        Run::Experiment(opts) => {
            let report = run_experiment(opts).map_err(|e| e.to_string())?;
            if args.json {
                print!("{}", report.to_json());
            } else {
                print!("{}", report.tables());
            }
            args.svg.as_deref().map(|dir| report.write_svg(dir))
        }
        Run::Elastic(opts) => {
            let report = run_elastic(opts).map_err(|e| e.to_string())?;
            if args.json {
                print!("{}", report.to_json());
            } else {
                print!("{}", report.tables());
            }
            args.svg.as_deref().map(|dir| report.write_svg(dir))
        }
    };
    if let Some(path) = written.transpose().map_err(|e| e.to_string())? {
        eprintln!("wrote {}", path.display());
    }
    eprintln!("wall time: {:.1} s", started.elapsed().as_secs_f64());
    Ok(0)
}
