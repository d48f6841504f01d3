//! The `config` command, and the delay-rule and per-heartbeat keys it
//! shares with `reload`.

use crate::queue_config::{
    AppOrdering, HeartbeatAssignment, LocalityDelay, QueueConfig, QueueShare, QueueTreeConfig,
    ResourceCalculatorKind, SchedulerKind,
};

use super::args::{boolean, number, split_kv};
use super::Scenario;

impl Scenario {
    pub(super) fn configure(&mut self, args: &[&str]) -> Result<(), String> {
        if self.scheduler.is_some() {
            return Err("config must come before every other command".into());
        }
        let c = &mut self.config;
        for arg in args {
            let (key, value) = split_kv(arg)?;
            match key {
                "min_mem" => c.minimum_allocation.memory_mb = number(key, value)?,
                "min_vcores" => c.minimum_allocation.vcores = number(key, value)?,
                "max_mem" => c.maximum_allocation.memory_mb = number(key, value)?,
                "max_vcores" => c.maximum_allocation.vcores = number(key, value)?,
                "epoch" => c.epoch = number(key, value)?,
                "scheduler" => {
                    let kind = match value {
                        "fifo" => SchedulerKind::Fifo,
                        "capacity" => SchedulerKind::Capacity,
                        "fair" => SchedulerKind::Fair,
                        _ => return Err(format!("unknown scheduler '{value}'")),
                    };
                    c.queues = default_tree(kind);
                }
                "calculator" => {
                    c.queues.resource_calculator = match value {
                        "memory" => ResourceCalculatorKind::Memory,
                        "dominant" => ResourceCalculatorKind::Dominant,
                        _ => return Err(format!("unknown calculator '{value}'")),
                    }
                }
                "node_delay" | "rack_delay" | "node_threshold" | "rack_threshold" | "hb_max"
                | "hb_offswitch" => {
                    delay_or_heartbeat(key, value, &mut c.locality, &mut c.heartbeat)?
                }
                "user_max_apps" => {
                    c.queues.user_max_running_apps_default = Some(number(key, value)?)
                }
                "dynamic" => {
                    c.queues.dynamic_leaf = if boolean(key, value)? {
                        Some(QueueConfig::leaf(
                            "dynamic",
                            QueueShare::Fair {
                                weight: 1.0,
                                min: None,
                                max: None,
                            },
                        ))
                    } else {
                        None
                    }
                }
                "selection" => c.node_selection = value.parse().map_err(|e| format!("{e}"))?,
                "max_nodes" => c.limits.max_nodes = number(key, value)?,
                "max_apps" => c.limits.max_apps = number(key, value)?,
                "max_asks_per_app" => c.limits.max_asks_per_app = number(key, value)?,
                "max_blacklist_per_app" => c.limits.max_blacklist_per_app = number(key, value)?,
                "max_containers_per_pass" => c.limits.max_containers_per_pass = number(key, value)?,
                "max_candidates_per_pick" => c.limits.max_candidates_per_pick = number(key, value)?,
                "packing_threshold" => c.packing.high_memory_threshold = number(key, value)?,
                "packing_min_nodes" => c.packing.min_nodes = number(key, value)?,
                "packing_seed" => c.packing.seed = number(key, value)?,
                _ => return Err(format!("unknown config key '{key}'")),
            }
        }
        Ok(())
    }
}

/// Applies one delay-rule or per-heartbeat key (`config` and `reload`):
/// `node_delay` / `rack_delay` set the capacity rule (other settings at
/// Hadoop's defaults 40 / -1), `node_threshold` / `rack_threshold` the
/// fair rule (others at -1), `hb_max` / `hb_offswitch` the caps (`none`
/// lifts a cap).
pub(super) fn delay_or_heartbeat(
    key: &str,
    value: &str,
    locality: &mut LocalityDelay,
    heartbeat: &mut HeartbeatAssignment,
) -> Result<(), String> {
    match key {
        "node_delay" | "rack_delay" => {
            let (mut node, mut rack) = match *locality {
                LocalityDelay::Capacity {
                    node_locality_delay,
                    rack_locality_additional_delay,
                } => (node_locality_delay, rack_locality_additional_delay),
                _ => (40, -1),
            };
            if key == "node_delay" {
                node = number(key, value)?;
            } else {
                rack = number(key, value)?;
            }
            *locality = LocalityDelay::Capacity {
                node_locality_delay: node,
                rack_locality_additional_delay: rack,
            };
        }
        "node_threshold" | "rack_threshold" => {
            let (mut node, mut rack) = match *locality {
                LocalityDelay::Fair {
                    node_threshold,
                    rack_threshold,
                } => (node_threshold, rack_threshold),
                _ => (-1.0, -1.0),
            };
            if key == "node_threshold" {
                node = number(key, value)?;
            } else {
                rack = number(key, value)?;
            }
            *locality = LocalityDelay::Fair {
                node_threshold: node,
                rack_threshold: rack,
            };
        }
        "hb_max" | "hb_offswitch" => {
            let cap = if value == "none" {
                None
            } else {
                Some(number(key, value)?)
            };
            if key == "hb_max" {
                heartbeat.max_containers = cap;
            } else {
                heartbeat.max_off_switch = cap;
            }
        }
        _ => return Err(format!("unknown key '{key}'")),
    }
    Ok(())
}

/// A scheduler of `kind` with `root.default` as its only leaf.
pub(super) fn default_tree(kind: SchedulerKind) -> QueueTreeConfig {
    let mut tree = QueueTreeConfig::fifo();
    tree.kind = kind;
    if kind == SchedulerKind::Fair {
        let fair = QueueShare::Fair {
            weight: 1.0,
            min: None,
            max: None,
        };
        tree.root.share = fair;
        tree.root.ordering = AppOrdering::Fair;
        let mut leaf = QueueConfig::leaf("default", fair);
        leaf.ordering = AppOrdering::Fair;
        tree.root.children = vec![leaf];
    }
    tree
}
