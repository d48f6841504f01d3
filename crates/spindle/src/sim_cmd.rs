//! `spindle sim`: run the cluster simulator (crates/sim) on a workload file or
//! unchanged Hadoop SLS inputs, with the real scheduler core.
//!
//! Standard output is deterministic (same workload and seed, same bytes); the wall
//! time of a run goes to standard error only.

use std::path::PathBuf;

use spindle_sim::{
    ChaosOptions, HeartbeatMode, NodeSelectionKind, Progress, SimOptions, WorkloadSource,
};

/// Arguments of `spindle sim`.
#[derive(clap::Args)]
pub struct SimArgs {
    /// A workload file, JSON or YAML (by extension, else by content; see docs/sim.md),
    /// e.g. conf/sim/bursty-day.json.
    #[arg(value_name = "WORKLOAD", required_unless_present_any = ["sls_trace", "sls_synth"])]
    workload: Option<PathBuf>,
    /// A Hadoop SLS trace (job.* / container.* keys) instead of a workload file.
    #[arg(long = "sls-trace", value_name = "FILE", conflicts_with_all = ["workload", "sls_synth"])]
    sls_trace: Option<PathBuf>,
    /// The SLS node file that goes with --sls-trace.
    #[arg(long = "sls-nodes", value_name = "FILE", requires = "sls_trace")]
    sls_nodes: Option<PathBuf>,
    /// A Hadoop SLS synthetic-load file instead of a workload file.
    #[arg(long = "sls-synth", value_name = "FILE", conflicts_with_all = ["workload", "sls_trace"])]
    sls_synth: Option<PathBuf>,
    /// Seed of every random choice (default: the workload's, else 1).
    #[arg(long)]
    seed: Option<u64>,
    /// Node selection, overriding the workload's: spread or packing.
    #[arg(long, value_name = "spread|packing")]
    placement: Option<String>,
    /// NodeManager heartbeats: per_node (each on its own clock) or rounds.
    #[arg(long = "heartbeat-mode", value_name = "per_node|rounds")]
    heartbeat_mode: Option<String>,
    /// Print one JSON object (the summary, or the comparison with --compare).
    #[arg(long)]
    json: bool,
    /// Write the time series (CSV) and charts (SVG) into this directory.
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Run spread and packing on the same workload and seed, and compare them.
    #[arg(long, conflicts_with = "placement")]
    compare: bool,
    /// Inject faults (lost nodes, crashed AMs, late heartbeats), check the core's
    /// invariants after every step, then require every application to finish.
    #[arg(long)]
    chaos: bool,
    /// With --chaos: run every seed of A..B (inclusive) and stop at the first failure.
    #[arg(long = "chaos-seeds", value_name = "A..B", requires = "chaos")]
    chaos_seeds: Option<String>,
    /// Check the core's invariants after every step (slow; for small clusters).
    #[arg(long = "check-invariants")]
    check_invariants: bool,
    /// Progress bar on stderr: auto (when stderr is a terminal), always or never.
    #[arg(long, default_value = "auto", value_name = "auto|always|never")]
    progress: String,
}

/// `fifo` / `capacity` / `fair`, as the CLIs spell them.
pub(crate) fn parse_policy(s: &str) -> Result<spindle_sim::bench::SchedulerKind, String> {
    use spindle_sim::bench::SchedulerKind;
    match s {
        "fifo" => Ok(SchedulerKind::Fifo),
        "capacity" => Ok(SchedulerKind::Capacity),
        "fair" => Ok(SchedulerKind::Fair),
        other => Err(format!(
            "--policy must be fifo, capacity or fair, not '{other}'"
        )),
    }
}

/// `spread` / `packing`, as the CLIs spell them.
pub(crate) fn parse_placement(s: &str) -> Result<NodeSelectionKind, String> {
    match s {
        "spread" => Ok(NodeSelectionKind::Spread),
        "packing" => Ok(NodeSelectionKind::Packing),
        other => Err(format!(
            "--placement must be spread or packing, not '{other}'"
        )),
    }
}

fn parse_seeds(s: &str) -> Result<std::ops::RangeInclusive<u64>, String> {
    let bad = || format!("--chaos-seeds takes A..B (two numbers, A <= B), not '{s}'");
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let a: u64 = a.trim().parse().map_err(|_| bad())?;
    let b: u64 = b.trim().parse().map_err(|_| bad())?;
    if a > b {
        return Err(bad());
    }
    Ok(a..=b)
}

fn options(args: &SimArgs) -> Result<SimOptions, String> {
    let workload = if let Some(trace) = &args.sls_trace {
        WorkloadSource::SlsTrace {
            trace: trace.clone(),
            nodes: args.sls_nodes.clone(),
        }
    } else if let Some(synth) = &args.sls_synth {
        WorkloadSource::SlsSynth(synth.clone())
    } else if let Some(file) = &args.workload {
        WorkloadSource::File(file.clone())
    } else {
        return Err("give a workload file, --sls-trace FILE or --sls-synth FILE".into());
    };
    let mut opts = SimOptions::new(workload);
    opts.seed = args.seed;
    opts.placement = args.placement.as_deref().map(parse_placement).transpose()?;
    opts.heartbeat_mode = args
        .heartbeat_mode
        .as_deref()
        .map(HeartbeatMode::parse)
        .transpose()
        .map_err(|e| format!("--heartbeat-mode: {e}"))?;
    opts.check_invariants = args.check_invariants;
    if args.chaos {
        opts.chaos = Some(ChaosOptions::default());
    }
    opts.progress = match args.progress.as_str() {
        "auto" => Progress::Auto,
        "always" => Progress::Always,
        "never" => Progress::Never,
        other => {
            return Err(format!(
                "--progress must be auto, always or never, not '{other}'"
            ))
        }
    };
    Ok(opts)
}

/// A path as a shell word: as is when it is plain, else in single quotes.
fn shell_word(p: &std::path::Path) -> String {
    let s = p.display().to_string();
    let plain = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_./-=:,+@%".contains(c));
    if plain {
        s
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The command line that replays one seed of a failed chaos run.
fn replay_command(args: &SimArgs, seed: u64) -> String {
    let mut cmd = String::from("spindle sim");
    if let Some(w) = &args.workload {
        cmd.push_str(&format!(" {}", shell_word(w)));
    }
    if let Some(t) = &args.sls_trace {
        cmd.push_str(&format!(" --sls-trace {}", shell_word(t)));
    }
    if let Some(n) = &args.sls_nodes {
        cmd.push_str(&format!(" --sls-nodes {}", shell_word(n)));
    }
    if let Some(s) = &args.sls_synth {
        cmd.push_str(&format!(" --sls-synth {}", shell_word(s)));
    }
    if let Some(p) = &args.placement {
        cmd.push_str(&format!(" --placement {p}"));
    }
    if let Some(m) = &args.heartbeat_mode {
        cmd.push_str(&format!(" --heartbeat-mode {m}"));
    }
    cmd.push_str(&format!(" --chaos --seed {seed}"));
    cmd
}

/// The outcome of a `--chaos-seeds` sweep on stdout: one JSON object with `--json`,
/// else one line.
fn chaos_sweep_result(json: bool, passed: usize, failed: Option<u64>) -> String {
    if json {
        let v = serde_json::json!({ "seeds_passed": passed, "failed_seed": failed });
        return format!("{v}\n");
    }
    match failed {
        Some(seed) => format!("chaos: {passed} seed(s) passed, seed {seed} failed\n"),
        None => format!("chaos: {passed} seed(s) passed\n"),
    }
}

pub async fn run(args: SimArgs) -> Result<u8, String> {
    let opts = options(&args)?;
    // The simulator is CPU-bound and synchronous: keep it off the async workers.
    tokio::task::spawn_blocking(move || run_blocking(&args, opts))
        .await
        .map_err(|e| format!("the simulation thread failed: {e}"))?
}

fn run_blocking(args: &SimArgs, opts: SimOptions) -> Result<u8, String> {
    let started = std::time::Instant::now();
    if args.compare {
        let runs = spindle_sim::compare_placement_runs(&opts).map_err(|e| e.to_string())?;
        if args.json {
            print!("{}", runs.comparison.to_json());
        } else {
            print!("{}", runs.comparison.render_text());
        }
        if let Some(dir) = &args.out {
            // The reports of the runs just compared: nothing runs twice.
            for (report, name) in [(&runs.spread, "spread"), (&runs.packing, "packing")] {
                let sub = dir.join(name);
                let files = report.write_outputs(&sub).map_err(|e| e.to_string())?;
                for f in files {
                    eprintln!("wrote {}", f.display());
                }
            }
        }
        eprintln!("wall time: {:.1} s", started.elapsed().as_secs_f64());
        return Ok(0);
    }
    if let Some(range) = args.chaos_seeds.as_deref() {
        let seeds = parse_seeds(range)?;
        let mut passed = 0usize;
        for seed in seeds {
            let mut o = opts.clone();
            o.seed = Some(seed);
            if let Err(e) = spindle_sim::run(o) {
                // Only a failure of the run itself replays; a workload that
                // cannot be read fails every seed the same way.
                if e.seed().is_none() {
                    return Err(e.to_string());
                }
                eprintln!(
                    "chaos seed {seed} failed: {e}\nreplay it with: {}",
                    replay_command(args, seed)
                );
                print!("{}", chaos_sweep_result(args.json, passed, Some(seed)));
                return Ok(1);
            }
            passed += 1;
        }
        print!("{}", chaos_sweep_result(args.json, passed, None));
        eprintln!("wall time: {:.1} s", started.elapsed().as_secs_f64());
        return Ok(0);
    }
    let chaos = opts.chaos.is_some();
    let report = match spindle_sim::run(opts) {
        Ok(r) => r,
        Err(e) if chaos && e.seed().is_some() => {
            let seed = e.seed().unwrap_or(spindle_sim::DEFAULT_SEED);
            eprintln!(
                "chaos run failed: {e}\nreplay it with: {}",
                replay_command(args, seed)
            );
            return Ok(1);
        }
        Err(e) => return Err(e.to_string()),
    };
    if args.json {
        print!("{}", report.summary_json());
    } else {
        print!("{}", report.summary_text());
    }
    if let Some(dir) = &args.out {
        let files = report.write_outputs(dir).map_err(|e| e.to_string())?;
        for f in files {
            eprintln!("wrote {}", f.display());
        }
    }
    eprintln!("wall time: {:.1} s", report.wall_time.as_secs_f64());
    Ok(0)
}
