//! The faults injected during the first phase, and the healing before the
//! liveness phase.

use super::*;

impl World {
    pub(super) fn fault(&mut self) {
        let roll = self.rng.random_range(0..100);
        match roll {
            0..=14 => {
                // The active RM crashes (between two commands).
                if let Some(rm) = (0..self.rms.len()).find(|&i| self.rms[i].active.is_some()) {
                    self.note(format!("fault: rm{rm} crashes"));
                    self.report.rm_restarts += 1;
                    self.rms[rm].active = None;
                    self.rms[rm].up = false;
                    if self.ha {
                        let other = 1 - rm;
                        self.rms[other].up = true;
                        let delay = self.rng.random_range(2_000..10_000);
                        self.after(delay, Event::Activate(other));
                        // The crashed one comes back as a standby.
                        let back = self.rng.random_range(1_000..5_000);
                        self.rms[rm].up = true;
                        let _ = back;
                    } else {
                        let delay = self.rng.random_range(1_000..5_000);
                        self.rms[rm].up = true;
                        self.after(delay, Event::Activate(rm));
                    }
                }
            }
            15..=24 if self.ha => {
                // A failover: the standby is elected while the active still
                // believes itself active.
                if let Some(active) = (0..2).find(|&i| self.rms[i].active.is_some()) {
                    let other = 1 - active;
                    self.note(format!("fault: failover rm{active} -> rm{other}"));
                    self.report.failovers += 1;
                    self.rms[other].up = true;
                    self.after(1, Event::Activate(other));
                }
            }
            25..=34 => {
                self.note("fault: the next store write fails".into());
                self.report.store_failures += 1;
                self.store.fail_next(1);
            }
            35..=54 => {
                let i = self.rng.random_range(0..self.nms.len());
                if !self.nms[i].away {
                    let away = self.rng.random_range(2_000..25_000);
                    self.note(format!("fault: {} cut off for {away} ms", self.nms[i].id));
                    self.report.nm_partitions += 1;
                    self.nms[i].away = true;
                    self.nms[i].call = None;
                    self.after(away, Event::NmBack(i));
                }
            }
            55..=69 => {
                let i = self.rng.random_range(0..self.nms.len());
                if !self.nms[i].away {
                    self.note(format!("fault: {} crashes", self.nms[i].id));
                    self.report.nm_crashes += 1;
                    self.crash_nm(i);
                }
            }
            _ => {
                let live: Vec<ApplicationAttemptId> = self
                    .ams
                    .values()
                    .filter(|a| a.phase != AmPhase::Done)
                    .map(|a| a.attempt)
                    .collect();
                if !live.is_empty() {
                    let a = live[self.rng.random_range(0..live.len())];
                    self.note(format!("fault: the AM of {a} crashes"));
                    self.report.am_crashes += 1;
                    self.am_exits(a, 1);
                }
            }
        }
    }

    /// The end of the fault phase: every node back, every RM up, one active.
    pub(super) fn heal(&mut self) {
        for i in 0..self.nms.len() {
            if self.nms[i].away {
                self.after(10, Event::NmBack(i));
            }
        }
        for rm in 0..self.rms.len() {
            self.rms[rm].up = true;
        }
        if self.owner().is_none() {
            let rm = (0..self.rms.len())
                .find(|&i| self.rms[i].active.is_some())
                .unwrap_or(0);
            self.after(100, Event::Activate(rm));
        }
    }
}
