//! Chaos: node losses (the node comes back later) and AM crashes at
//! exponentially distributed times, until chaos ends.

use spindle_scheduler::{ContainerExit, Input};

use super::{AppState, Engine, Ev, NodeLife};
use crate::error::SimError;

impl Engine<'_> {
    pub(super) fn chaos_gap(&mut self, per_hour: f64) -> u64 {
        let mean_ms = 3_600_000.0 / per_hour;
        self.now + (self.chaos_rng.exponential(mean_ms).round() as u64).max(1)
    }

    pub(super) fn chaos_node_loss(&mut self) -> Result<(), SimError> {
        let Some(c) = self.s.chaos.clone() else {
            return Ok(());
        };
        if self.now >= self.chaos_until {
            return Ok(());
        }
        let live: Vec<usize> = (0..self.nodes.len())
            .filter(|&i| self.nodes[i].life == NodeLife::Live)
            .collect();
        if !live.is_empty() {
            let idx = live[self.chaos_rng.index(live.len())];
            self.drop_node(idx, true)?;
            self.push(
                self.now + c.node_return_after_ms.max(1),
                Ev::NodeReturn(idx),
            );
        }
        let next = self.chaos_gap(c.node_loss_per_hour);
        if next < self.chaos_until {
            self.push(next, Ev::ChaosNodeLoss);
        }
        Ok(())
    }

    pub(super) fn chaos_am_crash(&mut self) -> Result<(), SimError> {
        let Some(c) = self.s.chaos.clone() else {
            return Ok(());
        };
        if self.now >= self.chaos_until {
            return Ok(());
        }
        let running: Vec<usize> = self
            .active
            .iter()
            .copied()
            .filter(|&a| self.apps[a].state == AppState::Running)
            .collect();
        if !running.is_empty() {
            let a = running[self.chaos_rng.index(running.len())];
            match self.apps[a].am_container {
                Some(cid) => self.feed(Input::ContainerCompleted {
                    container: cid,
                    exit: ContainerExit::Finished {
                        exit_status: 1,
                        diagnostics: "simulated ApplicationMaster crash".into(),
                    },
                })?,
                None => self.fail_attempt(a, true)?,
            }
        }
        let next = self.chaos_gap(c.am_crash_per_hour);
        if next < self.chaos_until {
            self.push(next, Ev::ChaosAmCrash);
        }
        Ok(())
    }
}
