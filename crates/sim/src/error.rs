//! [`SimError`]: why a simulation could not start or did not pass.

use std::path::PathBuf;

use spindle_scheduler::{ConfigError, SchedulerError};

/// Everything that can stop a simulation. The messages name the file,
/// job, key or seed to look at.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("cannot read {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The workload (or an SLS input) is malformed or inconsistent.
    #[error("{origin}: {message}")]
    Workload { origin: String, message: String },
    /// The scheduler configuration derived from the workload was refused
    /// by the core.
    #[error("{origin}: scheduler configuration refused: {source}")]
    Config {
        origin: String,
        #[source]
        source: ConfigError,
    },
    /// The core refused an input the simulator generated. Either the
    /// workload asks for something the scheduler does not allow, or the
    /// simulator has a bug; the seed replays it.
    #[error("seed {seed}, step {step}, t={time_ms} ms: the scheduler refused {input}: {source}")]
    Scheduler {
        seed: u64,
        step: u64,
        time_ms: u64,
        input: String,
        /// Boxed: the core's error names nodes, and a `Result` carries
        /// its error's size on every path.
        #[source]
        source: Box<SchedulerError>,
    },
    /// A scheduler invariant (or the agreement between the simulator's
    /// view and the core's) broke after a step.
    #[error(
        "seed {seed}, step {step}, t={time_ms} ms, after {input}: {violation} \
         (replay with the same workload and --seed {seed})"
    )]
    Invariant {
        seed: u64,
        step: u64,
        time_ms: u64,
        input: String,
        violation: String,
    },
    /// Applications did not all finish by the end of the liveness phase.
    #[error(
        "seed {seed}: liveness failed at t={time_ms} ms: {unfinished} application(s) did not \
         finish: {detail} (replay with the same workload and --seed {seed})"
    )]
    Liveness {
        seed: u64,
        time_ms: u64,
        unfinished: usize,
        detail: String,
    },
}

impl SimError {
    pub(crate) fn workload(origin: impl Into<String>, message: impl Into<String>) -> SimError {
        SimError::Workload {
            origin: origin.into(),
            message: message.into(),
        }
    }

    /// The seed of a failed run, for errors found while running.
    pub fn seed(&self) -> Option<u64> {
        match self {
            SimError::Scheduler { seed, .. }
            | SimError::Invariant { seed, .. }
            | SimError::Liveness { seed, .. } => Some(*seed),
            _ => None,
        }
    }
}
