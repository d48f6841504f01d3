//! The autoscaler of the elastic pool: adds nodes (after a provisioning
//! delay) when requests have waited too long, and releases nodes that
//! held nothing for long enough, within the pool's minimum and maximum.

use spindle_common::Resource;

use super::{Engine, Ev, NodeLife, AM_SLOT};
use crate::error::SimError;

impl Engine<'_> {
    pub(super) fn elastic_check(&mut self) -> Result<(), SimError> {
        let Some(el) = self.w.cluster.elastic.clone() else {
            return Ok(());
        };
        let cap = self.w.cluster.pools[el.pool].capability;
        let (mut live, mut prov) = (0usize, 0usize);
        for n in &self.nodes {
            if n.pool == el.pool {
                match n.life {
                    NodeLife::Live => live += 1,
                    NodeLife::Provisioning => prov += 1,
                    _ => {}
                }
            }
        }
        // Scale up for requests that waited too long.
        let cutoff = self.now.saturating_sub(el.scale_up_wait_ms);
        let mut demand = Resource::ZERO;
        if self.now >= el.scale_up_wait_ms {
            for &(since, a, slot) in &self.waiting {
                if since > cutoff {
                    break;
                }
                demand += if slot == AM_SLOT {
                    self.w.jobs[a].am_resource
                } else {
                    self.apps[a].keys[slot].resource()
                };
            }
        }
        let mut add = 0usize;
        if demand.memory_mb > 0 || demand.vcores > 0 {
            let by_mem = div_ceil(demand.memory_mb, cap.memory_mb.max(1));
            let by_vc = div_ceil(i64::from(demand.vcores), i64::from(cap.vcores.max(1)));
            let needed = usize::try_from(by_mem.max(by_vc)).unwrap_or(usize::MAX);
            add = needed.saturating_sub(prov);
            if let Some(step) = el.max_scale_up_step {
                add = add.min(step);
            }
        }
        add = add.max(el.min_nodes.saturating_sub(live + prov));
        add = add.min(el.max_nodes.saturating_sub(live + prov));
        for _ in 0..add {
            let idx = self.mint(el.pool);
            self.push(self.now + el.provisioning_delay_ms, Ev::NodeJoin(idx));
        }
        prov += add;
        // Scale down nodes idle long enough.
        let mut removable = (live + prov).saturating_sub(el.min_nodes);
        if removable > 0 {
            let mut idle: Vec<(u64, usize)> = self
                .nodes
                .iter()
                .enumerate()
                .filter(|(_, n)| {
                    n.pool == el.pool
                        && n.life == NodeLife::Live
                        && n.containers.is_empty()
                        && n.idle_since + el.scale_down_idle_ms <= self.now
                        && (!el.keep_nodes_with_app_state || n.app_state.is_empty())
                })
                .map(|(i, n)| (n.idle_since, i))
                .collect();
            idle.sort_unstable();
            for (_, idx) in idle {
                if removable == 0 {
                    break;
                }
                self.drop_node(idx, false)?;
                self.metrics.nodes_removed += 1;
                removable -= 1;
            }
        }
        self.push(self.now + el.check_interval_ms, Ev::ElasticCheck);
        Ok(())
    }
}

fn div_ceil(a: i64, b: i64) -> i64 {
    if a <= 0 {
        0
    } else {
        (a + b - 1) / b
    }
}
