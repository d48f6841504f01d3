//! Hadoop's own scheduler configuration files, read unchanged and turned
//! into the scheduler core's queue tree.
//!
//! * FIFO ([`SchedulerKind::Fifo`]): no file; one queue, `root.default`,
//!   which every application goes to whatever queue it asked for (Hadoop's
//!   `FifoScheduler` ignores the requested queue).
//! * Capacity ([`capacity`]): `capacity-scheduler.xml` from the
//!   configuration directory, layered over `yarn-site.xml` as Hadoop's
//!   `CapacitySchedulerConfiguration` does, with the same keys, defaults
//!   and validation rules.
//! * Fair ([`fair`]): the allocation file named by
//!   `yarn.scheduler.fair.allocation.file` (default `fair-scheduler.xml`),
//!   plus the `yarn.scheduler.fair.*` keys of `yarn-site.xml`.
//!
//! Each reader returns a [`QueueFile`]: the queue tree for the core, the
//! [`Placement`] policy the RM applies at submission, and the locality and
//! per-heartbeat settings of the scheduler. Every error is a
//! [`QueueFileError`] naming the file (and line when known), the queue and
//! the key or element at fault.

pub mod capacity;
pub mod capacity_keys;
pub mod fair;
pub mod placement;
mod queue_file;

use std::path::Path;

use spindle_common::conf::Configuration;
use spindle_scheduler::SchedulerKind;

pub use placement::{Placed, Placement};
pub use queue_file::{QueueFile, QueueFileError};

/// Reads the queue configuration of the scheduler `kind`.
///
/// `site` is the RM's yarn-site configuration (already loaded); `conf_dir`
/// the configuration directory, where `capacity-scheduler.xml` and a
/// relative fair allocation file are looked up.
pub fn load(
    kind: SchedulerKind,
    site: &Configuration,
    conf_dir: Option<&Path>,
) -> Result<QueueFile, QueueFileError> {
    match kind {
        SchedulerKind::Fifo => Ok(QueueFile::fifo()),
        SchedulerKind::Capacity => capacity::load(site, conf_dir),
        SchedulerKind::Fair => fair::load(site, conf_dir),
    }
}

#[cfg(test)]
mod tests {
    use spindle_scheduler::{HeartbeatAssignment, LocalityDelay, QueueTreeConfig};

    use super::*;

    #[test]
    fn fifo_places_everything_in_default() {
        let file = load(SchedulerKind::Fifo, &Configuration::empty(), None)
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(file.tree, QueueTreeConfig::fifo());
        assert_eq!(file.locality, LocalityDelay::Off);
        assert_eq!(file.heartbeat, HeartbeatAssignment::default());
        for requested in ["default", "root.default", "etl", "root.nope"] {
            let placed = file
                .placement
                .place(requested, "alice", &["eng".to_string()], &file.tree)
                .unwrap_or_else(|e| panic!("{requested}: {e}"));
            assert_eq!(placed.queue, "root.default");
            assert!(!placed.create);
        }
    }
}
