//! Runs a workload file and prints its figures: the way to measure, not a
//! check (ignored by default).
//!
//! ```text
//! SIM_WORKLOAD=conf/sim/bursty-day.json [SIM_COMPARE=1] [SIM_SEED=7] [SIM_HEARTBEATS=rounds] \
//!   [SIM_OUT=target/sim-out] cargo test -p spindle-sim --test bench -- --ignored --nocapture
//! ```

use std::path::PathBuf;

use spindle_sim::{
    compare_placements, run, HeartbeatMode, Progress, SimError, SimOptions, WorkloadSource,
};

fn workspace_path(p: &str) -> PathBuf {
    let path = PathBuf::from(p);
    if path.is_absolute() {
        path
    } else {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(path)
    }
}

#[test]
#[ignore = "a measurement: set SIM_WORKLOAD and run with --ignored --nocapture"]
fn run_workload_from_env() -> Result<(), SimError> {
    let Ok(file) = std::env::var("SIM_WORKLOAD") else {
        eprintln!("SIM_WORKLOAD is not set; nothing to run");
        return Ok(());
    };
    let mut opts = SimOptions::new(WorkloadSource::File(workspace_path(&file)));
    opts.progress = Progress::Never;
    opts.seed = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok());
    if let Ok(m) = std::env::var("SIM_HEARTBEATS") {
        opts.heartbeat_mode = HeartbeatMode::parse(&m).ok();
    }
    if std::env::var("SIM_COMPARE").is_ok() {
        let c = compare_placements(&opts)?;
        print!("{}", c.render_text());
        print!("{}", c.to_json());
        return Ok(());
    }
    let report = run(opts)?;
    print!("{}", report.summary_text());
    print!("{}", report.summary_json());
    if let Ok(dir) = std::env::var("SIM_OUT") {
        for p in report.write_outputs(&workspace_path(&dir))? {
            println!("wrote {}", p.display());
        }
    }
    Ok(())
}
