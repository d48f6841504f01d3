//! The simulated NodeManagers: records of nodes (from the start, or
//! minted by the autoscaler), registration and removal, and heartbeats
//! that report finished containers, per node or in rounds.

use std::collections::BTreeSet;

use spindle_common::{ContainerId, NodeId, Resource};
use spindle_scheduler::{ContainerExit, Input, NodeUpdate};

use super::{Engine, Ev, NodeLife, SimNode};
use crate::error::SimError;
use crate::model::{HeartbeatMode, NM_PORT};

impl Engine<'_> {
    pub(super) fn add_node_record(
        &mut self,
        host: String,
        rack: String,
        capability: Resource,
        pool: usize,
    ) -> usize {
        let id = NodeId::new(host, NM_PORT);
        let idx = self.nodes.len();
        self.node_index.insert(id.clone(), idx);
        self.nodes.push(SimNode {
            id,
            rack,
            capability,
            pool,
            life: NodeLife::Provisioning,
            incarnation: 0,
            containers: BTreeSet::new(),
            idle_since: self.now,
            to_report: Vec::new(),
            app_state: BTreeSet::new(),
        });
        idx
    }

    /// A new node of `pool`, provisioning from now.
    pub(super) fn mint(&mut self, pool: usize) -> usize {
        let k = self.pool_next[pool];
        self.pool_next[pool] += 1;
        let def = self.w.cluster.pools[pool].node(pool, k);
        let idx = self.add_node_record(def.host, def.rack, def.capability, pool);
        self.provisioning_nodes += 1;
        self.provisioning_capacity += def.capability;
        self.metrics.nodes_added += 1;
        idx
    }

    /// A provisioning (or returning) node registers.
    pub(super) fn join(&mut self, idx: usize) -> Result<(), SimError> {
        let node = &mut self.nodes[idx];
        match node.life {
            NodeLife::Provisioning => {
                self.provisioning_nodes -= 1;
                self.provisioning_capacity -= node.capability;
            }
            NodeLife::Lost => {}
            NodeLife::Live | NodeLife::Released => return Ok(()),
        }
        node.life = NodeLife::Live;
        node.incarnation += 1;
        node.idle_since = self.now;
        node.to_report.clear();
        let incarnation = node.incarnation;
        let input = Input::NodeAdded {
            node: node.id.clone(),
            rack: node.rack.clone(),
            capability: node.capability,
        };
        self.live_nodes += 1;
        self.empty_nodes += 1;
        self.capacity += self.nodes[idx].capability;
        self.feed(input)?;
        if self.w.cluster.heartbeat_mode == HeartbeatMode::PerNode {
            let first = self.now + self.jitter.below(self.w.cluster.heartbeat_interval_ms);
            self.push(
                first,
                Ev::NodeHeartbeat {
                    node: idx,
                    incarnation,
                },
            );
        }
        Ok(())
    }

    /// Takes a live node out: lost (chaos, comes back) or released
    /// (autoscaler).
    pub(super) fn drop_node(&mut self, idx: usize, lost: bool) -> Result<(), SimError> {
        if self.nodes[idx].life != NodeLife::Live {
            return Ok(());
        }
        // The simulator's counters change first, so that the checks after
        // the core's step compare like with like.
        let node = &mut self.nodes[idx];
        if node.containers.is_empty() {
            self.empty_nodes -= 1;
        }
        node.life = if lost {
            NodeLife::Lost
        } else {
            NodeLife::Released
        };
        node.to_report.clear();
        self.live_nodes -= 1;
        self.capacity -= node.capability;
        let input = Input::NodeRemoved {
            node: node.id.clone(),
        };
        // Every container is completed by the core, and so removed here.
        self.feed(input)
    }

    pub(super) fn report_exit(&mut self, cid: ContainerId) {
        let Some(c) = self.containers.get_mut(&cid) else {
            return;
        };
        if c.exited {
            return;
        }
        c.exited = true;
        match self.w.cluster.heartbeat_mode {
            HeartbeatMode::PerNode => self.nodes[c.node].to_report.push(cid),
            HeartbeatMode::Rounds => self.to_report.push(cid),
        }
    }

    fn report_completed(&mut self, list: Vec<ContainerId>) -> Result<(), SimError> {
        for cid in list {
            if self.containers.contains_key(&cid) {
                self.feed(Input::ContainerCompleted {
                    container: cid,
                    exit: ContainerExit::Finished {
                        exit_status: 0,
                        diagnostics: String::new(),
                    },
                })?;
            }
        }
        Ok(())
    }

    pub(super) fn node_heartbeat(&mut self, idx: usize, incarnation: u32) -> Result<(), SimError> {
        let node = &mut self.nodes[idx];
        if node.life != NodeLife::Live || node.incarnation != incarnation {
            return Ok(());
        }
        let list = std::mem::take(&mut node.to_report);
        let id = node.id.clone();
        self.report_completed(list)?;
        if self.nodes[idx].life == NodeLife::Live {
            self.feed(Input::NodeUpdated {
                node: id,
                update: NodeUpdate::heartbeat(),
            })?;
        }
        let c = &self.w.cluster;
        let j = c.heartbeat_jitter_ms;
        let mut next = self.now + c.heartbeat_interval_ms - j + self.jitter.below(2 * j + 1);
        if let Some(ch) = &self.s.chaos {
            if self.now < self.chaos_until && self.chaos_rng.chance(ch.heartbeat_delay_probability)
            {
                next += self.chaos_rng.below(ch.heartbeat_delay_max_ms + 1);
            }
        }
        self.push(
            next.max(self.now + 1),
            Ev::NodeHeartbeat {
                node: idx,
                incarnation,
            },
        );
        Ok(())
    }

    pub(super) fn round(&mut self) -> Result<(), SimError> {
        let list = std::mem::take(&mut self.to_report);
        self.report_completed(list)?;
        self.pass()?;
        let mut next = self.now + self.w.cluster.heartbeat_interval_ms;
        if let Some(ch) = &self.s.chaos {
            if self.now < self.chaos_until && self.chaos_rng.chance(ch.heartbeat_delay_probability)
            {
                next += self.chaos_rng.below(ch.heartbeat_delay_max_ms + 1);
            }
        }
        self.push(next, Ev::Round);
        Ok(())
    }
}
