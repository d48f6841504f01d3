//! Time as the RM state sees it: two clocks, read once per command by the
//! task that owns the state and passed in as a [`Now`].
//!
//! The monotonic clock measures everything that is an interval or a
//! deadline: the scheduler core's clock (which refuses time going
//! backwards), node and AM liveness, graceful-decommission deadlines, key
//! rolling, the age of cached cluster totals. The wall clock is used only
//! where Hadoop reports wall time: application submit/start/launch/finish
//! times, attempt start/finish times, container creation times in reports,
//! the expiry and creation times inside container tokens (NodeManagers
//! compare them with their own wall clocks), and the cluster timestamp. An
//! NTP step then moves reported times and nothing else.

use spindle_common::time::wall_ms_u64;

/// The time of one command, on both clocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Milliseconds since the RM started, on a clock that never goes back.
    pub mono_ms: u64,
    /// Milliseconds since the Unix epoch on the wall clock, which may step
    /// either way.
    pub wall_ms: u64,
}

impl Now {
    /// Both clocks at `ms` (for tests and simulations, where the two agree).
    pub fn at(ms: u64) -> Now {
        Now {
            mono_ms: ms,
            wall_ms: ms,
        }
    }
}

/// The owner task's clocks: monotonic milliseconds count from the moment
/// the clock was started.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: tokio::time::Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            start: tokio::time::Instant::now(),
        }
    }

    pub fn now(&self) -> Now {
        Now {
            mono_ms: self.start.elapsed().as_millis() as u64,
            wall_ms: wall_ms_u64(),
        }
    }
}
